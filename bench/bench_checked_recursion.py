"""mondrian()'s checked recursion (generated from mondrian/checked.py) against the hand-written one it replaced,
on Adult with its hierarchies and models, in one run (from the project root, in a git checkout):

    python bench/bench_checked_recursion.py [--against REVISION]

The hand-written recursion (anon_partition_checked) and its dispatcher are read from sql/10_mondrian.sql
of REVISION (default f7c33bb, the last one that had it) and installed over a second connection's
anon_partition. Each call is the whole mondrian() materialized as a table, best of three: wall and CPU
seconds of the process, and whether both releases are the same rows. Writes the table to
bench/results/checked_recursion.md with the machine's load average at the start and the end (the machine
may be shared: compare the ratios).
"""
import argparse
import os
import subprocess
import time
from pathlib import Path

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

CASES = [  # (label, k, split rule, models; "hierarchies" added unless no_hierarchies)
    ("k = 10, split rule 'actual'", 10, "actual", {}),
    ("k = 10, split rule 'inherited'", 10, "inherited", {}),
    ("k = 2", 2, "actual", {}),
    ("k = 10, distinct 2-diversity of class, 1 % suppression", 10, "actual",
     {"sensitive": "class", "l": 2, "max_suppression": 0.01}),
    ("k = 10, entropy 1.5-diversity of class", 10, "actual", {"sensitive": "class", "l": 1.5, "l_kind": "entropy"}),
    ("k = 10, no hierarchy, t = 0.2 on class", 10, "actual", {"sensitive": "class", "t": 0.2, "no_hierarchies": True}),
]


def handwritten(revision: str) -> list[str]:
    """The hand-written recursion and the dispatcher that called it, from `revision`'s sql/10_mondrian.sql."""
    text = subprocess.run(["git", "show", f"{revision}:sql/10_mondrian.sql"], check=True, capture_output=True,
                          text=True).stdout
    recursion = text[text.index("-- The checked recursion: `rule` picks"):text.index("-- The shared machinery")]
    dispatch = text[text.index("CREATE OR REPLACE MACRO anon_partition(fn"):text.index("-- The generated partitioner serving")]
    return [recursion, dispatch]


def connection(statements):
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    for statement in statements:
        con.execute(statement)
    duckdb_anon.load_adult(con, "adult")
    return con, duckdb_anon.load_adult_hierarchies(con)


def timed(con, hierarchies, k, rule, models, into):
    models = dict(models)
    if not models.pop("no_hierarchies", False):
        models = {"hierarchies": hierarchies, **models}
    named = "".join(f", {name} := ?" for name in models)
    sql = f"CREATE OR REPLACE TABLE {into} AS SELECT * FROM mondrian('adult', ?, {k}, split_rule := '{rule}'{named})"
    runs = []
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        con.execute(sql, [ADULT_QIS, *models.values()])
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(r[0] for r in runs), min(r[1] for r in runs), con.execute(f"SELECT * FROM {into} ORDER BY ALL").fetchall()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", default="f7c33bb", help="a revision whose sql/10_mondrian.sql has the hand-written recursion")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    generated, old = connection([]), connection(handwritten(args.against))
    lines = ["| call | hand-written wall / CPU (s) | generated wall / CPU (s) | CPU ratio | release |",
             "|---|---:|---:|---:|---|"]
    for label, k, rule, models in CASES:
        new = timed(*generated, k, rule, models, "generated_release")
        before = timed(*old, k, rule, models, "handwritten_release")
        lines.append(f"| {label} | {before[0]:.2f} / {before[1]:.2f} | {new[0]:.2f} / {new[1]:.2f} | "
                     f"{new[1] / before[1]:.2f} | {'the same' if new[2] == before[2] else 'DIFFERENT'} |")
        print(lines[-1], flush=True)
    head = (f"Adult, 30,162 rows, 8 QIs, the six shipped hierarchies unless said; best of three; load average "
            f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores). Hand-written: {args.against}.\n\n")
    table = head + "\n".join(lines) + "\n"
    (Path(__file__).parent / "results" / "checked_recursion.md").write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
