"""The pattern-preserving pipeline on Adult (issue target: extract + walk + check of age, fnlwgt and
education_num, segment 100, sample 0.1, 4,000 iterations, <= 15 s in all). Prints a Markdown table per
column: constraints kept, time of each stage, walk throughput (constraints x steps per second), violations
and mean relative distortion. Run from the project root: python bench/bench_walk.py [iterations]"""
import sys
import time

import duckdb_anon

COLUMNS = ["age", "fnlwgt", "education_num"]


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    for walk_threads in (None, 1):
        run(iterations, walk_threads)


def run(iterations, walk_threads):
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    setting = "DuckDB's default threads" if walk_threads is None else f"SET threads = {walk_threads} for the walk"
    print(f"Adult, segment 100, sample 0.1, {iterations} iterations, {setting}\n")
    print("| column | localities | extract (s) | walk (s) | check (s) | constraint-steps/s | violations | distortion |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    total = 0.0
    for col in COLUMNS:
        t0 = time.perf_counter()
        con.execute(f"CREATE TABLE locs_{col} AS SELECT * FROM localities('adult', '{col}', segment_size := 100, "
                    "sample := 0.1, seed := 7)")
        default_threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        if walk_threads:
            con.execute(f"SET threads = {walk_threads}")
        t1 = time.perf_counter()
        con.execute(f"CREATE TABLE pub_{col} AS SELECT * FROM random_walk('adult', '{col}', 'locs_{col}', "
                    f"iterations := {iterations}, seed := 7)")
        t2 = time.perf_counter()
        con.execute(f"SET threads = {default_threads}")
        bad = con.execute(f"SELECT count(*) FROM check_localities('pub_{col}', '{col}', 'locs_{col}')").fetchone()[0]
        t3 = time.perf_counter()
        kept = con.execute(f"SELECT count(*) FROM locs_{col}").fetchone()[0]
        dst = con.execute(f"SELECT avg(abs(p.{col} - a.{col}) / abs(a.{col})) FROM adult a JOIN pub_{col} p USING (rid)").fetchone()[0]
        # the walk also keeps each segment's order and both bounds of every value
        rows = 30162
        steps = iterations * (kept + rows + 2 * rows)
        print(f"| {col} | {kept:,} | {t1 - t0:.2f} | {t2 - t1:.2f} | {t3 - t2:.2f} | {steps / (t2 - t1):,.0f} | {bad} | {dst:.3f} |",
              flush=True)
        total += t3 - t0
    print(f"\nwhole pipeline, three columns: {total:.1f} s\n")
    con.close()


if __name__ == "__main__":
    main()
