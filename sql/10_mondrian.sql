-- Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), in SQL.
--
-- Layout of the computation:
--   anon_numbered   every source row with its scan position (1-based): the row identity.
--   anon_cells      rows with identical QI values collapse into one weighted "cell". Strict Mondrian never
--                   separates identical rows, so partitioning cells is exact and far cheaper (Adult: 30,162
--                   rows -> 18,109 cells; a 10M-row sample of it -> about 100k cells). Each cell gets one
--                   DOUBLE order key per QI: the value for numbers and dates, the category's rank otherwise.
--   anon_partition  the level-synchronous recursion: every iteration splits every splittable partition once.
--                   A partition is named by its offset in a virtual ordering of the rows (left child keeps
--                   the parent's offset, right child = offset + rows going left), so names never collide.
--   anon_mondrian_labelled  labels made once per class (text, typed bounds, mean) and attached to cells;
--                   each source row finds its cell by its QI values (relaxed mode may cut a cell into
--                   pieces to share ties; those rows go to pieces in row order).
--   mondrian*       the user-facing table macros: argument checks, then one of the output shapes.

CREATE OR REPLACE MACRO anon_numbered(table_name) AS TABLE
    SELECT row_number() OVER () AS __anon_row, * FROM query_table(table_name);

CREATE OR REPLACE MACRO anon_cells(table_name, qis, categorical_order) AS TABLE
WITH grouped AS MATERIALIZED (
    SELECT COLUMNS(qis), count(*) AS __anon_n, min(__anon_row) AS __anon_cell
    FROM anon_numbered(table_name) GROUP BY ALL),
-- The ranking windows run over narrow relations: a window sorts its whole input row, so carrying the
-- values through it costs several times more than the ranking itself.
ordered AS (  -- per QI an order key before ranking: the value, or the category's first cell / value rank
    SELECT __anon_cell,
        {'num': anon_is_numeric(COLUMNS(qis)),
         'f': CASE WHEN anon_is_numeric(COLUMNS(qis)) THEN anon_numeric_key(COLUMNS(qis))
                   WHEN categorical_order = 'value' THEN dense_rank() OVER (ORDER BY COLUMNS(qis) NULLS LAST)
                   ELSE min(__anon_cell) OVER (PARTITION BY COLUMNS(qis)) END}
    FROM grouped),
ranked AS (  -- numbers keep their value (NULL stays NULL); categories become codes 0 .. categories-1
    SELECT __anon_cell,
        CASE WHEN struct_extract(COLUMNS(qis), 'num') THEN struct_extract(COLUMNS(qis), 'f')
             ELSE (dense_rank() OVER (ORDER BY struct_extract(COLUMNS(qis), 'f')) - 1)::DOUBLE END
    FROM ordered)
-- Pair each QI's value with its key under the QI's name. Two different COLUMNS() cannot meet in one
-- expression, so the halves come from a union by name and meet in a GROUP BY.
SELECT __anon_cell, any_value(__anon_n) AS __anon_n, any_value(__anon_key) AS __anon_key,
       {'v': any_value(struct_extract(COLUMNS(qis), 'v')), 'k': any_value(struct_extract(COLUMNS(qis), 'k'))}
FROM ((SELECT __anon_cell, __anon_n, row(*COLUMNS(qis)) AS __anon_key, {'v': COLUMNS(qis), 'k': NULL::DOUBLE} FROM grouped)
      UNION ALL BY NAME
      (SELECT __anon_cell, {'v': NULL, 'k': COLUMNS(qis)} FROM ranked))
GROUP BY __anon_cell;

-- Partition the cells. Returns (cell, off, n, part, __anon_key, <one {'v', 'k'} column per QI>): rows
-- off .. off+n-1 (in row order) of cell `cell` belong to partition `part`. `rule` picks the split dimension: 'actual' = widest normalised range of the
-- partition's own values; 'inherited' = widest range of the region the partition was cut from, as the
-- public C and Python implementations do (they reach the published NCP figures).
CREATE OR REPLACE MACRO anon_partition(table_name, qis, k, mode, categorical_order, rule) AS TABLE
WITH RECURSIVE
cells AS MATERIALIZED (SELECT * FROM anon_cells(table_name, qis, categorical_order)),
qi_order AS (  -- COLUMNS(list) expands in the table's column order; perm maps it back to the list's order
    SELECT list_transform(qis, lambda q: list_position(list_transform(struct_keys(struct_pack(*COLUMNS(qis))),
                                                                      lambda name: lower(name)), lower(q))) AS perm
    FROM query_table(table_name) LIMIT 1),
raw AS MATERIALIZED (  -- keys in the order of the qis list: ties between QIs go to the earliest listed
    SELECT __anon_cell AS cell, __anon_n AS n, list_transform(o.perm, lambda p: t[p]) AS keys
    FROM (SELECT __anon_cell, __anon_n, [*COLUMNS(qis)] AS t
          FROM (SELECT __anon_cell, __anon_n, struct_extract(COLUMNS(qis), 'k') FROM cells)), qi_order o),
nulls AS (  -- NULL in a numeric QI sorts after every value, one table-range beyond the largest
    SELECT list(coalesce(hi + greatest(hi - lo, 1), 0) ORDER BY d) AS fill
    FROM (SELECT d, min(key) AS lo, max(key) AS hi
          FROM (SELECT unnest(range(len(keys))) AS d, unnest(keys) AS key FROM raw) GROUP BY d)),
keyed AS MATERIALIZED (  -- vrank: the cell's place in QI-vector order, for relaxed mode's tie sharing
    SELECT cell, n, keys, row_number() OVER (ORDER BY keys, cell) AS vrank
    FROM (SELECT cell, n, list_transform(keys, lambda x, i: coalesce(x, fill[i])) AS keys FROM raw, nulls)),
span AS MATERIALIZED (  -- the whole table's range per QI (NULL included): normaliser and root region
    SELECT list(lo ORDER BY d) AS root_lo, list(hi ORDER BY d) AS root_hi,
           list(CASE WHEN hi > lo THEN 1.0 / (hi - lo) ELSE 0.0 END ORDER BY d) AS inv
    FROM (SELECT d, min(key) AS lo, max(key) AS hi
          FROM (SELECT unnest(range(len(keys))) AS d, unnest(keys) AS key FROM keyed) GROUP BY d)),
-- The recursive state is kept narrow, (cell, off, n, part, step) plus the region for split_rule
-- 'inherited'; each iteration joins the cells' keys back in. Each iteration emits only the pieces it moved,
-- and a piece's last row (highest step) is where it ended: a plain UNION ALL and one final pick cost less
-- than maintaining USING KEY's table in every iteration.
parts(cell, off, n, part, step, blo, bhi) AS (
    SELECT cell, 0::BIGINT, n::BIGINT, 0::BIGINT, 0,
           CASE WHEN rule = 'inherited' THEN span.root_lo END::DOUBLE[],
           CASE WHEN rule = 'inherited' THEN span.root_hi END::DOUBLE[]
    FROM keyed, span
    UNION ALL
    (WITH
    state AS (SELECT p.*, kd.keys, kd.vrank FROM parts p JOIN keyed kd USING (cell)),
    freq AS (  -- rows per (partition, QI, key), with the partition's region bounds for that QI
        SELECT part, d, key, sum(n) AS cnt, any_value(blo[d + 1]) AS blo_d, any_value(bhi[d + 1]) AS bhi_d
        FROM (SELECT part, n, blo, bhi, unnest(range(len(keys))) AS d, unnest(keys) AS key FROM state)
        GROUP BY part, d, key),
    medians AS (  -- per (partition, QI): the median row, where the running count first reaches n//2
        SELECT * FROM (
            SELECT part, d, key AS split, cnt, blo_d, bhi_d,
                   sum(cnt) OVER w AS cum,
                   sum(cnt) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n,
                   first_value(key) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS lo,
                   last_value(key) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS hi,
                   lead(key) OVER w AS nxt
            FROM freq WINDOW w AS (PARTITION BY part, d ORDER BY key))
        WHERE cum >= n // 2 AND cum - cnt < n // 2),
    candidates AS (
        SELECT part, d, lo, hi, split, nxt, cum - cnt AS below,
               CASE WHEN mode = 'strict' THEN cum ELSE n // 2 END AS go_left,
               cum > n // 2 AS ties_stay_right,
               CASE WHEN mode = 'strict' THEN cum >= k AND n - cum >= k ELSE n // 2 >= k AND hi > lo END AS valid,
               CASE WHEN rule = 'inherited' THEN bhi_d - blo_d ELSE hi - lo END * span.inv[d + 1] AS width
        FROM medians, span),
    decisions AS (  -- one per splittable partition: the widest valid QI, ties to the earliest
        SELECT part, d AS dim, split, nxt, go_left::BIGINT AS go_left, below::BIGINT AS below, ties_stay_right,
               [width, -d] AS chosen
        FROM candidates WHERE valid
        QUALIFY row_number() OVER (PARTITION BY part ORDER BY width DESC, d) = 1),
    regions AS (  -- split_rule 'inherited' only: every QI's width and actual range, to update the region
        SELECT part, list([width, -d] ORDER BY d) AS widths, list(lo ORDER BY d) AS los, list(hi ORDER BY d) AS his
        FROM candidates WHERE rule = 'inherited' GROUP BY part),
    placed AS (
        SELECT w.*, dec.* EXCLUDE (part), reg.* EXCLUDE (part), w.keys[dec.dim + 1] AS v
        FROM state w JOIN decisions dec USING (part) LEFT JOIN regions reg USING (part)),
    tied AS (  -- relaxed mode only: tied rows before each tie cell, taken in QI-vector order (similar rows
               -- stay together), then row order
        SELECT cell, off, coalesce(sum(n) OVER (PARTITION BY part ORDER BY vrank, off
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
        FROM placed WHERE mode = 'relaxed' AND v = split),
    shares AS (  -- rows of each cell that go left: all, none, or a tie cell's share of the ties
        SELECT p.*, CASE WHEN v < split OR (mode = 'strict' AND v = split) THEN n
                         WHEN v > split THEN 0
                         ELSE least(greatest(go_left - below - t.before, 0), n) END AS lefts
        FROM placed p LEFT JOIN tied t USING (cell, off))
    SELECT cell, off + piece.skip, piece.n,
           CASE WHEN piece.side = 0 THEN part ELSE part + go_left END,
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
                    ELSE bhi[i + 1] END) END
    FROM shares,
         unnest([{'side': 0, 'skip': 0::BIGINT, 'n': lefts::BIGINT},
                 {'side': 1, 'skip': lefts::BIGINT, 'n': (n - lefts)::BIGINT}]) AS t(piece)
    WHERE piece.n > 0)
)
SELECT p.cell, p.off, p.n, p.part, c.* EXCLUDE (__anon_cell, __anon_n)
FROM (SELECT cell, off, arg_max(n, step) AS n, arg_max(part, step) AS part FROM parts GROUP BY cell, off) p
JOIN cells c ON c.__anon_cell = p.cell;

-- The shared machinery of every mondrian macro: each source row with __anon_row (scan position),
-- __anon_class, __anon_size, and each QI replaced by its class's label STRUCT(text, lo, hi, mean): the
-- text rendering, typed bounds (in the QI's order), and the mean for plain numbers. Labels are made once
-- per class and attached to cells, so every source row needs one join.
CREATE OR REPLACE MACRO anon_mondrian_labelled(fn, table_name, qis, k, mode, categorical_order, rule) AS TABLE
WITH
pieces AS MATERIALIZED (SELECT * FROM anon_partition(table_name, qis, k, mode, categorical_order, rule)),
labels AS (
    SELECT part, row_number() OVER (ORDER BY part) AS __anon_class, sum(n) AS __anon_size,
        {'text': anon_label_text(min(struct_extract(COLUMNS(qis), 'v')), max(struct_extract(COLUMNS(qis), 'v')),
                                 list_transform(list_sort(list(DISTINCT {'k': struct_extract(COLUMNS(qis), 'k'),
                                                                  'v': struct_extract(COLUMNS(qis), 'v')})),
                                                lambda e: e.v),  -- k first: sets follow the QI's order
                                 bool_or(struct_extract(COLUMNS(qis), 'v') IS NULL),
                                 anon_is_numeric(any_value(struct_extract(COLUMNS(qis), 'v'))),
                                 anon_is_temporal(any_value(struct_extract(COLUMNS(qis), 'v')))),
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
cells AS MATERIALIZED (  -- per cell: its tuple key and, unless relaxed mode cut it, its class's labels;
    -- k may not exceed the row count, the total of the cells (an empty table has no cells and no release)
    SELECT c.__anon_key, c.cell, lb.* EXCLUDE (part)
    FROM (SELECT any_value(__anon_key) AS __anon_key, cell, CASE WHEN count(*) = 1 THEN any_value(part) END AS part,
                 sum(sum(n)) OVER () AS total_rows
          FROM pieces GROUP BY cell) c
    LEFT JOIN labels lb ON lb.part = c.part
    WHERE anon_check(k > c.total_rows, fn, 'k', 'is ' || k::VARCHAR || ' but the table has only '
                                                 || c.total_rows::VARCHAR || ' rows')),
located AS (
    SELECT r.* EXCLUDE (__anon_key), c.* EXCLUDE (__anon_key)
    FROM (SELECT COLUMNS(lambda c: NOT list_contains(qis, c)), row(*COLUMNS(qis)) AS __anon_key
          FROM anon_numbered(table_name)) r
    JOIN cells c ON r.__anon_key IS NOT DISTINCT FROM c.__anon_key)
SELECT * EXCLUDE (cell) FROM located WHERE __anon_class IS NOT NULL
UNION ALL BY NAME  -- relaxed mode's cut cells: the first rows (in row order) go to the first piece. The
                  -- mode test lets the optimizer drop this branch (and its sort) in strict mode.
SELECT l.* EXCLUDE (cell, __anon_rank), lb.* EXCLUDE (part)
FROM (SELECT COLUMNS(lambda c: NOT list_contains(qis, c) AND c NOT IN ('__anon_class', '__anon_size')),
             row_number() OVER (PARTITION BY cell ORDER BY __anon_row) - 1 AS __anon_rank
      FROM located WHERE __anon_class IS NULL AND mode = 'relaxed') l
ASOF JOIN (SELECT cell, off, part FROM pieces
           WHERE mode = 'relaxed' AND cell IN (SELECT cell FROM cells WHERE __anon_class IS NULL)) p
    ON p.cell = l.cell AND l.__anon_rank >= p.off
JOIN labels lb ON lb.part = p.part;

-- mondrian(): the release. Every source row and column, in the source's column order, each QI replaced by
-- its class's generalisation: text by default, STRUCT(lo, hi, mean) with output := 'typed'. Rows come in no
-- particular order (sorting 1M rows back into source order cost 0.35 s); add ORDER BY where it matters.
-- The NULL-typed empty first branch only fixes the column order; UNION BY NAME takes types from the rows.
CREATE OR REPLACE MACRO anon_mondrian_text(table_name, qis, k, mode, categorical_order, split_rule) AS TABLE
SELECT * EXCLUDE (__anon_row) FROM (
    (SELECT nullif(NULL, COLUMNS(*)) FROM query_table(table_name) LIMIT 0)
    UNION ALL BY NAME
    (SELECT COLUMNS(lambda c: c = '__anon_row' OR (NOT starts_with(c, '__anon_') AND NOT list_contains(qis, c))),
            struct_extract(COLUMNS(qis), 'text')
     FROM anon_mondrian_labelled('mondrian', table_name, qis, k, mode, categorical_order, split_rule)));

CREATE OR REPLACE MACRO anon_mondrian_typed(table_name, qis, k, mode, categorical_order, split_rule) AS TABLE
SELECT * EXCLUDE (__anon_row) FROM (
    (SELECT nullif(NULL, COLUMNS(*)) FROM query_table(table_name) LIMIT 0)
    UNION ALL BY NAME
    (SELECT COLUMNS(lambda c: c = '__anon_row' OR (NOT starts_with(c, '__anon_') AND NOT list_contains(qis, c))),
            struct_pack(lo := struct_extract(COLUMNS(qis), 'lo'), hi := struct_extract(COLUMNS(qis), 'hi'),
                        mean := struct_extract(COLUMNS(qis), 'mean'))
     FROM anon_mondrian_labelled('mondrian', table_name, qis, k, mode, categorical_order, split_rule)));

CREATE OR REPLACE MACRO anon_mondrian_classes(table_name, qis, k, mode, categorical_order, split_rule) AS TABLE
SELECT __anon_row AS row_id, __anon_class AS class_id, __anon_size AS class_size,
       struct_pack(lo := struct_extract(COLUMNS(qis), 'lo'), hi := struct_extract(COLUMNS(qis), 'hi'),
                   mean := struct_extract(COLUMNS(qis), 'mean'))
FROM anon_mondrian_labelled('mondrian_classes', table_name, qis, k, mode, categorical_order, split_rule)
ORDER BY row_id;

-- The user-facing macros check their scalar arguments and then call one of the macros above through
-- query(), built from fixed text and escaped literals only (anon_sql_literal): no argument can escape into
-- the SQL. The string is folded when the query is bound, so a wrong argument fails before anything runs,
-- with an error naming the function and the argument. (query() is also what lets `output` change the
-- result's column types.)
CREATE OR REPLACE MACRO anon_mondrian_call(fn, target, table_name, qis, k, mode, categorical_order, split_rule) AS
    'SELECT * FROM ' || target || '('
    || anon_sql_literal(table_name) || ', '
    || CASE WHEN NOT typeof(qis) LIKE '%[]' OR try_cast(qis AS VARCHAR[]) IS NULL
                 THEN error(fn || '(): argument ''qis'' must be a list of column names, e.g. [''age'', ''zip'']')
            WHEN len(try_cast(qis AS VARCHAR[])) = 0 THEN error(fn || '(): argument ''qis'' must name at least one column')
            WHEN len(list_distinct(try_cast(qis AS VARCHAR[]))) < len(try_cast(qis AS VARCHAR[]))
                 THEN error(fn || '(): argument ''qis'' lists a column twice')
            WHEN list_bool_or(list_transform(try_cast(qis AS VARCHAR[]), lambda q: q IS NULL OR starts_with(q, '__anon_')))
                 THEN error(fn || '(): argument ''qis'' holds NULL or a reserved __anon_ name')
            ELSE anon_sql_list(try_cast(qis AS VARCHAR[])) END || ', '
    || CASE WHEN NOT regexp_matches(typeof(k), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$')
                 THEN error(fn || '(): argument ''k'' must be an integer, got ' || coalesce(k::VARCHAR, 'NULL'))
            WHEN try_cast(k AS BIGINT) IS NULL OR try_cast(k AS BIGINT) < 1
                 THEN error(fn || '(): argument ''k'' must be at least 1, got ' || coalesce(k::VARCHAR, 'NULL'))
            ELSE try_cast(k AS BIGINT)::VARCHAR END || ', '
    || CASE WHEN mode IS NULL OR mode::VARCHAR NOT IN ('strict', 'relaxed')
                 THEN error(fn || '(): argument ''mode'' must be ''strict'' or ''relaxed'', got ' || coalesce('''' || mode::VARCHAR || '''', 'NULL'))
            ELSE anon_sql_literal(mode) END || ', '
    || CASE WHEN categorical_order IS NULL OR categorical_order::VARCHAR NOT IN ('appearance', 'value')
                 THEN error(fn || '(): argument ''categorical_order'' must be ''appearance'' or ''value'', got '
                            || coalesce('''' || categorical_order::VARCHAR || '''', 'NULL'))
            ELSE anon_sql_literal(categorical_order) END || ', '
    || CASE WHEN split_rule IS NULL OR split_rule::VARCHAR NOT IN ('actual', 'inherited')
                 THEN error(fn || '(): argument ''split_rule'' must be ''actual'' or ''inherited'', got '
                            || coalesce('''' || split_rule::VARCHAR || '''', 'NULL'))
            ELSE anon_sql_literal(split_rule) END
    || ')';

CREATE OR REPLACE MACRO mondrian(table_name, qis, k, mode := 'strict', output := 'text',
                                 categorical_order := 'appearance', split_rule := 'actual') AS TABLE
SELECT * FROM query(anon_mondrian_call('mondrian',
    CASE WHEN output = 'typed' THEN 'anon_mondrian_typed' WHEN output = 'text' THEN 'anon_mondrian_text'
         ELSE error('mondrian(): argument ''output'' must be ''text'' or ''typed'', got '
                    || coalesce('''' || output::VARCHAR || '''', 'NULL')) END,
    table_name, qis, k, mode, categorical_order, split_rule));

-- One row per source row: row_id (scan position, 1-based), class_id, class_size, and per QI the typed class
-- bounds STRUCT(lo, hi, mean). Materialize it to reuse a partitioning.
CREATE OR REPLACE MACRO mondrian_classes(table_name, qis, k, mode := 'strict', categorical_order := 'appearance',
                                         split_rule := 'actual') AS TABLE
SELECT * FROM query(anon_mondrian_call('mondrian_classes', 'anon_mondrian_classes',
    table_name, qis, k, mode, categorical_order, split_rule));
