-- A release where every class also holds at least 3 different diagnoses (distinct l-diversity), so that
-- knowing someone's class does not reveal their diagnosis: Mondrian only makes cuts that keep l on both sides.
{{ config(materialized='table') }}
{{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 5, sensitive='diagnosis', l=3) }}
