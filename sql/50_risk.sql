-- Privacy models and re-identification risk over any release: a table (ours or another tool's), its QI list
-- and, for l-diversity and t-closeness, a sensitive column. Classes are the groups of identical QI values.
-- Pure SQL.

-- Per class: the QI values, size, prosecutor risk (1 / size) and, given a sensitive column: its distinct
-- values, entropy l (exp of the entropy of its distribution), recursive_l (the largest l for which the class
-- is recursive (c, l)-diverse: r_1 < c * (r_l + ... + r_m), counts sorted descending) and t (earth mover's
-- distance to the whole table's distribution: equal distance between categories, ordered distance for
-- numbers).
CREATE OR REPLACE MACRO class_profile(table_name, qis, sensitive := NULL, c := 2) AS TABLE
WITH
rows AS (
    SELECT COLUMNS(qis), row(*COLUMNS(qis)) AS __anon_class,
           CASE WHEN sensitive IS NULL THEN NULL ELSE COLUMNS([coalesce(sensitive, qis[1])]) END AS __anon_s
    FROM query_table(table_name)),
overall AS (  -- the table's sensitive values, ranked in the value order used by the ordered distance
    SELECT __anon_s AS s, count(*) AS n, dense_rank() OVER (ORDER BY __anon_s) AS r FROM rows GROUP BY __anon_s),
table_dist AS (  -- q: the table's share of each rank; cq: its running total
    SELECT list(n / total ORDER BY r) AS q, list(running / total ORDER BY r) AS cq,
           (SELECT anon_is_numeric(any_value(COLUMNS([coalesce(sensitive, qis[1])]))) FROM query_table(table_name)) AS ordered
    FROM (SELECT r, n, sum(n) OVER () AS total, sum(n) OVER (ORDER BY r) AS running FROM overall)),
classes AS (  -- per class: its histogram of sensitive ranks
    SELECT g.__anon_class, sum(g.n) AS class_size, list({'r': o.r, 'n': g.n} ORDER BY o.r) AS hist
    FROM (SELECT __anon_class, __anon_s, count(*) AS n FROM rows GROUP BY __anon_class, __anon_s) g
    JOIN overall o ON o.s IS NOT DISTINCT FROM g.__anon_s
    GROUP BY g.__anon_class)
SELECT nm.* EXCLUDE (__anon_class),
       cl.class_size, 1.0 / cl.class_size AS prosecutor_risk,
       CASE WHEN sensitive IS NOT NULL THEN anon_distinct_l(cl.hist) END AS distinct_l,
       CASE WHEN sensitive IS NOT NULL THEN anon_entropy_l(cl.hist) END AS entropy_l,
       CASE WHEN sensitive IS NOT NULL THEN anon_recursive_l(cl.hist, c) END AS recursive_l,
       CASE WHEN sensitive IS NOT NULL THEN anon_emd(cl.hist, td.q, td.cq, td.ordered) END AS t
FROM classes cl CROSS JOIN table_dist td
JOIN (SELECT DISTINCT __anon_class, COLUMNS(qis) FROM rows) nm USING (__anon_class)
ORDER BY cl.class_size;

-- One row: the privacy models a release achieves. k (smallest class); with a sensitive column, distinct l,
-- entropy l and recursive (c, l) (the smallest over classes) and t (the largest EMD over classes).
CREATE OR REPLACE MACRO privacy_measures(table_name, qis, sensitive := NULL, c := 2) AS TABLE
SELECT count(*) AS classes, sum(class_size)::BIGINT AS rows, min(class_size) AS k,
       min(distinct_l) AS distinct_l, min(entropy_l) AS entropy_l, min(recursive_l) AS recursive_l, max(t) AS t
FROM class_profile(table_name, qis, sensitive := sensitive, c := c);

-- One row: re-identification risk of a release.
--   prosecutor_max / prosecutor_avg: the adversary knows the target is in the release: 1 / class size, at
--     the worst record and on average over records (= classes / records);
--   journalist_max / journalist_avg: the target is in population_table (the same QI columns, generalized
--     the same way): 1 / the matching population class size F (at least the release's class size f);
--   marketer: the expected share of records re-identified when every record is attacked: sum f / F over
--     classes, divided by records (= classes / records without a population);
--   records_at_risk: records whose prosecutor risk exceeds threshold; sample_uniques: classes of one record.
CREATE OR REPLACE MACRO risk_measures(table_name, qis, population_table := NULL, threshold := 0.2) AS TABLE
WITH
sample AS (SELECT __anon_class, count(*) AS f
           FROM (SELECT row(*COLUMNS(qis)) AS __anon_class FROM query_table(table_name)) GROUP BY __anon_class),
population AS (SELECT __anon_class, count(*) AS pop
               FROM (SELECT row(*COLUMNS(qis)) AS __anon_class FROM query_table(coalesce(population_table, table_name)))
               WHERE population_table IS NOT NULL GROUP BY __anon_class),
joined AS (SELECT s.f, greatest(coalesce(p.pop, s.f), s.f) AS big_f
           FROM sample s LEFT JOIN population p ON p.__anon_class IS NOT DISTINCT FROM s.__anon_class)
SELECT sum(f)::BIGINT AS records, count(*) AS classes,
       1.0 / min(f) AS prosecutor_max, count(*) / sum(f) AS prosecutor_avg,
       CASE WHEN population_table IS NOT NULL THEN 1.0 / min(big_f) END AS journalist_max,
       CASE WHEN population_table IS NOT NULL THEN sum(f / big_f) / sum(f) END AS journalist_avg,
       CASE WHEN population_table IS NOT NULL THEN sum(f / big_f) / sum(f) ELSE count(*) / sum(f) END AS marketer,
       coalesce(sum(f) FILTER (WHERE 1.0 / f > threshold), 0)::BIGINT AS records_at_risk,
       count(*) FILTER (WHERE f = 1) AS sample_uniques
FROM joined;

-- Every row of a release with its class size and prosecutor risk (1 / class size), for per-record reports.
CREATE OR REPLACE MACRO record_risks(table_name, qis) AS TABLE
SELECT * EXCLUDE (__anon_class), count(*) OVER w AS class_size, 1.0 / count(*) OVER w AS prosecutor_risk
FROM (SELECT *, row(*COLUMNS(qis)) AS __anon_class FROM query_table(table_name))
-- PARTITION BY COLUMNS(qis) would open one window per column; the class is the tuple of them all
WINDOW w AS (PARTITION BY __anon_class);
