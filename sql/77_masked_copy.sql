-- A masked copy of a database (duckdb_anon.masked_copy, `duckdb-anon copy`): every table written with its
-- declarations applied column by column, by the same rule as anonymized() (anon_released_column_sql):
-- identifiers dropped or pseudonymized, masked columns masked, quasi-identifiers, sensitive and
-- insensitive columns copied as they are (no Mondrian: a copy keeps every row and every value it does
-- not mask), columns nobody declared refused, or dropped when the table's policy says undeclared = 'drop'.
-- Pure SQL; the Python side attaches the files, runs the statements and renames the result into place.

-- What each column of the tables `table_names` (as the declarations name them) becomes in a masked copy, in
-- each table's order: its declaration, what the copy writes in words (`became`), the SQL expression over the
-- row alias "__anon_row" (NULL when the column is left out), and what stops the copy, if anything
-- (`problem`). All tables in one query: the catalog views are read once.
CREATE OR REPLACE MACRO anon_copy_columns(table_names) AS TABLE
WITH table_columns AS (
         SELECT w.tn, c.column_name, min(c.column_index) AS place, any_value(c.data_type) AS data_type
         FROM (SELECT unnest(table_names) AS tn) w JOIN anon_catalog_columns c ON c.table_key = lower(w.tn)
         GROUP BY ALL),
     declared AS (SELECT * FROM anon_roles WHERE list_contains(table_names, table_name)),
     invalid AS (SELECT table_name AS tn, min(problem) AS problem FROM declared GROUP BY ALL),
     policy AS (SELECT table_name AS tn, key_name, undeclared FROM anon_policies WHERE list_contains(table_names, table_name))
SELECT c.tn AS table_name, c.column_name, c.place, c.data_type, r.role, r.mask, r.mask_args,
       CASE WHEN p.tn IS NULL
                 THEN 'the table has no policy in anon_policies (set one: its key_name keys the pseudonyms and masks, '
                      || 'its undeclared says what happens to columns with no role; k is not used by a copy)'
            WHEN i.problem IS NOT NULL THEN 'the declarations are invalid: ' || i.problem
            WHEN r.role IS NULL AND p.undeclared <> 'drop'
                 THEN 'column ''' || c.column_name || ''' has no declared role (declare it, as insensitive to copy it '
                      || 'unchanged, or set the policy''s undeclared to ''drop'')'
       END AS problem,
       CASE WHEN r.role IS NULL THEN 'dropped: no declared role, and the policy drops undeclared columns'
            WHEN r.role = 'identifier' AND r.pseudonymize THEN 'keyed pseudonym (key ' || p.key_name || ')'
            WHEN r.role = 'identifier' THEN 'dropped: identifier'
            WHEN r.role = 'masked' THEN 'masked: ' || r.mask || coalesce(' ' || r.mask_args::VARCHAR, '')
            ELSE 'copied as it is: ' || r.role END AS became,
       anon_released_column_sql('"__anon_row"', c.column_name, c.data_type, r.role, r.pseudonymize, r.mask_spec, r.mask_args,
                                p.key_name) AS expression
FROM table_columns c LEFT JOIN declared r ON r.table_name = c.tn AND lower(r.column_name) = lower(c.column_name)
     LEFT JOIN policy p ON p.tn = c.tn LEFT JOIN invalid i ON i.tn = c.tn
ORDER BY c.tn, c.place;

-- The SELECT that writes each table's masked copy: `tables` lists {'declared': the name in the declarations,
-- 'schema': ..., 'name': ...} of the relation to read.
CREATE OR REPLACE MACRO anon_copy_statements(tables) AS TABLE
SELECT t.declared AS table_name,
       'SELECT ' || string_agg(c.expression, ', ' ORDER BY c.place) || ' FROM ' || anon_sql_identifier(t.schema) || '.'
       || anon_sql_identifier(t.name) || ' AS "__anon_row"' AS select_sql
FROM (SELECT unnest(tables, recursive := true)) t
     JOIN anon_copy_columns(list_transform(tables, lambda x: x.declared)) c ON c.table_name = t.declared
WHERE c.expression IS NOT NULL
GROUP BY t.declared, t.schema, t.name;
