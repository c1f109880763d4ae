"""Progress while the work runs: on a long run the CLI prints updates that move (from a thread polling the
connection, not DuckDB's own bar, which Mondrian's recursive query leaves at 0 % until it ends)."""
import io
import re
import subprocess
import sys
import time

import duckdb
import pytest

from duckdb_anon.commands.progress import QUIET_FOR_SECONDS, Progress

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
    """What Progress writes to: a log or pipe, or (terminal=True) a terminal. It notes when each write came."""

    def __init__(self, terminal: bool):
        super().__init__()
        self.terminal, self.times = terminal, []

    def isatty(self):
        return self.terminal

    def write(self, text):
        self.times.append(time.perf_counter())
        return super().write(text)


LINE = re.compile(r"duckdb-anon test: (.+) \((\d+) s(?:, (\d+) %)?\)")


def progress_of(terminal: bool, steps=("first step", "second step"), quiet_for=QUIET_FOR_SECONDS, work=True,
                shown=1) -> Stream:
    """Progress (updates every 0.05 s) around `steps` of real queries (`work`; else of waiting, which DuckDB
    reports no percentage for). Each step lasts 0.5 s and until the writer has shown it `shown` times, so
    that a loaded machine, where the polling thread runs late, slows the test down but does not change it."""
    con = duckdb.connect()
    stream = Stream(terminal)
    with Progress(con, "test", quiet=False, after=0.0, every=0.05, quiet_for=quiet_for, stream=stream) as progress:
        for step in steps:
            progress.step(step)
            started = time.perf_counter()
            while time.perf_counter() - started < 0.5 or stream.getvalue().count(f": {step} (") < shown:
                assert time.perf_counter() - started < 60, f"{step!r} was never shown: {stream.getvalue()!r}"
                if work:
                    con.execute("SELECT sum(hash(range)) FROM range(2000000)").fetchall()
                else:
                    time.sleep(0.02)
    return stream


def log_lines(stream: Stream) -> list[tuple[float, str, int, int | None]]:
    """(when written, step, seconds shown, tenth of the percentage shown or None) of each line of a log."""
    out = []
    for when, text in zip(stream.times, stream.getvalue().splitlines()):
        found = LINE.fullmatch(text)
        assert found, text
        out.append((when, found.group(1), int(found.group(2)), None if found.group(3) is None else int(found.group(3)) // 10))
    assert len(out) == len(stream.times)  # one write per line
    return out


def test_in_a_log_progress_writes_a_line_only_when_something_changed():
    """Before: a line every `every` seconds, the same line again and again (13 lines for one report). The
    promise: a line only for a new step, the percentage in another tenth, or another `quiet_for` seconds
    gone (60 s here: never within this test), and the steps in the order they came."""
    lines = log_lines(progress_of(terminal=False))
    steps = [step for _, step, _, _ in lines]
    assert steps == sorted(steps, key=["starting", "first step", "second step"].index), steps
    assert {"first step", "second step"} <= set(steps)
    for (t1, step1, s1, tenth1), (t2, step2, s2, tenth2) in zip(lines, lines[1:]):
        assert (step1, tenth1) != (step2, tenth2) or t2 - t1 >= QUIET_FOR_SECONDS, lines
        assert s1 <= s2  # the clock moves forward


def test_in_a_log_a_step_without_a_percentage_is_repeated_after_quiet_for():
    """A step DuckDB reports no percentage for writes its line again once `quiet_for` seconds went by without
    one, never sooner (a log shows the run is alive, and does not fill up)."""
    quiet_for = 0.3
    lines = log_lines(progress_of(terminal=False, steps=("waiting",), quiet_for=quiet_for, work=False, shown=3))
    waiting = [line for line in lines if line[1] == "waiting"]
    assert len(waiting) >= 3 and all(tenth is None for _, _, _, tenth in waiting)
    assert all(t2 - t1 >= quiet_for for (t1, *_), (t2, *_) in zip(waiting, waiting[1:])), lines


def test_on_a_terminal_progress_is_one_line_redrawn():
    text = progress_of(terminal=True).getvalue()
    assert text.count("\r") >= 2 and text.count("\n") == 1 and text.endswith("\n")
    assert "second step" in text.rsplit("\r", 1)[1]
