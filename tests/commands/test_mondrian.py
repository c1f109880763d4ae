"""`duckdb-anon mondrian` publishes only what the user listed: without --keep, --drop or --keep-all it refuses
(exit 2, no file) naming the identifier-looking columns; the output files are read back here with pandas."""
import subprocess
import sys

import duckdb
import pandas as pd
import pytest

import duckdb_anon
from duckdb_anon.cli import main

QIS = ["age", "zip", "sex"]


@pytest.fixture(scope="module")
def patients(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keep")
    con = duckdb_anon.connect()
    duckdb_anon.datasets.load_patients(con, "patients", rows=600)
    con.execute(f"COPY patients TO '{folder / 'patients.csv'}'")
    con.close()
    return folder


def anonymize(folder, *extra):
    return main(["mondrian", str(folder / "patients.csv"), "--qi", ",".join(QIS), "-k", "10", *extra])


def release(path):
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_without_a_choice_nothing_is_written_and_identifiers_are_named(patients, capsys):
    before = sorted(p.name for p in patients.iterdir())
    code = anonymize(patients, "-o", str(patients / "out.csv"), "--quiet")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--keep" in err and "--drop" in err and "--keep-all" in err
    assert "patient_id" in err.split("flags")[1] and "name" in err.split("flags")[1]
    assert sorted(p.name for p in patients.iterdir()) == before  # no output, no temporary file


def test_keep_publishes_the_qis_and_the_listed_columns_only(patients, capsys):
    target = patients / "kept.csv"
    assert anonymize(patients, "--keep", "Diagnosis", "-o", str(target), "--quiet") == 0, capsys.readouterr().err
    out = release(target)
    assert list(out.columns) == ["age", "zip", "sex", "diagnosis"]
    source = pd.read_csv(patients / "patients.csv", dtype=str, keep_default_na=False)
    assert sorted(out["diagnosis"]) == sorted(source["diagnosis"])  # every row, the kept column unchanged
    assert out.groupby(QIS).size().min() >= 10
    assert not set(source["patient_id"]) & set(out.to_numpy().ravel())  # no id anywhere in the file


def test_drop_publishes_every_other_column(patients, capsys):
    target = patients / "dropped.parquet"
    code = anonymize(patients, "--drop", "patient_id,name,birth_date", "-o", str(target), "--quiet")
    assert code == 0, capsys.readouterr().err
    out = pd.read_parquet(target)
    assert list(out.columns) == ["age", "zip", "sex", "diagnosis", "visits"] and len(out) == 600


def test_keep_all_publishes_everything_and_warns(patients, capsys):
    target = patients / "all.csv"
    assert anonymize(patients, "--keep-all", "-o", str(target), "--quiet") == 0
    err = capsys.readouterr().err
    assert "warning" in err and "patient_id" in err and "name" in err
    assert list(release(target).columns) == list(release(patients / "patients.csv").columns)


def test_the_level_engine_keeps_the_same_columns(patients, capsys):
    target = patients / "levels.csv"
    code = anonymize(patients, "--keep", "visits", "--engine", "levels", "-o", str(target), "--quiet")
    assert code == 0, capsys.readouterr().err
    assert anonymize(patients, "--keep", "visits", "-o", str(patients / "sql.csv"), "--quiet") == 0
    con = duckdb.connect()
    differ = con.execute("SELECT count(*) FROM (FROM read_csv(?, all_varchar := true) EXCEPT ALL "
                         "FROM read_csv(?, all_varchar := true))", [str(target), str(patients / "sql.csv")]).fetchall()
    assert list(release(target).columns) == ["age", "zip", "sex", "visits"] and differ == [(0,)]


def test_the_choices_exclude_each_other(patients):
    out = subprocess.run([sys.executable, "-m", "duckdb_anon.cli", "mondrian", str(patients / "patients.csv"), "--qi", "age",
                          "-k", "10", "--keep", "sex", "--drop", "name", "-o", str(patients / "never.csv")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "not allowed with" in out.stderr and not (patients / "never.csv").exists()
