"""The ``duckdb-anon`` command: a demo on the shipped Adult data, and Mondrian over CSV/Parquet files.

Files are read and written by DuckDB itself; Python only passes names and parameters.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from duckdb_anon import connect
from duckdb_anon.datasets import ADULT_QIS, load_adult

READERS = {".csv": "read_csv", ".tsv": "read_csv", ".parquet": "read_parquet", ".pq": "read_parquet"}


def _qi_list_sql(n: int) -> str:
    return "[" + ", ".join("?" for _ in range(n)) + "]"


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
    source, target = Path(args.input), Path(args.output)
    reader = READERS.get(source.suffix.lower())
    writer = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(target.suffix.lower())
    if reader is None or writer is None:
        print("duckdb-anon mondrian: INPUT and --output must end in .csv or .parquet", file=sys.stderr)
        return 2
    if not source.exists():
        print(f"duckdb-anon mondrian: INPUT {source} does not exist", file=sys.stderr)
        return 2
    qis = [q.strip() for q in args.qi.split(",") if q.strip()]
    con = connect()
    try:
        if not args.quiet:  # DuckDB's own progress bar, on stderr-like terminal output for long queries
            con.execute("SET enable_progress_bar = true")
            con.execute("SET enable_progress_bar_print = true")
        con.execute(f"CREATE TEMP VIEW anon_input AS SELECT * FROM {reader}('{_escape(str(source))}')")
        started = time.perf_counter()
        released = con.sql(f"SELECT * FROM mondrian('anon_input', {_qi_list_sql(len(qis))}, ?, ?)",
                           params=[*qis, args.k, args.mode])
        if writer == "csv":
            released.write_csv(str(target))
        else:
            released.write_parquet(str(target))
        if not args.quiet:
            print(f"wrote {target} ({args.mode} Mondrian, k = {args.k}) in {time.perf_counter() - started:.2f} s")
        return 0
    finally:
        con.close()


def _escape(text: str) -> str:
    """A file name inside a SQL string literal (DuckDB strings have no backslash escapes)."""
    return text.replace("'", "''")


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # a clear one-line message instead of a traceback
        print(f"duckdb-anon {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
