"""mondrian(..., keep := [...]) publishes the QIs and the listed columns only, in the table's order, with the
rows it publishes without keep; the level driver applies the same rule. A bad keep is an error naming
mondrian() and 'keep' that leaves nothing behind."""
import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, multiset_differences, tied_frames
from duckdb_anon import mondrian
from duckdb_anon.releases import publish_mondrian
from duckdb_anon.roles import DeclarationError

COLUMNS = ["x", "c", "y", "d", "id"]


def load(con, df):
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c, y::DOUBLE AS y, "
                "DATE '2000-01-01' + d::INTEGER AS d FROM df_view ORDER BY id")
    con.unregister("df_view")


@st.composite
def cases(draw):
    df = draw(tied_frames(1, 30))
    qis = draw(st.lists(st.sampled_from(["x", "c", "y", "d"]), min_size=1, max_size=3, unique=True))
    keep = draw(st.lists(st.sampled_from([c for c in COLUMNS if c not in qis]), max_size=3, unique=True))
    keep = [name.upper() if draw(st.booleans()) else name for name in keep]  # names match whatever their case
    return df, qis, keep, draw(st.integers(1, len(df))), draw(st.sampled_from(["text", "typed"]))


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases())
def test_keep_publishes_exactly_the_qis_and_keep(con, case):
    df, qis, keep, k, shape = case
    load(con, df)
    expected = [c for c in ["id", "x", "c", "y", "d"] if c in qis or c in [n.lower() for n in keep]]
    con.execute("CREATE OR REPLACE TABLE kept AS SELECT * FROM mondrian('t', ?, ?, output := ?, keep := ?)",
                [qis, k, shape, keep])
    assert [r[0] for r in con.execute("DESCRIBE kept").fetchall()] == expected
    # the same rows as the full release, projected on those columns by plain SQL
    con.execute("CREATE OR REPLACE TABLE full_release AS SELECT * FROM mondrian('t', ?, ?, output := ?)", [qis, k, shape])
    projected = ", ".join(f'"{c}"' for c in expected)
    con.execute(f"CREATE OR REPLACE TABLE projected AS SELECT {projected} FROM full_release")
    assert multiset_differences(con, "kept", "projected") == (0, 0)
    # the level driver publishes the same
    con.execute("DROP TABLE IF EXISTS lv")
    mondrian.mondrian(con, "t", qis, k, into="lv", output=shape, keep=keep)
    assert [r[0] for r in con.execute("DESCRIBE lv").fetchall()] == expected
    assert multiset_differences(con, "lv", "kept") == (0, 0)


@pytest.mark.parametrize("keep, words", [
    (["nope"], ["'keep'", "no column 'nope'"]),
    (["X"], ["'keep'", "'X', a QI"]),
    ("c", ["'keep'", "list of column names"]),
    (["c", "C"], ["'keep'", "twice"]),
    ([None], ["'keep'", "NULL"]),
    (["__anon_row"], ["'keep'", "reserved"]),
])
@pytest.mark.parametrize("rows", [0, 10])
def test_a_bad_keep_names_mondrian_and_keep_and_leaves_nothing(module_con, keep, words, rows):
    con = module_con
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT range AS x, 'c' || range AS c FROM range({rows})")
    tables = "SELECT list(table_name ORDER BY table_name) FROM duckdb_tables()"
    before = con.execute(tables).fetchall()
    with pytest.raises(duckdb.Error) as err:
        con.execute("CREATE TABLE out AS SELECT * FROM mondrian('t', ['x'], 1, keep := ?)", [keep])
    assert "mondrian(): argument" in str(err.value) and all(w in str(err.value) for w in words), str(err.value)
    with pytest.raises(ValueError) as err:
        mondrian.mondrian(con, "t", ["x"], 1, into="out", keep=keep)
    assert "mondrian(): argument" in str(err.value) and all(w in str(err.value) for w in words), str(err.value)
    assert con.execute(tables).fetchall() == before


def test_publish_mondrian_passes_keep_and_needs_the_id_it_matches_on(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, 'name ' || range AS name, range % 30 AS age, range % 4 AS dis "
                "FROM range(60)")
    row = publish_mondrian(con, "t", "frozen", ["age"], 5, id_column="id", keep=["id", "dis"])
    assert [r[0] for r in con.execute("DESCRIBE frozen").fetchall()] == ["id", "age", "dis"]
    assert row["rows"] == 60 and row["ncp_percent"] is not None and '"keep": ["id", "dis"]' in row["arguments"]
    with pytest.raises(DeclarationError, match=r"publish_mondrian\(\): argument 'id_column'"):
        publish_mondrian(con, "t", "other", ["age"], 5, id_column="id", keep=["dis"])
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'other'").fetchall()[0][0] == 0
