import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.datasets import ADULT_QIS

SHARED = Path(os.environ.get("SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture
def con():
    connection = duckdb_anon.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def module_con():
    """One connection for a module's tests that only read what a module fixture puts on it (rows of bad
    input, say): installing duckdb-anon takes about half a second, once per connection."""
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
