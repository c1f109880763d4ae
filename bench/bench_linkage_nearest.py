"""linkage_nearest() on perturbed releases of a long-tailed synthetic table, for this checkout and others
side by side (run from the project root):

    python bench/bench_linkage_nearest.py --code before=/path/to/other/checkout --code after=.

The table is the one of tests/sql/test_linkage_perturbed.py scaled by --rows: a log-normal income rounded
to whole units, hours with 10 values, a log-normal count; released by preserve_patterns() (nearly every
released value distinct) and unchanged (many ties); the adversary knows every 20th person. Each checkout
runs in a process of its own, the checkouts interleaved --runs times; the table gives the median and the
smallest time per call and checks that the figures agree. Prints the load average: the machine is shared,
so compare checkouts within one run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CALL = r"""
import json, sys, time, duckdb_anon
rows = int(sys.argv[1])
con = duckdb_anon.connect()
con.execute(f'''CREATE TABLE syn AS SELECT id, round(exp(4 + 0.5 * z1))::DOUBLE AS income,
                (38 + (hash(id, 3) % 10))::INTEGER AS hours, round(exp(2.5 + 0.5 * z2))::INTEGER AS visits
                FROM (SELECT range AS id,
                        sqrt(-2 * ln((hash(range, 1) % 1000000 + 1) / 1e6)) * cos(2 * pi() * (hash(range, 2) % 1000000) / 1e6) AS z1,
                        sqrt(-2 * ln((hash(range, 4) % 1000000 + 1) / 1e6)) * cos(2 * pi() * (hash(range, 5) % 1000000) / 1e6) AS z2
                      FROM range({rows}))''')
duckdb_anon.preserve_patterns(con, "syn", ["income", "hours", "visits"], "pub")
con.execute("CREATE TABLE known AS SELECT * FROM syn WHERE id % 20 = 0")
out = {}
for release in ("pub", "syn"):
    started = time.perf_counter()
    figures = con.execute(f"SELECT * FROM linkage_nearest('{release}', 'known', ['income', 'hours', 'visits'], 'id')").fetchall()[0]
    out[release] = [time.perf_counter() - started, [round(x, 9) for x in figures]]
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=None, help="name=checkout (repeatable); default: this one")
    parser.add_argument("--rows", type=int, default=15_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    codes = dict(c.split("=", 1) for c in (args.code or [f"this={Path(__file__).resolve().parents[1]}"]))
    times = {(name, release): [] for name in codes for release in ("pub", "syn")}
    figures = {}
    for _ in range(args.runs):
        for name, code in codes.items():
            done = subprocess.run([sys.executable, "-c", CALL, str(args.rows)], capture_output=True, text=True, cwd="/",
                                  env={**os.environ, "PYTHONPATH": str(Path(code).resolve())})
            if done.returncode:
                raise SystemExit(f"{code}: {done.stderr[-600:]}")
            for release, (seconds, found) in json.loads(done.stdout.splitlines()[-1]).items():
                times[name, release].append(seconds)
                figures.setdefault(release, {})[name] = found
    labels = {"pub": "preserve_patterns() release (values nearly all distinct)", "syn": "the table itself (many ties)"}
    print(f"linkage_nearest(), {args.rows:,} rows, {args.rows // 20:,} known people\n")
    print("| release | " + " | ".join(f"{name}: median (s) | {name}: min (s)" for name in codes) + " | same figures |")
    print("|---|" + "---:|---:|" * len(codes) + "---|")
    for release in ("pub", "syn"):
        cells = []
        for name in codes:
            found = sorted(times[name, release])
            cells += [f"{found[len(found) // 2]:.2f}", f"{found[0]:.2f}"]
        same = len({json.dumps(f) for f in figures[release].values()}) == 1
        print(f"| {labels[release]} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.runs} runs each")


if __name__ == "__main__":
    main()
