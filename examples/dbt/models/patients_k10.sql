-- The published release: every patient, with age, zip and sex generalized so that each combination is
-- shared by at least 10 patients (strict Mondrian). patient_id is left out: a direct identifier would
-- undo the anonymization. A view: it is recomputed from the seed when queried.
{{ config(materialized='view') }}
SELECT * EXCLUDE (patient_id) FROM (
    {{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 10) }}
)
