"""What opening a database costs: a fresh process's wall time for plain DuckDB and for duckdb-anon's
connect(), in memory, over a database file that holds the install and on a new file, and for
`duckdb-anon sql FILE "SELECT 1"` and `duckdb-anon install --create NEW`, for this checkout and others side
by side (run from the project root):

    python bench/bench_connect.py --code before=/path/to/other/checkout --code after=.

Each checkout installs into a file of its own first, and makes its install template (in a temporary cache
folder, DUCKDB_ANON_CACHE) with one run that is not timed. Each command then runs --runs times, the
checkouts interleaved; the table gives the median and the smallest time. Prints the load average too:
the machine is shared, so compare checkouts within one run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "python: import duckdb; duckdb.connect(FILE)": ["-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()", "{file}"],
    "python: import duckdb_anon; connect() in memory": ["-c", "import duckdb_anon; duckdb_anon.connect().close()"],
    "python: import duckdb_anon; connect(FILE)": ["-c", "import duckdb_anon, sys; duckdb_anon.connect(sys.argv[1]).close()",
                                                  "{file}"],
    'duckdb-anon sql FILE "SELECT 1"': ["-m", "duckdb_anon.cli", "sql", "{file}", "SELECT 1"],
    "python: import duckdb_anon; connect(NEW FILE)": ["-c", "import duckdb_anon, sys; duckdb_anon.connect(sys.argv[1]).close()",
                                                      "{new}"],
    "duckdb-anon install --create NEW": ["-m", "duckdb_anon.cli", "install", "--create", "{new}"],
}


def run(code: Path, arguments: list[str], file: Path, cache: Path) -> float:
    new = file.with_name(f"new-{time.time_ns()}.duckdb")  # a file that does not exist yet
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *[a.format(file=file, new=new) for a in arguments]], capture_output=True, text=True,
                          cwd="/", env={**os.environ, "PYTHONPATH": str(code), "DUCKDB_ANON_CACHE": str(cache)})
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{code}: {arguments} failed: {done.stderr[-400:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=None, help="name=checkout (repeatable); default: this one")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    codes = dict(c.split("=", 1) for c in (args.code or [f"this={Path(__file__).resolve().parents[1]}"]))
    scratch = Path(tempfile.mkdtemp(prefix="duckdb-anon-connect-"))
    files = {name: scratch / f"{name}.duckdb" for name in codes}
    caches = {name: scratch / f"cache-{name}" for name in codes}
    for name, code in codes.items():  # the install in the file, and the template: not timed
        run(Path(code).resolve(), COMMANDS["python: import duckdb_anon; connect(FILE)"], files[name], caches[name])
        run(Path(code).resolve(), COMMANDS["python: import duckdb_anon; connect() in memory"], files[name], caches[name])
    times = {(name, command): [] for name in codes for command in COMMANDS}
    for _ in range(args.runs):
        for command, arguments in COMMANDS.items():
            for name, code in codes.items():
                times[name, command].append(run(Path(code).resolve(), arguments, files[name], caches[name]))
    print("| command | " + " | ".join(f"{name}: median (s) | {name}: min (s)" for name in codes) + " |")
    print("|---|" + "---:|---:|" * len(codes))
    for command in COMMANDS:
        cells = []
        for name in codes:
            found = sorted(times[name, command])
            cells += [f"{found[len(found) // 2]:.2f}", f"{found[0]:.2f}"]
        print(f"| {command} | " + " | ".join(cells) + " |")
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.runs} runs each")


if __name__ == "__main__":
    main()
