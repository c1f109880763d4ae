-- Generalization hierarchies as tables. Pure SQL.
--
-- A hierarchy table has one row per leaf value: `leaf VARCHAR, path VARCHAR[]`, where path runs from the
-- leaf to the root, e.g. ('Self-emp-inc', ['Self-emp-inc', 'Self-employ', '*']). Depths may differ between
-- leaves. A data value is matched to its leaf by its text (value::VARCHAR), so numbers and dates work too.
--
-- Inside the macros each leaf gets a code: its rank when leaves are sorted by their path read from the
-- root. Every node's leaves then form one run of consecutive codes [lo, hi], so a set of leaves is covered
-- by the deepest node whose run contains the set's smallest and largest code (their lowest common
-- ancestor), and a node has hi - lo + 1 leaves.

-- Load the text format: one leaf a line, `leaf;parent;...;root`. A missing file, or one without a line,
-- is an error naming file_path (read_text alone gives no rows for a path that matches nothing).
CREATE OR REPLACE MACRO hierarchy_from_text(file_path) AS TABLE
WITH
files AS (SELECT count(*) AS n, list(content) AS contents
          FROM read_text(anon_after(anon_name_ok('hierarchy_from_text', 'file_path', file_path, 'a file path'), file_path::VARCHAR))),
leaves AS (
    SELECT path[1] AS leaf, path
    FROM (SELECT string_split(rtrim(line, chr(13)), ';') AS path
          FROM (SELECT unnest(string_split(content, chr(10))) AS line FROM (SELECT unnest(contents) AS content FROM files)))
    WHERE path[1] <> ''),
checks AS (
    SELECT anon_check((SELECT n FROM files) = 0, 'hierarchy_from_text', 'file_path', 'names no file: ' || anon_shown(file_path))
           AND anon_check(count(*) = 0, 'hierarchy_from_text', 'file_path',
                          'names a file with no hierarchy line (leaf;parent;...;root): ' || anon_shown(file_path)) AS ok
    FROM leaves)
SELECT leaf, path FROM leaves
UNION ALL  -- the checks as a branch of their own, so that they run when there are no leaves (never a row)
SELECT NULL, NULL FROM checks WHERE NOT ok;

-- The column check of hierarchy_intervals and hierarchy_dates (at run time, from the table's description).
CREATE OR REPLACE MACRO anon_hierarchy_column_ok(fn, table_name, column_name, type_pattern, type_text) AS TABLE
SELECT ok FROM anon_require_columns(fn, 'column_name', table_name, [column_name], typed := [column_name],
                                    type_pattern := type_pattern, type_text := type_text, table_arg := 'table_name');

-- Nested intervals over a numeric column's distinct values: `widths` are increasing, each a multiple of
-- the one before (so intervals nest), e.g. [5, 10, 20]. Intervals start at multiples of their width.
-- Integer columns read `20-24`; other numbers read `[20,25)`.
CREATE OR REPLACE MACRO hierarchy_intervals(table_name, column_name, widths) AS TABLE
WITH
vals AS (
    SELECT DISTINCT COLUMNS([column_name]) AS v
    FROM anon_read(anon_after(anon_name_ok('hierarchy_intervals', 'table_name', table_name)
                              AND anon_name_ok('hierarchy_intervals', 'column_name', column_name, 'a column name')
                              AND anon_check(NOT regexp_matches(typeof(widths), '^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)\[\]$')
                                             OR len(try_cast(widths AS DOUBLE[])) = 0
                                             OR list_bool_or(list_transform(try_cast(widths AS DOUBLE[]), lambda w: w IS NULL OR NOT isfinite(w)))
                                             OR list_bool_or(list_transform(range(1, len(widths)), lambda i:
                                                    try_cast(widths AS DOUBLE[])[i + 1] <= try_cast(widths AS DOUBLE[])[i]
                                                    OR try_cast(widths AS DOUBLE[])[i + 1] / try_cast(widths AS DOUBLE[])[i]
                                                       <> floor(try_cast(widths AS DOUBLE[])[i + 1] / try_cast(widths AS DOUBLE[])[i])))
                                             OR try_cast(widths AS DOUBLE[])[1] <= 0,
                                             'hierarchy_intervals', 'widths',
                                             'must be a list of positive, increasing numbers, each a multiple of the one before, e.g. [5, 10, 20], got '
                                             || anon_shown(widths)),
                              table_name), [column_name])),
checks AS (SELECT ok FROM anon_hierarchy_column_ok('hierarchy_intervals', table_name, column_name, anon_number_types(), 'a number')),
intervals AS (
    SELECT v::VARCHAR AS leaf,
           [v::VARCHAR] || list_transform(try_cast(widths AS DOUBLE[]), lambda w:
               CASE WHEN regexp_matches(typeof(v), 'INT')
                    THEN (floor(x / w) * w)::BIGINT::VARCHAR || '-' || (floor(x / w) * w + w - 1)::BIGINT::VARCHAR
                    ELSE '[' || (floor(x / w) * w)::VARCHAR || ',' || (floor(x / w) * w + w)::VARCHAR || ')' END)
           || ['*'] AS path, x
    FROM (SELECT v, try_cast(v AS DOUBLE) AS x FROM vals) WHERE v IS NOT NULL)
SELECT leaf, path FROM (SELECT leaf, path, x FROM intervals, checks WHERE ok ORDER BY x)
UNION ALL
SELECT NULL, NULL FROM checks WHERE NOT ok;

-- Dates: day -> month -> year -> '*' (timestamps add their own text as the leaf below the day).
CREATE OR REPLACE MACRO hierarchy_dates(table_name, column_name) AS TABLE
WITH
vals AS (
    SELECT DISTINCT COLUMNS([column_name]) AS v
    FROM anon_read(anon_after(anon_name_ok('hierarchy_dates', 'table_name', table_name)
                              AND anon_name_ok('hierarchy_dates', 'column_name', column_name, 'a column name'),
                              table_name), [column_name])),
checks AS (SELECT ok FROM anon_hierarchy_column_ok('hierarchy_dates', table_name, column_name, anon_temporal_types(), 'a DATE or TIMESTAMP')),
days AS (
    SELECT v::VARCHAR AS leaf, try_cast(v AS DATE) AS d, try_cast(v AS TIMESTAMP) AS ts FROM vals WHERE v IS NOT NULL)
SELECT leaf, path FROM (
    SELECT leaf, list_distinct([leaf, strftime(d, '%Y-%m-%d')]) || [strftime(d, '%Y-%m'), year(d)::VARCHAR, '*'] AS path, ts
    FROM days, checks WHERE ok ORDER BY ts)
UNION ALL
SELECT NULL, NULL FROM checks WHERE NOT ok;

-- One hierarchy table as the rows (leaf, path) that anon_hierarchy_sql reads: it must have both columns,
-- path a list, and at least one row; otherwise an error naming `hierarchies`, the QI and the table.
CREATE OR REPLACE MACRO anon_hierarchy_table(fn, qi, table_name) AS TABLE
WITH
rows AS (SELECT leaf, try_cast(path AS VARCHAR[]) AS path FROM anon_read(table_name, ['leaf', 'path'])),
checks AS (
    SELECT (SELECT ok FROM anon_require_columns(fn, 'hierarchies', table_name, ['leaf', 'path'], typed := ['path'],
                                                type_pattern := '\[\]$', type_text := 'a list (VARCHAR[])'))
           AND anon_check(count(*) = 0, fn, 'hierarchies',
                          'maps ''' || qi || ''' to the table ' || anon_shown(table_name) || ', which has no rows') AS ok
    FROM rows)
SELECT leaf, path FROM rows, checks WHERE checks.ok  -- the checks first (they are the join's build side)
UNION ALL
SELECT NULL, NULL FROM checks WHERE NOT ok;

-- The hierarchy relation's SQL text when there are none: no rows, the same columns.
CREATE OR REPLACE MACRO anon_no_hierarchies() AS
    'SELECT NULL::VARCHAR AS qi, NULL::VARCHAR AS leaf, NULL::VARCHAR[] AS path WHERE false';

-- SQL text that reads every hierarchy named in `hierarchies` (a STRUCT or MAP, QI name -> table name) as
-- rows (qi, leaf, path), built from escaped literals only. Checked here, at bind time: each key is one of
-- the QIs. Without hierarchies, an empty relation of the same shape.
CREATE OR REPLACE MACRO anon_hierarchy_sql(fn, hierarchies, qis) AS
    CASE WHEN hierarchies IS NULL
         THEN anon_no_hierarchies()
         WHEN NOT (typeof(hierarchies) LIKE 'STRUCT(%' OR typeof(hierarchies) LIKE 'MAP(%')
         THEN error(fn || '(): argument ''hierarchies'' must be a STRUCT or MAP of QI name -> hierarchy table name, '
                    || 'e.g. {''workclass'': ''h_workclass''}')
         WHEN len(json_keys(to_json(hierarchies))) = 0
         THEN anon_no_hierarchies()
         WHEN list_bool_or(list_transform(json_keys(to_json(hierarchies)), lambda h:
                  NOT list_contains(list_transform(qis, lambda q: lower(q)), lower(h))))
         THEN error(fn || '(): argument ''hierarchies'' names a column that is not among the QIs: '
                    || array_to_string(list_filter(json_keys(to_json(hierarchies)), lambda h:
                           NOT list_contains(list_transform(qis, lambda q: lower(q)), lower(h))), ', '))
         WHEN list_bool_or(list_transform(json_keys(to_json(hierarchies)), lambda h: (to_json(hierarchies)->>h) IS NULL))
         THEN error(fn || '(): argument ''hierarchies'' maps a QI to NULL instead of a table name')
         WHEN list_bool_or(list_transform(json_keys(to_json(hierarchies)), lambda h: NOT anon_name_ok(fn, 'hierarchies', to_json(hierarchies)->>h)))
         THEN NULL  -- not reached: anon_name_ok raised an error naming the hierarchy table
         ELSE array_to_string(list_transform(json_keys(to_json(hierarchies)), lambda h:
                  'SELECT ' || anon_sql_literal(lower(h)) || ' AS qi, leaf::VARCHAR AS leaf, path::VARCHAR[] AS path FROM anon_hierarchy_table('
                  || anon_sql_literal(fn) || ', ' || anon_sql_literal(h) || ', ' || anon_sql_literal(to_json(hierarchies)->>h) || ')'),
                  ' UNION ALL ')
    END;

-- The error when the hierarchy of QI `qi` lacks the value `v` (as text; NULL: the column's NULL) of its
-- column: mondrian()'s cells raise it (10_mondrian.sql), the level driver too (on a private DuckDB).
CREATE OR REPLACE MACRO anon_missing_leaf(fn, qi, v) AS
    error(fn || '(): argument ''hierarchies'': the hierarchy of ''' || qi || ''' has no leaf '
          || coalesce('''' || v || '''', 'for NULL') || ', a value of the column');

-- The hierarchies' leaves, validated, with codes: (qi, leaf, path, code, anc) where anc lists the code runs'
-- starts (lo) of the leaf's ancestors from the root down to the leaf itself. `fn` names the calling function
-- in errors. Rejected: a path that repeats a name (a cycle), several roots, a node with two parents, a leaf
-- listed twice with different paths, a leaf that is also an inner node.
CREATE OR REPLACE MACRO anon_hierarchy_leaves(fn, hierarchy_sql, checked := true) AS TABLE
WITH
rows AS (SELECT DISTINCT qi, leaf, path FROM query(hierarchy_sql)),
steps AS (  -- every (node, parent) pair along every path; i = 1 is the leaf
    SELECT qi, leaf, path, unnest(range(1, len(path) + 1)) AS i, unnest(path) AS node,
           unnest(list_slice(path, 2, len(path)) || [NULL]) AS parent
    FROM rows),
problems AS (
    SELECT qi, 'the path of leaf ''' || leaf || ''' repeats a name (a cycle)' AS problem FROM rows
    WHERE len(list_distinct(path)) < len(path) OR path[1] IS DISTINCT FROM leaf
    UNION ALL
    SELECT qi, 'has several roots: ' || array_to_string(list(DISTINCT path[-1] ORDER BY path[-1]), ', ')
    FROM rows GROUP BY qi HAVING count(DISTINCT path[-1]) > 1
    UNION ALL
    SELECT qi, 'gives node ''' || node || ''' several parents: ' || array_to_string(list(DISTINCT coalesce(parent, '(none: a root)') ORDER BY coalesce(parent, '(none: a root)')), ', ')
    FROM steps GROUP BY qi, node HAVING count(DISTINCT coalesce(parent, chr(0))) > 1
    UNION ALL
    SELECT qi, 'lists ''' || node || ''' both as a leaf and as an inner node'
    FROM steps GROUP BY qi, node HAVING bool_or(i = 1) AND bool_or(i > 1)),
coded AS (
    SELECT qi, leaf, path, row_number() OVER (PARTITION BY qi ORDER BY list_reverse(path)) - 1 AS code
    FROM rows),
runs AS (  -- each node's run of leaf codes
    SELECT c.qi, s.node, min(c.code) AS lo FROM coded c JOIN steps s USING (qi, leaf) GROUP BY c.qi, s.node)
SELECT c.qi, c.leaf, c.path, c.code,
       list(r.lo ORDER BY s.i DESC) AS anc
FROM coded c JOIN steps s USING (qi, leaf) JOIN runs r ON r.qi = s.qi AND r.node = s.node
WHERE NOT checked OR anon_check(EXISTS (SELECT 1 FROM problems), fn, 'hierarchies',
                 'is invalid: the hierarchy of ''' || (SELECT min(qi) FROM problems) || ''' '
                 || (SELECT arg_min(problem, qi) FROM problems))
GROUP BY c.qi, c.leaf, c.path, c.code;

-- One row: per QI (lower-case name) its leaf codes (MAP leaf -> code), its nodes root first
-- (LIST of {name, lo, hi, depth}) and its number of leaves. NULL maps when there are no hierarchies: that
-- row is written as a constant, so that a plain mondrian() call does not bind the machinery below (it is
-- used twice). query() gets fixed text and escaped literals only.
CREATE OR REPLACE MACRO anon_hierarchy_maps(fn, hierarchy_sql, checked := true) AS TABLE
FROM query(CASE WHEN coalesce(hierarchy_sql, anon_no_hierarchies()) = anon_no_hierarchies()
                THEN 'SELECT NULL::MAP(VARCHAR, MAP(VARCHAR, BIGINT)) AS codes, '
                     || 'NULL::MAP(VARCHAR, STRUCT("name" VARCHAR, lo BIGINT, hi BIGINT, depth BIGINT)[]) AS nodes, '
                     || 'NULL::MAP(VARCHAR, BIGINT) AS leaf_counts'
                ELSE 'FROM anon_hierarchy_maps_built(' || anon_sql_literal(fn) || ', ' || anon_sql_literal(hierarchy_sql)
                     || ', checked := ' || CASE WHEN checked THEN 'true' ELSE 'false' END || ')' END);

CREATE OR REPLACE MACRO anon_hierarchy_maps_built(fn, hierarchy_sql, checked) AS TABLE
WITH
leaves AS MATERIALIZED (SELECT * FROM anon_hierarchy_leaves(fn, hierarchy_sql, checked := checked)),
nodes AS (
    SELECT qi, path[i] AS name, min(code) AS lo, max(code) AS hi, any_value(len(path) - i) AS depth
    FROM (SELECT qi, path, code, unnest(range(1, len(path) + 1)) AS i FROM leaves)
    GROUP BY qi, path[i]),
per_qi AS (
    SELECT qi, (SELECT map_from_entries(list({'key': l.leaf, 'value': l.code})) FROM leaves l WHERE l.qi = n.qi) AS codes,
           list({'name': name, 'lo': lo, 'hi': hi, 'depth': depth} ORDER BY depth, lo) AS nodes,
           max(hi) + 1 AS leaf_count
    FROM nodes n GROUP BY qi)
SELECT map_from_entries(list({'key': qi, 'value': codes})) AS codes,
       map_from_entries(list({'key': qi, 'value': nodes})) AS nodes,
       map_from_entries(list({'key': qi, 'value': leaf_count})) AS leaf_counts
FROM per_qi;

-- The node covering the leaf codes lo..hi: the deepest node whose run contains both (nodes root first).
CREATE OR REPLACE MACRO anon_lca(nodes, lo, hi) AS
    list_filter(nodes, lambda n: n.lo <= lo AND n.hi >= hi)[-1];

-- A QI's width under a hierarchy (Xu et al. 2006): leaves under the covering node / leaves in the
-- hierarchy, a single leaf counting 0.
CREATE OR REPLACE MACRO anon_hierarchy_width(nodes, leaf_count, lo, hi) AS
    CASE WHEN hi > lo THEN (anon_lca(nodes, lo, hi).hi - anon_lca(nodes, lo, hi).lo + 1) / leaf_count ELSE 0.0 END;
