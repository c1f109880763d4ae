"""duckdb_anon/km/plan.py query by query, on DuckDB over tiny hand-made tables (ties, NULLs, hostile column
names), each result recomputed in pandas or plain Python: the records, the paths, a rung of the ladder, the
label ids, the rare itemsets and their weakest members; every query also written for Spark SQL reads back.
tests/km/test_driver.py runs the queries in the driver's order, tests/km/test_km.py the whole release."""
from collections import Counter
from itertools import combinations

import duckdb
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

from duckdb_anon.km.plan import Plan

PERSON, ITEM, BAND = 'who "is" it', "it'em", "band; DROP TABLE victim"
SOURCE = exp.to_table("src")


@pytest.fixture(scope="module")
def db():
    """A source with hostile column names: repeated rows, NULL items, a row without a person."""
    con = duckdb.connect()
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    rows = [(1, 10, "a"), (1, 10, "a"), (1, None, "b"), (2, 10, "a"), (2, 11, None), (3, 11, None),
            (3, 10, "a"), (None, 12, "a"), (4, 12, "b")]
    frame = pd.DataFrame(rows, columns=[PERSON, ITEM, BAND]).astype({PERSON: "Int64", ITEM: "Int64"})  # noqa: F841
    con.execute("CREATE TABLE src AS SELECT * FROM frame")
    yield con, frame
    assert con.execute("SELECT x FROM victim").fetchall() == [(1,)]
    con.close()


def text(value):
    return None if pd.isna(value) else str(value)


def records(frame) -> set:
    """(person, item text, band) of every source row with a person."""
    return {(int(p), text(i), text(b)) for p, i, b in frame.dropna(subset=[PERSON]).itertuples(index=False)}


def test_leaves_and_holders_are_the_distinct_items_and_who_holds_them(db):
    """leaves: each distinct (item, band) as text, numbered from 1 in value order (NULL first); holders: one
    row per person and leaf, rows without a person left out."""
    con, frame = db
    plan = Plan(2, 2, "duckdb")
    con.execute(f"CREATE OR REPLACE TABLE leaves AS {plan.leaves(SOURCE, PERSON, [ITEM, BAND])}")
    leaves = con.execute("SELECT v0, v1, lid FROM leaves ORDER BY lid").fetchall()
    distinct = sorted({(i, b) for _, i, b in records(frame)}, key=lambda v: tuple((x is not None, x or "") for x in v))
    assert [(v0, v1) for v0, v1, _ in leaves] == distinct and [lid for *_, lid in leaves] == list(range(1, len(distinct) + 1))
    holders = con.execute(f"SELECT p, v0, v1 FROM ({plan.holders(SOURCE, PERSON, [ITEM, BAND], 'leaves')}) h "
                          "JOIN leaves USING (lid)").fetchall()
    assert len(holders) == len(set(holders)) and set(holders) == records(frame)


def test_paths_missing_and_heights(db):
    """A column with a hierarchy takes its path from it (NULL where the value is no leaf, which missing()
    reports first by column and value); one without has [value, '*']; heights are the levels above the
    deepest leaf."""
    con, frame = db
    plan = Plan(2, 2, "duckdb", hierarchical=(True, False))
    con.execute(f"CREATE OR REPLACE TABLE leaves AS {plan.leaves(SOURCE, PERSON, [ITEM, BAND])}")
    con.execute("CREATE OR REPLACE TABLE hierarchy AS SELECT 0 AS col, leaf, [leaf, 'g', '*'] AS path "
                "FROM (VALUES ('10'), ('11')) v(leaf) UNION ALL SELECT 0, NULL, [NULL, '*']")
    paths = con.execute(f"SELECT v0, v1, path0, path1 FROM ({plan.paths('leaves', 'hierarchy')})").fetchall()
    for v0, v1, path0, path1 in paths:
        assert path1 == [v1, "*"]
        assert path0 == ({"10": ["10", "g", "*"], "11": ["11", "g", "*"], None: [None, "*"]}.get(v0))
    con.execute(f"CREATE OR REPLACE TABLE paths AS {plan.paths('leaves', 'hierarchy')}")
    assert con.execute(plan.missing("paths")).fetchone()[0] == ["0", "12"]  # item 12 is no leaf
    assert con.execute(plan.heights("paths")).fetchone()[0] == [2, 1]


def test_a_rung_releases_labels_held_by_enough_pending_people_and_never_the_root(db):
    """At levels (1, 0) a pending item is labelled by its genre and the exact band; a label goes out when at
    least max(k, threshold) people hold it among the pending items, and only then; the all-root label never."""
    con, frame = db
    plan = Plan(2, 2, "duckdb", hierarchical=(True, False))
    con.execute("CREATE OR REPLACE TABLE hierarchy AS SELECT 0 AS col, leaf, [leaf, 'g' || (leaf::INT % 2), '*'] AS path "
                "FROM (VALUES ('10'), ('11'), ('12')) v(leaf) UNION ALL SELECT 0, NULL, [NULL, '*']")
    for name, sql in (("leaves", plan.leaves(SOURCE, PERSON, [ITEM, BAND])),
                      ("holders", plan.holders(SOURCE, PERSON, [ITEM, BAND], "leaves")),
                      ("paths", plan.paths("leaves", "hierarchy")), ("gen", plan.none("gen")), ("floors", plan.none("floors"))):
        con.execute(f"CREATE OR REPLACE TABLE {name} AS {sql}")
    labelled = con.execute("SELECT h.p, l.lid, path0[least(1, len(path0) - 1) + 1], path1[1], "
                           "1 >= len(path0) - 1 AND 0 >= len(path1) - 1 FROM holders h JOIN paths l USING (lid)").fetchall()
    for levels, threshold in (((1, 0), 2), ((1, 0), 3), ((2, 1), 1)):
        con.execute(f"CREATE OR REPLACE TABLE step AS {plan.step(levels, 0, 0, threshold)}")
        got = con.execute(f"SELECT lid, g0, g1 FROM ({plan.rung('paths', 'holders', 'gen', 'floors', 'step')})").fetchall()
        expected = labels_released(con, levels, max(2, threshold))
        assert sorted(got, key=repr) == sorted(expected, key=repr), (levels, threshold)
    assert labelled  # the table has items to label


def labels_released(con, levels, needed) -> list:
    """The rung's rule recomputed in Python from the paths and the holders."""
    paths = {lid: (p0, p1) for lid, p0, p1 in con.execute("SELECT lid, path0, path1 FROM paths").fetchall()}
    people = con.execute("SELECT lid, p FROM holders").fetchall()
    label = {lid: tuple(path[min(level, len(path) - 1)] for path, level in zip(pair, levels)) for lid, pair in paths.items()}
    at_root = {lid: all(level >= len(path) - 1 for path, level in zip(pair, levels)) for lid, pair in paths.items()}
    holders = {}
    for lid, p in people:
        if not at_root[lid]:
            holders.setdefault(label[lid], set()).add(p)
    return [(lid, *label[lid]) for lid in paths if not at_root[lid] and len(holders.get(label[lid], ())) >= needed]


@pytest.fixture(scope="module")
def rec(db):
    """Records of label ids with ties: labels 1 and 2 held by 3 people, 3 by 2, 4 by 1."""
    con, _ = db
    con.execute("CREATE OR REPLACE TABLE rec AS SELECT * FROM (VALUES (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 4), "
                "(3, 1), (3, 2), (3, 3), (4, 4)) v(p, gid)")
    return con, con.execute("SELECT p, gid FROM rec").fetchall()


@pytest.mark.parametrize("size", [1, 2, 3])
def test_rare_itemsets_are_those_fewer_than_k_people_hold(rec, size):
    con, rows = rec
    plan = Plan(1, 3, "duckdb")
    held = Counter()
    for _, group in pd.DataFrame(rows, columns=["p", "gid"]).groupby("p"):
        held.update(combinations(sorted(group["gid"]), size))
    expected = sorted(s for s, n in held.items() if n < 3)
    assert sorted(con.execute(plan.rare("rec", size)).fetchall()) == expected
    con.execute("CREATE OR REPLACE TABLE changed AS SELECT 4 AS gid")  # only itemsets with label 4 are looked at
    assert sorted(con.execute(plan.rare("rec", size, "changed")).fetchall()) == [s for s in expected if 4 in s]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_weakest_member_is_held_by_fewest_people_ties_by_the_seeded_hash(rec, seed):
    """victims(): in every record holding a rare pair, the member with the fewest holders; a tie goes to
    the smaller hash(hash(label, seed)), then the smaller label (DuckDB's hash, asked for separately)."""
    con, rows = rec
    plan = Plan(1, 3, "duckdb", seed)
    con.execute(f"CREATE OR REPLACE TABLE rare2 AS {plan.rare('rec', 2)}")
    support = Counter(g for _, g in rows)
    key = {g: (support[g], con.execute("SELECT hash(hash(?::BIGINT, ?::INTEGER))", [g, seed]).fetchone()[0], g) for g in support}
    records = {}
    for p, g in rows:
        records.setdefault(p, set()).add(g)
    pairs = con.execute("SELECT a1, a2 FROM rare2").fetchall()
    expected = {(p, min(pair, key=key.get)) for p, held in records.items() for pair in pairs if set(pair) <= held}
    assert set(con.execute(plan.victims("rec", "rare2", 2)).fetchall()) == expected
    assert {g for (g,) in con.execute(plan.weakest("rec", ((2, "rare2"),))).fetchall()} == {min(p, key=key.get) for p in pairs}
    assert pairs  # the records hold rare pairs


def test_new_labels_are_numbered_after_the_largest_id_and_ids_never_change(db):
    con, _ = db
    plan = Plan(2, 2, "duckdb")
    con.execute("CREATE OR REPLACE TABLE labels AS SELECT * FROM (VALUES ('g', 'a', 1), (NULL, 'b', 2)) v(g0, g1, gid)")
    con.execute("CREATE OR REPLACE TABLE gen AS SELECT * FROM (VALUES (1, 'g', 'a'), (2, NULL, 'b'), (3, 'h', NULL), "
                "(4, NULL, NULL), (5, 'h', NULL)) v(lid, g0, g1)")
    got = con.execute(f"SELECT g0, g1, gid FROM ({plan.new_labels('labels', 'gen')}) ORDER BY gid").fetchall()
    assert got == [(None, None, 3), ("h", None, 4)]  # the known labels keep 1 and 2; NULL first


def test_every_query_written_for_spark_reads_back():
    """The plan in Spark's dialect: each query parses as Spark SQL, user names still single quoted columns."""
    plan = Plan(2, 3, "spark", 5, (True, False))
    queries = [plan.leaves(SOURCE, PERSON, [ITEM, BAND]), plan.holders(SOURCE, PERSON, [ITEM, BAND], "l"),
               plan.paths("l", "h"), plan.missing("p"), plan.heights("p"), plan.step((1, 0), 2, 0, 3),
               plan.rung("p", "h", "g", "f", "s"), plan.none("gen"), plan.new_labels("l", "g"), plan.numbered("g", "l"),
               plan.records("h", "g"), plan.changed("n", "t", "s"), plan.rare("r", 3, "c"), plan.weakest("r", ((2, "a"), (3, "b"))),
               plan.take_back("n", "t"), plan.kept_items("n", "t"), plan.victims("r", "b", 3), plan.without("r", "v"),
               plan.kept("h", "g", "r", "l"), plan.release(SOURCE, PERSON, [ITEM, BAND], [PERSON, ITEM, BAND], "k")]
    for sql in queries:
        tree = sqlglot.parse_one(sql, read="spark")
        names = {c.name for c in tree.find_all(exp.Column)}
        assert not any("__person" in n or "__item_" in n or "__col_" in n for n in names), sql
        assert not list(tree.find_all(exp.Drop)), sql
