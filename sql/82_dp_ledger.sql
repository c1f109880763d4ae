-- The privacy budget of each privacy unit and the DP releases that spent it. Pure SQL tables and a view;
-- duckdb_anon.publish_dp() writes a release and debits its budget in one transaction.
--
-- Budgets belong to the people, not to a table: every table whose privacy unit reaches the same people
-- (ratings, or events and patients through a key) spends from the budget of the table that holds the
-- person column (`unit_table`, as anon_privacy_unit_problems names it). A publish that would take the
-- spent epsilon or delta above the total is refused; two publishes at once both update the budget's row,
-- so one of them waits or fails and sees the other's debit (DuckDB refuses conflicting updates).

CREATE TABLE IF NOT EXISTS anon_dp_budgets (
    unit_table    VARCHAR PRIMARY KEY,
    epsilon       DOUBLE NOT NULL CHECK (epsilon > 0),
    delta         DOUBLE NOT NULL CHECK (delta >= 0 AND delta < 1),
    epsilon_spent DOUBLE NOT NULL DEFAULT 0,
    delta_spent   DOUBLE NOT NULL DEFAULT 0);

CREATE TABLE IF NOT EXISTS anon_dp_releases (
    name         VARCHAR PRIMARY KEY,  -- the table holding the release
    source_table VARCHAR NOT NULL,
    unit_table   VARCHAR NOT NULL,
    epsilon      DOUBLE NOT NULL,      -- what this release spent
    delta        DOUBLE NOT NULL,
    arguments    VARCHAR NOT NULL,     -- JSON: every argument of the dp_aggregate() call
    groups       BIGINT NOT NULL,      -- rows of the release
    created_at   TIMESTAMP NOT NULL);

-- Per privacy unit: the total budget, what was spent, what is left, and how many releases spent it.
CREATE OR REPLACE VIEW anon_dp_ledger AS
SELECT b.unit_table, b.epsilon AS epsilon_total, b.delta AS delta_total, b.epsilon_spent, b.delta_spent,
       greatest(b.epsilon - b.epsilon_spent, 0) AS epsilon_left, greatest(b.delta - b.delta_spent, 0) AS delta_left,
       (SELECT count(*) FROM anon_dp_releases r WHERE r.unit_table = b.unit_table) AS releases
FROM anon_dp_budgets b;
