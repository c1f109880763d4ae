"""duckdb-anon suggest-roles and publish, run as real subprocesses on real files (the bad inputs of publish, and
a few suggest-roles runs, by the CLI's main() in this process)."""
import os
import re
import shutil
import subprocess
import sys

import duckdb
import pytest

import duckdb_anon
from duckdb_anon import roles
from duckdb_anon.cli import main
from tests.conftest import cli_in_process

ROLES = {"patient_id": "identifier", "email": "identifier", "age": "quasi_identifier", "zip": "quasi_identifier",
         "diagnosis": "sensitive", "site": "insensitive"}


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


PATIENTS_SQL = ("SELECT range AS patient_id, 'p' || range || '@mail.example' AS email, 20 + range % 50 AS age, "
                "'z' || (range % 7) AS zip, ['flu', 'cold', 'asthma'][range % 3 + 1] AS diagnosis, 'north' AS site "
                "FROM range(400)")


@pytest.fixture
def patients_csv(tmp_path):
    path = tmp_path / "Patients 2024.csv"  # a space: the table name is made from the file name
    duckdb.connect().execute(f"COPY ({PATIENTS_SQL}) TO '{path}'")
    return path


def roles_printed(stdout: str) -> dict[str, str]:
    """The printed suggestions: 'column  type  role  reason' lines (a reason's further lines are indented)."""
    rows = [re.split(r"\s{2,}", line, maxsplit=3) for line in stdout.splitlines() if line and not line[0].isspace()]
    assert rows[0][:3] == ["column", "type", "suggested role"], stdout
    return {r[0]: r[2] for r in rows[1:]}


def test_suggest_roles_fits_100_columns_and_wide_shows_the_evidence(patients_csv, capsys):
    """Before: DuckDB's table of every evidence column, about 230 characters wide in a pipe."""
    assert main(["suggest-roles", str(patients_csv), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100 and roles_printed(out) == ROLES
    email = next(line for line in out.splitlines() if line.startswith("email "))
    assert email.split("  ")[-1].strip().startswith("contact or address name")
    assert main(["suggest-roles", str(patients_csv), "--quiet", "--wide"]) == 0
    assert "qi_unique_share" in capsys.readouterr().out and "qi_unique_share" not in out


def test_suggest_roles_on_a_file_prints_them_and_writes_declarations_that_run(patients_csv, tmp_path):
    sql_file = tmp_path / "declarations.sql"
    out = run("suggest-roles", patients_csv, "--sql", sql_file, "--quiet")
    assert out.returncode == 0, out.stderr
    assert roles_printed(out.stdout) == ROLES
    # the declarations name the table after the file, and run as they are on a database holding it
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE patients_2024 AS SELECT * FROM read_csv(?)", [str(patients_csv)])
    con.execute(sql_file.read_text())
    declared = dict(con.execute("SELECT column_name, role FROM anon_column_roles WHERE table_name = 'patients_2024'").fetchall())
    assert declared == ROLES
    assert roles.apply_policies(con) == {}  # every column declared: the release runs
    release = con.execute("SELECT * FROM anonymized('patients_2024')").df()
    assert len(release) == 400 and "email" not in release.columns
    assert release.groupby(["age", "zip"]).size().min() >= 10


def test_suggest_roles_on_a_table_of_a_database_file_leaves_the_file_alone(tmp_path):
    db = tmp_path / "clinic.duckdb"
    plain = duckdb.connect(str(db))
    plain.execute(f"CREATE TABLE visits AS {PATIENTS_SQL}")
    plain.close()
    before = db.read_bytes()
    out = run("suggest-roles", "visits", "--db", db, "--sql", tmp_path / "visits.sql", "--quiet")
    assert out.returncode == 0, out.stderr
    assert roles_printed(out.stdout) == ROLES
    assert "VALUES ('visits', 'email', 'identifier')" in (tmp_path / "visits.sql").read_text()
    assert db.read_bytes() == before  # attached read-only: nothing installed, nothing changed


@pytest.mark.parametrize("args, names", [
    (["{folder}/missing.csv"], ["SOURCE", "does not exist"]),
    (["nope", "--db", "{db}"], ["SOURCE", "'nope'"]),
    (["{csv}", "--table", "a-b"], ["--table", "plain name"]),
    (["{csv}", "--sql", "{folder}/out.txt"], ["--sql", ".sql"]),
    (["{csv}", "--sql", "{folder}/exists.sql"], ["--sql", "--force"]),
])
def test_suggest_roles_bad_input_exits_2(patients_csv, tmp_path, args, names):
    db = tmp_path / "empty.duckdb"
    duckdb.connect(str(db)).close()
    (tmp_path / "exists.sql").write_text("-- mine")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = run("suggest-roles", *[a.format(folder=tmp_path, db=db, csv=patients_csv) for a in args])
    assert out.returncode == 2, out.stdout + out.stderr
    assert all(n in out.stderr for n in names) and "Traceback" not in out.stderr, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "exists.sql").read_text() == "-- mine"


@pytest.fixture(scope="module")
def clinic_file(tmp_path_factory):
    """A database file with a declared table: the id pseudonymized with key 'clinic', k = 10. Made once."""
    db = tmp_path_factory.mktemp("roles") / "clinic.duckdb"
    con = duckdb_anon.connect(str(db))
    con.execute(f"CREATE TABLE patients AS {PATIENTS_SQL}")
    con.execute("CREATE TABLE undeclared AS SELECT 1 AS x")
    roles.declare_role(con, "patients", "patient_id", "identifier", pseudonymize=True)
    for column, role in ROLES.items():
        if column != "patient_id":
            roles.declare_role(con, "patients", column, role)
    roles.set_policy(con, "patients", 10, key_name="clinic")
    roles.apply_policies(con)
    con.close()
    assert [p.name for p in db.parent.iterdir()] == ["clinic.duckdb"]  # no WAL, no key file: a copy is the same
    return db


@pytest.fixture
def clinic(clinic_file, tmp_path):
    """A copy of clinic_file of the test's own."""
    return shutil.copyfile(clinic_file, tmp_path / "clinic.duckdb")


def test_publish_freezes_the_release_and_prints_its_record(clinic):
    env = {**os.environ, "DUCKDB_ANON_KEY_CLINIC": duckdb_anon.new_pseudonym_key()}
    out = run("publish", clinic, "patients", "patients_2024_q1", "--quiet", env=env)
    assert out.returncode == 0, out.stderr
    printed = dict(line.split(None, 1) for line in out.stdout.splitlines()[1:])
    assert printed["name"] == "patients_2024_q1" and printed["method"] == "policy" and printed["rows"] == "400"
    plain = duckdb.connect(str(clinic), read_only=True)
    frozen = plain.execute("SELECT * FROM patients_2024_q1").df()
    assert len(frozen) == 400 and "email" not in frozen.columns
    smallest = frozen.groupby(["age", "zip"]).size().min()
    assert smallest >= 10 and printed["achieved_k"] == str(smallest)
    raw = {str(v) for v in plain.execute("SELECT patient_id FROM patients").fetchall()}
    assert not raw & set(frozen["patient_id"].astype(str))  # pseudonyms, not the ids
    assert plain.execute("SELECT rows, achieved_k FROM anon_releases WHERE name = 'patients_2024_q1'").fetchall() == \
        [(400, smallest)]
    plain.close()
    again = run("publish", clinic, "patients", "patients_2024_q1", "--quiet", env=env)
    assert again.returncode == 2 and "NAME" in again.stderr and "--replace" in again.stderr
    replaced = run("publish", clinic, "patients", "patients_2024_q1", "--replace", "--quiet", env=env)
    assert replaced.returncode == 0, replaced.stderr


@pytest.mark.parametrize("args, names, key", [
    (["{db}", "patients", "r1"], ["TABLE", "DUCKDB_ANON_KEY_CLINIC"], None),
    (["{db}", "patients", "r1"], ["DUCKDB_ANON_KEY_CLINIC", "key"], "short"),
    (["{db}", "undeclared", "r1"], ["TABLE", "no policy"], None),
    (["{db}", "patients", "patients"], ["NAME", "the release reads"], "a new key"),
    (["{folder}/missing.duckdb", "patients", "r1"], ["DATABASE", "does not exist"], None),
])
def test_publish_bad_input_exits_2_and_leaves_nothing(clinic, args, names, key):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUCKDB_ANON_KEY_")}
    if key is not None:  # a new key is made here: a random test id would differ between xdist workers
        env["DUCKDB_ANON_KEY_CLINIC"] = duckdb_anon.new_pseudonym_key() if key == "a new key" else key
    out = cli_in_process("publish", *[a.format(db=clinic, folder=clinic.parent) for a in args], env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert all(n in out.stderr for n in names) and "Traceback" not in out.stderr, out.stderr
    plain = duckdb.connect(str(clinic), read_only=True)
    assert plain.execute("SELECT count(*) FROM anon_releases").fetchone()[0] == 0
    assert plain.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'r1'").fetchone()[0] == 0
    assert not (clinic.parent / "missing.duckdb").exists()


def test_a_file_named_like_a_keyword_gives_its_name_to_the_declarations(tmp_path):
    source = tmp_path / "Order.parquet"
    duckdb.connect().execute(f"COPY ({PATIENTS_SQL}) TO '{source}'")
    out = run("suggest-roles", source, "--sql", tmp_path / "order.sql", "--quiet")
    assert out.returncode == 0, out.stderr
    assert roles_printed(out.stdout) == ROLES
    assert "VALUES ('order', 'age', 'quasi_identifier')" in (tmp_path / "order.sql").read_text()


def test_new_key_prints_a_256_bit_key_that_the_key_rule_accepts():
    import subprocess
    import sys
    import duckdb_anon
    keys = [subprocess.run([sys.executable, "-m", "duckdb_anon.cli", "new-key"], capture_output=True, text=True,
                           timeout=120).stdout.strip() for _ in range(2)]
    assert keys[0] != keys[1] and all(k.startswith("anon-key-v1-") and len(k) == 85 and int(k[12:76], 16) >= 0 for k in keys)
    con = duckdb_anon.connect()
    assert con.execute("SELECT anon_key_problem(?)", [keys[0]]).fetchall() == [(None,)]
    con.close()


def test_suggest_roles_on_a_one_row_file_keeps_identifiers(tmp_path, capsys):
    """Before: every column of a one-row (or empty) file was suggested insensitive ('a single value'), and
    the declarations written by --sql published the ids and names raw."""
    path = tmp_path / "few.parquet"
    duckdb.connect().execute(f"COPY (SELECT range AS patient_id, 'Ann' AS name, '123-45-6789' AS ssn, 'a@b.co' AS email, "
                             f"DATE '1970-01-01' AS birth_date, 3 AS visits FROM range(1)) TO '{path}'")
    assert main(["suggest-roles", str(path), "--quiet", "--sql", str(tmp_path / "few.sql")]) == 0
    printed = roles_printed(capsys.readouterr().out)
    assert printed == {"patient_id": "identifier", "name": "identifier", "ssn": "identifier", "email": "identifier",
                       "birth_date": "quasi_identifier", "visits": "quasi_identifier"}
    assert "'insensitive'" not in (tmp_path / "few.sql").read_text()
