"""Every argument that sizes work has a documented bound, checked before the work starts: an absurd value
errors, naming the function and the argument, within seconds and under a small memory limit (unbounded,
m = 10^9 grew km_anonymize to 18.7 GB). A hang fails the test (the query is interrupted) rather than
hanging the suite."""
import threading
import time

import duckdb
import pytest

import duckdb_anon
from duckdb_anon.km import km_anonymize

HUGE = 2**63 - 1


@pytest.fixture(scope="module")
def bounded(module_con):
    con = module_con
    con.execute("SET memory_limit = '500MB'")
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 20 AS p, i % 7 AS item, (i * 37 % 101)::DOUBLE AS x FROM range(200) r(i)")
    con.execute("CREATE TABLE r AS SELECT id AS record_id, item, 3 AS value, DATE '2001-01-01' AS ts FROM t")
    con.execute("CREATE TABLE loc AS SELECT * FROM localities('t', 'x')")
    return con


def sql(text):
    return lambda con: con.execute(text).fetchall()


CASES = [  # (function, argument, call)
    ("mondrian", "k", sql(f"SELECT * FROM mondrian('t', ['x'], {HUGE})")),
    ("mondrian_classes", "k", sql(f"SELECT * FROM mondrian_classes('t', ['x'], {HUGE})")),
    ("release_measures", "k", sql(f"SELECT * FROM release_measures('t', ['x'], k := {HUGE})")),
    ("km_check", "k", sql(f"SELECT * FROM km_check('t', 'p', ['item'], {HUGE}, 2)")),
    ("km_check", "m", sql("SELECT * FROM km_check('t', 'p', ['item'], 2, 1000000000)")),
    ("km_anonymity", "m", sql("SELECT * FROM km_anonymity('t', ['item'], 2, 1000000000, person := 'p', person_output := 'drop')")),
    ("km_anonymize", "m", lambda con: km_anonymize(con, "t", person="p", items=["item"], k=2, m=10**9, into="o1",
                                                   person_output="drop")),
    ("km_anonymize", "k", lambda con: km_anonymize(con, "t", person="p", items=["item"], k=HUGE, m=2, into="o2",
                                                   person_output="drop")),
    ("publish_km", "m", lambda con: duckdb_anon.publish_km(con, "t", "km_rel", items=["item"], k=2, m=10**9, person="p",
                                                           person_output="drop")),
    ("localities", "segment_size", sql("SELECT * FROM localities('t', 'x', segment_size := 1000000000)")),
    ("random_walk", "iterations", sql(f"SELECT * FROM random_walk('t', 'x', 'loc', iterations := {HUGE})")),
    ("random_walk", "segment_size", sql("SELECT * FROM random_walk('t', 'x', 'loc', segment_size := 1000000000)")),
    ("linkage_pattern", "segment_size", sql("SELECT * FROM linkage_pattern('t', 't', 'x', 'id', segment_size := 1000000000)")),
    ("synthetic_ratings", "users", sql("SELECT count(*) FROM synthetic_ratings(1000000000000)")),
    ("synthetic_ratings", "ratings_per_user", sql("SELECT count(*) FROM synthetic_ratings(10, ratings_per_user := 1e12)")),
    ("synthetic_ratings", "users", sql("SELECT count(*) FROM synthetic_ratings(1000000, ratings_per_user := 1000)")),
    ("realistic_ratings", "users", sql("SELECT count(*) FROM realistic_ratings(1000000000000)")),
    ("realistic_ratings", "users", sql("SELECT count(*) FROM realistic_ratings(1000000)")),
    ("realistic_ratings", "items", sql("SELECT count(*) FROM realistic_ratings(10, items := 1000000000000)")),
    ("synthetic_aux", "days_noise", sql(f"SELECT * FROM synthetic_aux('r', 5, days_noise := {HUGE})")),
    ("synthetic_aux", "value_noise", sql(f"SELECT * FROM synthetic_aux('r', 5, value_noise := {HUGE})")),
]


@pytest.mark.parametrize("fn, arg, call", CASES, ids=[f"{fn}-{arg}-{i}" for i, (fn, arg, _) in enumerate(CASES)])
def test_an_absurd_size_errors_naming_function_and_argument_within_ten_seconds(bounded, fn, arg, call):
    outcome = {}

    def run():
        try:
            call(bounded)
            outcome["result"] = "no error"
        except (duckdb.Error, ValueError) as err:
            outcome["error"] = err

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        bounded.interrupt()
        worker.join(30)
        pytest.fail(f"{fn}({arg}=...) still ran after 10 s")
    assert "error" in outcome, outcome
    assert f"{fn}(): argument '{arg}'" in str(outcome["error"]), outcome["error"]
    assert time.monotonic() - started < 10


def test_km_m_beyond_the_largest_record_is_clamped_to_it(con):
    """m = 4 on records of at most 2 items releases what m = 2 releases (no itemset of 3 exists)."""
    con.execute("CREATE TABLE small AS SELECT i % 30 AS p, (i * 7 + i // 30) % 9 AS item FROM range(60) r(i)")
    largest = con.execute("SELECT max(n) FROM (SELECT count(DISTINCT item) n FROM small GROUP BY p)").fetchall()[0][0]
    assert largest == 2
    stats = {}
    for m, into in ((largest, "at_largest"), (4, "beyond")):
        stats[m] = {}
        km_anonymize(con, "small", person="p", items=["item"], k=3, m=m, into=into, person_output="raw", stats=stats[m])
    assert stats[4]["m"] == largest
    assert con.execute("SELECT * FROM at_largest EXCEPT ALL SELECT * FROM beyond").fetchall() == []
    assert con.execute("SELECT * FROM beyond EXCEPT ALL SELECT * FROM at_largest").fetchall() == []
