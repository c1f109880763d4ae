-- Release lineages: who each released row is, the differencing audit at publish time, and a re-release
-- that cannot be differenced. Pure SQL; duckdb_anon.publish_rerelease() drives it.
--
-- Releases often leave the identifier out, so a reader cannot tell which row of one release is which row
-- of the next, but the database can: at publish time each release row's person and class (its QI labels)
-- go to anon_release_people. The person is recorded as a keyed digest (anon_person_digest), never as the
-- raw value: a release database may be shared without its source tables, and a plain digest of small ids
-- is reversed by trying every id. The key (the catalog key) lives beside the database file, in
-- '<file>.anon-key', never in it; duckdb_anon.publishing puts it in the session. Equal values, equal
-- digests: the differencing audit stays exact.

-- The catalog's digest of a person (32 hex digits), or an error when the session lacks the catalog key.
CREATE OR REPLACE MACRO anon_person_digest(value) AS
    CASE WHEN value IS NULL THEN NULL
         WHEN getvariable('duckdb_anon_catalog_key') IS NULL
         THEN error('publishing needs the catalog key of this database in the session: open the database with '
                    || 'duckdb_anon.connect() (the key lives beside the database file, never in it)')
         ELSE left(anon_keyed_hmac(getvariable('duckdb_anon_catalog_key')::VARCHAR, value::VARCHAR), 32) END;

-- Catalog columns added to anon_releases: the person column, the earlier release audited against, what
-- the audit found (NULL when it could not run) and the risk taken, if any (publishing despite a finding).
ALTER TABLE anon_releases ADD COLUMN IF NOT EXISTS person_column VARCHAR;
ALTER TABLE anon_releases ADD COLUMN IF NOT EXISTS previous_release VARCHAR;
ALTER TABLE anon_releases ADD COLUMN IF NOT EXISTS differencing_below_k BIGINT;
ALTER TABLE anon_releases ADD COLUMN IF NOT EXISTS differencing_singled_out BIGINT;
ALTER TABLE anon_releases ADD COLUMN IF NOT EXISTS differencing_warning VARCHAR;

-- One row per released row: the person it belongs to (anon_person_digest) and its class (the QI labels, in the order
-- of anon_releases.qis).
CREATE TABLE IF NOT EXISTS anon_release_people (
    release_name VARCHAR NOT NULL,
    person       VARCHAR NOT NULL,
    labels       VARCHAR[] NOT NULL,
    PRIMARY KEY (release_name, person));

-- One row once the people of this catalog are digests: a database of an older version recorded raw values,
-- which duckdb_anon.publishing.digest_legacy_people() replaces at install (the row is written then).
CREATE TABLE IF NOT EXISTS anon_catalog_people_digested (digested BOOLEAN NOT NULL);

-- The people of the source a re-release did not publish, and why.
CREATE TABLE IF NOT EXISTS anon_release_held (
    release_name VARCHAR NOT NULL,
    person       VARCHAR NOT NULL,
    labels       VARCHAR[],          -- the class the person was released in before, if any
    reason       VARCHAR NOT NULL,
    PRIMARY KEY (release_name, person));

-- The releases of a lineage: `previous` and every release before it (anon_releases.previous_release),
-- depth 0 for `previous`.
CREATE OR REPLACE MACRO anon_lineage(previous) AS TABLE
WITH RECURSIVE chain(release_name, depth) AS (
    SELECT name, 0 FROM anon_releases WHERE name = previous
    UNION ALL
    SELECT r.previous_release, c.depth + 1 FROM chain c JOIN anon_releases r ON r.name = c.release_name
    WHERE r.previous_release IS NOT NULL AND r.previous_release <> r.name AND c.depth < 10000)
SELECT release_name, min(depth) AS depth FROM chain GROUP BY release_name;

-- Every person ever released in the lineage, with their class (a re-release never changes it).
CREATE OR REPLACE MACRO anon_lineage_people(previous) AS TABLE
SELECT p.person, arg_min(p.labels, l.depth) AS labels
FROM anon_release_people p JOIN anon_lineage(previous) l USING (release_name)
GROUP BY p.person;

-- Where each person of the source goes in a re-release after `previous`: (person, labels, status).
--   kept     released before, still in the source, values inside their class's region, and their class
--            still safe: for every earlier release of the lineage, the people of the class in both it and
--            this release are 0 or at least k (an id-matched intersection finds no smaller group), and the
--            kept people are l-diverse (distinct) in `sensitive`
--   joined   never released; their values fall in a safe class's region (the first such class in label
--            order among the classes of released people with the same values, or among all classes when
--            there are none), and at least join_batch such people with l distinct sensitive values join it
--            at once
--   pool     never released and not joined: Mondrian over the pool makes new classes (the driver does it)
--   held: …  released before but not publishable now: moved out of their class; or fewer than
--            least(join_batch, k) remain of their cohort (the people who entered the class in the same
--            release), so that the people of a class who were not in an earlier release are 0 or at least
--            that many; or their class is unsafe
-- The QI values are read as the audits read them (anon_aux_long, anon_label_read, anon_label_covers).
CREATE OR REPLACE MACRO anon_rerelease_assign(source, qis, person_column, previous, k, sensitive, l, join_batch) AS TABLE
WITH
src AS MATERIALIZED (
    SELECT anon_person_digest(__anon_id::VARCHAR) AS person, qi, t, x, kind
    FROM anon_aux_long(source, list_transform(qis, lambda q: lower(q)), lower(person_column))),
sens AS MATERIALIZED (
    SELECT anon_person_digest(COLUMNS([person_column])::VARCHAR) AS person, COLUMNS([coalesce(sensitive, person_column)])::VARCHAR AS s
    FROM query_table(source)),
people AS (SELECT DISTINCT person FROM src),
known AS MATERIALIZED (SELECT * FROM anon_lineage_people(previous)),
classes AS (SELECT DISTINCT labels FROM known),
kinds AS (SELECT DISTINCT qi, kind FROM src),
class_long AS MATERIALIZED (  -- each class's label per QI, parsed once
    SELECT l.labels, l.qi, kinds.kind, anon_label_read(to_json(l.label), kinds.kind) AS region
    FROM (SELECT labels, unnest(list_transform(qis, lambda q: lower(q))) AS qi, unnest(labels) AS label FROM classes) l
         JOIN kinds USING (qi)),
keys AS MATERIALIZED (SELECT person, list(coalesce(t, chr(0)) ORDER BY qi) AS key FROM src GROUP BY person),
alike AS MATERIALIZED (  -- a new person's candidates: the classes of released people with the same values
    SELECT DISTINCT fresh.person, n.labels
    FROM keys fresh JOIN keys same ON same.key = fresh.key JOIN known n ON n.person = same.person
    WHERE NOT EXISTS (SELECT 1 FROM known w WHERE w.person = fresh.person)),
candidates AS (
    SELECT p.person, n.labels, true AS released FROM people p JOIN known n USING (person)
    UNION ALL
    SELECT person, labels, false FROM alike
    UNION ALL  -- a new person nobody released shares values with: every class
    SELECT p.person, c.labels, false FROM people p CROSS JOIN classes c
    WHERE NOT EXISTS (SELECT 1 FROM known n WHERE n.person = p.person)
      AND NOT EXISTS (SELECT 1 FROM alike a WHERE a.person = p.person)),
fit AS MATERIALIZED (
    SELECT c.person, c.labels, c.released,
           bool_and(anon_label_covers(cl.region, s.t, s.x)) AS inside
    FROM candidates c JOIN src s ON s.person = c.person
         JOIN class_long cl ON cl.labels = c.labels AND cl.qi = s.qi AND cl.kind = s.kind
    GROUP BY c.person, c.labels, c.released),
cohorts AS MATERIALIZED (  -- the released still inside their class, with how many of their cohort (the people who
                            -- entered the class in the same release) are too
    SELECT f.person, f.labels, count(*) OVER (PARTITION BY f.labels, e.entered) AS remaining
    FROM fit f JOIN (SELECT p.person, arg_max(p.release_name, l.depth) AS entered
                     FROM anon_release_people p JOIN anon_lineage(previous) l USING (release_name) GROUP BY p.person) e
         USING (person)
    WHERE f.released AND f.inside),
kept AS (SELECT person, labels FROM cohorts WHERE remaining >= least(join_batch, k)),
shared AS (  -- per class and earlier release: how many of the people it had there are kept now
    SELECT p.labels, p.release_name, count(*) AS n
    FROM anon_release_people p JOIN anon_lineage(previous) USING (release_name)
         JOIN kept ON kept.person = p.person AND kept.labels = p.labels
    GROUP BY p.labels, p.release_name),
safe AS (
    SELECT kept.labels FROM kept JOIN sens USING (person) GROUP BY kept.labels
    HAVING count(*) >= k AND count(DISTINCT sens.s) >= coalesce(l, 1)
       AND NOT EXISTS (SELECT 1 FROM shared WHERE shared.labels = kept.labels AND shared.n < k)),
homes AS (SELECT person, min(labels) AS labels FROM fit WHERE NOT released AND inside AND labels IN (SELECT labels FROM safe)
          GROUP BY person),
batches AS (
    SELECT homes.labels FROM homes JOIN sens USING (person)
    GROUP BY homes.labels HAVING count(*) >= join_batch AND count(DISTINCT sens.s) >= coalesce(l, 1)),
joined AS (SELECT person, labels FROM homes WHERE labels IN (SELECT labels FROM batches))
SELECT person, labels, CASE WHEN labels IN (SELECT labels FROM safe) THEN 'kept'
                            ELSE 'held: its class would fall below k (or l) in an intersection with an earlier release' END AS status
FROM kept
UNION ALL
SELECT person, labels, 'held: too few of the people who entered its class with it remain' FROM cohorts
WHERE remaining < least(join_batch, k)
UNION ALL
SELECT person, labels, 'held: its values moved out of its class' FROM fit WHERE released AND NOT inside
UNION ALL
SELECT person, labels, 'joined' FROM joined
UNION ALL
SELECT person, NULL::VARCHAR[], 'pool' FROM people p
WHERE NOT EXISTS (SELECT 1 FROM known n WHERE n.person = p.person) AND NOT EXISTS (SELECT 1 FROM joined j WHERE j.person = p.person);
