"""What the fail-closed checks of anonymized() cost on every read: the column guard (the table's binding,
names and types in order, against the declared columns' names, places and types), the declarations'
fingerprint, and the pseudonym key check (format, checksum, sanity of the random part), against the
release they protect. Prints a table.   python bench/bench_release_guards.py [rows]

The column guard must stay a look at the catalog: its time is measured on the full table and on a
one-row copy with the same columns; equal times mean no scan."""
import statistics
import sys
import time

import duckdb_anon


def timed(con, sql, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    con = duckdb_anon.connect()
    con.execute(f"""CREATE TABLE patients AS SELECT range AS pid, 18 + hash(range, 1) % 70 AS age,
                    10000 + hash(range, 2) % 400 AS zip, ['flu', 'asthma', 'none'][(hash(range, 3) % 3)::INT + 1] AS diagnosis,
                    hash(range, 4) % 5 AS visits FROM range({rows})""")
    duckdb_anon.declare_role(con, "patients", "pid", "identifier", pseudonymize=True)
    duckdb_anon.declare_role(con, "patients", "age", "quasi_identifier")
    duckdb_anon.declare_role(con, "patients", "zip", "quasi_identifier")
    duckdb_anon.declare_role(con, "patients", "diagnosis", "sensitive")
    duckdb_anon.declare_role(con, "patients", "visits", "insensitive")
    duckdb_anon.set_policy(con, "patients", 10, key_name="clinic")
    duckdb_anon.apply_policies(con)
    duckdb_anon.set_pseudonym_key(con, "clinic", duckdb_anon.new_pseudonym_key())
    fingerprint = con.execute("SELECT anon_policy_fingerprint('patients')").fetchall()[0][0]
    key = con.execute("SELECT getvariable('duckdb_anon_key_clinic')").fetchall()[0][0]
    compiled = con.execute("SELECT anon_policy_sql('patients')").fetchall()[0][0]
    unguarded = compiled[:compiled.index(" WHERE anon_policy_is_current(")]
    guard = compiled[compiled.index("anon_columns_declared("):]  # the guard as compiled, declared columns included
    con.execute("CREATE TABLE one_row AS SELECT * FROM patients LIMIT 1")
    one_row_guard = guard.replace("anon_columns_declared('patients'", "anon_columns_declared('one_row'", 1)
    cases = [
        ("column guard alone", f"SELECT {guard}", 20),
        ("column guard alone, on a one-row table with the same columns", f"SELECT {one_row_guard}", 20),
        ("key check alone", "SELECT anon_key_problem(getvariable('duckdb_anon_key_clinic'))", 20),
        ("fingerprint check alone", f"SELECT anon_policy_is_current('patients', '{fingerprint}')", 20),
        ("pseudonyms, key checked", "SELECT max(anon_pseudonym(pid, 'clinic')) FROM patients", 3),
        ("pseudonyms, no key check", f"SELECT max(left(sha256('{key}' || sha256('{key}' || pid::VARCHAR)), 32)) FROM patients", 3),
        ("anonymized() (whole release)", "SELECT max(pid), count(*) FROM anonymized('patients')", 3),
        ("the same release without the read-time guards", f"SELECT max(pid), count(*) FROM ({unguarded})", 3),
    ]
    print(f"| check ({rows:,} rows) | median time (s) |")
    print("|---|---:|")
    for name, sql, repeat in cases:
        print(f"| {name} | {timed(con, sql, repeat):.4f} |", flush=True)
    con.close()


if __name__ == "__main__":
    main()
