-- Ages that keep every locality constraint of the original ages, each within half a standard deviation of
-- its own value (pattern-preserving anonymization of one column with the default per-value bounds; the
-- other columns pass through, patient_id is left out).
-- random_walk() needs the Python kernel that the duckdb_anon.dbt plugin registers on dbt's connection.
-- A table, in source order, so that check_localities() (the localities_preserved test) can match its
-- rows to the constraints' row ids.
{{ config(materialized='table') }}
SELECT * EXCLUDE (patient_id)
FROM random_walk({{ duckdb_anon.sql_literal(ref('patients')) }}, 'age',
                 {{ duckdb_anon.sql_literal(ref('patients_age_localities')) }}, seed := 7)
