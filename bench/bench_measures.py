"""Measures on a 10M-row release (issue target: <= 10 s each): a synthetic release with three generalized
QIs (~20k classes) and a sensitive column. Prints a table.   python bench/bench_measures.py [rows]"""
import sys
import time

import duckdb_anon


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    con = duckdb_anon.connect()
    con.execute(f"""CREATE TABLE rel AS SELECT range AS id, ((hash(range, 1) % 40) * 2)::VARCHAR || '-' || ((hash(range, 1) % 40) * 2 + 1)::VARCHAR AS age,
                    ['a', 'b', 'c', 'd', 'e'][(hash(range, 2) % 5)::INT + 1] AS zip, (hash(range, 3) % 100)::INT AS region,
                    ['flu', 'cold', 'ok', 'hiv', 'other'][(hash(range, 4) % 5)::INT + 1] AS diag FROM range({rows})""")
    qis = "['age', 'zip', 'region']"
    print("| measure | rows | time (s) |")
    print("|---|---:|---:|")
    for name, sql in [("release_measures", f"SELECT * FROM release_measures('rel', {qis})"),
                      ("risk_measures", f"SELECT * FROM risk_measures('rel', {qis})"),
                      ("privacy_measures (sensitive diag)", f"SELECT * FROM privacy_measures('rel', {qis}, sensitive := 'diag')"),
                      ("record_risks (max risk)", f"SELECT max(prosecutor_risk), sum(class_size) FROM record_risks('rel', {qis})")]:
        start = time.perf_counter()
        con.execute(sql).fetchall()
        print(f"| {name} | {rows:,} | {time.perf_counter() - start:.2f} |", flush=True)
    con.close()


if __name__ == "__main__":
    main()
