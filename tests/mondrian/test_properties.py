"""Property tests over small random tables with ties, NULLs, constant columns, one row, k = 1 and k = n."""
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reference_mondrian import mondrian_reference
from tests.conftest import examples

# 25 examples each: every one plans Mondrian's large query (about 0.4 s of CPU per call)
SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def tables(draw, nulls=True):
    n = draw(st.integers(1, 40))
    small = st.integers(0, draw(st.integers(0, 6)))  # few distinct values: many ties; 0 -> a constant
    maybe = (lambda s: st.one_of(st.none(), s)) if nulls else (lambda s: s)
    rows = draw(st.lists(st.tuples(maybe(small), maybe(st.sampled_from("abcde")), maybe(small.map(float))),
                         min_size=n, max_size=n))
    k = draw(st.integers(1, n))
    mode = draw(st.sampled_from(["strict", "relaxed"]))
    return pd.DataFrame(rows, columns=["x", "c", "y"]).assign(id=range(n)), k, mode


def _load(con, df):
    con.register("df_view", df)
    con.execute('CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c, y::DOUBLE AS y FROM df_view')
    con.unregister("df_view")


@SETTINGS
@given(tables())
def test_every_class_has_k_rows_and_contains_its_values(con, case):
    df, k, mode = case
    _load(con, df)
    release = con.execute(f"SELECT * FROM mondrian('t', ['x', 'c', 'y'], {k}, '{mode}') ORDER BY id").df()
    typed = con.execute(f"SELECT * FROM mondrian('t', ['x', 'c', 'y'], {k}, '{mode}', output := 'typed') ORDER BY id").df()
    assert sorted(release["id"]) == list(range(len(df)))  # no row lost or duplicated
    key = release[["x", "c", "y"]].apply(lambda r: "|".join(map(str, r)), axis=1)
    assert key.value_counts().min() >= k
    for i, row in df.iterrows():
        for col in ["x", "y"]:
            bounds = typed.loc[i, col]
            if pd.isna(row[col]):
                continue
            assert bounds["lo"] <= row[col] <= bounds["hi"]
        label = release.loc[i, "c"]
        shown = None if pd.isna(label) else (label[1:-1].split(",") if label.startswith("{") else [label])
        original = "NULL" if pd.isna(row["c"]) else row["c"]
        assert (shown is None and original == "NULL") or original in shown


@SETTINGS
@given(tables(nulls=False), st.permutations(["x", "c", "y"]))
def test_partition_equals_the_reference_implementation(con, case, order):
    df, k, mode = case
    _load(con, df)
    qis = "[" + ", ".join(f"'{q}'" for q in order) + "]"  # any list order: ties go to the earliest listed QI
    classes = con.execute(f"SELECT row_id, class_id FROM mondrian_classes('t', {qis}, {k}, '{mode}')").df()
    codes = {v: i for i, v in enumerate(pd.unique(df["c"]))}
    columns = {"x": df["x"].astype(float), "c": df["c"].map(codes).astype(float), "y": df["y"].astype(float)}
    keys = list(zip(*(columns[q] for q in order)))
    expected = sorted(tuple(sorted(c)) for c in mondrian_reference(keys, k, mode))
    got = sorted(tuple(sorted(g)) for g in (classes["row_id"] - 1).groupby(classes["class_id"]).apply(list))
    assert got == expected


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_same_release_whatever_the_thread_count(mode):
    import duckdb_anon
    releases = []
    for threads in (1, 2):
        con = duckdb_anon.connect(threads=threads)
        con.execute("""CREATE TABLE t AS SELECT range AS id, (hash(range) % 97)::INT AS a, (hash(range, 1) % 13)::INT AS b,
                       ['p','q','r','s'][(hash(range, 2) % 4)::INT + 1] AS c FROM range(50000)""")
        releases.append(con.execute(f"SELECT * FROM mondrian('t', ['a','b','c'], 7, '{mode}') ORDER BY id").fetchall())
        con.close()
    assert releases[0] == releases[1]


def test_temporal_and_decimal_qis(con):
    con.execute("""CREATE TABLE t AS SELECT range AS id, DATE '2020-01-01' + (range % 50)::INT AS d,
                   TIMESTAMP '2020-01-01' + to_minutes(range % 7) AS ts, (range % 11)::DECIMAL(8,2) / 4 AS dec,
                   (range % 3 = 0) AS flag FROM range(200)""")
    release = con.execute("SELECT * FROM mondrian('t', ['d', 'ts', 'dec', 'flag'], 10)").df()
    key = release[["d", "ts", "dec", "flag"]].astype(str).agg("|".join, axis=1)
    assert key.value_counts().min() >= 10
    assert release["d"].str.contains("/").any()  # dates render as ISO intervals lo/hi
    typed = con.execute("SELECT m.d.lo AS lo, m.d.hi AS hi, s.d AS d FROM mondrian('t', ['d','ts','dec','flag'], 10, output := 'typed') m "
                        "JOIN t s USING (id)").df()
    assert ((typed["lo"] <= typed["d"]) & (typed["d"] <= typed["hi"])).all()


@pytest.mark.parametrize("order, expected_lo", [("value", "low"), ("appearance", "high")])
def test_enum_qi_follows_the_chosen_category_order(con, order, expected_lo):
    # 'high' appears first in the table, but the ENUM declares low < mid < high
    con.execute("CREATE TYPE level AS ENUM ('low', 'mid', 'high')")
    con.execute("""CREATE TABLE t AS SELECT range AS id, (['high', 'low', 'mid'][range % 3 + 1])::level AS lvl,
                   range % 5 AS x FROM range(60)""")
    typed = con.execute(f"SELECT * FROM mondrian('t', ['lvl', 'x'], 60, output := 'typed', "
                        f"categorical_order := '{order}')").df()
    assert set(typed["lvl"].map(lambda b: b["lo"])) == {expected_lo}  # one class: its lowest category
    text = con.execute(f"SELECT DISTINCT lvl FROM mondrian('t', ['lvl', 'x'], 60, categorical_order := '{order}')").fetchall()
    expected = "{low,mid,high}" if order == "value" else "{high,low,mid}"
    assert text == [(expected,)]


@st.composite
def distinct_tables(draw):
    """Nearly every row its own QI vector (the high-cardinality shape), plus a two-valued QI whose ties make
    the widest cut fail, and a few repeated rows."""
    n = draw(st.integers(2, 60))
    rows = draw(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 1), st.floats(-1e6, 1e6, allow_nan=False)),
                         min_size=n, max_size=n))
    repeats = draw(st.lists(st.integers(0, n - 1), max_size=n // 12))
    rows += [rows[i] for i in repeats]
    return (pd.DataFrame(rows, columns=["x", "s", "y"]).assign(id=range(len(rows))), draw(st.integers(1, 12)),
            draw(st.sampled_from(["strict", "relaxed"])))


@SETTINGS
@given(distinct_tables(), st.permutations(["x", "s", "y"]))
def test_high_cardinality_partition_equals_the_reference_implementation(con, case, order):
    df, k, mode = case
    k = min(k, len(df))
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, s::INTEGER AS s, y::DOUBLE AS y FROM df_view")
    con.unregister("df_view")
    qis = "[" + ", ".join(f"'{q}'" for q in order) + "]"
    classes = con.execute(f"SELECT row_id, class_id FROM mondrian_classes('t', {qis}, {k}, '{mode}')").df()
    keys = list(zip(*(df[q].astype(float) for q in order)))
    expected = sorted(tuple(sorted(c)) for c in mondrian_reference(keys, k, mode))
    got = sorted(tuple(sorted(g)) for g in (classes["row_id"] - 1).groupby(classes["class_id"]).apply(list))
    assert got == expected
