"""Hierarchy-based Mondrian on Adult with the published hierarchies (run from the project root):

    python bench/adult_hierarchies.py

For k = 2 .. 100 and both split rules: NCP (leaf-based widths for the hierarchical QIs, computed by ncp()
from the original values), classes, achieved k and the wall time of the mondrian() call. Prints a Markdown
table and writes it to bench/results/adult_hierarchies.md.
"""
import time
from pathlib import Path

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS


def main():
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    duckdb_anon.load_adult(con, "adult")
    tables = duckdb_anon.load_adult_hierarchies(con)
    qis = "[" + ", ".join(f"'{q}'" for q in ADULT_QIS) + "]"
    hierarchies = "{" + ", ".join(f"'{q}': '{t}'" for q, t in tables.items()) + "}"
    lines = ["| k | split_rule | NCP % | classes | achieved k | time (s) |", "|---:|---|---:|---:|---:|---:|"]
    for k in (2, 5, 10, 25, 50, 100):
        for rule in ("actual", "inherited"):
            started = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TABLE rel AS SELECT * FROM mondrian('adult', {qis}, {k}, "
                        f"hierarchies := {hierarchies}, split_rule := '{rule}')")
            took = time.perf_counter() - started
            ncp = con.execute(f"SELECT ncp_percent FROM ncp('rel', 'adult', {qis}, 'rid', hierarchies := {hierarchies})").fetchone()[0]
            classes, achieved = con.execute(f"SELECT classes, achieved_k FROM release_measures('rel', {qis})").fetchone()
            lines.append(f"| {k} | {rule} | {ncp:.4f} | {classes:,} | {achieved} | {took:.2f} |")
            print(lines[-1], flush=True)
    con.close()
    out = Path(__file__).parent / "results" / "adult_hierarchies.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
