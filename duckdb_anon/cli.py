"""The ``duckdb-anon`` command: a demo on the shipped Adult data, Mondrian over CSV/Parquet files, and an HTML
report on a release.

Files are read and written by DuckDB itself; Python only passes names and parameters. File paths and table
names reach DuckDB as parameters (a path through a session variable), never as SQL text. Input the user got
wrong exits with code 2 and a message naming the argument, never a traceback.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb

from duckdb_anon import connect
from duckdb_anon.datasets import ADULT_QIS, load_adult
from duckdb_anon import report as anon_report
from duckdb_anon.report import BadArgument, MissingExtra

READERS = {".csv": "read_csv", ".tsv": "read_csv", ".parquet": "read_parquet", ".pq": "read_parquet"}
SOURCE_CATALOG = "anon_source"  # where --db is attached, read-only


def _qi_list_sql(n: int) -> str:
    return "[" + ", ".join("?" for _ in range(n)) + "]"


def _split_qis(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def _progress_bar(con: duckdb.DuckDBPyConnection, quiet: bool) -> None:
    """DuckDB's own progress bar (printed for queries running over 2 s) unless --quiet; the Python client
    enables it by default, so quiet has to switch it off explicitly."""
    con.execute(f"SET enable_progress_bar = {'false' if quiet else 'true'}")
    con.execute(f"SET enable_progress_bar_print = {'false' if quiet else 'true'}")


def _file_view(con: duckdb.DuckDBPyConnection, argument: str, path_text: str, view: str) -> str:
    """Temp view `view` over a CSV or Parquet file. The path travels as the value of a session variable;
    `view` and the reader are this module's own constants."""
    path = Path(path_text)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise BadArgument(argument, f"{path} must end in .csv or .parquet")
    if not path.is_file():
        raise BadArgument(argument, f"{path} does not exist")
    con.execute(f"SET VARIABLE {view}_path = ?", [str(path)])
    try:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {reader}(getvariable('{view}_path'))")
    except duckdb.Error as exc:
        raise BadArgument(argument, f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    return view


def _attach_database(con: duckdb.DuckDBPyConnection, path_text: str) -> None:
    """Attach --db read-only and resolve unqualified names in it first, then among our macros."""
    path = Path(path_text)
    if not path.is_file():
        raise BadArgument("--db", f"{path} does not exist")
    try:
        con.execute(f"ATTACH ? AS {SOURCE_CATALOG} (READ_ONLY)", [str(path)])
    except duckdb.Error as exc:
        raise BadArgument("--db", f"cannot open {path} as a DuckDB database: {str(exc).splitlines()[0]}") from None
    # our macros live in the connection's own in-memory catalog ("memory"); it is ours, not user input
    home = con.execute("SELECT current_database()").fetchone()[0]
    con.execute(f"SET search_path = '{SOURCE_CATALOG}.main,{home}.main'")


def demo(args: argparse.Namespace) -> int:
    con = connect()
    try:
        load_adult(con, "adult")
        qis = ADULT_QIS
        print(f"Adult: {con.execute('SELECT count(*) FROM adult').fetchone()[0]:,} rows; "
              f"quasi-identifiers: {', '.join(qis)}")
        started = time.perf_counter()
        con.execute(f"CREATE TEMP TABLE adult_k10 AS SELECT * FROM mondrian('adult', {_qi_list_sql(len(qis))}, ?, 'strict')",
                    [*qis, args.k])
        took = time.perf_counter() - started
        ncp = con.execute(f"SELECT ncp_percent FROM ncp('adult_k10', 'adult', {_qi_list_sql(len(qis))}, 'rid')",
                          qis).fetchone()[0]
        rows, classes, achieved = con.execute(
            f"SELECT rows, classes, achieved_k FROM release_measures('adult_k10', {_qi_list_sql(len(qis))})",
            qis).fetchone()
        print(f"strict Mondrian, k = {args.k}: {rows:,} rows in {classes:,} equivalence classes, "
              f"achieved k = {achieved}, NCP = {ncp:.4f} %, {took:.2f} s")
        print("A few released rows:")
        result = con.execute(f"SELECT rid, {', '.join(qis)}, class FROM adult_k10 ORDER BY rid LIMIT 5")
        names = [d[0] for d in result.description]
        print("  " + " | ".join(names))
        for row in result.fetchall():
            print("  " + " | ".join(str(v) for v in row))
        return 0
    finally:
        con.close()


def mondrian(args: argparse.Namespace) -> int:
    target = Path(args.output)
    writer = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(target.suffix.lower())
    if writer is None:
        raise BadArgument("--output", f"{target} must end in .csv or .parquet")
    qis = _split_qis(args.qi)
    con = connect()
    try:
        _progress_bar(con, args.quiet)
        source = _file_view(con, "INPUT", args.input, "anon_input")
        started = time.perf_counter()
        released = con.sql(f"SELECT * FROM mondrian(?, {_qi_list_sql(len(qis))}, ?, ?)",
                           params=[source, *qis, args.k, args.mode])
        if writer == "csv":
            released.write_csv(str(target))
        else:
            released.write_parquet(str(target))
        if not args.quiet:
            print(f"wrote {target} ({args.mode} Mondrian, k = {args.k}) in {time.perf_counter() - started:.2f} s")
        return 0
    finally:
        con.close()


def report(args: argparse.Namespace) -> int:
    target = Path(args.output)
    if not target.parent.is_dir():
        raise BadArgument("--output", f"folder {target.parent} does not exist")
    if (args.original is None) != (args.id is None):
        raise BadArgument("--original" if args.original is None else "--id",
                          "--original and --id go together: NCP matches released and original rows on the id")
    anon_report.require_matplotlib()
    con = connect()
    try:
        _progress_bar(con, args.quiet)
        if args.db is not None:
            _attach_database(con, args.db)
            release, original = args.release, args.original
        else:
            release = _file_view(con, "RELEASE", args.release, "anon_release")
            original = None if args.original is None else _file_view(con, "--original", args.original, "anon_original")
        request = anon_report.ReportRequest(
            release=release, qis=_split_qis(args.qi), label=args.release, sensitive=args.sensitive,
            original=original, id_column=args.id, original_label=args.original or "", database=args.db,
            threshold=args.threshold)
        anon_report.check_inputs(con, request)
        started = time.perf_counter()
        if args.perturbed:
            return _perturbed_report(con, request, target, started)
        measures = anon_report.gather(con, request)
        anon_report.write_html(target, request, measures, anon_report.render_plots(request, measures))
        print(anon_report.summary_text(request, measures))
        print(f"wrote {target} in {time.perf_counter() - started:.2f} s")
        return 0
    finally:
        con.close()


def _perturbed_report(con: duckdb.DuckDBPyConnection, request, target: Path, started: float) -> int:
    """--perturbed: distortion and the linkage audits of a perturbed release instead of class measures."""
    if request.original is None:
        raise BadArgument("--perturbed", "needs --original ORIGINAL --id ID_COLUMN: the audits compare with the original")
    measures = anon_report.gather_perturbed(con, request)
    print(anon_report.write_perturbed_html(target, request, measures))
    print(f"wrote {target} in {time.perf_counter() - started:.2f} s")
    return 0


def install_into(args: argparse.Namespace) -> int:
    """Install or upgrade the functions in a database file and apply its declared roles and policies, so
    plain SQL users who INSERT declarations get an up-to-date anonymized()."""
    from duckdb_anon import installed_version

    path = Path(args.database)
    if not path.exists() and not args.create:
        raise BadArgument("DATABASE", f"{path} does not exist (add --create to make a new database file)")
    con = connect(str(path))  # connect() installs, which applies the declarations
    try:
        tables = con.execute("SELECT count(DISTINCT table_name) FROM anon_policies").fetchall()[0][0]
        print(f"duckdb-anon {installed_version(con)} installed in {path}; policies applied for {tables} table(s)")
        return 0
    finally:
        con.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duckdb-anon", description="Anonymize data inside DuckDB.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="strict Mondrian on the shipped Adult data")
    p_demo.add_argument("-k", type=int, default=10, help="k (default 10)")
    p_demo.set_defaults(func=demo)
    p_mon = sub.add_parser("mondrian", help="k-anonymize a CSV or Parquet file")
    p_mon.add_argument("input", help="input .csv or .parquet file")
    p_mon.add_argument("--qi", required=True, help="comma-separated quasi-identifier columns")
    p_mon.add_argument("-k", type=int, required=True, help="minimum equivalence-class size")
    p_mon.add_argument("--mode", choices=["strict", "relaxed"], default="strict")
    p_mon.add_argument("-o", "--output", required=True, help="output .csv or .parquet file")
    p_mon.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p_mon.set_defaults(func=mondrian)
    p_rep = sub.add_parser("report", help="an HTML report on a release: class sizes, risk, l/t, NCP")
    p_rep.add_argument("release", metavar="RELEASE", help="the release: a .csv or .parquet file, or with --db a table")
    p_rep.add_argument("--qi", required=True, help="comma-separated quasi-identifier columns")
    p_rep.add_argument("--sensitive", metavar="COL", help="sensitive column: l-diversity and t-closeness")
    p_rep.add_argument("--original", metavar="ORIGINAL", help="the original data (file, or table with --db), for NCP")
    p_rep.add_argument("--id", metavar="ID_COLUMN", help="the row id present in both RELEASE and ORIGINAL")
    p_rep.add_argument("--db", metavar="FILE.duckdb", help="read RELEASE and ORIGINAL as tables of this DuckDB file")
    p_rep.add_argument("--threshold", type=float, default=0.2,
                       help="prosecutor risk above which a record counts as at risk (default 0.2)")
    p_rep.add_argument("--perturbed", action="store_true",
                       help="a perturbed release (random_walk(), noise): distortion and re-linkage by nearest values, "
                            "rank and segment pattern, against --original (numeric --qi columns)")
    p_rep.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p_rep.add_argument("--quiet", action="store_true", help="no progress bar")
    p_rep.set_defaults(func=report)
    p_ins = sub.add_parser("install", help="install or upgrade the functions in a database file and apply its policies")
    p_ins.add_argument("database", metavar="DATABASE", help="the .duckdb file")
    p_ins.add_argument("--create", action="store_true", help="create the file if it does not exist")
    p_ins.set_defaults(func=install_into)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BadArgument as exc:  # the user's input: exit 2, as argparse does for its own checks
        print(f"duckdb-anon {args.command}: {exc}", file=sys.stderr)
        return 2
    except MissingExtra as exc:
        print(f"duckdb-anon {args.command}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a clear one-line message instead of a traceback
        print(f"duckdb-anon {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
