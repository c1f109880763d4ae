-- The arguments of the DP aggregates (dp_aggregate, dp_bounded_aggregates) and the relations they read.
-- The macros themselves are generated at install time from duckdb_anon/dp/plan.py, the one text of their
-- SQL, which Spark runs too; these helpers are the DuckDB side of them. Pure SQL.

CREATE OR REPLACE MACRO anon_dp_aggregate_names() AS ['count', 'count_distinct', 'sum', 'avg', 'median'];

-- true, or an error naming fn and the first argument at fault. `noisy`: dp_aggregate (epsilon, delta, noise,
-- confidence and aggregates are checked too); else dp_bounded_aggregates.
CREATE OR REPLACE MACRO anon_dp_arguments_ok(fn, table_name, group_by, value, max_groups_contributed, max_rows_per_group,
                                             min_value, max_value, privacy_unit_column, noisy := false, aggregates := NULL,
                                             epsilon := NULL, delta := NULL, noise := NULL, public_groups := NULL,
                                             confidence := NULL, allow_large_epsilon := false) AS
    anon_needs_python(fn)
    AND anon_name_ok(fn, 'table_name', table_name)
    AND anon_columns_ok(fn, 'group_by', group_by)
    AND anon_check(value IS NOT NULL AND (typeof(value) <> 'VARCHAR' OR value::VARCHAR = ''), fn, 'value',
                   'must be a column name or NULL, got ' || anon_shown(value))
    AND anon_check(privacy_unit_column IS NOT NULL AND (typeof(privacy_unit_column) <> 'VARCHAR' OR privacy_unit_column::VARCHAR = ''),
                   fn, 'privacy_unit_column', 'must be a column name or NULL (NULL: the declared privacy unit), got '
                   || anon_shown(privacy_unit_column))
    -- dp_aggregate chooses the bounds left NULL (spending some epsilon); dp_bounded_aggregates has none to spend
    AND anon_number_ok(fn, 'max_groups_contributed', max_groups_contributed, lo := 1, integer := true, nullable := noisy)
    AND anon_number_ok(fn, 'max_rows_per_group', max_rows_per_group, lo := 1, integer := true)
    AND (value IS NULL OR (anon_number_ok(fn, 'min_value', min_value, nullable := noisy)
                           AND anon_number_ok(fn, 'max_value', max_value, nullable := noisy)
                           AND anon_check(try_cast(min_value AS DOUBLE) > try_cast(max_value AS DOUBLE), fn, 'max_value',
                                          'must be >= min_value, got ' || anon_shown(max_value))))
    AND (NOT noisy OR (
        anon_check(aggregates IS NULL OR typeof(aggregates) <> 'VARCHAR[]' OR len(try_cast(aggregates AS VARCHAR[])) = 0
                   OR NOT list_bool_and(list_transform(try_cast(aggregates AS VARCHAR[]), lambda a: list_contains(anon_dp_aggregate_names(), a))),
                   fn, 'aggregates', 'must be a non-empty list of ''count'', ''count_distinct'', ''sum'', ''avg'', ''median'', got '
                   || anon_shown(aggregates))
        AND anon_check(value IS NULL AND (list_contains(try_cast(aggregates AS VARCHAR[]), 'sum')
                                          OR list_contains(try_cast(aggregates AS VARCHAR[]), 'avg')
                                          OR list_contains(try_cast(aggregates AS VARCHAR[]), 'median')),
                       fn, 'value', 'must name the column that sum, avg and median aggregate')
        AND anon_number_ok(fn, 'epsilon', epsilon, lo := 0, above := true)
        AND anon_bool_ok(fn, 'allow_large_epsilon', allow_large_epsilon)
        AND anon_check(try_cast(epsilon AS DOUBLE) > 10 AND NOT coalesce(try_cast(allow_large_epsilon AS BOOLEAN), false), fn, 'epsilon',
                       'is ' || anon_shown(epsilon) || ', above 10: such a release lets the odds of anything learned about '
                       || 'a person move by a factor up to e^epsilon (e^10 is 22,026), which protects no one; pass '
                       || 'allow_large_epsilon := true to release it anyway')
        AND anon_number_ok(fn, 'delta', delta, lo := 0, hi := 0.5)
        AND anon_choice_ok(fn, 'noise', noise, ['laplace', 'gaussian'])
        AND anon_check(try_cast(delta AS DOUBLE) = 0 AND noise = 'gaussian', fn, 'delta', 'must be > 0 for Gaussian noise')
        AND anon_check(try_cast(delta AS DOUBLE) = 0 AND public_groups IS NULL, fn, 'delta',
                       'must be > 0 to release groups not known in advance (partition selection spends it); '
                       || 'or list the groups in a table given as public_groups')
        AND anon_check(public_groups IS NOT NULL AND (typeof(public_groups) <> 'VARCHAR' OR public_groups::VARCHAR = ''), fn,
                       'public_groups', 'must be a table name or NULL, got ' || anon_shown(public_groups))
        AND anon_number_ok(fn, 'confidence', confidence, lo := 0, above := true, hi := 1)
        AND anon_check(try_cast(confidence AS DOUBLE) = 1, fn, 'confidence', 'must be < 1, got 1')));

-- A struct literal of the group columns of a row, {'item': "item", ...}.
CREATE OR REPLACE MACRO anon_dp_group_sql(group_by) AS
    '{' || array_to_string(list_transform(group_by, lambda c: anon_sql_literal(c) || ': ' || anon_sql_identifier(c)), ', ') || '}';

-- The SQL text of the plan's source (__anon_unit, __anon_group, __anon_value) over table_name: its person
-- from privacy_unit_column, or from the declared privacy unit when that is NULL. Rows whose value is NULL
-- are left out when a value column is given.
CREATE OR REPLACE MACRO anon_dp_source_sql(table_name, group_by, value, privacy_unit_column) AS
    'SELECT ' || coalesce(anon_sql_identifier(privacy_unit_column), '__anon_unit') || ' AS __anon_unit, '
    || anon_dp_group_sql(group_by) || ' AS __anon_group, '
    || coalesce('TRY_CAST(' || anon_sql_identifier(value) || ' AS DOUBLE)', 'CAST(NULL AS DOUBLE)') || ' AS __anon_value FROM ('
    -- a name privacy_unit_rows() does not know reads no row: anon_dp_unit_checked says why (rather than its error)
    || CASE WHEN privacy_unit_column IS NOT NULL THEN 'FROM query_table(' || anon_sql_literal(table_name) || ')'
            WHEN anon_privacy_unit_compiled(table_name) THEN 'FROM privacy_unit_rows(' || anon_sql_literal(table_name) || ')'
            ELSE 'SELECT NULL AS __anon_unit WHERE false' END
    -- a column the table lacks reads NULL (so the query binds) and anon_require_columns reports it
    || ' UNION ALL BY NAME (SELECT ' || array_to_string(list_transform(list_distinct(list_transform(
           anon_names(list_concat(group_by, [value, privacy_unit_column])), lambda c: lower(c))),
           lambda c: 'NULL AS ' || anon_sql_identifier(c)), ', ') || ' LIMIT 0))'
    || coalesce(' WHERE ' || anon_sql_identifier(value) || ' IS NOT NULL', '');

-- The SQL text of the public groups (__anon_group), or of no group at all.
CREATE OR REPLACE MACRO anon_dp_public_sql(public_groups, group_by) AS
    CASE WHEN public_groups IS NULL THEN 'SELECT ' || anon_dp_group_sql(group_by) || ' AS __anon_group FROM (SELECT '
              || array_to_string(list_transform(group_by, lambda c: 'NULL AS ' || anon_sql_identifier(c)), ', ') || ') WHERE false'
         ELSE 'SELECT ' || anon_dp_group_sql(group_by) || ' AS __anon_group FROM query_table(' || anon_sql_literal(public_groups) || ')' END;

-- The privacy unit declarations as JSON text, each with the table whose people it counts.
CREATE OR REPLACE MACRO anon_dp_units_json() AS (
    SELECT to_json(coalesce(list([u.table_name, u.unit_column, u.via_table, u.via_key, p.unit_table] ORDER BY u.table_name), []))::VARCHAR
    FROM anon_privacy_units u JOIN anon_privacy_unit_problems p USING (table_name));

-- Whose people relation tn shows (JSON: unit_table, person_column, declared), or an error naming fn and the
-- argument at fault: a view or query inherits the unit of the declared tables it reads, a person column
-- that is no copy of theirs is refused, and so is public_groups reading the people's data. The rule is the
-- Python function duckdb_anon.dp.lineage.resolve (sqlglot reads the views' SQL), handed the catalog here.
CREATE OR REPLACE MACRO anon_dp_lineage(fn, tn, puc, public_groups) AS (
    SELECT CASE WHEN r->>'error' IS NULL THEN r ELSE error(r->>'error') END
    FROM (SELECT CAST(anon_dp_lineage_json(fn::VARCHAR, tn::VARCHAR, puc::VARCHAR, public_groups::VARCHAR,
                                           anon_relation_catalog(), anon_dp_units_json()) AS JSON) AS r));

-- One row (ok := true), or the error of anon_dp_lineage; and, for a relation privacy_unit_rows() does not
-- know by this name (a view, or a declared table written otherwise), an error asking for the person column
-- lineage found: the SQL of the aggregate is bound before any catalog is read, so it cannot pick it itself.
CREATE OR REPLACE MACRO anon_dp_unit_checked(fn, tn, puc, public_groups := NULL) AS TABLE
SELECT l IS NOT NULL  -- reads the lineage, whose refusals are errors
       AND anon_check(puc IS NULL AND CAST(l->>'declared' AS BOOLEAN) AND NOT anon_privacy_unit_compiled(tn::VARCHAR), fn,
                      'table_name', 'has a privacy unit declared since the declarations were compiled: run '
                      || 'duckdb_anon.apply_privacy_units(con) (or execute the text of SELECT anon_compile_privacy_units())')
       AND anon_check(puc IS NULL AND NOT CAST(l->>'declared' AS BOOLEAN), fn, 'privacy_unit_column',
                  'is needed: ' || anon_shown(tn) || ' has no privacy unit declared under this name; its people are those of '
                  || anon_shown(l->>'unit_table') || ', whose person column it shows as '
                  || anon_shown(l->>'person_column') || ': pass privacy_unit_column := ' || anon_sql_literal(l->>'person_column')) AS ok
FROM (SELECT anon_dp_lineage(fn, tn, puc, public_groups) AS l);

-- One row (ok := true) once the table has every column the call names, or an error naming fn and the
-- argument that names the missing column: group_by, value (which must also be a number) or
-- privacy_unit_column (a NULL value or privacy_unit_column names none).
CREATE OR REPLACE MACRO anon_dp_columns_checked(fn, table_name, group_by, value, privacy_unit_column) AS TABLE
SELECT g.ok AND v.ok AND u.ok AS ok
FROM anon_require_columns(fn, 'group_by', table_name, group_by, table_arg := 'table_name') g,
     anon_require_columns(fn, 'value', table_name, [value], typed := [value], type_pattern := anon_number_types(),
                          type_text := 'a number', table_arg := 'table_name') v,
     anon_require_columns(fn, 'privacy_unit_column', table_name, [privacy_unit_column], table_arg := 'table_name') u;
