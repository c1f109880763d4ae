"""`duckdb-anon dp-budget` (duckdb_anon.set_dp_budget: the total epsilon and delta of a privacy unit) and
`duckdb-anon dp-publish` (duckdb_anon.publish_dp: a DP aggregate written into a table, its budget debited)."""
from __future__ import annotations

import argparse

import duckdb

from duckdb_anon.commands.database import open_database, print_published
from duckdb_anon.commands import help_of
from duckdb_anon.commands.errors import publish_error
from duckdb_anon.commands.progress import Progress
from duckdb_anon.dp.ledger import BudgetError, publish_dp, set_dp_budget
from duckdb_anon.roles import DeclarationError

#: dp_aggregate()'s and publish_dp()'s arguments -> the options that set them
OPTIONS = {"table": "TABLE", "table_name": "TABLE", "name": "NAME", "group_by": "--group-by", "value": "--value",
           "aggregates": "--aggregates", "epsilon": "--epsilon", "delta": "--delta",
           "max_groups_contributed": "--max-groups", "max_rows_per_group": "--max-rows", "min_value": "--min-value",
           "max_value": "--max-value", "noise": "--noise", "public_groups": "--public-groups",
           "privacy_unit_column": "--privacy-unit-column", "confidence": "--confidence", "unit_table": "UNIT_TABLE",
           "allow_large_epsilon": "--allow-large-epsilon"}


def _bad(exc: Exception) -> Exception:
    """The error as the command reports it: a bad argument names its option; a refused publish says what is left."""
    return exc if isinstance(exc, BudgetError) else publish_error(exc, OPTIONS, DeclarationError)


def budget(args: argparse.Namespace) -> int:
    con = open_database("DATABASE", args.database)
    try:
        try:
            set_dp_budget(con, args.unit_table, args.epsilon, args.delta)
        except DeclarationError as exc:
            raise _bad(exc) from None
        row = con.execute("SELECT * FROM anon_dp_ledger WHERE unit_table = ?", [args.unit_table]).fetchall()[0]
        print(f"budget of {args.unit_table}: epsilon {row[1]:g} (spent {row[3]:g}), delta {row[2]:g} (spent {row[4]:g})")
        return 0
    finally:
        con.close()


def publish(args: argparse.Namespace) -> int:
    con = open_database("DATABASE", args.database)
    try:
        with Progress(con, "dp-publish", quiet=args.quiet) as progress:
            progress.step(f"releasing DP aggregates of {args.table} into {args.name}")
            try:
                row = publish_dp(con, args.table, args.name, group_by=args.group_by, value=args.value,
                                 aggregates=args.aggregates, epsilon=args.epsilon, delta=args.delta,
                                 max_groups_contributed=args.max_groups, max_rows_per_group=args.max_rows,
                                 min_value=args.min_value, max_value=args.max_value, noise=args.noise,
                                 public_groups=args.public_groups, privacy_unit_column=args.privacy_unit_column,
                                 confidence=args.confidence, replace=args.replace,
                                 allow_large_epsilon=args.allow_large_epsilon)
            except (DeclarationError, duckdb.Error) as exc:
                raise _bad(exc) from None
        print_published(args.name, args.database, row)
        return 0
    finally:
        con.close()


def add_commands(sub) -> None:
    p = sub.add_parser("dp-budget", help=help_of("dp-budget"),
                       description="Set the total epsilon and delta that DP releases about the people of UNIT_TABLE "
                                   "(the table holding their person column) may spend; what was spent stays.")
    p.add_argument("database", metavar="DATABASE", help="the .duckdb file")
    p.add_argument("unit_table", metavar="UNIT_TABLE", help="the table whose people the budget protects")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.set_defaults(func=budget)

    p = sub.add_parser("dp-publish", help=help_of("dp-publish"),
                       description="Run dp_aggregate() on TABLE into table NAME of DATABASE, record it in "
                                   "anon_dp_releases and debit the budget of its people, all or nothing; refused, "
                                   "saying what is left, when the budget cannot pay.")
    p.add_argument("database", metavar="DATABASE", help="the .duckdb file holding TABLE")
    p.add_argument("table", metavar="TABLE", help="the source table (its privacy unit declared, or --privacy-unit-column)")
    p.add_argument("name", metavar="NAME", help="the table to create")
    p.add_argument("--group-by", nargs="+", required=True, metavar="COLUMN")
    p.add_argument("--value", metavar="COLUMN", help="the column sum and avg aggregate")
    p.add_argument("--aggregates", nargs="+", default=["count"], metavar="AGGREGATE",
                   help="count, count_distinct, sum, avg (default: count)")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--max-groups", type=int, help="max_groups_contributed (default: chosen by a DP quantile)")
    p.add_argument("--max-rows", type=int, default=1, help="max_rows_per_group (default 1)")
    p.add_argument("--min-value", type=float)
    p.add_argument("--max-value", type=float)
    p.add_argument("--noise", default="laplace", help="laplace or gaussian")
    p.add_argument("--public-groups", metavar="TABLE", help="a table of the groups to release")
    p.add_argument("--privacy-unit-column", metavar="COLUMN", help="the person column of an undeclared table")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--allow-large-epsilon", action="store_true",
                   help="allow --epsilon above 10 (a guarantee too weak to protect anyone)")
    p.add_argument("--replace", action="store_true", help="replace an existing table NAME")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=publish)
