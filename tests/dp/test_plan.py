"""Contribution bounding (dp/plan.py through dp_bounded_aggregates): removing one person changes the bounded
aggregates of at most max_groups groups, each by at most the sensitivity the noise is calibrated to; the
bounds themselves are recomputed with pandas from the source."""
import math

import pandas as pd
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.dp import plan
from tests.conftest import examples


@pytest.fixture(scope="module")
def dp_con():
    connection = duckdb_anon.connect()
    yield connection
    connection.close()


@st.composite
def person_rows(draw):
    """A few people, one with many rows (a heavy contributor), groups with ties and NULL values."""
    people = draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(st.integers(0, people - 1), st.sampled_from("abcd"),
                                   st.one_of(st.none(), st.integers(-3, 8).map(float))), min_size=1, max_size=25))
    heavy = [(0, g, float(v)) for g, v in draw(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(-3, 8)),
                                                        max_size=12))]
    return pd.DataFrame(rows + heavy, columns=["person", "grp", "x"])


def bounded(con, table, m, r, lo, hi, key="fixed key"):
    return con.execute(f"SELECT grp, persons, rows, centered_sum FROM dp_bounded_aggregates('{table}', ['grp'], value := 'x', "
                       f"max_groups_contributed := {m}, max_rows_per_group := {r}, min_value := {lo}, max_value := {hi}, "
                       f"privacy_unit_column := 'person', key := '{key}')").df().set_index("grp")


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=person_rows(), m=st.integers(1, 3), r=st.integers(1, 3), lo=st.integers(-2, 2), width=st.integers(0, 5))
def test_removing_one_person_moves_at_most_max_groups_groups_by_the_sensitivity(dp_con, frame, m, r, lo, width):
    hi = lo + width
    dp_con.execute("CREATE OR REPLACE TABLE dp_full AS SELECT person, grp, CAST(x AS DOUBLE) AS x FROM frame")
    full = bounded(dp_con, "dp_full", m, r, lo, hi)
    # the bounds hold on the output, counted from the source: no group has more rows than r per person
    values = frame.dropna(subset=["x"])
    assert (full["rows"] <= full["persons"] * r).all()
    assert set(full.index) <= set(values["grp"])
    assert full["persons"].sum() <= values.groupby("person")["grp"].nunique().clip(upper=m).sum()
    assert (full["centered_sum"].abs() <= full["rows"] * width / 2 + 1e-9).all()
    for person in frame["person"].unique():
        dp_con.execute("CREATE OR REPLACE TABLE dp_less AS SELECT * FROM dp_full WHERE person <> ?", [int(person)])
        less = bounded(dp_con, "dp_less", m, r, lo, hi)
        both = full.merge(less, how="outer", left_index=True, right_index=True, suffixes=("_a", "_b")).fillna(0)
        moved = both[(both["persons_a"] != both["persons_b"]) | (both["rows_a"] != both["rows_b"])
                     | ((both["centered_sum_a"] - both["centered_sum_b"]).abs() > 1e-9)]
        assert len(moved) <= m
        assert ((moved["persons_a"] - moved["persons_b"]).abs() <= 1).all()
        assert ((moved["rows_a"] - moved["rows_b"]).abs() <= r).all()
        assert ((moved["centered_sum_a"] - moved["centered_sum_b"]).abs() <= r * width / 2 + 1e-9).all()


def test_groups_kept_per_person_are_chosen_at_random_not_by_row_order(dp_con):
    # 200 people, each with one row in each of 4 groups, always in the order a, b, c, d; max_groups 1
    dp_con.execute("CREATE OR REPLACE TABLE dp_order AS SELECT p AS person, g AS grp, 1.0 AS x "
                   "FROM range(200) t(p), unnest(['a', 'b', 'c', 'd']) u(g) ORDER BY p, g")
    kept = bounded(dp_con, "dp_order", 1, 1, 0, 1, key="another key")["persons"]
    assert kept.sum() == 200
    assert kept.min() >= 25 and kept.max() <= 75  # 50 expected per group; 25 or 75 is over 5 standard deviations off


def test_the_publishing_path_draws_a_fresh_key(dp_con):
    # without a key, dp_bounded_aggregates picks new groups on every run: the same person keeps other groups
    dp_con.execute("CREATE OR REPLACE TABLE dp_one AS SELECT 1 AS person, g AS grp, 1.0 AS x FROM unnest(range(50)) u(g)")
    picks = {dp_con.execute("SELECT grp FROM dp_bounded_aggregates('dp_one', ['grp'], max_groups_contributed := 1, "
                            "privacy_unit_column := 'person')").fetchall()[0][0] for _ in range(5)}
    assert len(picks) > 1


def test_choice_shares_fall_with_the_noisy_count_and_are_capped():
    # the rule's epsilon over noisy counts from nothing (NULL, negative) to ten million, at two epsilons
    counts = [None, -50.0, 0.0, 1.0, 100.0, 2288.0, 23176.0, 40000.0, 1e5, 232350.0, 1e6, 1e7]
    con = duckdb_anon.connect()
    for epsilon in (1.0, 4.0):
        for choice, cap, candidates in (("max_groups", plan.M_SHARE, len(plan.M_GRID)), ("range", plan.RANGE_SHARE, len(plan.V_GRID))):
            text = plan.render(f"SELECT people_noisy, {plan.choice_epsilon(choice)} AS e FROM (SELECT unnest(?) AS people_noisy) "
                               "ORDER BY coalesce(people_noisy, -1e9)", "duckdb", {"epsilon": sqlglot.parse_one(repr(epsilon))})
            spent = con.execute(text, [counts]).fetchall()
            shares = [e for _, e in spent]
            assert all(a >= b for a, b in zip(shares, shares[1:])), (choice, spent)  # never more for more people
            assert max(shares) == pytest.approx(cap * epsilon) and all(e <= cap * epsilon + 1e-12 for e in shares)
            assert shares[-1] < cap * epsilon / 10  # ten million people: a small fraction of the cap
            part = 1.0 if choice == "max_groups" else min(plan.CENTER_SHARE, (1 - plan.CENTER_SHARE) / 2)
            for n, e in spent:  # below the cap: exactly the accuracy asked, a rank error of RANK_ERROR * n people
                if e < cap * epsilon:
                    assert 2 * math.log(candidates / plan.CHOICE_BETA) / (part * e) == pytest.approx(plan.RANK_ERROR[choice] * n)
    con.close()
