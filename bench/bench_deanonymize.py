"""Scoreboard-RH at the issue's scale: 500k users x ~50 ratings (synthetic, 17,770 items as Netflix had),
1,000 targets x 8 known items (dates within 14 days, ratings exact). Target: <= 30 s. Prints a table.

    python bench/bench_deanonymize.py [users]
"""
import sys
import time

import duckdb_anon


def main():
    users = int(sys.argv[1]) if len(sys.argv) > 1 else 500_000
    con = duckdb_anon.connect()
    t0 = time.perf_counter()
    con.execute(f"CREATE TABLE ratings AS SELECT * FROM synthetic_ratings({users}, items := 17770, ratings_per_user := 50, seed := 1)")
    t1 = time.perf_counter()
    con.execute("CREATE TABLE aux AS SELECT * FROM synthetic_aux('ratings', 1000, known_items := 8, seed := 3)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    t2 = time.perf_counter()
    present, hit, entropy = con.execute("SELECT present_targets, reidentified, median_entropy_bits "
                                        "FROM deanonymize_evaluate('ratings', 'aux', 'truth')").fetchone()
    t3 = time.perf_counter()
    rows = con.execute("SELECT count(*) FROM ratings").fetchone()[0]
    print("| users | ratings | generate (s) | deanonymize 1,000 targets (s) | re-identified | median entropy (bits) |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {users:,} | {rows:,} | {t1 - t0:.1f} | {t3 - t2:.1f} | {hit:.3f} | {entropy:.2f} |")
    con.close()


if __name__ == "__main__":
    main()
