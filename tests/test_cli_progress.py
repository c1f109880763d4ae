"""Progress while the work runs: on a long run the CLI prints updates that move (from a thread polling the
connection, not DuckDB's own bar, which Mondrian's recursive query leaves at 0 % until it ends)."""
import re
import subprocess
import sys

import duckdb
import pytest

PROGRESS = re.compile(r"^duckdb-anon mondrian: (.+) \((\d+) s(?:, (\d+) %)?\)$")


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """100,000 rows over three QIs: Mondrian takes a few seconds on them."""
    path = tmp_path_factory.mktemp("progress") / "big.parquet"
    duckdb.connect().execute(
        "COPY (SELECT range AS id, (range * 7919) % 90 AS age, 'z' || ((range * 104729) % 997) AS zip, "
        "(range * 31) % 13 AS edu FROM range(100000)) TO '" + str(path) + "'")
    return path


def test_a_long_run_prints_progress_that_moves(big):
    out = run("mondrian", big, "--qi", "age,zip,edu", "-k", "10", "-o", big.parent / "loud.parquet")
    assert out.returncode == 0, out.stderr
    updates = out.stderr.splitlines()
    parsed = [PROGRESS.match(line) for line in updates]
    assert updates and all(parsed), out.stderr  # stderr holds progress lines only
    assert len(set(updates)) >= 2, out.stderr
    seconds = [int(m.group(2)) for m in parsed]
    assert seconds == sorted(seconds) and seconds[-1] > seconds[0]  # the clock moves forward
    assert any("anonymizing into" in m.group(1) for m in parsed)  # it names the step under way
    assert "\u2595" not in out.stdout + out.stderr  # DuckDB's own bar is never drawn
    assert out.stdout.startswith("wrote ")


def test_quiet_prints_nothing(big):
    out = run("mondrian", big, "--qi", "age,zip,edu", "-k", "10", "-o", big.parent / "quiet.parquet", "--quiet")
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr
    assert (big.parent / "quiet.parquet").is_file()
