-- Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), in SQL.
--
-- Layout of the computation:
--   anon_numbered   every source row with its scan position (1-based): the row identity.
--   anon_cells      rows with identical QI values collapse into one weighted "cell". Strict Mondrian never
--                   separates identical rows, so partitioning cells is exact and far cheaper (Adult: 30,162
--                   rows -> 18,109 cells; a 10M-row sample of it -> about 100k cells). Each cell gets one
--                   DOUBLE order key per QI: the value for numbers and dates, the leaf's code under a
--                   hierarchy (05_hierarchies.sql), the category's rank otherwise. With a sensitive column,
--                   a cell also shares its sensitive value, so every cut can count the values on each side.
--   anon_partition  the level-synchronous recursion: every iteration splits every splittable partition once.
--                   A partition is named by its offset in a virtual ordering of the rows (each piece of a
--                   cut starts at the parent's offset plus the rows of the pieces before it), so names
--                   never collide. Plain calls run the recursion generated from the level plan
--                   (duckdb_anon/levels/macros.py); anon_partition_checked, below, serves hierarchies (a
--                   hierarchical QI cuts into the covering node's children), models and suppression.
--   anon_mondrian_labelled  labels made once per class (text, typed bounds, mean) and attached to cells;
--                   each source row finds its cell by a hash of its QI values (relaxed mode may cut a cell into
--                   pieces to share ties; those rows go to pieces in row order).
--   anon_mondrian_text / _typed / _classes  the output shapes; mondrian() and mondrian_classes(), which
--                   check the arguments and pick a shape, are in 11_mondrian_api.sql.

-- Can a QI of x's type be generalized: a number, date or time, text, ENUM or BOOLEAN?
CREATE OR REPLACE MACRO anon_is_generalizable(x) AS
    anon_is_numeric(x) OR regexp_matches(typeof(x), '^(VARCHAR|BOOLEAN|ENUM\(.*|TIME|TIME WITH TIME ZONE|TIME_NS)$');

-- A width as a share of the table's range (0 when the QI is constant).
CREATE OR REPLACE MACRO anon_share(width, whole) AS CASE WHEN whole > 0 THEN width / whole ELSE 0.0 END;

-- Is column `c` one of the QIs? Names match as DuckDB matches them, whatever their case.
CREATE OR REPLACE MACRO anon_is_qi(qis, c) AS list_contains(list_transform(qis, lambda q: lower(q)), lower(c));

-- The source table as the macros below read it (anon_read_sql), so a QI or sensitive column the table
-- lacks reads NULL instead of stopping the binder; anon_cells then reports it, naming fn and the argument.
-- A macro apart from anon_read, so that a measure can read a view over mondrian().
CREATE OR REPLACE MACRO anon_source(table_name, qis := [], sensitive := NULL) AS TABLE
    FROM query(anon_read_sql(table_name, anon_names(qis, sensitive)));

-- The source's columns (lower-cased) -> types, for anon_columns_present (a macro apart from
-- anon_require_columns, for the same reason as anon_source).
CREATE OR REPLACE MACRO anon_source_columns(table_name) AS TABLE
SELECT map_from_entries(list({'key': lower(column_name), 'value': column_type})) AS have
FROM (DESCRIBE FROM query_table(table_name));

CREATE OR REPLACE MACRO anon_numbered(table_name, qis := [], sensitive := NULL) AS TABLE
    SELECT row_number() OVER () AS __anon_row, * FROM anon_source(table_name, qis := qis, sensitive := sensitive);

CREATE OR REPLACE MACRO anon_cells(table_name, qis, categorical_order, fn := 'mondrian', hierarchy_sql := NULL,
                                   sensitive := NULL) AS TABLE
WITH
qi_types AS (  -- every QI can be generalized: numbers, dates and times, text, ENUM, BOOLEAN (checked on the
               -- column types alone, so an empty table is checked too)
    SELECT [*COLUMNS(*)] AS ok
    FROM (SELECT anon_is_generalizable(COLUMNS(qis))
                 OR error(fn || '(): argument ''qis'': column ''' || alias(COLUMNS(qis)) || ''' has type '
                          || typeof(COLUMNS(qis)) || ', which cannot be generalized')
          FROM (SELECT 1 WHERE (SELECT anon_columns_present(fn, 'qis', table_name, qis, have)
                                           AND anon_columns_present(fn, 'sensitive', table_name, anon_names([sensitive]), have)
                                    FROM anon_source_columns(table_name)))
          LEFT JOIN (SELECT COLUMNS(qis) FROM anon_source(table_name, qis := qis, sensitive := sensitive) LIMIT 0) ON true)),
grouped AS MATERIALIZED (  -- with a sensitive column, a cell also shares its sensitive value
    SELECT COLUMNS(qis), CASE WHEN sensitive IS NULL THEN NULL ELSE COLUMNS([coalesce(sensitive, qis[1])]) END AS __anon_s,
           count(*) AS __anon_n, min(__anon_row) AS __anon_cell
    FROM anon_numbered(table_name, qis := qis, sensitive := sensitive) WHERE (SELECT list_bool_and(ok) FROM qi_types) GROUP BY ALL),
hier AS (SELECT codes FROM anon_hierarchy_maps(fn, coalesce(hierarchy_sql, anon_no_hierarchies()))),
appearance AS (  -- categorical_order 'appearance': per category QI (lower-case name) a MAP from each value (as
                 -- text) to its code, the rank of the value's first cell, and the code of NULL. One grouping
                 -- of (QI, value) pairs: two windows per QI over every cell cost about three times as much.
    SELECT map_from_entries(list({'key': qi, 'value': codes})) AS codes,
           map_from_entries(list({'key': qi, 'value': null_code})) AS null_codes
    FROM (SELECT qi, coalesce(map_from_entries(list({'key': v, 'value': code}) FILTER (WHERE v IS NOT NULL)), MAP {}) AS codes,
                 min(code) FILTER (WHERE v IS NULL) AS null_code
          FROM (SELECT qi, v, row_number() OVER (PARTITION BY qi ORDER BY first) - 1 AS code
                FROM (SELECT qi, v, min(__anon_cell) AS first
                      FROM (SELECT __anon_cell, unnest(list_transform(struct_keys(struct_pack(*COLUMNS(qis))), lambda q: lower(q))) AS qi,
                                   unnest([*COLUMNS(qis)]) AS v
                            FROM (SELECT __anon_cell, CASE WHEN anon_is_numeric(COLUMNS(qis)) THEN NULL ELSE COLUMNS(qis)::VARCHAR END
                                  FROM grouped WHERE categorical_order = 'appearance'))
                      GROUP BY qi, v))
          GROUP BY qi)),
-- The ranking windows run over narrow relations: a window sorts its whole input row, so carrying the
-- values through it costs several times more than the ranking itself.
ordered AS (  -- per QI an order key before ranking: the value, or the category's code / value rank;
              -- under a hierarchy, the leaf's code (a value the hierarchy lacks is an error naming it)
    SELECT __anon_cell,
        {'num': anon_is_numeric(COLUMNS(qis)) OR categorical_order = 'appearance',  -- keys already
         'hier': hier.codes[lower(alias(COLUMNS(qis)))] IS NOT NULL,
         'f': CASE WHEN hier.codes[lower(alias(COLUMNS(qis)))] IS NOT NULL
                   THEN coalesce(hier.codes[lower(alias(COLUMNS(qis)))][COLUMNS(qis)::VARCHAR],
                                 error(fn || '(): argument ''hierarchies'': the hierarchy of ''' || alias(COLUMNS(qis))
                                       || ''' has no leaf ' || coalesce('''' || COLUMNS(qis)::VARCHAR || '''', 'for NULL')
                                       || ', a value of the column'))::DOUBLE
                   WHEN anon_is_numeric(COLUMNS(qis)) THEN anon_numeric_key(COLUMNS(qis))
                   -- each window orders by a constant where its rank is not used (a number, the other
                   -- order), so only the categories' windows sort
                   WHEN categorical_order = 'value'
                   THEN dense_rank() OVER (ORDER BY CASE WHEN categorical_order = 'value' AND NOT anon_is_numeric(COLUMNS(qis))
                                                         THEN COLUMNS(qis) END NULLS LAST)
                   ELSE coalesce(app.codes[lower(alias(COLUMNS(qis)))][COLUMNS(qis)::VARCHAR],
                                 app.null_codes[lower(alias(COLUMNS(qis)))])::DOUBLE END}
    FROM grouped LEFT JOIN hier ON true LEFT JOIN appearance app ON true),
ranked AS (  -- numbers keep their value (NULL stays NULL); categories become codes 0 .. categories-1 (in
             -- categorical_order 'value', their value ranks are ranked once more: the same codes)
    SELECT __anon_cell,
        CASE WHEN struct_extract(COLUMNS(qis), 'num') OR struct_extract(COLUMNS(qis), 'hier')
             THEN struct_extract(COLUMNS(qis), 'f')
             ELSE (dense_rank() OVER (ORDER BY struct_extract(COLUMNS(qis), 'f')) - 1)::DOUBLE END
    FROM ordered),
keys AS (  -- the keys as one list, and the QIs' names in the same order (COLUMNS(list) expands in the
           -- table's column order)
    SELECT __anon_cell, [*COLUMNS(qis)] AS keys, list_transform(struct_keys(struct_pack(*COLUMNS(qis))), lambda q: lower(q)) AS names
    FROM ranked)
-- Pair each QI's value with its key under the QI's name (two different COLUMNS() cannot meet in one
-- expression; the keys' list can).
SELECT g.__anon_cell, g.__anon_n, row(*COLUMNS(qis)) AS __anon_key, g.__anon_s,
       anon_cell_hash(row(*COLUMNS(qis)), g.__anon_s) AS __anon_hash,
       {'v': COLUMNS(qis), 'k': k.keys[list_position(k.names, lower(alias(COLUMNS(qis))))]}
FROM grouped g JOIN keys k USING (__anon_cell);

-- The hash by which a source row finds its cell (anon_mondrian_labelled): of the row's QI values as one
-- STRUCT and its sensitive value. A join on this number costs a third of a join on the STRUCT itself
-- (1M rows); two cells sharing a hash are refused there, so no row can find another's cell.
CREATE OR REPLACE MACRO anon_cell_hash(key, s) AS hash(key, s);

-- The cells of anon_cells() with their QI keys as one list, __anon_keys, in the order of the qis list (ties
-- between QIs go to the earliest listed); a NULL in a numeric QI sorts after every value, one table-range
-- beyond the largest. Both partitioners read their keys from here.
CREATE OR REPLACE MACRO anon_keyed_cells(fn, table_name, qis, categorical_order, hierarchy_sql, sensitive) AS TABLE
WITH
cells AS MATERIALIZED (
    SELECT * FROM anon_cells(table_name, qis, categorical_order, fn := fn, hierarchy_sql := hierarchy_sql, sensitive := sensitive)),
qi_order AS (  -- COLUMNS(list) expands in the table's column order; perm maps it back to the list's order
    SELECT list_transform(qis, lambda q: list_position(list_transform(struct_keys(struct_pack(*COLUMNS(qis))),
                                                                      lambda name: lower(name)), lower(q))) AS perm
    FROM anon_source(table_name, qis := qis, sensitive := sensitive) LIMIT 1),
raw AS MATERIALIZED (
    SELECT __anon_cell, list_transform(o.perm, lambda p: t[p]) AS keys
    FROM (SELECT __anon_cell, [*COLUMNS(qis)] AS t FROM (SELECT __anon_cell, struct_extract(COLUMNS(qis), 'k') FROM cells)) c,
         qi_order o),
nulls AS (
    SELECT list(coalesce(hi + greatest(hi - lo, 1), 0) ORDER BY d) AS fill
    FROM (SELECT d, min(key) AS lo, max(key) AS hi
          FROM (SELECT unnest(range(len(keys))) AS d, unnest(keys) AS key FROM raw) GROUP BY d))
SELECT c.* EXCLUDE (__anon_key), list_transform(r.keys, lambda x, i: coalesce(x, fill[i])) AS __anon_keys
FROM cells c JOIN raw r USING (__anon_cell), nulls;

-- Partition the cells. Returns (cell, off, n, part, __anon_s, __anon_hash, <one {'v', 'k'} column per QI>):
-- rows off .. off+n-1 (in row order) of cell `cell` belong to partition `part`.
-- Plain calls (no hierarchy, model or suppression; at most 32 QIs) run the recursion generated from the
-- level plan (duckdb_anon/levels/macros.py: anon_level_partition_<width>_<mode>_<rule>), the others the
-- checked recursion below; query() names the one to run from fixed text and escaped literals.
CREATE OR REPLACE MACRO anon_partition(fn, table_name, qis, k, mode, categorical_order, rule, hierarchy_sql, sensitive, model) AS TABLE
SELECT * FROM query(
    CASE WHEN hierarchy_sql = anon_no_hierarchies() AND sensitive IS NULL AND coalesce(struct_extract(model, 'suppress'), 0) = 0
              AND anon_level_partitioner(len(qis), mode, rule) IS NOT NULL
         THEN 'SELECT * FROM ' || anon_level_partitioner(len(qis), mode, rule) || '(' || anon_sql_literal(fn) || ', '
              || anon_sql_literal(table_name) || ', ' || anon_sql_list(qis) || ', ' || k::BIGINT::VARCHAR || ', '
              || anon_sql_literal(categorical_order) || ')'
         ELSE 'SELECT * FROM anon_partition_checked(' || anon_sql_literal(fn) || ', ' || anon_sql_literal(table_name) || ', '
              || anon_sql_list(qis) || ', ' || k::BIGINT::VARCHAR || ', ' || anon_sql_literal(mode) || ', '
              || anon_sql_literal(categorical_order) || ', ' || anon_sql_literal(rule) || ', ' || anon_sql_literal(hierarchy_sql)
              || ', ' || coalesce(anon_sql_literal(sensitive), 'NULL') || ', ' || anon_model_struct_sql(model) || ')' END);

-- The generated partitioner serving `q` QIs in `mode` under split rule `rule`, or NULL when none is
-- installed (duckdb_anon.levels.macros.SHAPES lists them: 8 key columns, unused ones 0 and never cut; 16
-- for split rule 'actual'. Each one costs every install about 10 ms, so the rarer shapes have none).
CREATE OR REPLACE MACRO anon_level_partitioner(q, mode, rule) AS
    CASE WHEN mode NOT IN ('strict', 'relaxed') OR rule NOT IN ('actual', 'inherited') THEN NULL  -- names from known words only
         WHEN q <= 8 THEN 'anon_level_partition_8_' || mode || '_' || rule
         WHEN q <= 16 AND rule = 'actual' THEN 'anon_level_partition_16_' || mode || '_actual' END;

-- A model STRUCT {'l', 'l_kind', 'c', 't', 'suppress'} written back as SQL text.
CREATE OR REPLACE MACRO anon_model_struct_sql(model) AS
    '{''l'': ' || coalesce(struct_extract(model, 'l')::VARCHAR, 'NULL') || '::DOUBLE, ''l_kind'': '
    || coalesce(anon_sql_literal(struct_extract(model, 'l_kind')), 'NULL') || ', ''c'': '
    || coalesce(struct_extract(model, 'c')::VARCHAR, 'NULL') || '::DOUBLE, ''t'': '
    || coalesce(struct_extract(model, 't')::VARCHAR, 'NULL') || '::DOUBLE, ''suppress'': '
    || coalesce(struct_extract(model, 'suppress')::VARCHAR, 'NULL') || '::DOUBLE}';

-- The checked recursion: `rule` picks the split dimension: 'actual' = widest normalised range of the
-- partition's own values; 'inherited' = widest range of the region the partition was cut from, as the
-- public C and Python implementations do (they reach the published NCP figures). A QI with a hierarchy is
-- cut into the children of the node covering the partition's leaves, its width being that node's share of
-- the leaves (whatever the rule). `model` ({'l', 'l_kind', 'c', 't'}) with a `sensitive` column makes a
-- cut allowable only if every side satisfies it.
CREATE OR REPLACE MACRO anon_partition_checked(fn, table_name, qis, k, mode, categorical_order, rule, hierarchy_sql, sensitive,
                                               model) AS TABLE
WITH RECURSIVE
cells AS MATERIALIZED (
    SELECT * FROM anon_keyed_cells(fn, table_name, qis, categorical_order, hierarchy_sql, sensitive)),
sensitive_ranks AS MATERIALIZED (  -- the sensitive values in value order (NULL last), as the measures rank them
    SELECT __anon_s AS s, sum(__anon_n) AS n, dense_rank() OVER (ORDER BY __anon_s) AS r FROM cells GROUP BY __anon_s),
keyed AS MATERIALIZED (
    SELECT __anon_cell AS cell, __anon_n AS n, sr.r AS s, __anon_keys AS keys
    FROM cells c JOIN sensitive_ranks sr ON sr.s IS NOT DISTINCT FROM c.__anon_s),
vranks AS MATERIALIZED (  -- relaxed mode only: the cell's place in QI-vector order, for sharing ties
    SELECT cell, row_number() OVER (ORDER BY keys, cell) AS vrank FROM keyed WHERE mode = 'relaxed'),
hierarchies AS MATERIALIZED (  -- per QI in list order: its hierarchy's nodes and leaf count (NULL: none)
    SELECT list_transform(qis, lambda q: h.nodes[lower(q)]) AS nodes,
           list_transform(qis, lambda q: h.leaf_counts[lower(q)]) AS leaf_counts
    FROM anon_hierarchy_maps(fn, hierarchy_sql, checked := false) h),  -- anon_cells checked them
leaf_ancestors AS MATERIALIZED (  -- per (QI position, leaf code): the code runs' starts of its ancestors
    SELECT list_position(list_transform(qis, lambda q: lower(q)), qi) - 1 AS d, code::DOUBLE AS key, anc
    FROM anon_hierarchy_leaves(fn, hierarchy_sql, checked := false)),
span AS MATERIALIZED (  -- the whole table's range per QI (NULL included): normaliser and root region
    SELECT list(lo ORDER BY d) AS root_lo, list(hi ORDER BY d) AS root_hi,
           list(hi - lo ORDER BY d) AS ranges,  -- widths are divided by these (a product with the inverse
           -- can round the whole range below 1 and break a tie between QIs)
           any_value(h.nodes) AS hnodes, any_value(h.leaf_counts) AS hleaves,
           (SELECT sum(n) FROM keyed)::BIGINT AS total_rows,
           -- medians by rows when cells are mostly single rows and no cut needs its sides counted
           sensitive IS NULL AND coalesce(struct_extract(model, 'suppress'), 0) = 0
               AND list_bool_and(list_transform(any_value(h.nodes), lambda x: x IS NULL))
               AND (SELECT 10 * count(*) >= 9 * sum(n) FROM keyed) AS by_rows
    FROM (SELECT d, min(key) AS lo, max(key) AS hi
          FROM (SELECT unnest(range(len(keys))) AS d, unnest(keys) AS key FROM keyed) GROUP BY d), hierarchies h),
table_dist AS MATERIALIZED (  -- the sensitive distribution of the whole table, for the models
    SELECT list(n / total ORDER BY r) AS q, list(running / total ORDER BY r) AS cq,
           list({'r': r, 'n': n} ORDER BY r) AS hist,
           (SELECT anon_is_numeric(any_value(COLUMNS([coalesce(sensitive, qis[1])]))) FROM anon_source(table_name, qis := qis, sensitive := sensitive)) AS ordered
    FROM (SELECT r, n, sum(n) OVER () AS total, sum(n) OVER (ORDER BY r) AS running FROM sensitive_ranks)),
-- The recursive state is kept narrow, (cell, off, n, part, step) plus the region for split_rule
-- 'inherited' and the partition's suppression budget (rows it may still suppress; 0 without
-- max_suppression); each iteration joins the cells' keys back in. Suppressed pieces get part -1 and stop.
-- Each iteration emits only the pieces it moved; USING KEY (cell, off) keeps each piece's latest row, so
-- the table stays one row per piece. (A plain UNION ALL keeps every level's rows, about levels x rows in
-- all, and then needs a final pick: at 200k high-cardinality rows it took twice as long.)
parts(cell, off, n, part, step, blo, bhi, budget) USING KEY (cell, off) AS (
    SELECT cell, 0::BIGINT, n::BIGINT, 0::BIGINT, 0,
           CASE WHEN rule = 'inherited' THEN span.root_lo END::DOUBLE[],
           CASE WHEN rule = 'inherited' THEN span.root_hi END::DOUBLE[],
           floor(struct_extract(model, 'suppress') * span.total_rows)::BIGINT
    FROM keyed, span, table_dist td
    WHERE anon_check(sensitive IS NOT NULL AND NOT anon_model_holds(td.hist, model, td.q, td.cq, td.ordered),
                     fn, CASE WHEN struct_extract(model, 'l') IS NOT NULL THEN 'l' ELSE 't' END,
                     'cannot be met: the whole table is only '
                     || CASE struct_extract(model, 'l_kind') WHEN 'distinct' THEN anon_distinct_l(td.hist)::VARCHAR || ' (distinct)'
                             WHEN 'entropy' THEN round(anon_entropy_l(td.hist), 3)::VARCHAR || ' (entropy)'
                             ELSE anon_recursive_l(td.hist, struct_extract(model, 'c'))::VARCHAR || ' (recursive)' END
                     || '-diverse in ''' || coalesce(sensitive, '') || '''')
    UNION ALL
    (WITH
    state AS (SELECT p.*, kd.keys, kd.s FROM parts p JOIN keyed kd USING (cell) WHERE p.part >= 0),
    unnested AS NOT MATERIALIZED (SELECT part, n, blo, bhi, budget, unnest(range(len(keys))) AS d, unnest(keys) AS key FROM state),
    -- Medians are found one of two ways, chosen once per table (span.by_rows); both give the key where the
    -- partition's running row count, in key order, first reaches n//2.
    -- By rows (cells mostly single rows and no cut to check, as in high-cardinality tables): the median is
    -- the (n//2)-th smallest row key, selected by quantile_disc without sorting. quantile_disc(0.5) takes
    -- the ceil(m/2)-th of m keys, so each group gets one extra key below all others; a cell of several rows
    -- counts once per row. Each partition's widest QI is tried first (round 1); only the partitions whose
    -- widest cut fails (strict mode) have every QI's median found (round 2).
    row_sizes AS (  -- per (partition, QI): rows, range and width
        SELECT part, d, n, lo, hi, blo_d, bhi_d, budget,
               CASE WHEN rule = 'inherited' THEN anon_share(bhi_d - blo_d, span.ranges[d + 1]) ELSE anon_share(hi - lo, span.ranges[d + 1]) END AS width
        FROM (SELECT part, d, sum(n) AS n, min(key) AS lo, max(key) AS hi, any_value(blo[d + 1]) AS blo_d,
                     any_value(bhi[d + 1]) AS bhi_d, any_value(budget) AS budget
              FROM unnested WHERE (SELECT by_rows FROM span) GROUP BY part, d HAVING sum(n) >= 2), span),
    widest AS (  -- the first QI a cut can use: the widest whose keys differ, ties to the earliest
        SELECT part, arg_max(d, [width, -d]) AS d FROM row_sizes WHERE hi > lo GROUP BY part),
    round1 AS (SELECT part, w.d, state.n, state.keys[w.d + 1] AS key FROM state JOIN widest w USING (part)),
    splits1 AS (
        SELECT part, d, quantile_disc(key, 0.5) AS split
        FROM (SELECT part, d, key FROM round1 WHERE n = 1
              UNION ALL SELECT part, d, unnest(list_resize([key], n::BIGINT, key)) FROM round1 WHERE n > 1
              UNION ALL SELECT part, d, '-inf'::DOUBLE FROM widest)
        GROUP BY part, d),
    medians1 AS (
        SELECT part, d, any_value(split) AS split, sum(n) FILTER (WHERE key = split) AS cnt,
               sum(n) FILTER (WHERE key <= split) AS cum, min(key) FILTER (WHERE key > split) AS nxt
        FROM round1 JOIN splits1 USING (part, d) GROUP BY part, d),
    failed AS (  -- strict mode: the partitions whose widest cut leaves a side under k rows
        SELECT part FROM medians1 JOIN row_sizes USING (part, d) WHERE mode = 'strict' AND NOT (cum >= k AND n - cum >= k)),
    round2 AS (SELECT part, unnest(range(len(keys))) AS d, n, unnest(keys) AS key
               FROM state WHERE (SELECT by_rows FROM span) AND part IN (SELECT part FROM failed)),
    splits2 AS (
        SELECT part, d, quantile_disc(key, 0.5) AS split
        FROM (SELECT part, d, key FROM round2 WHERE n = 1
              UNION ALL SELECT part, d, unnest(list_resize([key], n::BIGINT, key)) FROM round2 WHERE n > 1
              UNION ALL SELECT part, d, '-inf'::DOUBLE FROM row_sizes WHERE part IN (SELECT part FROM failed))
        GROUP BY part, d),
    medians2 AS (
        SELECT part, d, any_value(split) AS split, sum(n) FILTER (WHERE key = split) AS cnt,
               sum(n) FILTER (WHERE key <= split) AS cum, min(key) FILTER (WHERE key > split) AS nxt
        FROM round2 JOIN splits2 USING (part, d) GROUP BY part, d),
    row_medians AS (  -- in the shape of the count medians below
        SELECT part, d, split, cnt, blo_d, bhi_d, budget, cum, n, lo, hi, nxt
        FROM (SELECT * FROM medians1 WHERE part NOT IN (SELECT part FROM failed) UNION ALL SELECT * FROM medians2)
        JOIN row_sizes USING (part, d)),
    -- By counts: rows per (partition, QI, key), then one window pass of running counts; the median row is
    -- where they reach n//2.
    freq AS (
        SELECT part, d, key, sum(n) AS cnt, any_value(blo[d + 1]) AS blo_d, any_value(bhi[d + 1]) AS bhi_d,
               any_value(budget) AS budget
        FROM unnested WHERE NOT (SELECT by_rows FROM span)
        GROUP BY part, d, key),
    medians AS (
        SELECT * FROM (
            SELECT part, d, key AS split, cnt, blo_d, bhi_d, budget,
                   sum(cnt) OVER w AS cum,
                   sum(cnt) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n,
                   first_value(key) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS lo,
                   last_value(key) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS hi,
                   lead(key) OVER w AS nxt
            FROM freq WINDOW w AS (PARTITION BY part, d ORDER BY key))
        WHERE cum >= n // 2 AND cum - cnt < n // 2
        UNION ALL
        SELECT * FROM row_medians),
    candidates AS (
        SELECT part, d, lo, hi, split, nxt, cum - cnt AS below, budget,
               -- cuts whose sides are counted below: hierarchical ones, and any when a model or suppression is on
               span.hnodes[d + 1] IS NOT NULL OR sensitive IS NOT NULL OR budget > 0 AS checked,
               CASE WHEN mode = 'strict' THEN cum ELSE n // 2 END AS go_left,
               cum > n // 2 AS ties_stay_right,
               span.hnodes[d + 1] IS NOT NULL AS hier,
               anon_lca(span.hnodes[d + 1], lo, hi).depth AS node_depth,
               CASE WHEN span.hnodes[d + 1] IS NOT NULL THEN hi > lo  -- children still to be checked for k
                    WHEN mode = 'strict' THEN (cum >= k AND n - cum >= k)  -- with a budget, one side may go
                                              OR (budget > 0 AND n - cum > 0 AND (cum >= k OR n - cum >= k))
                    ELSE n // 2 >= k AND hi > lo END AS valid,
               CASE WHEN span.hnodes[d + 1] IS NOT NULL THEN anon_hierarchy_width(span.hnodes[d + 1], span.hleaves[d + 1], lo, hi)
                    WHEN rule = 'inherited' THEN anon_share(bhi_d - blo_d, span.ranges[d + 1])
                    ELSE anon_share(hi - lo, span.ranges[d + 1]) END AS width
        FROM medians, span),
    sides AS (  -- the groups a cut would make, where they need checking: the children of a hierarchical QI's
                -- node, the two halves of a numeric cut (for the models and suppression)
        SELECT c.part, c.d, CASE WHEN c.hier THEN la.anc[c.node_depth + 2] ELSE (f.key > c.split)::BIGINT END AS g,
               f.s, sum(f.cnt) AS cnt
        FROM (SELECT part, d, key, NULL::BIGINT AS s, cnt FROM freq WHERE sensitive IS NULL
              UNION ALL
              SELECT part, d, key, s, sum(n) AS cnt
              FROM (SELECT part, n, s, unnest(range(len(keys))) AS d, unnest(keys) AS key FROM state WHERE sensitive IS NOT NULL)
              GROUP BY part, d, key, s) f
        JOIN candidates c USING (part, d)
        LEFT JOIN leaf_ancestors la ON c.hier AND la.d = f.d AND la.key = f.key
        WHERE c.valid AND c.checked
        GROUP BY ALL),
    side_checks AS (  -- per cut: which sides hold k rows and the models ("good"), the rows of the others,
                      -- and per side its offset (rows of the sides before it) and size
        SELECT part, d, bool_and(good) AS all_good, bool_or(good) AS any_good,
               coalesce(sum(rows) FILTER (WHERE NOT good), 0) AS failing, sum(rows) FILTER (WHERE good) AS good_rows,
               list({'g': g, 'before': before, 'good': good, 'rows': rows}) AS offsets
        FROM (SELECT part, d, g, sum(cnt) AS rows, sum(cnt) >= k AND (sensitive IS NULL OR anon_model_holds(
                         list({'r': s, 'n': cnt} ORDER BY s), model, any_value(td.q), any_value(td.cq), any_value(td.ordered))) AS good,
                     sum(sum(cnt)) OVER (PARTITION BY part, d ORDER BY g) - sum(cnt) AS before
              FROM sides, table_dist td GROUP BY part, d, g)
        GROUP BY part, d),
    decisions AS (  -- one per splittable partition: the widest valid QI, ties to the earliest. A checked cut
                    -- is valid when all its sides are good, or when some are and the others fit the budget
        SELECT part, d AS dim, split, nxt, go_left::BIGINT AS go_left, below::BIGINT AS below, ties_stay_right,
               hier, node_depth, budget, sc.failing, sc.good_rows, sc.offsets, [width, -d] AS chosen
        FROM candidates c LEFT JOIN side_checks sc USING (part, d)
        WHERE valid AND (NOT checked OR coalesce(sc.all_good OR (sc.any_good AND sc.failing <= budget), false))
        QUALIFY row_number() OVER (PARTITION BY part ORDER BY width DESC, d) = 1),
    regions AS (  -- split_rule 'inherited' only: every QI's width and actual range, to update the region
        SELECT part, list([width, -d] ORDER BY d) AS widths, list(lo ORDER BY d) AS los, list(hi ORDER BY d) AS his
        FROM (SELECT part, d, width, lo, hi FROM candidates WHERE NOT (SELECT by_rows FROM span)
              UNION ALL SELECT part, d, width, lo, hi FROM row_sizes)  -- round 1 has one QI's median only
        WHERE rule = 'inherited' GROUP BY part),
    placed AS (  -- the cell's side of a checked cut: for a hierarchical cut, hier_before = the rows of the
                 -- children before its own; suppressed when its side is not good; the budget its side inherits
        SELECT * EXCLUDE (side_info, parent_budget, failing, good_rows),
               CASE WHEN hier THEN struct_extract(side_info, 'before') END AS hier_before,
               coalesce(NOT struct_extract(side_info, 'good'), false) AS suppressed,
               coalesce(floor((parent_budget - failing) * struct_extract(side_info, 'rows') / good_rows), 0)::BIGINT AS budget
        FROM (SELECT w.* EXCLUDE (budget), dec.* EXCLUDE (part, offsets, budget), reg.* EXCLUDE (part),
                     w.keys[dec.dim + 1] AS v, dec.budget AS parent_budget,
                     list_filter(dec.offsets, lambda o: o.g = CASE WHEN dec.hier THEN la.anc[dec.node_depth + 2]
                                                                   ELSE (w.keys[dec.dim + 1] > dec.split)::BIGINT END)[1] AS side_info
              FROM state w JOIN decisions dec USING (part) LEFT JOIN regions reg USING (part)
              LEFT JOIN leaf_ancestors la ON dec.hier AND la.d = dec.dim AND la.key = w.keys[dec.dim + 1])),
    tied AS (  -- relaxed mode only: tied rows before each tie cell, taken in QI-vector order (similar rows
               -- stay together), then row order
        SELECT cell, off, coalesce(sum(n) OVER (PARTITION BY part ORDER BY vrank, off
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
        FROM placed JOIN vranks USING (cell) WHERE mode = 'relaxed' AND v = split AND NOT hier),
    shares AS (  -- rows of each cell that go left: all, none, or a tie cell's share of the ties
        SELECT p.*, CASE WHEN hier OR v < split OR (mode = 'strict' AND v = split) THEN n
                         WHEN v > split THEN 0
                         ELSE least(greatest(go_left - below - t.before, 0), n) END AS lefts
        FROM placed p LEFT JOIN tied t USING (cell, off))
    SELECT cell, off + piece.skip, piece.n,
           CASE WHEN suppressed THEN -1 WHEN piece.side = 0 THEN part + coalesce(hier_before, 0) ELSE part + go_left END,
           step + 1,
           CASE WHEN rule = 'inherited' THEN list_transform(range(len(keys)), lambda i:
               CASE WHEN i = dim AND piece.side = 0 THEN los[i + 1]
                    WHEN i = dim THEN CASE WHEN mode = 'relaxed' AND ties_stay_right THEN split ELSE coalesce(nxt, split) END
                    WHEN widths[i + 1] >= chosen THEN los[i + 1]  -- QIs examined before the chosen one
                    ELSE blo[i + 1] END) END,
           CASE WHEN rule = 'inherited' THEN list_transform(range(len(keys)), lambda i:
               CASE WHEN i = dim AND piece.side = 0 THEN split
                    WHEN i = dim THEN his[i + 1]
                    WHEN widths[i + 1] >= chosen THEN his[i + 1]
                    ELSE bhi[i + 1] END) END,
           budget
    FROM shares,
         unnest([{'side': 0, 'skip': 0::BIGINT, 'n': lefts::BIGINT},
                 {'side': 1, 'skip': lefts::BIGINT, 'n': (n - lefts)::BIGINT}]) AS t(piece)
    WHERE piece.n > 0)
)
SELECT p.cell, p.off, p.n, p.part, c.* EXCLUDE (__anon_cell, __anon_n, __anon_keys)
FROM (SELECT cell, off, n, part FROM parts) p
JOIN cells c ON c.__anon_cell = p.cell;

-- The shared machinery of every mondrian macro: each source row with __anon_row (scan position),
-- __anon_class, __anon_size, and each QI replaced by its class's label STRUCT(text, lo, hi, mean): the
-- text rendering, typed bounds (in the QI's order), and the mean for plain numbers. Labels are made once
-- per class and attached to cells, so every source row needs one join.
CREATE OR REPLACE MACRO anon_mondrian_labelled(fn, table_name, qis, k, mode, categorical_order, rule, hierarchy_sql,
                                               sensitive, model) AS TABLE
WITH
pieces AS MATERIALIZED (
    SELECT * FROM anon_partition(fn, table_name, qis, k, mode, categorical_order, rule, hierarchy_sql, sensitive, model)),
plain_labels AS (
    SELECT part, sum(n) AS __anon_size,
           -- classes are numbered from 1; the suppressed rows (part -1, first in this order) are class 0
           row_number() OVER (ORDER BY part) - CASE WHEN min(part) OVER () < 0 THEN 1 ELSE 0 END AS __anon_class,
        {'text': anon_label_text(min(struct_extract(COLUMNS(qis), 'v')), max(struct_extract(COLUMNS(qis), 'v')),
                                 list_transform(list_sort(list(DISTINCT {'k': struct_extract(COLUMNS(qis), 'k'),
                                                                  'v': struct_extract(COLUMNS(qis), 'v')})),
                                                lambda e: e.v),  -- k first: sets follow the QI's order
                                 bool_or(struct_extract(COLUMNS(qis), 'v') IS NULL),
                                 anon_is_numeric(any_value(struct_extract(COLUMNS(qis), 'v'))),
                                 anon_is_temporal(any_value(struct_extract(COLUMNS(qis), 'v')))),
         'kmin': min(struct_extract(COLUMNS(qis), 'k')), 'kmax': max(struct_extract(COLUMNS(qis), 'k')),
         'lo': CASE WHEN anon_is_numeric(any_value(struct_extract(COLUMNS(qis), 'v')))
                    THEN min(struct_extract(COLUMNS(qis), 'v'))
                    ELSE arg_min(struct_extract(COLUMNS(qis), 'v'), struct_extract(COLUMNS(qis), 'k')) END,
         'hi': CASE WHEN anon_is_numeric(any_value(struct_extract(COLUMNS(qis), 'v')))
                    THEN max(struct_extract(COLUMNS(qis), 'v'))
                    ELSE arg_max(struct_extract(COLUMNS(qis), 'v'), struct_extract(COLUMNS(qis), 'k')) END,
         'mean': CASE WHEN anon_is_numeric(any_value(struct_extract(COLUMNS(qis), 'v')))
                       AND NOT anon_is_temporal(any_value(struct_extract(COLUMNS(qis), 'v')))
                      THEN sum(try_cast(struct_extract(COLUMNS(qis), 'v') AS DOUBLE) * n)
                           / sum(CASE WHEN struct_extract(COLUMNS(qis), 'v') IS NOT NULL THEN n END) END}
    FROM pieces GROUP BY part),
labels AS (  -- a QI with a hierarchy reads as the node covering the class's leaves; suppressed rows read '*'
    SELECT part, __anon_class, __anon_size,
        {'text': CASE WHEN part < 0 THEN '*'
                      WHEN h.nodes[lower(alias(COLUMNS(qis)))] IS NULL THEN struct_extract(COLUMNS(qis), 'text')
                      ELSE anon_lca(h.nodes[lower(alias(COLUMNS(qis)))], struct_extract(COLUMNS(qis), 'kmin'),
                                    struct_extract(COLUMNS(qis), 'kmax')).name END,
         'typed': {'lo': CASE WHEN part >= 0 THEN struct_extract(COLUMNS(qis), 'lo') END,
                   'hi': CASE WHEN part >= 0 THEN struct_extract(COLUMNS(qis), 'hi') END,
                   'mean': CASE WHEN part >= 0 THEN struct_extract(COLUMNS(qis), 'mean') END}}
    FROM plain_labels, anon_hierarchy_maps(fn, hierarchy_sql, checked := false) h),
cells AS MATERIALIZED (  -- per cell: its hash and, unless relaxed mode cut it, its class (strict mode never
    -- cuts a cell: one piece each); the labels join by class once rows have found their cells. k may not
    -- exceed the row count, the total of the cells (an empty table has no cells and no release)
    SELECT __anon_hash, cell AS __anon_cellid, part AS __anon_part FROM pieces WHERE mode = 'strict'
    UNION ALL
    SELECT any_value(__anon_hash), cell, CASE WHEN count(*) = 1 THEN any_value(part) END
    FROM pieces WHERE mode <> 'strict' GROUP BY cell),
checked_cells AS (
    SELECT * FROM cells
    WHERE (SELECT anon_check(k > sum(n), fn, 'k', 'is ' || k::VARCHAR || ' but the table has only ' || sum(n)::VARCHAR || ' rows')
                  AND CASE WHEN count(DISTINCT __anon_hash) < count(DISTINCT cell)
                           THEN error(fn || '(): ' || (count(DISTINCT cell) - count(DISTINCT __anon_hash))::VARCHAR
                                      || ' pair(s) of different QI vectors share a 64-bit hash (anon_cell_hash); no release '
                                      || 'is made rather than a wrong one') ELSE true END
           FROM pieces)),
cell_labels AS (  -- the labels joined to the cells, so that each source row needs one join
    SELECT c.*, lb.* EXCLUDE (part) FROM checked_cells c LEFT JOIN labels lb ON lb.part = c.__anon_part),
located AS (  -- every source row has a cell: an unmatched row would be an error, never a row left out
    SELECT r.* EXCLUDE (__anon_hash), c.* EXCLUDE (__anon_hash, __anon_cellid),
           CASE WHEN c.__anon_cellid IS NULL THEN error(fn || '(): source row ' || r.__anon_row::VARCHAR || ' found no cell')
                ELSE c.__anon_cellid END AS __anon_cellid
    FROM (SELECT * EXCLUDE (__anon_key, __anon_s), anon_cell_hash(__anon_key, __anon_s) AS __anon_hash
          FROM (SELECT COLUMNS(lambda c: NOT anon_is_qi(qis, c)), row(*COLUMNS(qis)) AS __anon_key,
                       CASE WHEN sensitive IS NULL THEN NULL ELSE COLUMNS([coalesce(sensitive, qis[1])]) END AS __anon_s
                FROM anon_numbered(table_name, qis := qis, sensitive := sensitive))) r
    LEFT JOIN cell_labels c ON r.__anon_hash = c.__anon_hash)
SELECT * EXCLUDE (__anon_cellid, __anon_part) FROM located WHERE __anon_part IS NOT NULL
UNION ALL BY NAME  -- relaxed mode's cut cells: the first rows (in row order) go to the first piece. The
                  -- mode test lets the optimizer drop this branch (and its sort) in strict mode.
SELECT l.* EXCLUDE (__anon_cellid, __anon_rank), lb.* EXCLUDE (part)
FROM (SELECT COLUMNS(lambda c: NOT anon_is_qi(qis, c) AND c NOT IN ('__anon_part', '__anon_class', '__anon_size')),
             row_number() OVER (PARTITION BY __anon_cellid ORDER BY __anon_row) - 1 AS __anon_rank
      FROM located WHERE __anon_part IS NULL AND mode = 'relaxed') l
ASOF JOIN (SELECT cell, off, part FROM pieces
           WHERE mode = 'relaxed' AND cell IN (SELECT __anon_cellid FROM checked_cells WHERE __anon_part IS NULL)) p
    ON p.cell = l.__anon_cellid AND l.__anon_rank >= p.off
JOIN labels lb ON lb.part = p.part;

-- mondrian(): the release. Every source row and column, in the source's column order, each QI replaced by
-- its class's generalisation: `shape` 'text' (the rendering) or 'typed' (STRUCT(lo, hi, mean)). Rows come
-- in no particular order (sorting 1M rows back into source order cost 0.35 s); add ORDER BY where it matters.
-- The NULL-typed empty first branch only fixes the column order; UNION BY NAME takes types from the rows.
CREATE OR REPLACE MACRO anon_mondrian_release(shape, table_name, qis, k, mode, categorical_order, split_rule,
                                              hierarchy_sql, sensitive, model) AS TABLE
SELECT * EXCLUDE (__anon_row) FROM (
    (SELECT nullif(NULL, COLUMNS(*)) FROM anon_source(table_name, qis := qis, sensitive := sensitive) LIMIT 0)
    UNION ALL BY NAME
    (SELECT COLUMNS(lambda c: c = '__anon_row' OR (NOT starts_with(c, '__anon_') AND NOT anon_is_qi(qis, c))),
            struct_extract(COLUMNS(qis), shape)
     FROM anon_mondrian_labelled('mondrian', table_name, qis, k, mode, categorical_order, split_rule,
                                  hierarchy_sql, sensitive, model)));

-- The two shapes by name, for the dispatcher in 11_mondrian_api.sql.
CREATE OR REPLACE MACRO anon_mondrian_text(table_name, qis, k, mode, categorical_order, split_rule, hierarchy_sql,
                                           sensitive, model) AS TABLE
SELECT * FROM anon_mondrian_release('text', table_name, qis, k, mode, categorical_order, split_rule, hierarchy_sql,
                                    sensitive, model);

CREATE OR REPLACE MACRO anon_mondrian_typed(table_name, qis, k, mode, categorical_order, split_rule, hierarchy_sql,
                                            sensitive, model) AS TABLE
SELECT * FROM anon_mondrian_release('typed', table_name, qis, k, mode, categorical_order, split_rule, hierarchy_sql,
                                    sensitive, model);

CREATE OR REPLACE MACRO anon_mondrian_classes(table_name, qis, k, mode, categorical_order, split_rule, hierarchy_sql,
                                             sensitive, model) AS TABLE
SELECT __anon_row AS row_id, __anon_class AS class_id, __anon_size AS class_size,
       struct_extract(COLUMNS(qis), 'typed')
FROM anon_mondrian_labelled('mondrian_classes', table_name, qis, k, mode, categorical_order, split_rule,
                                  hierarchy_sql, sensitive, model)
ORDER BY row_id;
