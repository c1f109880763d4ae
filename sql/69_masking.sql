-- Masking functions: fake names, e-mails, phones, addresses and companies; partial masking; keyed numeric
-- and date noise; a per-person date shift; a keyed shuffle of a column; generalization to ranges. Pure SQL.
-- Each works on its own (SELECT anon_fake_name(name, 'clinic', person := patient_id) FROM patients) and
-- as the `masked` role of a declared column (sql/70_roles.sql compiles anon_mask_sql() into anonymized()
-- and into the masked copy of a database).
--
-- Why keyed: a fake value chosen from the real one by a plain hash can be reversed by hashing every
-- candidate name. Every keyed choice here comes from anon_keyed_digest() (sql/68_pseudonym_keys.sql) of
-- the person, under the same session key as the pseudonyms: without the key set, they refuse to run; with
-- it, the same person gets the same fake values in every table, and nothing of the real value reaches the
-- choice but through the keyed digest. Different uses read different 8-hex-digit slots of the digest, so
-- a person's fake first name says nothing about their fake phone.
--
-- Masking is not anonymization: what is not masked (dates, codes, free text, rare combinations) can still
-- single a person out. docs/masking.md says what each function protects and what it does not.

-- The fake value pools, one list per locale and kind ('first_name', 'last_name', 'email_domain', 'phone',
-- 'address', 'company'), loaded once from Faker's value lists by duckdb_anon.load_fake_values(con). Any
-- client may fill it (INSERT a list of its own); the functions pick from whatever it holds.
CREATE TABLE IF NOT EXISTS anon_fake_values (
    pool_locale VARCHAR NOT NULL,
    pool_kind   VARCHAR NOT NULL,
    pool        VARCHAR[] NOT NULL CHECK (len(pool) > 0),
    source      VARCHAR,            -- where the values come from, e.g. 'faker 40.63.0'
    PRIMARY KEY (pool_locale, pool_kind));

-- The keyed digest behind a masked value: of `person` (who the row is about) or, without one, of the value
-- itself; NULL for a NULL value.
CREATE OR REPLACE MACRO anon_mask_digest(value, person, key_name, caller) AS
    CASE WHEN value IS NOT NULL THEN anon_keyed_digest(coalesce(person::VARCHAR, value::VARCHAR), key_name, caller) END;

-- A number in [0, 2^32) from slot 0..7 of a digest (8 hex digits each).
CREATE OR REPLACE MACRO anon_keyed_slot(digest, slot) AS ('0x' || substr(digest, 1 + 8 * slot, 8))::UBIGINT;

-- The pool of a locale and kind, or an error saying how to load it. Uncorrelated: read once per query.
CREATE OR REPLACE MACRO anon_fake_pool(locale, kind, caller) AS (
    SELECT CASE WHEN count(*) = 0
                THEN error(caller || ': argument ''locale'': no fake ' || kind || ' values for locale '
                           || coalesce(anon_sql_literal(locale), 'NULL') || ' in this database: load them once with '
                           || 'duckdb_anon.load_fake_values(con, [' || coalesce(anon_sql_literal(locale), '') || '])')
                ELSE any_value(pool) END
    FROM anon_fake_values WHERE pool_locale = locale AND pool_kind = kind);

CREATE OR REPLACE MACRO anon_fake_pick(digest, slot, locale, kind, caller) AS
    CASE WHEN digest IS NOT NULL
         THEN anon_fake_pool(locale, kind, caller)[1 + (anon_keyed_slot(digest, slot) % len(anon_fake_pool(locale, kind, caller)))::BIGINT] END;

-- Fake values. `value` is only looked at for NULL (kept NULL); the choice depends on the keyed digest of
-- `person` (default: the value). Same key, person and locale: same fake value, in every table and run.
CREATE OR REPLACE MACRO anon_fake_first_name(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_first_name()'), 0, locale, 'first_name', 'anon_fake_first_name()');

CREATE OR REPLACE MACRO anon_fake_last_name(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_last_name()'), 1, locale, 'last_name', 'anon_fake_last_name()');

-- The fake first and last names of the same person, as anon_fake_first_name / anon_fake_last_name give them.
CREATE OR REPLACE MACRO anon_fake_name(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_first_name(value, key_name, person := person, locale := locale) || ' '
    || anon_fake_last_name(value, key_name, person := person, locale := locale);

-- A name as the local part of an e-mail address: accents stripped, only letters and digits, lower case.
CREATE OR REPLACE MACRO anon_email_part(s) AS lower(regexp_replace(strip_accents(s), '[^A-Za-z0-9]', '', 'g'));

-- first.last<2 digits>@<a free e-mail domain of the locale>, from the person's fake first and last names.
CREATE OR REPLACE MACRO anon_fake_email(value, key_name, person := NULL, locale := 'en_US') AS
    anon_email_part(anon_fake_first_name(value, key_name, person := person, locale := locale)) || '.'
    || anon_email_part(anon_fake_last_name(value, key_name, person := person, locale := locale))
    || (anon_keyed_slot(anon_mask_digest(value, person, key_name, 'anon_fake_email()'), 2) % 100)::VARCHAR || '@'
    || anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_email()'), 3, locale, 'email_domain', 'anon_fake_email()');

CREATE OR REPLACE MACRO anon_fake_phone(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_phone()'), 4, locale, 'phone', 'anon_fake_phone()');

CREATE OR REPLACE MACRO anon_fake_address(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_address()'), 5, locale, 'address', 'anon_fake_address()');

CREATE OR REPLACE MACRO anon_fake_company(value, key_name, person := NULL, locale := 'en_US') AS
    anon_fake_pick(anon_mask_digest(value, person, key_name, 'anon_fake_company()'), 6, locale, 'company', 'anon_fake_company()');

-- Partial masking: the first `prefix` and last `suffix` characters kept, `padding` between them. A value
-- too short to hide at least one character becomes the padding alone.
CREATE OR REPLACE MACRO anon_partial(value, prefix, padding, suffix) AS
    CASE WHEN prefix IS NULL OR prefix < 0 THEN error('anon_partial(): argument ''prefix'' must be a whole number >= 0')
         WHEN suffix IS NULL OR suffix < 0 THEN error('anon_partial(): argument ''suffix'' must be a whole number >= 0')
         WHEN padding IS NULL THEN error('anon_partial(): argument ''padding'' is NULL')
         WHEN value IS NULL THEN NULL
         WHEN length(value::VARCHAR) <= prefix + suffix THEN padding::VARCHAR
         ELSE left(value::VARCHAR, prefix) || padding::VARCHAR || right(value::VARCHAR, suffix) END;

-- A keyed uniform number in [0, 1) for a person (default: the value) and a salt (which column, say).
CREATE OR REPLACE MACRO anon_keyed_uniform(value, person, key_name, salt, caller) AS
    anon_keyed_slot(anon_mask_digest(value, coalesce(person::VARCHAR, value::VARCHAR) || chr(31) || coalesce(salt, ''),
                                     key_name, caller), 7) / 4294967296.0;

-- Numeric noise: value * (1 + ratio * u), u uniform in [-1, 1), keyed on the person (default: the value)
-- and the salt. A DOUBLE; the masked role casts it back to the column's type.
CREATE OR REPLACE MACRO anon_noise(value, ratio, key_name, person := NULL, salt := '') AS
    CASE WHEN ratio IS NULL OR ratio < 0 THEN error('anon_noise(): argument ''ratio'' must be a number >= 0')
         WHEN value IS NOT NULL
         THEN value * (1 + ratio * (2 * anon_keyed_uniform(value, person, key_name, salt, 'anon_noise()') - 1)) END;

-- Date noise: a keyed whole number of days in [-days, days] added, per person (default: the value) and salt.
-- Returns a TIMESTAMP (cast a DATE back with ::DATE; the masked role casts to the column's type).
CREATE OR REPLACE MACRO anon_date_noise(value, days, key_name, person := NULL, salt := '') AS
    CASE WHEN days IS NULL OR days < 0 OR days <> trunc(days) THEN error('anon_date_noise(): argument ''days'' must be a whole number >= 0')
         WHEN value IS NOT NULL
         THEN value + to_days(floor(anon_keyed_uniform(value, person, key_name, salt, 'anon_date_noise()') * (2 * days + 1))::INTEGER
                              - days::INTEGER) END;

-- Date shift: one keyed offset in [-days, days] per person, the same for every date of that person in every
-- table and column, so intervals within a person (admission to discharge, visit to visit) are kept.
CREATE OR REPLACE MACRO anon_date_shift(value, days, key_name, person) AS
    anon_date_noise(value, days, key_name, person := person, salt := 'anon_date_shift');

-- Shuffle a column within a relation (a window function: use it in a SELECT list): the rows, ordered by
-- the keyed digest of `row_key` (the row itself, or its primary key), each take the value of the next row
-- (the last takes the first's). A keyed permutation: the column keeps its values and their counts, the
-- link between a value and the rest of its row is cut. Same rows and key, same result.
CREATE OR REPLACE MACRO anon_shuffle(value, key_name, row_key) AS
    CASE WHEN anon_keyed_digest('', key_name, 'anon_shuffle()') IS NULL THEN NULL  -- never: checks the key
         WHEN row_number() OVER (ORDER BY anon_keyed_hmac(getvariable('duckdb_anon_key_' || key_name)::VARCHAR, row_key::VARCHAR), value)
              = count(*) OVER ()
         THEN first_value(value) OVER (ORDER BY anon_keyed_hmac(getvariable('duckdb_anon_key_' || key_name)::VARCHAR, row_key::VARCHAR), value)
         ELSE lead(value) OVER (ORDER BY anon_keyed_hmac(getvariable('duckdb_anon_key_' || key_name)::VARCHAR, row_key::VARCHAR), value) END;

-- A bound of anon_range: whole numbers without a decimal point when the width is whole.
CREATE OR REPLACE MACRO anon_range_bound(x, width) AS
    CASE WHEN width = trunc(width) THEN round(x)::HUGEINT::VARCHAR ELSE round(x, 9)::DOUBLE::VARCHAR END;

-- Generalization of a number to the range of `width` holding it: '[40, 50)'.
CREATE OR REPLACE MACRO anon_range(value, width) AS
    CASE WHEN width IS NULL OR width <= 0 THEN error('anon_range(): argument ''width'' must be a number > 0')
         WHEN value IS NOT NULL
         THEN '[' || anon_range_bound(floor(value / width) * width, width) || ', '
              || anon_range_bound(floor(value / width) * width + width, width) || ')' END;

-- Generalization of a date or time to the start of its year, quarter, month, week or day.
CREATE OR REPLACE MACRO anon_date_trunc(value, unit) AS
    CASE WHEN unit IS NULL OR unit NOT IN ('year', 'quarter', 'month', 'week', 'day')
         THEN error('anon_date_trunc(): argument ''unit'' must be one of year, quarter, month, week, day')
         -- a branch per unit: DuckDB binds date_trunc's unit before the CASE runs (an unknown one would fail
         -- there, unnamed), and a constant unit keeps a DATE a DATE
         WHEN unit = 'year' THEN date_trunc('year', value) WHEN unit = 'quarter' THEN date_trunc('quarter', value)
         WHEN unit = 'month' THEN date_trunc('month', value) WHEN unit = 'week' THEN date_trunc('week', value)
         ELSE date_trunc('day', value) END;

-- The `masked` role (sql/70_roles.sql): a declaration names a mask and its arguments (mask_args, a
-- MAP(VARCHAR, VARCHAR)); anon_mask_sql() turns them into a call of the macro above. Per mask: the macro,
-- its required arguments and their types (in call order), optional named arguments, whether it needs the
-- policy's key, whether it takes 'by' (the column naming the person: 'no', 'optional' or 'required'), the
-- column types it fits ('any', 'numeric', 'temporal'), whether the result is cast back to the column's
-- type (noise keeps an INTEGER an INTEGER), whether the column's name salts it, and whether it takes the
-- whole row (the shuffle). A view, joined by the declarations, so that each is bound once.
CREATE OR REPLACE VIEW anon_mask_specs AS
SELECT * FROM (VALUES
    ('first_name', 'anon_fake_first_name', []::VARCHAR[], []::VARCHAR[], ['locale'], true, 'optional', 'any', false, false, false),
    ('last_name', 'anon_fake_last_name', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('name', 'anon_fake_name', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('email', 'anon_fake_email', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('phone', 'anon_fake_phone', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('address', 'anon_fake_address', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('company', 'anon_fake_company', [], [], ['locale'], true, 'optional', 'any', false, false, false),
    ('partial', 'anon_partial', ['prefix', 'padding', 'suffix'], ['INTEGER', 'VARCHAR', 'INTEGER'], [], false, 'no', 'any', false, false, false),
    ('noise', 'anon_noise', ['ratio'], ['DOUBLE'], [], true, 'optional', 'numeric', true, true, false),
    ('date_noise', 'anon_date_noise', ['days'], ['INTEGER'], [], true, 'optional', 'temporal', true, true, false),
    ('date_shift', 'anon_date_shift', ['days'], ['INTEGER'], [], true, 'required', 'temporal', true, false, false),
    ('shuffle', 'anon_shuffle', [], [], [], true, 'no', 'any', false, false, true),
    ('range', 'anon_range', ['width'], ['DOUBLE'], [], false, 'no', 'numeric', false, false, false),
    ('date_trunc', 'anon_date_trunc', ['unit'], ['VARCHAR'], [], false, 'no', 'temporal', true, false, false))
    AS t(name, macro, params, types, options, keyed, person_arg, fits, cast_back, salted, row_key);

CREATE OR REPLACE MACRO anon_mask_names() AS
    ['first_name', 'last_name', 'name', 'email', 'phone', 'address', 'company', 'partial', 'noise', 'date_noise',
     'date_shift', 'shuffle', 'range', 'date_trunc'];

-- Does a column type (as duckdb_columns() spells it) fit a mask? Only these exact spellings are ever
-- pasted into a CAST by anon_mask_sql().
CREATE OR REPLACE MACRO anon_mask_fits(fits, data_type) AS
    CASE fits WHEN 'any' THEN true
              WHEN 'numeric' THEN regexp_full_match(data_type,
                  '(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL\([0-9]+,[0-9]+\))')
              WHEN 'temporal' THEN regexp_full_match(data_type, '(DATE|TIMESTAMP|TIMESTAMP WITH TIME ZONE|TIMESTAMP_S|TIMESTAMP_MS|TIMESTAMP_NS)')
    END;

-- The arguments a mask takes (`spec`: its row of anon_mask_specs).
CREATE OR REPLACE MACRO anon_mask_arguments(spec) AS
    spec.params || spec.options || CASE WHEN spec.person_arg = 'no' THEN []::VARCHAR[] ELSE ['by'] END;

-- The required arguments of a mask that are not numbers where numbers are due, as words.
CREATE OR REPLACE MACRO anon_mask_bad_numbers(spec, args) AS
    list_transform(list_filter(list_zip(spec.params, spec.types), lambda p:
                       (p[2] = 'INTEGER' AND try_cast(args[p[1]] AS INTEGER) IS NULL) OR (p[2] = 'DOUBLE' AND try_cast(args[p[1]] AS DOUBLE) IS NULL)),
                   lambda p: p[1] || ' must be ' || CASE p[2] WHEN 'INTEGER' THEN 'a whole number' ELSE 'a number' END
                             || ', got ''' || args[p[1]] || '''');

-- What is wrong with a masked declaration, or NULL. `spec`: the mask's row of anon_mask_specs (NULL
-- fields for an unknown mask); `has_by`: whether mask_args['by'] names a column of the table;
-- `data_type`: the masked column's type.
CREATE OR REPLACE MACRO anon_mask_problem(mask, spec, args, key_name, data_type, has_by) AS
    CASE WHEN mask IS NULL THEN 'a masked column needs a mask (one of ' || array_to_string(anon_mask_names(), ', ') || ')'
         WHEN spec.macro IS NULL
              THEN 'mask ''' || mask || ''' is not a masking function (one of ' || array_to_string(anon_mask_names(), ', ') || ')'
         WHEN len(list_filter(spec.params, lambda p: coalesce(args, MAP {})[p] IS NULL)) > 0
              THEN 'mask ''' || mask || ''' needs the argument(s) ' || array_to_string(spec.params, ', ') || ' in mask_args'
         WHEN len(list_filter(map_keys(coalesce(args, MAP {})), lambda a: NOT list_contains(anon_mask_arguments(spec), a))) > 0
              THEN 'mask ''' || mask || ''' takes no argument(s) '
                   || array_to_string(list_filter(map_keys(args), lambda a: NOT list_contains(anon_mask_arguments(spec), a)), ', ')
                   || ' (it takes ' || coalesce(nullif(array_to_string(anon_mask_arguments(spec), ', '), ''), 'none') || ')'
         WHEN len(anon_mask_bad_numbers(spec, args)) > 0
              THEN 'mask ''' || mask || ''': argument(s) ' || array_to_string(anon_mask_bad_numbers(spec, args), '; ')
         WHEN spec.person_arg = 'required' AND args['by'] IS NULL
              THEN 'mask ''' || mask || ''' needs mask_args[''by'']: the column naming the person (one offset per person)'
         WHEN args['by'] IS NOT NULL AND NOT has_by THEN 'mask_args[''by'']: the table has no column ''' || args['by'] || ''''
         WHEN NOT anon_mask_fits(spec.fits, data_type)
              THEN 'mask ''' || mask || ''' is for ' || spec.fits || ' columns, not ' || data_type
         WHEN spec.keyed AND key_name IS NULL THEN 'mask ''' || mask || ''' needs the policy''s key_name'
    END;

-- The SQL expression that masks column `column_name` (of type data_type) of the relation named by
-- `relation_sql` (SQL text: a quoted alias), for a declaration with no problem: a call of the mask's macro
-- with the declared arguments as quoted literals, the key's name, the person's column, the column's name
-- as salt and, for a shuffle, the whole row. `spec`: the mask's row of anon_mask_specs.
CREATE OR REPLACE MACRO anon_mask_sql(relation_sql, column_name, data_type, spec, args, key_name) AS
    CASE WHEN spec.cast_back THEN 'CAST(' ELSE '' END
    || spec.macro || '(' || relation_sql || '.' || anon_sql_identifier(column_name)
    || array_to_string(list_transform(list_zip(spec.params, spec.types), lambda p:
           ', CAST(' || anon_sql_literal(args[p[1]]) || ' AS ' || p[2] || ')'), '')
    || CASE WHEN spec.keyed THEN ', ' || anon_sql_literal(key_name) ELSE '' END
    || CASE WHEN spec.row_key THEN ', ' || relation_sql ELSE '' END
    || CASE WHEN args['by'] IS NULL THEN ''
            WHEN spec.person_arg = 'required' THEN ', ' || relation_sql || '.' || anon_sql_identifier(args['by'])
            ELSE ', person := ' || relation_sql || '.' || anon_sql_identifier(args['by']) END
    || array_to_string(list_transform(list_filter(spec.options, lambda o: args[o] IS NOT NULL), lambda o:
           ', ' || o || ' := ' || anon_sql_literal(args[o])), '')
    || CASE WHEN spec.salted THEN ', salt := ' || anon_sql_literal(column_name) ELSE '' END
    || ')' || CASE WHEN spec.cast_back THEN ' AS ' || data_type || ')' ELSE '' END;
