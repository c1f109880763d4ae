-- A masked copy of a database (duckdb_anon.masked_copy, `duckdb-anon copy`): every table written with its
-- declarations applied column by column, by the same rule as anonymized() (anon_released_column_sql):
-- identifiers dropped or pseudonymized, masked columns masked, quasi-identifiers, sensitive and
-- insensitive columns copied as they are (no Mondrian: a copy keeps every row and every value it does
-- not mask), columns nobody declared refused, or dropped when the table's policy says undeclared = 'drop'.
-- Pure SQL; the Python side attaches the files, runs the statements and renames the result into place.

-- What each column of table `tn` (as the declarations name it) becomes in a masked copy, in the table's
-- order: its declaration, what the copy writes in words (`became`), the SQL expression over the row alias
-- "__anon_row" (NULL when the column is left out), and what stops the copy, if anything (`problem`).
CREATE OR REPLACE MACRO anon_copy_columns(tn) AS TABLE
WITH table_columns AS (
         SELECT column_name, min(column_index) AS place, any_value(data_type) AS data_type
         FROM anon_catalog_columns WHERE table_key = lower(tn) GROUP BY column_name),
     declared AS (SELECT * FROM anon_roles WHERE table_name = tn),
     policy AS (SELECT * FROM anon_policies WHERE table_name = tn)
SELECT tn AS table_name, c.column_name, c.place, c.data_type, r.role, r.mask, r.mask_args,
       CASE WHEN (SELECT count(*) FROM policy) = 0
                 THEN 'the table has no policy in anon_policies (set one: its key_name keys the pseudonyms and masks, '
                      || 'its undeclared says what happens to columns with no role; k is not used by a copy)'
            WHEN (SELECT min(problem) FROM declared) IS NOT NULL
                 THEN 'the declarations are invalid: ' || (SELECT min(problem) FROM declared)
            WHEN r.role IS NULL AND (SELECT undeclared FROM policy) <> 'drop'
                 THEN 'column ''' || c.column_name || ''' has no declared role (declare it, as insensitive to copy it '
                      || 'unchanged, or set the policy''s undeclared to ''drop'')'
       END AS problem,
       CASE WHEN r.role IS NULL THEN 'dropped: no declared role, and the policy drops undeclared columns'
            WHEN r.role = 'identifier' AND r.pseudonymize THEN 'keyed pseudonym (key ' || r.key_name || ')'
            WHEN r.role = 'identifier' THEN 'dropped: identifier'
            WHEN r.role = 'masked' THEN 'masked: ' || r.mask || coalesce(' ' || r.mask_args::VARCHAR, '')
            ELSE 'copied as it is: ' || r.role END AS became,
       anon_released_column_sql('"__anon_row"', c.column_name, c.data_type, r.role, r.pseudonymize, r.mask, r.mask_args,
                                (SELECT key_name FROM policy)) AS expression
FROM table_columns c LEFT JOIN declared r ON lower(r.column_name) = lower(c.column_name)
ORDER BY c.place;

-- The SELECT that writes table `tn`'s masked copy, reading the relation relation_schema.relation_name.
CREATE OR REPLACE MACRO anon_copy_sql(tn, relation_schema, relation_name) AS (
    SELECT 'SELECT ' || string_agg(expression, ', ' ORDER BY place) || ' FROM ' || anon_sql_identifier(relation_schema) || '.'
           || anon_sql_identifier(relation_name) || ' AS "__anon_row"'
    FROM anon_copy_columns(tn) WHERE expression IS NOT NULL);
