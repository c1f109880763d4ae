"""The level driver (duckdb_anon.mondrian) gives mondrian()'s release: same rows, same labels, both shapes."""
import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, multiset_differences as differences
from tests.conftest import qi_sql, tied_frames
from duckdb_anon import mondrian
from duckdb_anon.datasets import ADULT_QIS

SETTINGS = settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("mode,rule,shape,medians", [
    ("strict", "actual", "text", "quantile"), ("strict", "inherited", "typed", None),
    ("relaxed", "actual", "typed", "quantile"), ("relaxed", "inherited", "text", None)])
def test_adult_release_is_mondrians(adult_con, mode, rule, shape, medians):
    con = adult_con.cursor()
    mondrian.mondrian(con, "adult", ADULT_QIS, 10, into="lv", mode=mode, split_rule=rule, output=shape, medians=medians)
    con.execute(f"CREATE TEMP TABLE sq AS SELECT * FROM mondrian('adult', {qi_sql(ADULT_QIS)}, 10, mode := '{mode}', "
                f"split_rule := '{rule}', output := '{shape}')")
    assert differences(con, "lv", "sq") == (0, 0)
    assert con.execute("SELECT count(*) FROM lv").fetchall()[0][0] == 30162
    # k recomputed from the release alone (text labels group the classes; typed bounds too)
    smallest = con.execute(f"SELECT min(n) FROM (SELECT count(*) AS n FROM lv GROUP BY {', '.join(ADULT_QIS)})").fetchall()[0][0]
    assert smallest >= 10
    left = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__anon_lv_%'").fetchall()[0][0]
    assert left == 0  # every intermediate table dropped
    con.execute("DROP TABLE lv")
    con.close()


@st.composite
def tables(draw):
    df = draw(tied_frames(1, 40))
    k = draw(st.integers(1, len(df)))
    mode = draw(st.sampled_from(["strict", "relaxed"]))
    rule = draw(st.sampled_from(["actual", "inherited"]))
    order = draw(st.sampled_from(["appearance", "value"]))
    qis = draw(st.permutations(["x", "c", "y", "d"]))
    return df, k, mode, rule, order, qis


def load(con, df):
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c, y::DOUBLE AS y, "
                "DATE '2000-01-01' + d::INTEGER AS d FROM df_view ORDER BY id")
    con.unregister("df_view")


@SETTINGS
@given(tables())
def test_random_tables_give_mondrians_release(con, case):
    df, k, mode, rule, order, qis = case
    load(con, df)
    for shape, medians in (("text", "running"), ("typed", "quantile")):  # the two ways to a median
        con.execute("DROP TABLE IF EXISTS lv")
        mondrian.mondrian(con, "t", qis, k, into="lv", mode=mode, split_rule=rule, output=shape, categorical_order=order,
                        medians=medians)
        con.execute(f"CREATE OR REPLACE TABLE sq AS SELECT * FROM mondrian('t', {qi_sql(qis)}, {k}, mode := '{mode}', "
                    f"split_rule := '{rule}', output := '{shape}', categorical_order := '{order}')")
        assert differences(con, "lv", "sq") == (0, 0)
    release = con.execute("SELECT * FROM lv").df()
    assert sorted(release["id"]) == list(range(len(df)))
    sizes = con.execute("SELECT count(*) AS n FROM lv GROUP BY x, c, y, d").df()["n"]
    assert sizes.min() >= k


def test_bad_arguments_name_the_argument_and_leave_nothing(con):
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(5)")
    tables = "SELECT list(table_name ORDER BY table_name) FROM duckdb_tables()"
    before = con.execute(tables).fetchall()
    cases = [({"qis": ["nope"], "k": 2}, "qis"), ({"qis": ["x"], "k": 9}, "'k'"), ({"qis": ["x"], "k": 0}, "'k'"),
             ({"qis": ["x"], "k": 2, "mode": "lax"}, "'mode'"), ({"qis": ["x"], "k": 2, "output": "csv"}, "'output'"),
             ({"qis": ["x", "X"], "k": 2}, "qis"), ({"qis": ["x"], "k": 2, "medians": "exact"}, "'medians'")]
    for kwargs, word in cases:
        with pytest.raises(ValueError) as err:
            mondrian.mondrian(con, "t", into="out", **kwargs)
        assert "mondrian()" in str(err.value) and word in str(err.value)
    assert con.execute(tables).fetchall() == before  # no intermediate table left, no `out`
    assert con.execute("SELECT count(*) FROM t").fetchall()[0][0] == 5  # the source is untouched


@pytest.mark.parametrize("qis, arguments", [
    (["a", "nope"], {}), (["a"], {"sensitive": "nope", "l": 2}), (["a", "blob"], {}), (["a"], {"keep": ["nope"]}),
    (["a", "Odd"], {"source": "reserved"}), (["__anon_a"], {})])
def test_the_tables_columns_are_refused_with_mondrians_own_message(con, qis, arguments):
    """A missing QI, sensitive or keep column, a QI that cannot be generalized, a table with a column of a
    reserved name: the driver raises exactly the error SQL mondrian() raises (one rule, in SQL)."""
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 5 AS a, range % 3 AS odd, 'x'::BLOB AS blob FROM range(12)")
    con.execute('CREATE TABLE reserved AS SELECT *, 1 AS "__Anon_Z" FROM t')
    source = arguments.pop("source", "t")
    named = "".join(f", {name} := ?" for name in arguments)
    with pytest.raises(duckdb.Error) as sql_error:
        con.execute(f"SELECT * FROM mondrian(?, ?, 2{named})", [source, qis, *arguments.values()]).fetchall()
    with pytest.raises(ValueError) as driver_error:
        mondrian.mondrian(con, source, qis, 2, into="out", **arguments)
    message = str(driver_error.value)
    assert message.startswith("mondrian(): argument '") and message in str(sql_error.value)
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'out'").fetchall() == [(0,)]


def test_hostile_names_are_read_as_names(con):
    name = "we ird'; DROP TABLE t; --"
    con.execute("CREATE TABLE t AS SELECT 1 AS keep")
    con.execute(f'CREATE TABLE "{name}" AS SELECT range AS "a""b", range % 3 AS "c;d" FROM range(20)')
    mondrian.mondrian(con, name, ['a"b', "c;d"], 4, into='out"x')
    assert con.execute('SELECT count(*) FROM "out""x"').fetchall()[0][0] == 20
    assert con.execute("SELECT count(*) FROM t").fetchall()[0][0] == 1
    with pytest.raises(ValueError, match="argument 'table_name'"):  # a name DuckDB cannot read
        mondrian.mondrian(con, 'no"such', ["x"], 2, into="y")
    with pytest.raises(ValueError, match="argument 'table_name'"):
        mondrian.mondrian(con, "no_such", ["x"], 2, into="y")


def test_same_release_whatever_the_thread_count(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 97 AS a, (range * 7) % 31 AS b, "
                "['x', 'y', 'z'][range % 3 + 1] AS c FROM range(20000)")
    releases = []
    for threads in (1, 2):
        con.execute(f"SET threads = {threads}")
        mondrian.mondrian(con, "t", ["a", "b", "c"], 5, into=f"r{threads}", mode="relaxed")
        releases.append(f"r{threads}")
    assert differences(con, *releases) == (0, 0)


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_high_cardinality_table_gives_mondrians_release_both_ways(con, mode):
    """Nearly every row its own QI vector (the default then takes medians from quantiles), with ties, NULLs
    and odd partition sizes: both ways to a median give mondrian()'s release, whatever the thread count."""
    con.execute("CREATE TABLE t AS SELECT range AS id, CASE WHEN range % 50 = 0 THEN NULL ELSE hash(range, 1) % 900 END AS a, "
                "hash(range, 2) % 3000 AS b, ['x', 'y', 'z', NULL][(hash(range, 3) % 4)::INTEGER + 1] AS c FROM range(3001)")
    con.execute(f"CREATE TABLE sq AS SELECT * FROM mondrian('t', ['a', 'b', 'c'], 7, mode := '{mode}')")
    for medians, threads in ((None, 2), ("quantile", 1), ("running", 2)):
        con.execute(f"SET threads = {threads}")
        con.execute("DROP TABLE IF EXISTS lv")
        mondrian.mondrian(con, "t", ["a", "b", "c"], 7, into="lv", mode=mode, medians=medians)
        assert differences(con, "lv", "sq") == (0, 0)
    smallest = con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM lv GROUP BY a, b, c)").fetchall()[0][0]
    assert smallest >= 7 and con.execute("SELECT count(*) FROM lv").fetchall()[0][0] == 3001
