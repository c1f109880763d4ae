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
-- scan), unless its policy says undeclared = 'drop'. A name is only a name: swap two, or drop one and rename
-- another into it, and the same names hold other columns. So the first apply of a declaration records its
-- column's place and type in anon_column_roles; later applies refuse a table whose declared names moved or
-- changed type (anon_roles' problem), and every branch carries the places and types and refuses every read
-- where a declared name is not at its place with its type (anon_columns_declared). Only the user accepts a
-- changed table, by clearing what was recorded.

-- The catalog: plain tables the user INSERTs into (install never drops or rewrites them).
CREATE TABLE IF NOT EXISTS anon_column_roles (
    table_name   VARCHAR NOT NULL,  -- as query_table() reads it: 'patients', 'clinic.patients'
    column_name  VARCHAR NOT NULL,
    role         VARCHAR NOT NULL CHECK (role IN ('identifier', 'quasi_identifier', 'sensitive', 'insensitive', 'masked')),
    hierarchy    VARCHAR,           -- quasi_identifier only: the hierarchy table generalizing it
    pseudonymize BOOLEAN NOT NULL DEFAULT false,  -- identifier only: keyed pseudonym instead of dropping it
    column_index INTEGER,           -- the column's place and type when the declaration was first applied (left
    data_type    VARCHAR,           -- NULL by the user; filled by the apply): later applies and reads hold to them
    mask         VARCHAR,           -- masked only: the masking function (anon_mask_names(), sql/69_masking.sql)
    mask_args    MAP(VARCHAR, VARCHAR),  -- masked only: its arguments, e.g. MAP {'by': 'patient_id', 'locale': 'fr_FR'}
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
-- Privacy units (sql/80_privacy_units.sql): which column of a table identifies the person. Created here
-- because anon_roles reads it: a mask without mask_args['by'] keys on the person column.
CREATE TABLE IF NOT EXISTS anon_privacy_units (
    table_name  VARCHAR PRIMARY KEY,  -- as query_table() reads it: 'ratings', 'clinic.events'
    unit_column VARCHAR NOT NULL,     -- the person's identifier, or the key reaching it
    via_table   VARCHAR,              -- NULL: unit_column identifies the person
    via_key     VARCHAR,              -- via_table's column that unit_column equals
    CHECK ((via_table IS NULL) = (via_key IS NULL)));

-- a catalog made by an earlier version gains the columns added since
ALTER TABLE anon_policies ADD COLUMN IF NOT EXISTS max_suppression DOUBLE DEFAULT 0;
ALTER TABLE anon_policies ADD COLUMN IF NOT EXISTS undeclared VARCHAR DEFAULT 'error';
ALTER TABLE anon_column_roles ADD COLUMN IF NOT EXISTS column_index INTEGER;
ALTER TABLE anon_column_roles ADD COLUMN IF NOT EXISTS data_type VARCHAR;
ALTER TABLE anon_column_roles ADD COLUMN IF NOT EXISTS mask VARCHAR;
ALTER TABLE anon_column_roles ADD COLUMN IF NOT EXISTS mask_args MAP(VARCHAR, VARCHAR);

-- Every column the catalog knows, under each name query_table() may be given ('t', 'schema.t',
-- 'db.schema.t'; lower case), with its place in its table and its type. A name that several tables answer
-- to ('patients' in two schemas) keeps the one query_table() reads: a temporary table first, then the
-- current database and schema's.
CREATE OR REPLACE VIEW anon_catalog_columns AS
SELECT table_key, column_name, column_index, data_type
FROM (SELECT unnest([lower(table_name), lower(schema_name || '.' || table_name),
                     lower(database_name || '.' || schema_name || '.' || table_name)]) AS table_key,
             database_name, schema_name, column_name, column_index, data_type
      FROM duckdb_columns())
QUALIFY dense_rank() OVER (PARTITION BY table_key
                           ORDER BY database_name <> 'temp', database_name <> current_database() OR schema_name <> current_schema(),
                                    database_name, schema_name) = 1;

-- How to accept a table whose declared columns moved or changed type: the one step that does.
CREATE OR REPLACE MACRO anon_accept_changed_table_hint(tn) AS
    'if the table is as intended, UPDATE anon_column_roles SET column_index = NULL, data_type = NULL WHERE table_name = '
    || anon_sql_literal(tn) || ', then apply the declarations again';

-- A table's person columns: its declared identifiers and its privacy unit's column, each once (in the
-- spelling first declared). A keyed mask without mask_args['by'] keys on the person when there is exactly
-- one: keyed on the value instead, equal values get equal fakes, and matching the fakes' frequencies to
-- the real values' recovers the real values (docs/masking.md measures it). With several, the declaration
-- must name one; with none, the value keys the mask (the user's risk, documented).
CREATE OR REPLACE VIEW anon_person_columns AS
SELECT table_name, list(column_name ORDER BY lower(column_name)) AS person_columns
FROM (SELECT table_name, min(column_name) AS column_name
      FROM (SELECT table_name, column_name FROM anon_column_roles WHERE role = 'identifier'
            UNION ALL SELECT table_name, unit_column FROM anon_privacy_units)
      GROUP BY table_name, lower(column_name))
GROUP BY table_name;

-- Every declaration, with its table's policy and what is wrong with it, if anything. mask_args is the
-- declared one with the 'by' a keyed mask uses when the declaration names none (the table's one person
-- column: anon_person_columns).
CREATE OR REPLACE VIEW anon_roles AS
SELECT table_name, column_name, role, hierarchy, pseudonymize, mask, mask_args,
       k, mode, l, l_kind, c, t, key_name, max_suppression, undeclared,
       CASE WHEN now_name IS NULL THEN 'the table has no column ''' || column_name || ''''
            WHEN column_index IS NOT NULL AND (now_index <> column_index OR now_type IS DISTINCT FROM data_type)
                 THEN 'column ''' || column_name || ''' is column ' || now_index || ' (' || now_type || '), declared when it was column '
                      || column_index || ' (' || coalesce(data_type, '?') || '): renamed, swapped, retyped or re-created since; '
                      || anon_accept_changed_table_hint(table_name)
            WHEN count(*) OVER (PARTITION BY lower(table_name), lower(column_name)) > 1
                 THEN 'column ''' || column_name || ''' has ' || count(*) OVER (PARTITION BY lower(table_name), lower(column_name))
                      || ' roles'
            WHEN hierarchy IS NOT NULL AND role <> 'quasi_identifier' THEN 'a hierarchy is for quasi_identifier columns only'
            WHEN pseudonymize AND role <> 'identifier' THEN 'pseudonymize is for identifier columns only'
            WHEN pseudonymize AND key_name IS NULL THEN 'pseudonymize needs the policy''s key_name'
            WHEN (mask IS NOT NULL OR mask_args IS NOT NULL) AND role <> 'masked' THEN 'mask and mask_args are for masked columns only'
            WHEN person_ambiguous
                 THEN 'column ''' || column_name || ''': mask ''' || mask || ''' keys its values on the person, and the table has '
                      || len(person_columns) || ' person columns (' || array_to_string(person_columns, ', ')
                      || '): name the one identifying the person in mask_args[''by'']'
            WHEN mask_problem IS NOT NULL THEN 'column ''' || column_name || ''': ' || mask_problem
            WHEN policy_table IS NULL THEN 'the table has no policy (anon_policies)'
            WHEN undeclared IS NULL OR undeclared NOT IN ('error', 'drop') THEN 'the policy''s undeclared must be ''error'' or ''drop'''
       END AS problem,
       mask_spec  -- the mask's row of anon_mask_specs, for anon_mask_sql()
FROM (SELECT d.*, now.column_name AS now_name, now.column_index AS now_index, now.data_type AS now_type,
             CASE WHEN d.role = 'masked' THEN anon_mask_problem(d.mask, d.mask_spec, d.mask_args, d.key_name, now.data_type,
                                                                person.column_name IS NOT NULL)
             END AS mask_problem
      FROM (SELECT r.* REPLACE (CASE WHEN r.role = 'masked' AND s.person_arg = 'optional' AND r.mask_args['by'] IS NULL
                                          AND len(u.person_columns) = 1
                                     THEN map_concat(coalesce(r.mask_args, MAP {}::MAP(VARCHAR, VARCHAR)), MAP {'by': u.person_columns[1]})
                                     ELSE r.mask_args END AS mask_args),
                   p.table_name AS policy_table, p.k, p.mode, p.l, p.l_kind, p.c, p.t, p.key_name, p.max_suppression, p.undeclared,
                   CASE WHEN s.name IS NOT NULL THEN s END AS mask_spec, u.person_columns,
                   coalesce(r.role = 'masked' AND s.person_arg = 'optional' AND r.mask_args['by'] IS NULL
                            AND len(u.person_columns) > 1, false) AS person_ambiguous
            FROM anon_column_roles r LEFT JOIN anon_policies p ON p.table_name = r.table_name
                 LEFT JOIN anon_mask_specs s ON s.name = r.mask
                 LEFT JOIN anon_person_columns u ON u.table_name = r.table_name) d
           LEFT JOIN anon_catalog_columns now ON now.table_key = lower(d.table_name) AND lower(now.column_name) = lower(d.column_name)
           LEFT JOIN anon_catalog_columns person ON person.table_key = lower(d.table_name)
                                                    AND lower(person.column_name) = lower(d.mask_args['by']));

-- What the declarations of one table amount to, as text: changes when any of them changes.
CREATE OR REPLACE MACRO anon_policy_fingerprint(tn) AS
    md5(coalesce((SELECT string_agg(concat_ws('|', column_name, role, hierarchy, pseudonymize, mask, mask_args::VARCHAR), chr(10) ORDER BY column_name)
                  FROM anon_column_roles WHERE table_name = tn), '')
        || chr(10) || coalesce((SELECT concat_ws('|', k, mode, l, l_kind, c, t, key_name, max_suppression, undeclared)
                                FROM anon_policies WHERE table_name = tn), '')
        -- the person columns decide the 'by' of keyed masks that name none (where there is such a mask)
        || chr(10) || coalesce((SELECT person_columns::VARCHAR FROM anon_person_columns WHERE table_name = tn
                                AND EXISTS (SELECT 1 FROM anon_column_roles r JOIN anon_mask_specs s ON s.name = r.mask
                                            WHERE r.table_name = tn AND r.role = 'masked' AND s.person_arg = 'optional'
                                                  AND r.mask_args['by'] IS NULL)), ''));

CREATE OR REPLACE MACRO anon_policy_is_current(tn, fingerprint) AS
    CASE WHEN anon_policy_fingerprint(tn) = fingerprint THEN true
         ELSE error('anonymized(): the declarations of ''' || tn || ''' changed since they were applied: run '
                    || 'duckdb_anon.apply_policies(con) (or execute the text of SELECT anon_compile_policies())') END;

-- The error for columns nobody declared (names in the table's spelling).
CREATE OR REPLACE MACRO anon_undeclared_message(tn, columns) AS
    'anonymized(): table ''' || tn || ''' has columns with no declared role: ' || array_to_string(columns, ', ')
    || ' (declare each in anon_column_roles, as insensitive to publish it unchanged, then apply the declarations;'
    || ' or set the policy''s undeclared to ''drop'')';

-- The error for declared columns that are no longer where, or what, they were when the declarations were
-- applied (`moved`: their declarations; `lowered`, `types`: the table's column names and types now, in order).
CREATE OR REPLACE MACRO anon_identity_message(tn, moved, lowered, types) AS
    'anonymized(): table ''' || tn || ''' no longer has the columns its declarations were applied to: '
    || array_to_string(list_transform(moved, lambda d: '''' || d.name || ''' ' ||
           CASE WHEN NOT list_contains(lowered, lower(d.name)) THEN 'is gone (declared as column ' || d.place || ')'
                WHEN list_position(lowered, lower(d.name)) <> d.place
                     THEN 'is column ' || list_position(lowered, lower(d.name)) || ', declared as column ' || d.place
                ELSE 'is ' || types[d.place] || ', declared as ' || d.type END), '; ')
    || ' (a column renamed, swapped, dropped or retyped, or the table re-created): check the declarations against'
    || ' the table; ' || anon_accept_changed_table_hint(tn);

-- Read-time guard of a compiled release: true, or an error. `declared` lists every declared column as
-- {name, place, type}, taken from the catalog when the declarations were applied; each must still be the
-- column at that place, with that name (in any case) and type: a rename, swap, drop, type change or
-- re-created table moves a name or changes a type, and is refused naming the columns. Then every column of
-- the table not in `declared` is refused, unless `undeclared` is 'drop'. The columns come from the table's
-- binding (names and types, no scan), so the check sees exactly what query_table() reads.
CREATE OR REPLACE MACRO anon_columns_declared(tn, declared, undeclared) AS (
    SELECT CASE WHEN len(moved) > 0 THEN error(anon_identity_message(tn, moved, lowered, types))
                WHEN undeclared = 'drop' OR len(extra) = 0 THEN true
                ELSE error(anon_undeclared_message(tn, extra)) END
    FROM (SELECT list_filter(declared, lambda d: lowered[d.place] IS DISTINCT FROM lower(d.name)
                                                 OR types[d.place] IS DISTINCT FROM d.type) AS moved,
                 list_filter(names, lambda c: NOT list_contains(list_transform(declared, lambda d: lower(d.name)), lower(c))) AS extra,
                 lowered, types
          FROM (SELECT names, list_transform(names, lambda n: lower(n)) AS lowered, types
                FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS names, list_value(*COLUMNS(*)) AS types
                      FROM (SELECT typeof(COLUMNS(* EXCLUDE (__anon_one)))
                            FROM (SELECT 1 AS __anon_one) LEFT JOIN (SELECT * FROM query_table(tn) LIMIT 0) ON true)))));

-- How one declared column is released, as SQL text over the relation `relation_sql` (a quoted alias), or
-- NULL when it is left out: quasi-identifiers (as the relation holds them), sensitive and insensitive
-- columns as they are, pseudonymized identifiers as keyed pseudonyms, masked columns masked
-- (anon_mask_sql, sql/69_masking.sql); other identifiers are left out. anonymized() and the masked copy of a
-- database (sql/77_masked_copy.sql) both release columns by this rule.
CREATE OR REPLACE MACRO anon_released_column_sql(relation_sql, column_name, data_type, role, pseudonymize, mask_spec, mask_args, key_name) AS
    CASE WHEN role IN ('quasi_identifier', 'sensitive', 'insensitive') THEN relation_sql || '.' || anon_sql_identifier(column_name)
         WHEN role = 'identifier' AND pseudonymize
              THEN 'anon_pseudonym(' || relation_sql || '.' || anon_sql_identifier(column_name) || ', ' || anon_sql_literal(key_name)
                   || ') AS ' || anon_sql_identifier(column_name)
         WHEN role = 'masked'
              THEN anon_mask_sql(relation_sql, column_name, data_type, mask_spec, mask_args, key_name) || ' AS ' || anon_sql_identifier(column_name)
    END;

-- The SELECT that publishes one table under its policy, or a SELECT raising the error that stops it.
-- The released columns are named one by one, in the table's order: quasi-identifiers (generalized),
-- sensitive and insensitive columns, pseudonymized identifiers. Other identifiers are left out.
-- Publishing (duckdb_anon.releases, .rerelease) asks for the same SELECT with `person_column` in front, as
-- __anon_person (who each row is, for the differencing audit), and may read `relation` (the table's rows
-- with their QIs already labelled) instead of mondrian(); the guards stay.
CREATE OR REPLACE MACRO anon_policy_sql(tn, person_column := NULL, relation := NULL) AS (
    WITH roles AS (  -- names in the table's own spelling (declarations match columns case-insensitively)
        SELECT r.* REPLACE (coalesce(c.column_name, r.column_name) AS column_name)
        FROM anon_roles r LEFT JOIN (SELECT DISTINCT column_name FROM anon_catalog_columns WHERE table_key = lower(tn)) c
             ON lower(c.column_name) = lower(r.column_name)
        WHERE r.table_name = tn),
    policy AS (SELECT * FROM anon_policies WHERE table_name = tn),
    table_columns AS (  -- the table's columns with their declarations, if any
        SELECT c.column_name, min(c.column_index) AS place, any_value(c.data_type) AS type, any_value(r.role) AS role,
               any_value(r.pseudonymize) AS pseudonymize, any_value(r.mask_spec) AS mask_spec, any_value(r.mask_args) AS mask_args
        FROM anon_catalog_columns c LEFT JOIN roles r ON lower(r.column_name) = lower(c.column_name)
        WHERE c.table_key = lower(tn) GROUP BY c.column_name),
    parts AS (
        SELECT list(column_name ORDER BY column_name) FILTER (WHERE role = 'quasi_identifier') AS qis,
               list(column_name ORDER BY column_name) FILTER (WHERE role = 'sensitive') AS sensitive,
               list({'qi': column_name, 'h': hierarchy} ORDER BY column_name) FILTER (WHERE hierarchy IS NOT NULL) AS hierarchies,
               min(problem) AS problem
        FROM roles),
    released AS (
        -- qualified by an alias naming the release, so that a column gone from the table fails to bind with
        -- DuckDB's 'Values list "anonymized('t')" does not have a column named "c"'
        SELECT list(anon_released_column_sql(anon_sql_identifier('anonymized(''' || tn || ''')'), column_name, type, role,
                                             pseudonymize, mask_spec, mask_args, (SELECT key_name FROM policy)) ORDER BY place)
                   FILTER (WHERE role IN ('quasi_identifier', 'sensitive', 'insensitive', 'masked') OR pseudonymize) AS select_list,
               list(column_name ORDER BY place) FILTER (WHERE role IS NULL) AS undeclared,
               '[' || array_to_string(list('{''name'': ' || anon_sql_literal(column_name) || ', ''place'': ' || place
                                           || ', ''type'': ' || anon_sql_literal(type) || '}' ORDER BY place)
                                      FILTER (WHERE role IS NOT NULL), ', ') || ']' AS declared  -- what each declared column is now
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
        ELSE 'SELECT ' || coalesce(anon_sql_identifier('anonymized(''' || tn || ''')') || '.' || anon_sql_identifier(person_column)
                                   || ' AS __anon_person, ', '')
             || array_to_string(released.select_list, ', ')
             || CASE WHEN relation IS NOT NULL THEN ' FROM ' || anon_sql_identifier(relation) ELSE
                ' FROM mondrian(' || anon_sql_literal(tn) || ', ' || anon_sql_list(parts.qis) || ', ' || p.k::VARCHAR
             || ', mode := ' || anon_sql_literal(p.mode)
             || CASE WHEN parts.hierarchies IS NULL THEN ''
                     ELSE ', hierarchies := MAP {' || array_to_string(list_transform(parts.hierarchies, lambda h:
                              anon_sql_literal(h.qi) || ': ' || anon_sql_literal(h.h)), ', ') || '}' END
             || CASE WHEN p.l IS NULL AND p.t IS NULL THEN ''
                     ELSE ', sensitive := ' || anon_sql_literal(parts.sensitive[1])
                          || coalesce(', l := ' || p.l::VARCHAR, '') || ', l_kind := ' || anon_sql_literal(p.l_kind)
                          || ', c := ' || p.c::VARCHAR || coalesce(', t := ' || p.t::VARCHAR, '') END
             || CASE WHEN coalesce(p.max_suppression, 0) > 0 THEN ', max_suppression := ' || p.max_suppression::VARCHAR ELSE '' END
             || ')' END
             || ' AS ' || anon_sql_identifier('anonymized(''' || tn || ''')') || ' WHERE anon_policy_is_current(' || anon_sql_literal(tn) || ', '
             || anon_sql_literal(anon_policy_fingerprint(tn)) || ') AND anon_columns_declared(' || anon_sql_literal(tn) || ', '
             || released.declared || ', ' || anon_sql_literal(p.undeclared) || ')'
        END
    FROM parts, released LEFT JOIN policy p ON true);

-- The statements that apply the current declarations: record the place and type of every declared column
-- applied for the first time, then (re)create anonymized(table_name), one branch per table with a policy or a
-- declared role. Run its result to apply the declarations.
CREATE OR REPLACE MACRO anon_compile_policies() AS (
    SELECT 'UPDATE anon_column_roles r SET column_index = c.column_index, data_type = c.data_type FROM anon_catalog_columns c '
           || 'WHERE r.column_index IS NULL AND c.table_key = lower(r.table_name) AND lower(c.column_name) = lower(r.column_name); '
           || 'CREATE OR REPLACE MACRO anonymized(table_name) AS TABLE SELECT * FROM query(CASE WHEN false THEN NULL '
           || coalesce(string_agg('WHEN table_name = ' || anon_sql_literal(tn) || ' THEN ' || anon_sql_literal(anon_policy_sql(tn)), ' ' ORDER BY tn), '')
           || ' ELSE error(''anonymized(): argument ''''table_name'''': no policy applied for table '''''' || coalesce(table_name, ''NULL'') || '''''': declare it in '
           || 'anon_column_roles and anon_policies, then run duckdb_anon.apply_policies(con)'') END)'
    FROM (SELECT table_name AS tn FROM anon_policies UNION SELECT table_name FROM anon_column_roles));

-- A digest of everything the applied declarations are compiled from (anon_compile_policies here,
-- anon_compile_privacy_units in 80_privacy_units.sql): the rows of the declaration tables, the columns of the
-- current database's tables and of temporary tables (place, name, type), the current schema, and which fake
-- value pools exist (masking checks them). A new input to either compile belongs here too. (Not the
-- database's name, which a copied file changes: a declaration naming 'db.schema.t' compiled under another
-- name still runs its read-time guards, like any compiled branch.) install(reuse := true), as connect() and
-- the dbt plugin call it, compiles again only when the digest differs from the one recorded at the last
-- apply (anon_applied_declarations()).
CREATE OR REPLACE MACRO anon_declarations_digest() AS md5(concat_ws(chr(30), current_schema(),
    (SELECT string_agg(r::VARCHAR, chr(10) ORDER BY r::VARCHAR) FROM anon_column_roles r),
    (SELECT string_agg(p::VARCHAR, chr(10) ORDER BY p::VARCHAR) FROM anon_policies p),
    (SELECT string_agg(u::VARCHAR, chr(10) ORDER BY u::VARCHAR) FROM anon_privacy_units u),
    (SELECT string_agg(concat_ws('|', pool_locale, pool_kind, len(pool)), chr(10) ORDER BY pool_locale, pool_kind)
     FROM anon_fake_values),
    (SELECT string_agg(concat_ws('|', database_name = 'temp', schema_name, table_name, column_index, column_name, data_type), chr(10)
                       ORDER BY database_name = 'temp', schema_name, table_name, column_index)
     FROM duckdb_columns() WHERE database_name IN (current_database(), 'temp'))));

-- The tables whose anonymized() branch refuses to run, and why: what apply_policies() reports.
CREATE OR REPLACE MACRO anon_policy_problems() AS TABLE
SELECT table_name, replace(regexp_extract(compiled, '(?s)^SELECT error\(''(.*)''\)$', 1), '''''', '''') AS problem  -- (?s): names may hold line breaks
FROM (SELECT tn AS table_name, anon_policy_sql(tn) AS compiled  -- compiled once per table
      FROM (SELECT table_name AS tn FROM anon_policies UNION SELECT table_name FROM anon_column_roles))
WHERE starts_with(compiled, 'SELECT error(')
ORDER BY table_name;
