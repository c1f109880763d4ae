"""Mondrian on Apache Spark: the level-synchronous driver of ``duckdb_anon.mondrian`` run by Spark SQL.

``mondrian(spark, table_or_dataframe, qis, k, ...)`` returns a DataFrame with the release
``mondrian()`` gives on DuckDB: every row and column, each QI replaced by its class's label (text or
typed). Needs the ``spark`` extra (``pip install 'duckdb-anon[spark]'``, pyspark 4.x and Java 17).

Supported: strict and relaxed mode, numeric, date, timestamp and categorical QIs, split rules 'actual'
and 'inherited', categorical order 'appearance' and 'value', hierarchies, l-diversity (distinct, entropy,
recursive), t-closeness and suppression, with mondrian()'s arguments. A hierarchy is a Spark table name or
DataFrame with columns leaf and path (array of strings, leaf to root), as hierarchy tables are on DuckDB;
it is checked and coded by the DuckDB macros on the driver (it holds one row per leaf), and a QI value
is matched to its leaf by its text as Spark casts it to a string.

Determinism. The release depends on the rows' order only through first appearance (categorical order
'appearance') and relaxed mode's sharing of ties. Those read the order `row_order` gives (columns that
order the rows); without it, the rows in order of all their columns, so the release never depends on how
the data is partitioned or which task runs first. Strict mode with categorical order 'value' does not read
the order at all.
"""
from __future__ import annotations

import tempfile

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import CATEGORICAL, QI, Names
from duckdb_anon.engines.spark_engine import SparkEngine, spark_columns
from duckdb_anon.mondrian.driver import check_columns, run
from duckdb_anon.mondrian.models import MODEL_ARGUMENT_MACROS, NO_MODELS, Models, hierarchy_queries, model_arguments

FN = "spark.mondrian"


def check_arguments(qis, k, mode, output, categorical_order, split_rule, row_order, sensitive=None, l=None,
                    l_kind="distinct", c=2, t=None, max_suppression=0) -> None:
    """mondrian()'s own checks of its arguments (anon_mondrian_call, anon_mondrian_shape), run on a private
    DuckDB holding them, with its messages; then row_order, Spark's own argument."""
    import duckdb

    con = sql_rules.private_duckdb("anon_mondrian_call", "anon_mondrian_shape")
    try:
        con.execute("SELECT anon_mondrian_call(?, anon_mondrian_shape(?, ?), 'dataframe', ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
                    [FN, FN, output, list(qis) if isinstance(qis, tuple) else qis, k, mode, categorical_order,
                     split_rule, sensitive, l, l_kind, c, t, max_suppression]).fetchall()
    except duckdb.Error as exc:
        message = str(exc).split("Error: ", 1)[-1]
        if not message.startswith(f"{FN}():"):  # a value DuckDB cannot take as a parameter at all
            message = f"{FN}(): argument 'qis' must be a list of column names, e.g. ['age', 'zip'] ({message})"
        raise ValueError(message) from None
    finally:
        con.close()
    if row_order is not None and (not isinstance(row_order, (list, tuple)) or not row_order
                                  or not all(isinstance(c, str) for c in row_order)):
        raise ValueError(f"{FN}(): argument 'row_order' must be a list of column names")


def privacy_models(spark, columns: list[QI], qis, mode, names: Names, hierarchies=None, sensitive=None, l=None,
                   l_kind="distinct", c=2, t=None, max_suppression=0) -> tuple[Models, tuple[str, str] | None]:
    """mondrian()'s models for a Spark run over a source with the columns `columns` (spark_columns'),
    checked by the SQL macros in an in-memory DuckDB: the Models and the SQL of the hierarchy relations
    (temporary views of the hierarchies coded by DuckDB)."""
    if hierarchies is None and sensitive is None and l is None and t is None and not max_suppression:
        return NO_MODELS, None
    import duckdb

    by_name = {column.name.lower(): column for column in columns}
    # mondrian()'s own macros, on a private DuckDB; the hierarchies registered on this cursor are its own
    con = sql_rules.private_duckdb(*MODEL_ARGUMENT_MACROS)
    try:
        model = model_arguments(con, FN, list(qis), mode, sensitive, l, l_kind, c, t, max_suppression)
        if hierarchies is not None and not isinstance(hierarchies, dict):
            raise ValueError(f"{FN}(): argument 'hierarchies' must map QI names to hierarchy tables or DataFrames")
        local = {}
        for qi, source in (hierarchies or {}).items():  # a hierarchy holds one row per leaf: read on the driver
            rows = (spark.table(source) if isinstance(source, str) else source).toPandas()
            if "path" in rows.columns:
                rows["path"] = [None if p is None else [str(x) for x in p] for p in rows["path"]]
            local[qi] = f"hierarchy of {qi}"
            con.register(local[qi], rows)
        queries = hierarchy_queries(con, FN, local, list(qis))
        views = None
        if queries:
            views = (names.prefix + "hanc_source", names.prefix + "hnode_source")
            for view, sql in zip(views, queries):
                spark.createDataFrame(con.execute(sql).df()).createOrReplaceTempView(view)
            names.made.extend(views)
            views = tuple(f"SELECT * FROM {view}" for view in views)
    except duckdb.Error as exc:
        raise ValueError(str(exc).split("Error: ", 1)[-1]) from None
    finally:
        con.close()
    hier = {h.lower() for h in (hierarchies or {})}
    return Models(hier=tuple(d for d, q in enumerate(qis) if q.lower() in hier),
                  sensitive=by_name[sensitive.lower()] if sensitive is not None else None,
                  model=model if sensitive is not None else None, suppress=float(max_suppression),
                  l_kind=l_kind, c=float(c), l_given=l is not None), views


def mondrian(spark, table, qis, k, *, mode: str = "strict", output: str = "text",
             categorical_order: str = "appearance", split_rule: str = "actual", row_order=None,
             work_dir: str | None = None, into: str | None = None, keep=None, hierarchies=None, sensitive=None,
             l=None, l_kind: str = "distinct", c=2, t=None, max_suppression=0):
    """The Mondrian release of a Spark table (its name) or DataFrame, as a DataFrame.

    Same arguments and release as SQL ``mondrian()`` on DuckDB (see the module's docstring for what is
    supported); `row_order` lists columns that order the rows (see Determinism); `keep` lists the non-QI
    columns to publish, as mondrian()'s `keep` (None: every column). Each level is written
    as Parquet under `work_dir` (default: a temporary folder on the driver, which serves ``local[*]``;
    on a cluster give a folder every executor can reach, e.g. on HDFS or S3); the folder is deleted at
    the end. The release is written there as well and returned read back, unless `into` names a Parquet
    path to write it to instead. `hierarchies` (QI name -> Spark table name or DataFrame of leaf, path),
    `sensitive` with `l`, `l_kind`, `c`, `t`, and `max_suppression` are mondrian()'s privacy models."""
    check_arguments(qis, k, mode, output, categorical_order, split_rule, row_order, sensitive, l, l_kind, c, t,
                    max_suppression)
    frame = spark.table(table) if isinstance(table, str) else table
    source_columns = spark_columns(frame.schema.fields)
    published = check_columns(FN, source_columns, table if isinstance(table, str) else "DataFrame", list(qis),
                              sensitive, keep, table_arg="table")
    columns = frame.columns
    missing = [c for c in (row_order or []) if c.lower() not in {x.lower() for x in columns}]
    if missing:
        raise ValueError(f"{FN}(): argument 'row_order': the table has no column {missing[0]!r}")
    kinds = {column.name.lower(): column.kind for column in source_columns}
    reads_order = mode == "relaxed" or (categorical_order == "appearance"
                                        and any(kinds.get(q.lower()) == CATEGORICAL for q in qis))
    order = (list(row_order or columns)) if reads_order else None  # None: any unique number will do
    names = Names()
    models, hierarchy_sql = privacy_models(spark, source_columns, qis, mode, names, hierarchies, sensitive, l, l_kind,
                                           c, t, max_suppression)
    view = names.prefix + "source"
    work_dir = (tempfile.mkdtemp(prefix="duckdb_anon_spark_") if work_dir is None
                else f"{work_dir.rstrip('/')}/{names.prefix}")
    engine = SparkEngine(spark, frame, view, work_dir)
    target = into or f"{tempfile.mkdtemp(prefix='duckdb_anon_release_')}/release"
    try:
        engine.begin("cells")
        engine.number_source(order)
        sql = run(engine, FN, list(qis), k, mode, output, categorical_order, split_rule, names, published=published,
                  models=models, hierarchies=hierarchy_sql)
        engine.begin("release")
        spark.sql(sql).write.mode("errorifexists").parquet(target)
    finally:
        for name in [*names.made, view]:
            engine.drop(name)
        engine.clean()
        for key in ("spark.jobGroup.id", "spark.job.description"):  # the caller's later jobs are not ours
            spark.sparkContext.setLocalProperty(key, None)
    return spark.read.parquet(target)
