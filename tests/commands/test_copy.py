"""duckdb-anon copy, run as a real subprocess: the copy and its summary, the key from the environment, the
exit codes of a missing key and of an existing output, and nothing left behind when refused."""
import os
import subprocess
import sys

import duckdb

from tests.test_database_copy import RX, make_clinic
from tests.test_roles import KEY


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", "copy", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env)


def test_copy_writes_the_masked_database_and_refuses_without_key_or_over_a_file(tmp_path):
    source = make_clinic(tmp_path / "clinic.duckdb")
    target = tmp_path / "copy.duckdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUCKDB_ANON_KEY_")}
    out = run(source, "-o", target, "--quiet", env=env)
    assert out.returncode == 2 and "DUCKDB_ANON_KEY_CLINIC" in out.stderr and "'clinic'" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clinic.duckdb"]

    out = run(source, "-o", target, env={**env, "DUCKDB_ANON_KEY_CLINIC": KEY})
    assert out.returncode == 0, out.stderr
    printed = [line.split() for line in out.stdout.splitlines()]
    assert ["patients", "name", "masked:", "name", "{by=patient_id,", "locale=xx_TEST}"] in printed
    assert ["pre", "scriptions", "'rx'", "rx_id", "dropped:", "identifier"] in printed
    with duckdb.connect(str(target), read_only=True) as copy:
        summary = copy.execute("SELECT table_name, column_name, became FROM anon_copy_summary").fetchall()
        assert (RX, "rx_id", "dropped: identifier") in summary and len(summary) == 14
        assert copy.execute("SELECT count(*) FROM patients WHERE name LIKE 'Realname%'").fetchall()[0][0] == 0

    before = target.read_bytes()
    out = run(source, "-o", target, "--quiet", env={**env, "DUCKDB_ANON_KEY_CLINIC": KEY})
    assert out.returncode == 2 and "--output" in out.stderr and "--force" in out.stderr
    assert target.read_bytes() == before
