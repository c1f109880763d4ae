"""`duckdb-anon suggest-roles` (the SQL macros suggest_roles / suggest_roles_sql on a file or a table),
`duckdb-anon publish` (duckdb_anon.publish_release: freeze the declared policy's release into a table) and
`duckdb-anon new-key` (a fresh pseudonym key)."""
from __future__ import annotations

import argparse
import os
import re
import textwrap
from pathlib import Path

import duckdb

from duckdb_anon import connect, new_pseudonym_key, publish_release, publish_rerelease, set_pseudonym_key
from duckdb_anon.commands import help_of
from duckdb_anon.commands.errors import BadArgument, argument_error, publish_error
from duckdb_anon.commands.database import open_database, print_published, print_table
from duckdb_anon.commands.files import (attach_database, checked_output, columns_of, data_file, existing_file,
                                        file_relation, written_atomically)
from duckdb_anon.commands.progress import Progress
from duckdb_anon.roles import DeclarationError

PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_VARIABLE = "DUCKDB_ANON_KEY_"  # + the policy's key_name in upper case: where `publish` finds a pseudonym key


def _table_name_for(path: Path, given: str | None) -> str:
    """The name the suggested declarations give a file's table: --table, or the file's stem made a plain name."""
    if given is not None:
        if not PLAIN_NAME.fullmatch(given):
            raise BadArgument("--table", f"must be a plain name (letters, digits, _), got {given!r}")
        return given
    name = re.sub(r"[^A-Za-z0-9_]", "_", path.stem).lower() or "t"
    return name if PLAIN_NAME.fullmatch(name) else f"t_{name}"


def suggestions_text(rows: list[tuple[str, str, str, str]], width: int = 100) -> str:
    """suggest_roles()'s column, type, role and reason as lines of at most `width` characters (a name or type
    longer than its column is cut with '~'); the reason wraps under its own column."""
    def cut(text: str, size: int) -> str:
        return text if len(text) <= size else text[:size - 1] + "~"

    header = ("column", "type", "suggested role", "reason")
    sizes = [min(max(len(str(r[i])) for r in [header, *rows]), limit) for i, limit in ((0, 22), (1, 12), (2, 16))]
    room = max(width - sum(sizes) - 6, 20)
    lines = []
    for row in [header, *rows]:
        left = "  ".join(cut(str(value), size).ljust(size) for value, size in zip(row[:3], sizes))
        wrapped = textwrap.wrap(str(row[3]), room) or [""]
        lines.append(f"{left}  {wrapped[0]}".rstrip())
        lines += [f"{' ' * (len(left) + 2)}{more}" for more in wrapped[1:]]
    return "\n".join(lines)


def suggest_roles(args: argparse.Namespace) -> int:
    if args.db is not None:
        if args.table is not None:
            raise BadArgument("--table", "names a file's table; with --db, SOURCE is the table")
        inputs = [("--db", existing_file("--db", args.db))]
    else:
        inputs = [("SOURCE", data_file("SOURCE", args.source))]
    target = None
    if args.sql is not None:
        target, _ = checked_output("--sql", args.sql, {".sql": "sql"}, force=args.force, inputs=inputs)
    con = connect()
    try:
        with Progress(con, "suggest-roles", quiet=args.quiet) as progress:
            progress.step(f"reading {args.source}")
            if args.db is not None:
                attach_database(con, args.db)
                table = args.source
                columns_of(con, table, "SOURCE", args.source, args.db)
            else:
                # a plain name (checked above) made by this module, so it can stand in the SQL text
                table = file_relation(con, "SOURCE", args.source, _table_name_for(Path(args.source), args.table))
            progress.step("suggesting roles")
            try:
                if args.wide:
                    print_table(con.sql("SELECT * FROM suggest_roles(?)", params=[table]), max_rows=10_000)
                else:
                    print(suggestions_text(con.execute("SELECT column_name, column_type, suggested_role, reason "
                                                       "FROM suggest_roles(?)", [table]).fetchall()))
                declarations = con.execute("SELECT suggest_roles_sql(?)", [table]).fetchall()[0][0]
            except duckdb.Error as exc:
                raise argument_error(exc, {"table_name": "SOURCE"}) or exc from None
            if target is not None:
                with written_atomically(target, "--sql", force=args.force) as temporary:
                    temporary.write_text(declarations, encoding="utf-8")
        if target is not None and not args.quiet:
            print(f"wrote the suggested declarations to {target}: review them before running them")
        return 0
    finally:
        con.close()


def _set_keys(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """The pseudonym key of the table's policy, from the environment (never from the command line, where
    other users of the machine could read it)."""
    keys = con.execute("SELECT DISTINCT key_name FROM anon_policies WHERE table_name = ? AND key_name IS NOT NULL",
                       [table]).fetchall()
    for (key_name,) in keys:
        variable = KEY_VARIABLE + key_name.upper()
        if not os.environ.get(variable):
            raise BadArgument("TABLE", f"the policy of {table!r} pseudonymizes with key {key_name!r}: put the key in "
                                       f"the environment variable {variable}")
        try:
            set_pseudonym_key(con, key_name, os.environ[variable])
        except DeclarationError as exc:
            raise BadArgument(variable, str(exc)) from None


def publish(args: argparse.Namespace) -> int:
    if args.previous is not None and not args.rerelease:
        raise BadArgument("--previous", "names the release a --rerelease follows; add --rerelease")
    if args.rerelease and (args.allow_differencing or args.id_column is not None):
        raise BadArgument("--rerelease", "keeps the people and classes of the release it follows: it takes no "
                                         "--allow-differencing and no --id-column")
    con = open_database("DATABASE", args.database)
    try:
        with Progress(con, "publish", quiet=args.quiet) as progress:
            progress.step(f"freezing the release of {args.table} into {args.name}")
            _set_keys(con, args.table)
            try:
                if args.rerelease:
                    row = publish_rerelease(con, args.table, args.name, replace=args.replace, previous=args.previous)
                else:
                    row = publish_release(con, args.table, args.name, replace=args.replace, id_column=args.id_column,
                                          allow_differencing=args.allow_differencing)
            except (DeclarationError, duckdb.Error) as exc:
                options = {"table": "TABLE", "name": "NAME", "table_name": "TABLE", "id_column": "--id-column",
                           "previous": "--previous"}
                bad = publish_error(exc, options, DeclarationError)
                if isinstance(bad, BadArgument) and "allow_differencing=True" in str(bad):  # the refusal, in the command's words
                    words = str(bad).split(": ", 1)[1].replace("pass allow_differencing=True", "add --allow-differencing")
                    words = words.replace("(duckdb_anon.publish_rerelease(con, table, name, previous=...))", "(add --rerelease)")
                    bad = BadArgument(bad.argument, words.replace("pass id_column=...", "add --id-column COLUMN"))
                raise bad from None
        print_published(args.name, args.database, row)
        _print_differencing(con, args.name, row)
        return 0
    finally:
        con.close()


def _print_differencing(con: duckdb.DuckDBPyConnection, name: str, row: dict) -> None:
    """What the differencing audit found, and the risk taken or the people held back, in words."""
    if row["previous_release"] is not None and row["differencing_below_k"] is not None:
        print(f"differencing against the earlier releases (latest {row['previous_release']}): "
              f"{row['differencing_below_k']} people below k, {row['differencing_singled_out']} singled out")
    if row["differencing_warning"] is not None:
        print(f"warning: {row['differencing_warning']}")
    held = con.execute("SELECT reason, count(*) FROM anon_release_held WHERE release_name = ? GROUP BY reason ORDER BY reason",
                       [name]).fetchall()
    for reason, people in held:
        print(f"{people} people not published ({reason})")


def new_key(args: argparse.Namespace) -> int:
    """Print a 256-bit pseudonym key: for SET VARIABLE duckdb_anon_key_<name> or DUCKDB_ANON_KEY_<NAME>."""
    print(new_pseudonym_key())
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("new-key", help=help_of("new-key"),
                       description="Print a new pseudonym key from the operating system's secure generator. Keep it "
                                   "secret, out of the database file; whoever holds it can reverse the pseudonyms.")
    p.set_defaults(func=new_key)

    p = sub.add_parser("suggest-roles", help=help_of("suggest-roles"),
                       description="Print suggest_roles(): a suggested role per column with the evidence; with "
                                   "--sql, write the suggestions as SQL declarations to review.")
    p.add_argument("source", metavar="SOURCE", help="a .csv or .parquet file, or with --db a table of that file")
    p.add_argument("--db", metavar="FILE.duckdb", help="read SOURCE as a table of this DuckDB file (read-only)")
    p.add_argument("--table", metavar="NAME", help="the table name the declarations use for a file SOURCE "
                                                   "(default: the file's name)")
    p.add_argument("--sql", metavar="OUT.sql", help="write the suggested declarations (INSERT statements) here")
    p.add_argument("--wide", action="store_true", help="every evidence column of suggest_roles() (a wide table); "
                                                       "default: column, type, suggested role and reason, 100 characters wide")
    p.add_argument("--force", action="store_true", help="replace --sql if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=suggest_roles)

    p = sub.add_parser("publish", help=help_of("publish"),
                       description="Freeze anonymized(TABLE) into table NAME of DATABASE and record it in "
                                   "anon_releases (all or nothing). A policy that pseudonymizes reads its key from "
                                   f"the environment variable {KEY_VARIABLE}<KEY_NAME>.")
    p.add_argument("database", metavar="DATABASE", help="the .duckdb file holding TABLE and its declarations")
    p.add_argument("table", metavar="TABLE", help="the source table, with declared roles and a policy")
    p.add_argument("name", metavar="NAME", help="the table to create")
    p.add_argument("--replace", action="store_true", help="replace an existing release NAME")
    p.add_argument("--id-column", metavar="COLUMN", help="the column of TABLE whose values identify people (default: a "
                                                         "declared identifier that does): recorded so later releases can be audited")
    p.add_argument("--allow-differencing", action="store_true",
                   help="publish even when intersecting NAME with an earlier release of TABLE leaves people below k "
                        "(the figures are printed and recorded in anon_releases)")
    p.add_argument("--rerelease", action="store_true", help="publish a re-release that keeps the earlier release's "
                                                            "classes and cannot be differenced (duckdb_anon.publish_rerelease)")
    p.add_argument("--previous", metavar="RELEASE", help="with --rerelease: the release it follows (default: the latest)")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=publish)
