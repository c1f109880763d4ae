-- Declared column roles and per-table policies, in the database, and the anonymized() release they
-- describe. Pure SQL, except that someone must run the SQL text anon_compile_policies() returns (Python's
-- duckdb_anon.apply_policies(con) or install() does it; any client can).
--
-- Why a compile step: anonymized('patients') must call mondrian() with the table's QIs and k, and DuckDB
-- binds a table function's arguments (query()'s text, COLUMNS' lists) from constants only, never from a
-- subquery on a catalog table ("Table function cannot contain subqueries"). So the declarations are turned
-- into constant SQL text, one branch per table, inside the macro anonymized(). Every branch carries a
-- fingerprint of the declarations it was made from, and refuses to run once they have changed.
--
-- Fail closed: a branch selects the declared columns by name (identifiers dropped or pseudonymized), so a
-- column added to the table later never reaches the release. A table with a column nobody declared is
-- refused when the declarations are applied, and again on every read (a look at the table's binding, no
-- scan), unless its policy says undeclared = 'drop'.

-- The catalog: plain tables the user INSERTs into (install never drops or rewrites them).
CREATE TABLE IF NOT EXISTS anon_column_roles (
    table_name   VARCHAR NOT NULL,  -- as query_table() reads it: 'patients', 'clinic.patients'
    column_name  VARCHAR NOT NULL,
    role         VARCHAR NOT NULL CHECK (role IN ('identifier', 'quasi_identifier', 'sensitive', 'insensitive')),
    hierarchy    VARCHAR,           -- quasi_identifier only: the hierarchy table generalizing it
    pseudonymize BOOLEAN NOT NULL DEFAULT false,  -- identifier only: keyed pseudonym instead of dropping it
    PRIMARY KEY (table_name, column_name));

CREATE TABLE IF NOT EXISTS anon_policies (
    table_name VARCHAR PRIMARY KEY,
    k          INTEGER NOT NULL CHECK (k >= 1),
    mode       VARCHAR NOT NULL DEFAULT 'strict' CHECK (mode IN ('strict', 'relaxed')),
    l          DOUBLE CHECK (l >= 1),
    l_kind     VARCHAR NOT NULL DEFAULT 'distinct' CHECK (l_kind IN ('distinct', 'entropy', 'recursive')),
    c          DOUBLE NOT NULL DEFAULT 2 CHECK (c > 0),
    t          DOUBLE CHECK (t > 0 AND t <= 1),
    key_name   VARCHAR CHECK (regexp_full_match(key_name, '[A-Za-z0-9_]+')),  -- names the session variable holding the pseudonym key
    max_suppression DOUBLE NOT NULL DEFAULT 0 CHECK (max_suppression >= 0 AND max_suppression < 1),
    undeclared VARCHAR NOT NULL DEFAULT 'error' CHECK (undeclared IN ('error', 'drop')));  -- columns with no role
-- a catalog made by an earlier version gains the columns added since
ALTER TABLE anon_policies ADD COLUMN IF NOT EXISTS max_suppression DOUBLE DEFAULT 0;
ALTER TABLE anon_policies ADD COLUMN IF NOT EXISTS undeclared VARCHAR DEFAULT 'error';

-- What is wrong with a pseudonym key, or NULL for a key of 128 bits or more: at least 32 hexadecimal digits,
-- or at least 22 characters of the base64 / base64url alphabet that are not all hexadecimal digits, with
-- at least 10 different characters (a repeated pattern is no random key).
CREATE OR REPLACE MACRO anon_key_problem(key) AS
    CASE WHEN key IS NULL THEN 'is not set'
         WHEN regexp_full_match(key, '[0-9A-Fa-f]*') AND length(key) < 32
              THEN 'is too short: ' || length(key) || ' hexadecimal digits, 32 or more needed (128 bits)'
         WHEN NOT regexp_full_match(key, '[A-Za-z0-9+/_=-]{22,}')
              THEN 'is too weak: use 32 or more hexadecimal digits or 22 or more base64 characters (128 bits) from '
                   || 'a secure generator, such as duckdb_anon.new_pseudonym_key() or duckdb-anon new-key'
         WHEN len(list_distinct(string_split(key, ''))) < 10 THEN 'has fewer than 10 different characters: not a random key'
    END;

-- Keyed pseudonym (HMAC-style: SHA-256 of the key and the SHA-256 of the key and the value), 32 hex digits.
-- The key lives in a session variable, SET VARIABLE duckdb_anon_key_<key_name> = '...', so it is never
-- written to the database file; a weak key is refused. Same key and value give the same pseudonym in every
-- table.
CREATE OR REPLACE MACRO anon_pseudonym(value, key_name) AS
    CASE WHEN value IS NULL THEN NULL
         WHEN getvariable('duckdb_anon_key_' || key_name) IS NULL
         THEN error('anonymized(): no pseudonym key in this session: SET VARIABLE duckdb_anon_key_' || key_name
                    || ' = ''<secret>'' (or duckdb_anon.set_pseudonym_key) first')
         WHEN anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR) IS NOT NULL
         THEN error('anonymized(): the pseudonym key duckdb_anon_key_' || key_name || ' '
                    || anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR))
         ELSE left(sha256(getvariable('duckdb_anon_key_' || key_name)::VARCHAR
                          || sha256(getvariable('duckdb_anon_key_' || key_name)::VARCHAR || value::VARCHAR)), 32) END;

-- Every column the catalog knows, under each name query_table() may be given ('t', 'schema.t',
-- 'db.schema.t'; lower case), with its place in its table.
CREATE OR REPLACE VIEW anon_catalog_columns AS
SELECT unnest([lower(table_name), lower(schema_name || '.' || table_name),
               lower(database_name || '.' || schema_name || '.' || table_name)]) AS table_key,
       column_name, column_index
FROM duckdb_columns();

-- Every declaration, with its table's policy and what is wrong with it, if anything.
CREATE OR REPLACE VIEW anon_roles AS
SELECT r.table_name, r.column_name, r.role, r.hierarchy, r.pseudonymize,
       p.k, p.mode, p.l, p.l_kind, p.c, p.t, p.key_name, p.max_suppression, p.undeclared,
       CASE WHEN NOT EXISTS (SELECT 1 FROM anon_catalog_columns c
                             WHERE c.table_key = lower(r.table_name) AND lower(c.column_name) = lower(r.column_name))
                 THEN 'the table has no column ''' || r.column_name || ''''
            WHEN count(*) OVER (PARTITION BY lower(r.table_name), lower(r.column_name)) > 1
                 THEN 'column ''' || r.column_name || ''' has ' || count(*) OVER (PARTITION BY lower(r.table_name), lower(r.column_name))
                      || ' roles'
            WHEN r.hierarchy IS NOT NULL AND r.role <> 'quasi_identifier' THEN 'a hierarchy is for quasi_identifier columns only'
            WHEN r.pseudonymize AND r.role <> 'identifier' THEN 'pseudonymize is for identifier columns only'
            WHEN r.pseudonymize AND p.key_name IS NULL THEN 'pseudonymize needs the policy''s key_name'
            WHEN p.table_name IS NULL THEN 'the table has no policy (anon_policies)'
            WHEN p.undeclared IS NULL OR p.undeclared NOT IN ('error', 'drop') THEN 'the policy''s undeclared must be ''error'' or ''drop'''
       END AS problem
FROM anon_column_roles r LEFT JOIN anon_policies p USING (table_name);

-- What the declarations of one table amount to, as text: changes when any of them changes.
CREATE OR REPLACE MACRO anon_policy_fingerprint(tn) AS
    md5(coalesce((SELECT string_agg(concat_ws('|', column_name, role, hierarchy, pseudonymize), chr(10) ORDER BY column_name)
                  FROM anon_column_roles WHERE table_name = tn), '')
        || chr(10) || coalesce((SELECT concat_ws('|', k, mode, l, l_kind, c, t, key_name, max_suppression, undeclared)
                                FROM anon_policies WHERE table_name = tn), ''));

CREATE OR REPLACE MACRO anon_policy_is_current(tn, fingerprint) AS
    CASE WHEN anon_policy_fingerprint(tn) = fingerprint THEN true
         ELSE error('anonymized(): the declarations of ''' || tn || ''' changed since they were applied: run '
                    || 'duckdb_anon.apply_policies(con) (or execute the text of SELECT anon_compile_policies())') END;

-- The error for columns nobody declared (names in the table's spelling).
CREATE OR REPLACE MACRO anon_undeclared_message(tn, columns) AS
    'anonymized(): table ''' || tn || ''' has columns with no declared role: ' || array_to_string(columns, ', ')
    || ' (declare each in anon_column_roles, as insensitive to publish it unchanged, then apply the declarations;'
    || ' or set the policy''s undeclared to ''drop'')';

-- Read-time guard of a compiled release: true, or an error naming every column of the table that is not in
-- `declared` (lower-case names), unless `undeclared` is 'drop'. The columns come from the table's binding.
CREATE OR REPLACE MACRO anon_columns_declared(tn, declared, undeclared) AS (
    SELECT CASE WHEN undeclared = 'drop' OR len(extra) = 0 THEN true ELSE error(anon_undeclared_message(tn, extra)) END
    FROM (SELECT list_filter(names, lambda c: NOT list_contains(declared, lower(c))) AS extra
          FROM (SELECT struct_keys(struct_pack(*COLUMNS(* EXCLUDE (__anon_one)))) AS names
                FROM (SELECT 1 AS __anon_one) LEFT JOIN (SELECT * FROM query_table(tn) LIMIT 0) ON true)));

-- The SELECT that publishes one table under its policy, or a SELECT raising the error that stops it.
-- The released columns are named one by one, in the table's order: quasi-identifiers (generalized),
-- sensitive and insensitive columns, pseudonymized identifiers. Other identifiers are left out.
CREATE OR REPLACE MACRO anon_policy_sql(tn) AS (
    WITH roles AS (  -- names in the table's own spelling (declarations match columns case-insensitively)
        SELECT r.* REPLACE (coalesce(c.column_name, r.column_name) AS column_name)
        FROM anon_roles r LEFT JOIN (SELECT DISTINCT column_name FROM anon_catalog_columns WHERE table_key = lower(tn)) c
             ON lower(c.column_name) = lower(r.column_name)
        WHERE r.table_name = tn),
    policy AS (SELECT * FROM anon_policies WHERE table_name = tn),
    table_columns AS (  -- the table's columns with their declarations, if any
        SELECT c.column_name, min(c.column_index) AS place, any_value(r.role) AS role, any_value(r.pseudonymize) AS pseudonymize
        FROM anon_catalog_columns c LEFT JOIN roles r ON lower(r.column_name) = lower(c.column_name)
        WHERE c.table_key = lower(tn) GROUP BY c.column_name),
    parts AS (
        SELECT list(column_name ORDER BY column_name) FILTER (WHERE role = 'quasi_identifier') AS qis,
               list(column_name ORDER BY column_name) FILTER (WHERE role = 'sensitive') AS sensitive,
               list({'qi': column_name, 'h': hierarchy} ORDER BY column_name) FILTER (WHERE hierarchy IS NOT NULL) AS hierarchies,
               list(lower(column_name) ORDER BY column_name) AS declared,
               min(problem) AS problem
        FROM roles),
    released AS (
        SELECT list(CASE WHEN pseudonymize THEN 'anon_pseudonym(' || anon_sql_identifier(column_name) || ', '
                                               || anon_sql_literal((SELECT key_name FROM policy)) || ') AS ' || anon_sql_identifier(column_name)
                         ELSE anon_sql_identifier(column_name) END ORDER BY place)
                   FILTER (WHERE role IN ('quasi_identifier', 'sensitive', 'insensitive') OR pseudonymize) AS select_list,
               list(column_name ORDER BY place) FILTER (WHERE role IS NULL) AS undeclared
        FROM table_columns)
    SELECT CASE
        WHEN (SELECT count(*) FROM policy) = 0
             THEN 'SELECT error(' || anon_sql_literal('anonymized(): table ''' || tn || ''' has no policy in anon_policies') || ')'
        WHEN parts.problem IS NOT NULL
             THEN 'SELECT error(' || anon_sql_literal('anonymized(): the declarations of ''' || tn || ''' are invalid: ' || parts.problem) || ')'
        WHEN parts.qis IS NULL
             THEN 'SELECT error(' || anon_sql_literal('anonymized(): the policy of ''' || tn || ''' declares no quasi_identifier column') || ')'
        WHEN (p.l IS NOT NULL OR p.t IS NOT NULL) AND coalesce(len(parts.sensitive), 0) <> 1
             THEN 'SELECT error(' || anon_sql_literal('anonymized(): the policy of ''' || tn
                                                      || ''' asks for l or t, which needs exactly one sensitive column') || ')'
        WHEN released.undeclared IS NOT NULL AND p.undeclared = 'error'
             THEN 'SELECT error(' || anon_sql_literal(anon_undeclared_message(tn, released.undeclared)) || ')'
        ELSE 'SELECT ' || array_to_string(released.select_list, ', ')
             || ' FROM mondrian(' || anon_sql_literal(tn) || ', ' || anon_sql_list(parts.qis) || ', ' || p.k::VARCHAR
             || ', mode := ' || anon_sql_literal(p.mode)
             || CASE WHEN parts.hierarchies IS NULL THEN ''
                     ELSE ', hierarchies := MAP {' || array_to_string(list_transform(parts.hierarchies, lambda h:
                              anon_sql_literal(h.qi) || ': ' || anon_sql_literal(h.h)), ', ') || '}' END
             || CASE WHEN p.l IS NULL AND p.t IS NULL THEN ''
                     ELSE ', sensitive := ' || anon_sql_literal(parts.sensitive[1])
                          || coalesce(', l := ' || p.l::VARCHAR, '') || ', l_kind := ' || anon_sql_literal(p.l_kind)
                          || ', c := ' || p.c::VARCHAR || coalesce(', t := ' || p.t::VARCHAR, '') END
             || CASE WHEN coalesce(p.max_suppression, 0) > 0 THEN ', max_suppression := ' || p.max_suppression::VARCHAR ELSE '' END
             || ') WHERE anon_policy_is_current(' || anon_sql_literal(tn) || ', '
             || anon_sql_literal(anon_policy_fingerprint(tn)) || ') AND anon_columns_declared(' || anon_sql_literal(tn) || ', '
             || anon_sql_list(parts.declared) || ', ' || anon_sql_literal(p.undeclared) || ')'
        END
    FROM parts, released LEFT JOIN policy p ON true);

-- The statement that (re)creates anonymized(table_name) from the current declarations: one branch per
-- table with a policy or a declared role. Run its result to apply the declarations.
CREATE OR REPLACE MACRO anon_compile_policies() AS (
    SELECT 'CREATE OR REPLACE MACRO anonymized(table_name) AS TABLE SELECT * FROM query(CASE WHEN false THEN NULL '
           || coalesce(string_agg('WHEN table_name = ' || anon_sql_literal(tn) || ' THEN ' || anon_sql_literal(anon_policy_sql(tn)), ' ' ORDER BY tn), '')
           || ' ELSE error(''anonymized(): argument ''''table_name'''': no policy applied for table '''''' || coalesce(table_name, ''NULL'') || '''''': declare it in '
           || 'anon_column_roles and anon_policies, then run duckdb_anon.apply_policies(con)'') END)'
    FROM (SELECT table_name AS tn FROM anon_policies UNION SELECT table_name FROM anon_column_roles));

-- The tables whose anonymized() branch refuses to run, and why: what apply_policies() reports.
CREATE OR REPLACE MACRO anon_policy_problems() AS TABLE
SELECT table_name, replace(regexp_extract(compiled, '(?s)^SELECT error\(''(.*)''\)$', 1), '''''', '''') AS problem  -- (?s): names may hold line breaks
FROM (SELECT tn AS table_name, anon_policy_sql(tn) AS compiled  -- compiled once per table
      FROM (SELECT table_name AS tn FROM anon_policies UNION SELECT table_name FROM anon_column_roles))
WHERE starts_with(compiled, 'SELECT error(')
ORDER BY table_name;
