"""`duckdb-anon demo` (strict Mondrian on the shipped Adult data) and `duckdb-anon mondrian` (a CSV or
Parquet file in, its k-anonymous release out), with every option of the SQL macro mondrian()."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb

from duckdb_anon import connect
from duckdb_anon.mondrian import mondrian as level_mondrian
from duckdb_anon.commands import help_of
from duckdb_anon.commands.errors import BadArgument, argument_error
from duckdb_anon.commands.files import (CSV_SUFFIXES, CsvOptions, checked_output, column_list, columns_of, data_file,
                                        file_relation, hierarchy_files, load_hierarchies, match_columns,
                                        written_atomically)
from duckdb_anon.commands.progress import Progress
from duckdb_anon.datasets import ADULT_QIS, load_adult

OUTPUT_KINDS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# mondrian()'s arguments -> the options that set them, so the macro's own checks name the option
OPTIONS = {"table_name": "INPUT", "qis": "--qi", "k": "-k", "mode": "--mode", "output": "--output-shape",
           "categorical_order": "--categorical-order", "split_rule": "--split-rule", "hierarchies": "--hierarchy",
           "sensitive": "--sensitive", "l": "--l", "l_kind": "--l-kind", "c": "--c", "t": "--t",
           "max_suppression": "--max-suppression", "keep": "--keep"}
MONDRIAN_SQL = ("SELECT * FROM mondrian(?, ?, ?, mode := ?, output := ?, categorical_order := ?, split_rule := ?, "
                "hierarchies := ?, sensitive := ?, l := ?, l_kind := ?, c := ?, t := ?, max_suppression := ?, keep := ?)")
PUBLISH_OPTIONS = "--keep/--drop/--keep-all"


def demo(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise BadArgument("-k", f"must be at least 1, got {args.k}")
    con = connect()
    try:
        with Progress(con, "demo", quiet=False) as progress:
            load_adult(con, "adult")
            qis = ADULT_QIS
            print(f"Adult: {con.execute('SELECT count(*) FROM adult').fetchall()[0][0]:,} rows; "
                  f"quasi-identifiers: {', '.join(qis)}")
            progress.step(f"strict Mondrian, k = {args.k}")
            started = time.perf_counter()
            con.execute("CREATE TEMP TABLE adult_k10 AS SELECT * FROM mondrian('adult', ?, ?, 'strict')", [qis, args.k])
            took = time.perf_counter() - started
            ncp = con.execute("SELECT ncp_percent FROM ncp('adult_k10', 'adult', ?, 'rid')", [qis]).fetchall()[0][0]
            rows, classes, achieved = con.execute(
                "SELECT rows, classes, achieved_k FROM release_measures('adult_k10', ?)", [qis]).fetchall()[0]
        print(f"strict Mondrian, k = {args.k}: {rows:,} rows in {classes:,} equivalence classes, "
              f"achieved k = {achieved}, NCP = {ncp:.4f} %, {took:.2f} s")
        print("A few released rows:")
        result = con.execute(f"SELECT rid, {', '.join(qis)}, class FROM adult_k10 ORDER BY rid LIMIT 5")
        print("  " + " | ".join(d[0] for d in result.description))
        for row in result.fetchall():
            print("  " + " | ".join(str(v) for v in row))
        return 0
    finally:
        con.close()


def _csv_options(args: argparse.Namespace, input_path: Path, target: Path) -> CsvOptions:
    """--delimiter and --no-header apply to the CSV files of the run, read and written alike."""
    touches_csv = input_path.suffix.lower() in CSV_SUFFIXES or target.suffix.lower() in CSV_SUFFIXES
    delimiter = args.delimiter
    if delimiter is not None:
        delimiter = {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
        if len(delimiter) != 1:
            raise BadArgument("--delimiter", f"must be one character (or \\t), got {args.delimiter!r}")
    for option, given in (("--delimiter", delimiter is not None), ("--no-header", args.no_header)):
        if given and not touches_csv:
            raise BadArgument(option, "applies to CSV files, and neither INPUT nor -o is one")
    return CsvOptions(delimiter=delimiter, header=not args.no_header)


IDENTIFIER_SCAN_ROWS = 100_000  # suggest_roles reads every value (its cost: docs/performance.md, Costs by part)


def _identifier_columns(con: duckdb.DuckDBPyConnection, source: str) -> list[str]:
    """The columns the SQL macro suggest_roles() flags as identifiers (by name or by values), judged on the
    input's first IDENTIFIER_SCAN_ROWS rows: a column unique there may not be unique in the whole input, so
    on a large input the list errs towards naming more columns, never fewer by name."""
    con.execute("CREATE OR REPLACE TEMP TABLE anon_input_head AS SELECT * FROM query_table(?) LIMIT ?",
                [source, IDENTIFIER_SCAN_ROWS])
    try:
        return [row[0] for row in con.execute("SELECT column_name FROM suggest_roles('anon_input_head') "
                                              "WHERE suggested_role = 'identifier'").fetchall()]
    finally:
        con.execute("DROP TABLE anon_input_head")


def _kept(con: duckdb.DuckDBPyConnection, args: argparse.Namespace, source: str, columns: list[str], qis: list[str],
          where: str) -> list[str] | None:
    """The non-QI columns to publish (mondrian()'s `keep`; None: all, for --keep-all). Fails closed: without
    --keep, --drop or --keep-all nothing is written, and the error names the identifier-looking columns."""
    if args.keep is not None:
        return match_columns(columns, column_list("--keep", args.keep), "--keep", where)
    if args.drop is not None:
        dropped = match_columns(columns, column_list("--drop", args.drop), "--drop", where)
        named_qis = [c for c in dropped if c in qis]
        if named_qis:
            raise BadArgument("--drop", f"{named_qis[0]!r} is a QI: QIs are always published, generalized")
        return [c for c in columns if c not in qis and c not in dropped]
    identifiers = [c for c in _identifier_columns(con, source) if c not in qis]
    flagged = f"suggest_roles flags {', '.join(identifiers)} as identifier(s)" if identifiers else \
        "suggest_roles flags no column as an identifier, but review them all"
    if not args.keep_all:
        others = [c for c in columns if c not in qis]
        raise BadArgument(PUBLISH_OPTIONS, f"say which columns besides the QIs to publish ({', '.join(others) or 'none'}): "
                                           f"--keep COLS, --drop COLS, or --keep-all to publish them all unchanged; "
                                           f"{flagged}")
    if identifiers:
        print(f"duckdb-anon mondrian: warning: --keep-all publishes every non-QI column unchanged; {flagged}",
              file=sys.stderr)
    return None


def mondrian(args: argparse.Namespace) -> int:
    input_path = data_file("INPUT", args.input)
    if args.k < 1:
        raise BadArgument("-k", f"must be at least 1, got {args.k}")
    inputs = [("INPUT", input_path), *(("--hierarchy", p) for p in hierarchy_files(args.hierarchy))]
    target, kind = checked_output("-o", args.output, OUTPUT_KINDS, force=args.force, inputs=inputs)
    if args.output_shape == "typed" and kind != "parquet":
        raise BadArgument("--output-shape", "a typed release holds STRUCT(lo, hi, mean) columns, which CSV cannot "
                                            "hold: write it to a .parquet file")
    csv = _csv_options(args, input_path, target)
    con = connect()
    try:
        started = time.perf_counter()
        with Progress(con, "mondrian", quiet=args.quiet) as progress:
            progress.step(f"reading {input_path}")
            source = file_relation(con, "INPUT", args.input, "anon_input", csv)
            columns = columns_of(con, source, "INPUT", args.input)
            where = f"INPUT {input_path}"
            qis = match_columns(columns, column_list("--qi", args.qi), "--qi", where)
            sensitive = match_columns(columns, [args.sensitive], "--sensitive", where)[0] if args.sensitive else None
            hierarchies, _ = load_hierarchies(con, args.hierarchy, qis)
            if args.keep is None and args.drop is None:
                progress.step("looking for identifier columns (suggest_roles)")
            keep = _kept(con, args, source, columns, qis, where)
            progress.step(f"anonymizing into {target}")
            params = [source, qis, args.k, args.mode, args.output_shape, args.categorical_order, args.split_rule,
                      hierarchies, sensitive, args.l, args.l_kind, args.c, args.t, args.max_suppression, keep]
            from duckdb_anon.publishing import ordered_sql  # the storage order every release is written in
            try:
                with written_atomically(target, "-o", force=args.force) as temporary:
                    if args.engine == "levels":  # one query per level: memory bounded by one level's state
                        level_mondrian(con, source, qis, args.k, into="anon_levels_release", mode=args.mode,
                                       output=args.output_shape, categorical_order=args.categorical_order,
                                       split_rule=args.split_rule, keep=keep, hierarchies=hierarchies,
                                       sensitive=sensitive, l=args.l, l_kind=args.l_kind, c=args.c, t=args.t,
                                       max_suppression=args.max_suppression)
                        released = con.sql(ordered_sql("SELECT * FROM anon_levels_release"))
                    else:
                        released = con.sql(ordered_sql(MONDRIAN_SQL), params=params)
                    if kind == "parquet":
                        released.write_parquet(str(temporary))
                    else:
                        released.write_csv(str(temporary), sep=csv.delimiter or ",", header=csv.header)
            except (duckdb.Error, ValueError) as exc:
                raise argument_error(exc, OPTIONS) or exc from None
        if not args.quiet:
            print(f"wrote {target} ({args.mode} Mondrian, k = {args.k}) in {time.perf_counter() - started:.2f} s")
        return 0
    finally:
        con.close()


def add_commands(sub) -> None:
    p_demo = sub.add_parser("demo", help=help_of("demo"))
    p_demo.add_argument("-k", type=int, default=10, help="k (default 10)")
    p_demo.set_defaults(func=demo)

    p = sub.add_parser("mondrian", help=help_of("mondrian"),
                       description="Write the Mondrian release of INPUT to -o, through a temporary file renamed "
                                   "into place: a failed run leaves nothing behind. Say what to publish besides the "
                                   "QIs with --keep, --drop or --keep-all; without one nothing is written.")
    p.add_argument("input", metavar="INPUT", help="input .csv or .parquet file")
    p.add_argument("--qi", required=True, help="comma-separated quasi-identifier columns")
    p.add_argument("-k", type=int, required=True, help="minimum equivalence-class size")
    published = p.add_mutually_exclusive_group()
    published.add_argument("--keep", metavar="COLS", help="comma-separated columns to publish besides the QIs (unchanged); "
                                                          "every other column is left out")
    published.add_argument("--drop", metavar="COLS", help="comma-separated columns to leave out; every other column is "
                                                          "published (the QIs generalized, the rest unchanged)")
    published.add_argument("--keep-all", action="store_true", help="publish every non-QI column unchanged (warns about "
                                                                   "identifier-looking columns)")
    p.add_argument("--mode", choices=["strict", "relaxed"], default="strict")
    p.add_argument("--hierarchy", action="append", metavar="QI=FILE",
                   help="a generalization hierarchy for QI, one leaf a line: leaf;parent;...;root (repeatable)")
    p.add_argument("--sensitive", metavar="COL", help="sensitive column of the privacy models (--l, --t)")
    p.add_argument("--l", type=float, help="l-diversity of --sensitive in every class")
    p.add_argument("--l-kind", choices=["distinct", "entropy", "recursive"], default="distinct")
    p.add_argument("--c", type=float, default=2.0, help="c of recursive (c, l)-diversity (default 2)")
    p.add_argument("--t", type=float, help="t-closeness of --sensitive in every class, in (0, 1]")
    p.add_argument("--max-suppression", type=float, default=0.0, metavar="SHARE",
                   help="share of rows that may be suppressed, in [0, 1) (strict mode; default 0)")
    p.add_argument("--output-shape", choices=["text", "typed"], default="text",
                   help="text labels (default) or typed STRUCT(lo, hi, mean) columns (Parquet only)")
    p.add_argument("--categorical-order", choices=["appearance", "value"], default="appearance")
    p.add_argument("--split-rule", choices=["actual", "inherited"], default="actual")
    p.add_argument("--engine", choices=["sql", "levels"], default="sql",
                   help="sql: the SQL macro mondrian() (default); levels: one query per level, the same release in "
                        "bounded memory, for tables where most rows are distinct (every option above applies to both)")
    p.add_argument("--delimiter", metavar="CHAR", help="CSV field delimiter, read and written (default: detected / ',')")
    p.add_argument("--no-header", action="store_true", help="CSV files have no header line (columns column0, ...)")
    p.add_argument("-o", "--output", required=True, help="output .csv or .parquet file")
    p.add_argument("--force", action="store_true", help="replace -o if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress or summary")
    p.set_defaults(func=mondrian)
