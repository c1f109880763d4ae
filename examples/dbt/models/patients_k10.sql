-- The published release: every patient, with age, zip and sex generalized so that each combination is
-- shared by at least 10 patients (strict Mondrian), and the diagnosis. Nothing else is published:
-- anonymize() leaves out every column not listed (patient_id here, and any column added later).
-- A table: a frozen release that does not change between two reads (a live view would re-partition
-- whenever the seed changes, and two reads of it could be intersected).
{{ config(materialized='table') }}
{{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 10, keep=['diagnosis']) }}
