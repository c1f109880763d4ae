"""duckdb_anon/km/driver.py on its own: the ladder of level vectors, the first threshold, and run() on a
DuckDB engine: the fallback suppression passes (max_rounds = 0, which km_anonymize never asks for) reach
k^m, m is clamped to the largest record, every relation it makes is in names.made (so the caller drops
them all, after an error too), and a hierarchy without a leaf is an error naming the function and argument.
tests/km/test_km.py checks km_anonymize's releases end to end."""
import math
from collections import Counter
from itertools import combinations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duckdb_anon.engines.base import Names
from duckdb_anon.engines.duckdb_engine import DuckDBEngine
from duckdb_anon.km.driver import first_threshold, ladder, run
from tests.conftest import examples

FN = "km_anonymize"


@settings(max_examples=examples(40), deadline=None)
@given(heights=st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_the_ladder_climbs_one_column_one_level_at_a_time_last_column_first(heights):
    rungs = ladder(heights)
    assert rungs[0] == (0,) * len(heights) and rungs[-1] == tuple(heights)
    assert len(rungs) == sum(heights) + 1  # every level of every column, once
    for a, b in zip(rungs, rungs[1:]):
        moved = [c for c in range(len(heights)) if a[c] != b[c]]
        assert len(moved) == 1 and b[moved[0]] == a[moved[0]] + 1
    # in every round each column below its height climbs once, from the last column to the first
    steps = [next(c for c in range(len(heights)) if a[c] != b[c]) for a, b in zip(rungs, rungs[1:])]
    round_ = 0
    while steps:
        climbing = [c for c in reversed(range(len(heights))) if heights[c] > round_]
        assert steps[:len(climbing)] == climbing
        steps, round_ = steps[len(climbing):], round_ + 1


@pytest.mark.parametrize("k, m, people", [(5, 1, 10_000), (5, 2, 10_000), (10, 3, 3), (1, 2, 0), (4, 4, 17)])
def test_the_first_threshold_is_k_then_the_root_of_k_times_the_people(k, m, people):
    expected = k if m == 1 else max(k, math.ceil(math.sqrt(k * people)))
    assert first_threshold(k, m, people) == expected >= k


@pytest.fixture
def ratings(con):
    """Ties (several people with the same record), repeated rows, NULL items, a row without a person, one
    person holding every item, and a hierarchy for `item` (genres) without a leaf for 9."""
    rows = [(p, i, b) for p in range(6) for i, b in ((p % 3, "x"), ((p + 1) % 3, None), (p % 3, "x"))]
    rows += [(6, i, "y") for i in range(5)] + [(None, 1, "x"), (7, None, None), (8, 4, "y")]
    frame = pd.DataFrame(rows, columns=["person", "item", "band"]).astype({"person": "Int64", "item": "Int64"})
    con.execute("CREATE TABLE ratings AS SELECT * FROM frame")
    # as km_anonymize's hierarchy_relation() writes it: (col, leaf, path), NULL a leaf under the root
    con.execute("""CREATE TABLE hierarchy AS SELECT 0 AS col, leaf, [leaf, genre, '*'] AS path
                   FROM (VALUES ('0', 'low'), ('1', 'low'), ('2', 'low'), ('3', 'high'), ('4', 'high')) v(leaf, genre)
                   UNION ALL SELECT 0, NULL, [NULL, '*']""")
    return con, frame


def intermediate(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}


def run_on(con, names, **arguments):
    call = dict(person="person", items=["item", "band"], k=2, m=2, hierarchy="hierarchy", hierarchical=(True, False),
                published=["person", "item", "band"]) | arguments
    return run(DuckDBEngine(con, "ratings", FN), FN, names=names, **call)


def rare(release: pd.DataFrame, k: int, m: int) -> list:
    """The itemsets of up to m released items held by fewer than k released records (recomputed here)."""
    held = Counter()
    for _, rows in release.groupby("person"):
        record = sorted({tuple(r) for r in rows[["item", "band"]].astype(object).where(rows[["item", "band"]].notna(), None)
                         .itertuples(index=False, name=None)}, key=repr)
        for size in range(1, m + 1):
            held.update(combinations(record, size))
    return [s for s, n in held.items() if n < k]


@pytest.mark.parametrize("k, m, max_rounds, generalize", [(2, 2, 50, True), (3, 2, 0, True), (2, 3, 0, False)])
def test_every_path_reaches_km_and_each_relation_it_makes_is_named(ratings, k, m, max_rounds, generalize):
    """The rounds (max_rounds 50), the suppression passes alone after the ladder (0), and the baseline that
    never generalizes: each release holds no itemset of up to m items that fewer than k people hold; every
    relation made is in names.made, and dropping them leaves the connection as it was."""
    con, source = ratings
    before = intermediate(con)
    names, stats = Names(), {}
    sql = run_on(con, names, k=k, m=m, max_rounds=max_rounds, generalize=generalize, stats=stats)
    release = con.execute(sql).df()
    assert len(release) > 0 and rare(release, k, m) == []
    assert release["person"].notna().all() and set(release["person"]) <= set(source["person"].dropna())
    if not generalize:  # items exact or gone
        exact = set(map(str, source["item"].dropna()))
        assert set(release["item"].dropna()) <= exact and stats["rounds"] == 1
    if max_rounds == 0 and generalize:
        assert stats["rounds"] == 1 and stats["passes"] >= 1
    made = intermediate(con) - before
    assert made and made <= set(names.made)
    for name in names.made:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")
    assert intermediate(con) == before


def test_m_beyond_the_largest_record_is_run_as_its_size(ratings):
    """Person 6 holds the largest record (5 distinct items): m = 9 is run as 5 (the baseline, one round)."""
    con, source = ratings
    largest = source.dropna(subset=["person"]).drop_duplicates().groupby("person").size().max()
    stats = {}
    release = con.execute(run_on(con, Names(), m=9, generalize=False, stats=stats)).df()
    assert stats["m"] == largest == 5 and rare(release, 2, 5) == []


def test_a_value_missing_from_its_hierarchy_names_function_and_argument(ratings):
    """Item 9 is no leaf of the genres: the error names the function, 'hierarchies', the column and the
    value; the relations made before it are all in names.made."""
    con, _ = ratings
    con.execute("INSERT INTO ratings VALUES (1, 9, 'x')")
    before, names = intermediate(con), Names()
    with pytest.raises(ValueError, match=r"^km_anonymize\(\): argument 'hierarchies': the hierarchy of 'item' has no "
                                         r"leaf '9', a value of the table$"):
        run_on(con, names)
    assert intermediate(con) - before <= set(names.made) and intermediate(con) - before
