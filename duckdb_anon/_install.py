"""Install the SQL macros into a DuckDB connection.

The numpy kernels are registered as Python UDFs on the connection first (they live only as long as it);
the macros are persistent (not TEMP): dbt and other tools talk through cursors, which do not see TEMP
macros, and persistent macros stay in a database file for plain DuckDB clients. Every statement is
``CREATE OR REPLACE``, so installing twice, or over an older version, upgrades in place.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb


def sql_files() -> list[Path]:
    """The SQL files to run, in order (their names sort in dependency order)."""
    packaged = resources.files("duckdb_anon") / "sql"
    folder = Path(str(packaged))
    if not folder.is_dir():  # a source checkout: the files live at the repository's top level
        folder = Path(__file__).resolve().parent.parent / "sql"
    files = sorted(folder.glob("*.sql"))
    if not files:
        raise FileNotFoundError(f"duckdb_anon: no SQL files found in {folder}")
    return files


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Create or replace every duckdb-anon macro in the connection's current database; returns `con`."""
    from duckdb_anon import __version__, dp
    from duckdb_anon.privacy_units import apply_privacy_units
    from duckdb_anon.roles import apply_policies
    from duckdb_anon.walk import register

    con.complete()  # a pending result would make create_function fail ("unfinished result")
    register(con)  # before the SQL: macros that call a UDF can only be created once it exists
    for path in sql_files():
        con.execute(path.read_text(encoding="utf-8"))
    # The version is itself a macro, so a plain client can tell what a database file holds.
    con.execute(f"CREATE OR REPLACE MACRO duckdb_anon_version() AS '{__version__}'")
    dp.install(con)  # the DP aggregates: noise functions, then macros generated from dp/plan.py
    apply_privacy_units(con)  # privacy_unit_rows() from the declarations the file holds
    apply_policies(con)  # anonymized() from the declarations the file holds (none yet: it only explains)
    return con


def installed_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The duckdb-anon version installed in the connection's database, or None."""
    # fetchall(): read every result to its end, so no pending result blocks a later install()
    found = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckdb_anon_version'"
    ).fetchall()[0][0]
    return con.execute("SELECT duckdb_anon_version()").fetchall()[0][0] if found else None


def connect(database: str = ":memory:", **config) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (``duckdb.connect(database, config=config)``) with duckdb-anon installed."""
    con = duckdb.connect(database, config=config) if config else duckdb.connect(database)
    return install(con)
