-- Multi-table releases: a person table (Mondrian on its quasi-identifiers) and an event table
-- (k^m-anonymity on its items) published together, joined by a per-release pseudonym
-- (anon_release_pseudonym, 68_pseudonym_keys.sql). duckdb_anon.publish_tables() writes both tables and the
-- catalog row below in one transaction; the person table is also a frozen release in anon_releases.

-- One row per multi-table release. persons_table is recorded in anon_releases too (its classes, people
-- and differencing audit); the rows Mondrian suppresses (every QI '*') are left out of it. The counts say where rows went: events_dropped are source event rows whose
-- person is not in persons_table (suppressed by Mondrian, or absent from the person table), never released;
-- events_suppressed are rows k^m-anonymity removed; persons_without_events are released persons none of whose
-- events is released.
CREATE TABLE IF NOT EXISTS anon_table_releases (
    name                   VARCHAR PRIMARY KEY,  -- the release name: the pseudonyms are derived from it
    persons_table          VARCHAR NOT NULL,
    events_table           VARCHAR NOT NULL,
    persons_source         VARCHAR NOT NULL,
    events_source          VARCHAR NOT NULL,
    person_column          VARCHAR NOT NULL,     -- in persons_table: the pseudonym
    events_person_column   VARCHAR NOT NULL,     -- in events_table: the same pseudonym
    key_name               VARCHAR NOT NULL,     -- names the session variable holding the key (never the key)
    arguments              VARCHAR NOT NULL,     -- JSON: every argument of the publish_tables() call
    created_at             TIMESTAMP NOT NULL,
    persons_rows           BIGINT NOT NULL,
    persons_suppressed     BIGINT NOT NULL,      -- rows Mondrian suppressed (every QI '*'): left out, with their events
    persons_without_events BIGINT NOT NULL,
    events_rows            BIGINT NOT NULL,
    events_dropped         BIGINT NOT NULL,
    events_suppressed      BIGINT NOT NULL);

-- The join of a multi-table release's two tables, whose pseudonyms must match: one row with the event rows
-- whose pseudonym no person row has (dangling, 0 in a release publish_tables() wrote), the released persons
-- without an event, and the rows of the join. Reads only the release (any client).
CREATE OR REPLACE MACRO table_release_join_check(persons_table, events_table, person_column, events_person_column) AS TABLE
WITH
__anon_checks AS (  -- each table readable and holding its person column, or an error naming the argument
    SELECT p.ok AND e.ok AS ok
    FROM anon_require_columns('table_release_join_check', 'person_column', persons_table, [person_column],
                              table_arg := 'persons_table') p,
         anon_require_columns('table_release_join_check', 'events_person_column', events_table, [events_person_column],
                              table_arg := 'events_table') e),
-- internal CTE names: a user table called p or e must not be read in place of the release
__anon_persons AS (SELECT COLUMNS([person_column])::VARCHAR AS pseudonym
                   FROM anon_read(persons_table, [person_column]) WHERE (SELECT ok FROM __anon_checks)),
__anon_events AS (SELECT COLUMNS([events_person_column])::VARCHAR AS pseudonym
                  FROM anon_read(events_table, [events_person_column]) WHERE (SELECT ok FROM __anon_checks))
SELECT (SELECT count(*) FROM __anon_events WHERE pseudonym IS NULL
            OR pseudonym NOT IN (SELECT pseudonym FROM __anon_persons WHERE pseudonym IS NOT NULL)) AS dangling_events,
       (SELECT count(*) FROM __anon_persons
            WHERE pseudonym NOT IN (SELECT pseudonym FROM __anon_events WHERE pseudonym IS NOT NULL)) AS persons_without_events,
       (SELECT count(*) FROM __anon_events JOIN __anon_persons USING (pseudonym)) AS joined_rows;
