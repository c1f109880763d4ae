-- The locality constraints of age (pattern-preserving anonymization), per segment of 50 sorted ages.
{{ config(materialized='table') }}
SELECT * FROM localities({{ duckdb_anon.sql_literal(ref('patients')) }}, 'age', segment_size := 50)
