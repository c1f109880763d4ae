-- Privacy units: whose rows are whose. Differential privacy protects a person, not a row, so every DP
-- aggregate must know which column identifies the person behind each row. Pure SQL, except that someone
-- must run the SQL text anon_compile_privacy_units() returns (duckdb_anon.declare_privacy_unit() and
-- install() do it; any client can).
--
-- A table either holds the person's identifier itself (unit_column; via_table NULL), or reaches the person
-- through a key: its column unit_column equals via_key of via_table, whose own privacy unit is declared
-- directly (events.patient_id -> patients.patient_id, patients' unit: patients.patient_id).
--
-- Why a compile step: privacy_unit_rows('events') must read a column named in a catalog row, and DuckDB
-- binds a table function's arguments from constants only. So the declarations become constant SQL text,
-- one branch per table, inside the macro privacy_unit_rows(); each branch carries a fingerprint of the
-- declarations and refuses to run once they have changed.

-- The table anon_privacy_units itself is created in sql/70_roles.sql: the declared roles read it too (a
-- masked column keys its fake values on the table's person column).

-- Every declaration, the table whose people it counts (`unit_table`: the table itself, or via_table), and
-- what is wrong with it, if anything.
CREATE OR REPLACE VIEW anon_privacy_unit_problems AS
SELECT u.table_name, coalesce(u.via_table, u.table_name) AS unit_table,
       CASE WHEN NOT EXISTS (SELECT 1 FROM anon_catalog_columns c
                             WHERE c.table_key = lower(u.table_name) AND lower(c.column_name) = lower(u.unit_column))
                 THEN 'table ''' || u.table_name || ''' has no column ''' || u.unit_column || ''''
            WHEN u.via_table IS NOT NULL AND NOT EXISTS (SELECT 1 FROM anon_catalog_columns c
                             WHERE c.table_key = lower(u.via_table) AND lower(c.column_name) = lower(u.via_key))
                 THEN 'table ''' || u.via_table || ''' has no column ''' || u.via_key || ''''
            WHEN u.via_table IS NOT NULL AND NOT EXISTS (SELECT 1 FROM anon_privacy_units p
                             WHERE p.table_name = u.via_table AND p.via_table IS NULL)
                 THEN 'table ''' || u.via_table || ''' has no privacy unit of its own (declare its person column first)'
       END AS problem
FROM anon_privacy_units u;

CREATE OR REPLACE MACRO anon_privacy_units_fingerprint() AS
    md5(coalesce((SELECT string_agg(concat_ws('|', table_name, unit_column, via_table, via_key), chr(10) ORDER BY table_name)
                  FROM anon_privacy_units), ''));

CREATE OR REPLACE MACRO anon_privacy_units_current(fingerprint) AS
    CASE WHEN anon_privacy_units_fingerprint() = fingerprint THEN true
         ELSE error('privacy_unit_rows(): the privacy unit declarations changed since they were compiled: run '
                    || 'duckdb_anon.apply_privacy_units(con) (or execute the text of SELECT anon_compile_privacy_units())') END;

-- The SELECT giving one declared table's rows with the person's identifier as __anon_unit (rows whose
-- person is unknown are left out: they cannot be bounded), or a SELECT raising the error that stops it
-- (its column __anon_unit lets a query reading it bind, so the error is what the user sees).
CREATE OR REPLACE MACRO anon_privacy_unit_sql(tn) AS (
    SELECT CASE
        WHEN p.problem IS NOT NULL
             THEN 'SELECT error(' || anon_sql_literal('privacy_unit_rows(): the privacy unit of ''' || tn || ''' is invalid: ' || p.problem)
                  || ') AS __anon_unit'
        WHEN u.via_table IS NULL
             THEN 'SELECT *, ' || anon_sql_identifier(u.unit_column) || ' AS __anon_unit FROM query_table(' || anon_sql_literal(tn)
                  || ') WHERE ' || anon_sql_identifier(u.unit_column) || ' IS NOT NULL'
        ELSE 'SELECT t.*, p.' || anon_sql_identifier(v.unit_column) || ' AS __anon_unit FROM query_table(' || anon_sql_literal(tn)
             || ') t JOIN query_table(' || anon_sql_literal(u.via_table) || ') p ON t.' || anon_sql_identifier(u.unit_column)
             || ' = p.' || anon_sql_identifier(u.via_key) || ' WHERE p.' || anon_sql_identifier(v.unit_column) || ' IS NOT NULL'
             -- a key that repeats in via_table would hand one row to several people
             || ' AND anon_check((SELECT count(' || anon_sql_identifier(u.via_key) || ') - count(DISTINCT '
             || anon_sql_identifier(u.via_key) || ') FROM query_table(' || anon_sql_literal(u.via_table) || ')) > 0, '
             || anon_sql_literal('privacy_unit_rows') || ', ''table_name'', '
             || anon_sql_literal('(table ''' || tn || '''): the key ''' || u.via_key || ''' repeats in ''' || u.via_table
                                 || ''', so a row would belong to several people') || ')'
        END
    FROM anon_privacy_units u JOIN anon_privacy_unit_problems p USING (table_name)
         LEFT JOIN anon_privacy_units v ON v.table_name = u.via_table
    WHERE u.table_name = tn);

-- The statements that (re)create privacy_unit_rows(table_name) and anon_privacy_unit_compiled(table_name)
-- from the current declarations.
CREATE OR REPLACE MACRO anon_compile_privacy_units() AS (
    SELECT 'CREATE OR REPLACE MACRO privacy_unit_rows(table_name) AS TABLE SELECT * FROM query(CASE WHEN false THEN NULL '
           || coalesce(string_agg('WHEN table_name = ' || anon_sql_literal(table_name) || ' THEN '
                                  || anon_sql_literal(anon_privacy_unit_sql(table_name)), ' ' ORDER BY table_name), '')
           || ' ELSE ''SELECT error('' || anon_sql_literal(''privacy_unit_rows(): argument ''''table_name'''': no privacy unit declared for table '''''' || coalesce(table_name, ''NULL'') || '''''': declare it with duckdb_anon.declare_privacy_unit() or in anon_privacy_units'') || '') AS __anon_unit'' END) '
           || 'WHERE anon_privacy_units_current(' || anon_sql_literal(anon_privacy_units_fingerprint()) || '); '
           -- the names declared, as a constant the DP aggregates' SQL can test when it is bound
           || 'CREATE OR REPLACE MACRO anon_privacy_unit_compiled(table_name) AS list_contains('
           || anon_sql_list(coalesce(list(table_name ORDER BY table_name), [])) || ', table_name)'
    FROM anon_privacy_units);
