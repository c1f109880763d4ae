"""The DuckDB engine: runs an algorithm's generated SQL on a connection, in TEMP tables dropped at the end."""
from __future__ import annotations

import inspect

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import QI, TEMPORAL, Engine, Udf


def duckdb_columns(columns: list[tuple[str, str]]) -> list[QI]:
    """How Mondrian orders DuckDB columns (name, type name): each a QI of the kind the SQL rule
    anon_qi_kind gives (None: it cannot generalize it), a temporal one keyed by anon_numeric_key."""
    con = sql_rules.private_duckdb("anon_qi_kind")
    try:
        kinds = con.execute("SELECT list_transform(?::VARCHAR[], lambda t: anon_qi_kind(t))",
                            [[type_name for _, type_name in columns]]).fetchall()[0][0]
    finally:
        con.close()
    return [QI(name, kind, "anon_numeric_key({x})" if kind == TEMPORAL else "", type_name)
            for (name, type_name), kind in zip(columns, kinds)]


def _batch(udf: Udf):
    """`udf`'s batch function over Arrow arrays, as DuckDB calls it."""
    def call(*columns: pa.Array) -> pa.Array:
        out = udf.fn(*(c.to_numpy(zero_copy_only=False).astype(np.float64) if kind == "DOUBLE" else c.to_pylist()
                       for c, kind in zip(columns, udf.params)))
        return pa.array(out, mask=np.isnan(out), type=pa.float64())
    # DuckDB counts the parameters in the signature
    call.__signature__ = inspect.Signature([inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY)
                                            for i in range(len(udf.params))])
    return call


def create_function(con: duckdb.DuckDBPyConnection, name: str, fn, params: list[str], returns: str, **options) -> None:
    """``con.create_function`` replacing an earlier version. Connections of one process to the same database
    file share one database instance and its functions: a second connection may find the function
    registered by the first, and uses it."""
    try:
        con.remove_function(name)
    except Exception:  # not registered yet on this connection
        pass
    try:
        con.create_function(name, fn, params, returns, **options)
    except duckdb.CatalogException as err:
        if "already exists" not in str(err):
            raise


def register_udfs(con: duckdb.DuckDBPyConnection, udfs: tuple[Udf, ...]) -> None:
    """Register `udfs` on `con` (:func:`create_function`)."""
    for udf in udfs:
        create_function(con, udf.name, _batch(udf) if udf.batch else udf.fn, list(udf.params), udf.returns,
                        type="arrow" if udf.batch else "native", side_effects=udf.fresh,
                        null_handling="special" if udf.batch else "default")


class DuckDBEngine(Engine):
    """Runs the levels on a DuckDB connection, in TEMP tables dropped at the end."""

    dialect = "duckdb"
    numbered = False
    quantiles = True

    def __init__(self, con: duckdb.DuckDBPyConnection, table_name: str | None = None, fn: str = "mondrian"):
        """`table_name`: the source (None: the engine only runs queries, as the DP aggregates' do)."""
        self.con, self.table_name = con, table_name
        self._appended: set[str] = set()
        self._columns = []
        if table_name is None:
            return
        try:
            described = con.execute("DESCRIBE SELECT * FROM query_table(?)", [table_name]).fetchall()
        except duckdb.Error as err:
            raise ValueError(f"{fn}(): argument 'table_name': cannot read {table_name!r}: {err}") from None
        self._columns = duckdb_columns([(row[0], row[1]) for row in described])

    def source(self) -> exp.Expression:
        # query_table() reads the name as mondrian() does; a literal cannot escape its quotes
        return exp.Table(this=exp.Anonymous(this="query_table", expressions=[exp.Literal.string(self.table_name)]))

    def columns(self):
        return self._columns

    def create(self, name, sql):
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")

    def append(self, name, sql):
        if name in self._appended:
            self.con.execute(f"INSERT INTO {name} {sql}")
        else:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
            self._appended.add(name)

    def count(self, name):
        return self.con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]

    def value(self, sql):
        return self.con.execute(sql).fetchall()[0][0]

    def rows(self, sql):
        return self.con.execute(sql).fetchall()

    def drop(self, name):
        self.con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")

    def register_udfs(self, udfs):
        register_udfs(self.con, udfs)

    def result(self, sql):
        return self.con.execute(sql).df()
