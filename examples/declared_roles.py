"""End to end from Python: declare column roles and a policy for the Adult data in a database file, publish
an anonymized view, and read it back from a plain DuckDB connection that never imports duckdb-anon.

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
    duckdb_anon.declare_role(con, "adult", "rid", "identifier", pseudonymize=True)
    for qi in ["age", "education_num", "sex", "race"]:
        duckdb_anon.declare_role(con, "adult", qi, "quasi_identifier")
    for qi in ["workclass", "marital_status"]:
        duckdb_anon.declare_role(con, "adult", qi, "quasi_identifier", hierarchy=tables[qi])
    duckdb_anon.declare_role(con, "adult", "occupation", "sensitive")
    duckdb_anon.set_policy(con, "adult", 10, l=3, key_name="census")
    duckdb_anon.apply_policies(con)
    duckdb_anon.create_anonymized_view(con, "adult", "adult_published")
    print(con.execute("SELECT table_name, column_name, role, hierarchy, problem FROM anon_roles ORDER BY role, column_name").df())
    con.close()

    # A plain client: only duckdb, and the pseudonym key set for its session.
    reader = (
        "import duckdb, sys\n"
        f"con = duckdb.connect({database!r}, read_only=True)\n"
        "con.execute(\"SET VARIABLE duckdb_anon_key_census = 'example key'\")\n"
        "print(con.execute('SELECT count(*) AS classes, sum(n) AS rows, min(n) AS smallest_class, min(l) AS fewest_occupations FROM ('\n"
        "                  'SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM adult_published '\n"
        "                  'GROUP BY age, education_num, sex, race, workclass, marital_status)').df().to_string(index=False))\n"
        "print(con.execute('SELECT * FROM adult_published LIMIT 3').df().to_string(index=False))\n"
        "assert 'duckdb_anon' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", reader], check=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(str(Path(folder) / "census.duckdb"))
