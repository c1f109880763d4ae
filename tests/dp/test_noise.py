"""The noise of dp_aggregate(): its distribution and scale, its privacy loss on neighbouring tables, and the
Gaussian calibration. Statistical checks with fixed, stated false-alarm rates.

Calibration: a Kolmogorov-Smirnov test at false-alarm rate 0.001 per test (critical value
sqrt(-ln(0.0005) / 2) / sqrt(n)). Privacy loss: the largest log ratio of the two tables' output
frequencies over bins holding at least 300 draws on each side may exceed epsilon by at most 0.35: each
bin's log ratio has a standard deviation under sqrt(2 / 300) = 0.082, so 0.35 is over 4 standard
deviations (a false alarm under 1e-4 over the few bins)."""
import math

import numpy as np
import pytest

import duckdb_anon
from duckdb_anon.dp import noise

DRAWS = 3000


@pytest.fixture(scope="module")
def dp_con():
    connection = duckdb_anon.connect()
    yield connection
    connection.close()


def laplace_cdf(x, scale):
    return np.where(x < 0, 0.5 * np.exp(x / scale), 1 - 0.5 * np.exp(-x / scale))


def normal_cdf(x, sigma):
    return 0.5 * (1 + np.vectorize(math.erf)(x / (sigma * math.sqrt(2))))


def ks_passes(draws, cdf) -> bool:
    x = np.sort(draws)
    n = len(x)
    f = cdf(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return d <= math.sqrt(-math.log(0.0005) / 2) / math.sqrt(n)


def zero_groups(con, n):
    """A table with no rows of n public groups: every released count is noise alone."""
    con.execute("CREATE OR REPLACE TABLE dp_empty (person INTEGER, grp INTEGER)")
    con.execute(f"CREATE OR REPLACE TABLE dp_groups AS SELECT range::INTEGER AS grp FROM range({n})")


@pytest.mark.parametrize("kind, cdf", [("laplace", laplace_cdf), ("gaussian", normal_cdf)])
def test_released_noise_fits_the_stated_law_and_scale(dp_con, kind, cdf):
    zero_groups(dp_con, DRAWS)
    # the interval states the scale: half-width = scale * ln(1 / 0.05) (Laplace), sigma * 1.95996 (Gaussian)
    frame = dp_con.execute(f"SELECT count, count_ci_high - count AS half FROM dp_aggregate('dp_empty', ['grp'], epsilon := 0.5, "
                           f"delta := 1e-5, max_groups_contributed := 2, noise := '{kind}', public_groups := 'dp_groups', "
                           f"privacy_unit_column := 'person')").df()
    assert len(frame) == DRAWS and frame["half"].round(6).nunique() == 1
    half = frame["half"].iloc[0]
    if kind == "laplace":
        scale = half / math.log(20)
        assert scale == pytest.approx(2 / 0.5)  # max_groups / epsilon: count of persons, sensitivity 1
    else:
        scale = half / 1.959963984540054
        # OpenDP's accounting proves (0.5, 1e-5)-DP at this sigma for L2 sensitivity sqrt(2), and not at 0.99 sigma
        assert noise._zcdp_epsilon(scale, 1e-5, math.sqrt(2)) <= 0.5 < noise._zcdp_epsilon(0.99 * scale, 1e-5, math.sqrt(2))
    assert ks_passes(frame["count"].to_numpy(), lambda x: cdf(x, scale))
    # the test can tell a wrong scale: 1.5 times off (at 3,000 draws a 1.2 times error of a Laplace scale moves
    # the CDF by at most 0.034, under the KS bound of 0.036, so only about half the runs would tell it)
    assert not ks_passes(frame["count"].to_numpy(), lambda x: cdf(x, scale * 1.5))


def test_noise_is_not_reproducible_and_keeps_nulls():
    values = np.zeros(200)
    first = noise.add_noise(values, np.full(200, 1.0), ["laplace"] * 200)
    second = noise.add_noise(values, np.full(200, 1.0), ["laplace"] * 200)
    assert not np.array_equal(first, second)
    mixed = noise.add_noise(np.array([1.0, np.nan, 2.0, 3.0]), np.array([np.nan, 1.0, 0.0, 1.0]), ["laplace"] * 4)
    assert np.isnan(mixed[0]) and np.isnan(mixed[1]) and mixed[2] == 2.0 and mixed[3] != 3.0


def neighbouring_tables(con, groups: int) -> None:
    """dp_base: `groups` groups, each held by 3 people; dp_plus: a 4th person added to every group. Groups are
    independent draws of the same mechanism, so per-group frequencies estimate its output law."""
    con.execute(f"CREATE OR REPLACE TABLE dp_base AS SELECT g AS grp, g * 10 + p AS person FROM range({groups}) a(g), range(3) b(p)")
    con.execute("CREATE OR REPLACE TABLE dp_plus AS SELECT * FROM dp_base UNION ALL SELECT grp, grp * 10 + 9 FROM dp_base WHERE person % 10 = 0")
    con.execute(f"CREATE OR REPLACE TABLE dp_groups AS SELECT range AS grp FROM range({groups})")


def privacy_loss(base: np.ndarray, plus: np.ndarray) -> float:
    """The largest log ratio of the two tables' count frequencies over bins of 0.5 holding >= 300 draws each."""
    edges = np.concatenate([[-np.inf], np.arange(0.5, 7, 0.5), [np.inf]])
    a, _ = np.histogram(base, edges)
    b, _ = np.histogram(plus, edges)
    dense = (a >= 300) & (b >= 300)
    assert dense.sum() >= 6
    return float(np.max(np.abs(np.log(a[dense] / b[dense]))))


def test_empirical_privacy_loss_of_a_count_stays_within_epsilon(dp_con):
    epsilon = 1.0
    neighbouring_tables(dp_con, 4000)
    draws = {}
    for table in ("dp_base", "dp_plus"):
        draws[table] = np.concatenate([dp_con.execute(
            f"SELECT count FROM dp_aggregate('{table}', ['grp'], epsilon := {epsilon}, delta := 0, max_groups_contributed := 1, "
            f"public_groups := 'dp_groups', privacy_unit_column := 'person')").df()["count"].to_numpy() for _ in range(2)])
    loss = privacy_loss(draws["dp_base"], draws["dp_plus"])
    assert loss <= epsilon + 0.35
    assert loss >= epsilon - 0.35  # the tails really do reach epsilon: the noise is not larger than it must be


def test_empirical_privacy_loss_with_chosen_bounds_stays_within_what_the_counts_spent(dp_con):
    # the same neighbouring tables, max_groups left to choose (public groups: the DP median of groups per
    # person, 1 here by thousands of people against a noise scale of 20): the counts get what the people count
    # and the choice leave, reported as epsilon_aggregates, and their privacy loss reaches it and no more
    neighbouring_tables(dp_con, 4000)
    draws, spent = {}, set()
    for table in ("dp_base", "dp_plus"):
        frames = [dp_con.execute(f"SELECT count, max_groups_contributed, epsilon_aggregates FROM dp_aggregate('{table}', ['grp'], "
                                 "epsilon := 1, delta := 0, public_groups := 'dp_groups', privacy_unit_column := 'person')").df()
                  for _ in range(2)]
        draws[table] = np.concatenate([f["count"].to_numpy() for f in frames])
        spent |= {tuple(r) for f in frames for r in f[["max_groups_contributed", "epsilon_aggregates"]].round(12).values.tolist()}
    assert len(spent) == 1
    m, epsilon = spent.pop()
    assert m == 1 and epsilon < 1
    assert epsilon - 0.35 <= privacy_loss(draws["dp_base"], draws["dp_plus"]) <= epsilon + 0.35


def test_gaussian_sigma_is_the_smallest_proven_one():
    for epsilon, delta, l2 in ((1.0, 1e-6, 1.0), (0.3, 1e-8, 5.0), (4.0, 1e-3, 2.0)):
        sigma = noise.gaussian_sigma(epsilon, delta, l2)
        assert noise._zcdp_epsilon(sigma, delta, l2) <= epsilon < noise._zcdp_epsilon(sigma * 0.995, delta, l2)
    assert noise.gaussian_sigma(1.0, 1e-6, 0.0) == 0.0
