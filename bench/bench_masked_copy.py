"""The masked copy of a whole database at scale: three tables (patients, visits, prescriptions) holding
`rows` rows together (a tenth patients, three tenths visits, six tenths prescriptions), copied with fake
names and e-mails, pseudonymized ids, date shifts, noise and a shuffle. Prints a table: the time and peak
memory (RSS) of the masked copy, beside a plain copy of the same tables (every column as it is, the same
attach-and-write path) measured in the same run, so that their ratio holds whatever the machine's load.
Each copy runs in a process of its own, so its peak RSS is its own.

    python bench/bench_masked_copy.py [rows] [folder]      (default 10,000,000 rows, a temporary folder)
"""
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb_anon

MASKS = {
    "patients": [("patient_id", "identifier", True, None, None), ("name", "masked", False, "name", {"by": "patient_id"}),
                 ("email", "masked", False, "email", {"by": "patient_id"}),
                 ("birth_date", "masked", False, "date_shift", {"by": "patient_id", "days": 90}),
                 ("zip", "quasi_identifier", False, None, None)],
    "visits": [("visit_id", "identifier", True, None, None), ("patient_id", "identifier", True, None, None),
               ("admitted", "masked", False, "date_shift", {"by": "patient_id", "days": 90}),
               ("cost", "masked", False, "noise", {"ratio": 0.1})],
    "prescriptions": [("rx_id", "identifier", True, None, None), ("visit_id", "identifier", True, None, None),
                      ("drug", "masked", False, "shuffle", {}), ("dose", "insensitive", False, None, None)],
}


def make_source(path: Path, rows: int) -> None:
    patients, visits = rows // 10, rows * 3 // 10
    prescriptions = rows - patients - visits
    con = duckdb_anon.connect(str(path))
    con.execute(f"""CREATE TABLE patients AS SELECT range AS patient_id, 'Name ' || range AS name,
                    'p' || range || '@mail.example' AS email, DATE '1930-01-01' + (hash(range) % 30000)::INTEGER AS birth_date,
                    (10000 + hash(range, 1) % 900)::VARCHAR AS zip FROM range({patients})""")
    con.execute(f"""CREATE TABLE visits AS SELECT range AS visit_id, hash(range) % {patients} AS patient_id,
                    DATE '2015-01-01' + (hash(range, 2) % 3000)::INTEGER AS admitted, round(hash(range, 3) % 100000 / 100, 2) AS cost
                    FROM range({visits})""")
    con.execute(f"""CREATE TABLE prescriptions AS SELECT range AS rx_id, hash(range) % {visits} AS visit_id,
                    ['aspirin', 'insulin', 'statin', 'metformin', 'none'][(hash(range, 4) % 5)::INTEGER + 1] AS drug,
                    hash(range, 5) % 4 + 1 AS dose FROM range({prescriptions})""")
    for table, columns in MASKS.items():
        for column, role, pseudonymize, mask, args in columns:
            duckdb_anon.declare_role(con, table, column, role, pseudonymize=pseudonymize, mask=mask, mask_args=args)
        duckdb_anon.set_policy(con, table, 1, key_name="clinic")
    con.close()


def child(kind: str, source: str, target: str) -> None:
    """One copy, in this process: the masked copy, or the plain one (the same attach and write, no masks)."""
    start = time.perf_counter()
    if kind == "masked":
        duckdb_anon.masked_copy(source, target, keys={"clinic": os.environ["BENCH_KEY"]})
    else:
        con = duckdb_anon.connect()
        con.execute("ATTACH ? AS s (READ_ONLY)", [source])
        con.execute("ATTACH ? AS t", [target])
        for table in MASKS:
            con.execute(f"CREATE TABLE t.{table} AS SELECT * FROM s.{table}")
        con.execute("DETACH t")
        con.close()
    seconds = time.perf_counter() - start
    print(f"{seconds:.2f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2:.2f}")


def measure(kind: str, source: Path, target: Path) -> tuple[float, float]:
    target.unlink(missing_ok=True)
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(source), str(target)], capture_output=True, text=True,
                         env={**os.environ, "BENCH_KEY": duckdb_anon.new_pseudonym_key()}, check=True)
    seconds, gigabytes = out.stdout.split()[-2:]
    return float(seconds), float(gigabytes)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="bench_masked_copy_"))
    source = folder / "source.duckdb"
    if not source.exists():
        make_source(source, rows)
    load = os.getloadavg()[0]
    results = [(kind, *measure(kind, source, folder / f"{kind}.duckdb")) for kind in ("plain", "masked")]
    print(f"rows: {rows:,} in three tables; load average at the start: {load:.1f} on {os.cpu_count()} cores\n")
    print("| copy | time (s) | peak RSS (GB) | time / plain copy |")
    print("|---|---:|---:|---:|")
    for kind, seconds, gigabytes in results:
        print(f"| {kind} | {seconds:.1f} | {gigabytes:.2f} | {seconds / results[0][1]:.1f} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
    else:
        main()
