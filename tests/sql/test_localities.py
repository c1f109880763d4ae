"""Locality extraction (CIKM 2011, Algorithm 1) and the release check, on real DuckDB."""
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import examples


def _load(con, values, name="d"):
    con.execute(f"CREATE OR REPLACE TABLE {name} (v DOUBLE)")
    if values:
        con.executemany(f"INSERT INTO {name} VALUES (?)", [[v] for v in values])


def test_worked_example_of_the_issue(con):
    _load(con, [0, 4, 6, 7, 9, 12])
    found = con.execute("SELECT relation, k, d_k FROM localities('d', 'v', segment_size := 6, sample := 1) "
                        "WHERE i = 2 AND j = 3 ORDER BY relation").fetchall()
    assert found == [("<=", 5, 9.0), (">=", 4, 7.0)]
    # beta = 12 for the pair (values 0, 6) equals a value: strict neighbours, so only k- = 5 (value 9)
    assert con.execute("SELECT relation, k FROM localities('d', 'v', segment_size := 6, sample := 1) WHERE i = 1 AND j = 3").fetchall() \
        == [(">=", 5)]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 12), min_size=3, max_size=9))
def test_every_strict_triple_is_implied_by_the_extracted_ones(con, values):
    _load(con, values)
    rows = con.execute("SELECT i, j, k, relation FROM localities('d', 'v', segment_size := 100, sample := 1)").fetchall()
    d = sorted(values)
    le = {(i, j): k for i, j, k, r in rows if r == "<="}
    ge = {(i, j): k for i, j, k, r in rows if r == ">="}
    for i, j, k in itertools.combinations(range(1, len(d) + 1), 3):
        left, right = d[j - 1] - d[i - 1], d[k - 1] - d[j - 1]
        if left < right:  # needs x_j - x_i <= x_k' - x_j with k' <= k, plus order
            assert (i, j) in le and le[(i, j)] <= k, (i, j, k, d)
        elif left > right:
            assert (i, j) in ge and ge[(i, j)] >= k, (i, j, k, d)
    for i, j, k, r in rows:  # and every extracted constraint is true in the data, strictly
        left, right = d[j - 1] - d[i - 1], d[k - 1] - d[j - 1]
        assert i < j < k and (left < right if r == "<=" else left > right)


def test_segments_groups_nulls_and_sampling(con):
    con.execute("""CREATE TABLE t AS SELECT range AS id, CASE WHEN range % 10 = 0 THEN NULL ELSE (hash(range) % 1000)::INT END AS v,
                   range % 2 AS g FROM range(500)""")
    segs = con.execute("SELECT count(DISTINCT segment), max(k) FROM localities('t', 'v', segment_size := 50, sample := 1)").fetchone()
    assert segs == (9, 50)  # 450 non-NULL values -> 9 segments of 50
    grouped = con.execute("""SELECT count(*) FROM localities('t', 'v', segment_size := 50, sample := 1, group_by := 'g') l
                             JOIN t a ON a.id + 1 = l.i_row JOIN t b ON b.id + 1 = l.k_row WHERE a.g <> b.g""").fetchone()[0]
    assert grouped == 0  # segments never mix groups
    full = con.execute("SELECT count(*) FROM localities('t', 'v', segment_size := 50, sample := 1)").fetchone()[0]
    kept = con.execute("SELECT count(*) FROM localities('t', 'v', segment_size := 50, sample := 0.2, seed := 7)").fetchone()[0]
    again = con.execute("SELECT count(*) FROM localities('t', 'v', segment_size := 50, sample := 0.2, seed := 7)").fetchone()[0]
    other = con.execute("""SELECT count(*) FROM (SELECT * FROM localities('t', 'v', segment_size := 50, sample := 0.2, seed := 7)
                           EXCEPT SELECT * FROM localities('t', 'v', segment_size := 50, sample := 0.2, seed := 8))""").fetchone()[0]
    assert kept == again and abs(kept / full - 0.2) < 0.02 and other > 0


def test_check_localities_finds_violations(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * range % 97)::DOUBLE AS v FROM range(300)")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 30, sample := 1)")
    assert con.execute("SELECT count(*) FROM check_localities('t', 'v', 'locs')").fetchone()[0] == 0
    # swap the two largest values of segment 1: order and localities break
    con.execute("CREATE TABLE bad AS SELECT * FROM t ORDER BY id")
    top = con.execute("SELECT i_row, j_row FROM locs WHERE segment = 1 ORDER BY j DESC, i DESC LIMIT 1").fetchone()
    con.execute("UPDATE bad SET v = v + 1000 WHERE id = ?", [top[0] - 1])
    broken = con.execute("SELECT count(*), count(*) FILTER (relation = 'order') FROM check_localities('bad', 'v', 'locs')").fetchone()
    assert broken[0] > 0 and broken[1] > 0


def test_defaults_are_segments_of_20_and_a_tenth_of_the_constraints(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, (hash(range) % 100000)::DOUBLE AS v FROM range(2000)")
    full = con.execute("SELECT count(*), max(k) FROM localities('t', 'v', segment_size := 20, sample := 1)").fetchone()
    kept = con.execute("SELECT count(*), max(k), count(DISTINCT segment) FROM localities('t', 'v')").fetchone()
    assert full[1] == kept[1] == 20 and kept[2] == 100
    assert abs(kept[0] / full[0] - 0.1) < 0.02


def test_hostile_table_name(con):
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    con.execute('CREATE TABLE "x""; DROP TABLE victim; --" AS SELECT range AS v FROM range(10)')
    n = con.execute("SELECT count(*) FROM localities(?, 'v', segment_size := 5, sample := 1)", ['"x""; DROP TABLE victim; --"']).fetchone()[0]
    assert n > 0 and con.execute("SELECT count(*) FROM victim").fetchone()[0] == 1
