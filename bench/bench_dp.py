"""DP per-item count and mean rating: duckdb-anon's dp_aggregate() beside PipelineDP (local backend).

Data: synthetic_ratings (users with about 43 ratings each, 2,000 items, popularity a power law), at the
sizes given (default 100,000 and 10,000,000 ratings: the fewest people whose ratings reach the size). Both
tools get epsilon 1, delta 1e-6, Laplace noise, the same contribution bounds (max_groups_contributed =
max_partitions_contributed, max_rows_per_group = max_contributions_per_partition = 1, ratings clamped to
[1, 5]) and select items themselves (no public list). Errors are relative to the raw per-item figures (all ratings, no bounding):
the median over the items each tool released. Wall time: the DP computation only (PipelineDP reads the
rows from a Python list made beforehand; duckdb-anon reads the table in the database). One run each,
--chosen-runs (default 5) with the bounds chosen, each choosing afresh.

Rows: each tool at the given bounds; PipelineDP at each max_partitions_contributed of --sweep (smaller
sizes only); duckdb-anon with every bound left for it to choose (its choices spend a share of epsilon that
shrinks as the people grow: the columns epsilon_* of its result).

--repeat R (R > 1) runs each configuration R times (PipelineDP at each m run, duckdb-anon at the given
bounds and with the bounds chosen) and adds a second table: per configuration the mean number of items
released and the mean over runs of the per-run median errors (over the runs releasing an item), and for the
chosen bounds how often each m was taken. Small data release one or two items: single runs are noise there.

    python bench/bench_dp.py [--ratings 100000 10000000] [--max-groups 10] [--sweep-up-to 1000000] [--chosen-runs 5]
                              [--tools ours pipelinedp] [--repeat R] [--out FILE]
Prints the table(s) and writes them to bench/results/dp_vs_pipelinedp.md (or --out).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pipeline_dp

import duckdb_anon

EPSILON, DELTA = 1.0, 1e-6
SWEEP = (1, 2, 5, 10, 20, 50)
RESULTS = Path(__file__).resolve().parent / "results" / "dp_vs_pipelinedp.md"


def people_for(con, size: int) -> int:
    """The fewest people whose ratings number at least `size`: a person's ratings do not depend on how many
    people are asked for, so the count is the first prefix of people reaching `size` (people have about 43
    ratings each, after duplicates of an item are dropped; 30 per person is asked for, then cut)."""
    return con.execute("SELECT min(record_id) + 1 FROM (SELECT record_id, sum(count(*)) OVER (ORDER BY record_id) AS total "
                       "FROM synthetic_ratings(?, items := 2000, ratings_per_user := 50, seed := 1) GROUP BY record_id) "
                       "WHERE total >= ?", [max(1, size // 30), size]).fetchall()[0][0]


def truth(con) -> dict:
    return {item: (n, mean) for item, n, mean in con.execute("SELECT item, count(*), avg(value) FROM r GROUP BY item").fetchall()}


def errors(released: dict, true: dict) -> tuple[int, float, float]:
    """Items released, median relative error of the count and of the mean over them."""
    import numpy as np
    if not released:
        return 0, float("nan"), float("nan")
    count = [abs(c - true[i][0]) / true[i][0] for i, (c, _) in released.items()]
    mean = [abs(m - true[i][1]) / true[i][1] for i, (_, m) in released.items()]
    return len(released), float(np.median(count)), float(np.median(mean))


def ours(con, max_groups: int | None) -> tuple[dict, float, str]:
    bounds = ("" if max_groups is None else
              f", max_groups_contributed := {max_groups}, min_value := 1, max_value := 5")
    start = time.perf_counter()
    frame = con.execute(f"SELECT * FROM dp_aggregate('r', ['item'], value := 'value', aggregates := ['count', 'avg'], "
                        f"epsilon := {EPSILON}, delta := {DELTA}, privacy_unit_column := 'record_id'{bounds})").df()
    seconds = time.perf_counter() - start
    chosen = ""
    if max_groups is None and len(frame):
        row = frame.iloc[0]
        chosen = (f"chose m = {row['max_groups_contributed']:g}, [{row['min_value']:g}, {row['max_value']:g}]; epsilon "
                  f"{row['epsilon_people']:.3f} people, {row['epsilon_max_groups']:.3f} m, {row['epsilon_range']:.3f} range")
    return {int(i): (c, m) for i, c, m in zip(frame["item"], frame["count"], frame["avg"])}, seconds, chosen


def pipeline(rows: list, max_groups: int) -> tuple[dict, float]:
    start = time.perf_counter()
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                                         metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.MEAN],
                                         max_partitions_contributed=max_groups, max_contributions_per_partition=1,
                                         min_value=1.0, max_value=5.0)
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                            value_extractor=lambda r: r[2])
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    released = {int(item): (metrics.count, metrics.mean) for item, metrics in result}
    return released, time.perf_counter() - start


def summary(size, people, tool, m, runs: list) -> str:
    """One row of the --repeat table: `runs` is a list of ((items, count error, mean error), seconds, chosen)."""
    import numpy as np
    items = [r[0][0] for r in runs]
    released = [r[0] for r in runs if r[0][0] > 0]
    count = np.mean([r[1] for r in released]) if released else float("nan")
    mean = np.mean([r[2] for r in released]) if released else float("nan")
    taken = [r[2].split(",")[0].removeprefix("chose ") for r in runs if r[2]]  # "m = 3"
    taken = ", ".join(f"{p}: {taken.count(p)}" for p in sorted(set(taken), key=lambda p: float(p.split()[-1])))
    return (f"| {size:,} | {people:,} | {tool} | {m} | {len(runs)} | {np.mean(items):.2f} | {sum(i == 0 for i in items)} | "
            f"{count:.3f} | {mean:.3f} | {np.mean([r[1] for r in runs]):.2f} | {taken} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratings", type=int, nargs="+", default=[100_000, 10_000_000])
    parser.add_argument("--max-groups", type=int, default=10)
    parser.add_argument("--sweep-up-to", type=int, default=1_000_000, help="PipelineDP's sweep only up to this size")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the table is written")
    parser.add_argument("--tools", nargs="+", choices=("ours", "pipelinedp"), default=["ours", "pipelinedp"],
                        help="which tools to run (PipelineDP alone, to run its slow sizes apart)")
    parser.add_argument("--chosen-runs", type=int, default=5, help="runs with the bounds chosen (each chooses afresh)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each configuration for the table of means")
    args = parser.parse_args()
    lines = ["| ratings | people | tool | max groups | items released | median rel. error count | "
             "median rel. error mean | wall s |", "|---|---|---|---|---|---|---|---|"]
    means = ["", f"Means over {args.repeat} runs of each configuration (errors: mean of the per-run medians, over the runs "
             "releasing an item):", "", "| ratings | people | tool | max groups | runs | mean items released | runs releasing none | "
             "mean median rel. error count | mean median rel. error mean | mean wall s | m taken (runs) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def row(size, people, tool, m, result, seconds):
        n, count, mean = result
        lines.append(f"| {size:,} | {people:,} | {tool} | {m} | {n} | {count:.3f} | {mean:.3f} | {seconds:.2f} |")
        print(lines[-1], flush=True)

    def repeated(size, people, tool, m, run, first: int = 1):
        """Run `run` (returning (result, seconds, chosen)) `first` times as one-run rows, up to --repeat in all."""
        runs = []
        for i in range(max(first, args.repeat)):
            result, seconds, chosen = run()
            runs.append((result, seconds, chosen))
            if i < first:
                row(size, people, tool if m != "chosen" else f"{tool} ({chosen})", m, result, seconds)
        if args.repeat > 1:
            means.append(summary(size, people, tool, m, runs))
            print(means[-1], flush=True)

    print("\n".join(lines))
    for size in args.ratings:
        con = duckdb_anon.connect()
        people = people_for(con, size)
        con.execute("CREATE TABLE r AS SELECT * FROM synthetic_ratings(?, items := 2000, ratings_per_user := 50, seed := 1)",
                    [people])
        rows_n, people = con.execute("SELECT count(*), count(DISTINCT record_id) FROM r").fetchall()[0]
        true = truth(con)

        def ours_run(m):
            released, seconds, chosen = ours(con, m)
            return errors(released, true), seconds, chosen

        if "ours" in args.tools:
            repeated(rows_n, people, "duckdb-anon", args.max_groups, lambda: ours_run(args.max_groups))
        if "pipelinedp" in args.tools:
            rows = con.execute("SELECT record_id, item, value::DOUBLE FROM r").fetchall()

            def pipeline_run(m):
                released, seconds = pipeline(rows, m)
                return errors(released, true), seconds, ""

            sweep = [args.max_groups] + ([m for m in SWEEP if m != args.max_groups] if size <= args.sweep_up_to else [])
            for m in sweep:
                repeated(rows_n, people, "PipelineDP", m, lambda: pipeline_run(m))
            del rows
        if "ours" in args.tools and args.chosen_runs:
            repeated(rows_n, people, "duckdb-anon, bounds chosen", "chosen", lambda: ours_run(None), first=args.chosen_runs)
        con.close()
    args.out.write_text("\n".join(lines + (means if args.repeat > 1 else [])) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
