-- Privacy models over one group of rows (an equivalence class, or a side of a Mondrian cut). Pure SQL.
-- Shared by the measures (class_profile) and by Mondrian's partitioning, so both judge a group alike.
--
-- A group's sensitive values come as `hist`: LIST of {'r': the value's rank in the whole table's value
-- order (1-based, NULL last), 'n': rows}. `q` lists the whole table's share of each rank, `cq` the
-- running total of q (both in rank order).

CREATE OR REPLACE MACRO anon_hist_rows(hist) AS list_sum(list_transform(hist, lambda h: h.n));

-- Distinct l-diversity: the number of sensitive values present.
CREATE OR REPLACE MACRO anon_distinct_l(hist) AS len(hist);

-- Entropy l-diversity: exp of the entropy of the group's distribution.
CREATE OR REPLACE MACRO anon_entropy_l(hist) AS
    exp(-list_sum(list_transform(hist, lambda h: h.n / anon_hist_rows(hist) * ln(h.n / anon_hist_rows(hist)))));

-- Recursive (c, l)-diversity: the largest l with r_1 < c * (r_l + ... + r_m), counts sorted descending.
-- The condition weakens as l falls, so the l that satisfy it are 1 .. that largest one.
CREATE OR REPLACE MACRO anon_recursive_l(hist, c) AS
    len(list_filter(range(1, len(hist) + 1), lambda l:
        list_reverse_sort(list_transform(hist, lambda h: h.n))[1]
        < c * list_sum(list_slice(list_reverse_sort(list_transform(hist, lambda h: h.n)), l, len(hist)))));

-- t-closeness: earth mover's distance between the group's distribution and the table's. Categories are
-- all at distance 1 (half the L1 distance; absent values count q each); numbers at distance |i - j|/(m - 1)
-- between ranks i and j (the sum over ranks of the running differences).
CREATE OR REPLACE MACRO anon_emd(hist, q, cq, ordered) AS
    CASE WHEN NOT ordered
         THEN 0.5 * (list_sum(list_transform(hist, lambda h: abs(h.n / anon_hist_rows(hist) - q[h.r])))
                     + 1 - list_sum(list_transform(hist, lambda h: q[h.r])))
         WHEN len(q) <= 1 THEN 0.0
         ELSE list_sum(list_transform(range(1, len(q) + 1), lambda i:
                  abs(coalesce(list_sum(list_transform(list_filter(hist, lambda h: h.r <= i), lambda h: h.n)), 0)
                      / anon_hist_rows(hist) - cq[i]))) / (len(q) - 1)
    END;

-- Does a group satisfy the requested models? `model` is {'l', 'l_kind', 'c', 't'}; NULL l or t = not asked.
-- A small tolerance keeps a group of exactly l equally frequent values (entropy exactly ln l) diverse.
CREATE OR REPLACE MACRO anon_model_holds(hist, model, q, cq, ordered) AS
    (struct_extract(model, 'l') IS NULL OR CASE struct_extract(model, 'l_kind') WHEN 'distinct' THEN anon_distinct_l(hist) >= struct_extract(model, 'l')
                             WHEN 'entropy' THEN anon_entropy_l(hist) >= struct_extract(model, 'l') - 1e-9
                             ELSE anon_recursive_l(hist, struct_extract(model, 'c')) >= struct_extract(model, 'l') END)
    AND (struct_extract(model, 't') IS NULL OR anon_emd(hist, q, cq, ordered) <= struct_extract(model, 't') + 1e-12);
