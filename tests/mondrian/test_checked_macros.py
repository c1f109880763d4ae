"""mondrian()'s checked recursion, generated from mondrian/checked.py (duckdb_anon/mondrian/checked_macros.py):
the shapes past 8 QIs, hierarchies on any QI positions, the call's arguments put into the text once, and
the QI limit. Classes, labels and models are recomputed with pandas from the release and the source."""
import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, multiset_differences as differences
from duckdb_anon import mondrian
from duckdb_anon.mondrian.checked_macros import SHAPES

SETTINGS = settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PATHS = {"a": ["a", "ab", "*"], "b": ["b", "ab", "*"], "c": ["c", "*"], "d": ["d", "de", "*"], "e": ["e", "de", "*"]}


@pytest.fixture(scope="module")
def con():
    connection = duckdb_anon.connect()
    connection.execute("CREATE TABLE h AS SELECT unnest(?) AS leaf, unnest(?) AS path", [list(PATHS), list(PATHS.values())])
    yield connection
    connection.close()


def covering(values) -> str:
    """The deepest node of PATHS above every value: the label a class of these values must read."""
    return next(node for node in PATHS[next(iter(values))] if all(node in PATHS[v] for v in values))


def check_release(release: pd.DataFrame, source: pd.DataFrame, qis, hier, k, sensitive=None, l=None):
    """Every class (rows alike on every QI label) holds k rows and, with `sensitive`, l distinct values;
    a QI with the hierarchy reads its classes' covering node, a number its min-max."""
    joined = release.merge(source, on="id", suffixes=("", "_src"))
    assert sorted(joined["id"]) == sorted(source["id"])
    for _, group in joined.groupby(qis):
        assert len(group) >= k
        if sensitive:
            assert group[sensitive].nunique() >= l
        for q in qis:
            values = group[q + "_src"]
            if q in hier:
                assert group[q].iloc[0] == covering(set(values))
            else:
                lo, hi = values.min(), values.max()
                assert group[q].iloc[0] == (str(lo) if lo == hi else f"{lo}-{hi}")


@st.composite
def cases(draw):
    """A table of 20-60 rows with 2 or 8 integer QIs and one letter QI put at a drawn position (9 QIs: the
    second shape)."""
    q = draw(st.sampled_from([3, 9]))
    n = draw(st.integers(20, 60))
    ints = [draw(st.lists(st.integers(0, draw(st.integers(1, 9))), min_size=n, max_size=n)) for _ in range(q - 1)]
    letters = draw(st.lists(st.sampled_from(list(PATHS)), min_size=n, max_size=n))
    frame = pd.DataFrame({f"x{i}": column for i, column in enumerate(ints)}).assign(c=letters, s=[i % 3 for i in range(n)],
                                                                                   id=range(n))
    qis = [f"x{i}" for i in range(q - 1)]
    qis.insert(draw(st.integers(0, q - 1)), "c")
    return frame, qis, draw(st.integers(2, 5)), draw(st.sampled_from(["actual", "inherited"])), draw(st.booleans())


@SETTINGS
@given(cases())
def test_hierarchy_on_any_qi_and_shapes_past_eight_qis(con, case):
    frame, qis, k, rule, diverse = case
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    models = {"hierarchies": {"c": "h"}, "split_rule": rule, **({"sensitive": "s", "l": 2} if diverse else {})}
    named = "".join(f", {name} := ?" for name in models)
    con.execute(f"CREATE OR REPLACE TABLE r_sql AS SELECT * FROM mondrian('t', ?, ?{named})", [qis, k, *models.values()])
    check_release(con.execute("SELECT * FROM r_sql").df(), frame, qis, {"c"}, k, *(["s", 2] if diverse else []))
    mondrian.mondrian(con, "t", qis, k, into="r_levels", **models)  # the driver runs the plan level by level
    assert differences(con, "r_sql", "r_levels") == (0, 0)
    con.execute("DROP TABLE r_levels")


def test_arguments_go_in_once_whatever_their_text(con):
    """A name holding the text's argument marks and quotes stays in its literal: the release is that of
    the same table under a plain name."""
    odd_table, odd_sensitive = "t__p_qis'x__p_k", "s__p_model"
    con.execute("CREATE OR REPLACE TABLE plain AS SELECT i AS id, i % 7 AS x, ['a', 'b', 'c', 'd', 'e'][1 + i % 5] AS c, "
                "i % 3 AS s FROM range(40) r(i)")
    con.execute(f"CREATE OR REPLACE TABLE \"{odd_table}\" AS SELECT id, x, c, s AS \"{odd_sensitive}\" FROM plain")
    released = []
    for table, sensitive in (("plain", "s"), (odd_table, odd_sensitive)):
        con.execute(f"CREATE OR REPLACE TABLE out_{len(released)} AS SELECT * FROM mondrian(?, ['x', 'c'], 4, "
                    "hierarchies := {'c': 'h'}, sensitive := ?, l := 2)", [table, sensitive])
        released.append(con.execute(f"SELECT * FROM out_{len(released)} ORDER BY id").fetchall())
    assert released[0] == released[1]
    check_release(con.execute("SELECT * FROM out_0").df(), con.execute("SELECT * FROM plain").df(), ["x", "c"], {"c"},
                  4, "s", 2)


def test_more_qis_than_the_widest_shape_is_an_error(con):
    widest = max(width for width, _, _ in SHAPES)
    columns = ", ".join(f"i % {2 + d} AS q{d}" for d in range(widest + 1))
    con.execute(f"CREATE OR REPLACE TABLE wide AS SELECT {columns} FROM range(50) r(i)")
    tables = con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    with pytest.raises(duckdb.Error, match=rf"mondrian\(\): argument 'qis' lists {widest + 1} columns; at most {widest}"):
        con.execute("SELECT * FROM mondrian('wide', ?, 2)", [[f"q{d}" for d in range(widest + 1)]]).fetchall()
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == tables
    qis = [f"q{d}" for d in range(widest)]  # the widest shape itself runs
    release = con.execute("SELECT * FROM mondrian('wide', ?, 5, max_suppression := 0.1)", [qis]).df()
    suppressed = (release[qis] == "*").all(axis=1)
    assert len(release) == 50 and suppressed.sum() <= 5
    assert release[~suppressed].groupby(qis).size().min() >= 5
