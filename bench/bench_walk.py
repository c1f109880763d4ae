"""The pattern-preserving pipeline on Adult (age, fnlwgt, education_num): time, utility and privacy of each
kind of bounds. For every release: the pipeline's time (localities + random_walk + check_localities, three
columns), constraint violations, Dst (distortion()), Spearman rank correlation with the original per column,
and the share of people re-linked to their own record by nearest values (linkage_nearest(), a sample of
people), by rank (linkage_rank(), jointly) and by segment pattern (linkage_pattern(), the most exposed column),
with the time of the three pattern audits. The pipeline is timed best of three (once for the slow 4,000-step
release); the machine's load average is printed with the table. Writes bench/results/walk_bounds.md and
prints it. Run from the project root: python bench/bench_walk.py"""
import os
import time
from pathlib import Path

import duckdb_anon

COLUMNS = ["age", "fnlwgt", "education_num"]
RESULTS = Path(__file__).resolve().parent / "results"
RELEASES = [  # label, preserve_patterns() arguments, pipeline runs (the best is reported)
    ("radius 0.5 (default)", {}, 3),
    ("radius 0.2", {"radius": 0.2}, 3),
    ("radius 1.0", {"radius": 1.0}, 3),
    ("domain, segment 100, 4,000 steps", {"bounds": "domain", "segment_size": 100, "iterations": 4000}, 1),
    ("domain, segment 100, 1 step", {"bounds": "domain", "segment_size": 100, "iterations": 1}, 3),
    ("segment, segment 100, 1,000 steps", {"bounds": "segment", "segment_size": 100}, 3),
]


def audit(con, table, segment_size, people=500):
    cols = list(COLUMNS)
    dst = dict((c, d) for c, d, _ in con.execute("SELECT * FROM distortion(?, 'adult', ?, 'rid')", [table, cols]).fetchall())
    ranks = con.execute(f"""SELECT {', '.join(f'corr(a.r_{c}, p.r_{c})' for c in cols)} FROM
        (SELECT rid, {', '.join(f'rank() OVER (ORDER BY {c}) AS r_{c}' for c in cols)} FROM adult) a JOIN
        (SELECT rid, {', '.join(f'rank() OVER (ORDER BY {c}) AS r_{c}' for c in cols)} FROM {table}) p USING (rid)""").fetchall()[0]
    nearest = con.execute("SELECT linked_to_own_record FROM linkage_nearest(?, 'known', ?, 'rid')", [table, cols]).fetchall()[0][0]
    rank = con.execute("SELECT linked_to_own_record FROM linkage_rank(?, 'adult', ?, 'rid') WHERE column_name = '*'",
                       [table, cols]).fetchall()[0][0]
    start = time.perf_counter()
    pattern = {c: con.execute("SELECT linked_to_own_record FROM linkage_pattern(?, 'adult', ?, 'rid', segment_size := ?)",
                              [table, c, segment_size]).fetchall()[0][0] for c in cols}
    return dst, ranks, nearest, rank, pattern, time.perf_counter() - start


def main():
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE known AS SELECT rid, age, fnlwgt, education_num FROM adult USING SAMPLE reservoir(500 ROWS) REPEATABLE (1)")
    rows = []
    loads = []
    for i, (label, kwargs, runs) in enumerate(RELEASES):
        table, times = f"pub{i}", []
        for _ in range(runs):
            loads.append(os.getloadavg()[0])
            start = time.perf_counter()
            names = duckdb_anon.preserve_patterns(con, "adult", COLUMNS, table, seed=7, **kwargs)
            bad = sum(con.execute(f"SELECT count(*) FROM check_localities('{table}', '{c}', '{names[c]}')").fetchall()[0][0]
                      for c in COLUMNS)
            times.append(time.perf_counter() - start)
        dst, ranks, nearest, rank, pattern, audit_time = audit(con, table, kwargs.get("segment_size", 20))
        worst = max(pattern, key=pattern.get)
        rows.append([label, f"{min(times):.1f}", bad, f"{dst['*']:.3f}", ", ".join(f"{dst[c]:.3f}" for c in COLUMNS),
                     ", ".join(f"{r:.2f}" for r in ranks), f"{100 * nearest:.1f} %", f"{100 * rank:.1f} %",
                     f"{100 * pattern[worst]:.1f} % ({worst})", f"{audit_time:.1f}"])
        print(rows[-1], flush=True)
    header = ["release", "pipeline (s)", "violations", "Dst", "Dst per column", "rank corr. per column",
              "re-linked: nearest", "rank", "pattern (worst column)", "pattern audits (s)"]
    text = "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
                     + ["| " + " | ".join(str(v) for v in r) + " |" for r in rows])
    text += ("\n\nAdult, 30,162 rows; columns age, fnlwgt, education_num; sample 0.1 of the localities, seed 7; segment 20 "
             "and 1,000 steps unless said. Re-linked: by nearest values for 500 sampled people; by rank jointly over "
             "the three columns; by segment pattern, the column where it links most. Pipeline time: localities, walk "
             "and check of the three columns, best of three runs (one for the 4,000-step release); pattern audits: "
             "linkage_pattern() on the three columns. On a 2-core machine shared with other work: load average "
             f"{min(loads):.1f} to {max(loads):.1f} during the runs.\n")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "walk_bounds.md").write_text(text)
    print(text)
    con.close()


if __name__ == "__main__":
    main()
