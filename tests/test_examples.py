"""Every example runs end to end."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sql_session_example():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "run_sql.py"), str(ROOT / "examples" / "k_anonymize.sql")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "achieved_k" in out.stdout and "ncp_percent" in out.stdout
    measures = out.stdout.split("achieved_k")[1].splitlines()[1].split(" | ")
    assert int(measures[0]) == 30162 and int(measures[2]) >= 10


def test_python_declared_roles_example(tmp_path):
    database = tmp_path / "census.duckdb"
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "declared_roles.py"), str(database)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    header, values = out.stdout.split("smallest_class")[0], out.stdout.split("fewest_occupations")[1].split()
    classes, rows, smallest, fewest = (int(float(v)) for v in values[:4])
    assert "problem" in header and rows == 30162 and smallest >= 10 and fewest >= 3 and classes > 100


def test_cli_install_applies_declarations_written_in_plain_sql(tmp_path):
    import duckdb
    database = tmp_path / "plain.duckdb"
    cli = [sys.executable, "-m", "duckdb_anon.cli", "install", str(database)]
    missing = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "DATABASE" in missing.stderr
    assert subprocess.run(cli + ["--create"], capture_output=True, text=True, timeout=300).returncode == 0
    con = duckdb.connect(str(database))  # a plain client declares with INSERTs
    con.execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS age, range % 9 AS zip FROM range(300)")
    con.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('p', 'id', 'identifier'), "
                "('p', 'age', 'quasi_identifier'), ('p', 'zip', 'quasi_identifier')")
    con.execute("INSERT INTO anon_policies (table_name, k) VALUES ('p', 12)")
    con.close()
    out = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "policies applied for 1 table" in out.stdout, out.stderr
    con = duckdb.connect(str(database))
    rows = con.execute("SELECT * FROM anonymized('p')").df()
    con.close()
    assert "id" not in rows.columns and len(rows) == 300
    assert rows.groupby(["age", "zip"]).size().min() >= 12
