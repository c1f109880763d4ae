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

-- The rules of a publish, written once here and run by duckdb_anon.publish_dp() and by the dbt package's
-- dp_release materialization alike (each inside its own transaction).

-- The delta a release spends: none with Laplace noise on public groups (only partition selection and
-- Gaussian noise use delta, and they use all of it).
CREATE OR REPLACE MACRO anon_dp_delta_spent(noise, delta, public) AS
    CASE WHEN noise = 'laplace' AND public THEN 0.0 ELSE coalesce(TRY_CAST(delta AS DOUBLE), 0.0) END;  -- dp_aggregate refuses a bad delta

-- Whose budget a release of table tn spends: the table holding its declared person column, or the table
-- itself when its person column is given (puc, the privacy_unit_column); otherwise an error naming fn.
CREATE OR REPLACE MACRO anon_dp_unit_table(fn, tn, puc) AS coalesce(
    (SELECT first(unit_table) FROM anon_privacy_unit_problems WHERE table_name = tn::VARCHAR),
    CASE WHEN puc IS NOT NULL THEN tn::VARCHAR END,
    error(fn || '(): argument ''table'': no privacy unit declared for ' || anon_shown(tn)
          || ' (declare_privacy_unit(), or pass privacy_unit_column)'));

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
