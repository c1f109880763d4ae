"""The column kinds the engines give Mondrian's QIs are the SQL rule's (anon_qi_kind, sql/00_helpers.sql):
a DuckDB table of every type class, its engine's kinds against mondrian()'s own macros on each column."""
import datetime

import duckdb_anon
from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, TEMPORAL
from duckdb_anon.engines.duckdb_engine import DuckDBEngine

TYPES = ["TINYINT", "UBIGINT", "HUGEINT", "DOUBLE", "DECIMAL(9,2)", "DATE", "TIMESTAMP", "TIMESTAMPTZ",
         "VARCHAR", "BOOLEAN", "ENUM('a', 'b')", "TIME", "BLOB", "INTEGER[]", "UUID", "INTERVAL"]


def test_duckdb_kinds_are_the_macros():
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f"c{i} {t}" for i, t in enumerate(TYPES)) + ")")
    kinds = [qi.kind for qi in DuckDBEngine(con, "t").columns()]
    # what mondrian()'s macros say of each column, read independently through typeof() on the table
    said = con.execute("SELECT " + ", ".join(
        f"CASE WHEN anon_qi_kind(typeof(c{i})) IS NULL THEN NULL WHEN anon_is_temporal(c{i}) THEN '{TEMPORAL}' "
        f"WHEN anon_is_numeric(c{i}) THEN '{NUMERIC}' ELSE '{CATEGORICAL}' END" for i in range(len(TYPES)))
        + " FROM (SELECT 1) LEFT JOIN t ON true").fetchall()[0]
    assert kinds == list(said)
    assert set(kinds) == {NUMERIC, TEMPORAL, CATEGORICAL, None}  # every kind occurs, so the comparison bites
    # a temporal QI's key is the SQL's own (anon_numeric_key), read on the connection
    con.execute("INSERT INTO t (c5, c6) VALUES (DATE '2001-02-03', TIMESTAMP '2001-02-03 04:05:06')")
    date_key, stamp_key = (qi.key for qi in DuckDBEngine(con, "t").columns()[5:7])
    got = con.execute(f"SELECT {date_key.format(x='c5')}, {stamp_key.format(x='c6')} FROM t").fetchall()[0]
    utc = datetime.timezone.utc  # microseconds since the epoch, recomputed by Python
    assert got == (datetime.datetime(2001, 2, 3, tzinfo=utc).timestamp() * 1e6,
                   datetime.datetime(2001, 2, 3, 4, 5, 6, tzinfo=utc).timestamp() * 1e6)
    con.close()
