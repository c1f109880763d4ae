"""`duckdb-anon copy SOURCE.duckdb -o COPY.duckdb`: a masked copy of a whole database
(duckdb_anon.masked_copy), with progress and a summary of what each column became.

Imports of the package's heavy parts happen inside the command, so that building the parser stays cheap.
"""
from __future__ import annotations

import argparse
import os

from duckdb_anon.commands import help_of


def copy(args: argparse.Namespace) -> int:
    from duckdb_anon.commands.errors import BadArgument
    from duckdb_anon.commands.files import checked_output, existing_file
    from duckdb_anon.commands.progress import Progress
    from duckdb_anon.commands.roles import KEY_VARIABLE
    from duckdb_anon.database_copy import CopyError, masked_copy

    source = existing_file("SOURCE", args.source)
    target, _ = checked_output("--output", args.output, {".duckdb": "duckdb", ".db": "duckdb"}, force=args.force,
                               inputs=[("SOURCE", source)])
    missing = []

    def key_for(key_name: str) -> str | None:  # from the environment, never the command line (other users see it)
        key = os.environ.get(KEY_VARIABLE + key_name.upper())
        if key is None:
            missing.append(KEY_VARIABLE + key_name.upper())
        return key

    try:
        summary = masked_copy(source, target, replace=args.force, keys=key_for, tables=args.table,
                              progress=lambda con: Progress(con, "copy", quiet=args.quiet))
    except CopyError as exc:
        text = str(exc).split(": ", 1)[1].removeprefix("argument 'keys': ")
        if missing:
            raise BadArgument(missing[0], f"{text}: put the key in the environment variable {missing[0]}") from None
        argument = {"argument 'tables'": "--table", "argument 'keys'": KEY_VARIABLE + "<KEY_NAME>",
                    "argument 'target_path'": "--output"}
        raise BadArgument(next((option for words, option in argument.items() if words in text), "SOURCE"),
                          text.removeprefix("argument 'source_path': ")) from None
    if not args.quiet:
        _print_summary(summary)
    print(f"wrote the masked copy of {source} to {target}: {len({(r['schema_name'], r['table_name']) for r in summary})} "
          f"table(s); what each column became is in its table anon_copy_summary")
    return 0


def _print_summary(summary: list[dict]) -> None:
    """One line per column: table, column, what it became."""
    width_table = max(len(r["declared_as"]) for r in summary)
    width_column = max(len(r["column_name"]) for r in summary)
    for row in summary:
        print(f"{row['declared_as']:<{width_table}}  {row['column_name']:<{width_column}}  {row['became']}")


def add_commands(sub) -> None:
    p = sub.add_parser("copy", help=help_of("copy"),
                       description="Write every table of SOURCE to a new database file with its declared roles applied: "
                                   "identifiers dropped or pseudonymized, masked columns masked, other declared columns "
                                   "copied as they are; a column with no declared role refuses the copy (unless its "
                                   "table's policy drops undeclared columns). Masking is not anonymization: see "
                                   "docs/masking.md. Pseudonym keys come from the environment variables "
                                   "DUCKDB_ANON_KEY_<KEY_NAME>. SOURCE is opened read-only and never changed.")
    p.add_argument("source", metavar="SOURCE", help="the .duckdb file holding the tables and their declarations")
    p.add_argument("-o", "--output", metavar="COPY.duckdb", required=True, help="the database file to write")
    p.add_argument("--table", action="append", metavar="NAME", help="copy only this table (repeat for more)")
    p.add_argument("--force", action="store_true", help="replace --output if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress and no summary lines")
    p.set_defaults(func=copy)
