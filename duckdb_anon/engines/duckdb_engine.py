"""The DuckDB engine: runs an algorithm's generated SQL on a connection, in TEMP tables dropped at the end."""
from __future__ import annotations

import re

import duckdb
from sqlglot import exp

from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, QI, TEMPORAL, Engine

_NUMERIC = re.compile(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|"
                      r"FLOAT|DOUBLE|DECIMAL.*)$")
_TEMPORAL = re.compile(r"^(DATE|TIMESTAMP.*)$")
_CATEGORICAL = re.compile(r"^(VARCHAR|BOOLEAN|ENUM\(.*|TIME|TIME WITH TIME ZONE|TIME_NS)$")


def duckdb_column(name: str, type_name: str) -> QI:
    """How Mondrian orders a DuckDB column (kind None: it cannot generalize it), as ``anon_is_generalizable``."""
    if _NUMERIC.match(type_name):
        return QI(name, NUMERIC)
    if _TEMPORAL.match(type_name):
        return QI(name, TEMPORAL, "epoch_us(CAST({x} AS TIMESTAMP))")
    return QI(name, CATEGORICAL if _CATEGORICAL.match(type_name) else None)


class DuckDBEngine(Engine):
    """Runs the levels on a DuckDB connection, in TEMP tables dropped at the end."""

    dialect = "duckdb"
    numbered = False
    quantiles = True

    def __init__(self, con: duckdb.DuckDBPyConnection, table_name: str, fn: str = "mondrian"):
        self.con, self.table_name = con, table_name
        try:
            described = con.execute("DESCRIBE SELECT * FROM query_table(?)", [table_name]).fetchall()
        except duckdb.Error as err:
            raise ValueError(f"{fn}(): argument 'table_name': cannot read {table_name!r}: {err}") from None
        self._columns = [duckdb_column(row[0], row[1]) for row in described]
        self._appended: set[str] = set()

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
