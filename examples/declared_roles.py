"""End to end from Python: declare column roles and a policy for the Adult data in a database file, see the
declarations fail closed, publish a frozen release, and read it back from a plain DuckDB connection that
never imports duckdb-anon.

    python examples/declared_roles.py [DATABASE.duckdb]
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb_anon


def main(database: str) -> None:
    con = duckdb_anon.connect(database)
    duckdb_anon.load_adult(con, "adult")
    tables = duckdb_anon.load_adult_hierarchies(con)  # h_workclass, h_marital_status, ...
    con.execute("DELETE FROM anon_column_roles WHERE table_name = 'adult'")  # the example may run twice
    con.execute("DROP TABLE IF EXISTS adult_release_1")
    con.execute("DELETE FROM anon_releases WHERE name = 'adult_release_1'")
    duckdb_anon.declare_role(con, "adult", "rid", "identifier", pseudonymize=True)
    for qi in ["age", "education_num", "sex", "race"]:
        duckdb_anon.declare_role(con, "adult", qi, "quasi_identifier")
    for qi in ["workclass", "marital_status"]:
        duckdb_anon.declare_role(con, "adult", qi, "quasi_identifier", hierarchy=tables[qi])
    duckdb_anon.declare_role(con, "adult", "occupation", "sensitive")
    duckdb_anon.set_policy(con, "adult", 10, l=3, key_name="census")

    # Fail closed: the other columns (fnlwgt, education, native_country, ...) have no role, so the release
    # is refused and the refusal names them.
    print("refused:", duckdb_anon.apply_policies(con)["adult"])
    # Opting in to leave them out of the release instead:
    duckdb_anon.set_policy(con, "adult", 10, l=3, key_name="census", undeclared="drop")
    assert duckdb_anon.apply_policies(con) == {}
    print(con.execute("SELECT table_name, column_name, role, hierarchy, problem FROM anon_roles ORDER BY role, column_name").df())

    key = duckdb_anon.new_pseudonym_key()  # 256 bits; keep it secret, never in the database file
    duckdb_anon.set_pseudonym_key(con, "census", key)
    recorded = duckdb_anon.publish_release(con, "adult", "adult_release_1")  # frozen: a table, and its catalog row
    print({name: recorded[name] for name in ("name", "rows", "achieved_k", "achieved_l", "ncp_percent")})
    con.close()

    # A plain client: only duckdb. The frozen release needs no key and no package.
    reader = (
        "import duckdb, sys\n"
        f"con = duckdb.connect({database!r}, read_only=True)\n"
        "print(con.execute('SELECT count(*) AS classes, sum(n) AS rows, min(n) AS smallest_class, min(l) AS fewest_occupations FROM ('\n"
        "                  'SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM adult_release_1 '\n"
        "                  'GROUP BY age, education_num, sex, race, workclass, marital_status)').df().to_string(index=False))\n"
        "print(con.execute('SELECT * FROM adult_release_1 LIMIT 3').df().to_string(index=False))\n"
        "assert 'duckdb_anon' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", reader], check=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(str(Path(folder) / "census.duckdb"))
