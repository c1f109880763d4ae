"""Where mondrian()'s time goes: DuckDB's own profiler (the numbers EXPLAIN ANALYZE shows), summed by
operator type over the whole plan, including every iteration of the recursive CTE.

    python bench/profile_mondrian.py [rows] [strict|relaxed] [adult|highcard]

The Adult-like table is built as in bench_mondrian.py, the high-cardinality one as in bench_highcard.py.
Prints a Markdown table: operator type, summed time, share of the operators' total, rows produced; then
wall time, binding/planning time and peak buffer memory. Scaled tables are built as in bench_mondrian.py.
"""
import collections
import json
import sys
import tempfile
from pathlib import Path

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_highcard import QIS as HIGHCARD_QIS, generate_sql  # noqa: E402
from bench_mondrian import build  # noqa: E402


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 30162
    mode = sys.argv[2] if len(sys.argv) > 2 else "strict"
    shape = sys.argv[3] if len(sys.argv) > 3 else "adult"
    con = duckdb_anon.connect()
    if shape == "highcard":
        con.execute(generate_sql(rows))
        table, names = "highcard", HIGHCARD_QIS
    else:
        table, names = build(con, rows), ADULT_QIS
    qis = "[" + ", ".join(f"'{q}'" for q in names) + "]"
    out = Path(tempfile.mkdtemp()) / "profile.json"
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"PRAGMA profiling_output = '{out}'")
    con.execute(f"CREATE TEMP TABLE rel AS SELECT * FROM mondrian('{table}', {qis}, 10, '{mode}')")
    con.execute("PRAGMA disable_profiling")
    profile = json.loads(out.read_text())
    con.close()
    timing, produced = collections.Counter(), collections.Counter()

    def walk(node):
        timing[node["type"]] += node.get("timing", 0.0)
        produced[node["type"]] += node.get("operator_cardinality", node.get("intermediate_rows", 0)) or 0
        for child in node.get("children", []):
            walk(child)

    for root in profile["operator"]:
        walk(root)
    total = sum(timing.values()) or 1.0
    print(f"mondrian() on {rows:,} rows ({shape}), {mode}, k = 10, {len(names)} QIs\n")
    print("| operator | time (s, summed over threads) | share | rows out |")
    print("|---|---:|---:|---:|")
    for op, t in timing.most_common(10):
        print(f"| {op} | {t:.3f} | {100 * t / total:.0f} % | {produced[op]:,} |")
    query, planner = profile["query"], profile["planner"]
    print(f"\nwall {query['total_time']:.3f} s, CPU {query['cpu_time']:.3f} s, binding/planning "
          f"{planner['total_time']:.3f} s, optimizer {profile['optimizer']['total_time']:.3f} s, "
          f"peak buffer memory {profile['system']['peak_buffer_memory'] / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
