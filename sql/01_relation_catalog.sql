-- The catalog as one JSON text: databases, tables, views (with their SQL; NULL for DuckDB's own), columns
-- and table macros, plus the current database, schema and search path. What a relation reads is told from
-- it by the Python class duckdb_anon.relations.Catalog (sqlglot parses the views' SQL), which UDFs are
-- handed this text as an argument.
CREATE OR REPLACE MACRO anon_relation_catalog() AS (SELECT to_json({
    'database': current_database(), 'schema': current_schema(), 'search_path': current_setting('search_path'),
    'databases': (SELECT list(database_name) FROM duckdb_databases()),
    'tables': (SELECT coalesce(list([database_name, schema_name, table_name]), []) FROM duckdb_tables()),
    'views': (SELECT coalesce(list([database_name, schema_name, view_name, CASE WHEN internal THEN NULL ELSE sql END]), [])
              FROM duckdb_views()),
    'columns': (SELECT coalesce(list([database_name, schema_name, table_name, column_name]
                                     ORDER BY database_name, schema_name, table_name, column_index), [])
                FROM duckdb_columns() WHERE database_name <> 'system'),
    'macros': (SELECT coalesce(list(DISTINCT lower(function_name)), []) FROM duckdb_functions()
               WHERE function_type = 'table_macro')})::VARCHAR);
