-- Frozen releases and what repeated releases leak. Pure SQL.
--
-- A live view over mondrian() or anonymized() re-partitions whenever the data changes. Whoever reads it
-- before and after a change holds two releases of overlapping data, and can intersect a person's two
-- classes: the people consistent with both labels (the effective class) can be far fewer than k. Frozen
-- releases (a table, made once, recorded in anon_releases; duckdb_anon.publish_release() writes both) do
-- not change under the reader; release_differencing() measures what two releases leak together.

-- One row per frozen release. `method`: 'policy' (anonymized() under the declared policy; `fingerprint`
-- identifies the declarations), 'mondrian' (a mondrian() call; `arguments` holds it) or 'km' (a k^m
-- release, duckdb_anon.publish_km(); `arguments` holds the call). The achieved
-- figures are measured on the frozen table; ncp_percent needs a row identifier to match the source's rows
-- and is NULL without one.
CREATE TABLE IF NOT EXISTS anon_releases (
    name         VARCHAR PRIMARY KEY,
    source_table VARCHAR NOT NULL,
    method       VARCHAR NOT NULL CHECK (method IN ('policy', 'mondrian', 'km')),
    fingerprint  VARCHAR,
    arguments    VARCHAR,
    created_at   TIMESTAMP NOT NULL,
    rows         BIGINT NOT NULL,
    qis          VARCHAR[] NOT NULL,
    k            BIGINT,
    achieved_k   BIGINT,
    sensitive    VARCHAR,
    achieved_l   BIGINT,
    achieved_t   DOUBLE,
    ncp_percent  DOUBLE);

-- Per person present in both releases (matched on id_column): the class sizes in each, and the size of
-- the effective class: the people whose labels equal theirs in release A and in release B.
CREATE OR REPLACE MACRO anon_differencing_people(release_a, release_b, qis, id_column) AS TABLE
WITH
a AS (SELECT COLUMNS([id_column]) AS __anon_id, row(*COLUMNS(qis)) AS __anon_class FROM anon_read(release_a, anon_checked_names('release_differencing', 'qis', qis, 'id_column', id_column))),
b AS (SELECT COLUMNS([id_column]) AS __anon_id, row(*COLUMNS(qis)) AS __anon_class FROM anon_read(release_b, anon_checked_names('release_differencing', 'qis', qis, 'id_column', id_column))),
checked AS (  -- both releases have the columns; an id that repeats would pair rows of different people
    SELECT (SELECT ok FROM anon_require_columns('release_differencing', 'release_a', release_a, anon_names(qis, id_column)))
       AND (SELECT ok FROM anon_require_columns('release_differencing', 'release_b', release_b, anon_names(qis, id_column)))
       AND anon_check((SELECT count(DISTINCT __anon_id) < count(*) FROM a), 'release_differencing', 'id_column',
                      'does not identify the rows of release_a: a value repeats')
       AND anon_check((SELECT count(DISTINCT __anon_id) < count(*) FROM b), 'release_differencing', 'id_column',
                      'does not identify the rows of release_b: a value repeats') AS ok),
sized_a AS (SELECT *, count(*) OVER (PARTITION BY __anon_class) AS class_a FROM a),
sized_b AS (SELECT *, count(*) OVER (PARTITION BY __anon_class) AS class_b FROM b),
both_releases AS (
    SELECT sa.__anon_id, sa.__anon_class AS class_in_a, sb.__anon_class AS class_in_b, sa.class_a, sb.class_b
    FROM sized_a sa JOIN sized_b sb USING (__anon_id), checked WHERE checked.ok)
SELECT __anon_id AS id, class_a, class_b, count(*) OVER (PARTITION BY class_in_a, class_in_b) AS effective_class
FROM both_releases;

-- One row: what intersecting two releases of overlapping data reveals. people_in_both; k (the given k, or
-- the smaller achieved k of the two releases); smallest_effective_class; people_below_k and share_below_k
-- (effective class smaller than k); people_singled_out (effective class of one).
CREATE OR REPLACE MACRO anon_release_differencing(release_a, release_b, qis, id_column, k) AS TABLE
WITH
achieved AS (
    SELECT least((SELECT min(n) FROM (SELECT count(*) AS n FROM (SELECT row(*COLUMNS(qis)) AS c FROM anon_read(release_a, qis)) GROUP BY c)),
                 (SELECT min(n) FROM (SELECT count(*) AS n FROM (SELECT row(*COLUMNS(qis)) AS c FROM anon_read(release_b, qis)) GROUP BY c))) AS smallest),
people AS (SELECT p.*, coalesce(k, a.smallest) AS k_used
           FROM anon_differencing_people(release_a, release_b, qis, id_column) p, achieved a)
SELECT count(*) AS people_in_both, coalesce(k, (SELECT smallest FROM achieved)) AS k,
       min(effective_class) AS smallest_effective_class,
       count(*) FILTER (WHERE effective_class < k_used) AS people_below_k,
       coalesce(count(*) FILTER (WHERE effective_class < k_used) / nullif(count(*), 0), 0) AS share_below_k,
       count(*) FILTER (WHERE effective_class = 1) AS people_singled_out
FROM people;

-- The checked call: arguments checked when the query is bound, then passed on as escaped literals only.
CREATE OR REPLACE MACRO release_differencing(release_a, release_b, qis, id_column, k := NULL) AS TABLE
SELECT * FROM query('SELECT * FROM anon_release_differencing('
    || CASE WHEN release_a IS NULL THEN error('release_differencing(): argument ''release_a'' must name a table')
            ELSE anon_sql_literal(anon_after(anon_name_ok('release_differencing', 'release_a', release_a), release_a)) END || ', '
    || CASE WHEN release_b IS NULL THEN error('release_differencing(): argument ''release_b'' must name a table')
            ELSE anon_sql_literal(anon_after(anon_name_ok('release_differencing', 'release_b', release_b), release_b)) END || ', '
    || CASE WHEN NOT typeof(qis) LIKE '%[]' OR len(qis) = 0 OR try_cast(qis AS VARCHAR[]) IS NULL
                 OR list_contains(list_transform(try_cast(qis AS VARCHAR[]), lambda q: q IS NULL), true)
                 THEN error('release_differencing(): argument ''qis'' must be a non-empty list of column names')
            ELSE anon_sql_list(try_cast(qis AS VARCHAR[])) END || ', '
    || CASE WHEN id_column IS NULL OR typeof(id_column) <> 'VARCHAR'
                 THEN error('release_differencing(): argument ''id_column'' must name a column of both releases')
            ELSE anon_sql_literal(id_column) END || ', '
    || CASE WHEN k IS NULL THEN 'NULL'
            WHEN NOT regexp_matches(typeof(k), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') OR try_cast(k AS BIGINT) < 1
                 THEN error('release_differencing(): argument ''k'' must be an integer of at least 1, got ' || k::VARCHAR)
            ELSE try_cast(k AS BIGINT)::VARCHAR END
    || ')');
