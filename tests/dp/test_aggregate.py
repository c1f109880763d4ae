"""dp_aggregate() end to end: partition selection at the stated delta, public groups, the budget split,
the intervals' coverage, and the errors of bad arguments."""
import math

import numpy as np
import pytest

import duckdb_anon
from tests.conftest import assert_error_names
from tests.independent import expected_released
from duckdb_anon.dp import plan


@pytest.fixture(scope="module")
def dp_con():
    connection = duckdb_anon.connect()
    connection.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(2000, items := 60, ratings_per_user := 15, seed := 3)")
    yield connection
    connection.close()


def singletons(con, groups, people_per_group, name="dp_single"):
    """`groups` groups, each held by its own `people_per_group` people (one row each)."""
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT g AS grp, g * 1000 + p AS person, 1.0 AS x "
                f"FROM range({groups}) a(g), range({people_per_group}) b(p)")


@pytest.mark.parametrize("m", [1, 3])
def test_partition_selection_releases_a_one_person_group_with_probability_delta_over_max_groups(dp_con, m):
    # delta 0.3: the threshold lets a group held by one person through with probability exactly delta / m
    groups, delta = 3000, 0.3
    singletons(dp_con, groups, 1)
    released = dp_con.execute(f"SELECT count(*) FROM dp_aggregate('dp_single', ['grp'], epsilon := 1, delta := {delta}, "
                              f"max_groups_contributed := {m}, privacy_unit_column := 'person')").fetchall()[0][0]
    p = delta / m
    assert abs(released / groups - p) <= 4 * math.sqrt(p * (1 - p) / groups)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_partition_selection_at_a_small_delta_keeps_small_groups_out_and_big_ones_in(dp_con, noise):
    # at delta 1e-6 a group of 1 or 2 people passes with probability under 1e-6: none of 2000 may
    # (a false alarm below 0.002); groups of 200 people clear the threshold (about 30 at epsilon 1)
    singletons(dp_con, 2000, 2, "dp_small")
    singletons(dp_con, 50, 200, "dp_big")
    for table, expected in (("dp_small", 0), ("dp_big", 50)):
        released = dp_con.execute(f"SELECT count(*) FROM dp_aggregate('{table}', ['grp'], epsilon := 1, delta := 1e-6, "
                                  f"max_groups_contributed := 2, noise := '{noise}', privacy_unit_column := 'person')").fetchall()[0][0]
        assert released == expected


def test_public_groups_are_all_released_even_empty_ones(dp_con):
    dp_con.execute("CREATE OR REPLACE TABLE dp_items AS SELECT range AS item FROM range(100)")  # items 60..99 have no rating
    frame = dp_con.execute("SELECT * FROM dp_aggregate('ratings', ['item'], epsilon := 1, delta := 0, max_groups_contributed := 5, "
                           "public_groups := 'dp_items', privacy_unit_column := 'record_id') ORDER BY item").df()
    assert frame["item"].tolist() == list(range(100))
    assert list(frame.columns) == ["item", "count", "count_ci_low", "count_ci_high"]


def test_epsilon_is_split_equally_across_the_mechanisms(dp_con):
    # count and avg with max_rows 1: person count (also the count) and centered sum, epsilon / 2 each
    row = dp_con.execute("SELECT count_ci_high - count, count_distinct_ci_high - count_distinct FROM dp_aggregate('ratings', ['item'], "
                         "value := 'value', aggregates := ['count', 'count_distinct', 'avg'], epsilon := 2, delta := 1e-6, "
                         "max_groups_contributed := 4, min_value := 1, max_value := 5, privacy_unit_column := 'record_id') LIMIT 1").fetchall()[0]
    assert row[0] == pytest.approx(4 / 1 * math.log(20)) and row[1] == pytest.approx(row[0])  # scale 4 / (2 / 2)
    # with max_rows 3 the rows are a mechanism of their own: three shares, rows' sensitivity 3
    row = dp_con.execute("SELECT count_ci_high - count FROM dp_aggregate('ratings', ['item'], value := 'value', "
                         "aggregates := ['count', 'avg'], epsilon := 3, delta := 1e-6, max_groups_contributed := 4, "
                         "max_rows_per_group := 3, min_value := 1, max_value := 5, privacy_unit_column := 'record_id') LIMIT 1").fetchall()[0]
    assert row[0] == pytest.approx(4 * 3 / 1 * math.log(20))


def test_intervals_cover_the_bounded_values_at_the_stated_rate(dp_con):
    # every rating counts (max_groups above anyone's items), so the bounded count and mean are the plain ones
    dp_con.execute("CREATE OR REPLACE TABLE dp_many AS SELECT g AS grp, g * 100 + p AS person, (p % 5 + 1)::DOUBLE AS x "
                   "FROM range(600) a(g), range(20) b(p)")
    dp_con.execute("CREATE OR REPLACE TABLE dp_many_groups AS SELECT range AS grp FROM range(600)")
    frame = dp_con.execute("SELECT * FROM dp_aggregate('dp_many', ['grp'], value := 'x', aggregates := ['count', 'sum', 'avg'], "
                           "epsilon := 1, delta := 0, max_groups_contributed := 1, min_value := 1, max_value := 5, "
                           "public_groups := 'dp_many_groups', privacy_unit_column := 'person')").df()
    truth = {"count": 20, "sum": 60, "avg": 3}
    for name, value in truth.items():
        covered = ((frame[f"{name}_ci_low"] <= value) & (value <= frame[f"{name}_ci_high"])).mean()
        assert covered >= 0.95 - 4 * math.sqrt(0.05 * 0.95 / 600), name
    assert (frame["avg"].between(1, 5)).all()
    assert np.median(np.abs(frame["avg"] - 3)) < 0.2


BAD = [
    ("epsilon := 0", ["dp_aggregate", "'epsilon'", "> 0"]),
    ("epsilon := 'one'", ["dp_aggregate", "'epsilon'"]),
    ("delta := 0", ["dp_aggregate", "'delta'", "public_groups"]),
    ("delta := 0.7", ["dp_aggregate", "'delta'", "<= 0.5"]),
    ("noise := 'uniform'", ["dp_aggregate", "'noise'", "'laplace'"]),
    ("max_groups_contributed := 0", ["dp_aggregate", "'max_groups_contributed'", ">= 1"]),
    ("max_groups_contributed := 1.5", ["dp_aggregate", "'max_groups_contributed'", "integer"]),
    ("max_rows_per_group := 0", ["dp_aggregate", "'max_rows_per_group'"]),
    ("aggregates := ['mode']", ["dp_aggregate", "'aggregates'"]),
    ("aggregates := ['avg']", ["dp_aggregate", "'value'", "sum, avg and median"]),
    ("value := 'value', aggregates := ['avg'], min_value := 5, max_value := 1", ["dp_aggregate", "'max_value'", ">= min_value"]),
    ("value := 'value', aggregates := ['avg'], min_value := 'low'", ["dp_aggregate", "'min_value'"]),
    ("confidence := 1", ["dp_aggregate", "'confidence'"]),
    ("privacy_unit_column := 'nobody'", ["dp_aggregate", "nobody"]),
    ("value := 'ts', aggregates := ['avg'], min_value := 1, max_value := 5", ["dp_aggregate", "'ts'", "a number"]),
]


@pytest.mark.parametrize("arguments, words", BAD)
def test_bad_arguments_name_the_function_and_the_argument(dp_con, arguments, words):
    defaults = {"epsilon": "1", "delta": "1e-6", "max_groups_contributed": "2", "privacy_unit_column": "'record_id'"}
    given = {a.split(" := ")[0].strip() for a in arguments.split(", ")}
    rest = ", ".join(f"{k} := {v}" for k, v in defaults.items() if k not in given)
    assert_error_names(dp_con, f"SELECT * FROM dp_aggregate('ratings', ['item'], {arguments}, {rest})", words)


def test_bad_table_and_groups(dp_con):
    base = "epsilon := 1, delta := 1e-6, max_groups_contributed := 2, privacy_unit_column := 'record_id'"
    assert_error_names(dp_con, f"SELECT * FROM dp_aggregate('ratings', [], {base})", ["dp_aggregate", "'group_by'"])
    assert_error_names(dp_con, f"SELECT * FROM dp_aggregate('ratings', ['shelf'], {base})", ["dp_aggregate", "'group_by'", "shelf"])
    assert_error_names(dp_con, f"SELECT * FROM dp_aggregate(NULL, ['item'], {base})", ["dp_aggregate", "'table_name'"])
    assert_error_names(dp_con, "SELECT * FROM dp_aggregate('ratings', ['item'], epsilon := 1, delta := 1e-6, max_groups_contributed := 2)",
                       ["dp_aggregate", "'privacy_unit_column'", "no privacy unit declared", "ratings"])


def test_bounds_left_out_are_chosen_by_dp_quantiles_and_reported(dp_con):
    # 20,000 people, 1 to 30 items each, ratings 1..5: the grid's candidates closest to the 5th and 95th
    # percentiles are 1 and 5, and every other candidate scores at least 1,000 below them (noise scale 60:
    # a wrong pick has probability under 1e-5). max_groups_contributed is given: with 30 groups the choice of
    # m is noise-dominated (its own test uses 300 groups), and m = 30 releases about 29 items, far above the
    # threshold's noise.
    dp_con.execute("CREATE OR REPLACE TABLE dp_people AS SELECT p AS person, i AS item, (hash(p, i) % 5 + 1)::DOUBLE AS rating "
                   "FROM range(20000) a(p), range(30) b(i) WHERE i <= p % 30")
    frame = dp_con.execute("SELECT * FROM dp_aggregate('dp_people', ['item'], value := 'rating', aggregates := ['avg'], epsilon := 1, "
                           "delta := 1e-6, max_groups_contributed := 30, privacy_unit_column := 'person')").df()
    assert list(frame.columns) == ["item", "avg", "avg_ci_low", "avg_ci_high", "min_value", "max_value", *plan.CHOICE_COLUMNS]
    chosen = frame[["min_value", "max_value"]].drop_duplicates()
    assert len(chosen) == 1
    lo, hi = chosen.iloc[0]
    assert (lo, hi) == (1, 5)
    assert frame["avg"].between(1, 5).all() and len(frame) >= 20
    # given bounds are not reported, and the whole epsilon goes to the aggregates
    given = dp_con.execute("SELECT * FROM dp_aggregate('dp_people', ['item'], epsilon := 1, delta := 1e-6, "
                           "max_groups_contributed := 3, privacy_unit_column := 'person') LIMIT 1").df()
    assert list(given.columns) == ["item", "count", "count_ci_low", "count_ci_high"]
    assert given["count_ci_high"].iloc[0] - given["count"].iloc[0] == pytest.approx(3 * math.log(20))


def test_the_median_is_within_its_stated_rank_error_of_the_middle(dp_con):
    # 200 groups of 300 people, values 0..100 with ties; the released median checked against each group's values
    dp_con.execute("CREATE OR REPLACE TABLE dp_med AS SELECT g AS grp, g * 1000 + p AS person, (hash(g, p) % 101)::DOUBLE AS x "
                   "FROM range(200) a(g), range(300) b(p)")
    dp_con.execute("CREATE OR REPLACE TABLE dp_med_groups AS SELECT range AS grp FROM range(200)")
    frame = dp_con.execute("SELECT grp, median, median_rank_error FROM dp_aggregate('dp_med', ['grp'], value := 'x', "
                           "aggregates := ['count', 'median'], epsilon := 2, delta := 0, max_groups_contributed := 2, "
                           "min_value := 0, max_value := 100, public_groups := 'dp_med_groups', privacy_unit_column := 'person')").df()
    t = 2 * 1 * 2 / (2 / 2) * (math.log(64) + math.log(20))  # 2 max_rows max_groups / epsilon_share (ln points + ln 1/alpha)
    assert frame["median_rank_error"].round(9).unique().tolist() == [round(t, 9)]
    values = dp_con.execute("SELECT grp, x FROM dp_med").df().merge(frame, on="grp")
    below = values.assign(lt=values["x"] < values["median"], le=values["x"] <= values["median"]).groupby("grp")[["lt", "le"]].sum()
    covered = ((below["lt"] <= 150 + t) & (below["le"] >= 150 - t)).mean()
    assert covered >= 0.95 - 4 * math.sqrt(0.05 * 0.95 / 200)
    assert ((frame["median"] - 50).abs() <= 25).all()  # 150 +- 57 values of 300 spread evenly over 0..100


def nearly_the_most(released: dict, noise_scale: float) -> int:
    """The largest m expected to release nearly the most groups: within M_SLACK standard deviations of the
    most (a count's) or M_NOISE scales of the choice's noise, the smaller, or M_RELEASED of it when that is lower."""
    best = max(released.values())
    slack = min(plan.M_SLACK * math.sqrt(best + 1), plan.M_NOISE * noise_scale)
    return max(m for m, e in released.items() if e >= max(plan.M_RELEASED * best, best - slack))


def test_chosen_max_groups_is_the_largest_releasing_nearly_the_most_groups(dp_con):
    # 600 groups held by their own people, one group each: every m keeps them all, but the threshold grows
    # with m. 480 groups of 60 people are released at m <= 3, 120 of 40 at m <= 2: m = 2 releases nearly
    # every group, m = 3 four in five (enough for three quarters of the most), m = 5 almost none
    dp_con.execute("CREATE OR REPLACE TABLE dp_wide AS SELECT g AS grp, g * 1000 + p AS person, 3.0 AS x "
                   "FROM range(600) a(g), range(60) b(p) WHERE p < CASE WHEN g < 480 THEN 60 ELSE 40 END")
    eps_each = 1 - plan.PEOPLE_SHARE - plan.M_SHARE  # count only: one mechanism, less the people count and the bound's cap
    kept = dp_con.execute("SELECT count(*) FROM dp_wide GROUP BY grp").df().iloc[:, 0].to_numpy()
    released = {m: expected_released(kept, m, eps_each, 1e-6) for m in plan.M_GRID}
    best = max(released.values())
    assert nearly_the_most(released, eps_each / plan.M_SHARE) == 2 and 0.75 * best < released[3] < 0.85 * best  # scores apart by > 10 noise scales
    picked = [dp_con.execute("SELECT max_groups_contributed, count(*) FROM dp_aggregate('dp_wide', ['grp'], epsilon := 1, "
                             "delta := 1e-6, privacy_unit_column := 'person') GROUP BY 1").fetchall() for _ in range(3)]
    assert all(len(p) == 1 and p[0][0] == 2 and p[0][1] >= 0.95 * best for p in picked), picked


def test_the_chosen_range_pays_from_the_values_share_not_the_counts(dp_con):
    # count and avg, max_groups given, the range chosen: the count keeps half of epsilon (its interval says
    # so), the mean's sum pays the range's RANGE_SHARE
    dp_con.execute("CREATE OR REPLACE TABLE dp_split AS SELECT g AS grp, g * 1000 + p AS person, (p % 5 + 1)::DOUBLE AS x "
                   "FROM range(20) a(g), range(400) b(p)")
    frame = dp_con.execute("SELECT count, count_ci_low, min_value, max_value FROM dp_aggregate('dp_split', ['grp'], value := 'x', "
                           "aggregates := ['count', 'avg'], epsilon := 1, delta := 1e-6, max_groups_contributed := 1, "
                           "privacy_unit_column := 'person')").df()
    assert len(frame) == 20
    # half of epsilon less the people count's share (8,000 people: the range's cap binds)
    assert (frame["count"] - frame["count_ci_low"]).round(9).unique().tolist() == [
        round(1 / ((1 - plan.PEOPLE_SHARE) / 2) * math.log(20), 9)]


def test_the_range_chosen_on_a_thousand_people_is_close_to_the_values(dp_con):
    # 1,000 people rating 1..5 (one rating each, evenly): every point of the grid beyond the values scores
    # alike; the chosen range still lands on them. Measured in 200 calls: [1, 5] in 81 %, otherwise a grid
    # point or two off on a side (lo 0.5 or 2, hi 10 or 20; lo 0.1 once). No call of five exactly [1, 5]: about
    # 0.19^5 = 3e-4. A range not covering 2..4 or wider than 100 needs a bound at least 4 grid steps past the
    # data against a noise scale of 38 (the score falls by 57 per step): about 1e-4 per call
    dp_con.execute("CREATE OR REPLACE TABLE dp_small AS SELECT p AS person, p % 7 AS grp, (p % 5 + 1)::DOUBLE AS rating "
                   "FROM range(1000) r(p)")
    ranges = [dp_con.execute("SELECT DISTINCT min_value, max_value FROM dp_aggregate('dp_small', ['grp'], value := 'rating', "
                             "aggregates := ['avg'], epsilon := 1, delta := 1e-6, max_groups_contributed := 1, "
                             "privacy_unit_column := 'person')").fetchall() for _ in range(5)]
    assert all(len(r) == 1 for r in ranges), ranges
    ranges = [r[0] for r in ranges]
    assert all(lo <= 2 and hi >= 4 and hi - lo <= 100 for lo, hi in ranges), ranges
    assert (1, 5) in ranges, ranges


def test_the_choices_report_what_they_spent_and_it_adds_up_to_epsilon(dp_con):
    # count and avg with every bound chosen on 8,000 people (the caps bind): the people count, max_groups and
    # the range spend their shares; the count's interval is recomputed from what is left, split in two
    dp_con.execute("CREATE OR REPLACE TABLE dp_spent AS SELECT p % 40 AS grp, p AS person, (p % 5 + 1)::DOUBLE AS x "
                   "FROM range(8000) r(p)")
    frame = dp_con.execute("SELECT * FROM dp_aggregate('dp_spent', ['grp'], value := 'x', aggregates := ['count', 'avg'], "
                           "epsilon := 2, delta := 1e-6, privacy_unit_column := 'person')").df()
    spent = frame[list(plan.CHOICE_COLUMNS) + ["max_groups_contributed"]].drop_duplicates()
    assert len(frame) >= 30 and len(spent) == 1  # one draw of each choice for the whole release
    row = spent.iloc[0]
    assert row["epsilon_people"] == pytest.approx(2 * plan.PEOPLE_SHARE)
    assert row["epsilon_max_groups"] == pytest.approx(2 * plan.M_SHARE) and row["epsilon_range"] == pytest.approx(2 * plan.RANGE_SHARE)
    assert row[["epsilon_people", "epsilon_max_groups", "epsilon_range", "epsilon_aggregates"]].sum() == pytest.approx(2)
    # the count (people, max_rows 1) gets half of what the people count and max_groups leave; the range is the mean's
    count_epsilon = (2 - row["epsilon_people"] - row["epsilon_max_groups"]) / 2
    assert (frame["count_ci_high"] - frame["count"]).round(9).unique().tolist() == [
        round(row["max_groups_contributed"] * math.log(20) / count_epsilon, 9)]
    assert abs(row["people_noisy"] - 8000) < 100 / 2 * 12  # Laplace(1 / 0.02): beyond 12 scales p < 1e-5


def test_the_people_count_is_noisy_at_its_share(dp_con):
    # 8 releases choosing max_groups on 50 people: the noisy count's mean distance to 50 estimates the
    # Laplace scale 1 / (PEOPLE_SHARE * epsilon) = 100; the mean of 8 such distances (a sum of 8 exponentials
    # of mean 100, over 8) is below 20 with probability 2e-4, above 300 with probability 1e-5
    dp_con.execute("CREATE OR REPLACE TABLE dp_fifty AS SELECT p AS person, p % 2 AS grp FROM range(50) r(p)")
    dp_con.execute("CREATE OR REPLACE TABLE dp_fifty_groups AS SELECT range AS grp FROM range(2)")
    counts = [dp_con.execute("SELECT DISTINCT people_noisy, epsilon_people FROM dp_aggregate('dp_fifty', ['grp'], epsilon := 1, "
                             "delta := 0, public_groups := 'dp_fifty_groups', privacy_unit_column := 'person')").fetchall()
              for _ in range(8)]
    assert all(len(c) == 1 and c[0][1] == pytest.approx(plan.PEOPLE_SHARE) for c in counts)
    distance = np.mean([abs(c[0][0] - 50) for c in counts])
    assert 20 < distance < 300, distance


def test_many_people_spend_less_on_the_range_and_still_get_it_right(dp_con):
    # 60,000 people rating 1..5: the range's epsilon falls below its cap, to what the rule gives at the
    # reported noisy count (recomputed here from the exponential mechanism's accuracy bound), and the range
    # chosen is still [1, 5] (every other candidate is thousands of people off the 5th or 95th percentile)
    dp_con.execute("CREATE OR REPLACE TABLE dp_large AS SELECT p % 20 AS grp, p AS person, (p % 5 + 1)::DOUBLE AS x "
                   "FROM range(60000) r(p)")
    row = dp_con.execute("SELECT DISTINCT min_value, max_value, people_noisy, epsilon_range, epsilon_aggregates "
                         "FROM dp_aggregate('dp_large', ['grp'], value := 'x', aggregates := ['avg'], epsilon := 1, "
                         "delta := 1e-6, max_groups_contributed := 1, privacy_unit_column := 'person')").df()
    assert len(row) == 1
    lo, hi, people, eps_range, eps_rest = row.iloc[0]
    part = min(plan.CENTER_SHARE, (1 - plan.CENTER_SHARE) / 2)  # the smallest of center, min, max
    rank_error = 2 * math.log(len(plan.V_GRID) / plan.CHOICE_BETA) / (part * eps_range)
    assert eps_range < plan.RANGE_SHARE and rank_error == pytest.approx(plan.RANK_ERROR["range"] * people)
    assert (lo, hi) == (1, 5) and eps_rest == pytest.approx(1 - plan.PEOPLE_SHARE - eps_range)
