-- suggest_roles(): a first draft of a table's column roles, with the evidence behind each suggestion, in
-- the spirit of PostgreSQL Anonymizer's detect() and ARX's attribute classification. Pure SQL.
--
-- It fails closed: a column with no evidence either way is suggested as a quasi-identifier (ARX's default),
-- never as insensitive; only a constant column with no name or value hint, over two rows or more, is
-- suggested insensitive (an empty or one-row table shows nothing about its values, so its columns go by
-- their names, or stay quasi-identifiers). The suggestions are a starting
-- point to review, not a verdict: names and values can mislead in both directions.

-- Which role a column's name suggests, and why ('identifier', 'quasi_identifier', 'sensitive' or NULL).
CREATE OR REPLACE MACRO anon_name_hint(column_name) AS
    CASE WHEN regexp_matches(lower(column_name), '(^|_)(id|uuid|guid|key|mrn|ssn|nhs|nino|passport|iban|account|card|number|no)(_|$)|^[a-z]{0,3}id$|(patient|person|user|customer|client|member|employee|record|row)_?id$')
              THEN {'role': 'identifier', 'why': 'identifier-like name'}
         WHEN regexp_matches(lower(column_name), '(^|_)(e_?mail|phone|mobile|tel|telephone|fax|address|street|ip|ip_address|social_security)(_|$)|e_?mail')
              THEN {'role': 'identifier', 'why': 'contact or address name'}
         WHEN regexp_matches(lower(column_name), '(^|_)(first_|last_|full_|sur|given_|family_|maiden_)?name(_|$)')
              THEN {'role': 'identifier', 'why': 'person-name-like name'}
         WHEN regexp_matches(lower(column_name), '(^|_)(zip|zipcode|postcode|postal|postal_code|birth|birthday|birth_date|date_of_birth|dob|age|sex|gender|race|ethnicity|ethnic|marital|marital_status|city|town|county|state|country|native_country|region|nationality|education|occupation|job)(_|$)|birth|dob')
              THEN {'role': 'quasi_identifier', 'why': 'demographic name'}
         WHEN regexp_matches(lower(column_name), '(diagnos|disease|condition|icd|medication|drug|treatment|income|salary|wage|earning|religio|sexual|health|hiv|criminal|conviction|disability|capital_gain|capital_loss|net_worth|debt)')
              THEN {'role': 'sensitive', 'why': 'sensitive-topic name'}
         WHEN regexp_matches(lower(column_name), '(^|_)(class|label|target|outcome)(_|$)')
              THEN {'role': 'sensitive', 'why': 'an outcome or label column: what a table records about people is usually sensitive'}
    END;

-- Values that read as amounts of money or income brackets ('<=50K', '>50K', '$1,200', '30k'): a number with
-- a comparison, a currency sign or a k/M suffix. A plain number (an age, a count) is not one.
CREATE OR REPLACE MACRO anon_money_like(v) AS
    regexp_full_match(trim(v), '((<=|>=|<|>)\s*[$€£]?\s*[0-9][0-9.,]*\s*[kKmM]?|[$€£]\s*[0-9][0-9.,]*\s*[kKmM]?|[0-9][0-9.,]*\s*[kKmM]\+?)');

-- What the text values of a column look like: 'email', 'phone', 'ssn' (share of non-NULL values matching,
-- at least 0.8) or NULL.
CREATE OR REPLACE MACRO anon_value_kind(email_share, phone_share, ssn_share) AS
    CASE WHEN email_share >= 0.8 THEN 'email' WHEN ssn_share >= 0.8 THEN 'ssn' WHEN phone_share >= 0.8 THEN 'phone' END;

-- One row per column of `table_name`, in the table's order: column_name, column_type, suggested_role,
-- reason, and the evidence: distinct_share (distinct values / rows), unique_share (share of rows whose value
-- no other row has, i.e. rows the column alone singles out), name_hint, value_hint ('email', 'phone', 'money',
-- 'ssn', 'date'), qi_unique_share (on quasi-identifier rows: the share of rows that all suggested
-- quasi-identifiers together single out). NULL counts as a value.
CREATE OR REPLACE MACRO anon_suggest_roles(table_name) AS TABLE
WITH
bound AS (  -- one row of the table's binding, no data: (SELECT 1) keeps a row when the table is empty
    SELECT * EXCLUDE (__anon_one) FROM (SELECT 1 AS __anon_one) LEFT JOIN (SELECT * FROM query_table(table_name) LIMIT 0) ON true),
shape AS (  -- the table's columns, their types and places
    SELECT u.column_name, u.column_type, list_position(n.names, u.column_name) AS position
    FROM (SELECT typeof(COLUMNS(*)) FROM bound) UNPIVOT (column_type FOR column_name IN (COLUMNS(*))) u,
         (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS names FROM bound) n),
cells AS MATERIALIZED (  -- every value as text, with its row
    SELECT * FROM (SELECT row_number() OVER () AS __anon_rid, COLUMNS(*)::VARCHAR FROM query_table(table_name))
    UNPIVOT INCLUDE NULLS (v FOR column_name IN (COLUMNS(* EXCLUDE (__anon_rid))))),
frequencies AS (SELECT column_name, v, count(*) AS n FROM cells GROUP BY ALL),
per_column AS (
    SELECT column_name, sum(n) AS rows, count(*) AS distinct_values, coalesce(sum(n) FILTER (WHERE n = 1), 0) AS unique_rows,
           sum(n) FILTER (WHERE regexp_full_match(v, '[^@\s]+@[^@\s]+\.[^@\s]+')) / nullif(sum(n) FILTER (WHERE v IS NOT NULL), 0) AS email_share,
           sum(n) FILTER (WHERE regexp_full_match(v, '\+?[0-9][0-9 ()./-]{5,}[0-9]') AND length(regexp_replace(v, '[^0-9]', '', 'g')) >= 7)
               / nullif(sum(n) FILTER (WHERE v IS NOT NULL), 0) AS phone_share,
           sum(n) FILTER (WHERE regexp_full_match(v, '[0-9]{3}-[0-9]{2}-[0-9]{4}')) / nullif(sum(n) FILTER (WHERE v IS NOT NULL), 0) AS ssn_share,
           sum(n) FILTER (WHERE anon_money_like(v)) / nullif(sum(n) FILTER (WHERE v IS NOT NULL), 0) AS money_share,
           sum(n) FILTER (WHERE try_cast(v AS DATE) BETWEEN DATE '1900-01-01' AND current_date) / nullif(sum(n) FILTER (WHERE v IS NOT NULL), 0) AS date_share
    FROM frequencies GROUP BY column_name),
evidence AS (
    SELECT s.column_name, s.column_type, s.position, p.rows, p.distinct_values,
           p.distinct_values / greatest(p.rows, 1) AS distinct_share, p.unique_rows / greatest(p.rows, 1) AS unique_share,
           anon_name_hint(s.column_name) AS name_hint,
           CASE WHEN s.column_type = 'VARCHAR' THEN anon_value_kind(p.email_share, p.phone_share, p.ssn_share) END AS value_kind,
           (s.column_type IN ('DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'VARCHAR') AND p.date_share >= 0.8) AS dates,
           (s.column_type = 'VARCHAR' AND p.money_share >= 0.8) AS money
    FROM shape s LEFT JOIN per_column p USING (column_name)),
suggested AS (
    -- Name and value hints come first: a table too small to judge by its values (empty, one row) or a column
    -- holding one value never turns an identifier-like name, an e-mail or a date into "insensitive". Only a
    -- column with no hint at all, holding one value over at least two rows, is suggested insensitive.
    SELECT *,
        CASE WHEN name_hint.role = 'identifier' THEN name_hint
             WHEN value_kind IS NOT NULL THEN {'role': 'identifier', 'why': 'values look like ' || value_kind || ' addresses'}
             WHEN name_hint IS NOT NULL THEN name_hint  -- a unique zip or income is still generalized, not dropped
             WHEN money THEN {'role': 'sensitive', 'why': 'values look like amounts of money or income brackets'}
             WHEN dates THEN {'role': 'quasi_identifier', 'why': 'dates, such as dates of birth'}
             WHEN coalesce(rows, 0) = 0 THEN {'role': 'quasi_identifier', 'why': 'an empty table: no values to judge by, a quasi-identifier until reviewed'}
             WHEN rows = 1 THEN {'role': 'quasi_identifier', 'why': 'one row: too few values to judge by, a quasi-identifier until reviewed'}
             WHEN distinct_values <= 1 THEN {'role': 'insensitive', 'why': 'a single value in ' || rows || ' rows: it carries no information'}
             WHEN unique_share >= 0.9 THEN {'role': 'identifier', 'why': 'singles out most rows alone'}
             ELSE {'role': 'quasi_identifier', 'why': 'no evidence either way: a quasi-identifier until reviewed'} END AS pick
    FROM evidence),
qi_keys AS (  -- per row: the values of all suggested quasi-identifiers together
    SELECT c.__anon_rid, string_agg(coalesce(c.v, chr(0)), chr(1) ORDER BY c.column_name) AS key
    FROM cells c JOIN suggested s ON s.column_name = c.column_name AND s.pick.role = 'quasi_identifier'
    GROUP BY c.__anon_rid),
qi_unique AS (
    SELECT coalesce(sum(n) FILTER (WHERE n = 1), 0) / greatest(sum(n), 1) AS share FROM (SELECT count(*) AS n FROM qi_keys GROUP BY key))
SELECT column_name, column_type, pick.role AS suggested_role,
       pick.why || CASE WHEN unique_share >= 0.001 THEN '; singles out ' || round(100 * unique_share, 1) || ' % of rows alone'
                        ELSE '' END AS reason,
       distinct_share, unique_share, name_hint.role AS name_hint,
       coalesce(value_kind, CASE WHEN dates THEN 'date' WHEN money THEN 'money' END) AS value_hint,
       CASE WHEN pick.role = 'quasi_identifier' THEN (SELECT share FROM qi_unique) END AS qi_unique_share
FROM suggested ORDER BY position;

CREATE OR REPLACE MACRO suggest_roles(table_name) AS TABLE
SELECT * FROM query('SELECT * FROM anon_suggest_roles('
    || CASE WHEN table_name IS NULL OR typeof(table_name) <> 'VARCHAR'
            THEN error('suggest_roles(): argument ''table_name'' must name a table or view, got ' || coalesce(table_name::VARCHAR, 'NULL'))
            ELSE anon_sql_literal(anon_after(anon_name_ok('suggest_roles', 'table_name', table_name), table_name)) END || ')');

-- The suggestions as SQL for the user to review and run: one INSERT into anon_column_roles per column (the
-- reason as a comment), then a policy line with k = 10 to adjust. Names reach the text only as escaped
-- literals; in the heading comment, as a literal made comment-safe (anon_sql_comment).
CREATE OR REPLACE MACRO suggest_roles_sql(table_name) AS (
    SELECT '-- Suggested declarations for ' || anon_sql_comment(anon_sql_literal(table_name))
           || ': review every line before running it.' || chr(10)
           || string_agg('INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('
                         || anon_sql_literal(table_name) || ', ' || anon_sql_literal(column_name) || ', '
                         || anon_sql_literal(suggested_role) || ');  -- ' || anon_sql_comment(reason), chr(10) ORDER BY position)
           || chr(10) || 'INSERT INTO anon_policies (table_name, k) VALUES (' || anon_sql_literal(table_name) || ', 10);' || chr(10)
    FROM (SELECT *, row_number() OVER () AS position FROM suggest_roles(table_name)));
