"""NCP and time of mondrian() on the shipped Adult data at k = 2, 5, 10, 25, 50, 100, both modes, beside the
published figures (datasets README). Prints a Markdown table. Run from the project root."""
import time

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

PUBLISHED = {"strict": {2: 4.9732, 5: 8.3025, 10: 11.2435, 25: 16.3493, 50: 22.1577, 100: 30.0858},
             "relaxed": {2: 3.5434, 5: 10.6394, 10: 15.8470, 25: 22.3183, 50: 30.0727, 100: 38.9408}}


def main():
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    qis = "[" + ", ".join(f"'{q}'" for q in ADULT_QIS) + "]"
    print("| k | mode | NCP % (ours) | NCP % (published) | classes | achieved k | time (s) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for mode in ("strict", "relaxed"):
        for k in (2, 5, 10, 25, 50, 100):
            started = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TEMP TABLE rel AS SELECT * FROM mondrian('adult', {qis}, {k}, '{mode}')")
            took = time.perf_counter() - started
            ncp = con.execute(f"SELECT ncp_percent FROM ncp('rel', 'adult', {qis}, 'rid')").fetchone()[0]
            classes, achieved = con.execute(f"SELECT classes, achieved_k FROM release_measures('rel', {qis})").fetchone()
            print(f"| {k} | {mode} | {ncp:.4f} | {PUBLISHED[mode][k]:.4f} | {classes:,} | {achieved} | {took:.2f} |",
                  flush=True)
    con.close()


if __name__ == "__main__":
    main()
