-- The locality constraints of age (pattern-preserving anonymization): segments of 20 sorted ages, a tenth
-- of the constraints kept (the defaults random_walk() was measured with).
{{ config(materialized='table') }}
SELECT * FROM localities({{ duckdb_anon.sql_literal(ref('patients')) }}, 'age')
