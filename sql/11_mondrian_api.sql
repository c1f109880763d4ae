-- The user-facing Mondrian macros: mondrian() and mondrian_classes().
--
-- They check their scalar arguments and then call one of the macros of 10_mondrian.sql through query(),
-- built from fixed text and escaped literals only (anon_sql_literal): no argument can escape into the SQL.
-- The string is folded when the query is bound, so a wrong argument fails before anything runs, with an
-- error naming the function and the argument. (query() is also what lets `output` change the result's
-- column types, and what lets the hierarchy tables be read by name.)

-- A number argument as SQL text, or NULL; anything but a number is an error naming the argument.
CREATE OR REPLACE MACRO anon_number_literal(fn, arg, x) AS
    CASE WHEN x IS NULL THEN 'NULL'
         WHEN NOT regexp_matches(typeof(x), '^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)$')
              OR NOT isfinite(try_cast(x AS DOUBLE))
         THEN error(fn || '(): argument ''' || arg || ''' must be a number, got ' || x::VARCHAR)
         ELSE try_cast(x AS DOUBLE)::VARCHAR END;

-- The privacy models (l-diversity, t-closeness) as a STRUCT literal {'l', 'l_kind', 'c', 't'}, checked.
CREATE OR REPLACE MACRO anon_model_literal(fn, qis, mode, sensitive, l, l_kind, c, t, max_suppression) AS
    CASE WHEN sensitive IS NOT NULL AND typeof(sensitive) <> 'VARCHAR'
              THEN error(fn || '(): argument ''sensitive'' must be a column name')
         WHEN sensitive IS NOT NULL AND list_contains(list_transform(qis, lambda q: lower(q)), lower(sensitive))
              THEN error(fn || '(): argument ''sensitive'' names ''' || sensitive || ''', which is also a QI')
         WHEN sensitive IS NOT NULL AND anon_reserved_name(sensitive)
              THEN error(fn || '(): argument ''sensitive'' is a reserved __anon_ name')
         WHEN sensitive IS NULL AND l IS NOT NULL THEN error(fn || '(): argument ''l'' needs a sensitive column (sensitive := ...)')
         WHEN sensitive IS NULL AND t IS NOT NULL THEN error(fn || '(): argument ''t'' needs a sensitive column (sensitive := ...)')
         WHEN sensitive IS NOT NULL AND l IS NULL AND t IS NULL
              THEN error(fn || '(): argument ''sensitive'' is given without l or t: say which model to enforce')
         WHEN l IS NOT NULL AND try_cast(l AS DOUBLE) IS NOT NULL AND try_cast(l AS DOUBLE) < 1
              THEN error(fn || '(): argument ''l'' must be at least 1, got ' || l::VARCHAR)
         WHEN l_kind IS NULL OR l_kind::VARCHAR NOT IN ('distinct', 'entropy', 'recursive')
              THEN error(fn || '(): argument ''l_kind'' must be ''distinct'', ''entropy'' or ''recursive'', got '
                         || coalesce('''' || l_kind::VARCHAR || '''', 'NULL'))
         WHEN c IS NULL OR try_cast(c AS DOUBLE) IS NULL OR try_cast(c AS DOUBLE) <= 0
              THEN error(fn || '(): argument ''c'' must be a positive number, got ' || coalesce(c::VARCHAR, 'NULL'))
         WHEN t IS NOT NULL AND (try_cast(t AS DOUBLE) IS NULL OR try_cast(t AS DOUBLE) <= 0 OR try_cast(t AS DOUBLE) > 1)
              THEN error(fn || '(): argument ''t'' must lie in (0, 1], got ' || t::VARCHAR)
         WHEN sensitive IS NOT NULL AND mode = 'relaxed'
              THEN error(fn || '(): argument ''mode'': l-diversity and t-closeness need mode ''strict''')
         WHEN max_suppression IS NULL OR try_cast(max_suppression AS DOUBLE) IS NULL
              OR try_cast(max_suppression AS DOUBLE) < 0 OR try_cast(max_suppression AS DOUBLE) >= 1
              THEN error(fn || '(): argument ''max_suppression'' must lie in [0, 1), got ' || coalesce(max_suppression::VARCHAR, 'NULL'))
         WHEN try_cast(max_suppression AS DOUBLE) > 0 AND mode = 'relaxed'
              THEN error(fn || '(): argument ''max_suppression'' needs mode ''strict''')
         ELSE '{''l'': ' || anon_number_literal(fn, 'l', l) || '::DOUBLE, ''l_kind'': ' || anon_sql_literal(l_kind)
              || ', ''c'': ' || anon_number_literal(fn, 'c', c) || '::DOUBLE, ''t'': ' || anon_number_literal(fn, 't', t)
              || '::DOUBLE, ''suppress'': ' || anon_number_literal(fn, 'max_suppression', max_suppression) || '::DOUBLE}'
    END;

-- The names of the relations mondrian()'s macros define inside (10_mondrian.sql): a user table of one of these
-- names is shadowed by them inside DuckDB's binding, so mondrian() refuses it rather than misread it.
CREATE OR REPLACE MACRO anon_mondrian_internal_names() AS
    ['appearance', 'attempt', 'candidates', 'cands', 'cells', 'checked_cells', 'decided', 'decisions', 'every_ranked', 'failed', 'fallback',
     'freq', 'grouped', 'hier', 'hierarchies', 'joined', 'keyed', 'keyed_cells', 'labels', 'leaf_ancestors',
     'located', 'medians', 'nulls', 'ordered', 'others', 'others_freq', 'others_keyed', 'others_median',
     'others_running', 'others_unit_split', 'parts', 'pieces', 'placed', 'plain_labels', 'qi_order', 'qi_types',
     'ranked', 'raw', 'regions', 'cell_labels', 'row_medians', 'row_sizes', 'sensitive_ranks', 'shared', 'shares', 'side_checks',
     'sides', 'span', 'state', 'table_dist', 'tied', 'tried', 'tried_freq', 'tried_keyed', 'tried_median',
     'tried_running', 'tried_unit_split', 'vranks', 'widest'];

-- The names of the columns mondrian()'s macros carry beside the QI columns (10_mondrian.sql: a partition's
-- cell, off, n and part, the keys, names, fill, codes, nodes and leaf_counts of the cells and hierarchies):
-- a QI of one of these names would be read in place of them, so mondrian() refuses it.
CREATE OR REPLACE MACRO anon_mondrian_internal_columns() AS
    ['cell', 'codes', 'fill', 'keys', 'leaf_counts', 'n', 'names', 'nodes', 'off', 'part'];

-- The release macro a view named `name` calls, directly or through the views it names, or NULL: mondrian(),
-- mondrian_classes(), anonymized() and random_walk() expand the same table macros as mondrian(), and DuckDB
-- refuses to expand a table macro inside itself ("infinite recursion detected: attempting to recursively
-- expand table macro"), so mondrian() cannot read such a view. mondrian() itself cannot look first (query()'s
-- argument takes no subquery); the Python entries ask here and name the problem. Views are matched by the
-- text of their SQL (a view mentioning another's name is followed), which can only over-report.
CREATE OR REPLACE MACRO anon_view_release_macro(name) AS (
    WITH RECURSIVE chain(view_name, sql) AS (
        SELECT view_name, sql FROM duckdb_views()
        WHERE lower(view_name) = lower(trim(string_split(name::VARCHAR, '.')[-1], '"'))
        UNION
        SELECT v.view_name, v.sql FROM chain c JOIN duckdb_views() v
            ON v.view_name <> c.view_name AND contains(lower(c.sql), lower(v.view_name)))
    SELECT min(regexp_extract(lower(sql), '\b(mondrian_classes|mondrian|anonymized|random_walk)\s*\(', 1))
    FROM chain WHERE regexp_matches(lower(sql), '\b(mondrian_classes|mondrian|anonymized|random_walk)\s*\('));

CREATE OR REPLACE MACRO anon_mondrian_call(fn, target, table_name, qis, k, mode, categorical_order, split_rule,
                                           hierarchies, sensitive, l, l_kind, c, t, max_suppression) AS
    'SELECT * FROM ' || target || '('
    || CASE WHEN list_contains(anon_mondrian_internal_names(), lower(trim(string_split(table_name::VARCHAR, '.')[-1], '"')))
                 THEN error(fn || '(): argument ''table_name'': ''' || table_name || ''' is a name ' || fn || '() uses internally; '
                            || 'read the table through a view of another name (CREATE VIEW v AS SELECT * FROM ...)')
            WHEN anon_name_ok(fn, 'table_name', table_name) THEN anon_sql_literal(table_name) END || ', '
    || CASE WHEN NOT typeof(qis) LIKE '%[]' OR try_cast(qis AS VARCHAR[]) IS NULL
                 THEN error(fn || '(): argument ''qis'' must be a list of column names, e.g. [''age'', ''zip'']')
            WHEN len(try_cast(qis AS VARCHAR[])) = 0 THEN error(fn || '(): argument ''qis'' must name at least one column')
            WHEN typeof(qis) <> 'VARCHAR[]'
                 THEN error(fn || '(): argument ''qis'' must be a list of column names (text), got ' || qis::VARCHAR)
            WHEN len(list_distinct(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q)))) < len(try_cast(qis AS VARCHAR[]))
                 THEN error(fn || '(): argument ''qis'' lists a column twice')
            WHEN list_bool_or(list_transform(try_cast(qis AS VARCHAR[]), lambda q: q IS NULL OR anon_reserved_name(q)))
                 THEN error(fn || '(): argument ''qis'' holds NULL or a reserved __anon_ name')
            WHEN list_bool_or(list_transform(try_cast(qis AS VARCHAR[]), lambda q: list_contains(anon_mondrian_internal_columns(), lower(q))))
                 THEN error(fn || '(): argument ''qis'': column '''
                            || list_filter(try_cast(qis AS VARCHAR[]), lambda q: list_contains(anon_mondrian_internal_columns(), lower(q)))[1]
                            || ''' has a name ' || fn || '() uses internally ('
                            || array_to_string(anon_mondrian_internal_columns(), ', ') || '); read the table through a view '
                            || 'that renames it, e.g. CREATE VIEW v AS SELECT * RENAME ("n" AS n_value) FROM t')
            ELSE anon_sql_list(try_cast(qis AS VARCHAR[])) END || ', '
    || CASE WHEN NOT regexp_matches(typeof(k), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$')
                 THEN error(fn || '(): argument ''k'' must be an integer, got ' || coalesce(k::VARCHAR, 'NULL'))
            WHEN NOT anon_at_most(fn, 'k', k, 'k') THEN NULL
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
            ELSE anon_sql_literal(split_rule) END || ', '
    || anon_sql_literal(anon_hierarchy_sql(fn, hierarchies, try_cast(qis AS VARCHAR[]))) || ', '
    || CASE WHEN sensitive IS NULL THEN 'NULL' ELSE anon_sql_literal(sensitive) END || ', '
    || anon_model_literal(fn, try_cast(qis AS VARCHAR[]), mode, sensitive, l, l_kind, c, t, max_suppression)
    || ')';

-- `keep`: the non-QI columns a release publishes besides the QIs (which are always published, generalized).
-- NULL publishes every column of the table. The rule lives here once: mondrian() applies it in SQL, the level
-- driver and Spark (duckdb_anon.mondrian, duckdb_anon.mondrian.spark) call anon_published_columns with their columns.

-- The checked keep list, lower-cased (NULL when keep is NULL): an error naming fn and 'keep' when it is not
-- a list of names, holds NULL, a reserved name or a name twice, or names a QI.
CREATE OR REPLACE MACRO anon_keep_list(fn, qis, keep) AS
    CASE WHEN keep IS NULL THEN NULL
         WHEN typeof(keep) NOT IN ('VARCHAR[]', '"NULL"[]')
              THEN error(fn || '(): argument ''keep'' must be a list of column names, e.g. [''diagnosis''], got ' || keep::VARCHAR)
         WHEN list_bool_or(list_transform(try_cast(keep AS VARCHAR[]), lambda c: c IS NULL OR anon_reserved_name(c)))
              THEN error(fn || '(): argument ''keep'' holds NULL or a reserved __anon_ name')
         WHEN len(list_distinct(list_transform(try_cast(keep AS VARCHAR[]), lambda c: lower(c)))) < len(try_cast(keep AS VARCHAR[]))
              THEN error(fn || '(): argument ''keep'' lists a column twice')
         WHEN len(list_filter(try_cast(keep AS VARCHAR[]), lambda c: anon_is_qi(try_cast(qis AS VARCHAR[]), c))) > 0
              THEN error(fn || '(): argument ''keep'' names '''
                         || list_filter(try_cast(keep AS VARCHAR[]), lambda c: anon_is_qi(try_cast(qis AS VARCHAR[]), c))[1]
                         || ''', a QI: QIs are always published, generalized; keep lists the other columns to publish')
         ELSE list_transform(try_cast(keep AS VARCHAR[]), lambda c: lower(c)) END;

-- The columns a release of a table with columns `columns` publishes, in the table's order: the QIs and the
-- columns of `keep`; every column when keep is NULL. A keep column the table lacks is an error naming fn
-- and 'keep'.
CREATE OR REPLACE MACRO anon_published_columns(fn, columns, qis, keep) AS
    CASE WHEN anon_keep_list(fn, qis, keep) IS NULL THEN columns
         WHEN len(list_filter(anon_keep_list(fn, qis, keep), lambda c: NOT anon_is_qi(columns, c))) > 0
              THEN error(fn || '(): argument ''keep'': the table has no column '''
                         || list_filter(anon_keep_list(fn, qis, keep), lambda c: NOT anon_is_qi(columns, c))[1] || '''')
         ELSE list_filter(columns, lambda c: anon_is_qi(try_cast(qis AS VARCHAR[]), c)
                                             OR list_contains(anon_keep_list(fn, qis, keep), lower(c))) END;

-- The release's SQL `release_sql` restricted to the QIs and `keep` (unchanged when keep is NULL). The
-- table's columns are checked against keep when the query runs (an error naming fn and 'keep').
-- release_sql appears once: a macro argument written twice is bound twice, and mondrian()'s is the
-- whole checked call.
CREATE OR REPLACE MACRO anon_keep_select(fn, table_name, qis, keep, release_sql) AS
    CASE WHEN anon_keep_list(fn, qis, keep) IS NULL THEN ''
         ELSE 'SELECT COLUMNS(lambda c: list_contains('
              || anon_sql_list(list_concat(list_transform(try_cast(qis AS VARCHAR[]), lambda q: lower(q)), anon_keep_list(fn, qis, keep)))
              || ', lower(c))) FROM (' END
    || release_sql
    || CASE WHEN anon_keep_list(fn, qis, keep) IS NULL THEN ''
            ELSE ') WHERE (SELECT len(anon_published_columns('
                 || anon_sql_literal(fn) || ', list(column_name), ' || anon_sql_list(try_cast(qis AS VARCHAR[])) || ', '
                 || anon_sql_list(anon_keep_list(fn, qis, keep)) || ')) >= 0 FROM (DESCRIBE FROM query_table('
                 || anon_sql_literal(table_name) || ')))' END;

-- The release macro of mondrian()'s `output` ('text' or 'typed'); anything else is an error naming fn.
CREATE OR REPLACE MACRO anon_mondrian_shape(fn, output) AS
    CASE WHEN output = 'typed' THEN 'anon_mondrian_typed' WHEN output = 'text' THEN 'anon_mondrian_text'
         ELSE error(fn || '(): argument ''output'' must be ''text'' or ''typed'', got '
                    || coalesce('''' || output::VARCHAR || '''', 'NULL')) END;

-- mondrian(): the release (see 10_mondrian.sql for the algorithm and README.md for the arguments).
CREATE OR REPLACE MACRO mondrian(table_name, qis, k, mode := 'strict', output := 'text',
                                 categorical_order := 'appearance', split_rule := 'actual', hierarchies := NULL,
                                 sensitive := NULL, l := NULL, l_kind := 'distinct', c := 2, t := NULL,
                                 max_suppression := 0, keep := NULL) AS TABLE
SELECT * FROM query(anon_keep_select('mondrian', table_name, qis, keep, anon_mondrian_call('mondrian',
    anon_mondrian_shape('mondrian', output), table_name, qis, k, mode, categorical_order, split_rule, hierarchies, sensitive, l, l_kind, c, t, max_suppression)));

-- One row per source row: row_id (scan position, 1-based), class_id, class_size, and per QI the typed class
-- bounds STRUCT(lo, hi, mean). Materialize it to reuse a partitioning.
CREATE OR REPLACE MACRO mondrian_classes(table_name, qis, k, mode := 'strict', categorical_order := 'appearance',
                                         split_rule := 'actual', hierarchies := NULL, sensitive := NULL, l := NULL,
                                         l_kind := 'distinct', c := 2, t := NULL, max_suppression := 0) AS TABLE
SELECT * FROM query(anon_mondrian_call('mondrian_classes', 'anon_mondrian_classes',
    table_name, qis, k, mode, categorical_order, split_rule, hierarchies, sensitive, l, l_kind, c, t, max_suppression));
