"""The duckdb-anon command, run as a real subprocess."""
import subprocess
import sys

import duckdb


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *args], capture_output=True, text=True, timeout=300)


def test_demo_prints_the_measures():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    assert "30,162 rows" in out.stdout and "achieved k = 10" in out.stdout and "NCP = 11.0840 %" in out.stdout


def test_mondrian_over_csv_and_parquet(tmp_path):
    src = tmp_path / "in.csv"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT range AS id, range % 50 AS age, 'z' || (range % 7) AS zip FROM range(500)) TO '{src}'")
    for suffix in ("csv", "parquet"):
        target = tmp_path / f"out.{suffix}"
        out = run("mondrian", str(src), "--qi", "age,zip", "-k", "10", "--mode", "relaxed", "-o", str(target), "--quiet")
        assert out.returncode == 0, out.stderr
        smallest, total = con.execute(
            f"SELECT min(c), sum(c) FROM (SELECT count(*) c FROM '{target}' GROUP BY age, zip)").fetchone()
        assert smallest >= 10 and total == 500


def test_bad_input_file_is_reported():
    out = run("mondrian", "nope.csv", "--qi", "a", "-k", "2", "-o", "x.csv")
    assert out.returncode == 2 and "does not exist" in out.stderr
