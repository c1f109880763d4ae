-- The publish log: one row per publish by any publisher (frozen releases, k^m, multi-table, DP, pattern-
-- preserving, the dbt materializations), appended in the publish's own transaction and never updated or
-- deleted by the package. Pure SQL; duckdb_anon/publishing.py and the dbt package append through
-- anon_publish_log_sql(), the one text that writes a row.
--
-- Why a log beside the catalogs: the catalogs (anon_releases, anon_dp_releases, ...) hold the *current*
-- release of each name, so replacing a release overwrote its record, and the DP budget's spent epsilon no
-- longer matched the releases listed. The log keeps every publish, replaced or not; what a DP unit spent is
-- the sum of its rows. Each row carries the SHA-256 of the previous row's hash and its own fields, a chain:
-- an edit, insertion or deletion of an earlier row by plain SQL breaks it, and the next publish refuses
-- (anon_publish_log_problem). The DP budget row remembers its last spend's hash (sql/82_dp_ledger.sql), so
-- deleting the newest rows is caught too. The chain is not keyed: whoever owns the file and recomputes it
-- can rewrite history; it catches edits, it does not stop the database's owner.

CREATE TABLE IF NOT EXISTS anon_publish_log (
    seq           BIGINT PRIMARY KEY,  -- 1, 2, ...: two publishes at once conflict on it and one retries or fails
    published_at  TIMESTAMP NOT NULL,
    publisher     VARCHAR NOT NULL,    -- the function that published: publish_mondrian, publish_dp, dp_release, ...
    release_name  VARCHAR NOT NULL,
    tables        VARCHAR[] NOT NULL,  -- every table the publish wrote, 'catalog.schema.table' in lower case
    sources       VARCHAR[] NOT NULL,  -- the base tables it read, the same way
    unit_table    VARCHAR,             -- DP: whose budget it spent
    epsilon       DOUBLE NOT NULL,     -- DP: what it spent (0 for the other publishers)
    delta         DOUBLE NOT NULL,
    record        VARCHAR,             -- JSON: the release's catalog row or arguments, as written
    previous_hash VARCHAR NOT NULL,    -- the previous row's hash ('' for the first)
    hash          VARCHAR NOT NULL);

-- A row's hash: SHA-256 over the previous hash and every field, separated by a unit separator.
CREATE OR REPLACE MACRO anon_publish_log_hash(previous_hash, seq, published_at, publisher, release_name, tables, sources,
                                              unit_table, epsilon, delta, record) AS
    sha256(concat_ws(chr(31), previous_hash, seq::VARCHAR, published_at::VARCHAR, publisher, release_name,
                     array_to_string(tables, chr(30)), array_to_string(sources, chr(30)), coalesce(unit_table, ''),
                     epsilon::VARCHAR, delta::VARCHAR, coalesce(record, '')));

-- NULL when the chain holds; else what is wrong, in words.
CREATE OR REPLACE MACRO anon_publish_log_problem() AS (
    WITH l AS (SELECT *, lag(hash, 1, '') OVER (ORDER BY seq) AS expected, row_number() OVER (ORDER BY seq) AS n
               FROM anon_publish_log)
    SELECT CASE WHEN count(*) FILTER (WHERE seq <> n) > 0
                THEN 'the publish log anon_publish_log misses row ' || min(n) FILTER (WHERE seq <> n) || ' (deleted by hand)'
                WHEN count(*) FILTER (WHERE previous_hash <> expected OR hash <> anon_publish_log_hash(previous_hash, seq,
                         published_at, publisher, release_name, tables, sources, unit_table, epsilon, delta, record)) > 0
                THEN 'the publish log anon_publish_log was edited by hand at row '
                     || min(seq) FILTER (WHERE previous_hash <> expected OR hash <> anon_publish_log_hash(previous_hash, seq,
                         published_at, publisher, release_name, tables, sources, unit_table, epsilon, delta, record)) END
    FROM l);

-- The text of the INSERT appending one row (the values as literals, lists of text as list literals): run as
-- it is, inside the publish's transaction.
CREATE OR REPLACE MACRO anon_publish_log_sql(publisher, release_name, tables, sources, unit_table, epsilon, delta, record) AS
    'INSERT INTO anon_publish_log WITH n AS (SELECT coalesce(max(seq), 0) + 1 AS seq, current_timestamp::TIMESTAMP AS ts, '
    || 'coalesce(arg_max(hash, seq), '''') AS prev FROM anon_publish_log), v AS (SELECT n.*, '
    || anon_sql_literal(publisher) || ' AS publisher, ' || anon_sql_literal(release_name) || ' AS release_name, '
    || anon_sql_list(tables) || '::VARCHAR[] AS tables, ' || anon_sql_list(sources) || '::VARCHAR[] AS sources, '
    || coalesce(anon_sql_literal(unit_table), 'NULL') || '::VARCHAR AS unit_table, '
    || CAST(CAST(epsilon AS DOUBLE) AS VARCHAR) || '::DOUBLE AS epsilon, ' || CAST(CAST(delta AS DOUBLE) AS VARCHAR)
    || '::DOUBLE AS delta, ' || coalesce(anon_sql_literal(record), 'NULL') || '::VARCHAR AS record FROM n) '
    || 'SELECT seq, ts, publisher, release_name, tables, sources, unit_table, epsilon, delta, record, prev, '
    || 'anon_publish_log_hash(prev, seq, ts, publisher, release_name, tables, sources, unit_table, epsilon, delta, record) FROM v';

-- Every publish, newest first, as users read the history of a release name.
CREATE OR REPLACE VIEW anon_release_history AS
SELECT seq, published_at, publisher, release_name, tables, sources, unit_table, epsilon, delta, record
FROM anon_publish_log ORDER BY seq DESC;
