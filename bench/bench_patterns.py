"""The CIKM 2011 experiments for pattern-preserving anonymization, on Adult and a synthetic table.

    pip install '.[bench]'  &&  python bench/bench_patterns.py [a] [b] [c]

(a) locality-extraction time per segment for segment sizes 100..900 (expect quadratic growth);
(b) random-walk time against the number of constraints (expect linear), and the vectorized kernel
    against a plain-Python loop over segments;
(c) k-means clustering error (share of records whose cluster changes, after matching labels) of our
    releases (several radii) against additive uniform perturbation tuned to the same distortion per column,
    for k = 3, 5, 7, with the re-linkage rates of both;
(d) mean relative error of AVG queries (range predicates on the other two QIs and an occupation subset of
    size 1-14, 2,000 random queries per target attribute) of our releases and of Mondrian releases with
    l-diversity on occupation (uniform-within-class estimates), against distortion, with re-linkage rates.
Each writes a Markdown table and a PNG plot under bench/results/ and prints the table.
"""
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import duckdb_anon  # noqa: E402
from duckdb_anon.walk import walk  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
QIS = ["age", "fnlwgt", "education_num"]


def setup():
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    # synthetic: 10k rows x 3 columns, uniform on [0, 1), deterministic
    con.execute("""CREATE TABLE synthetic AS SELECT range AS id,
                   (hash(range, 1) % 1000000) / 1e6 AS x1, (hash(range, 2) % 1000000) / 1e6 AS x2,
                   (hash(range, 3) % 1000000) / 1e6 AS x3 FROM range(10000)""")
    return con


def write(name, header, rows, note=""):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    text = "\n".join(lines) + ("\n\n" + note if note else "") + "\n"
    (RESULTS / f"{name}.md").write_text(text)
    print(f"\n{name}\n{text}", flush=True)


def extraction(con):
    rows, series = [], {}
    for table, col in [("synthetic", "x1"), ("adult", "fnlwgt")]:
        xs, ys = [], []
        for size in range(100, 1000, 100):
            start = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TEMP TABLE l AS SELECT * FROM localities('{table}', '{col}', segment_size := {size}, sample := 1)")
            took = time.perf_counter() - start
            segments, constraints = con.execute("SELECT count(DISTINCT segment), count(*) FROM l").fetchone()
            per_segment = took / segments
            rows.append([f"{table}.{col}", size, segments, f"{constraints:,}", f"{took:.2f}", f"{per_segment * 1000:.1f}"])
            xs.append(size), ys.append(per_segment)
        series[f"{table}.{col}"] = (xs, ys)
    slopes = {k: np.polyfit(np.log(x), np.log(y), 1)[0] for k, (x, y) in series.items()}
    write("a_extraction", ["column", "segment size", "segments", "constraints", "total (s)", "per segment (ms)"], rows,
          "Log-log slope of time per segment against segment size (2 = quadratic): "
          + ", ".join(f"{k} {v:.2f}" for k, v in slopes.items()) + ".")
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, (x, y) in series.items():
        ax.plot(x, np.array(y) * 1000, "o-", label=f"{k} (slope {slopes[k]:.2f})")
    ax.set_xlabel("segment size"), ax.set_ylabel("extraction time per segment (ms)")
    ax.set_title("(a) locality extraction"), ax.legend(), fig.tight_layout()
    fig.savefig(RESULTS / "a_extraction.png", dpi=120)


def walking(con):
    rows, xs, ys, iterations = [], [], [], 200
    for sample in (0.05, 0.1, 0.2, 0.4, 0.7, 1.0):
        con.execute(f"CREATE OR REPLACE TEMP TABLE l AS SELECT * FROM localities('synthetic', 'x1', segment_size := 100, sample := {sample}, seed := 1)")
        constraints = con.execute("SELECT count(*) FROM l").fetchone()[0]
        start = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TEMP TABLE w AS SELECT * FROM random_walk('synthetic', 'x1', 'l', iterations := {iterations}, segment_size := 100)")
        took = time.perf_counter() - start
        rows.append([sample, f"{constraints:,}", f"{took:.2f}", f"{took / iterations * 1000:.2f}",
                     f"{(constraints + 3 * 10000) * iterations / took:,.0f}"])
        xs.append(constraints), ys.append(took / iterations)
    slope = np.polyfit(np.log(xs), np.log(ys), 1)[0]
    write("b_walk", ["sample", "localities", f"walk, {iterations} steps (s)", "per step (ms)", "constraint-steps/s"], rows,
          f"Synthetic x1 (10,000 values, segment 100). Log-log slope of time per step against localities: {slope:.2f} "
          "(per step the walk also handles the 10,000 values' order and bounds, a fixed cost).")
    loop_note = _loop_versus_vectorized(con)
    (RESULTS / "b_walk.md").write_text((RESULTS / "b_walk.md").read_text() + "\n" + loop_note + "\n")
    print(loop_note)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, np.array(ys) * 1000, "o-")
    ax.set_xlabel("locality constraints"), ax.set_ylabel("walk time per step (ms)")
    ax.set_title("(b) random walk"), fig.tight_layout()
    fig.savefig(RESULTS / "b_walk.png", dpi=120)


def _loop_versus_vectorized(con):
    """The same walk, all segments at once versus one segment at a time in a Python loop."""
    con.execute("CREATE OR REPLACE TEMP TABLE l AS SELECT * FROM localities('synthetic', 'x1', segment_size := 100, sample := 0.1, seed := 1)")
    seg = con.execute("SELECT segment, pos, value, row_id FROM anon_segments('synthetic', 'x1', 100, NULL) ORDER BY segment, pos").df()
    loc = con.execute("SELECT segment, i, j, k, relation = '<=' AS le FROM l").df()
    x = seg["value"].to_numpy()
    starts = np.nonzero(np.diff(seg["segment"].to_numpy(), prepend=-1))[0]
    base = starts[loc["segment"].to_numpy() - 1]
    ci, cj, ck = (base + loc[c].to_numpy() - 1 for c in ("i", "j", "k"))
    le = loc["le"].to_numpy()
    steps, lo, hi = 100, float(x.min()), float(x.max())
    t0 = time.perf_counter()
    walk(x, starts, ci, cj, ck, le, lo, hi, steps, seed=1)
    vectorized = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s, first in enumerate(starts):
        last = starts[s + 1] if s + 1 < len(starts) else len(x)
        mine = (ci >= first) & (ci < last)
        walk(x[first:last], [0], ci[mine] - first, cj[mine] - first, ck[mine] - first, le[mine], lo, hi, steps, seed=1)
    looped = time.perf_counter() - t0
    return (f"Vectorized against a Python loop over segments ({len(starts)} segments, {steps} steps): "
            f"{vectorized:.2f} s against {looped:.2f} s, {looped / vectorized:.0f}x faster.")


def _relinked(con, table):
    """Re-linkage rates of a release: nearest values (the 300 people of `known`) and rank (jointly)."""
    nearest = con.execute("SELECT linked_to_own_record FROM linkage_nearest(?, 'known', ?, 'rid')", [table, QIS]).fetchall()[0][0]
    rank = con.execute("SELECT linked_to_own_record FROM linkage_rank(?, 'adult', ?, 'rid') WHERE column_name = '*'",
                       [table, QIS]).fetchall()[0][0]
    return f"{100 * nearest:.1f} % / {100 * rank:.1f} %"


def clustering(con):
    """k-means on our releases against additive uniform perturbation (Agrawal-Srikant) with the same Dst per
    column: t + U(-a, a) has E|e|/|t| = (a / 2) mean(1 / |t|), so a = 2 Dst / mean(1 / |t|)."""
    from scipy.optimize import linear_sum_assignment
    from sklearn.cluster import KMeans
    import pandas as pd

    original = con.execute("SELECT age, fnlwgt, education_num FROM adult ORDER BY rid").df().to_numpy(float)
    rids = con.execute("SELECT rid FROM adult ORDER BY rid").df()["rid"].to_numpy()
    con.execute("CREATE OR REPLACE TABLE known AS SELECT rid, age, fnlwgt, education_num FROM adult "
                "USING SAMPLE reservoir(300 ROWS) REPEATABLE (1)")

    def labels(data, k):
        z = (data - data.mean(axis=0)) / data.std(axis=0)
        return KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(z)

    def error(a, b, k):
        confusion = np.zeros((k, k))
        np.add.at(confusion, (a, b), 1)
        r, c = linear_sum_assignment(-confusion)
        return 1 - confusion[r, c].sum() / len(a)

    base = {k: labels(original, k) for k in (3, 5, 7)}
    rows, bars = [], []
    for label, kwargs in [("radius 0.2", {"radius": 0.2}), ("radius 0.5 (default)", {}), ("radius 1.0", {"radius": 1.0}),
                          ("domain, segment 100", {"bounds": "domain", "segment_size": 100})]:
        name = "pp_" + label.split(" (")[0].replace(" ", "_").replace(",", "").replace(".", "")
        duckdb_anon.preserve_patterns(con, "adult", QIS, name, seed=7, **kwargs)
        dst = {c: d for c, d, _ in con.execute(f"SELECT * FROM distortion('{name}', 'adult', ?, 'rid')", [QIS]).fetchall()}
        ours = con.execute(f"SELECT age, fnlwgt, education_num FROM {name} ORDER BY rid").df().to_numpy(float)
        d = np.array([dst[c] for c in QIS])
        half = 2 * d / np.mean(1 / np.abs(original), axis=0)
        noisy = original + np.random.default_rng(7).uniform(-half, half, size=original.shape)
        con.register("noisy_df", pd.DataFrame({"rid": rids, **{c: noisy[:, i] for i, c in enumerate(QIS)}}))
        con.execute("CREATE OR REPLACE TABLE noisy AS SELECT * FROM noisy_df")
        con.unregister("noisy_df")
        noise_dst = {c: v for c, v, _ in con.execute("SELECT * FROM distortion('noisy', 'adult', ?, 'rid')", [QIS]).fetchall()}
        ours_link, noise_link = _relinked(con, name), _relinked(con, "noisy")
        for k in (3, 5, 7):
            e1, e2 = error(base[k], labels(ours, k), k), error(base[k], labels(noisy, k), k)
            rows.append([label, ", ".join(f"{dst[c]:.3f}" for c in QIS), ", ".join(f"{noise_dst[c]:.3f}" for c in QIS), k,
                         f"{e1:.3f}", f"{e2:.3f}", ours_link, noise_link])
            bars.append((label, k, e1, e2))
    write("c_kmeans", ["release", "Dst (age, fnlwgt, education_num)", "noise Dst", "k", "pattern-preserving",
                       "additive uniform noise, same Dst", "ours re-linked (nearest / rank)", "noise re-linked"], rows,
          "Adult (age, fnlwgt, education_num), sample 0.1, seed 7, segment 20 and 1,000 walk steps unless said. Error = "
          "share of records whose k-means cluster changes after matching labels (Hungarian), features standardised per "
          "release. Noise: t + U(-a, a) per column, a tuned to our release's Dst. Re-linked: by nearest values for 300 "
          "sampled people, and by rank jointly over the three columns.")
    fig, ax = plt.subplots(figsize=(9, 4))
    pos = np.arange(len(bars))
    ax.bar(pos - 0.2, [b[2] for b in bars], 0.4, label="pattern-preserving")
    ax.bar(pos + 0.2, [b[3] for b in bars], 0.4, label="additive uniform noise, same Dst")
    ax.set_xticks(pos, [f"{b[0].split(' (')[0]}\nk={b[1]}" for b in bars], fontsize=7)
    ax.set_ylabel("clustering error"), ax.set_title("(c) k-means error at equal distortion"), ax.legend()
    fig.tight_layout(), fig.savefig(RESULTS / "c_kmeans.png", dpi=120)


def aggregate_queries(con, queries_per_type=2000):
    """AVG of each attribute under range predicates on the other two and an occupation subset of random size
    1-14. Mondrian releases with l-diversity on occupation are answered with the uniform-within-class
    estimate: a class counts with the share of its (integer) range inside each predicate."""
    import pandas as pd
    rng = np.random.default_rng(11)
    occupations = [r[0] for r in con.execute("SELECT DISTINCT occupation FROM adult ORDER BY 1").fetchall()]
    spans = {c: con.execute(f"SELECT min({c}), max({c}) FROM adult").fetchall()[0] for c in QIS}
    rows = []
    for target in QIS:
        a, b = [c for c in QIS if c != target]
        for q in range(queries_per_type):
            ranges = []
            for col in (a, b):  # a random interval covering 20..80 % of the column's range
                lo, hi = spans[col]
                width = (hi - lo) * rng.uniform(0.2, 0.8)
                start = rng.uniform(lo, hi - width)
                ranges += [start, start + width]
            occ = list(rng.choice(occupations, size=rng.integers(1, 15), replace=False))
            rows.append((target, q, ranges[0], ranges[1], ranges[2], ranges[3], occ))
    con.register("q_df", pd.DataFrame(rows, columns=["target", "qid", "a_lo", "a_hi", "b_lo", "b_hi", "occ"]))
    con.execute("CREATE OR REPLACE TABLE queries AS SELECT * FROM q_df")
    con.unregister("q_df")
    con.execute("CREATE OR REPLACE TABLE known AS SELECT rid, age, fnlwgt, education_num FROM adult "
                "USING SAMPLE reservoir(300 ROWS) REPEATABLE (1)")

    def share(col, lo, hi):  # share of a class's integer values lo..hi inside [q_lo, q_hi]
        return (f"greatest(0, least(r.{col}.hi, floor(q.{hi})) - greatest(r.{col}.lo, ceil(q.{lo})) + 1)"
                f" / (r.{col}.hi - r.{col}.lo + 1)")

    def answers(table, generalized):
        parts = []
        for target in QIS:
            a, b = [c for c in QIS if c != target]
            if generalized:
                parts.append(f"""SELECT q.target, q.qid, sum(w * r.{target}.mean) / nullif(sum(w), 0) AS v, sum(w) AS n
                    FROM queries q JOIN {table} r ON q.target = '{target}' AND r.{a}.hi >= q.a_lo AND r.{a}.lo <= q.a_hi
                       AND r.{b}.hi >= q.b_lo AND r.{b}.lo <= q.b_hi AND list_contains(q.occ, r.occupation),
                    LATERAL (SELECT {share(a, 'a_lo', 'a_hi')} * {share(b, 'b_lo', 'b_hi')} AS w) GROUP BY ALL""")
            else:
                parts.append(f"""SELECT q.target, q.qid, avg(r.{target}) AS v, count(*) AS n FROM queries q JOIN {table} r
                    ON q.target = '{target}' AND r.{a} BETWEEN q.a_lo AND q.a_hi AND r.{b} BETWEEN q.b_lo AND q.b_hi
                       AND list_contains(q.occ, r.occupation) GROUP BY ALL""")
        con.execute(f"CREATE OR REPLACE TEMP TABLE ans_{table} AS " + " UNION ALL ".join(parts))

    con.execute("CREATE OR REPLACE TABLE flat_original AS SELECT rid, age, fnlwgt, education_num, occupation FROM adult")
    answers("flat_original", False)
    releases = []
    for l in (4, 6, 8, 10, 12):
        con.execute(f"""CREATE OR REPLACE TABLE m_l{l} AS SELECT rid, age, fnlwgt, education_num, occupation
                        FROM mondrian('adult', ['age', 'fnlwgt', 'education_num'], {l}, sensitive := 'occupation', l := {l},
                                      output := 'typed')""")
        con.execute(f"""CREATE OR REPLACE TABLE flat_m_l{l} AS SELECT rid, age.mean AS age, fnlwgt.mean AS fnlwgt,
                        education_num.mean AS education_num FROM m_l{l}""")
        releases.append((f"Mondrian, k = l = {l} (occupation)", f"m_l{l}", True, f"flat_m_l{l}"))
    for label, kwargs in [("pattern-preserving, radius 0.2", {"radius": 0.2}), ("pattern-preserving, radius 0.5 (default)", {}),
                          ("pattern-preserving, radius 1.0", {"radius": 1.0}),
                          ("pattern-preserving, domain, 1 step", {"bounds": "domain", "segment_size": 100, "iterations": 1})]:
        name = "d_" + str(len(releases))
        duckdb_anon.preserve_patterns(con, "adult", QIS, name, seed=7, **kwargs)
        con.execute(f"CREATE OR REPLACE TABLE flat_{name} AS SELECT rid, age, fnlwgt, education_num, occupation FROM {name}")
        releases.append((label, f"flat_{name}", False, f"flat_{name}"))
    table_rows, points = [], {"Mondrian, l-diverse": [], "pattern-preserving": []}
    for label, table, generalized, flat in releases:
        answers(table, generalized)
        dst = con.execute(f"SELECT dst FROM distortion('{table}', 'flat_original', ?, 'rid') WHERE column_name = '*'",
                          [QIS]).fetchall()[0][0]
        err = dict(con.execute(f"""SELECT o.target, avg(abs(coalesce(r.v, 0) - o.v) / abs(o.v)) FROM ans_flat_original o
                                   LEFT JOIN ans_{table} r USING (target, qid) WHERE o.n >= 10 GROUP BY o.target""").fetchall())
        table_rows.append([label, f"{dst:.3f}"] + [f"{err[c]:.3f}" for c in QIS] + [_relinked(con, flat)])
        points["Mondrian, l-diverse" if generalized else "pattern-preserving"].append((dst, np.mean(list(err.values()))))
    answered = con.execute("SELECT count(*) FROM ans_flat_original WHERE n >= 10").fetchall()[0][0]
    write("d_aggregates", ["release", "Dst", "mean rel. error AVG(age)", "AVG(fnlwgt)", "AVG(education_num)",
                           "re-linked (nearest / rank)"], table_rows,
          f"{queries_per_type:,} random queries per target attribute (ranges on the other two covering 20-80 % of their "
          f"span, an occupation subset of 1-14 values); {answered:,} with at least 10 matching rows in the original are "
          "scored. Mondrian releases answer with the uniform-within-class estimate; a query that matches nothing counts "
          "as answering 0. Re-linked: nearest values for 300 sampled people (Mondrian: the class mean as the value), rank "
          "jointly.")
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in points.items():
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
    ax.set_xlabel("distortion (Dst)"), ax.set_ylabel("mean relative error of AVG queries")
    ax.set_title("(d) aggregate queries"), ax.legend()
    fig.tight_layout(), fig.savefig(RESULTS / "d_aggregates.png", dpi=120)


def main():
    RESULTS.mkdir(exist_ok=True)
    wanted = set(sys.argv[1:]) or {"a", "b", "c", "d"}
    con = setup()
    if "a" in wanted:
        extraction(con)
    if "b" in wanted:
        walking(con)
    if "c" in wanted:
        clustering(con)
    if "d" in wanted:
        aggregate_queries(con)
    con.close()


if __name__ == "__main__":
    main()
