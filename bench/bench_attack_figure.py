"""Scoreboard-RH in the style of Narayanan and Shmatikov's figures (IEEE S&P 2008): the share of targets
re-identified (eccentricity >= 1.5 and the best record is theirs) against the number of items the
adversary knows, for several adversaries, plus the false-match rate for targets absent from the release.

Data: synthetic_ratings(USERS, items := ITEMS, ratings_per_user := RATINGS, seed := 1). A random tenth of
the users is held out of the release: their aux rows are the absent targets. Targets (present and absent)
are drawn among users with at least 8 ratings, so that "m known items" is exactly m for every target; the
same targets and, for a larger m, a superset of the same items (synthetic_aux's choice depends on the seed
only) are used for every m.

    python bench/bench_attack_figure.py [users]

Prints the tables and writes bench/results/attack_figure.md and bench/results/attack_figure.png.
"""
import sys
import time
from pathlib import Path

import duckdb_anon

USERS, ITEMS, RATINGS = 100_000, 8_000, 40
TARGETS = 250          # present targets, and as many absent ones
KNOWN = range(1, 9)
PHI = 1.5
SETTINGS = [  # label, synthetic_aux arguments
    ("exact ratings, dates ±3 days", "value_noise := 0, days_noise := 3, with_dates := true"),
    ("ratings ±1, dates ±14 days", "value_noise := 1, days_noise := 14, with_dates := true"),
    ("ratings ±1, no dates", "value_noise := 1, with_dates := false"),
]
RESULTS = Path(__file__).resolve().parent / "results"


def prepare(con, users):
    con.execute(f"CREATE TABLE ratings AS SELECT * FROM synthetic_ratings({users}, items := {ITEMS}, "
                f"ratings_per_user := {RATINGS}, seed := 1)")
    con.execute("CREATE TABLE held_out AS SELECT DISTINCT record_id FROM ratings ORDER BY hash(record_id, 'held out') "
                f"LIMIT {users // 10}")
    con.execute("CREATE TABLE published AS SELECT * FROM ratings WHERE record_id NOT IN (SELECT record_id FROM held_out)")
    # the pools targets are drawn from: users with >= 8 ratings, inside and outside the release
    con.execute("""CREATE TABLE eligible AS SELECT record_id FROM ratings GROUP BY record_id HAVING count(*) >= 8""")
    con.execute("""CREATE TABLE present_pool AS SELECT * FROM published WHERE record_id IN (SELECT record_id FROM eligible)""")
    con.execute("""CREATE TABLE absent_pool AS SELECT * FROM ratings
                   WHERE record_id IN (SELECT record_id FROM held_out) AND record_id IN (SELECT record_id FROM eligible)""")


def attack(con, known, aux_args):
    con.execute(f"""CREATE OR REPLACE TABLE aux AS
        SELECT * FROM synthetic_aux('present_pool', {TARGETS}, known_items := {known}, {aux_args}, seed := 7)
        UNION ALL
        SELECT * FROM synthetic_aux('absent_pool', {TARGETS}, known_items := {known}, {aux_args}, seed := 7)""")
    con.execute("""CREATE OR REPLACE TABLE truth AS SELECT DISTINCT target_id,
                   CASE WHEN target_id IN (SELECT record_id FROM held_out) THEN NULL ELSE target_id END AS record_id
                   FROM aux""")
    present, hit, absent, false_rate, entropy = con.execute(
        "SELECT present_targets, reidentified, absent_targets, false_match_rate, median_entropy_bits "
        f"FROM deanonymize_evaluate('published', 'aux', 'truth', phi := {PHI})").fetchone()
    assert present == TARGETS and absent == TARGETS, (present, absent)
    return hit, false_rate, entropy


def table(title, rows):
    lines = [f"{title}", "", "| adversary | " + " | ".join(str(m) for m in KNOWN) + " |",
             "|---|" + "---:|" * len(KNOWN)]
    lines += [f"| {label} | " + " | ".join("–" if v is None else f"{v:.2f}" for v in values) + " |" for label, values in rows]
    return "\n".join(lines)


def plot(hits, falses, path, users):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6))
    for (label, values), marker in zip(hits, "osd"):
        line, = ax.plot(list(KNOWN), values, marker=marker, label=f"re-identified: {label}")
        false = dict(falses)[label]
        ax.plot(list(KNOWN), false, marker=marker, linestyle="--", color=line.get_color(), alpha=0.6,
                label=f"false match (absent target): {label}")
    ax.set_xlabel("items known to the adversary")
    ax.set_ylabel("share of targets")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(list(KNOWN))
    ax.grid(alpha=0.3)
    ax.set_title(f"Scoreboard-RH, eccentricity ≥ {PHI}: synthetic ratings, {users:,} users")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    users = int(sys.argv[1]) if len(sys.argv) > 1 else USERS
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    start = time.perf_counter()
    prepare(con, users)
    rows, published = con.execute("SELECT count(*), count(DISTINCT record_id) FROM published").fetchone()
    hits, falses, entropies = [], [], []
    for label, aux_args in SETTINGS:
        results = [attack(con, m, aux_args) for m in KNOWN]
        hits.append((label, [r[0] for r in results]))
        falses.append((label, [r[1] for r in results]))
        entropies.append((label, [r[2] for r in results]))
    elapsed = time.perf_counter() - start
    con.close()

    header = (f"Data: `synthetic_ratings({users}, items := {ITEMS}, ratings_per_user := {RATINGS}, seed := 1)`, "
              f"a tenth of the users held out; the release has {published:,} users and {rows:,} ratings. "
              f"{TARGETS} present and {TARGETS} absent targets (users with ≥ 8 ratings), φ = {PHI}, "
              f"ρ₀ = 1.5, d₀ = 30. Whole run: {elapsed:.0f} s.")
    text = "\n\n".join([
        header,
        table("Re-identified share of present targets (eccentricity ≥ 1.5 and the best record is theirs), "
              "by items known:", hits),
        table("False-match rate of absent targets (eccentricity ≥ 1.5 for some record), by items known:", falses),
        table("Median entropy of the candidate distribution (bits), all targets, by items known:", entropies),
        "Plot: `attack_figure.png` (solid lines: re-identified; dashed: false matches).",
    ]) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "attack_figure.md").write_text(text, encoding="utf-8")
    plot(hits, falses, RESULTS / "attack_figure.png", users)
    print(text)


if __name__ == "__main__":
    main()
