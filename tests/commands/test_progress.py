"""Progress while the work runs: on a long run the CLI prints updates that move (from a thread polling the
connection, not DuckDB's own bar, which Mondrian's recursive query leaves at 0 % until it ends)."""
import io
import re
import subprocess
import sys
import time

import duckdb
import pytest

from duckdb_anon.commands.progress import Progress

PROGRESS = re.compile(r"^duckdb-anon mondrian: (.+) \((\d+) s(?:, (\d+) %)?\)$")


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def generated(folder, rows: int):
    """`rows` rows over three QIs, about 85 % of them distinct vectors (Mondrian's per-level window path, its
    slower one): about 3.4 s of work on 1,000,000 of them on an idle machine, enough for two updates a
    second apart after the first second (300,000 rows took 1.6 s, and printed one)."""
    path = folder / f"rows{rows}.parquet"
    duckdb.connect().execute(
        "COPY (SELECT range AS id, hash(range, 1) % 90 AS age, 'z' || (hash(range, 2) % 600) AS zip, "
        "hash(range, 3) % 13 AS edu FROM range(?)) TO '" + str(path) + "'", [rows])
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("progress"), 1_000_000)


def test_a_long_run_prints_progress_that_moves(big):
    out = run("mondrian", big, "--qi", "age,zip,edu", "-k", "10", "--drop", "id", "-o", big.parent / "loud.parquet")
    assert out.returncode == 0, out.stderr
    updates = out.stderr.splitlines()
    parsed = [PROGRESS.match(line) for line in updates]
    assert updates and all(parsed), out.stderr  # stderr holds progress lines only
    steps = [(m.group(1), None if m.group(3) is None else int(m.group(3)) // 10) for m in parsed]
    assert all(a != b for a, b in zip(steps, steps[1:])), out.stderr  # a pipe gets a line only when it moved
    seconds = [int(m.group(2)) for m in parsed]
    assert seconds == sorted(seconds) and seconds[-1] >= 1  # the clock moves forward
    assert any("anonymizing into" in m.group(1) for m in parsed)  # it names the step under way
    assert "\u2595" not in out.stdout + out.stderr  # DuckDB's own bar is never drawn
    assert out.stdout.startswith("wrote ")


def test_quiet_prints_nothing(tmp_path):
    """A run of about 2 s on an idle machine: without --quiet it would print progress."""
    source = generated(tmp_path, 40_000)
    out = run("mondrian", source, "--qi", "age,zip,edu", "-k", "10", "--drop", "id", "-o", tmp_path / "quiet.parquet", "--quiet")
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr
    assert (tmp_path / "quiet.parquet").is_file()


class Stream(io.StringIO):
    """What Progress writes to: a log or pipe, or (terminal=True) a terminal."""

    def __init__(self, terminal: bool):
        super().__init__()
        self.terminal = terminal

    def isatty(self):
        return self.terminal


def progress_of(terminal: bool) -> str:
    """Progress (updates every 0.05 s) around two steps of real queries, about a second in all."""
    con = duckdb.connect()
    stream = Stream(terminal)
    with Progress(con, "test", quiet=False, after=0.0, every=0.05, stream=stream) as progress:
        for step in ("first step", "second step"):
            progress.step(step)
            started = time.perf_counter()
            while time.perf_counter() - started < 0.5:
                con.execute("SELECT sum(hash(range)) FROM range(2000000)").fetchall()
    return stream.getvalue()


def test_in_a_log_progress_writes_a_line_only_when_something_changed():
    """Before: a line every `every` seconds, the same line again and again (13 lines for one report)."""
    lines = progress_of(terminal=False).splitlines()
    keys = []
    for line in lines:
        found = re.fullmatch(r"duckdb-anon test: (.+) \((\d+) s(?:, (\d+) %)?\)", line)
        assert found, line
        keys.append((found.group(1), None if found.group(3) is None else int(found.group(3)) // 10))
    assert {step for step, _ in keys} == {"first step", "second step"}
    assert all(a != b for a, b in zip(keys, keys[1:])), lines
    assert len(lines) <= 2 * 11


def test_on_a_terminal_progress_is_one_line_redrawn():
    text = progress_of(terminal=True)
    assert text.count("\r") >= 2 and text.count("\n") == 1 and text.endswith("\n")
    assert "second step" in text.rsplit("\r", 1)[1]
