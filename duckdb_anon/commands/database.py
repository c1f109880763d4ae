"""Commands on a DuckDB database file: `install` (the functions and the declared policies) and `sql` (run a
query with the functions installed, print the result as a table)."""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import duckdb

from duckdb_anon import connect, install, installed_version
from duckdb_anon.commands import help_of
from duckdb_anon.commands.errors import BadArgument, first_line, open_error
from duckdb_anon.commands.progress import Progress

# Errors of the machine rather than of the query: the command failed (exit 1); any other error the query
# raises (syntax, names, types, our macros' argument checks) is a bad QUERY (exit 2).
NOT_THE_QUERY = (duckdb.IOException, duckdb.OutOfMemoryException, duckdb.InternalException, duckdb.FatalException,
                 duckdb.InterruptException, duckdb.ConnectionException)


def open_database(argument: str, path_text: str, *, create: bool = False, hint: str = "") -> duckdb.DuckDBPyConnection:
    """A connection to a database file with duckdb-anon installed (or upgraded) in it."""
    if path_text != ":memory:":
        path = Path(path_text)
        if path.is_dir():
            raise BadArgument(argument, f"{path} is a folder")
        if not path.exists() and not create:
            raise BadArgument(argument, f"{path} does not exist{hint}")
    try:
        return connect(path_text)  # installs, which also applies the declarations the file holds
    except duckdb.Error as exc:
        raise open_error(argument, path_text, exc) from None


def print_table(relation: duckdb.DuckDBPyRelation, max_rows: int) -> None:
    """DuckDB's own table rendering, as wide as the terminal; in full width when written to a file or a pipe."""
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 100_000
    relation.show(max_rows=max_rows, max_width=width)


def print_published(name: str, database: str, row: dict) -> None:
    """The recorded row of a release just published, one field a line."""
    width = max(len(field) for field in row)
    print(f"published {name} in {database}:")
    for field, value in row.items():
        print(f"  {field:<{width}}  {value}")


def install_into(args: argparse.Namespace) -> int:
    """Install or upgrade the functions in a database file and apply its declared roles and policies, so
    plain SQL users who INSERT declarations get an up-to-date anonymized()."""
    new = args.database == ":memory:" or not Path(args.database).exists()
    con = open_database("DATABASE", args.database, create=args.create,
                        hint=" (add --create to make a new database file)")
    try:
        if not new:  # a new file holds this exact install already (connect() copies it)
            install(con)  # every macro written again, even over this exact install
        tables = con.execute("SELECT count(DISTINCT table_name) FROM anon_policies").fetchall()[0][0]
        print(f"duckdb-anon {installed_version(con)} installed in {args.database}; policies applied for {tables} table(s)")
        return 0
    finally:
        con.close()


def sql(args: argparse.Namespace) -> int:
    """Run QUERY (one or more statements; the last one's result is printed) on DATABASE."""
    if not args.query.strip():
        raise BadArgument("QUERY", "is empty")
    if args.max_rows < 1:
        raise BadArgument("--max-rows", f"must be at least 1, got {args.max_rows}")
    con = open_database("DATABASE", args.database)
    try:
        with Progress(con, "sql", quiet=args.quiet) as progress:
            progress.step("running the query")
            try:
                result = con.sql(args.query)
                if result is not None:
                    print_table(result, args.max_rows)
            except NOT_THE_QUERY:
                raise
            except duckdb.Error as exc:
                raise BadArgument("QUERY", first_line(exc)) from None
        return 0
    finally:
        con.close()


def add_commands(sub) -> None:
    p_sql = sub.add_parser("sql", help=help_of("sql"),
                           description="Run QUERY on DATABASE (a .duckdb file, or :memory:) after installing the "
                                       "functions in it, and print the last statement's result as a table.")
    p_sql.add_argument("database", metavar="DATABASE", help="the .duckdb file (it must exist), or :memory:")
    p_sql.add_argument("query", metavar="QUERY", help="SQL: one or more statements separated by ';'")
    p_sql.add_argument("--max-rows", type=int, default=40, metavar="N", help="rows to print at most (default 40)")
    p_sql.add_argument("--quiet", action="store_true", help="no progress")
    p_sql.set_defaults(func=sql)

    p_ins = sub.add_parser("install", help=help_of("install"))
    p_ins.add_argument("database", metavar="DATABASE", help="the .duckdb file")
    p_ins.add_argument("--create", action="store_true", help="create the file if it does not exist")
    p_ins.set_defaults(func=install_into)
