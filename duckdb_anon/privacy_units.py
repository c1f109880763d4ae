"""Privacy unit declarations from Python: which column of a table identifies the person.

The declarations are rows of the SQL table ``anon_privacy_units`` (sql/80_privacy_units.sql); these
helpers insert them and compile them into the macro ``privacy_unit_rows(table_name)`` that the DP
aggregates read.
"""
from __future__ import annotations

import duckdb

from duckdb_anon.errors import check_not_reserved
from duckdb_anon.roles import DeclarationError


def declare_privacy_unit(con: duckdb.DuckDBPyConnection, table: str, column: str, *, via_table: str | None = None,
                         via_key: str | None = None) -> None:
    """Declare that `column` of `table` identifies the person (the privacy unit), or, with `via_table` and
    `via_key`, that it equals `via_key` of `via_table`, whose own privacy unit is declared (events reaching
    patients). Replaces an earlier declaration of `table`; raises DeclarationError on a bad one."""
    fn = "declare_privacy_unit"
    for arg, value in (("table", table), ("column", column)):
        if not isinstance(value, str) or not value:
            raise DeclarationError(f"{fn}(): argument '{arg}' must be a name, got {value!r}")
    check_not_reserved(fn, "column", column, DeclarationError)
    check_not_reserved(fn, "via_key", via_key, DeclarationError)
    if (via_table is None) != (via_key is None):
        raise DeclarationError(f"{fn}(): arguments 'via_table' and 'via_key' go together: give both or neither")
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("INSERT OR REPLACE INTO anon_privacy_units VALUES (?, ?, ?, ?)", [table, column, via_table, via_key])
        problem = con.execute("SELECT problem FROM anon_privacy_unit_problems WHERE table_name = ?", [table]).fetchall()[0][0]
        if problem is not None:
            raise DeclarationError(f"{fn}(): {problem}")
        apply_privacy_units(con)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def apply_privacy_units(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create ``privacy_unit_rows(table_name)`` from the current declarations."""
    con.execute(con.execute("SELECT anon_compile_privacy_units()").fetchall()[0][0])
