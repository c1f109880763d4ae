"""A plain re-publish against a re-release, after inserts and deletes on the example `patients` table
(2,000 people, declared as in docs/releases.md: QIs age, sex, zip; k = 10, l = 2). For each change to the
first release r1: what the differencing audit finds when the changed table is published again by Mondrian
(publish_release with allow_differencing=True), and what publish_rerelease() holds back and how long it
takes. Prints a Markdown table.   python bench/bench_rerelease.py

With a number of rows, the cost instead: on a synthetic table of that many people (2 QIs, k = 10), the
first publish, an audited second publish and a re-release, each after 1,000 inserts.
    python bench/bench_rerelease.py 500000"""
import sys
import time
from pathlib import Path

import duckdb_anon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_lineage import clinic  # noqa: E402  the tests' setting: patients declared as in the docs, more, release r1

CHANGES = [  # (label, SQL run on the first release's source)
    ("1 insert", "INSERT INTO patients SELECT * FROM more WHERE patient_id BETWEEN 'P02001' AND 'P02001'"),
    ("10 inserts", "INSERT INTO patients SELECT * FROM more WHERE patient_id BETWEEN 'P02001' AND 'P02010'"),
    ("100 inserts", "INSERT INTO patients SELECT * FROM more WHERE patient_id BETWEEN 'P02001' AND 'P02100'"),
    ("10 deletes", "DELETE FROM patients WHERE patient_id IN (SELECT patient_id FROM patients ORDER BY hash(patient_id) LIMIT 10)"),
    ("100 deletes", "DELETE FROM patients WHERE patient_id IN (SELECT patient_id FROM patients ORDER BY hash(patient_id) LIMIT 100)"),
    ("100 deletes + 100 inserts", "DELETE FROM patients WHERE patient_id IN (SELECT patient_id FROM patients ORDER BY hash(patient_id) "
                                  "LIMIT 100); INSERT INTO patients SELECT * FROM more WHERE patient_id BETWEEN 'P02001' AND 'P02100'"),
    ("20 ages +10 years", "UPDATE patients SET age = age + 10 WHERE patient_id IN (SELECT patient_id FROM patients "
                          "ORDER BY hash(patient_id, 1) LIMIT 20)"),
]


def fresh():
    con = duckdb_anon.connect()
    clinic(con)
    return con


def main():
    print("| change to r1's source | plain re-publish: below k | singled out | re-release: published | held back "
          "| below k | singled out | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, change in CHANGES:
        con = fresh()
        con.execute(change)
        plain = duckdb_anon.publish_release(con, "patients", "plain", allow_differencing=True)
        con.execute("DELETE FROM anon_releases WHERE name = 'plain'")  # so the re-release is audited against r1 only
        start = time.perf_counter()
        again = duckdb_anon.publish_rerelease(con, "patients", "r2", previous="r1")
        seconds = time.perf_counter() - start
        held = con.execute("SELECT count(*) FROM anon_release_held WHERE release_name = 'r2'").fetchall()[0][0]
        print(f"| {label} | {plain['differencing_below_k']} | {plain['differencing_singled_out']} | {again['rows']} | {held} "
              f"| {again['differencing_below_k']} | {again['differencing_singled_out']} | {seconds:.1f} |")
        con.close()


def cost(rows):
    con = duckdb_anon.connect()
    con.execute(f"""CREATE TABLE people AS SELECT range AS pid, 18 + hash(range, 1) % 70 AS age, 10000 + hash(range, 2) % 400 AS zip,
                    ['flu', 'asthma', 'none'][(hash(range, 3) % 3)::INT + 1] AS diagnosis FROM range({rows})""")
    for column, role in [("pid", "identifier"), ("age", "quasi_identifier"), ("zip", "quasi_identifier"), ("diagnosis", "sensitive")]:
        duckdb_anon.declare_role(con, "people", column, role, pseudonymize=column == "pid")
    duckdb_anon.set_policy(con, "people", 10, key_name="clinic")
    duckdb_anon.apply_policies(con)
    duckdb_anon.set_pseudonym_key(con, "clinic", duckdb_anon.new_pseudonym_key())

    def timed(step):
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    plain = timed(lambda: con.execute("CREATE TABLE plain AS SELECT * FROM anonymized('people')"))
    first = timed(lambda: duckdb_anon.publish_release(con, "people", "r1"))
    con.execute(f"INSERT INTO people SELECT {rows} + range, 18 + hash(range, 9) % 70, 10000 + hash(range, 8) % 400, 'flu' "
                "FROM range(1000)")
    second = timed(lambda: duckdb_anon.publish_release(con, "people", "r2", allow_differencing=True))
    con.execute("DELETE FROM anon_releases WHERE name = 'r2'")
    again = timed(lambda: duckdb_anon.publish_rerelease(con, "people", "r3", previous="r1"))
    classes = con.execute("SELECT count(DISTINCT labels) FROM anon_release_people WHERE release_name = 'r1'").fetchall()[0][0]
    print(f"| rows | classes | CREATE TABLE AS anonymized() | first publish_release | audited second publish | re-release |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {rows:,} | {classes:,} | {plain:.1f} s | {first:.1f} s | {second:.1f} s | {again:.1f} s |")


if __name__ == "__main__":
    cost(int(sys.argv[1])) if len(sys.argv) > 1 else main()
