-- What an adversary might know about some patients from another source (a voter list, say): name (here
-- the id), age, ZIP code and sex of every fifth patient. The linkage_below test of patients_k10 attacks
-- the release with it.
{{ config(materialized='view') }}
SELECT patient_id, age, zip, sex FROM {{ ref('patients') }} WHERE right(patient_id, 1) IN ('0', '5')
