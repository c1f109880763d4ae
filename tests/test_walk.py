"""The random walk: feasibility at every step, uniformity, determinism, and random_walk() in SQL."""
import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.walk import _violated_segments, walk
from tests.conftest import examples


@pytest.fixture
def ages(con):
    duckdb_anon.load_adult(con, "adult")
    con.execute("""CREATE TABLE people AS SELECT rid, CASE WHEN rid % 50 = 0 THEN NULL ELSE age END AS age, fnlwgt, sex
                   FROM adult WHERE rid < 3000""")
    con.execute("CREATE TABLE age_locs AS SELECT * FROM localities('people', 'age', sample := 0.5, seed := 3)")
    return con


def test_release_keeps_every_constraint_and_everything_else(ages):
    con = ages
    con.execute("CREATE TABLE pub AS SELECT * FROM random_walk('people', 'age', 'age_locs', iterations := 300, seed := 1)")
    assert con.execute("SELECT count(*) FROM check_localities('pub', 'age', 'age_locs')").fetchone()[0] == 0
    src = con.execute("SELECT * FROM people ORDER BY rid").df()
    pub = con.execute("SELECT * FROM pub").df()
    assert list(pub.columns) == list(src.columns)  # same columns, same order, nothing added
    assert list(pub["rid"]) == list(src["rid"])  # every row, in source order
    assert (pub["fnlwgt"].values == src["fnlwgt"].values).all() and (pub["sex"].values == src["sex"].values).all()
    assert (pub["age"].isna() == src["age"].isna()).all()  # NULLs stay NULL
    moved = pub["age"].notna()
    radius = 0.5 * src["age"].std(ddof=0)  # the default box: half a standard deviation around each value
    assert ((pub["age"][moved] - src["age"][moved]).abs() <= radius * (1 + 1e-9)).all()
    assert (pub["age"][moved] != src["age"][moved]).mean() > 0.9  # the values really moved


def _box_problem(segments=3, size=6, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.integers(0, 5, size=(segments, size)).astype(float), axis=1).ravel()
    starts = np.arange(segments) * size
    ci, cj, ck, le = [], [], [], []
    for s in range(segments):  # every strict triple, as localities() would imply
        base = s * size
        for i in range(size):
            for j in range(i + 1, size):
                for k in range(j + 1, size):
                    a, b = x[base + j] - x[base + i], x[base + k] - x[base + j]
                    if a != b:
                        ci.append(base + i), cj.append(base + j), ck.append(base + k), le.append(a < b)
    return x, starts, np.array(ci), np.array(cj), np.array(ck), np.array(le)


@pytest.mark.parametrize("method", ["hit_and_run", "forward"])
def test_every_step_is_feasible(method):
    x0, starts, ci, cj, ck, le = _box_problem()
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(x0))))
    nxt = np.nonzero(np.append(seg[:-1] == seg[1:], False))[0]
    sign = np.where(le, 1.0, -1.0)
    previous = x0
    for steps in range(1, 40):  # same seed: the walk after `steps` steps extends the one before
        x = walk(x0, starts, ci, cj, ck, le, -1.0, 6.0, steps, seed=5, method=method, check_every=10**9)
        assert not _violated_segments(x, seg, nxt, ci, cj, ck, sign, -1.0, 6.0, len(starts)).any()
        previous = x
    assert not np.array_equal(previous, x0)


def test_uniform_on_the_ordered_simplex(con):
    # 0 <= x1 <= ... <= x5 <= 1 (order and bounds only): order statistics of 5 uniforms
    con.execute("""CREATE TABLE t AS SELECT range AS id, range // 5 AS grp, 0.1 + 0.2 * (range % 5) AS v FROM range(10000)""")
    con.execute("CREATE TABLE none_kept AS SELECT * FROM localities('t', 'v', segment_size := 5, group_by := 'grp') WHERE false")
    out = con.execute("""SELECT id % 5 AS coord, stddev_pop(v) FROM random_walk('t', 'v', 'none_kept', iterations := 300, seed := 11,
                         lower := 0, upper := 1, segment_size := 5, group_by := 'grp', bounds := 'domain')
                         GROUP BY 1 ORDER BY 1""").fetchall()
    exact = [np.sqrt(k * (5 - k + 1) / (36 * 7)) for k in range(1, 6)]  # .141 .178 .189 .178 .141
    for (coord, sd), want in zip(out, exact):
        assert abs(sd - want) < 0.012, (coord, sd, want)


def test_uniform_on_a_boxed_ordered_simplex(con):
    # the same simplex cut by per-value boxes |x - d| <= radius * sd (d = 0.1, 0.3, ..., 0.9; sd over the
    # column): the walk's stationary law must be uniform on the intersection. Reference: order statistics
    # of 5 uniforms kept when they fall in every box (rejection sampling, independent of the walk).
    con.execute("""CREATE TABLE t AS SELECT range AS id, range // 5 AS grp, 0.1 + 0.2 * (range % 5) AS v FROM range(10000)""")
    con.execute("CREATE TABLE none_kept AS SELECT * FROM localities('t', 'v', segment_size := 5, group_by := 'grp') WHERE false")
    out = con.execute("""SELECT id % 5 AS coord, avg(v), stddev_pop(v), min(v), max(v)
                         FROM random_walk('t', 'v', 'none_kept', iterations := 300, seed := 11, lower := 0, upper := 1,
                                          segment_size := 5, group_by := 'grp', radius := 0.5) GROUP BY 1 ORDER BY 1""").fetchall()
    d = 0.1 + 0.2 * np.arange(5)
    half = 0.5 * d.std()
    sample = np.sort(np.random.default_rng(0).random((400000, 5)), axis=1)
    sample = sample[(np.abs(sample - d) <= half).all(axis=1)]
    assert len(sample) > 20000
    for (coord, mean, sd, lo, hi), ref in zip(out, sample.T):
        assert lo >= max(0, d[coord] - half) - 1e-12 and hi <= min(1, d[coord] + half) + 1e-12
        assert abs(mean - ref.mean()) < 0.006, (coord, mean, ref.mean())
        assert abs(sd - ref.std()) < 0.006, (coord, sd, ref.std())


def test_radius_boxes_stay_in_the_observed_range_unless_limits_are_declared(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, (18 + range % 40)::DOUBLE AS age FROM range(2000)")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'age')")
    kept = con.execute("SELECT min(age), max(age), count(*) FILTER (age < 18.5) FROM random_walk('t', 'age', 'locs')"
                       ).fetchall()[0]
    assert kept[0] >= 18 and kept[1] <= 57 and kept[2] > 0  # clipped to the observed min and max, still moving
    free = con.execute("SELECT min(age), max(age) FROM random_walk('t', 'age', 'locs', lower := 10, upper := 70)").fetchall()[0]
    assert 10 <= free[0] < 18 and 57 < free[1] <= 70  # a declared domain: the extremes move beyond the observed


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_default_bounds_never_leave_the_observed_range(module_con, data):
    """Counts with many zeros and a long tail (children, visits): the walk releases nothing below the
    column's minimum or above its maximum, recomputed on the source with pandas."""
    con = module_con
    n = data.draw(st.integers(3, 60), label="rows")
    values = data.draw(st.lists(st.one_of(st.none(), st.sampled_from([0, 0, 0, 1, 1, 2, 3, 5, 40])), min_size=n, max_size=n),
                       label="values")
    segment = data.draw(st.integers(3, 8), label="segment_size")
    frame = pd.DataFrame({"id": range(n), "v": pd.array(values, dtype="Int64")})
    con.execute("CREATE OR REPLACE TABLE counts AS SELECT * FROM frame")
    con.execute("CREATE OR REPLACE TABLE counts_locs AS SELECT * FROM localities('counts', 'v', segment_size := ?)", [segment])
    out = con.execute("SELECT id, v FROM random_walk('counts', 'v', 'counts_locs', iterations := 40, segment_size := ?) "
                      "ORDER BY id", [segment]).df()
    released = out["v"].dropna()
    assert (out["v"].isna() == frame["v"].isna()).all()
    if len(released):
        assert released.min() >= frame["v"].min() and released.max() <= frame["v"].max()


def test_same_seed_same_release_whatever_the_threads_and_new_seed_differs():
    releases = {}
    for threads, seed in [(1, 4), (2, 4), (2, 5)]:
        con = duckdb_anon.connect(threads=threads)
        con.execute("CREATE TABLE t AS SELECT range AS id, (hash(range) % 500)::DOUBLE AS v FROM range(2000)")
        con.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 50, sample := 0.3)")
        releases[(threads, seed)] = con.execute(
            f"SELECT id, v FROM random_walk('t', 'v', 'locs', iterations := 50, seed := {seed}, segment_size := 50)").fetchall()
        con.close()
    assert releases[(1, 4)] == releases[(2, 4)]
    assert releases[(2, 4)] != releases[(2, 5)]


def test_locality_table_of_another_column_is_refused(ages):
    ages.execute("CREATE TABLE w_locs AS SELECT * FROM localities('people', 'fnlwgt')")
    with pytest.raises(duckdb.Error, match="does not match"):
        ages.execute("SELECT * FROM random_walk('people', 'age', 'w_locs', iterations := 5)").fetchall()


def test_the_locality_table_carries_its_segment_size(con):
    """localities() writes segment_size into its table, and random_walk() cuts the same segments from it
    without being told (it had to be told, or it cut segments of 20 and refused the table); a size given that
    differs from the table's is still checked against the table."""
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 37) % 101 AS v FROM range(120)")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 8, sample := 0.5)")
    assert con.execute("SELECT DISTINCT segment_size FROM locs").fetchall() == [(8,)]
    told = con.execute("SELECT id, v FROM random_walk('t', 'v', 'locs', iterations := 20, segment_size := 8) "
                       "ORDER BY id").fetchall()
    read = con.execute("SELECT id, v FROM random_walk('t', 'v', 'locs', iterations := 20) ORDER BY id").fetchall()
    assert read == told and len(read) == 120
    with pytest.raises(duckdb.Error, match=r"random_walk\(\): argument 'locality_table' does not match .*segment_size 20"):
        con.execute("SELECT * FROM random_walk('t', 'v', 'locs', iterations := 5, segment_size := 20)").fetchall()


def test_distortion_of_numbers_and_of_a_typed_mondrian_release(con):
    con.execute("CREATE TABLE o AS SELECT range AS id, (range % 10 + 1)::DOUBLE AS a, 0.0 AS z FROM range(100)")
    con.execute("CREATE TABLE r AS SELECT id, a * 1.1 AS a, z + 0.5 AS z FROM o")
    rows = {c: d for c, d, n in con.execute("SELECT * FROM distortion('r', 'o', ['a', 'z'], 'id')").fetchall()}
    assert rows["a"] == pytest.approx(0.1)
    assert rows["z"] == pytest.approx(0.5)  # an all-zero column: each entry divided by the fallback guard, 1
    assert con.execute("SELECT dst FROM distortion('r', 'o', ['z'], 'id', guard := 0.25)").fetchone()[0] == pytest.approx(2.0)
    assert rows["*"] == pytest.approx((rows["a"] + rows["z"]) / 2)
    # a typed Mondrian release: the class mean stands for the value
    con.execute("CREATE TABLE m AS SELECT * FROM mondrian('o', ['a'], 10, output := 'typed')")
    pairs = con.execute("SELECT o.a AS t, m.a.mean AS ta FROM o JOIN m USING (id)").df()
    expected = ((pairs["ta"] - pairs["t"]).abs() / pairs["t"]).mean()
    assert con.execute("SELECT dst FROM distortion('m', 'o', ['a'], 'id') WHERE column_name = 'a'").fetchone()[0] \
        == pytest.approx(expected)


def test_preserve_patterns_walks_several_columns(con):
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE small AS SELECT * FROM adult WHERE rid < 2000")
    tables = duckdb_anon.preserve_patterns(con, "small", ["age", "education_num"], "small_pub",
                                           segment_size=50, sample=0.3, seed=2, iterations=100)
    for col, locs in tables.items():
        assert con.execute(f"SELECT count(*) FROM check_localities('small_pub', '{col}', '{locs}')").fetchone()[0] == 0
    src, pub = (con.execute(f"SELECT * FROM {t} ORDER BY rid").df() for t in ("small", "small_pub"))
    assert list(src.columns) == list(pub.columns) and len(src) == len(pub)
    assert (src["fnlwgt"].values == pub["fnlwgt"].values).all()
    assert (src["age"].values != pub["age"].values).mean() > 0.9
    assert (src["education_num"].values != pub["education_num"].values).mean() > 0.9
    leftovers = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '%__walking%'").fetchone()[0]
    assert leftovers == 0


def test_segment_bounds_keep_the_whole_column_in_order(ages):
    con = ages
    con.execute("CREATE TABLE pub AS SELECT * FROM random_walk('people', 'age', 'age_locs', iterations := 200, seed := 3, "
                "bounds := 'segment')")
    assert con.execute("SELECT count(*) FROM check_localities('pub', 'age', 'age_locs')").fetchone()[0] == 0
    pairs = con.execute("SELECT p.age AS walked, s.age AS original FROM people s JOIN pub p USING (rid) "
                        "WHERE s.age IS NOT NULL ORDER BY s.age, s.rid").df()
    # sorted by the original (ties in row order, as segments are), the walked values never decrease
    assert (np.diff(pairs["walked"].to_numpy()) >= 0).all()
    # segments of one repeated value are pinned (both midpoints are that value); the others move
    assert (pairs["walked"] != pairs["original"]).mean() > 0.3


def test_all_equal_values_spread_out_within_explicit_bounds(con):
    con.execute("CREATE TABLE flat AS SELECT range AS id, 5.0 AS v FROM range(40)")
    con.execute("CREATE TABLE flat_locs AS SELECT * FROM localities('flat', 'v', segment_size := 20, sample := 1)")
    assert con.execute("SELECT count(*) FROM flat_locs").fetchone()[0] == 0  # ties imply no locality
    out = con.execute("SELECT v FROM random_walk('flat', 'v', 'flat_locs', iterations := 50, lower := 0, upper := 10, "
                      "segment_size := 20, bounds := 'domain') ORDER BY id").df()["v"].to_numpy()
    assert ((out >= 0) & (out <= 10)).all() and len(np.unique(out)) == 40
    for segment in (out[:20], out[20:]):  # rows keep their order inside each segment (ties in row order)
        assert (np.diff(segment) >= 0).all()


def test_hostile_table_name_walks_and_drops_nothing(con):
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    name = '"x""; DROP TABLE victim; --"'
    con.execute(f"CREATE TABLE {name} AS SELECT range AS id, (range * 13 % 17)::DOUBLE AS v FROM range(40)")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities(?, 'v', segment_size := 20)", [name])
    rows = con.execute("SELECT count(*) FROM random_walk(?, 'v', 'locs', iterations := 20, segment_size := 20)", [name]).fetchone()[0]
    assert rows == 40 and con.execute("SELECT count(*) FROM victim").fetchone()[0] == 1


def test_linkage_audit_falls_as_the_walk_moves_values(con):
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE small AS SELECT rid, age, education_num, fnlwgt FROM adult WHERE rid < 1500")
    con.execute("CREATE TABLE known AS SELECT * FROM small WHERE rid % 10 = 0")  # the adversary's 150 people
    qis = "['age', 'fnlwgt', 'education_num']"
    # unchanged data: everyone links to their own record (distinct QI vectors), up to exact ties
    raw = con.execute(f"SELECT linked_to_own_record, mean_rank FROM linkage_nearest('small', 'known', {qis}, 'rid')").fetchone()
    assert raw[0] > 0.95 and raw[1] < 1.1
    duckdb_anon.preserve_patterns(con, "small", ["age", "fnlwgt", "education_num"], "small_pub",
                                  segment_size=50, sample=0.3, seed=1, iterations=200, bounds="domain")
    walked = con.execute(f"SELECT linked_to_own_record, mean_rank FROM linkage_nearest('small_pub', 'known', {qis}, 'rid')").fetchone()
    assert walked[0] < raw[0] / 2 and walked[1] > 10 * raw[1]


def test_a_lone_value_in_its_segment_is_released_not_lost(con):
    """One non-NULL value among NULLs has a box of width 0 (its column's deviation is 0) and no direction to
    move in; it is released as itself, not as NaN."""
    con.execute("CREATE TABLE lone AS SELECT range AS id, CASE WHEN range = 2 THEN 7 END AS v FROM range(3)")
    con.execute("CREATE TABLE lone_locs AS SELECT * FROM localities('lone', 'v', segment_size := 3)")
    out = con.execute("SELECT id, v FROM random_walk('lone', 'v', 'lone_locs', iterations := 10, segment_size := 3) "
                      "ORDER BY id").fetchall()
    assert out == [(0, None), (1, None), (2, 7.0)]
