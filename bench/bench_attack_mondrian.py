"""Scoreboard-RH against Mondrian releases of sparse ratings: k enforced row by row over (item, value, ts).
Data: synthetic_ratings(2000, items := 1000, ratings_per_user := 30, seed := 1); 500 targets who know m
items with exact ratings and dates within 14 days (synthetic_aux's defaults). The attack reads the release
as published, in mondrian()'s text and typed shapes. Prints a table.

    python bench/bench_attack_mondrian.py
"""
import time

import duckdb_anon


def main():
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(2000, items := 1000, ratings_per_user := 30, seed := 1)")
    rows = con.execute("SELECT count(*) FROM ratings").fetchall()[0][0]
    releases = {"raw ratings": "ratings"}
    for k in (2, 5, 10, 25):
        for shape in ("text", "typed"):
            name = f"rel_{k}_{shape}"
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], {k}, output := '{shape}')")
            releases[f"mondrian k = {k} ({shape})"] = name
    print(f"{rows:,} ratings of 2,000 users; 500 targets")
    print("| release | known items | re-identified | median entropy (bits) | attack (s) |")
    print("|---|---:|---:|---:|---:|")
    for known in (4, 8):
        con.execute(f"CREATE OR REPLACE TABLE aux AS SELECT * FROM synthetic_aux('ratings', 500, known_items := {known}, seed := 5)")
        con.execute("CREATE OR REPLACE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
        for label, table in releases.items():
            t0 = time.perf_counter()
            hit, entropy = con.execute(f"SELECT reidentified, median_entropy_bits "
                                       f"FROM deanonymize_evaluate('{table}', 'aux', 'truth')").fetchall()[0]
            print(f"| {label} | {known} | {hit:.3f} | {entropy:.2f} | {time.perf_counter() - t0:.1f} |")
    con.close()


if __name__ == "__main__":
    main()
