"""How long `duckdb-anon --version`, `--help` and `report --help` take: the wall time of a fresh process,
for this checkout and (--package) others, each command run 7 times. Prints a table and the load average,
since the figures scale with how busy the machine is.

    python bench/bench_cli_startup.py [--package OTHER_CHECKOUT ...]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEUTRAL = "/"  # run from a folder with no duckdb_anon in it, so that PYTHONPATH picks the checkout
COMMANDS = (["--version"], ["--help"], ["report", "--help"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", type=Path, default=[], help="another checkout to time too")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"])
    bare = time.perf_counter() - started
    print("| checkout | command | min (s) | median (s) |\n|---|---|---:|---:|")
    for package in [*args.package, ROOT]:
        for command in COMMANDS:
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *command], capture_output=True, cwd=NEUTRAL,
                               env={**os.environ, "PYTHONPATH": str(package)})
                times.append(time.perf_counter() - started)
            times.sort()
            print(f"| {package} | duckdb-anon {' '.join(command)} | {times[0]:.3f} | {times[len(times) // 2]:.3f} |")
    print(f"\npython -c pass: {bare:.3f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
