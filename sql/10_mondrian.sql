-- Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), in SQL.
--
-- Layout of the computation:
--   anon_numbered   every source row with its scan position (1-based): the row identity.
--   anon_cells      rows with identical QI values collapse into one weighted "cell". Strict Mondrian never
--                   separates identical rows, so partitioning cells is exact and far cheaper. Each cell gets one
--                   DOUBLE order key per QI: the value for numbers and dates, the leaf's code under a
--                   hierarchy (05_hierarchies.sql), the category's rank otherwise. With a sensitive column,
--                   a cell also shares its sensitive value, so every cut can count the values on each side.
--   anon_partition  the level-synchronous recursion: every iteration splits every splittable partition once.
--                   A partition is named by its offset in a virtual ordering of the rows (each piece of a
--                   cut starts at the parent's offset plus the rows of the pieces before it), so names
--                   never collide. Plain calls run the recursion generated from the level plan
--                   (duckdb_anon/mondrian/macros.py); hierarchies (a hierarchical QI cuts into the covering
--                   node's children), models and suppression the one generated from its checked cuts
--                   (duckdb_anon/mondrian/checked_macros.py). The cells, their keys and the errors about
--                   them live here once; the level driver and Spark read them (duckdb_anon/mondrian/cells.py).
--   anon_mondrian_labelled  labels made once per class (text, typed bounds, mean) and attached to cells;
--                   each source row finds its cell by a hash of its QI values (relaxed mode may cut a cell into
--                   pieces to share ties; those rows go to pieces in row order).
--   anon_mondrian_text / _typed / _classes  the output shapes; mondrian() and mondrian_classes(), which
--                   check the arguments and pick a shape, are in 11_mondrian_api.sql.

-- Is column `c` one of the QIs? Names match as DuckDB matches them, whatever their case.
CREATE OR REPLACE MACRO anon_is_qi(qis, c) AS list_contains(list_transform(qis, lambda q: lower(q)), lower(c));

-- The source table as the macros below read it (anon_read_sql), so a QI or sensitive column the table
-- lacks reads NULL instead of stopping the binder; anon_cells then reports it, naming fn and the argument.
-- A macro apart from anon_read, so that a measure can read a view over mondrian().
CREATE OR REPLACE MACRO anon_source(table_name, qis := [], sensitive := NULL) AS TABLE
    FROM query(anon_read_sql(table_name, anon_names(qis, sensitive)));

-- The source's column names as written, and its columns (lower-cased) -> types, for anon_mondrian_columns (a
-- macro apart from anon_require_columns, for the same reason as anon_source).
CREATE OR REPLACE MACRO anon_source_columns(table_name) AS TABLE
SELECT list(column_name) AS names, map_from_entries(list({'key': lower(column_name), 'value': column_type})) AS have
FROM (DESCRIBE FROM query_table(table_name));

-- true, or mondrian()'s error naming fn and the argument at fault, for a table with the columns `names` (as
-- written) and `have` (lower-cased name -> DuckDB type name), read as argument `table_arg`: no column has a reserved name
-- (anon_no_reserved_columns), the table has every QI and the sensitive column, and every QI is of a type
-- Mondrian can generalize (anon_qi_kind). The one home of these checks: anon_cells calls it, and the level
-- driver and Spark call it with their tables' columns (duckdb_anon.mondrian.driver.check_columns).
CREATE OR REPLACE MACRO anon_mondrian_columns(fn, table_name, names, have, qis, sensitive, table_arg := 'table_name') AS
    anon_no_reserved_columns(fn, table_name, names, table_arg := table_arg)
    AND anon_columns_present(fn, 'qis', table_name, qis, have)
    AND anon_columns_present(fn, 'sensitive', table_name, anon_names([sensitive]), have)
    AND CASE WHEN len(list_filter(qis, lambda q: anon_qi_kind(have[lower(q)]) IS NULL)) > 0
             THEN error(fn || '(): argument ''qis'': column ''' || list_filter(qis, lambda q: anon_qi_kind(have[lower(q)]) IS NULL)[1]
                        || ''' has type ' || have[lower(list_filter(qis, lambda q: anon_qi_kind(have[lower(q)]) IS NULL)[1])]
                        || ', which cannot be generalized')
             ELSE true END;

CREATE OR REPLACE MACRO anon_numbered(table_name, qis := [], sensitive := NULL) AS TABLE
    SELECT row_number() OVER () AS __anon_row, * FROM anon_source(table_name, qis := qis, sensitive := sensitive);

CREATE OR REPLACE MACRO anon_cells(table_name, qis, categorical_order, fn := 'mondrian', hierarchy_sql := NULL,
                                   sensitive := NULL) AS TABLE
WITH
qi_types AS (  -- the table's columns checked (on their types alone, so an empty table is checked too)
    SELECT [anon_mondrian_columns(fn, table_name, names, have, qis, sensitive)] AS ok FROM anon_source_columns(table_name)),
grouped AS MATERIALIZED (  -- with a sensitive column, a cell also shares its sensitive value
    SELECT COLUMNS(qis), CASE WHEN sensitive IS NULL THEN NULL ELSE COLUMNS([coalesce(sensitive, qis[1])]) END AS __anon_s,
           count(*) AS __anon_n, min(__anon_row) AS __anon_cell
    FROM anon_numbered(table_name, qis := qis, sensitive := sensitive) WHERE (SELECT list_bool_and(ok) FROM qi_types) GROUP BY ALL),
hier AS (SELECT codes FROM anon_hierarchy_maps(fn, coalesce(hierarchy_sql, anon_no_hierarchies()))),
appearance AS (  -- categorical_order 'appearance': per category QI (lower-case name) a MAP from each value's
                 -- hash to its code, the rank of the value's first cell, and the code of NULL: one grouping
                 -- of (QI, value) pairs rather than two windows per QI over every cell. Keyed by hash(), which
                 -- follows the column's collation as GROUP BY does (a value's text would not); two values of
                 -- one QI sharing a hash make map_from_entries fail rather than share a code.
    SELECT map_from_entries(list({'key': qi, 'value': codes})) AS codes,
           map_from_entries(list({'key': qi, 'value': null_code})) AS null_codes
    FROM (SELECT qi, coalesce(map_from_entries(list({'key': v, 'value': code}) FILTER (WHERE v IS NOT NULL)), MAP {}) AS codes,
                 min(code) FILTER (WHERE v IS NULL) AS null_code
          FROM (SELECT qi, v, row_number() OVER (PARTITION BY qi ORDER BY first) - 1 AS code
                FROM (SELECT qi, v, min(__anon_cell) AS first
                      FROM (SELECT __anon_cell, unnest(list_transform(struct_keys(struct_pack(*COLUMNS(qis))), lambda q: lower(q))) AS qi,
                                   unnest([*COLUMNS(qis)]) AS v
                            FROM (SELECT __anon_cell, CASE WHEN anon_is_numeric(COLUMNS(qis)) OR COLUMNS(qis) IS NULL THEN NULL
                                                           ELSE hash(COLUMNS(qis)) END
                                  FROM grouped WHERE categorical_order = 'appearance'))
                      GROUP BY qi, v))
          GROUP BY qi)),
-- Each cell with, per QI, its value and its key {'v', 'k'}: numbers keep their value (NULL stays NULL);
-- categories become codes 0 .. categories-1 (the code of the value's first appearance, or its dense rank
-- in value order); under a hierarchy, the leaf's code (a value the hierarchy lacks is an error naming it).
-- One pass over the cells: no window runs in order 'appearance', and no join pairs values with keys.
SELECT __anon_cell, __anon_n, row(*COLUMNS(qis)) AS __anon_key, __anon_s,
       anon_cell_hash(row(*COLUMNS(qis)), __anon_s) AS __anon_hash,
       {'v': COLUMNS(qis),
        'k': CASE WHEN hier.codes[lower(alias(COLUMNS(qis)))] IS NOT NULL
                  THEN coalesce(hier.codes[lower(alias(COLUMNS(qis)))][COLUMNS(qis)::VARCHAR],
                                anon_missing_leaf(fn, alias(COLUMNS(qis)), COLUMNS(qis)::VARCHAR))::DOUBLE
                  WHEN anon_is_numeric(COLUMNS(qis)) THEN anon_numeric_key(COLUMNS(qis))
                  -- the window orders by a constant where its rank is not used (a number, the other order),
                  -- so only the categories' windows sort
                  WHEN categorical_order = 'value'
                  THEN dense_rank() OVER (ORDER BY CASE WHEN categorical_order = 'value' AND NOT anon_is_numeric(COLUMNS(qis))
                                                        THEN COLUMNS(qis) END NULLS LAST) - 1
                  ELSE coalesce(app.codes[lower(alias(COLUMNS(qis)))][hash(COLUMNS(qis))],
                                app.null_codes[lower(alias(COLUMNS(qis)))])::DOUBLE END::DOUBLE}
FROM grouped LEFT JOIN hier ON true LEFT JOIN appearance app ON true;

-- The hash by which a source row finds its cell (anon_mondrian_labelled): of the row's QI values as one
-- STRUCT and its sensitive value (a join on a number is cheaper than one on the STRUCT itself); two cells
-- sharing a hash are refused there, so no row can find another's cell.
CREATE OR REPLACE MACRO anon_cell_hash(key, s) AS hash(key, s);

-- The key a NULL takes in a numeric QI whose keys run from lo to hi: it sorts after every value, one
-- table range beyond the largest (at least 1); 0 when the column is all NULL.
CREATE OR REPLACE MACRO anon_null_key(lo, hi) AS coalesce(hi + greatest(hi - lo, 1), 0);

-- The cells of anon_cells() with their QI keys as one list, __anon_keys, in the order of the qis list (ties
-- between QIs go to the earliest listed), a NULL number keyed by anon_null_key. Both partitioners read
-- their keys from here.
CREATE OR REPLACE MACRO anon_keyed_cells(fn, table_name, qis, categorical_order, hierarchy_sql, sensitive) AS TABLE
WITH
cells AS MATERIALIZED (
    SELECT * FROM anon_cells(table_name, qis, categorical_order, fn := fn, hierarchy_sql := hierarchy_sql, sensitive := sensitive)),
qi_order AS (  -- COLUMNS(list) expands in the table's column order, as in the cells; perm maps it back to the
               -- list's order (read from the cells: another read of the source would be bound once more)
    SELECT list_transform(qis, lambda q: list_position(list_transform(struct_keys(struct_pack(*COLUMNS(qis))),
                                                                      lambda name: lower(name)), lower(q))) AS perm
    FROM cells LIMIT 1),
nulls AS (  -- per QI, in the list's order, the key a NULL takes
    SELECT list_transform(bounds, lambda b: anon_null_key(b.lo, b.hi)) AS fill
    FROM (SELECT list_select([*COLUMNS(qis)], o.perm) AS bounds
          FROM (SELECT {'lo': min(struct_extract(COLUMNS(qis), 'k')), 'hi': max(struct_extract(COLUMNS(qis), 'k'))} FROM cells),
               qi_order o))
-- the keys read from each cell's {'v', 'k'} in one pass, the cell's columns passed through as one STRUCT
-- (no join of the cells with their keys)
SELECT unnest(__anon_all), list_transform(keys, lambda x, i: coalesce(x, n.fill[i])) AS __anon_keys
FROM (SELECT __anon_all, list_select([*COLUMNS(qis)], o.perm) AS keys
      FROM (SELECT struct_pack(*COLUMNS(lambda c: c <> '__anon_key')) AS __anon_all, struct_extract(COLUMNS(qis), 'k') FROM cells),
           qi_order o),
     nulls n;

-- Partition the cells. Returns (cell, off, n, part, __anon_s, __anon_hash, <one {'v', 'k'} column per QI>):
-- rows off .. off+n-1 (in row order) of cell `cell` belong to partition `part` (-1: suppressed).
-- Both recursions are generated from the level plan: plain calls (no hierarchy, model or suppression) run
-- the partitioner anon_level_partitioner names (generated by duckdb_anon/mondrian/macros.py); the others,
-- and plain calls with more QIs than those shapes hold, the checked recursion of mondrian/checked_macros.py,
-- installed as text (anon_checked_partition_sql) and run with the call's arguments put in as escaped literals.
CREATE OR REPLACE MACRO anon_partition(fn, table_name, qis, k, mode, categorical_order, rule, hierarchy_sql, sensitive, model) AS TABLE
SELECT * FROM query(
    CASE WHEN hierarchy_sql = anon_no_hierarchies() AND sensitive IS NULL AND coalesce(struct_extract(model, 'suppress'), 0) = 0
              AND anon_level_partitioner(len(qis), mode, rule) IS NOT NULL
         THEN 'SELECT * FROM ' || anon_level_partitioner(len(qis), mode, rule) || '(' || anon_sql_literal(fn) || ', '
              || anon_sql_literal(table_name) || ', ' || anon_sql_list(qis) || ', ' || k::BIGINT::VARCHAR || ', '
              || anon_sql_literal(categorical_order) || ')'
         ELSE anon_fill_sql(
              coalesce(anon_checked_partition_sql(len(qis), mode, rule),
                       error(fn || '(): argument ''qis'' lists ' || len(qis)::VARCHAR || ' columns; at most '
                             || anon_checked_partition_width()::VARCHAR || ' QIs can be generalized')),
              MAP {'fn': anon_sql_literal(fn), 'table_name': anon_sql_literal(table_name), 'qis': anon_sql_list(qis),
                   'k': k::BIGINT::VARCHAR, 'categorical_order': anon_sql_literal(categorical_order),
                   'hierarchy_sql': anon_sql_literal(hierarchy_sql), 'sensitive': coalesce(anon_sql_literal(sensitive), 'NULL'),
                   'model': anon_model_struct_sql(model)}) END);

-- `text` with each parameter __p_<name> (a name of `args`' keys, followed by a character no name holds)
-- replaced by args[name], in one pass, so an argument's own text is never searched. The values are SQL the
-- caller quoted.
CREATE OR REPLACE MACRO anon_fill_sql(text, args) AS
    array_to_string(list_transform(string_split(text, '__p_'),
                                   lambda piece, i: CASE WHEN i = 1 THEN piece
                                                         ELSE args[regexp_extract(piece, '^[a-z_]+')]
                                                              || regexp_replace(piece, '^[a-z_]+', '') END), '');

-- A model STRUCT {'l', 'l_kind', 'c', 't', 'suppress'} written back as SQL text.
CREATE OR REPLACE MACRO anon_model_struct_sql(model) AS
    '{''l'': ' || coalesce(struct_extract(model, 'l')::VARCHAR, 'NULL') || '::DOUBLE, ''l_kind'': '
    || coalesce(anon_sql_literal(struct_extract(model, 'l_kind')), 'NULL') || ', ''c'': '
    || coalesce(struct_extract(model, 'c')::VARCHAR, 'NULL') || '::DOUBLE, ''t'': '
    || coalesce(struct_extract(model, 't')::VARCHAR, 'NULL') || '::DOUBLE, ''suppress'': '
    || coalesce(struct_extract(model, 'suppress')::VARCHAR, 'NULL') || '::DOUBLE}';

-- The error naming `fn` and the argument (l, else t) when the whole table does not satisfy `model` in the
-- `sensitive` column (then no cut ever would), given the table's `diversity` of the model's l_kind. The
-- level driver raises it too (duckdb_anon/mondrian/driver.py, on a private DuckDB).
CREATE OR REPLACE MACRO anon_model_unmet(fn, sensitive, model, diversity) AS
    anon_check(true, fn, CASE WHEN struct_extract(model, 'l') IS NOT NULL THEN 'l' ELSE 't' END,
               'cannot be met: the whole table is only '
               || CASE WHEN struct_extract(model, 'l_kind') = 'entropy' THEN round(diversity, 3)::VARCHAR
                       ELSE diversity::BIGINT::VARCHAR END
               || ' (' || CASE WHEN struct_extract(model, 'l_kind') IN ('distinct', 'entropy') THEN struct_extract(model, 'l_kind')
                               ELSE 'recursive' END
               || ')-diverse in ''' || coalesce(sensitive, '') || '''');

-- anon_model_unmet's error when the whole table does not satisfy `model`: `holds` 1 or 0 (NULL: no rows)
-- and `diversity` as CheckedPlan's whole_table gives them (anon_model_holds and anon_diversity,
-- sql/07_models.sql, over the whole table). The checked partitioners (duckdb_anon/mondrian/checked_macros.py)
-- check it before their first cut.
CREATE OR REPLACE MACRO anon_model_attainable(fn, sensitive, model, holds, diversity) AS
    CASE WHEN sensitive IS NOT NULL AND holds = 0 THEN anon_model_unmet(fn, sensitive, model, diversity) ELSE true END;

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
                                                lambda __anon_e: __anon_e.v),  -- k first: sets follow the QI's order
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
-- in no particular order (sorting them back into source order costs time few callers need); add ORDER BY
-- where it matters.
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
