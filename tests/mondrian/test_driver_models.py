"""The level driver with hierarchies, l-diversity, t-closeness and suppression gives mondrian()'s release:
same classes, same labels, same suppressed rows; the models recomputed from the release with pandas."""
import math

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, multiset_differences as differences
from tests.conftest import tied_frames
from duckdb_anon import mondrian
from duckdb_anon.datasets import ADULT_HIERARCHY_QIS, ADULT_QIS

SETTINGS = settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def both(con, table, qis, k, into, **models):
    """The level driver's release into `into`, mondrian()'s into `into`_sql."""
    mondrian.mondrian(con, table, qis, k, into=into, **models)
    named = "".join(f", {name} := ?" for name in models)
    con.execute(f"CREATE OR REPLACE TABLE {into}_sql AS SELECT * FROM mondrian(?, ?, ?{named})",
                [table, qis, k, *models.values()])


def recursive_l(counts, c):
    ordered = sorted(counts, reverse=True)
    return sum(1 for l in range(1, len(ordered) + 1) if ordered[0] < c * sum(ordered[l - 1:]))


def check_models(release: pd.DataFrame, qis, k, models) -> None:
    """Each class (rows alike on every QI label) has k rows and meets the model; suppressed rows read '*'
    in every QI (a numeric QI without a hierarchy reads '*' only then) and fit the budget. Recomputed here
    from the release alone."""
    suppressed = (release[qis] == "*").all(axis=1)
    assert suppressed.sum() <= math.floor(models.get("max_suppression", 0) * len(release))
    kept = release[~suppressed]
    for _, group in kept.groupby(qis, dropna=False):
        assert len(group) >= k
        if "sensitive" in models:
            counts = group[models["sensitive"]].value_counts(dropna=False).tolist()
            if models.get("l") is not None and models.get("l_kind", "distinct") == "distinct":
                assert len(counts) >= models["l"]
            if models.get("l") is not None and models.get("l_kind") == "entropy":
                total = sum(counts)
                assert math.exp(-sum(n / total * math.log(n / total) for n in counts)) >= models["l"] - 1e-9
            if models.get("l") is not None and models.get("l_kind") == "recursive":
                assert recursive_l(counts, models.get("c", 2)) >= models["l"]


@pytest.fixture(scope="module")
def adult():
    """1,000 Adult rows and the shipped hierarchies."""
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult_all")
    duckdb_anon.load_adult_hierarchies(con)
    con.execute("CREATE TABLE adult AS SELECT * FROM adult_all WHERE rid % 30 = 0")
    yield con
    con.close()


ADULT_HIERARCHIES = {q: f"h_{q}" for q in ADULT_HIERARCHY_QIS}


@pytest.mark.parametrize("models", [
    {"hierarchies": ADULT_HIERARCHIES, "sensitive": "class", "l": 2, "max_suppression": 0.02},
    {"hierarchies": ADULT_HIERARCHIES, "sensitive": "relationship", "l": 2.5, "l_kind": "entropy", "t": 0.4},
    {"hierarchies": ADULT_HIERARCHIES, "sensitive": "hours_per_week", "l": 3, "l_kind": "recursive", "c": 3, "t": 0.3}],
    ids=["distinct+suppression", "entropy+t", "recursive+t-ordered"])
def test_adult_with_hierarchies_and_models_is_mondrians_release(adult, models):
    con = adult.cursor()
    con.execute("DROP TABLE IF EXISTS lv")
    both(con, "adult", ADULT_QIS, 10, "lv", **models)
    assert differences(con, "lv", "lv_sql") == (0, 0)
    release = con.execute("SELECT * FROM lv").df()
    assert len(release) == con.execute("SELECT count(*) FROM adult").fetchall()[0][0]
    check_models(release, ADULT_QIS, 10, models)
    if models.get("hierarchies"):  # each label is a node above the row's own value
        source = con.execute("SELECT * FROM adult").df().set_index("rid")
        paths = {q: dict(con.execute(f"SELECT leaf, path FROM h_{q}").fetchall()) for q in ADULT_HIERARCHY_QIS}
        for q in ADULT_HIERARCHY_QIS:
            assert all(label in paths[q][value] for label, value in zip(release[q], source.loc[release["rid"], q]))
    con.close()


@st.composite
def cases(draw):
    df = draw(tied_frames(1, 30))
    df["s"] = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=len(df), max_size=len(df)))
    k = draw(st.integers(1, max(1, len(df) // 2)))
    models = {}
    if draw(st.booleans()):  # leaves a-e and z (NULL), under up to three groups or straight under the root
        groups = {leaf: draw(st.sampled_from([None, "g0", "g1", "g2"])) for leaf in "abcdez"}
        models["hierarchies"] = {"c": groups}
    kind = draw(st.sampled_from(["none", "distinct", "entropy", "recursive", "t"]))
    if kind != "none":
        models["sensitive"] = "s"
    if kind in ("distinct", "recursive"):
        models["l"] = draw(st.integers(1, 3))
    if kind == "entropy":
        models["l"] = draw(st.floats(1.0, 2.5))
    if kind in ("entropy", "recursive"):
        models["l_kind"] = kind
    if kind == "recursive":
        models["c"] = draw(st.sampled_from([1, 2, 3]))
    if kind == "t":
        models["t"] = draw(st.sampled_from([0.2, 0.5, 1.0]))
    models["max_suppression"] = draw(st.sampled_from([0, 0.1, 0.3]))
    if kind == "none" and not models["max_suppression"] and draw(st.booleans()):
        models["mode"] = "relaxed"
    models["split_rule"] = draw(st.sampled_from(["actual", "inherited"]))
    models["categorical_order"] = draw(st.sampled_from(["appearance", "value"]))
    models["output"] = draw(st.sampled_from(["text", "typed"]))
    qis = draw(st.permutations(["x", "c", "y", "d"]))
    return df, k, models, qis


@SETTINGS
@given(cases())
def test_random_tables_give_mondrians_release(con, case):
    df, k, models, qis = case
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, coalesce(c, 'z')::VARCHAR AS c, y::DOUBLE AS y, "
                "DATE '2000-01-01' + d::INTEGER AS d, s::INTEGER AS s FROM df_view ORDER BY id")
    con.unregister("df_view")
    if "hierarchies" in models:
        groups = models["hierarchies"].pop("c")
        con.execute("CREATE OR REPLACE TABLE h_c AS SELECT leaf, CASE WHEN g IS NULL THEN [leaf, '*'] ELSE [leaf, g, '*'] END "
                    "AS path FROM (SELECT unnest(?) AS leaf, unnest(?) AS g)", [list(groups), list(groups.values())])
        models["hierarchies"]["c"] = "h_c"
    con.execute("DROP TABLE IF EXISTS lv")
    try:
        named = "".join(f", {name} := ?" for name in models)
        con.execute(f"CREATE OR REPLACE TABLE lv_sql AS SELECT * FROM mondrian('t', ?, ?{named})", [qis, k, *models.values()])
    except duckdb.Error as exc:  # the whole table fails the model: the level driver says so too
        argument = str(exc).split("argument ", 1)[1].split(" ", 1)[0]
        with pytest.raises(ValueError, match=f"mondrian\\(\\): argument {argument} cannot be met"):
            mondrian.mondrian(con, "t", qis, k, into="lv", **models)
        return
    mondrian.mondrian(con, "t", qis, k, into="lv", **models)
    assert differences(con, "lv", "lv_sql") == (0, 0)
    release = con.execute("SELECT * FROM lv").df()
    assert sorted(release["id"]) == list(range(len(df)))
    if models["output"] == "text":
        check_models(release.astype({q: str for q in qis}), qis, k, models)


def test_errors_name_the_argument_as_mondrians(con):
    con.execute("CREATE TABLE t AS SELECT range AS x, range % 2 AS s, 'v' || (range % 3) AS c FROM range(20)")
    con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('v0', ['v0', '*']), ('v1', ['v1', '*'])) AS h(leaf, path)")
    tables = "SELECT list(table_name ORDER BY table_name) FROM duckdb_tables()"
    before = con.execute(tables).fetchall()
    cases = [({"sensitive": "s", "l": 3}, "argument 'l' cannot be met: the whole table is only 2 (distinct)-diverse in 's'"),
             ({"l": 2}, "argument 'l' needs a sensitive column"),
             ({"sensitive": "s"}, "argument 'sensitive' is given without l or t"),
             ({"sensitive": "s", "l": 2, "mode": "relaxed"}, "argument 'mode'"),
             ({"max_suppression": 1.5}, "argument 'max_suppression' must lie in [0, 1)"),
             ({"sensitive": "nope", "l": 2}, "argument 'sensitive'"),
             ({"hierarchies": {"s": "h"}}, "argument 'hierarchies' names a column that is not among the QIs"),
             ({"hierarchies": {"c": "h"}}, "argument 'hierarchies': the hierarchy of 'c' has no leaf 'v2'")]
    for models, message in cases:
        with pytest.raises(ValueError) as err:
            mondrian.mondrian(con, "t", ["x", "c"], 2, into="out", **models)
        assert "mondrian()" in str(err.value) and message in str(err.value), str(err.value)
    assert con.execute(tables).fetchall() == before  # nothing left behind
