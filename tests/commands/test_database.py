"""duckdb-anon sql: SQL on a database file with the functions installed, the result printed as a table. Real
subprocesses, but for the bad inputs (the CLI's main() in this process)."""
import re
import subprocess
import sys

import duckdb
import pytest

from tests.conftest import cli_in_process


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def cells(table: str) -> list[list[str]]:
    """The data rows of DuckDB's box rendering."""
    rows = [line for line in table.splitlines() if line.startswith("│")]
    return [[c.strip() for c in row.strip("│").split("│")] for row in rows[2:]]  # after the names and types


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "clinic.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE patients AS SELECT range AS id, range % 60 AS age, 'z' || (range % 9) AS zip FROM range(600)")
    con.close()
    return path


def test_a_query_with_our_functions_prints_a_table(database):
    out = run("sql", database, "SELECT count(*) AS classes, min(n) AS smallest, sum(n) AS rows FROM "
                               "(SELECT count(*) AS n FROM mondrian('patients', ['age', 'zip'], 10) GROUP BY age, zip)")
    assert out.returncode == 0, out.stderr
    assert re.search(r"│\s+classes\s+│\s+smallest\s+│\s+rows\s+│", out.stdout)
    [[classes, smallest, rows]] = cells(out.stdout)
    assert int(smallest) >= 10 and int(rows) == 600 and 1 < int(classes) <= 60
    plain = duckdb.connect(str(database), read_only=True)  # the functions are now in the file, pure SQL
    assert plain.execute("SELECT count(*) FROM mondrian('patients', ['age', 'zip'], 10)").fetchone()[0] == 600


def test_statements_run_in_order_and_the_last_result_prints(database):
    out = run("sql", database, "CREATE TABLE kept AS SELECT 7 AS x; INSERT INTO kept VALUES (8); SELECT sum(x) AS s FROM kept")
    assert out.returncode == 0 and cells(out.stdout) == [["15"]], out.stderr
    assert duckdb.connect(str(database)).execute("SELECT count(*) FROM kept").fetchone()[0] == 2


def test_memory_database():
    out = run("sql", ":memory:", "SELECT duckdb_anon_version() AS v")
    assert out.returncode == 0 and len(cells(out.stdout)) == 1, out.stderr


@pytest.mark.parametrize("args, names", [
    (["{db}", "SELEC 1"], ["QUERY", "syntax error"]),
    (["{db}", "SELECT * FROM nope"], ["QUERY", "nope"]),
    (["{db}", "SELECT * FROM mondrian('patients', ['age'], 0)"], ["QUERY", "mondrian(): argument 'k'"]),
    (["{db}", "  "], ["QUERY", "empty"]),
    (["{folder}/missing.duckdb", "SELECT 1"], ["DATABASE", "does not exist"]),
    (["{folder}", "SELECT 1"], ["DATABASE", "folder"]),
    (["{db}", "SELECT 1", "--max-rows", "0"], ["--max-rows"]),
])
def test_bad_input_exits_2(database, args, names):
    out = cli_in_process("sql", *[a.format(db=database, folder=database.parent) for a in args])
    assert out.returncode == 2, out.stdout + out.stderr
    assert all(name in out.stderr for name in names) and "Traceback" not in out.stderr, out.stderr
    assert not (database.parent / "missing.duckdb").exists()
