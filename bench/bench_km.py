"""k^m-anonymity on synthetic ratings: time, peak memory and what is lost, against the suppression baseline.

For each size, synthetic_ratings (deterministic, seed 1; 2,000 items, power-law popularity) is released
with items (item, value, ts) (item ids under intervals of 10 and 100, ratings under bands of 2, dates under
month and year), and (up to 1M ratings) with the item id alone. Two methods, each in a fresh process (peak RSS is the child's own): km_anonymize() (ladder
and rounds of generalization, then suppression) and the baseline that only suppresses (strategy
'suppress': an item stays exact or goes). Prints a Markdown table.

    python bench/bench_km.py                  # 100k ratings and 10M ratings, k = 10, m = 2
    python bench/bench_km.py 100000           # one size
    python bench/bench_km.py --child 100000 generalize   (internal: one run, prints one JSON line)

DuckDB runs with threads = 2 and memory_limit = 6GB; the machine's load average is printed with the table.
"""
import json
import os
import resource
import subprocess
import sys
import time

K, M = 10, 2
RATINGS_PER_USER = {100_000: 50, 10_000_000: 10}  # the 10M table: 1M people of 10 ratings on average
MEMORY = "6GB"


def users_for(ratings: int) -> int:
    per_user = RATINGS_PER_USER.get(ratings, 50)
    return max(1, round(ratings / (per_user * 0.9)))  # synthetic_ratings drops repeated (person, item) pairs


CONFIGS = {"full": ["item", "value", "ts"], "item": ["item"]}


def child(ratings: int, method: str, config: str) -> None:
    import duckdb_anon
    from duckdb_anon.km import km_anonymize

    con = duckdb_anon.connect()
    con.execute(f"SET threads = 2; SET memory_limit = '{MEMORY}'")
    per_user = RATINGS_PER_USER.get(ratings, 50)
    con.execute(f"CREATE TABLE r AS SELECT * FROM synthetic_ratings({users_for(ratings)}, items := 2000, "
                f"ratings_per_user := {per_user}, seed := 1)")
    con.execute("CREATE TABLE h_item AS SELECT * FROM hierarchy_intervals('r', 'item', [10, 100])")
    con.execute("CREATE TABLE h_value AS SELECT * FROM hierarchy_intervals('r', 'value', [2])")
    con.execute("CREATE TABLE h_ts AS SELECT * FROM hierarchy_dates('r', 'ts')")
    items = CONFIGS[config]
    hierarchies = {c: f"h_{c}" for c in items}
    rows, people = con.execute("SELECT count(*), count(DISTINCT record_id) FROM r").fetchall()[0]
    stats: dict = {}
    start = time.perf_counter()
    km_anonymize(con, "r", person="record_id", items=items, k=K, m=M, hierarchies=hierarchies,
                 into="out", strategy=method, stats=stats, person_output="raw")  # synthetic ids
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the release's, before the measures
    loss, suppressed, items_out, spearman, top_kept, exact, pair_error = con.execute(
        "SELECT information_loss, rows_suppressed, items_suppressed, popularity_spearman, top100_kept, exact_rows, "
        "pair_support_error FROM km_measures('r', 'out', ?::VARCHAR[], hierarchies := ?::MAP(VARCHAR, VARCHAR), "
        "person := 'record_id')",
        [items, hierarchies]).fetchall()[0]
    print(json.dumps({"rows": rows, "people": people, "method": method, "items": ", ".join(items), "seconds": seconds,
                      "peak_mb": peak_mb,
                      "measures_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "loss": loss,
                      "kept": 1 - suppressed, "items_out": items_out, "spearman": spearman, "top_kept": top_kept,
                      "exact": min(exact.values()), "pair_error": pair_error,
                      "rounds": stats.get("rounds"), "passes": stats.get("passes")}))


def main(sizes: list[int]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(here) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    print(f"k = {K}, m = {M}; threads = 2, memory_limit = {MEMORY}; load average at start: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| ratings | people | items | method | seconds | peak RSS MB | information loss | rows kept | items suppressed "
          "| popularity Spearman | top-100 kept | exact rows (fewest of the columns) | pair support error | rounds |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ratings in sizes:
        for config in CONFIGS if ratings <= 1_000_000 else ["full"]:  # the shared machine's hours are short
            for method in ("generalize", "suppress"):
                done = subprocess.run([sys.executable, __file__, "--child", str(ratings), method, config], env=env,
                                      capture_output=True, text=True)
                if done.returncode:
                    print(f"| {ratings:,} | | {config} | {method} | failed: {done.stderr.strip().splitlines()[-1]} | | | | | | | | | |")
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                spearman = "NULL" if r["spearman"] is None else f"{r['spearman']:.3f}"
                print(f"| {r['rows']:,} | {r['people']:,} | {r['items']} | {method} | {r['seconds']:.1f} | {r['peak_mb']:.0f} "
                      f"| {r['loss']:.3f} | {r['kept']:.1%} | {r['items_out']:.1%} | {spearman} | {r['top_kept']:.0%} "
                      f"| {r['exact']:.1%} | {r['pair_error']:.3f} | {r['rounds']} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        main([int(a) for a in sys.argv[1:]] or [100_000, 10_000_000])
