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

-- The hash of the publish-log row of the budget's last spend (sql/74_publish_log.sql): deleting the newest
-- spends from the log by hand leaves it pointing at a row that is gone.
ALTER TABLE anon_dp_budgets ADD COLUMN IF NOT EXISTS last_spend_hash VARCHAR;

-- Per privacy unit: the total budget, what was spent, what is left, and how many publishes spent it (every
-- one, from the append-only publish log: a replaced release's spend still counts).
CREATE OR REPLACE VIEW anon_dp_ledger AS
SELECT b.unit_table, b.epsilon AS epsilon_total, b.delta AS delta_total, b.epsilon_spent, b.delta_spent,
       greatest(b.epsilon - b.epsilon_spent, 0) AS epsilon_left, greatest(b.delta - b.delta_spent, 0) AS delta_left,
       (SELECT count(*) FROM anon_publish_log l WHERE l.unit_table = b.unit_table) AS releases
FROM anon_dp_budgets b;

-- NULL when the budget of unit table ut agrees with the publish log (spent epsilon and delta are the sums of
-- the unit's log rows, and its last spend is the log's last row for the unit); else what disagrees.
CREATE OR REPLACE MACRO anon_dp_ledger_problem(ut) AS (
    SELECT CASE WHEN abs(b.epsilon_spent - coalesce(l.epsilon, 0)) > 1e-9 * greatest(1, b.epsilon_spent)
                  OR abs(b.delta_spent - coalesce(l.delta, 0)) > 1e-12 + 1e-9 * b.delta_spent
                THEN 'the budget of ' || anon_shown(ut) || ' says epsilon ' || b.epsilon_spent::VARCHAR || ', delta '
                     || b.delta_spent::VARCHAR || ' spent, but its releases in the publish log add up to epsilon '
                     || coalesce(l.epsilon, 0)::VARCHAR || ', delta ' || coalesce(l.delta, 0)::VARCHAR
                     || ' (the ledger was edited by hand)'
                WHEN b.last_spend_hash IS DISTINCT FROM l.last_hash
                THEN 'the last spend recorded for ' || anon_shown(ut) || ' is missing from the publish log (the ledger was edited by hand)'
           END
    FROM anon_dp_budgets b
         LEFT JOIN (SELECT unit_table, sum(epsilon) AS epsilon, sum(delta) AS delta, arg_max(hash, seq) AS last_hash
                    FROM anon_publish_log WHERE unit_table = ut::VARCHAR GROUP BY unit_table) l USING (unit_table)
    WHERE b.unit_table = ut::VARCHAR);

-- The rules of a publish, written once here and run by duckdb_anon.publish_dp() and by the dbt package's
-- dp_release materialization alike (each inside its own transaction).

-- The delta a release spends: none with Laplace noise on public groups (only partition selection and
-- Gaussian noise use delta, and they use all of it).
CREATE OR REPLACE MACRO anon_dp_delta_spent(noise, delta, public) AS
    CASE WHEN noise = 'laplace' AND public THEN 0.0 ELSE coalesce(TRY_CAST(delta AS DOUBLE), 0.0) END;  -- dp_aggregate refuses a bad delta

-- Whose budget a release of relation tn spends: the table holding its people's person column, as lineage
-- finds it through views (anon_dp_lineage, sql/81_dp_arguments.sql); an error naming fn when it cannot tell.
CREATE OR REPLACE MACRO anon_dp_unit_table(fn, tn, puc) AS anon_dp_lineage(fn, tn, puc, NULL)->>'unit_table';

-- Whether a budget of (epsilon, delta) with (epsilon_spent, delta_spent) spent can pay (e, d) more.
CREATE OR REPLACE MACRO anon_dp_budget_fits(epsilon, delta, epsilon_spent, delta_spent, e, d) AS
    epsilon_spent + e <= epsilon * (1 + 1e-12) AND delta_spent + d <= delta * (1 + 1e-12);

-- NULL when the budget of unit table ut can pay (e, d); else why not, in words naming fn and saying what is left.
CREATE OR REPLACE MACRO anon_dp_budget_refusal(fn, ut, e, d) AS (
    SELECT CASE WHEN count(*) = 0 THEN fn || '(): no budget for the people of ' || anon_shown(ut)
                                       || ': set one with set_dp_budget()'
                WHEN NOT bool_and(anon_dp_budget_fits(b.epsilon, b.delta, b.epsilon_spent, b.delta_spent, e, d))
                THEN fn || '(): the release would spend ' || format('epsilon {:g}, delta {:g}', CAST(e AS DOUBLE), CAST(d AS DOUBLE))
                     || ' from the budget of ' || anon_shown(ut) || ', which has '
                     || format('epsilon {:g}, delta {:g}', first(greatest(b.epsilon - b.epsilon_spent, 0)),
                               first(greatest(b.delta - b.delta_spent, 0))) || ' left' END
    FROM anon_dp_budgets b WHERE b.unit_table = ut::VARCHAR);

-- true, or the refusal above as an error.
CREATE OR REPLACE MACRO anon_dp_budget_check(fn, ut, e, d) AS
    CASE WHEN anon_dp_budget_refusal(fn, ut, e, d) IS NULL THEN true ELSE error(anon_dp_budget_refusal(fn, ut, e, d)) END;

-- The SQL text of the debit: one conditional UPDATE of the budget's row, returning what is left. It changes
-- the row only when the spend fits, and two publishes at once conflict on that row (DuckDB aborts one)
-- instead of both passing the check. The values enter as literals.
CREATE OR REPLACE MACRO anon_dp_debit_sql(unit_table, e, d) AS
    'UPDATE anon_dp_budgets SET epsilon_spent = epsilon_spent + ' || CAST(CAST(e AS DOUBLE) AS VARCHAR)
    || ', delta_spent = delta_spent + ' || CAST(CAST(d AS DOUBLE) AS VARCHAR)
    || ' WHERE unit_table = ' || anon_sql_literal(unit_table) || ' AND anon_dp_budget_fits(epsilon, delta, epsilon_spent, delta_spent, '
    || CAST(CAST(e AS DOUBLE) AS VARCHAR) || ', ' || CAST(CAST(d AS DOUBLE) AS VARCHAR) || ')'
    || ' RETURNING epsilon - epsilon_spent AS epsilon_left, delta - delta_spent AS delta_left';

-- The SQL text recording release `name` (the table `target`, its identifier quoted) in anon_dp_releases.
CREATE OR REPLACE MACRO anon_dp_record_sql(name, source_table, unit_table, e, d, arguments, target) AS
    'INSERT OR REPLACE INTO anon_dp_releases SELECT ' || anon_sql_literal(name) || ', ' || anon_sql_literal(source_table)
    || ', ' || anon_sql_literal(unit_table) || ', ' || CAST(CAST(e AS DOUBLE) AS VARCHAR) || ', ' || CAST(CAST(d AS DOUBLE) AS VARCHAR)
    || ', ' || anon_sql_literal(arguments) || ', count(*), current_timestamp::TIMESTAMP FROM ' || target;

-- true, or an error naming fn when the publish log's chain is broken or the budget of ut disagrees with it.
CREATE OR REPLACE MACRO anon_dp_ledger_check(fn, ut) AS
    CASE WHEN coalesce(anon_publish_log_problem(), anon_dp_ledger_problem(ut)) IS NULL THEN true
         ELSE error(fn || '(): ' || coalesce(anon_publish_log_problem(), anon_dp_ledger_problem(ut)) || '; nothing is published') END;

-- The SQL text pointing the budget of ut at the publish log's newest row (run right after appending the spend).
CREATE OR REPLACE MACRO anon_dp_last_spend_sql(ut) AS
    'UPDATE anon_dp_budgets SET last_spend_hash = (SELECT hash FROM anon_publish_log ORDER BY seq DESC LIMIT 1) '
    || 'WHERE unit_table = ' || anon_sql_literal(ut);

-- A budget spent before the publish log existed (a database of an older version): the text of the log row
-- carrying its spent (epsilon, delta) over, or NULL when there is none to carry. Spent never goes down this way.
CREATE OR REPLACE MACRO anon_dp_carry_over_sql(ut) AS (
    SELECT anon_publish_log_sql('carried over', 'spent before the publish log, on ' || b.unit_table, []::VARCHAR[],
                                []::VARCHAR[], b.unit_table, b.epsilon_spent, b.delta_spent, NULL)
    FROM anon_dp_budgets b
    WHERE b.unit_table = ut::VARCHAR AND b.last_spend_hash IS NULL AND (b.epsilon_spent > 0 OR b.delta_spent > 0)
      AND NOT EXISTS (SELECT 1 FROM anon_publish_log l WHERE l.unit_table = ut::VARCHAR));
