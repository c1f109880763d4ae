"""Differentially private aggregates with a privacy unit, in DuckDB (and Spark: duckdb_anon.dp.spark).

``duckdb_anon.install(con)`` registers the noise functions (noise.py) and creates the SQL macros
``dp_aggregate`` and ``dp_bounded_aggregates`` (:func:`macros`) from the plan's text (plan.py), rendered by
the one renderer (engines.base.render) with the plan's placeholders bound to the macros' parameters.
:func:`bounded_aggregates` renders it with literals and runs it through DuckDBEngine. The argument checks and
the relations the plan reads are plain SQL macros (sql/81_dp_arguments.sql); the privacy unit declarations
live in sql/80_privacy_units.sql.
"""
from __future__ import annotations

from functools import lru_cache

import duckdb
import sqlglot
from sqlglot import exp

from duckdb_anon.dp import plan
from duckdb_anon.engines.base import literal
from duckdb_anon.engines.duckdb_engine import DuckDBEngine

_COMMON = ("table_name, group_by, value := NULL, max_groups_contributed := NULL, max_rows_per_group := 1, "
           "min_value := NULL, max_value := NULL, privacy_unit_column := NULL")


def _parameters(noisy: bool) -> dict[str, exp.Expression]:
    """The plan's placeholders, as expressions over the macro's parameters."""
    text = {"max_groups": "max_groups_contributed", "max_rows": "max_rows_per_group",
            "lo": "CAST(min_value AS DOUBLE)", "hi": "CAST(max_value AS DOUBLE)", "valued": "(value IS NOT NULL)",
            "public": "(public_groups IS NOT NULL)" if noisy else "false",
            "key": "CAST(NULL AS VARCHAR)" if noisy else "CAST(key AS VARCHAR)",
            "epsilon": "CAST(epsilon AS DOUBLE)" if noisy else "CAST(NULL AS DOUBLE)",
            "delta": "CAST(delta AS DOUBLE)" if noisy else "CAST(NULL AS DOUBLE)", "noise": "noise",
            "aggregates": "aggregates", "confidence": "CAST(confidence AS DOUBLE)"}
    parsed = {name: sqlglot.parse_one(sql, read="duckdb") for name, sql in text.items()}
    if not noisy:  # the bounded macro has no noise or aggregates: the values plan.bounded_parameters() binds
        parsed.update({name: literal(plan.bounded_parameters()[name]) for name in ("noise", "aggregates")})
    return parsed


def _relations(fn: str, noisy: bool) -> str:
    """The CTEs every DP macro starts with: argument checks (bound first), the plan's source and public groups."""
    extra = (", noisy := true, aggregates := aggregates, epsilon := epsilon, delta := delta, noise := noise, "
             "public_groups := public_groups, confidence := confidence, allow_large_epsilon := allow_large_epsilon") if noisy else ""
    checks = (f"anon_dp_arguments_ok('{fn}', table_name, group_by, value, max_groups_contributed, max_rows_per_group, "
              f"min_value, max_value, privacy_unit_column{extra})")
    public = "anon_dp_public_sql(public_groups, group_by)" if noisy else "anon_dp_public_sql(NULL, group_by)"
    return (f"__dp_args AS (SELECT ok FROM anon_arguments({checks})), "
            f"__dp_checks AS (SELECT u.ok AND c.ok AS ok FROM anon_dp_unit_checked('{fn}', table_name, privacy_unit_column{', public_groups := public_groups' if noisy else ''}) u, "
            f"anon_dp_columns_checked('{fn}', table_name, group_by, value, privacy_unit_column) c), "
            f"__dp_source AS (SELECT * FROM query(anon_after({checks}, "
            f"anon_dp_source_sql(table_name, group_by, value, privacy_unit_column)))), "
            f"__dp_public AS (SELECT * FROM query({public})), ")


def _macro(name: str, signature: str, query: str, noisy: bool, select: str) -> str:
    body = plan.render(query, "duckdb", _parameters(noisy))
    assert body.upper().startswith("WITH ")
    return (f"CREATE OR REPLACE MACRO {name}({signature}) AS TABLE WITH {_relations(name, noisy)}"
            f"__dp_result AS ({body}) "
            f"SELECT * EXCLUDE (__dp_ok) FROM (SELECT {select}, true AS __dp_ok FROM __dp_args, __dp_result "
            f"UNION ALL BY NAME SELECT ok AS __dp_ok FROM __dp_checks WHERE NOT ok)")


def _owner() -> str:
    """SQL: the aggregate a result column belongs to (`c`: its name), from plan.columns(); a chosen bound's
    column belongs to its argument."""
    whens = " ".join(f"WHEN '{column}' THEN '{aggregate}'"
                     for aggregate in plan.AGGREGATES for column in plan.columns([aggregate]))
    return f"CASE c {whens} ELSE c END"


#: the result's columns reporting a bound chosen for the user, present when that argument was left NULL, and
#: then what the choices spent (plan.CHOICE_COLUMNS)
_CHOOSING = "(max_groups_contributed IS NULL OR (value IS NOT NULL AND (min_value IS NULL OR max_value IS NULL)))"
_CHOSEN = ("list_concat(aggregates, [CASE WHEN max_groups_contributed IS NULL THEN 'max_groups_contributed' END, "
           "CASE WHEN value IS NOT NULL AND min_value IS NULL THEN 'min_value' END, "
           "CASE WHEN value IS NOT NULL AND max_value IS NULL THEN 'max_value' END], "
           f"CASE WHEN {_CHOOSING} THEN {list(plan.CHOICE_COLUMNS)} ELSE [] END)")


@lru_cache(maxsize=1)
def macros() -> tuple[str, ...]:
    """The CREATE MACRO statements of the DP aggregates. Rendered once per process: the text depends on the
    plan alone, and rendering it is a noticeable share of an install (docs/performance.md, "Connecting")."""
    aggregate = _macro(
        "dp_aggregate", f"{_COMMON}, aggregates := ['count'], epsilon := NULL, delta := NULL, noise := 'laplace', "
        "public_groups := NULL, confidence := 0.95, allow_large_epsilon := false", plan.released_query(), True,
        f"unnest(__anon_group), COLUMNS(lambda c: list_contains({_CHOSEN}, {_owner()}))")
    bounded = _macro("dp_bounded_aggregates", f"{_COMMON}, key := NULL", plan.bounded_query(), False,
                     "unnest(__anon_group), persons, rows, nsum AS centered_sum")
    return (aggregate, bounded)


def bounded_aggregates(con: duckdb.DuckDBPyConnection, table_name: str, group_by: list[str], *, max_groups_contributed: int,
                       key: str, value: str | None = None, max_rows_per_group: int = 1, min_value: float | None = None,
                       max_value: float | None = None, privacy_unit_column: str | None = None, portable: bool = True):
    """``dp_bounded_aggregates()`` as a DataFrame, ordering a person's groups and rows by MD5 when `portable`
    (the order duckdb_anon.dp.spark.bounded_aggregates(..., portable=True) uses: the same rows are kept on
    both engines). The arguments are checked by the macro's own checks."""
    fn = "dp_bounded_aggregates"
    arguments = [fn, table_name, list(group_by), value, max_groups_contributed, max_rows_per_group, min_value, max_value,
                 privacy_unit_column]
    con.execute("SELECT anon_dp_arguments_ok(?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments).fetchall()
    source = con.execute("SELECT anon_dp_source_sql(?, ?, ?, ?)", [table_name, list(group_by), value, privacy_unit_column]).fetchall()[0][0]
    empty = con.execute("SELECT anon_dp_public_sql(NULL, ?)", [list(group_by)]).fetchall()[0][0]
    parameters = plan.bounded_parameters(int(max_groups_contributed), int(max_rows_per_group), min_value, max_value,
                                         value is not None, key)
    text = plan.render(plan.bounded_query(), "duckdb", {k: literal(v) for k, v in parameters.items()}, portable=portable,
                       __dp_source=sqlglot.parse_one(source, read="duckdb").subquery(),
                       __dp_public=sqlglot.parse_one(empty, read="duckdb").subquery())
    return DuckDBEngine(con).result(f"SELECT unnest(__anon_group), persons, rows, nsum AS centered_sum FROM ({text})")
