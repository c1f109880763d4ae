"""Wall time and peak memory of mondrian() on scaled Adult tables (run from the project root):

    python bench/bench_mondrian.py            # 30k, 300k, 1M, 10M rows
    python bench/bench_mondrian.py 30162 1000000
    python bench/bench_mondrian.py 30162 --engines sql levels   # mondrian() and duckdb_anon.mondrian side by side
    python bench/bench_mondrian.py 30162 300000 1000000 --modes strict --engines sql levels floor
    python bench/bench_mondrian.py 30162 --before /path/to/an/older/checkout   # each engine on both codes

A fingerprint (an order-free sum of the release's row hashes) tells whether two codes made the same
release. Scaled tables sample Adult rows with replacement (deterministic hash of the row number) and jitter the two
numeric QIs by -1, 0 or +1. Each run happens in a fresh subprocess so peak memory (ru_maxrss) is its own;
the 10M-row run uses SET memory_limit = '2GB' and spills to a temporary folder. The engine 'floor' is no
anonymization, the least any engine could take: a plain GROUP BY over the QIs counting the rows, written
to a table. `--before DIR` also runs every engine but 'floor' on the package found in DIR (an older
checkout), right after the current code's run, so that both are measured at the same load. Prints a
Markdown table, with the machine's load average before and after.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

try:
    from duckdb_anon.mondrian import mondrian as level_driver
except ImportError:  # a checkout from before the level driver moved to duckdb_anon.mondrian
    from duckdb_anon.levels import mondrian as level_driver

SIZES = [30162, 300_000, 1_000_000, 10_000_000]


def build(con, n):
    duckdb_anon.load_adult(con, "adult")
    if n == 30162:
        return "adult"
    con.execute(f"""CREATE TABLE scaled AS
        SELECT r.range AS rid, a.* EXCLUDE (rid) REPLACE (
               a.age + (hash(r.range, 1) % 3)::INT - 1 AS age,
               a.education_num + (hash(r.range, 2) % 3)::INT - 1 AS education_num)
        FROM range({n}) r JOIN adult a ON a.rid = hash(r.range) % 30162""")
    return "scaled"


def one(n, mode, engine="sql"):
    spill = tempfile.mkdtemp(prefix="duckdb-anon-bench-")  # a scratch folder, never the working tree
    try:
        return measure(n, mode, engine, spill)
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def measure(n, mode, engine, spill):
    con = duckdb_anon.connect()
    table = build(con, n)
    if n >= 10_000_000:
        con.execute("SET memory_limit = '2GB'")
        con.execute("SET temp_directory = ?", [spill])
    qis = "[" + ", ".join(f"'{q}'" for q in ADULT_QIS) + "]"
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu = time.perf_counter(), time.process_time()
    if engine == "sql":
        con.execute(f"CREATE TEMP TABLE rel AS SELECT * FROM mondrian('{table}', {qis}, 10, '{mode}')")
    elif engine == "floor":
        con.execute(f"CREATE TEMP TABLE rel AS SELECT {', '.join(ADULT_QIS)}, count(*) AS n FROM {table} GROUP BY ALL")
    else:
        level_driver(con, table, ADULT_QIS, 10, into="rel", mode=mode)
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    achieved = (None if engine == "floor" else
                con.execute(f"SELECT achieved_k FROM release_measures('rel', {qis})").fetchall()[0][0])
    # an order-free sum of the rows' hashes: the same figure for two codes means the same release
    fingerprint = con.execute("SELECT sum(hash(COLUMNS(*)) % 1000000007) FROM (SELECT struct_pack(*COLUMNS(*)) AS r FROM rel)").fetchall()[0][0]
    con.close()
    return {"rows": n, "mode": mode, "engine": engine, "seconds": took, "cpu": cpu, "peak_mb": peak / 1024, "growth_mb": (peak - base) / 1024,
            "achieved_k": achieved, "fingerprint": str(fingerprint)}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]), sys.argv[3], sys.argv[4])))
        return
    args = sys.argv[1:]
    engines = _option(args, "--engines") or ["sql"]
    modes = _option(args, "--modes") or ["strict", "relaxed"]
    sizes = [int(a) for a in args if a.isdigit()] or SIZES
    before = _option(args, "--before")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| rows | mode | engine | code | wall time (s) | CPU time (s, both cores) | peak RSS (MB) | achieved k | fingerprint |")
    print("|---:|---|---|---|---:|---:|---:|---:|---|")
    for n in sizes:
        for mode in modes:
            for engine in engines:
                codes = [("current", os.environ)] + [("before", {**os.environ, "PYTHONPATH": before[0]})
                                                     for _ in before[:1] if engine != "floor"]
                for code, env in codes:
                    out = subprocess.run([sys.executable, __file__, "--one", str(n), mode, engine], capture_output=True,
                                         text=True, env=env)
                    if out.returncode != 0:
                        print(f"| {n:,} | {mode} | {engine} | {code} | failed: {out.stderr.strip().splitlines()[-1][:80]} | | | | |",
                              flush=True)
                        continue
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    print(f"| {n:,} | {mode} | {engine} | {code} | {r['seconds']:.2f} | {r['cpu']:.2f} | {r['peak_mb']:.0f} | "
                          f"{r['achieved_k'] or '--'} | {r['fingerprint']} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def _option(args, name):
    """The values after `name` up to the next option (empty when absent)."""
    if name not in args:
        return []
    rest = args[args.index(name) + 1:]
    return [a for a in rest[:next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))] if not a.isdigit()]


if __name__ == "__main__":
    main()
