-- Privacy models and re-identification risk over any release: a table (ours or another tool's), its QI list
-- and, for l-diversity and t-closeness, a sensitive column. Classes are the groups of identical QI values.
-- Pure SQL.

-- Per class: the QI values, size, prosecutor risk (1 / size) and, given a sensitive column: its distinct
-- values, entropy l (exp of the entropy of its distribution), recursive_l (the largest l for which the class
-- is recursive (c, l)-diverse: r_1 < c * (r_l + ... + r_m), counts sorted descending) and t (earth mover's
-- distance to the whole table's distribution: equal distance between categories, ordered distance for
-- numbers).
-- The column read as __anon_s: the sensitive one, or (unused) the first QI, or a placeholder that anon_read
-- supplies, so that the COLUMNS() reading it binds whatever the arguments (they are checked apart).
CREATE OR REPLACE MACRO anon_profile_column(qis, sensitive) AS
    coalesce(try_cast(sensitive AS VARCHAR), anon_names(qis)[1], '__anon_none');

-- `fn` names the user-facing function in errors.
CREATE OR REPLACE MACRO anon_class_profile(fn, table_name, qis, sensitive, c) AS TABLE
WITH
args AS (  -- bound first (the first relation the query reads), so a wrong argument fails before anything else
    SELECT ok FROM anon_arguments(anon_name_ok(fn, 'table_name', table_name)
                                  AND anon_columns_ok(fn, 'qis', qis)
                                  AND (sensitive IS NULL OR anon_name_ok(fn, 'sensitive', sensitive, 'a column name or NULL'))
                                  -- COLUMNS() below takes a name of either argument: neither may be any other type
                                  AND anon_check(typeof(sensitive) NOT IN ('VARCHAR', '"NULL"'), fn, 'sensitive', 'must be a column name')
                                  AND anon_check(list_contains(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q)),
                                                               lower(try_cast(sensitive AS VARCHAR))),
                                                 fn, 'sensitive', 'names ' || anon_shown(sensitive) || ', which is also a QI')
                                  AND anon_number_ok(fn, 'c', c, lo := 0, above := true))),
checks AS (
    SELECT q.ok AND s.ok AS ok
    FROM anon_require_columns(fn, 'qis', table_name, qis, table_arg := 'table_name') q,
         anon_require_columns(fn, 'sensitive', table_name, anon_names([sensitive]), table_arg := 'table_name') s),
rows AS (
    SELECT COLUMNS(qis), row(*COLUMNS(qis)) AS __anon_class,
           CASE WHEN sensitive IS NULL THEN NULL ELSE COLUMNS([anon_profile_column(qis, sensitive)]) END AS __anon_s
    FROM args, anon_read(table_name, anon_names(qis, anon_profile_column(qis, sensitive)), fn := fn)),
overall AS (  -- the table's sensitive values, ranked in the value order used by the ordered distance
    SELECT __anon_s AS s, count(*) AS n, dense_rank() OVER (ORDER BY __anon_s) AS r FROM rows GROUP BY __anon_s),
table_dist AS (  -- q: the table's share of each rank; cq: its running total; cc: 0, then the running total of cq
    SELECT list(n / total ORDER BY r) AS q, list(running / total ORDER BY r) AS cq,
           list_concat([0.0], list(cumulated / total ORDER BY r)) AS cc,
           (SELECT anon_is_numeric(any_value(COLUMNS([anon_profile_column(qis, sensitive)])))
            FROM args, anon_read(table_name, anon_names(qis, anon_profile_column(qis, sensitive)), fn := fn)) AS ordered
    FROM (SELECT *, sum(running) OVER (ORDER BY r) AS cumulated
          FROM (SELECT r, n, sum(n) OVER () AS total, sum(n) OVER (ORDER BY r) AS running FROM overall))),
valued AS (  -- per class and sensitive value: its rows, rank and the windows the models read (sql/07_models.sql)
    SELECT g.__anon_class, g.n, o.r,
           sum(g.n) OVER (PARTITION BY g.__anon_class) AS m_rows,
           sum(g.n) OVER (PARTITION BY g.__anon_class ORDER BY o.r ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m_below,
           lead(o.r) OVER (PARTITION BY g.__anon_class ORDER BY o.r) AS m_next,
           sum(g.n) OVER (PARTITION BY g.__anon_class ORDER BY g.n ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m_tail,
           max(g.n) OVER (PARTITION BY g.__anon_class) AS m_top
    FROM (SELECT __anon_class, __anon_s, count(*) AS n FROM rows GROUP BY __anon_class, __anon_s) g
    JOIN overall o ON o.s IS NOT DISTINCT FROM g.__anon_s),
classes AS (  -- per class: its size and models
    SELECT v.__anon_class, sum(v.n) AS class_size, anon_distinct_l(v.n) AS distinct_l, anon_entropy_l(v.n) AS entropy_l,
           anon_recursive_l(v.m_tail, v.m_top, try_cast(c AS DOUBLE)) AS recursive_l,
           anon_emd(v.n, v.r, v.m_rows, v.m_below, v.m_next, td.q, td.cq, td.cc, td.ordered) AS t
    FROM valued v CROSS JOIN table_dist td
    GROUP BY v.__anon_class)
SELECT nm.* EXCLUDE (__anon_class),
       cl.class_size, 1.0 / cl.class_size AS prosecutor_risk,
       CASE WHEN sensitive IS NOT NULL THEN cl.distinct_l END AS distinct_l,
       CASE WHEN sensitive IS NOT NULL THEN cl.entropy_l END AS entropy_l,
       CASE WHEN sensitive IS NOT NULL THEN cl.recursive_l END AS recursive_l,
       CASE WHEN sensitive IS NOT NULL THEN cl.t END AS t
FROM classes cl CROSS JOIN checks
JOIN (SELECT DISTINCT __anon_class, COLUMNS(qis) FROM rows) nm USING (__anon_class)
WHERE checks.ok
UNION ALL BY NAME  -- the checks as a branch of their own: they run on an empty table too (never a row)
SELECT NULL AS class_size FROM checks WHERE NOT ok
ORDER BY class_size;

CREATE OR REPLACE MACRO class_profile(table_name, qis, sensitive := NULL, c := 2) AS TABLE
SELECT * FROM anon_class_profile('class_profile', table_name, qis, sensitive, c);

-- One row: the privacy models a release achieves. k (smallest class); with a sensitive column, distinct l,
-- entropy l and recursive (c, l) (the smallest over classes) and t (the largest EMD over classes).
CREATE OR REPLACE MACRO privacy_measures(table_name, qis, sensitive := NULL, c := 2) AS TABLE
SELECT count(*) AS classes, sum(class_size)::BIGINT AS rows, min(class_size) AS k,
       min(distinct_l) AS distinct_l, min(entropy_l) AS entropy_l, min(recursive_l) AS recursive_l, max(t) AS t
FROM anon_class_profile('privacy_measures', table_name, qis, sensitive, c);

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
args AS (  -- bound first: see anon_class_profile
    SELECT ok FROM anon_arguments(anon_name_ok('risk_measures', 'table_name', table_name)
                                  AND anon_columns_ok('risk_measures', 'qis', qis)
                                  AND (population_table IS NULL
                                       OR anon_name_ok('risk_measures', 'population_table', population_table, 'a table name or NULL'))
                                  AND anon_number_ok('risk_measures', 'threshold', threshold, lo := 0, hi := 1))),
checks AS (
    SELECT s.ok AND p.ok AND pt.ok AS ok
    FROM anon_require_columns('risk_measures', 'qis', table_name, qis, table_arg := 'table_name') s,
         anon_require_columns('risk_measures', 'population_table', coalesce(population_table, table_name), qis) p,
         -- generalized the same way: the same shape of labels (text or typed)
         anon_require_same_types('risk_measures', 'population_table', coalesce(population_table, table_name), table_name, qis) pt),
sample AS (SELECT __anon_class, count(*) AS f
           FROM (SELECT row(*COLUMNS(qis)) AS __anon_class FROM args, anon_read(table_name, qis)) GROUP BY __anon_class),
population AS (SELECT __anon_class, count(*) AS pop
               FROM (SELECT row(*COLUMNS(qis)) AS __anon_class FROM anon_read(coalesce(population_table, table_name), qis))
               WHERE population_table IS NOT NULL GROUP BY __anon_class),
joined AS (  -- classes matched by their JSON text: tables of other QI types never meet (checks names them)
    SELECT s.f, greatest(coalesce(p.pop, s.f), s.f) AS big_f
    FROM sample s LEFT JOIN population p ON to_json(p.__anon_class)::VARCHAR = to_json(s.__anon_class)::VARCHAR)
SELECT sum(f)::BIGINT AS records, count(*) AS classes,
       1.0 / min(f) AS prosecutor_max, count(*) / sum(f) AS prosecutor_avg,
       CASE WHEN population_table IS NOT NULL THEN 1.0 / min(big_f) END AS journalist_max,
       CASE WHEN population_table IS NOT NULL THEN sum(f / big_f) / sum(f) END AS journalist_avg,
       CASE WHEN population_table IS NOT NULL THEN sum(f / big_f) / sum(f) ELSE count(*) / sum(f) END AS marketer,
       coalesce(sum(f) FILTER (WHERE 1.0 / f > threshold), 0)::BIGINT AS records_at_risk,
       count(*) FILTER (WHERE f = 1) AS sample_uniques
FROM checks, joined
WHERE checks.ok;

-- Every row of a release with its class size and prosecutor risk (1 / class size), for per-record reports.
CREATE OR REPLACE MACRO record_risks(table_name, qis) AS TABLE
WITH
args AS (  -- bound first: see anon_class_profile
    SELECT ok AS __anon_ok FROM anon_arguments(anon_name_ok('record_risks', 'table_name', table_name)
                                               AND anon_columns_ok('record_risks', 'qis', qis))),
checks AS (SELECT ok FROM anon_require_columns('record_risks', 'qis', table_name, qis, table_arg := 'table_name'))
SELECT r.* EXCLUDE (__anon_class, __anon_ok), count(*) OVER w AS class_size, 1.0 / count(*) OVER w AS prosecutor_risk
FROM (SELECT *, row(*COLUMNS(qis)) AS __anon_class FROM (SELECT a.__anon_ok, t.* FROM args a, anon_read(table_name, qis) t)) r,
     checks
WHERE checks.ok
-- PARTITION BY COLUMNS(qis) would open one window per column; the class is the tuple of them all
WINDOW w AS (PARTITION BY __anon_class);
