"""The DuckDB engine: runs an algorithm's generated SQL on a connection, in TEMP tables dropped at the end."""
from __future__ import annotations

import duckdb
from sqlglot import exp

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import QI, TEMPORAL, Engine


def duckdb_columns(columns: list[tuple[str, str]]) -> list[QI]:
    """How Mondrian orders DuckDB columns (name, type name): each a QI of the kind the SQL rule
    anon_qi_kind gives (None: it cannot generalize it), a temporal one keyed by anon_numeric_key."""
    con = sql_rules.private_duckdb("anon_qi_kind")
    try:
        kinds = con.execute("SELECT list_transform(?::VARCHAR[], lambda t: anon_qi_kind(t))",
                            [[type_name for _, type_name in columns]]).fetchall()[0][0]
    finally:
        con.close()
    return [QI(name, kind, "anon_numeric_key({x})" if kind == TEMPORAL else "")
            for (name, _), kind in zip(columns, kinds)]


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
        self._columns = duckdb_columns([(row[0], row[1]) for row in described])
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
