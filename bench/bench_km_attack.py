"""The attack gate of k^m-anonymity: Scoreboard-RH against k^m releases of synthetic ratings, beside what the
release costs.

Data: synthetic_ratings(users, items := 1000, ratings_per_user := 20, seed := 1). Items are composite:
(item, rating, date), generalized along item intervals of 10 and 100 ids, rating bands of 2, and dates by
month and year (hierarchy_dates). For each k in 5, 10, 25 and m in 2, 4, km_anonymize(k, m) releases the
ratings; the adversary knows m ratings of each target exactly (item, rating, day: synthetic_aux with no
noise), the targets being users with at least 8 ratings. A row more per k: the m = 2 release against an
adversary who knows 4 ratings, which k^m does not promise to stop. Top-1 is deanonymize_evaluate's
top1_share (ties shared); the gate is top-1 <= 1/k + 2 standard errors of a mean of Bernoulli(1/k) draws
over the present targets. Utility: km_measures (information loss, rows and items suppressed, Spearman
correlation of item popularity).

    python bench/bench_km_attack.py [users] [targets] [--realistic]

--realistic: realistic_ratings(users, seed := 1) instead (ratings shaped like MovieLens 100K: long-tailed
activity and item popularity, dates in bursts), at m = 2 only: at m = 4 a person with hundreds of ratings
holds too many itemsets (bench/results/km_attack.md gives what a try cost).
"""
from __future__ import annotations

import math
import os
import sys
import time

import duckdb_anon
from duckdb_anon.km import km_anonymize

HIERARCHIES = {"item": "h_item", "value": "h_value", "ts": "h_ts"}


def shown(value) -> str:
    """A measure, or n/a when it is undefined (Spearman when either popularity is constant)."""
    return "n/a" if value is None or value != value else f"{value:.3f}"


def attack(con, release: str, known: int, targets: int) -> dict:
    con.execute(f"CREATE OR REPLACE TABLE aux AS SELECT * FROM synthetic_aux('eligible', {targets}, known_items := {known}, "
                "days_noise := 0, seed := 5)")
    con.execute(f"CREATE OR REPLACE TABLE truth AS SELECT DISTINCT a.target_id, r.record_id FROM aux a "
                f"LEFT JOIN (SELECT DISTINCT record_id FROM {release}) r ON r.record_id = a.target_id")
    started = time.perf_counter()
    row = con.execute(f"SELECT present_targets, top1_share, top5_share, reidentified, unique_record_share, released_records "
                      f"FROM deanonymize_evaluate('{release}', 'aux', 'truth')").fetchall()[0]
    return dict(zip(["present", "top1", "top5", "matched", "unique", "records"], row), attack_s=time.perf_counter() - started)


def main(users: int = 5000, targets: int = 500, realistic: bool = False) -> None:
    con = duckdb_anon.connect()
    source = (f"realistic_ratings({users}, seed := 1)" if realistic else
              f"synthetic_ratings({users}, items := 1000, ratings_per_user := 20, seed := 1)")
    con.execute(f"CREATE TABLE ratings AS SELECT * FROM {source}")
    con.execute("CREATE TABLE eligible AS SELECT * FROM ratings WHERE record_id IN "
                "(SELECT record_id FROM ratings GROUP BY ALL HAVING count(*) >= 8)")
    con.execute("CREATE TABLE h_item AS SELECT * FROM hierarchy_intervals('ratings', 'item', [10, 100])")
    con.execute("CREATE TABLE h_value AS SELECT * FROM hierarchy_intervals('ratings', 'value', [2])")
    con.execute("CREATE TABLE h_ts AS SELECT * FROM hierarchy_dates('ratings', 'ts')")
    rows = con.execute("SELECT count(*), count(DISTINCT record_id) FROM ratings").fetchall()[0]
    print(f"{source}: {rows[0]:,} ratings of {rows[1]:,} users; "
          f"{targets} targets with >= 8 ratings; load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| release | known | rows kept | information loss | items suppressed | popularity Spearman | top-100 kept "
          "| exact item / rating / day | pair support error | present targets "
          "| top-1 | 1/k + margin | gate | top-5 | matched | unique records | km (s) | attack (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    raw = attack(con, "ratings", 4, targets)
    print(f"| raw ratings | 4 | 100.0 % | 0 | 0 | 1 | 1 | 100 % / 100 % / 100 % | 0 | {raw['present']} | {raw['top1']:.3f} | | | "
          f"{raw['top5']:.3f} | {raw['matched']:.3f} | {raw['unique']:.3f} | | {raw['attack_s']:.1f} |")
    for k in (5, 10, 25):
        for m in ((2,) if realistic else (2, 4)):
            release = f"km_{k}_{m}"
            started = time.perf_counter()
            km_anonymize(con, "ratings", person="record_id", items=["item", "value", "ts"], k=k, m=m,
                         hierarchies=HIERARCHIES, into=release, person_output="raw")  # matched to the truth by id
            km_s = time.perf_counter() - started
            loss, rows_out, items_out, rho, top, exact, pairs = con.execute(
                f"SELECT information_loss, rows_suppressed, items_suppressed, popularity_spearman, top100_kept, exact_rows, "
                f"pair_support_error FROM km_measures('ratings', '{release}', ['item', 'value', 'ts'], "
                f"hierarchies := MAP {{'item': 'h_item', 'value': 'h_value', 'ts': 'h_ts'}}, person := 'record_id')"
            ).fetchall()[0]
            kept = " / ".join(f"{exact[c]:.0%}" for c in ("item", "value", "ts"))
            for known in ((m, 4) if m == 2 else (m,)):
                found = attack(con, release, known, targets)
                bound = 1 / k + 2 * math.sqrt((1 / k) * (1 - 1 / k) / max(found["present"], 1))
                gate = ("pass" if found["top1"] <= bound else "FAIL") if known <= m else "(not promised)"
                print(f"| k^m k = {k}, m = {m} | {known} | {100 * (1 - rows_out):.1f} % | {loss:.3f} | {items_out:.3f} | {shown(rho)} | "
                      f"{top:.0%} | {kept} | {shown(pairs)} | "
                      f"{found['present']} | {found['top1']:.3f} | {bound:.3f} | {gate} | {found['top5']:.3f} | {found['matched']:.3f} | "
                      f"{found['unique']:.3f} | {km_s:.1f} | {found['attack_s']:.1f} |")
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:] if a != "--realistic"), realistic="--realistic" in sys.argv[1:])
