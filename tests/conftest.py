import io
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

SHARED = Path(os.environ.get("SHARED", Path(__file__).resolve().parents[2] / "shared"))

#: How many examples a property test runs, as a share of the count it states: 0.5 by default, which keeps
#: the suite's time in bounds; DUCKDB_ANON_TEST_EXAMPLES=1 (or more) for a thorough run (docs/performance.md).
EXAMPLES = float(os.environ.get("DUCKDB_ANON_TEST_EXAMPLES", "0.5"))


def examples(stated: int) -> int:
    """The number of examples a property test stating `stated` runs (at least 2)."""
    return max(2, round(stated * EXAMPLES))


@pytest.fixture(scope="session")
def installed_template(tmp_path_factory):
    """A database file holding every macro, installed once per test process, for tests that need an
    installed database file to copy. tests/test_install.py tests install() itself."""
    path = tmp_path_factory.mktemp("installed") / "template.duckdb"
    connection = duckdb_anon.connect(str(path))
    connection.execute("CHECKPOINT")
    connection.close()
    return path


@pytest.fixture
def con():
    """A fresh in-memory database with duckdb-anon installed: duckdb_anon.connect(), which copies the
    install from its template."""
    connection = duckdb_anon.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def module_con():
    """One connection for a module's tests that only read what a module fixture puts on it (rows of bad
    input, say)."""
    connection = duckdb_anon.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def adult_con():
    """One connection holding the shipped Adult data as table `adult` (read-only use)."""
    connection = duckdb_anon.connect()
    duckdb_anon.load_adult(connection, "adult")
    yield connection
    connection.close()


def in_process(command: list[str], call, env=None, cwd=None) -> subprocess.CompletedProcess:
    """`call()` run in this process as a child process `command` would run, returned as
    `subprocess.run(..., capture_output=True, text=True)` returns a child's run: its exit code (what it
    returns; argparse's SystemExit and an uncaught exception's traceback with code 1 included), and
    everything written to the standard output and error, read from the file descriptors (DuckDB writes its
    tables there itself), with newlines translated. `env` replaces os.environ for the run and `cwd` is the
    working directory during it, as for a child."""
    streams, saved_environ, saved_cwd = (sys.stdout, sys.stderr), dict(os.environ), os.getcwd()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in streams:
            stream.flush()
        saved_fds = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace",
                                      line_buffering=True)
        try:
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = call()
            except SystemExit as exit:
                code = exit.code
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
                    code = 1
            except Exception:
                traceback.print_exc(file=sys.stderr)
                code = 1
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_environ)
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)
        texts = []
        for file in (out, err):
            file.seek(0)
            texts.append(io.TextIOWrapper(io.BytesIO(file.read()), encoding="utf-8", errors="replace").read())
    return subprocess.CompletedProcess(command, 0 if code is None else code, *texts)


def cli_in_process(*args, env=None) -> subprocess.CompletedProcess:
    """`duckdb-anon ARGS` run by the CLI's main() in this process (in_process): for tests of a command's
    arguments, output and exit code; what needs a process of its own (locks, signals, imports, the
    interpreter's exit) runs in a subprocess."""
    from duckdb_anon.cli import main

    return in_process(["duckdb-anon", *map(str, args)], lambda: main([str(arg) for arg in args]), env=env)


def qi_sql(qis):
    """A SQL list literal of column names (test-only; names here are fixed strings)."""
    return "[" + ", ".join("'" + q.replace("'", "''") + "'" for q in qis) + "]"


ADULT_QI_SQL = qi_sql(ADULT_QIS)


def multiset_differences(con, a, b):
    """(rows of relation a not in b, rows of b not in a), counted as multisets (test-only fixed names)."""
    return con.execute(f"SELECT (SELECT count(*) FROM (FROM {a} EXCEPT ALL FROM {b})), "
                       f"(SELECT count(*) FROM (FROM {b} EXCEPT ALL FROM {a}))").fetchall()[0]


def assert_error_names(con, sql, words):
    """Running `sql` fails with a DuckDB error whose message contains every one of `words`."""
    with pytest.raises(duckdb.Error) as err:
        con.execute(sql).fetchall()
    for word in words:
        assert word in str(err.value)


@st.composite
def tied_frames(draw, min_rows, max_rows, columns="xcyd"):
    """A small DataFrame of few distinct values (many ties, NULLs, sometimes a constant column) and an
    `id` numbering its rows. Columns, from `columns`: x (integer), c (letter), y (float), d (integer,
    a day number for dates)."""
    n = draw(st.integers(min_rows, max_rows))
    small = st.integers(0, draw(st.integers(0, 6)))  # 0 -> a constant column
    kinds = {"x": small, "c": st.sampled_from("abcde"), "y": small.map(float), "d": small}
    rows = draw(st.lists(st.tuples(*(st.one_of(st.none(), kinds[c]) for c in columns)), min_size=n, max_size=n))
    return pd.DataFrame(rows, columns=list(columns)).assign(id=range(n))
