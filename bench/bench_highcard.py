"""Wall time and peak memory of mondrian() on high-cardinality tables, where nearly every row is its own
QI vector (run from the project root):

    python bench/bench_highcard.py                      # 1M and 10M rows, strict, k = 10
    python bench/bench_highcard.py 100000000            # 100M rows (memory_limit 8GB, spills)
    python bench/bench_highcard.py 1000000 --mode relaxed
    python bench/bench_highcard.py 10000000 --engine levels   # the level driver (duckdb_anon.mondrian)
    python bench/bench_highcard.py 100000000 --max-temp 45GB  # stop when the spilled data would exceed 45 GB
    python bench/bench_highcard.py 10000000 --l 2              # distinct l-diversity of diagnosis (checked recursion)

The table (deterministic, any row count: every value is a hash of the row number) has an id, six QIs --
age (74 values), zip (VARCHAR, 90,000 values), sex (2), education (VARCHAR, 16), date of birth (DATE,
30,000 days), income (INTEGER, 200,000 values) -- and diagnosis (1,000 values; the sensitive column of
``--l``). It is generated once per row
count into a database file in a scratch folder (reused by later runs). Each mondrian() run happens in a
fresh process that opens that file with memory_limit 2GB (8GB above 10M rows) and a temporary folder for
spilling, materializes the release as a table, and reports its own peak RSS (ru_maxrss, taken right after
the release is written); it then checks that every row is kept and every class holds at least k rows.
Prints a Markdown table.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb_anon
from duckdb_anon import mondrian
from scratch import generated_database

QIS = ["age", "zip", "sex", "education", "dob", "income"]
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
             "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
SCRATCH = Path(os.environ.get("DUCKDB_ANON_BENCH_DIR", Path(tempfile.gettempdir()) / "duckdb-anon-highcard"))


def generate_sql(n):
    """SQL creating table `highcard` with n rows; the same n always gives the same table."""
    education = "[" + ", ".join(f"'{e}'" for e in EDUCATION) + "]"
    return f"""CREATE TABLE highcard AS
        SELECT range AS id,
               (17 + hash(range, 1) % 74)::INTEGER AS age,
               (10000 + hash(range, 2) % 90000)::VARCHAR AS zip,
               CASE WHEN hash(range, 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
               {education}[(hash(range, 4) % 16)::INTEGER + 1] AS education,
               DATE '1935-01-01' + (hash(range, 5) % 30000)::INTEGER AS dob,
               (hash(range, 6) % 200000)::INTEGER AS income,
               (hash(range, 7) % 1000)::INTEGER AS diagnosis
        FROM range({n})"""


def database(n):
    """The database file holding the n-row table, generated on first use (plain DuckDB: no macros in it)."""
    def fill(con):
        con.execute("SET temp_directory = ?", [str(SCRATCH / "tmp")])
        con.execute(generate_sql(n))
    return generated_database(SCRATCH / f"highcard_{n}.duckdb", fill)


def memory_limit(n):
    return "2GB" if n <= 10_000_000 else "8GB"


def one(n, mode, k, engine="sql", max_temp=None, l=None):
    con = duckdb_anon.connect(str(database(n)))
    con.execute(f"SET memory_limit = '{memory_limit(n)}'")
    if max_temp:  # DuckDB refuses to spill past this: the run fails there instead of filling the disk
        con.execute("SET max_temp_directory_size = ?", [max_temp])
    spill = tempfile.mkdtemp(prefix="spill-", dir=SCRATCH)
    try:
        return _measured(con, spill, n, mode, k, engine, l)
    finally:  # a failed run leaves no spilled data behind either
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _measured(con, spill, n, mode, k, engine, l):
    con.execute("SET temp_directory = ?", [spill])
    con.execute("DROP TABLE IF EXISTS rel")
    qis = "[" + ", ".join(f"'{q}'" for q in QIS) + "]"
    model = {"sensitive": "diagnosis", "l": l} if l else {}
    started = time.perf_counter()
    if engine == "sql":
        con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('highcard', {qis}, {k}, '{mode}'"
                    f"{', sensitive := ?, l := ?' if l else ''})", list(model.values()))
    else:
        mondrian.mondrian(con, "highcard", QIS, k, into="rel", mode=mode, **model)
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows, classes, smallest = con.execute(
        "SELECT sum(n), count(*), min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY ALL)".replace(
            "GROUP BY ALL", "GROUP BY " + ", ".join(QIS))).fetchall()[0]
    source_rows = con.execute("SELECT count(*) FROM highcard").fetchall()[0][0]
    # the model, recomputed in plain SQL: the fewest distinct diagnoses of a class
    fewest = con.execute(f"SELECT min(d) FROM (SELECT count(DISTINCT diagnosis) AS d FROM rel GROUP BY {', '.join(QIS)})"
                         ).fetchall()[0][0] if l else None
    con.execute("DROP TABLE rel")
    return {"rows": n, "mode": mode, "engine": engine, "seconds": took, "peak_mb": peak / 1024, "kept": rows == source_rows,
            "classes": classes, "smallest": smallest, "limit": memory_limit(n), "fewest_diagnoses": fewest}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*", type=int, default=[1_000_000, 10_000_000])
    parser.add_argument("--mode", default="strict", choices=["strict", "relaxed"])
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--engine", default="sql", choices=["sql", "levels"],
                        help="sql: SELECT * FROM mondrian(...); levels: duckdb_anon.mondrian.mondrian()")
    parser.add_argument("--max-temp", help="the most a run may spill (DuckDB's max_temp_directory_size, e.g. 45GB)")
    parser.add_argument("--l", type=int, help="distinct l-diversity of the sensitive column diagnosis")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.rows[0], args.mode, args.k, args.engine, args.max_temp, args.l)))
        return
    print("| rows | engine | mode | model | memory_limit | wall time (s) | peak RSS (MB) | all rows kept | classes | smallest class | fewest diagnoses |")
    print("|---:|---|---|---|---|---:|---:|---|---:|---:|---:|")
    model = f"l = {args.l}" if args.l else "k only"
    for n in args.rows:
        database(n)  # generated outside the measured process
        started = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--mode", args.mode, "-k", str(args.k),
                              "--engine", args.engine, *(["--max-temp", args.max_temp] if args.max_temp else []),
                              *(["--l", str(args.l)] if args.l else [])],
                             capture_output=True, text=True)
        if out.returncode != 0:
            reason = next((line for line in out.stderr.splitlines() if "Error" in line), "?")[:140]
            print(f"| {n:,} | {args.engine} | {args.mode} | {model} | {memory_limit(n)} | failed after {time.perf_counter() - started:.0f} s: {reason} | | | | | |", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {n:,} | {r['engine']} | {r['mode']} | {model} | {r['limit']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
              f"{'yes' if r['kept'] else 'NO'} | {r['classes']:,} | {r['smallest']} | {r['fewest_diagnoses'] or ''} |", flush=True)


if __name__ == "__main__":
    main()
