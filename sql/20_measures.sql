-- Information-loss measures over any release: a table (ours or another tool's) plus its QI list.
-- Equivalence classes are the groups of rows with identical (generalized) QI values.

-- One row per equivalence class: its QI values and size.
CREATE OR REPLACE MACRO equivalence_classes(table_name, qis) AS TABLE
WITH
args AS (  -- bound first (the first relation the query reads), so a wrong argument fails before anything else
    SELECT ok FROM anon_arguments(anon_name_ok('equivalence_classes', 'table_name', table_name)
                                  AND anon_columns_ok('equivalence_classes', 'qis', qis))),
checks AS (SELECT ok FROM anon_require_columns('equivalence_classes', 'qis', table_name, qis, table_arg := 'table_name'))
SELECT * EXCLUDE (ok) FROM (
    SELECT args.ok, COLUMNS(qis), count(*) AS class_size FROM args, anon_read(table_name, qis)
    GROUP BY ALL
    UNION ALL BY NAME  -- the checks as a branch of their own: they run on an empty table too (never a row)
    SELECT NULL AS class_size FROM checks WHERE NOT ok)
ORDER BY ALL;

-- One row: rows, classes, achieved k (smallest class), discernibility metric (sum of squared class sizes),
-- average class size, and the normalized average class size C_avg = rows / classes / k (k: the requested
-- k if given, else the achieved one).
CREATE OR REPLACE MACRO release_measures(table_name, qis, k := NULL) AS TABLE
WITH
args AS (  -- bound first: see equivalence_classes
    SELECT ok FROM anon_arguments(anon_name_ok('release_measures', 'table_name', table_name)
                                  AND anon_columns_ok('release_measures', 'qis', qis)
                                  AND anon_number_ok('release_measures', 'k', k, lo := 1, integer := true, nullable := true)
                    AND anon_at_most('release_measures', 'k', k, 'k'))),
checks AS (SELECT ok FROM anon_require_columns('release_measures', 'qis', table_name, qis, table_arg := 'table_name'))
SELECT sum(class_size)::BIGINT AS rows,
       count(*) AS classes,
       min(class_size) AS achieved_k,
       sum(class_size * class_size)::HUGEINT AS discernibility,
       avg(class_size) AS avg_class_size,
       sum(class_size) / count(*) / coalesce(try_cast(k AS BIGINT), min(class_size)) AS c_avg
FROM args, (SELECT count(*) AS class_size
            FROM (SELECT row(*COLUMNS(qis)) AS __anon_class FROM anon_read(table_name, qis))
            GROUP BY __anon_class), checks
WHERE checks.ok;

-- Normalized certainty penalty of a release, in percent, with the original table to measure widths:
-- rows are matched on `id_column` (present in both), classes are the release's groups of identical QI
-- values, and each class's width on a QI is taken from the ORIGINAL values of its rows:
-- (max - min) / the whole table's range for numbers and dates; (highest - lowest category code) /
-- (categories - 1) for categories, coded by first appearance (or by value, categorical_order := 'value');
-- with a hierarchy (hierarchies := {'qi': 'table'}), the leaves under the node covering the class's values
-- / the hierarchy's leaves, a single leaf counting 0 (Xu et al. 2006).
-- NCP% = 100 * sum over classes of size * sum of widths / (QIs * rows). GCP is the same as a fraction.
-- NULLs in numeric QIs are left out of the widths (in categorical QIs NULL is one more category).
-- Also returns per_qi: each QI's own NCP%.
CREATE OR REPLACE MACRO ncp(release_table, original_table, qis, id_column, categorical_order := 'appearance',
                            hierarchies := NULL) AS TABLE
WITH
args AS (  -- bound first: see equivalence_classes
    SELECT ok FROM anon_arguments(anon_name_ok('ncp', 'release_table', release_table)
                                  AND anon_name_ok('ncp', 'original_table', original_table)
                                  AND anon_columns_ok('ncp', 'qis', qis)
                                  AND anon_name_ok('ncp', 'id_column', id_column, 'a column name')
                                  AND anon_choice_ok('ncp', 'categorical_order', categorical_order, ['appearance', 'value']))),
checks AS (
    SELECT r.ok AND o.ok AS ok
    FROM anon_require_columns('ncp', 'release_table', release_table, anon_checked_names('ncp', 'qis', qis, 'id_column', id_column)) r,
         anon_require_columns('ncp', 'original_table', original_table, anon_checked_names('ncp', 'qis', qis, 'id_column', id_column)) o),
cells AS (SELECT * FROM anon_cells(original_table, qis, categorical_order, fn := 'ncp',
                                   hierarchy_sql := anon_hierarchy_sql('ncp', hierarchies, qis))),
hier AS (  -- anon_cells above has validated the hierarchies
    SELECT * FROM anon_hierarchy_maps('ncp', anon_hierarchy_sql('ncp', hierarchies, qis), checked := false)),
original AS (
    SELECT COLUMNS([id_column]) AS __anon_id, row(*COLUMNS(qis)) AS __anon_key FROM anon_read(original_table, anon_names(qis, id_column))),
released AS (
    SELECT COLUMNS([id_column]) AS __anon_id, row(*COLUMNS(qis)) AS __anon_class FROM anon_read(release_table, anon_names(qis, id_column))),
keys AS (  -- each released row: its class and the order keys of its original values
    SELECT r.__anon_class, c.* EXCLUDE (__anon_cell, __anon_n, __anon_key, __anon_s)
    FROM released r JOIN original o USING (__anon_id) JOIN cells c ON c.__anon_key IS NOT DISTINCT FROM o.__anon_key),
raw_spans AS (
    SELECT max(struct_extract(COLUMNS(qis), 'k')) - min(struct_extract(COLUMNS(qis), 'k')) FROM keys),
spans AS (  -- a hierarchical QI's widths come normalised already
    SELECT CASE WHEN hier.nodes[lower(alias(COLUMNS(qis)))] IS NOT NULL THEN 1.0 ELSE COLUMNS(qis) END
    FROM raw_spans LEFT JOIN hier ON true),
ranges AS (  -- per class: size and the range of each QI's keys
    SELECT count(*) AS __anon_size,
           {'lo': min(struct_extract(COLUMNS(qis), 'k')), 'hi': max(struct_extract(COLUMNS(qis), 'k'))}
    FROM keys GROUP BY __anon_class),
widths AS (  -- per class: size * width on each QI
    SELECT __anon_size * CASE WHEN hier.nodes[lower(alias(COLUMNS(qis)))] IS NULL
                              THEN struct_extract(COLUMNS(qis), 'hi') - struct_extract(COLUMNS(qis), 'lo')
                              ELSE anon_hierarchy_width(hier.nodes[lower(alias(COLUMNS(qis)))],
                                                        hier.leaf_counts[lower(alias(COLUMNS(qis)))],
                                                        struct_extract(COLUMNS(qis), 'lo'), struct_extract(COLUMNS(qis), 'hi')) END
    FROM ranges LEFT JOIN hier ON true),
per_qi AS (
    SELECT 100.0 * sum(COLUMNS(qis)) / (SELECT count(*) FROM keys) FROM widths),
normalised AS (  -- divide each QI's total by its span (0 when the QI is constant)
    SELECT [*COLUMNS(qis)] AS totals FROM per_qi),
span_list AS (SELECT [*COLUMNS(qis)] AS spans FROM spans)
SELECT list_sum(list_transform(range(len(qis)), lambda i: CASE WHEN spans[i + 1] > 0 THEN totals[i + 1] / spans[i + 1] ELSE 0 END))
           / len(qis) AS ncp_percent,
       list_sum(list_transform(range(len(qis)), lambda i: CASE WHEN spans[i + 1] > 0 THEN totals[i + 1] / spans[i + 1] ELSE 0 END))
           / len(qis) / 100 AS gcp,
       -- the lists follow the table's column order (as COLUMNS(list) does), so label them with those names
       map((SELECT struct_keys(struct_pack(*COLUMNS(qis))) FROM anon_read(original_table, qis) LIMIT 1),
           list_transform(range(len(qis)), lambda i: CASE WHEN spans[i + 1] > 0 THEN totals[i + 1] / spans[i + 1] ELSE 0 END))
           AS per_qi,
       (SELECT count(*) FROM keys) AS matched_rows
FROM args, normalised, span_list, checks
WHERE checks.ok;

-- Distortion of a release (Xue, Karras et al.): the mean over entries of |t^A - t| / |t|, per column and
-- overall, matching released and original rows on `id_column`. A released value may be a number or, for a
-- typed Mondrian release (output := 'typed'), a STRUCT whose class `mean` stands for the value.
-- Guard near zero: an entry whose original value lies within `guard` of zero is divided by `guard`
-- instead (default: 1 % of the column's mean absolute value, or 1 if the column is all zeros), so zeros do
-- not blow the mean up.
-- NULLs on either side are left out.
CREATE OR REPLACE MACRO distortion(release_table, original_table, columns, id_column, guard := NULL) AS TABLE
WITH
args AS (  -- bound first: see equivalence_classes
    SELECT ok FROM anon_arguments(anon_name_ok('distortion', 'release_table', release_table)
                                  AND anon_name_ok('distortion', 'original_table', original_table)
                                  AND anon_columns_ok('distortion', 'columns', columns)
                                  AND anon_name_ok('distortion', 'id_column', id_column, 'a column name')
                                  AND anon_number_ok('distortion', 'guard', guard, lo := 0, above := true, nullable := true))),
checks AS (  -- original values must be numbers; released ones numbers or typed Mondrian bounds (a STRUCT with a mean)
    SELECT r.ok AND o.ok AS ok
    FROM anon_require_columns('distortion', 'release_table', release_table,
                              anon_checked_names('distortion', 'columns', columns, 'id_column', id_column), typed := anon_names(columns),
                              type_pattern := anon_number_types() || '|^STRUCT\(.*\bmean\b.*\)$',
                              type_text := 'a number or a typed Mondrian STRUCT(lo, hi, mean)') r,
         anon_require_columns('distortion', 'original_table', original_table,
                              anon_checked_names('distortion', 'columns', columns, 'id_column', id_column), typed := anon_names(columns),
                              type_pattern := anon_number_types(), type_text := 'a number') o),
released AS (  -- long form: one JSON value per (row, column), so numbers and structs read alike
    SELECT __anon_id, unnest(columns) AS column_name, unnest([*COLUMNS(columns)]) AS j
    FROM (SELECT COLUMNS([id_column]) AS __anon_id, to_json(COLUMNS(columns))
          FROM anon_read(release_table, anon_names(columns, id_column)))),
original AS (
    SELECT __anon_id, unnest(columns) AS column_name, unnest([*COLUMNS(columns)]) AS t
    FROM (SELECT COLUMNS([id_column]) AS __anon_id, try_cast(COLUMNS(columns) AS DOUBLE)
          FROM anon_read(original_table, anon_names(columns, id_column)))),
pairs AS (
    SELECT o.column_name, o.t,
           CASE json_type(r.j) WHEN 'OBJECT' THEN (r.j->>'mean')::DOUBLE ELSE try_cast(r.j::VARCHAR AS DOUBLE) END AS ta
    FROM original o JOIN released r USING (__anon_id, column_name)),
guarded AS (
    SELECT *, coalesce(try_cast(guard AS DOUBLE), nullif(0.01 * avg(abs(t)) OVER (PARTITION BY column_name), 0), 1.0) AS g
    FROM pairs WHERE t IS NOT NULL AND ta IS NOT NULL),
per_column AS (
    SELECT column_name, avg(abs(ta - t) / greatest(abs(t), g)) AS dst, count(*) AS entries
    FROM guarded GROUP BY column_name)
SELECT column_name, dst, entries FROM args, per_column, checks WHERE checks.ok
UNION ALL
SELECT '*', sum(dst * entries) / sum(entries), sum(entries) FROM per_column, checks WHERE checks.ok
ORDER BY column_name = '*', column_name;
