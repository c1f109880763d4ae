-- A SQL session: run with  python examples/run_sql.py examples/k_anonymize.sql
-- (installs duckdb-anon into an in-memory database and loads the shipped Adult data as `adult`).
-- keep: the columns published besides the QIs; rid (the row number) is kept to measure NCP below.
CREATE TABLE adult_k10 AS
    SELECT * FROM mondrian('adult', ['age', 'workclass', 'education_num', 'marital_status', 'occupation',
                                     'race', 'sex', 'native_country'], 10, 'strict', keep := ['rid', 'class']);
SELECT * FROM release_measures('adult_k10', ['age', 'workclass', 'education_num', 'marital_status',
                                             'occupation', 'race', 'sex', 'native_country'], k := 10);
SELECT ncp_percent FROM ncp('adult_k10', 'adult', ['age', 'workclass', 'education_num', 'marital_status',
                                                  'occupation', 'race', 'sex', 'native_country'], 'rid');
SELECT age, education_num, sex, count(*) AS n FROM adult_k10 GROUP BY ALL ORDER BY n DESC LIMIT 5;
