"""duckdb-anon publish after the data changed: refused with the figures, --allow-differencing records the
risk, --rerelease publishes a re-release. Real subprocesses on a real database file (the flags refused
up front by the CLI's main() in this process)."""
import os
import shutil

import duckdb
import pytest

import duckdb_anon
from tests.commands.test_roles import run
from tests.conftest import cli_in_process
from tests.test_lineage import DECLARATIONS, differencing
from tests.test_roles import KEY


@pytest.fixture(scope="module")
def clinic_file(tmp_path_factory):
    """The database the tests start from, made once: each test changes a copy of its own."""
    path = tmp_path_factory.mktemp("differencing") / "clinic.duckdb"
    con = duckdb.connect(str(path))
    duckdb_anon.install(con)
    duckdb_anon.load_patients(con)
    duckdb_anon.load_patients(con, "more", rows=2010)
    con.execute(DECLARATIONS)
    duckdb_anon.apply_policies(con)
    con.close()
    assert [p.name for p in path.parent.iterdir()] == ["clinic.duckdb"]  # no WAL, no key file: a copy is the same
    return path


@pytest.fixture
def clinic(clinic_file, tmp_path):
    return shutil.copyfile(clinic_file, tmp_path / "clinic.duckdb")


def test_publish_refuses_a_release_that_can_be_differenced_and_prints_the_figures(clinic):
    env = {**os.environ, "DUCKDB_ANON_KEY_CLINIC": KEY}
    assert run("publish", clinic, "patients", "r1", "--quiet", env=env).returncode == 0
    con = duckdb.connect(str(clinic))
    con.execute("INSERT INTO patients SELECT * FROM more WHERE patient_id > 'P02000'")
    con.close()
    refused = run("publish", clinic, "patients", "r2", "--quiet", env=env)
    assert refused.returncode == 2 and "--allow-differencing" in refused.stderr and "--rerelease" in refused.stderr
    allowed = run("publish", clinic, "patients", "r2", "--allow-differencing", "--quiet", env=env)
    assert allowed.returncode == 0, allowed.stderr
    con = duckdb.connect(str(clinic), read_only=True)
    below, singled = differencing(con.execute("SELECT * FROM r1").df(), con.execute("SELECT * FROM r2").df(),
                                  ["age", "sex", "zip"], "patient_id", 10)
    assert below > 0 and f"below k = 10 and singles out {singled}" in refused.stderr and f"leaves {below} " in refused.stderr
    assert f"{below} people below k, {singled} singled out" in allowed.stdout and "warning: published with" in allowed.stdout
    assert con.execute("SELECT differencing_below_k, differencing_singled_out FROM anon_releases WHERE name = 'r2'").fetchall() \
        == [(below, singled)]
    con.close()
    again = run("publish", clinic, "patients", "r3", "--rerelease", "--previous", "r1", "--quiet", env=env)
    assert again.returncode == 2 and "below k" in again.stderr  # r2 is out there too: r3 would be intersected with it
    con = duckdb.connect(str(clinic))
    assert con.execute("SELECT count(*) FROM anon_releases WHERE name = 'r3'").fetchall() == [(0,)]
    con.execute("DELETE FROM anon_releases WHERE name = 'r2'; DELETE FROM anon_release_people WHERE release_name = 'r2'")
    con.close()
    rereleased = run("publish", clinic, "patients", "r3", "--rerelease", "--quiet", env=env)
    assert rereleased.returncode == 0, rereleased.stderr
    assert "0 people below k, 0 singled out" in rereleased.stdout
    con = duckdb.connect(str(clinic), read_only=True)
    assert differencing(con.execute("SELECT * FROM r1").df(), con.execute("SELECT * FROM r3").df(),
                        ["age", "sex", "zip"], "patient_id", 10) == (0, 0)
    con.close()


@pytest.mark.parametrize("flags, word", [(["--previous", "r1"], "--previous: names the release a --rerelease follows"),
                                         (["--rerelease", "--allow-differencing"], "--rerelease: keeps the people"),
                                         (["--rerelease", "--id-column", "patient_id"], "--rerelease: keeps the people")])
def test_publish_flags_that_do_not_go_together_exit_2(clinic, flags, word):
    out = cli_in_process("publish", clinic, "patients", "r1", *flags, "--quiet", env={**os.environ, "DUCKDB_ANON_KEY_CLINIC": KEY})
    assert out.returncode == 2 and word in out.stderr
    con = duckdb.connect(str(clinic), read_only=True)
    assert con.execute("SELECT count(*) FROM anon_releases").fetchall() == [(0,)]
    con.close()
