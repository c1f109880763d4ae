"""Catalog tables made by an older version, whose CHECK constraint refuses a value this version writes.

The SQL files create the catalog with ``CREATE TABLE IF NOT EXISTS``, so a database file made by an older
version keeps the older table, constraints included, and DuckDB cannot alter a constraint. Install sets such
a table's rows aside in a temporary table and drops it before the SQL files run (they create it anew, and
later files add the columns of later versions), then puts every row back by column name. It all happens in
install's transaction: all or nothing.
"""
from __future__ import annotations

import duckdb

# table -> (text the old CHECK holds, the value it lacks): a constraint holding the first and not the
# second was made before that value was admitted
OLD_CHECKS = {
    "anon_column_roles": ("'insensitive'", "'masked'"),  # before the masked role
    "anon_releases": ("'mondrian'", "'km'"),              # before k^m releases (publish_km)
}


def _kept(table: str) -> str:
    return f"__anon_old_{table}"  # a table of OLD_CHECKS: our own name, never user input


def set_aside_old_catalogs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Set aside and drop every catalog table of OLD_CHECKS whose constraint is the old one; returns them."""
    old = []
    for table, (holds, lacks) in OLD_CHECKS.items():
        found = con.execute("SELECT count(*) FROM duckdb_constraints() WHERE database_name = current_database() "
                            "AND schema_name = current_schema() AND table_name = ? AND constraint_type = 'CHECK' "
                            "AND contains(expression, ?) AND NOT contains(expression, ?)", [table, holds, lacks]).fetchall()[0][0]
        if found:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {_kept(table)} AS SELECT * FROM {table}")
            con.execute(f"DROP TABLE {table}")
            old.append(table)
    return old


def restore_old_catalogs(con: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    """The rows set_aside_old_catalogs() kept, back in the tables the SQL files created anew."""
    for table in tables:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {_kept(table)}")
        con.execute(f"DROP TABLE {_kept(table)}")
