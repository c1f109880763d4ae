-- Argument checks shared by the public macros. Pure SQL.
--
-- Scalar arguments are checked when the query is bound: each macro passes its table name through
-- anon_after(<checks>, table_name) into a table function (query_table, query, range), whose arguments
-- DuckDB folds to constants before anything runs, so a bad argument fails with an error naming the
-- function and the argument even when a table is empty. Each check below is true or raises that error.
--
-- Column names given as arguments are matched case-insensitively, as DuckDB's identifiers are. A table
-- that lacks a needed column is read through anon_read (the column then reads NULL, so the binder does not
-- stop on it) and reported at run time by anon_require_columns, naming the argument and the columns.

CREATE OR REPLACE MACRO anon_sql_identifier(s) AS '"' || replace(s::VARCHAR, '"', '""') || '"';

-- x once ok is true (ok: a conjunction of the checks below).
CREATE OR REPLACE MACRO anon_after(ok, x) AS CASE WHEN ok THEN x END;

-- How a constant argument reads in an error message.
CREATE OR REPLACE MACRO anon_shown(x) AS
    CASE WHEN x IS NULL THEN 'NULL' WHEN typeof(x) = 'VARCHAR' THEN '''' || x::VARCHAR || '''' ELSE x::VARCHAR END;

-- A table name is read as query_table() reads it: dot-separated parts, each plain (no '"' and no '.') or
-- in double quotes with every '"' doubled ('clinic."odd.name"'). A '"' elsewhere would reach DuckDB's
-- parser and fail there without naming the function, so it is refused here with the way to write it.
CREATE OR REPLACE MACRO anon_qualified_name_re() AS '^([^".]+|"([^"]|"")*")([.]([^".]+|"([^"]|"")*"))*$';

-- The reserved-name rule, in its one home: a name that starts with __anon_, in any case, is the package's
-- own (its helper columns and relations are named so). A column name given as an argument must not be one:
-- anon_name_ok, anon_columns_ok and anon_columns_present below refuse it, every other SQL check calls this
-- macro, and Python runs it (duckdb_anon.sql_rules.private_duckdb('anon_reserved_name') or its connection).
CREATE OR REPLACE MACRO anon_reserved_name(name) AS starts_with(lower(name::VARCHAR), '__anon_');

-- what: 'a table name' (the default), 'a column name' (also refused when reserved), 'a file path', ...
CREATE OR REPLACE MACRO anon_name_ok(fn, arg, x, what := 'a table name') AS
    anon_check(x IS NULL OR typeof(x) <> 'VARCHAR' OR x::VARCHAR = '', fn, arg,
               'must be ' || what || ', got ' || anon_shown(x))
    AND anon_check(starts_with(what, 'a column name') AND typeof(x) = 'VARCHAR' AND anon_reserved_name(x), fn, arg,
                   'is a reserved __anon_ name: ' || anon_shown(x))
    AND anon_check(starts_with(what, 'a table name') AND typeof(x) = 'VARCHAR'
                   AND NOT regexp_full_match(x::VARCHAR, anon_qualified_name_re()), fn, arg,
                   'is not a table name DuckDB can read: ' || anon_shown(x) || '; a name holding a double quote is written in'
                   || ' double quotes, each quote doubled: ' || anon_sql_literal(anon_sql_identifier(x)));

-- A list of column names: not empty, no NULL, no name twice (case-insensitively), no reserved __anon_ name.
CREATE OR REPLACE MACRO anon_columns_ok(fn, arg, x) AS
    anon_check(x IS NULL OR typeof(x) NOT IN ('VARCHAR[]', '"NULL"[]'), fn, arg,
               'must be a list of column names, e.g. [''age'', ''zip''], got ' || anon_shown(x))
    AND anon_check(len(try_cast(x AS VARCHAR[])) = 0, fn, arg, 'must name at least one column')
    AND anon_check(list_bool_or(list_transform(try_cast(x AS VARCHAR[]), lambda c: c IS NULL OR anon_reserved_name(c))),
                   fn, arg, 'holds NULL or a reserved __anon_ name')
    AND anon_check(len(list_distinct(list_transform(try_cast(x AS VARCHAR[]), lambda c: lower(c)))) < len(try_cast(x AS VARCHAR[])),
                   fn, arg, 'lists a column twice');

-- A finite number (an integer when integer := true) within the bounds given: >= lo (> lo when
-- above := true), <= hi. NULL is accepted only when nullable := true.
CREATE OR REPLACE MACRO anon_number_ok(fn, arg, x, lo := NULL, hi := NULL, above := false, integer := false,
                                       nullable := false) AS
    anon_check(CASE WHEN x IS NULL THEN NOT nullable
                    WHEN NOT regexp_matches(typeof(x), CASE WHEN integer THEN '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$'
                                                            ELSE '^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*)$' END)
                         OR NOT isfinite(try_cast(x AS DOUBLE)) THEN true
                    ELSE (lo IS NOT NULL AND (try_cast(x AS DOUBLE) < lo OR (above AND try_cast(x AS DOUBLE) = lo)))
                         OR (hi IS NOT NULL AND try_cast(x AS DOUBLE) > hi) END,
               fn, arg,
               'must be ' || CASE WHEN integer THEN 'an integer' ELSE 'a number' END
               || CASE WHEN lo IS NULL THEN '' WHEN above THEN ' > ' || lo::VARCHAR ELSE ' >= ' || lo::VARCHAR END
               || CASE WHEN hi IS NULL THEN '' ELSE ' and <= ' || hi::VARCHAR END
               || CASE WHEN nullable THEN ' (or NULL)' ELSE '' END || ', got ' || anon_shown(x));

-- The documented upper bounds of the arguments that size work, one home for SQL and Python (the Python
-- entries read them here). A bound is where a realistic table stops finishing in reasonable time, or where
-- arithmetic on the argument would overflow; the measurements behind each are in docs/install.md, "Bounds".
--   k             2 * k must fit a BIGINT (k > rows is refused at run time)
--   km_check_m    km_check counts itemsets of up to four items, as many as km_anonymize's m
--   synthetic_rows  users * ratings_per_user (the expected rows)
--   noise         synthetic_aux's value_noise and days_noise (2 * noise + 1 must fit the date range)
--   synthetic_items  realistic_ratings' items (it numbers them in a seeded order)
CREATE OR REPLACE MACRO anon_limit(name) AS
    CASE name WHEN 'k' THEN 1000000000 WHEN 'km_m' THEN 4 WHEN 'km_check_m' THEN 4 WHEN 'iterations' THEN 100000
              WHEN 'segment_size' THEN 1000 WHEN 'synthetic_users' THEN 10000000
              WHEN 'synthetic_ratings_per_user' THEN 10000 WHEN 'synthetic_rows' THEN 50000000
              WHEN 'noise' THEN 1000000 WHEN 'synthetic_items' THEN 10000000
              ELSE error('anon_limit(): argument ''name'': no bound called ' || anon_shown(name)) END;

-- true, or an error naming fn and arg when the number x exceeds the bound `limit_name`: checked before the
-- work it sizes starts. NULL and non-numbers pass (the argument's own check reports them).
CREATE OR REPLACE MACRO anon_at_most(fn, arg, x, limit_name) AS
    anon_check(coalesce(try_cast(x AS DOUBLE) > anon_limit(limit_name), false), fn, arg,
               'must be at most ' || anon_limit(limit_name)::VARCHAR || ' (a bound on the work it sizes), got ' || anon_shown(x));

CREATE OR REPLACE MACRO anon_bool_ok(fn, arg, x) AS
    anon_check(x IS NULL OR typeof(x) <> 'BOOLEAN', fn, arg, 'must be true or false, got ' || anon_shown(x));

-- One of a fixed set of words.
CREATE OR REPLACE MACRO anon_choice_ok(fn, arg, x, choices) AS
    anon_check(x IS NULL OR typeof(x) <> 'VARCHAR' OR NOT list_contains(choices, x::VARCHAR), fn, arg,
               'must be one of ' || array_to_string(list_transform(choices, lambda c: '''' || c || ''''), ', ')
               || ', got ' || anon_shown(x));

-- Column names as a VARCHAR[]: the list `names` and, unless NULL, the name `extra`. Any argument binds
-- (what is not a list of names reads NULL), so expressions over a wrong argument never stop the binder
-- before the argument checks report it.
CREATE OR REPLACE MACRO anon_names(names, extra := NULL) AS
    list_filter(list_concat(try_cast(names AS VARCHAR[]), [try_cast(extra AS VARCHAR)]), lambda c: c IS NOT NULL);

-- The names of the list argument `names` and of the single column argument `name`, as anon_names gives
-- them, each checked first (anon_columns_ok, anon_name_ok): a reserved or wrong name is then reported under
-- its own argument, never by a check over the combined list (anon_require_columns) that would race it.
CREATE OR REPLACE MACRO anon_checked_names(fn, names_arg, names, name_arg, name) AS
    anon_names(anon_after(anon_columns_ok(fn, names_arg, names), names),
               anon_after(anon_name_ok(fn, name_arg, name, 'a column name'), name));

-- Every column of table_name, then each of `columns` that it lacks, as NULL (UNION BY NAME matches names
-- case-insensitively), as SQL text built from escaped literals and quoted identifiers only. Given fn (and
-- arg), a table name DuckDB cannot read is an error naming them.
CREATE OR REPLACE MACRO anon_read_sql(table_name, columns, fn := NULL, arg := 'table_name') AS
    'FROM query_table(' || anon_sql_literal(CASE WHEN fn IS NULL OR anon_name_ok(fn, arg, table_name) THEN table_name END) || ')'
    || CASE WHEN len(anon_names(columns)) = 0 THEN ''
            ELSE ' UNION ALL BY NAME (SELECT ' || array_to_string(list_transform(list_distinct(list_transform(anon_names(columns),
                     lambda c: lower(c))), lambda c: 'NULL AS ' || anon_sql_identifier(c)), ', ') || ' LIMIT 0)' END;

-- That read as a relation. (DuckDB refuses a table macro inside its own expansion, as when a measure reads
-- a view over another measure: mondrian() reads through a macro of its own, anon_source.)
CREATE OR REPLACE MACRO anon_read(table_name, columns, fn := NULL, arg := 'table_name') AS TABLE
FROM query(anon_read_sql(table_name, columns, fn := fn, arg := arg));

-- true, or the error of anon_require_columns below, given `have`: the table's columns (lower-cased) -> types.
CREATE OR REPLACE MACRO anon_columns_present(fn, arg, table_name, columns, have, typed := [], type_pattern := '',
                                             type_text := '') AS
    anon_check(list_bool_or(list_transform(anon_names(columns), lambda c: anon_reserved_name(c))), fn, arg,
               'names a reserved __anon_ column: '
               || array_to_string(list_transform(list_filter(anon_names(columns), lambda c: anon_reserved_name(c)),
                                                 lambda c: '''' || c || ''''), ', '))
    AND anon_check(len(list_filter(anon_names(columns), lambda c: NOT list_contains(map_keys(have), lower(c)))) > 0, fn, arg,
               '(table ' || anon_shown(table_name) || ') lacks the column(s) '
               || array_to_string(list_transform(list_filter(anon_names(columns), lambda c: NOT list_contains(map_keys(have), lower(c))),
                                                 lambda c: '''' || c || ''''), ', ')
               || '; it needs ' || array_to_string(anon_names(columns), ', '))
    AND anon_check(len(list_filter(anon_names(typed), lambda c: list_contains(map_keys(have), lower(c))
                                                                AND NOT regexp_matches(have[lower(c)], type_pattern))) > 0, fn, arg,
                   '(table ' || anon_shown(table_name) || ') has the wrong type: '
                   || array_to_string(list_transform(list_filter(anon_names(typed), lambda c: list_contains(map_keys(have), lower(c))
                                                                 AND NOT regexp_matches(have[lower(c)], type_pattern)),
                                                     lambda c: '''' || c || ''' is ' || have[lower(c)]), ', ')
                   || ', not ' || type_text);

-- true, or an error naming fn and the table's argument (`table_arg`) when a column of the table (`names`, as
-- written) has a reserved name: the macros number and carry rows under such names, so the column would be
-- misread or dropped.
CREATE OR REPLACE MACRO anon_no_reserved_columns(fn, table_name, names, table_arg := 'table_name') AS
    anon_check(list_bool_or(list_transform(names, lambda n: anon_reserved_name(n))), fn, table_arg,
               anon_shown(table_name) || ' has a column of a reserved __anon_ name ('
               || array_to_string(list_filter(names, lambda n: anon_reserved_name(n)), ', ')
               || '): read it through a view that renames it');

-- One row (ok := true), or an error naming fn and arg when one of `columns` is a reserved name, when
-- table_name lacks one of them, or when one of `typed` (a subset of them) has a type that `type_pattern` (a regex over DuckDB's type names) does not
-- match; `type_text` says what was expected. The table name is checked too, as argument `table_arg`
-- (default: arg).
CREATE OR REPLACE MACRO anon_require_columns(fn, arg, table_name, columns, typed := [], type_pattern := '',
                                             type_text := '', table_arg := NULL) AS TABLE
SELECT anon_columns_present(fn, arg, table_name, columns, have, typed := typed, type_pattern := type_pattern,
                            type_text := type_text) AS ok
FROM (SELECT map_from_entries(list({'key': lower(column_name), 'value': column_type})) AS have
      FROM (DESCRIBE FROM query_table(anon_after(anon_name_ok(fn, coalesce(table_arg, arg), table_name), table_name::VARCHAR))));

-- One row (ok := true) once `checks` hold: the first relation a macro binds, so its checks fail before any
-- expression over a wrong argument (range's argument is folded to a constant when the query is bound).
CREATE OR REPLACE MACRO anon_arguments(checks) AS TABLE SELECT true AS ok FROM range(anon_after(checks, 1));

-- A type name's kind: numbers of any width are alike, and so are dates and timestamps (anon_qi_kind's
-- numeric and temporal); any other type is its own kind.
CREATE OR REPLACE MACRO anon_type_kind(t) AS
    CASE WHEN anon_qi_kind(t) IN ('numeric', 'temporal') THEN anon_qi_kind(t) ELSE t END;

-- One row (ok := true), or an error naming fn and arg when a column of `columns` has another kind of type
-- in table_name than in like_table (a column either lacks is left to anon_require_columns).
CREATE OR REPLACE MACRO anon_require_same_types(fn, arg, table_name, like_table, columns) AS TABLE
SELECT anon_check(len(differ) > 0, fn, arg,
                  '(table ' || anon_shown(table_name) || ') must have the column types of ' || anon_shown(like_table)
                  || ': ' || array_to_string(differ, ', ')) AS ok
FROM (SELECT list_transform(list_filter(anon_names(columns), lambda c: anon_type_kind(a.have[lower(c)]) <> anon_type_kind(b.have[lower(c)])),
                            lambda c: '''' || c || ''' is ' || a.have[lower(c)] || ', not ' || b.have[lower(c)]) AS differ
      FROM (SELECT map_from_entries(list({'key': lower(column_name), 'value': column_type})) AS have
            FROM (DESCRIBE FROM query_table(table_name::VARCHAR))) a,
           (SELECT map_from_entries(list({'key': lower(column_name), 'value': column_type})) AS have
            FROM (DESCRIBE FROM query_table(like_table::VARCHAR))) b);

-- true, or an error saying that fn needs the Python package: a function whose kernel is a Python UDF
-- (registered by duckdb_anon.install(con)) would otherwise fail, from a client that is not Python, on the
-- kernel's internal name. `api` is the client, as current_setting('duckdb_api') reads it (folded when the
-- query is bound, so the error comes before the kernel is looked up).
CREATE OR REPLACE MACRO anon_python_api_ok(fn, api) AS
    CASE WHEN starts_with(api, 'python') THEN true
         ELSE error(fn || '() needs the duckdb_anon Python package (its kernel is a Python function that '
                    || 'duckdb_anon.connect() or duckdb_anon.install(con) registers), and this client is ' || anon_shown(api)
                    || ': call it from Python; every other duckdb-anon function runs from any client') END;

CREATE OR REPLACE MACRO anon_needs_python(fn) AS anon_python_api_ok(fn, current_setting('duckdb_api'));
