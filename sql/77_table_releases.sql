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
p AS (SELECT COLUMNS([person_column])::VARCHAR AS pseudonym FROM query_table(persons_table)),
e AS (SELECT COLUMNS([events_person_column])::VARCHAR AS pseudonym FROM query_table(events_table))
SELECT (SELECT count(*) FROM e WHERE pseudonym IS NULL OR pseudonym NOT IN (SELECT pseudonym FROM p WHERE pseudonym IS NOT NULL)) AS dangling_events,
       (SELECT count(*) FROM p WHERE pseudonym NOT IN (SELECT pseudonym FROM e WHERE pseudonym IS NOT NULL)) AS persons_without_events,
       (SELECT count(*) FROM e JOIN p USING (pseudonym)) AS joined_rows;
