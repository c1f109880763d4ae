"""mondrian() with l-diversity and t-closeness on large high-cardinality tables under memory_limit = '2GB':
wall time and peak RSS of two copies of the code side by side (run from the project root):

    python bench/bench_models_scale.py                                   # 2M rows, this checkout only
    python bench/bench_models_scale.py 2000000 --code before=/work/main --code after=.
    python bench/bench_models_scale.py 10000000 --code before=/work/main --code after=. --models l

The table (the shape of tests/mondrian/test_memory.py: nearly every row its own QI vector) has an id, five
QIs -- age (74 values), zip (VARCHAR, 90,000), sex (2), date of birth (30,000 days), income (200,000) -- and
diagnosis (INTEGER, 1,000 values: ordered, so t-closeness uses the ordered distance), drawn with setseed()
and random() in one thread (the same table every time) into a database file under /tmp.

Each run is `CREATE TABLE rel AS SELECT * FROM mondrian('highcard', qis, 10, sensitive := 'diagnosis', l := 2)`
(model l) or `..., t := 0.2` (model t), in a fresh process with PYTHONPATH set to that copy of the code, on a
copy of the database file, with memory_limit '2GB', 2 threads and a temporary folder under /tmp. Wall time
and peak RSS are the child process's (os.wait4), whether it completes or fails. A completed run reports the
release's classes, its smallest class, its fewest distinct diagnoses in a class, and a fingerprint of its
rows (an order-free sum of hashes): the same fingerprint for two copies means the same release.
Prints a Markdown table.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import generated_database

QIS = ["age", "zip", "sex", "dob", "income"]
SCRATCH = Path(os.environ.get("DUCKDB_ANON_BENCH_DIR", Path(tempfile.gettempdir()) / "duckdb-anon-models"))
MODELS = {"l": ("l := 2", "l = 2 (distinct)"), "t": ("t := 0.2", "t = 0.2 (ordered)")}


def generate_sql(n):
    """SQL creating table `highcard` with n rows (run with one thread after setseed: the same table each time)."""
    return f"""CREATE TABLE highcard AS
        SELECT range AS id, (17 + floor(random() * 74))::INTEGER AS age,
               (10000 + floor(random() * 90000))::INTEGER::VARCHAR AS zip,
               CASE WHEN random() < 0.5 THEN 'F' ELSE 'M' END AS sex,
               DATE '1935-01-01' + floor(random() * 30000)::INTEGER AS dob,
               floor(random() * 200000)::INTEGER AS income, floor(random() * 1000)::INTEGER AS diagnosis
        FROM range({n})"""


def database(n):
    """The database file holding the n-row table, generated on first use (plain DuckDB: no macros in it)."""
    def fill(con):
        con.execute("SET enable_progress_bar = false")
        con.execute("SET threads = 1")
        con.execute("SELECT setseed(0.42)")
        con.execute(generate_sql(n))
    return generated_database(SCRATCH / f"highcard_{n}.duckdb", fill)


def one(path, model, spill):
    """In the child: run the call on the database copy `path`, print the release's figures as JSON."""
    import duckdb_anon
    con = duckdb_anon.connect(str(path))
    try:
        con.execute("SET threads = 2")
        con.execute("SET enable_progress_bar = false")
        con.execute("SET temp_directory = ?", [spill])
        con.execute("SET memory_limit = '2GB'")
        qis = "[" + ", ".join(f"'{q}'" for q in QIS) + "]"
        started = time.perf_counter()
        con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('highcard', {qis}, 10, sensitive := 'diagnosis', "
                    f"{MODELS[model][0]})")
        took = time.perf_counter() - started
        con.execute("RESET memory_limit")
        keys = ", ".join(QIS)
        classes, smallest, fewest = con.execute(
            f"SELECT count(*), min(n), min(d) FROM (SELECT count(*) AS n, count(DISTINCT diagnosis) AS d FROM rel "
            f"GROUP BY {keys})").fetchall()[0]
        kept, fingerprint = con.execute(f"SELECT count(*), sum(hash(id, {keys}) % 1000000007) FROM rel").fetchall()[0]
        print(json.dumps({"seconds": took, "classes": classes, "smallest": smallest, "fewest": fewest,
                          "kept": kept, "fingerprint": str(fingerprint)}))
    finally:
        con.close()


def measured(code, n, model, timeout=None):
    """Run one call in a child process on `code` (a checkout); its figures, wall time and peak RSS."""
    copy = SCRATCH / f"run_{os.getpid()}.duckdb"
    shutil.copyfile(database(n), copy)
    spill = tempfile.mkdtemp(prefix="spill-", dir=SCRATCH)
    try:
        env = dict(os.environ, PYTHONPATH=str(Path(code).resolve()))
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            started = time.perf_counter()
            child = subprocess.Popen([sys.executable, __file__, "--one", str(copy), "--model", model, "--spill", spill], env=env,
                                     stdout=out, stderr=err, text=True)
            while True:  # the child's own rusage, whether it completes, fails or is stopped at `timeout`
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    break
                if timeout and time.perf_counter() - started > timeout:
                    child.kill()
                time.sleep(0.5)
            wall, peak = time.perf_counter() - started, usage.ru_maxrss / 1024
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            stdout, stderr = out.read(), err.read()
        if child.returncode != 0:
            stopped = timeout and wall > timeout
            reason = f"stopped after {timeout} s" if stopped else next((line for line in reversed(stderr.splitlines()) if "Error" in line), stderr[-140:])[:160]
            return {"failed": reason, "wall": wall, "peak_mb": peak}
        return dict(json.loads(stdout.strip().splitlines()[-1]), wall=wall, peak_mb=peak)
    finally:
        copy.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)
        Path(str(copy) + ".wal").unlink(missing_ok=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*", type=int, default=[2_000_000])
    parser.add_argument("--code", action="append", default=None, help="name=checkout (repeatable); default: this one")
    parser.add_argument("--models", default="l,t", help="l, t or both (l,t)")
    parser.add_argument("--timeout", type=float, help="stop a run after this many seconds")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--spill", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one, args.model, args.spill)
        return
    codes = [c.split("=", 1) for c in (args.code or [f"this={Path(__file__).resolve().parents[1]}"])]
    print("| rows | model | code | wall time (s) | peak RSS (MB) | outcome | classes | smallest | fewest diagnoses | fingerprint |")
    print("|---:|---|---|---:|---:|---|---:|---:|---:|---|")
    for n in args.rows:
        database(n)  # generated outside the measured processes
        for model in args.models.split(","):
            for name, code in codes:
                r = measured(code, n, model, args.timeout)
                peak = f"{r['peak_mb']:.0f}" if r.get("peak_mb") else ""
                if "failed" in r:
                    print(f"| {n:,} | {MODELS[model][1]} | {name} | {r['wall']:.0f} | {peak} | failed: {r['failed']} | | | | |",
                          flush=True)
                    continue
                outcome = "all rows kept" if r["kept"] == n else f"{r['kept']:,} rows (of {n:,})"
                print(f"| {n:,} | {MODELS[model][1]} | {name} | {r['seconds']:.1f} | {peak} | {outcome} | {r['classes']:,} | "
                      f"{r['smallest']} | {r['fewest']} | {r['fingerprint']} |", flush=True)


if __name__ == "__main__":
    main()
