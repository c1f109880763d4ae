"""Processes creating one new database file at once: each gets a working connection or the package's own
error naming connect() and the argument, never DuckDB's "not a valid DuckDB database file" (which a
process reading the file before its creator wrote the headers used to get)."""
import os
import subprocess
import sys
import time

import duckdb
import pytest

import duckdb_anon

CHILD = r"""
import sys
import duckdb_anon
print("ready", flush=True)
sys.stdin.readline()  # every child imported, then all open the file together
try:
    con = duckdb_anon.connect(sys.argv[1])
    print("OK", con.execute("SELECT duckdb_anon_version()").fetchall()[0][0])
    con.close()
except Exception as exc:
    print("ERR", str(exc).splitlines()[0])
"""


def test_four_processes_creating_one_new_file(tmp_path):
    path = tmp_path / "new.duckdb"
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(4)]
    assert [child.stdout.readline().strip() for child in children] == ["ready"] * 4
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    outcomes = [child.communicate(timeout=60)[0].strip() for child in children]
    assert all(o.startswith(("OK", "ERR")) for o in outcomes), outcomes
    assert not any("not a valid" in o for o in outcomes), outcomes
    assert all(o == f"OK {duckdb_anon.__version__}" or o.startswith("ERR connect(): argument 'database'")
               for o in outcomes), outcomes
    assert any(o.startswith("OK") for o in outcomes), outcomes
    con = duckdb.connect(str(path), read_only=True)  # the file the winner created is whole
    assert con.execute("SELECT duckdb_anon_version()").fetchall()[0][0] == duckdb_anon.__version__
    con.close()


def test_an_old_file_that_is_not_duckdb_fails_at_once_with_duckdbs_reason(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_text("not a database\n" * 1000)
    os.utime(path, (time.time() - 60, time.time() - 60))
    started = time.monotonic()
    with pytest.raises(duckdb.IOException, match="not a valid DuckDB database file"):
        duckdb_anon.connect(str(path))
    assert time.monotonic() - started < 1  # no retries: it is not being created
