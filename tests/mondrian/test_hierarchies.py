"""Mondrian with generalization hierarchies: Adult with its published hierarchies, random hierarchies
against the plain-Python reference, the SQL hierarchy builders, and bad hierarchies."""
import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, ADULT_QI_SQL, SHARED
from duckdb_anon.datasets import ADULT_HIERARCHY_QIS, ADULT_NUMERIC, ADULT_QIS, hierarchy_path
from tests.independent import class_sizes, row_keys
from tests.reference_mondrian import hierarchy_width, mondrian_reference

# 25 examples each: every one plans Mondrian's large query (about 0.4 s of CPU per call)
SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
HIERARCHIES_SQL = "{" + ", ".join(f"'{q}': 'h_{q}'" for q in ADULT_HIERARCHY_QIS) + "}"


def read_hierarchy(path):
    """leaf -> path from the leaf to the root, parsed here in Python (not by our SQL loader)."""
    lines = [line for line in path.read_text().splitlines() if line]
    return {line.split(";")[0]: line.split(";") for line in lines}


@pytest.fixture(scope="module")
def adult_release():
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    duckdb_anon.load_adult_hierarchies(con)
    con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('adult', {ADULT_QI_SQL}, 10, hierarchies := {HIERARCHIES_SQL})")
    release = con.execute("SELECT * FROM rel ORDER BY rid").df()
    source = con.execute("SELECT * FROM adult ORDER BY rid").df()
    ncp = con.execute(f"SELECT ncp_percent FROM ncp('rel', 'adult', {ADULT_QI_SQL}, 'rid', hierarchies := {HIERARCHIES_SQL})").fetchone()[0]
    yield release, source, ncp
    con.close()


def test_adult_release_is_k_anonymous_and_renders_hierarchy_nodes(adult_release):
    release, source, _ = adult_release
    assert len(release) == len(source) == 30162 and release["rid"].tolist() == source["rid"].tolist()
    assert class_sizes(release, ADULT_QIS).min() >= 10
    for qi in ADULT_HIERARCHY_QIS:
        hierarchy = read_hierarchy(hierarchy_path(qi))
        nodes = {name for path in hierarchy.values() for name in path}
        assert set(release[qi]) <= nodes, qi
        # each row's original value lies under the node its class shows
        assert all(label in hierarchy[value] for label, value in zip(release[qi], source[qi])), qi
    # numeric QIs still read as ranges covering the original value
    for qi in ADULT_NUMERIC:
        bounds = release[qi].astype(str).str.extract(r"^(\d+)(?:-(\d+))?$").astype(float)
        bounds[1] = bounds[1].fillna(bounds[0])
        assert ((bounds[0] <= source[qi]) & (source[qi] <= bounds[1])).all()


def test_adult_ncp_recomputed_from_the_output(adult_release):
    release, source, ncp = adult_release
    key = row_keys(release, ADULT_QIS)
    total = 0.0
    for qi in ADULT_QIS:
        groups = source[qi].groupby(key.values)
        if qi in ADULT_NUMERIC:
            span = source[qi].max() - source[qi].min()
            widths = (groups.max() - groups.min()) / span
        else:
            hierarchy = read_hierarchy(hierarchy_path(qi))
            widths = groups.apply(lambda values: hierarchy_width(hierarchy, list(values)))
        total += (widths * groups.size()).sum()
    expected = 100 * total / (len(ADULT_QIS) * len(source))
    assert ncp == pytest.approx(expected)
    # a class shows the lowest node covering its values, so its width is exactly the shown node's
    assert 20 < ncp < 35


def test_shipped_hierarchies_match_the_shared_ones():
    if not (SHARED / "datasets" / "hierarchies").exists():
        pytest.skip("../shared is not beside this checkout")
    for qi in ADULT_HIERARCHY_QIS:
        assert hierarchy_path(qi).read_bytes() == (SHARED / "datasets" / "hierarchies" / f"adult_{qi}.txt").read_bytes()


@st.composite
def hierarchical_tables(draw):
    """A numeric QI with ties and a categorical QI under a random two- or three-level hierarchy."""
    leaves = [f"v{i}" for i in range(draw(st.integers(1, 7)))]
    groups = draw(st.lists(st.integers(0, 2), min_size=len(leaves), max_size=len(leaves)))
    deep = draw(st.booleans())
    hierarchy = {}
    for leaf, g in zip(leaves, groups):
        path = [leaf, f"g{g}"] + (["top"] if deep and g < 2 else []) + ["*"]
        if g == 2 and draw(st.booleans()):
            path = [leaf, "*"]  # ragged: a leaf right under the root
        hierarchy[leaf] = path
    n = draw(st.integers(1, 40))
    rows = draw(st.lists(st.tuples(st.integers(0, draw(st.integers(0, 6))), st.sampled_from(leaves)), min_size=n, max_size=n))
    k = draw(st.integers(1, n))
    mode = draw(st.sampled_from(["strict", "relaxed"]))
    return pd.DataFrame(rows, columns=["x", "c"]).assign(id=range(n)), hierarchy, k, mode


def _load(con, df, hierarchy):
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c FROM df_view")
    con.unregister("df_view")
    con.execute("CREATE OR REPLACE TABLE h (leaf VARCHAR, path VARCHAR[])")
    con.executemany("INSERT INTO h VALUES (?, ?)", [[leaf, path] for leaf, path in hierarchy.items()])


@SETTINGS
@given(hierarchical_tables(), st.permutations(["x", "c"]))
def test_partition_equals_the_reference_implementation(con, case, order):
    df, hierarchy, k, mode = case
    _load(con, df, hierarchy)
    qis = "[" + ", ".join(f"'{q}'" for q in order) + "]"
    classes = con.execute(f"SELECT row_id, class_id FROM mondrian_classes('t', {qis}, {k}, '{mode}', hierarchies := {{'c': 'h'}})").df()
    keys = list(zip(*(df[q].tolist() for q in order)))
    expected = sorted(tuple(sorted(c)) for c in mondrian_reference(keys, k, mode, hierarchies={order.index("c"): hierarchy}))
    got = sorted(tuple(sorted(g)) for g in (classes["row_id"] - 1).groupby(classes["class_id"]).apply(list))
    assert got == expected
    release = con.execute(f"SELECT * FROM mondrian('t', {qis}, {k}, '{mode}', hierarchies := {{'c': 'h'}}) ORDER BY id").df()
    assert class_sizes(release, ["x", "c"]).min() >= k
    assert all(label in hierarchy[value] for label, value in zip(release["c"], df["c"]))


def test_interval_and_date_hierarchies(con):
    con.execute("""CREATE TABLE p AS SELECT range AS id, (17 + range % 60)::INTEGER AS age,
                   DATE '2019-11-20' + (range * 7 % 900)::INTEGER AS seen, ['a','b','c'][range % 3 + 1] AS kind FROM range(500)""")
    con.execute("CREATE TABLE h_age AS SELECT * FROM hierarchy_intervals('p', 'age', [5, 10, 20])")
    con.execute("CREATE TABLE h_seen AS SELECT * FROM hierarchy_dates('p', 'seen')")
    ages = dict(con.execute("SELECT leaf, path FROM h_age").fetchall())
    assert ages["23"] == ["23", "20-24", "20-29", "20-39", "*"]
    assert dict(con.execute("SELECT leaf, path FROM h_seen").fetchall())["2020-02-05"] == ["2020-02-05", "2020-02", "2020", "*"]
    release = con.execute("""SELECT r.*, p.age AS age0, p.seen AS seen0 FROM mondrian('p', ['age', 'seen', 'kind'], 25,
                              hierarchies := {'age': 'h_age', 'seen': 'h_seen'}) r JOIN p USING (id)""").df()
    assert class_sizes(release, ["age", "seen", "kind"]).min() >= 25
    seen = dict(con.execute("SELECT leaf, path FROM h_seen").fetchall())
    assert all(a in ages[str(a0)] for a, a0 in zip(release["age"], release["age0"]))
    assert all(s in seen[str(s0.date())] for s, s0 in zip(release["seen"], release["seen0"]))
    with pytest.raises(duckdb.Error, match=r"hierarchy_intervals\(\): argument 'widths'"):
        con.execute("SELECT * FROM hierarchy_intervals('p', 'age', [5, 12])").fetchall()


@pytest.fixture(scope="module")
def two_leaves(module_con):
    """A table t(x, c) with categories 'a' and 'b', and a good hierarchy h of them, for the bad-hierarchy rows
    (each writes its own hierarchy table)."""
    module_con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) v(x, c)")
    module_con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('a', ['a', '*']), ('b', ['b', '*'])) v(leaf, path)")
    return module_con


@pytest.mark.parametrize("rows, message", [
    ([("a", ["a", "x", "*"]), ("b", ["b", "y", "root2"])], "several roots"),
    ([("a", ["a", "x", "a", "*"]), ("b", ["b", "*"])], "repeats a name"),
    ([("a", ["a", "x", "*"]), ("b", ["b", "x", "y", "*"])], "several parents"),
    ([("a", ["a", "*"]), ("b", ["b", "a", "*"])], "both as a leaf and as an inner node"),
])
def test_bad_hierarchies_are_rejected(two_leaves, rows, message):
    con = two_leaves
    con.execute("CREATE OR REPLACE TABLE h_bad (leaf VARCHAR, path VARCHAR[])")
    con.executemany("INSERT INTO h_bad VALUES (?, ?)", [list(r) for r in rows])
    with pytest.raises(duckdb.Error, match=r"mondrian\(\): argument 'hierarchies'.*" + message):
        con.execute("SELECT * FROM mondrian('t', ['x', 'c'], 1, hierarchies := {'c': 'h_bad'})").fetchall()


def test_value_missing_from_the_hierarchy_is_named(con):
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'zebra')) v(x, c)")
    con.execute("CREATE TABLE h AS SELECT 'a' AS leaf, ['a', '*'] AS path")
    with pytest.raises(duckdb.Error, match=r"mondrian\(\): argument 'hierarchies'.*no leaf 'zebra'"):
        con.execute("SELECT * FROM mondrian('t', ['x', 'c'], 1, hierarchies := {'c': 'h'})").fetchall()
    with pytest.raises(duckdb.Error, match=r"mondrian\(\): argument 'hierarchies' names a column that is not among the QIs: y"):
        con.execute("SELECT * FROM mondrian('t', ['x', 'c'], 1, hierarchies := {'y': 'h'})").fetchall()
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 2  # the source is untouched


def test_inherited_split_rule_reproduces_the_public_k_checked_figure(con):
    """The public hierarchy-based code, with the k-check on every child, reports 28.83 % at k = 10; it picks
    the split dimension from inherited bounds, which split_rule := 'inherited' reproduces."""
    duckdb_anon.load_adult(con, "adult")
    duckdb_anon.load_adult_hierarchies(con)
    con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('adult', {ADULT_QI_SQL}, 10, hierarchies := {HIERARCHIES_SQL}, "
                "split_rule := 'inherited')")
    release = con.execute("SELECT * FROM rel ORDER BY rid").df()
    source = con.execute("SELECT * FROM adult ORDER BY rid").df()
    assert class_sizes(release, ADULT_QIS).min() >= 10
    key = row_keys(release, ADULT_QIS)
    total = 0.0
    for qi in ADULT_QIS:
        groups = source[qi].groupby(key.values)
        if qi in ADULT_NUMERIC:
            widths = (groups.max() - groups.min()) / (source[qi].max() - source[qi].min())
        else:
            hierarchy = read_hierarchy(hierarchy_path(qi))
            widths = groups.apply(lambda values: hierarchy_width(hierarchy, list(values)))
        total += (widths * groups.size()).sum()
    assert round(100 * total / (len(ADULT_QIS) * len(source)), 2) == 28.83


@pytest.mark.parametrize("table, words", [
    ("SELECT * FROM h LIMIT 0", ["'hierarchies'", "'c'", "no rows"]),
    ("SELECT leaf FROM h", ["'hierarchies'", "'path'"]),
    ("SELECT leaf, array_to_string(path, ';') AS path FROM h", ["'hierarchies'", "path", "VARCHAR"]),
])
@pytest.mark.parametrize("call", [
    "mondrian('t', ['x', 'c'], 1, hierarchies := {'c': 'bad'})",
    "ncp('t', 't', ['x', 'c'], 'x', hierarchies := {'c': 'bad'})",
    "linkage_classes('t', 't', ['c'], 'x', hierarchies := {'c': 'bad'})",
])
def test_empty_or_misshapen_hierarchy_tables_are_errors(two_leaves, table, words, call):
    """An empty hierarchy table is an error naming `hierarchies` (it used to fall back to category sets)."""
    con = two_leaves
    con.execute(f"CREATE OR REPLACE TABLE bad AS {table}")
    fn = call.split("(")[0]
    with pytest.raises(duckdb.Error) as err:
        con.execute(f"SELECT * FROM {call}").fetchall()
    assert f"{fn}(): argument 'hierarchies'" in str(err.value)
    for word in words:
        assert word in str(err.value)


def test_hierarchy_files_missing_or_empty_are_errors(con, tmp_path):
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "h.txt").write_text("a;x;*\r\nb;x;*\n")
    assert con.execute(f"SELECT * FROM hierarchy_from_text('{tmp_path / 'h.txt'}') ORDER BY leaf").fetchall() == [
        ("a", ["a", "x", "*"]), ("b", ["b", "x", "*"])]
    for path in (tmp_path / "missing.txt", tmp_path / "empty.txt"):
        with pytest.raises(duckdb.Error, match=r"hierarchy_from_text\(\): argument 'file_path'"):
            con.execute(f"SELECT * FROM hierarchy_from_text('{path}')").fetchall()
