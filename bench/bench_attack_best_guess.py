"""Scoreboard-RH's best guesses against its eccentricity-gated matches, on Mondrian releases of ratings.

Data: synthetic_ratings(1000, items := 1700, ratings_per_user := 100, seed := 1), about the size of a public
ratings set of ~1,000 people and ~100,000 ratings. Releases: the raw ratings and mondrian() over (item,
value, ts) with k = 10 and 25. Adversaries (all users with at least 8 ratings are targets): 8 known ratings
(exact, dates within 14 days: synthetic_aux's defaults), and "6 of 8": 6 of them plus 2 ratings the target
never made (a random item, rating and date). Per release and adversary, deanonymize_evaluate() gives the
share matched with eccentricity >= 1.5 (reidentified), the share whose top candidate is their own record
(top1_share), among the five best (top5_share), the records whose released rows are unique, and chance
(1 / records). Prints a table; writes it to bench/results/attack_best_guess.md.

    python bench/bench_attack_best_guess.py
"""
import time
from pathlib import Path

import duckdb_anon

RESULTS = Path(__file__).resolve().parent / "results" / "attack_best_guess.md"


def main():
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(1000, items := 1700, ratings_per_user := 100, seed := 1)")
    con.execute("CREATE TABLE pool AS SELECT * FROM ratings WHERE record_id IN "
                "(SELECT record_id FROM ratings GROUP BY record_id HAVING count(*) >= 8)")
    targets = con.execute("SELECT count(DISTINCT record_id) FROM pool").fetchall()[0][0]
    rows, users = con.execute("SELECT count(*), count(DISTINCT record_id) FROM ratings").fetchall()[0]
    con.execute(f"CREATE TABLE aux_8 AS SELECT * FROM synthetic_aux('pool', {targets}, known_items := 8, seed := 5)")
    con.execute(f"""CREATE TABLE aux_6_of_8 AS
        SELECT * FROM synthetic_aux('pool', {targets}, known_items := 6, seed := 5)
        UNION ALL
        SELECT t.target_id, w.item, 1 + (hash(t.target_id, j, 'v') % 5)::INTEGER AS value,
               DATE '2000-01-01' + (hash(t.target_id, j, 'd') % 2190)::INTEGER AS ts
        FROM (SELECT DISTINCT target_id FROM synthetic_aux('pool', {targets}, known_items := 6, seed := 5)) t,
             range(2) r(j),
             LATERAL (SELECT (hash(t.target_id, j, 'i') % 1700)::BIGINT AS item) w
        WHERE NOT EXISTS (SELECT 1 FROM ratings x WHERE x.record_id = t.target_id AND x.item = w.item)""")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux_8")
    releases = {"raw ratings": "ratings"}
    for k in (10, 25):
        con.execute(f"CREATE TABLE rel_{k} AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], {k})")
        releases[f"mondrian k = {k}"] = f"rel_{k}"
    lines = [f"{rows:,} ratings of {users:,} users; {targets:,} targets (every user with 8+ ratings); "
             f"chance = 1/{users:,} = {1 / users:.4f}", "",
             "| release | adversary | matched (eccentricity >= 1.5) | top-1 | top-5 | unique records | attack (s) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    for label, table in releases.items():
        for adversary, aux in (("8 known", "aux_8"), ("6 of 8 known", "aux_6_of_8")):
            t0 = time.perf_counter()
            hit, top1, top5, unique = con.execute(
                "SELECT reidentified, top1_share, top5_share, unique_record_share "
                "FROM deanonymize_evaluate(?, ?, 'truth')", [table, aux]).fetchall()[0]
            line = (f"| {label} | {adversary} | {100 * hit:.1f} % | {100 * top1:.1f} % | {100 * top5:.1f} % | "
                    f"{100 * unique:.1f} % | {time.perf_counter() - t0:.1f} |")
            print(line, flush=True)
            lines.append(line)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    con.close()


if __name__ == "__main__":
    main()
