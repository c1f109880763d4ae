"""max_suppression: outlier rows suppressed (every QI '*') instead of blocking a cut, within a budget."""
import math
from collections import Counter

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, ADULT_QI_SQL
from duckdb_anon.datasets import ADULT_QIS
from tests.independent import class_sizes, row_keys
from tests.reference_mondrian import diversity, mondrian_reference

# 25 examples each: every one plans Mondrian's large query (about 0.4 s of CPU per call)
SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
HIERARCHY = {"a": ["a", "g1", "*"], "b": ["b", "g1", "*"], "c": ["c", "g2", "*"], "d": ["d", "*"], "e": ["e", "g2", "*"]}


@st.composite
def cases(draw):
    n = draw(st.integers(2, 50))
    rows = draw(st.lists(st.tuples(st.integers(0, draw(st.integers(1, 9))), st.sampled_from("abcde"),
                                   st.sampled_from("pqr")), min_size=n, max_size=n))
    df = pd.DataFrame(rows, columns=["x", "c", "s"]).assign(id=range(n))
    return df, draw(st.integers(1, max(1, n // 2))), draw(st.sampled_from([0.05, 0.1, 0.2, 0.4])), draw(st.booleans())


@SETTINGS
@given(cases())
def test_partition_and_suppressed_rows_equal_the_reference(con, case):
    df, k, fraction, diverse = case
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c, s::VARCHAR AS s FROM df_view")
    con.unregister("df_view")
    con.execute("CREATE OR REPLACE TABLE h (leaf VARCHAR, path VARCHAR[])")
    con.executemany("INSERT INTO h VALUES (?, ?)", [[leaf, path] for leaf, path in HIERARCHY.items()])
    model = {"l": 2, "l_kind": "distinct", "c": 2} if diverse and df["s"].nunique() >= 2 else None
    args = f"hierarchies := {{'c': 'h'}}, max_suppression := {fraction}" + (", sensitive := 's', l := 2" if model else "")
    classes = con.execute(f"SELECT row_id - 1 AS i, class_id FROM mondrian_classes('t', ['x', 'c'], {k}, {args})").df()
    suppressed = []
    expected = mondrian_reference(list(zip(df["x"].astype(float), df["c"])), k, hierarchies={1: HIERARCHY},
                                  sensitive=df["s"].tolist(), model=model, max_suppression=fraction, suppressed=suppressed)
    got = classes[classes["class_id"] > 0].groupby("class_id")["i"].apply(sorted).tolist()
    assert sorted(got) == sorted(expected)
    assert sorted(classes.loc[classes["class_id"] == 0, "i"]) == sorted(suppressed)
    assert len(suppressed) <= math.floor(fraction * len(df))
    release = con.execute(f"SELECT * FROM mondrian('t', ['x', 'c'], {k}, {args}) ORDER BY id").df()
    hidden = release["x"] == "*"
    assert len(release) == len(df) and hidden.sum() == len(suppressed)
    assert (release.loc[hidden, "c"] == "*").all()
    kept = release[~hidden]
    assert kept.empty or class_sizes(kept, ["x", "c"]).min() >= k
    if model:
        key = row_keys(kept, ["x", "c"])
        assert all(diversity(Counter(v), "distinct") >= 2 for _, v in kept["s"].groupby(key.values))


def test_adult_with_hierarchies_suppresses_within_budget_and_lowers_ncp(con):
    duckdb_anon.load_adult(con, "adult")
    tables = duckdb_anon.load_adult_hierarchies(con)
    hierarchies = "{" + ", ".join(f"'{q}': '{t}'" for q, t in tables.items()) + "}"
    ncps = []
    for fraction in (0.0, 0.05):
        con.execute(f"CREATE OR REPLACE TABLE rel AS SELECT * FROM mondrian('adult', {ADULT_QI_SQL}, 10, "
                    f"hierarchies := {hierarchies}, max_suppression := {fraction})")
        release = con.execute("SELECT * FROM rel").df()
        hidden = (release[ADULT_QIS] == "*").all(axis=1)
        assert len(release) == 30162 and hidden.sum() <= math.floor(fraction * 30162)
        assert class_sizes(release[~hidden], ADULT_QIS).min() >= 10
        ncps.append(con.execute(f"SELECT ncp_percent FROM ncp('rel', 'adult', {ADULT_QI_SQL}, 'rid', "
                                f"hierarchies := {hierarchies})").fetchone()[0])
    assert hidden.sum() > 0 and ncps[1] < ncps[0]  # the suppressed rows count as one wide class, and still it pays

