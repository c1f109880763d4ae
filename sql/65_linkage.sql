-- Linkage audit against GENERALIZED releases: the text output of mondrian(), or another tool's release
-- written with the same label conventions. Pure SQL, set-based.
--
-- The adversary knows, for each person of aux_table, the exact QI values and the id. A person is
-- *consistent* with a released row when every QI's label covers the person's value: labels are read as
-- 55_release_labels.sql says (mondrian's text and typed shapes, raw values), and under a hierarchy a
-- node name covers every leaf whose path holds it (tables of leaf VARCHAR, path VARCHAR[]). How a QI's
-- labels are read follows the type of its aux column (numbers, dates, categories), as mondrian chose its
-- rendering from the same original type.
--
-- Layout: the release is grouped into classes (rows with one label tuple); distinct labels are parsed
-- once per QI; the covering (value, label) pairs are found once, over distinct values and labels; a
-- person's candidate classes come from their most selective QI, and a candidate is consistent when
-- covering pairs join it on every QI. Nothing is compared row by row.

-- The audit itself, once the arguments are checked (linkage_classes below): qis and id_column arrive in
-- lower case, hierarchy_sql as the text made by anon_hierarchy_sql (05_hierarchies.sql).
-- Columns are picked with COLUMNS(lambda ...) next to a constant sentinel column (__anon_none) rather
-- than by name, so a missing column does not stop the binder: anon_require_columns (03_arguments.sql)
-- names it instead.
CREATE OR REPLACE MACRO anon_linkage_classes(release_table, aux_table, qis, id_column, hierarchy_sql) AS TABLE
WITH
checks AS (  -- every QI and the id column in both tables, else an error naming the argument
    SELECT r.ok AND a.ok AS ok
    FROM anon_require_columns('linkage_classes', 'release_table', release_table, anon_names(qis, id_column)) r,
         anon_require_columns('linkage_classes', 'aux_table', aux_table, anon_names(qis, id_column)) a),
released AS (  -- every released row: its id and its QI labels as text
    SELECT coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = id_column)) AS __anon_id,
           to_json(COLUMNS(lambda c: c = '__anon_none' OR list_contains(qis, lower(c))))::VARCHAR  -- labels of any shape
    FROM (SELECT NULL AS __anon_none, * FROM anon_read(release_table, [], fn := 'linkage_classes', arg := 'release_table'))),
release_rows AS MATERIALIZED (  -- a class is one distinct label tuple
    SELECT __anon_id, dense_rank() OVER (ORDER BY row(*COLUMNS(lambda c: c <> '__anon_id'))) AS class_id,
           [*COLUMNS(lambda c: c <> '__anon_id')] AS labels
    FROM released),
release_names AS (  -- the label list's column names (COLUMNS() keeps the table's column order)
    SELECT list_transform(struct_keys(struct_pack(*COLUMNS(lambda c: c <> '__anon_id'))), lambda n: lower(n)) AS names
    FROM released LIMIT 1),
classes AS (SELECT class_id, count(*) AS class_size, any_value(labels) AS labels FROM release_rows GROUP BY class_id),
class_labels AS MATERIALIZED (  -- long form: (class, QI, label); label_id numbers the distinct (QI, label)
    SELECT class_id, qi, label, dense_rank() OVER (ORDER BY qi, label) AS label_id
    FROM (SELECT class_id, unnest(names) AS qi, unnest(labels) AS label FROM classes, release_names)
    WHERE qi <> '__anon_none'),
aux_long AS MATERIALIZED (  -- (person, id, QI, value); value_id numbers the distinct (QI, value)
    SELECT *, dense_rank() OVER (ORDER BY qi, t) AS value_id FROM anon_aux_long(aux_table, qis, id_column)),
aux AS (SELECT DISTINCT __anon_person, __anon_id FROM aux_long),
hierarchy AS (SELECT * FROM query(hierarchy_sql)),
labels AS (  -- each distinct label of a QI, parsed once (55_release_labels.sql); how depends on the QI's
            -- type in aux_table
    SELECT label_id, qi, kind, anon_label_read(label::JSON, kind) AS b
    FROM (SELECT DISTINCT label_id, qi, label FROM class_labels)
    JOIN (SELECT DISTINCT qi, kind FROM aux_long) USING (qi)),
covers AS MATERIALIZED (  -- (value_id, label_id) where the label covers the value: distinct values only
    SELECT DISTINCT v.value_id, l.label_id
    FROM (SELECT DISTINCT value_id, qi, t, x, kind FROM aux_long) v
    JOIN labels l USING (qi)
    LEFT JOIN hierarchy h ON h.qi = v.qi AND h.leaf = v.t
    WHERE anon_label_covers(l.b, v.t, v.x)
          OR (v.t IS NOT NULL AND coalesce(list_contains(h.path, l.b.text), false))),  -- a hierarchy node above the leaf
-- Joining every QI's covering classes and counting would enumerate, per person, every class that agrees on
-- any one QI (with sex as a QI, half the classes). Instead each person starts from the QI that leaves the
-- fewest classes, and only those candidates are checked on the other QIs.
reach AS (  -- per value: how many classes cover it
    SELECT c.value_id, count(*) AS classes FROM covers c JOIN class_labels cl USING (label_id) GROUP BY c.value_id),
start_value AS (  -- per person: the value (on the most selective QI) covered by the fewest classes
    SELECT a.__anon_person, arg_min(a.value_id, coalesce(r.classes, 0)) AS value_id
    FROM aux_long a LEFT JOIN reach r USING (value_id)
    GROUP BY a.__anon_person),
candidates AS MATERIALIZED (  -- the classes covering that value (materialized: keeps this join order)
    SELECT s.__anon_person, cl.class_id
    FROM start_value s JOIN covers c USING (value_id) JOIN class_labels cl USING (label_id)),
consistent AS (  -- (person, class) pairs where every QI's label covers the person's value
    SELECT k.__anon_person, k.class_id
    FROM candidates k
    JOIN aux_long a ON a.__anon_person = k.__anon_person
    JOIN class_labels cl ON cl.class_id = k.class_id AND cl.qi = a.qi
    JOIN covers c ON c.value_id = a.value_id AND c.label_id = cl.label_id
    GROUP BY k.__anon_person, k.class_id
    HAVING count(*) = len(qis)),
own_found AS (  -- persons whose own released row (by id) lies in a class they are consistent with
    SELECT DISTINCT p.__anon_person
    FROM consistent p
    JOIN aux a USING (__anon_person)
    JOIN release_rows r ON r.__anon_id = a.__anon_id AND r.class_id = p.class_id),
per_person AS (
    SELECT a.__anon_person, count(p.class_id) AS classes, coalesce(sum(c.class_size), 0) AS candidates,
           -- without ids, a person counts as found when any row is consistent (the release is assumed correct)
           CASE WHEN id_column IS NULL THEN count(p.class_id) > 0 ELSE bool_or(o.__anon_person IS NOT NULL) END AS found
    FROM aux a
    LEFT JOIN consistent p USING (__anon_person)
    LEFT JOIN classes c USING (class_id)
    LEFT JOIN own_found o ON o.__anon_person = a.__anon_person
    GROUP BY a.__anon_person)
SELECT s.* FROM (
    SELECT count(*) AS people,
           avg(CASE WHEN classes = 1 THEN 1.0 ELSE 0.0 END) AS consistent_with_one_class,
           avg(CASE WHEN found THEN 1.0 ELSE 0.0 END) AS own_class_found,
           avg(CASE WHEN found THEN 1.0 / candidates ELSE 0.0 END) AS reidentified,
           avg(candidates) AS mean_candidates
    FROM per_person) s, checks
WHERE checks.ok;

-- The user-facing macro: scalar arguments are checked when the query is bound (as mondrian() does), then
-- the audit runs through query(), built from fixed text and escaped literals only.
CREATE OR REPLACE MACRO anon_linkage_call(release_table, aux_table, qis, id_column, hierarchies) AS
    'SELECT * FROM anon_linkage_classes('
    || CASE WHEN release_table IS NULL OR typeof(release_table) <> 'VARCHAR'
                 THEN error('linkage_classes(): argument ''release_table'' must be a table name')
            ELSE anon_sql_literal(anon_after(anon_name_ok('linkage_classes', 'release_table', release_table), release_table)) END || ', '
    || CASE WHEN aux_table IS NULL OR typeof(aux_table) <> 'VARCHAR'
                 THEN error('linkage_classes(): argument ''aux_table'' must be a table name')
            ELSE anon_sql_literal(anon_after(anon_name_ok('linkage_classes', 'aux_table', aux_table), aux_table)) END || ', '
    || CASE WHEN NOT typeof(qis) LIKE '%[]' OR try_cast(qis AS VARCHAR[]) IS NULL
                 THEN error('linkage_classes(): argument ''qis'' must be a list of column names, e.g. [''age'', ''zip'']')
            WHEN len(try_cast(qis AS VARCHAR[])) = 0 THEN error('linkage_classes(): argument ''qis'' must name at least one column')
            WHEN list_bool_or(list_transform(try_cast(qis AS VARCHAR[]), lambda q: q IS NULL OR anon_reserved_name(q)))
                 THEN error('linkage_classes(): argument ''qis'' holds NULL or a reserved __anon_ name')
            WHEN len(list_distinct(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q)))) < len(try_cast(qis AS VARCHAR[]))
                 THEN error('linkage_classes(): argument ''qis'' lists a column twice')
            ELSE anon_sql_list(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q))) END || ', '
    || CASE WHEN id_column IS NULL THEN 'NULL'
            WHEN typeof(id_column) <> 'VARCHAR'
                 THEN error('linkage_classes(): argument ''id_column'' must be a column name or NULL, got ' || anon_shown(id_column))
            WHEN anon_reserved_name(id_column)
                 THEN error('linkage_classes(): argument ''id_column'' is a reserved __anon_ name: ' || anon_shown(id_column))
            WHEN list_contains(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q)), lower(id_column::VARCHAR))
                 THEN error('linkage_classes(): argument ''id_column'' must not be one of the QIs')
            ELSE anon_sql_literal(lower(id_column::VARCHAR)) END || ', '
    || anon_sql_literal(anon_hierarchy_sql('linkage_classes', hierarchies, try_cast(qis AS VARCHAR[])))
    || ')';

-- linkage_classes(): one row — people (rows of aux_table), consistent_with_one_class (share consistent with
-- exactly one class), own_class_found (share whose own row, by id, is among their consistent rows: 1.0 for
-- a correct release), reidentified (mean of 1 / consistent rows where the own row is among them, else 0;
-- at most 1/k on a k-anonymous release) and mean_candidates (consistent rows per person).
-- id_column := NULL audits a release without ids (as a release should be): every person of aux_table is
-- taken to be in it, so own_class_found is the share consistent with some row and reidentified the mean
-- of 1 / consistent rows over them (the prosecutor's expected success).
-- An empty aux_table gives people = 0 and NULL shares.
CREATE OR REPLACE MACRO linkage_classes(release_table, aux_table, qis, id_column, hierarchies := NULL) AS TABLE
SELECT * FROM query(anon_linkage_call(release_table, aux_table, qis, id_column, hierarchies));
