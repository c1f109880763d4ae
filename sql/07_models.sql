-- Privacy models over one group of rows (an equivalence class, a side of a Mondrian cut, the whole table). Pure SQL.
-- The one definition: the measures (class_profile), Mondrian's partitioning on every engine (the level plan
-- calls anon_model_holds, or inlines it for Spark) and its whole-table check read these macros.
--
-- The macros are aggregates over the group's rows, one per sensitive value present (GROUP BY the group), so a
-- group's distribution is never held as one value (hash aggregates and windows spill; a list() state does not).
-- Each row carries:
--   n       the value's rows in the group;
--   r       the value's rank in the whole table's value order (1-based, NULL last);
--   rows    the group's rows:                       sum(n) OVER (PARTITION BY group)
--   below   the group's rows up to this value:     sum(n) OVER (PARTITION BY group ORDER BY r ROWS UNBOUNDED PRECEDING)
--   next_r  the next rank present (NULL: none):     lead(r) OVER (PARTITION BY group ORDER BY r)
--   tail    a sum of the group's smallest counts:  sum(n) OVER (PARTITION BY group ORDER BY n ROWS UNBOUNDED PRECEDING)
--   top     the group's largest count:              max(n) OVER (PARTITION BY group)
-- and the whole table's distribution, in rank order: q (each rank's share), cq (the running total of q) and
-- cc (0, then the running total of cq). A model given as a literal leaves the windows it does not read unused
-- (the engines drop them): distinct and entropy l read no window.

-- Distinct l-diversity: the number of sensitive values present.
CREATE OR REPLACE MACRO anon_distinct_l(n) AS count(n);

-- Entropy l-diversity: exp of the entropy of the group's distribution, -sum p ln p = ln N - sum n ln n / N.
CREATE OR REPLACE MACRO anon_entropy_l(n) AS exp(ln(sum(n)) - sum(n * ln(n)) / sum(n));

-- Recursive (c, l)-diversity: the largest l with r_1 < c * (r_l + ... + r_m), counts sorted descending.
-- The condition weakens as l falls, so the l that satisfy it are 1 .. that largest one; r_l + ... + r_m is
-- the sum of the m - l + 1 smallest counts, one of the `tail` values (whatever the order among equal counts).
CREATE OR REPLACE MACRO anon_recursive_l(tail, top, c) AS count_if(top < c * tail);

-- The diversity of the model's l kind ({'l_kind', 'c'} of the model STRUCT), as a number: what a message shows.
CREATE OR REPLACE MACRO anon_diversity(model, n, tail, top) AS
    CASE struct_extract(model, 'l_kind') WHEN 'distinct' THEN CAST(anon_distinct_l(n) AS DOUBLE)
         WHEN 'entropy' THEN round(anon_entropy_l(n), 3)
         ELSE CAST(anon_recursive_l(tail, top, struct_extract(model, 'c')) AS DOUBLE) END;

-- sum |p - cq_i| over the ranks i of [a, b] (cq rises with i): the ranks up to the last one whose cq is at most
-- p count p - cq_i, the others cq_i - p; cc gives the sums of cq. That last rank is found by a binary search
-- only when it lies inside [a, b).
-- (split: that last rank)
CREATE OR REPLACE MACRO anon_emd_split_run(a, b, p, cc, split) AS
    p * (2 * split - a - b + 1) + cc[a] + cc[b + 1] - 2 * cc[split + 1];
CREATE OR REPLACE MACRO anon_emd_run(a, b, p, cq, cc) AS
    anon_emd_split_run(a, b, p, cc,
        CASE WHEN cq[a] > p THEN a - 1
             WHEN cq[b] <= p THEN b
             ELSE list_reduce([1073741824, 536870912, 268435456, 134217728, 67108864, 33554432, 16777216, 8388608,
                               4194304, 2097152, 1048576, 524288, 262144, 131072, 65536, 32768, 16384, 8192, 4096,
                               2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1],
                              lambda k_at, k_step: CASE WHEN k_at + k_step >= b THEN k_at
                                                        WHEN cq[k_at + k_step] <= p THEN k_at + k_step ELSE k_at END, a) END);

-- One value's part of the group's t-closeness distance (anon_emd sums them). Categories are all at distance 1:
-- half the L1 distance, absent values counting q each (0.5 * (sum |p - q| + 1 - sum q), with 1 = sum p);
-- numbers at distance |i - j| / (m - 1) between ranks i and j: the sum over all m ranks of |F(i) - cq_i|,
-- F the group's running share, which is constant from a present rank to the next (below / rows), 0 before
-- the first one.
CREATE OR REPLACE MACRO anon_emd_part(n, r, rows, below, next_r, q, cq, cc, ordered) AS
    CASE WHEN NOT ordered THEN 0.5 * (abs(n / rows - q[r]) - q[r] + n / rows)
         WHEN len(q) <= 1 THEN 0.0
         ELSE (anon_emd_run(r, coalesce(next_r, len(q) + 1) - 1, below / rows, cq, cc)
               + CASE WHEN below = n THEN cc[r] ELSE 0.0 END) / (len(q) - 1) END;

-- t-closeness: the earth mover's distance between the group's distribution and the table's.
CREATE OR REPLACE MACRO anon_emd(n, r, rows, below, next_r, q, cq, cc, ordered) AS
    sum(anon_emd_part(n, r, rows, below, next_r, q, cq, cc, ordered));

-- Does the group satisfy the requested models? `model` is {'l', 'l_kind', 'c', 't'}; NULL l or t = not asked.
-- A small tolerance keeps a group of exactly l equally frequent values (entropy exactly ln l) diverse.
CREATE OR REPLACE MACRO anon_model_holds(model, n, r, rows, below, next_r, tail, top, q, cq, cc, ordered) AS
    (struct_extract(model, 'l') IS NULL
     OR CASE struct_extract(model, 'l_kind') WHEN 'distinct' THEN anon_distinct_l(n) >= struct_extract(model, 'l')
             WHEN 'entropy' THEN anon_entropy_l(n) >= struct_extract(model, 'l') - 1e-9
             ELSE anon_recursive_l(tail, top, struct_extract(model, 'c')) >= struct_extract(model, 'l') END)
    AND (struct_extract(model, 't') IS NULL
         OR anon_emd(n, r, rows, below, next_r, q, cq, cc, ordered) <= struct_extract(model, 't') + 1e-12);
