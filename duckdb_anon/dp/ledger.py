"""Publishing a DP aggregate against a budget that cannot be overspent.

``publish_dp()`` writes the release table, records it in ``anon_dp_releases`` and debits the budget of its
privacy unit in ``anon_dp_budgets`` (sql/82_dp_ledger.sql), all in one transaction. The debit is one
conditional UPDATE of the budget's row: it changes the row only when the spend fits, so a refused publish
leaves nothing behind, and two publishes at once conflict on that row (DuckDB aborts one) instead of both
passing the check. A publish that loses such a conflict is retried from the start, a few times.

The rules (whose budget, what delta a release spends, whether the budget can pay, the debit's UPDATE, the
release's record) are SQL macros of sql/82_dp_ledger.sql, which the dbt package's ``dp_release``
materialization runs too. SQL text here is fixed text, text those macros return (values as quoted
literals), the release's name quoted by anon_sql_identifier, and parameters.
"""
from __future__ import annotations

import json
import math
import time

import duckdb

from duckdb_anon import publishing
from duckdb_anon.dp import lineage
from duckdb_anon.relations import Catalog
from duckdb_anon.roles import DeclarationError

RETRIES = 20


class BudgetError(DeclarationError):
    """A publish that would spend more than the privacy unit's budget has left."""


def set_dp_budget(con: duckdb.DuckDBPyConnection, unit_table: str, epsilon: float, delta: float) -> None:
    """Declare the total (epsilon, delta) that releases about the people of `unit_table` may spend (the
    table holding their person column). Raising a budget later keeps what was spent."""
    fn = "set_dp_budget"
    if not isinstance(unit_table, str) or not unit_table:
        raise DeclarationError(f"{fn}(): argument 'unit_table' must be a table name, got {unit_table!r}")
    for arg, value, ok in (("epsilon", epsilon, lambda v: v > 0), ("delta", delta, lambda v: 0 <= v < 1)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok(value):
            raise DeclarationError(f"{fn}(): argument '{arg}' must be a finite number "
                                   f"{'> 0' if arg == 'epsilon' else 'in [0, 1)'}, got {value!r}")
    # a budget belongs to the people: held under the name of the table holding their person column only
    catalog, rows = con.execute("SELECT anon_relation_catalog(), anon_dp_units_json()").fetchall()[0]
    refusal = lineage.budget_refusal(Catalog(catalog), json.loads(rows), unit_table)
    if refusal is not None:
        raise DeclarationError(f"{fn}(): argument 'unit_table' {refusal}")
    con.execute("INSERT INTO anon_dp_budgets (unit_table, epsilon, delta) VALUES (?, ?, ?) ON CONFLICT (unit_table) "
                "DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta", [unit_table, epsilon, delta])


def _check_arguments(con, fn, table, group_by, value, aggregates, epsilon, delta, max_groups_contributed, max_rows_per_group,
                     min_value, max_value, noise, public_groups, privacy_unit_column, confidence, allow_large_epsilon) -> None:
    """dp_aggregate()'s own argument checks, run first and named after `fn`: a bad argument costs no work and
    never reads as a refused budget. Its argument 'table_name' is `fn`'s 'table'."""
    try:
        con.execute("SELECT anon_dp_arguments_ok(?, ?, ?, ?, ?, ?, ?, ?, ?, noisy := true, aggregates := ?, epsilon := ?, "
                    "delta := ?, noise := ?, public_groups := ?, confidence := ?, allow_large_epsilon := ?)",
                    [fn, table, list(group_by) if isinstance(group_by, (list, tuple)) else group_by, value,
                     max_groups_contributed, max_rows_per_group, min_value, max_value, privacy_unit_column,
                     list(aggregates) if isinstance(aggregates, (list, tuple)) else aggregates, epsilon, delta, noise,
                     public_groups, confidence, allow_large_epsilon]).fetchall()
        con.execute("SELECT * FROM anon_dp_columns_checked(?, ?, ?, ?, ?)",
                    [fn, table, list(group_by), value, privacy_unit_column]).fetchall()
    except duckdb.Error as err:
        message = str(err).removeprefix("Invalid Input Error: ").split("\n")[0]
        raise DeclarationError(message.replace(f"{fn}(): argument 'table_name'", f"{fn}(): argument 'table'")) from None


def publish_dp(con: duckdb.DuckDBPyConnection, table: str, name: str, *, group_by: list[str], epsilon: float,
               delta: float, max_groups_contributed: int, value: str | None = None, aggregates=("count",),
               max_rows_per_group: int = 1, min_value: float | None = None, max_value: float | None = None,
               noise: str = "laplace", public_groups: str | None = None, privacy_unit_column: str | None = None,
               confidence: float = 0.95, replace: bool = False, allow_large_epsilon: bool = False) -> dict:
    """Run ``dp_aggregate()`` with these arguments into table `name`, record the release and debit
    (epsilon, delta spent) from the budget of the table's privacy unit, in one transaction.

    Returns the recorded release with ``epsilon_left`` and ``delta_left``. Raises BudgetError, saying what
    is left, when the budget cannot pay, and DeclarationError when the unit has no budget or `name`
    exists (and `replace` is false). `table` may be a view or a table of declared people's rows: its unit
    and budget are those people's (dp.lineage). Epsilon above 10 needs `allow_large_epsilon`."""
    fn = "publish_dp"
    _check_arguments(con, fn, table, group_by, value, aggregates, epsilon, delta, max_groups_contributed,
                     max_rows_per_group, min_value, max_value, noise, public_groups, privacy_unit_column, confidence,
                     allow_large_epsilon)
    publishing.check_target(con, fn, name, reads=[table, public_groups], replace=replace)  # again inside the transaction
    try:
        people = lineage.lineage(con, fn, table, privacy_unit_column, public_groups)
    except duckdb.InvalidInputException as err:  # whose people: the macro's message, as a declaration error
        raise DeclarationError(str(err).removeprefix("Invalid Input Error: ")) from None
    if privacy_unit_column is None and not people["declared"]:  # a view: its copy of the people's person column
        privacy_unit_column = people["person_column"]
    arguments = {"table_name": table, "group_by": list(group_by), "value": value, "aggregates": list(aggregates),
                 "epsilon": epsilon, "delta": delta, "max_groups_contributed": max_groups_contributed,
                 "max_rows_per_group": max_rows_per_group, "min_value": min_value, "max_value": max_value,
                 "noise": noise, "public_groups": public_groups, "privacy_unit_column": privacy_unit_column,
                 "confidence": confidence, "allow_large_epsilon": allow_large_epsilon}
    unit, spend_delta = people["unit_table"], con.execute("SELECT anon_dp_delta_spent(?, ?, ?)",
                                                          [noise, delta, public_groups is not None]).fetchall()[0][0]
    target = con.execute("SELECT anon_sql_identifier(?)", [name]).fetchall()[0][0]
    call = ("SELECT * FROM dp_aggregate($table_name, $group_by, value := $value, aggregates := $aggregates, "
            "epsilon := $epsilon, delta := $delta, max_groups_contributed := $max_groups_contributed, "
            "max_rows_per_group := $max_rows_per_group, min_value := $min_value, max_value := $max_value, noise := $noise, "
            "public_groups := $public_groups, privacy_unit_column := $privacy_unit_column, confidence := $confidence, "
            "allow_large_epsilon := $allow_large_epsilon)")
    for attempt in range(RETRIES):
        try:
            with publishing.transaction(con, fn, f"writing release {name!r}"):  # nothing published, nothing spent
                publishing.carry_over(con, unit)
                publishing.check_ledger(con, fn, unit)
                refusal, debit = con.execute("SELECT anon_dp_budget_refusal(?, ?, ?, ?), anon_dp_debit_sql(?, ?, ?)",
                                             [fn, unit, epsilon, spend_delta, unit, epsilon, spend_delta]).fetchall()[0]
                if refusal is not None:
                    no_budget = not con.execute("SELECT 1 FROM anon_dp_budgets WHERE unit_table = ?", [unit]).fetchall()
                    raise (DeclarationError if no_budget else BudgetError)(refusal)
                debited = con.execute(debit).fetchall()  # empty only if the check above raced another debit
                if not debited:
                    raise duckdb.TransactionException(f"{fn}(): the budget of {unit!r} changed during the publish")
                leaf = publishing.check_target(con, fn, name, reads=[table, public_groups], replace=replace)
                con.execute(f"CREATE OR REPLACE TABLE {target} AS {publishing.ordered_sql(call)}", arguments)
                con.execute(con.execute("SELECT anon_dp_record_sql(?, ?, ?, ?, ?, ?, ?)", [name, table, unit, epsilon,
                                        spend_delta, json.dumps(arguments), target]).fetchall()[0][0])
                groups = con.execute("SELECT groups FROM anon_dp_releases WHERE name = ?", [name]).fetchall()[0][0]
                publishing.log(con, fn, name, tables=[leaf], reads=[table, public_groups],
                               record={**arguments, "groups": groups}, unit_table=unit, epsilon=epsilon, delta=spend_delta)
                con.execute(con.execute("SELECT anon_dp_last_spend_sql(?)", [unit]).fetchall()[0][0])
        except duckdb.TransactionException:  # another publish debited the same budget first: start again
            time.sleep(0.01 * (attempt + 1))
            continue
        left_e, left_d = debited[0]
        return {"name": name, "source_table": table, "unit_table": unit, "epsilon": epsilon, "delta": spend_delta,
                "groups": groups, "epsilon_left": left_e, "delta_left": left_d}
    raise BudgetError(f"{fn}(): the budget of {unit!r} stayed locked by other publishes through {RETRIES} attempts")
