"""DP aggregates on Apache Spark: the SQL of duckdb_anon.dp.plan rendered for Spark SQL (plan.render, through
engines.base.render) and run by the Spark engine (engines.spark_engine.SparkEngine), which holds the
DataFrames as temporary views for the query and registers the noise functions of noise.py (the same OpenDP
samplers, in vectorized pandas UDFs).

``dp_aggregate(spark, frame, group_by, ...)`` returns a DataFrame with what ``dp_aggregate()`` returns on
DuckDB; ``bounded_aggregates(spark, frame, ...)`` the bounded, noise-free figures of
``dp_bounded_aggregates()``. The arguments are checked by the DuckDB macro that checks them on DuckDB
(on an in-memory database), so both engines refuse the same calls with the same messages. Needs the
``spark`` extra (pyspark 4.x, Java 17).
"""
from __future__ import annotations

from duckdb_anon import sql_rules
from duckdb_anon.dp import noise, plan
from duckdb_anon.engines.base import literal
from duckdb_anon.engines.spark_engine import SparkEngine, spark_name

FN = "spark.dp_aggregate"


def _check(fn: str, frame, group_by, value, privacy_unit_column, public_groups=None, **arguments) -> None:
    """The DuckDB checks of the arguments (anon_dp_arguments_ok, on a private DuckDB holding it), then the
    columns the DataFrames must have."""
    con = sql_rules.private_duckdb("anon_dp_arguments_ok")
    positional = ("max_groups_contributed", "max_rows_per_group", "min_value", "max_value")
    named = "".join(f", {k} := ${k}" for k in arguments if k not in positional)
    con.execute(f"SELECT anon_dp_arguments_ok($fn, 'dataframe', $group_by, $value, {', '.join('$' + k for k in positional)}, "
                f"$unit, public_groups := $public{named})",
                {"fn": fn, "group_by": list(group_by), "value": value, "unit": privacy_unit_column,
                 "public": None if public_groups is None else "dataframe", **arguments}).fetchall()
    con.close()
    if privacy_unit_column is None:
        raise ValueError(f"{fn}(): argument 'privacy_unit_column' must name the person column (Spark has no declarations)")
    missing = [c for c in [*group_by, value, privacy_unit_column] if c is not None and c not in frame.columns]
    if missing:
        raise ValueError(f"{fn}(): argument 'frame' lacks the column(s) {', '.join(map(repr, missing))}")
    if public_groups is not None and any(c not in public_groups.columns for c in group_by):
        raise ValueError(f"{fn}(): argument 'public_groups' must have the group_by columns {group_by}")


def _relations(frame, group_by, value, unit, public_groups) -> dict:
    """The plan's __dp_source and __dp_public over the DataFrames."""
    group = "struct(" + ", ".join(spark_name(g) for g in group_by) + ") AS __anon_group"
    value_sql = f"CAST({spark_name(value)} AS DOUBLE)" if value else "CAST(NULL AS DOUBLE)"
    source = frame.selectExpr(f"{spark_name(unit)} AS __anon_unit", group, f"{value_sql} AS __anon_value")
    if value:
        source = source.where("__anon_value IS NOT NULL")
    public = (public_groups if public_groups is not None else frame.limit(0)).selectExpr(group)
    return {"__dp_source": source, "__dp_public": public}


def _run(spark, query: str, frames: dict, parameters: dict, portable: bool, select: list[str]):
    """`query` on the Spark engine, over `frames` held as views while it runs; the noise functions
    registered (the plan's text names them, though bounded_query() never calls them). The result is computed
    once, here: Spark would run a lazy DataFrame's query again at every action, drawing new noise each time
    (a new release), and the views would have to outlive the call."""
    engine = SparkEngine(spark)
    engine.register_udfs(noise.UDFS)
    with engine.views(**frames) as relations:
        text = plan.render(query, "spark", {k: literal(v) for k, v in parameters.items()}, portable=portable, **relations)
        return engine.result(text).selectExpr("__anon_group.*", *select).localCheckpoint(eager=True)


def bounded_aggregates(spark, frame, group_by: list[str], *, privacy_unit_column: str, max_groups_contributed: int,
                       value: str | None = None, max_rows_per_group: int = 1, min_value: float | None = None,
                       max_value: float | None = None, key: str | None = None, portable: bool = False):
    """Per group the bounded, noise-free persons, rows and centered_sum, as ``dp_bounded_aggregates()``.
    `portable`: order by MD5 (as ``duckdb_anon.dp.bounded_aggregates(..., portable=True)``), so that both
    engines keep the same rows for the same key."""
    fn = "spark.dp_bounded_aggregates"
    _check(fn, frame, group_by, value, privacy_unit_column, max_groups_contributed=max_groups_contributed,
           max_rows_per_group=max_rows_per_group, min_value=min_value, max_value=max_value)
    parameters = plan.bounded_parameters(max_groups_contributed, max_rows_per_group, min_value, max_value,
                                         value is not None, key)
    return _run(spark, plan.bounded_query(), _relations(frame, group_by, value, privacy_unit_column, None), parameters,
                portable, ["persons", "rows", "nsum AS centered_sum"])


def dp_aggregate(spark, frame, group_by: list[str], *, privacy_unit_column: str, epsilon: float, delta: float,
                 value: str | None = None, aggregates=("count",), max_groups_contributed: int | None = None,
                 max_rows_per_group: int = 1, min_value: float | None = None, max_value: float | None = None,
                 noise_kind: str = "laplace", public_groups=None, confidence: float = 0.95):
    """``dp_aggregate()`` on Spark: a DataFrame of the released groups, their noisy aggregates and intervals
    (and the bounds chosen, when left None). `public_groups`: a DataFrame of the groups to release."""
    _check(FN, frame, group_by, value, privacy_unit_column, public_groups, max_groups_contributed=max_groups_contributed,
           max_rows_per_group=max_rows_per_group, min_value=min_value, max_value=max_value, noisy=True,
           aggregates=list(aggregates), epsilon=epsilon, delta=delta, noise=noise_kind, confidence=confidence)
    parameters = dict(epsilon=epsilon, delta=delta, max_groups=max_groups_contributed, max_rows=max_rows_per_group,
                      lo=min_value, hi=max_value, valued=value is not None, noise=noise_kind, aggregates=list(aggregates),
                      public=public_groups is not None, key=None, confidence=confidence)
    chosen = [name for name, given in (("max_groups_contributed", max_groups_contributed), ("min_value", min_value),
                                       ("max_value", max_value)) if given is None and (value or name == "max_groups_contributed")]
    chosen += list(plan.CHOICE_COLUMNS) if chosen else []
    return _run(spark, plan.released_query(), _relations(frame, group_by, value, privacy_unit_column, public_groups),
                parameters, False, [*plan.columns(aggregates), *chosen])
