-- Helpers shared by every duckdb-anon macro. Pure SQL: they work from any DuckDB connection that opens a
-- database file where duckdb_anon.install() once ran, with or without the Python package.

-- DuckDB's names of the numeric and the temporal types (as typeof() and DESCRIBE write them).
CREATE OR REPLACE MACRO anon_number_types() AS
    '^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$';
CREATE OR REPLACE MACRO anon_temporal_types() AS '^(DATE|TIMESTAMP.*)$';

-- How Mondrian orders a value of the DuckDB type named `t` (as typeof() and DESCRIBE write it):
-- 'temporal' (dates and timestamps: by time, their width a duration), 'numeric' (by magnitude),
-- 'categorical' (text, ENUM, BOOLEAN and times of day: by category), or NULL (cannot be generalized).
-- The one home of the column kinds: the macros below read it, and so do the engines (duckdb_anon.engines).
CREATE OR REPLACE MACRO anon_qi_kind(t) AS
    CASE WHEN regexp_matches(t, anon_temporal_types()) THEN 'temporal'
         WHEN regexp_matches(t, anon_number_types()) THEN 'numeric'
         WHEN regexp_matches(t, '^(VARCHAR|BOOLEAN|ENUM\(.*|TIME|TIME WITH TIME ZONE|TIME_NS)$') THEN 'categorical' END;

-- Is a value's type ordered by magnitude (ranges make sense) rather than by category? Dates and timestamps
-- count: their width is a duration.
CREATE OR REPLACE MACRO anon_is_numeric(x) AS coalesce(anon_qi_kind(typeof(x)) IN ('numeric', 'temporal'), false);

CREATE OR REPLACE MACRO anon_is_temporal(x) AS coalesce(anon_qi_kind(typeof(x)) = 'temporal', false);

-- A DOUBLE that orders numeric and temporal values (microseconds since the epoch for dates and times).
-- try_cast binds for every type, so one expression serves a COLUMNS() list of mixed types.
CREATE OR REPLACE MACRO anon_numeric_key(x) AS
    CASE WHEN anon_is_temporal(x) THEN epoch_us(try_cast(x AS TIMESTAMP))::DOUBLE
         ELSE try_cast(x AS DOUBLE) END;

-- A SQL string literal that cannot escape its quotes (DuckDB strings have no backslash escapes).
CREATE OR REPLACE MACRO anon_sql_literal(s) AS '''' || replace(s::VARCHAR, '''', '''''') || '''';

-- Text made safe for a `--` comment of generated SQL: every control character and Unicode line break
-- (where a comment could end and the rest of the text run as SQL) becomes a space. Names shown in a comment
-- go through it, so a table called "t<newline>DROP TABLE x" stays inside the comment.
CREATE OR REPLACE MACRO anon_sql_comment(s) AS
    regexp_replace(s::VARCHAR, '[\x00-\x1f\x7f\x{85}\x{2028}\x{2029}]', ' ', 'g');

CREATE OR REPLACE MACRO anon_sql_list(items) AS
    '[' || array_to_string(list_transform(items, lambda s: anon_sql_literal(s)), ', ') || ']';

-- Raise a clear error naming the function and the argument at fault when `bad` is true.
CREATE OR REPLACE MACRO anon_check(bad, fn, arg, msg) AS
    CASE WHEN bad THEN error(fn || '(): argument ''' || arg || ''' ' || msg) ELSE true END;

-- One category value as it is written in a text label: a backslash escapes the label's own characters
-- (the separator ',', the braces '{' '}' and the backslash itself), and the texts 'NULL' and '*' read
-- '\NULL' and '\*', so that neither is taken for NULL inside a set or for a suppressed row. A value
-- without those characters is written as it is. NULL (inside a set) is written NULL. The one home of the
-- label rules (with anon_label_text): the level driver calls them, Spark inlines them
-- (duckdb_anon/mondrian/release.py).
CREATE OR REPLACE MACRO anon_label_escape(v) AS
    CASE WHEN v IS NULL THEN 'NULL'
         WHEN v::VARCHAR IN ('NULL', '*') THEN '\' || v::VARCHAR
         ELSE replace(replace(replace(replace(v::VARCHAR, '\', '\\'), ',', '\,'), '{', '\{'), '}', '\}') END;

-- Text label of one class's values of one QI, from its aggregates: lo/hi (by value for numbers),
-- `vals` = the distinct values in the QI's order (categories), `nulls` = whether NULL occurs.
-- Numbers: "lo-hi" (or the value); dates and times: "lo/hi" (ISO 8601 interval); categories: the value,
-- or the set of values present, as "{a,b}", each escaped by anon_label_escape. NULL is a value of its
-- own: a class holding NULL beside other values shows ",NULL" after them, so every member of a class still
-- reads the same text; a class of NULLs alone reads NULL.
CREATE OR REPLACE MACRO anon_label_text(lo, hi, vals, nulls, numeric, temporal) AS
    CASE WHEN numeric THEN
             CASE WHEN lo IS NULL THEN NULL
                  ELSE CASE WHEN lo = hi THEN lo::VARCHAR
                            ELSE lo::VARCHAR || CASE WHEN temporal THEN '/' ELSE '-' END || hi::VARCHAR END
                       || CASE WHEN nulls THEN ',NULL' ELSE '' END END
         WHEN len(vals) = 1 THEN CASE WHEN vals[1] IS NOT NULL THEN anon_label_escape(vals[1]) END
         ELSE '{' || array_to_string(list_transform(vals, lambda v: anon_label_escape(v)), ',') || '}'
    END;
