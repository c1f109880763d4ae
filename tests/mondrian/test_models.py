"""l-diversity and t-closeness enforced by Mondrian's partitioning, checked from the output alone; bad model
and suppression arguments."""
import math
from collections import Counter

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, qi_sql
from tests.independent import class_sizes, row_keys
from tests.reference_mondrian import diversity, emd, mondrian_reference

# 25 examples each: every one plans Mondrian's large query (about 0.4 s of CPU per call)
SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
QIS = ["age", "workclass", "education_num", "marital_status", "race", "sex", "native_country"]


def class_groups(release, qis, sensitive):
    key = row_keys(release, qis)
    return [Counter(values) for _, values in release[sensitive].groupby(key.values)]


@pytest.mark.parametrize("sensitive, args, check", [
    ("occupation", "l := 4", lambda c, table: diversity(c, "distinct") >= 4),
    ("occupation", "l := 3, l_kind := 'entropy'", lambda c, table: diversity(c, "entropy") >= 3 - 1e-9),
    ("occupation", "l := 3, l_kind := 'recursive', c := 3", lambda c, table: diversity(c, "recursive", 3) >= 3),
    ("occupation", "t := 0.2", lambda c, table: emd(c, table, sorted(table), False) <= 0.2 + 1e-12),
    ("hours_per_week", "t := 0.15", lambda c, table: emd(c, table, sorted(table), True) <= 0.15 + 1e-12),
])
def test_adult_release_satisfies_the_model(adult_con, sensitive, args, check):
    release = adult_con.execute(
        f"SELECT * FROM mondrian('adult', {qi_sql(QIS)}, 10, sensitive := '{sensitive}', {args})").df()
    source_rows = adult_con.execute("SELECT count(*) FROM adult").fetchone()[0]
    assert len(release) == source_rows and release["rid"].is_unique
    assert class_sizes(release, QIS).min() >= 10
    table = Counter(adult_con.execute(f"SELECT {sensitive} FROM adult").df()[sensitive])
    groups = class_groups(release, QIS, sensitive)
    assert len(groups) > 50  # the model still lets Mondrian cut
    assert all(check(group, table) for group in groups)


@st.composite
def sensitive_tables(draw):
    n = draw(st.integers(2, 40))
    rows = draw(st.lists(st.tuples(st.integers(0, draw(st.integers(0, 6))), st.integers(0, 3),
                                   st.sampled_from("pqrs"[:draw(st.integers(1, 4))])), min_size=n, max_size=n))
    df = pd.DataFrame(rows, columns=["x", "y", "s"]).assign(id=range(n))
    k = draw(st.integers(1, max(1, n // 3)))
    distinct = df["s"].nunique()
    model = draw(st.sampled_from([
        {"l": draw(st.integers(1, distinct)), "l_kind": "distinct"},
        {"l": draw(st.floats(1, distinct)), "l_kind": "entropy"},
        {"l": draw(st.integers(1, distinct)), "l_kind": "recursive", "c": draw(st.sampled_from([1, 2, 3]))},
        {"t": draw(st.sampled_from([0.1, 0.3, 0.6, 1.0]))}]))
    return df, k, model


def _model_args(model):
    parts = []
    for name in ("l", "c", "t"):
        if model.get(name) is not None:
            parts.append(f"{name} := {model[name]!r}")
    if "l_kind" in model:
        parts.append(f"l_kind := '{model['l_kind']}'")
    return ", ".join(parts)


@SETTINGS
@given(sensitive_tables())
def test_partition_equals_the_reference_implementation(con, case):
    df, k, model = case
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, y::INTEGER AS y, s::VARCHAR AS s FROM df_view")
    con.unregister("df_view")
    table = Counter(df["s"])
    whole = dict(model, c=model.get("c", 2))
    holds_at_root = ((whole.get("l") is None or diversity(table, whole.get("l_kind", "distinct"), whole["c"]) >= whole["l"] - 1e-9))
    sql = f"SELECT row_id, class_id FROM mondrian_classes('t', ['x', 'y'], {k}, sensitive := 's', {_model_args(model)})"
    if not holds_at_root:
        with pytest.raises(duckdb.Error, match=r"mondrian_classes\(\): argument 'l' cannot be met"):
            con.execute(sql).fetchall()
        return
    classes = con.execute(sql).df()
    keys = list(zip(df["x"].astype(float), df["y"].astype(float)))
    expected = mondrian_reference(keys, k, sensitive=df["s"].tolist(), model=whole)
    got = (classes["row_id"] - 1).groupby(classes["class_id"]).apply(list)
    assert sorted(tuple(sorted(g)) for g in got) == sorted(tuple(c) for c in expected)
    for members in got:  # and the model holds in every class, checked directly
        counts = Counter(df["s"].iloc[members])
        if whole.get("l") is not None:
            assert diversity(counts, whole["l_kind"], whole["c"]) >= whole["l"] - 1e-9
        if whole.get("t") is not None:
            assert emd(counts, table, sorted(table), False) <= whole["t"] + 1e-12


@pytest.mark.parametrize("args, message", [
    ("sensitive := 'age', l := 2", r"argument 'sensitive' names 'age', which is also a QI"),
    ("sensitive := 'sex', l := 3", r"argument 'l' cannot be met: the whole table is only 2 \(distinct\)-diverse in 'sex'"),
    ("sensitive := 'occupation', t := 0", r"argument 't' must lie in \(0, 1\], got 0"),
    ("sensitive := 'occupation', t := 1.5", r"argument 't' must lie in \(0, 1\], got 1.5"),
    ("l := 2", r"argument 'l' needs a sensitive column"),
    ("sensitive := 'occupation'", r"argument 'sensitive' is given without l or t"),
    ("sensitive := 'occupation', l := 2, mode := 'relaxed'", r"argument 'mode': l-diversity and t-closeness need mode 'strict'"),
    ("sensitive := 'occupation', l := 2, l_kind := 'shannon'", r"argument 'l_kind' must be 'distinct', 'entropy' or 'recursive'"),
    ("sensitive := 'occupation', l := 2, l_kind := 'recursive', c := 0", r"argument 'c' must be a positive number"),
    ("sensitive := 'occupation', l := 'four'", r"argument 'l' must be a number"),
    ("max_suppression := 1", r"argument 'max_suppression' must lie in \[0, 1\), got 1"),
    ("max_suppression := -0.1", r"argument 'max_suppression' must lie in \[0, 1\)"),
    ("max_suppression := 0.1, mode := 'relaxed'", r"argument 'max_suppression' needs mode 'strict'"),
])
def test_bad_model_arguments(adult_con, args, message):
    with pytest.raises(duckdb.Error, match=r"mondrian\(\): " + message):
        adult_con.execute(f"SELECT * FROM mondrian('adult', ['age', 'education_num'], 5, {args})").fetchall()


def _pandas_models(df, c):
    """Per class (x, y) of `df`: distinct, entropy and recursive (c, l) l and the ordered and equal-distance
    EMDs of s (NULL one more value, last in the order), computed with pandas from the definitions."""
    s = df["s"].astype("Int64")
    order = sorted(s.dropna().unique().tolist()) + ([None] if s.isna().any() else [])
    code = s.map({v: i for i, v in enumerate(order) if v is not None}).fillna(len(order) - 1).astype(int)
    table = code.value_counts().reindex(range(len(order)), fill_value=0) / len(df)
    out = {}
    for key, part in code.groupby([df["x"], df["y"]]):
        counts = part.value_counts()
        p = counts.reindex(range(len(order)), fill_value=0) / len(part)
        shares = counts / len(part)
        desc = sorted(counts.tolist(), reverse=True)
        running = (p - table).cumsum().abs().sum()
        out[key] = {"distinct_l": len(counts), "entropy_l": math.exp(-(shares * shares.map(math.log)).sum()),
                    "recursive_l": max((l for l in range(1, len(desc) + 1) if desc[0] < c * sum(desc[l - 1:])), default=0),
                    "ordered": running / (len(order) - 1) if len(order) > 1 else 0.0,
                    "categorical": 0.5 * (p - table).abs().sum()}
    return out


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.one_of(st.none(), st.integers(0, 5))),
                     min_size=1, max_size=40),
       c=st.sampled_from([1, 2, 3]))
def test_models_of_each_class_equal_pandas(con, rows, c):
    """The models' macros (sql/07_models.sql: aggregates over a class's rows, one per sensitive value) as
    class_profile reads them, against pandas: ties, NULL sensitive values, classes of one value."""
    df = pd.DataFrame(rows, columns=["x", "y", "s"])
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT x::INTEGER AS x, y::INTEGER AS y, s::INTEGER AS s, "
                "'v' || s::VARCHAR AS v FROM df_view")  # v: the same values as categories (same order: one digit)
    con.unregister("df_view")
    expected = _pandas_models(df, c)
    for column, emd_kind in (("s", "ordered"), ("v", "categorical")):
        got = con.execute(f"SELECT x, y, distinct_l, entropy_l, recursive_l, t FROM class_profile('t', ['x', 'y'], "
                          f"sensitive := '{column}', c := {c})").fetchall()
        assert len(got) == len(expected)
        for x, y, distinct, entropy, recursive, t in got:
            want = expected[(x, y)]
            assert (distinct, recursive) == (want["distinct_l"], want["recursive_l"])
            assert entropy == pytest.approx(want["entropy_l"], abs=1e-9)
            assert t == pytest.approx(want[emd_kind], abs=1e-12)
