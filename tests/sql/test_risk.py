"""Privacy models and risk measures, checked against pandas on the same release."""
import math

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def release(con):
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"id": range(n), "zip": rng.choice(["a", "b", "c", None], n), "age": rng.integers(0, 4, n),
                       "diag": rng.choice(["flu", "cold", "ok", "hiv"], n, p=[.4, .3, .2, .1]),
                       "pay": rng.integers(0, 6, n)})
    con.register("df", df)
    con.execute("CREATE TABLE rel AS SELECT * FROM df")
    con.unregister("df")
    return con, df


def _classes(df):
    return df.groupby(["zip", "age"], dropna=False)


def test_class_profile_and_privacy_measures(release):
    con, df = release
    prof = con.execute("SELECT * FROM class_profile('rel', ['zip', 'age'], sensitive := 'diag', c := 2)").df()
    expect_size, expect_l, expect_e, expect_r, expect_t = [], [], [], [], []
    overall = df["diag"].value_counts(normalize=True)
    for _, g in _classes(df):
        counts = g["diag"].value_counts()
        p = counts / counts.sum()
        r = sorted(counts.values, reverse=True)
        expect_size.append(len(g)), expect_l.append(len(counts)), expect_e.append(math.exp(-(p * np.log(p)).sum()))
        expect_r.append(sum(1 for l in range(1, len(r) + 1) if r[0] < 2 * sum(r[l - 1:])))
        expect_t.append(0.5 * (p.reindex(overall.index, fill_value=0) - overall).abs().sum())
    assert sorted(prof["class_size"]) == sorted(expect_size)
    assert sorted(prof["distinct_l"]) == sorted(expect_l)
    assert sorted(prof["entropy_l"]) == pytest.approx(sorted(expect_e))
    assert sorted(prof["recursive_l"]) == sorted(expect_r)
    assert sorted(prof["t"]) == pytest.approx(sorted(expect_t))
    m = con.execute("SELECT * FROM privacy_measures('rel', ['zip', 'age'], sensitive := 'diag')").df().iloc[0]
    assert (m["k"], m["distinct_l"], m["recursive_l"]) == (min(expect_size), min(expect_l), min(expect_r))
    assert m["entropy_l"] == pytest.approx(min(expect_e)) and m["t"] == pytest.approx(max(expect_t))


def test_ordered_t_closeness_for_a_numeric_sensitive_column(release):
    con, df = release
    prof = con.execute("SELECT t FROM class_profile('rel', ['zip', 'age'], sensitive := 'pay')").df()
    values = sorted(df["pay"].unique())
    q = df["pay"].value_counts(normalize=True).reindex(values, fill_value=0).to_numpy()
    expected = []
    for _, g in _classes(df):
        p = g["pay"].value_counts(normalize=True).reindex(values, fill_value=0).to_numpy()
        expected.append(np.abs(np.cumsum(p - q)).sum() / (len(values) - 1))
    assert sorted(prof["t"]) == pytest.approx(sorted(expected))


def test_risk_measures_with_and_without_a_population(release):
    con, df = release
    sizes = _classes(df).size()
    r = con.execute("SELECT * FROM risk_measures('rel', ['zip', 'age'], threshold := 0.05)").df().iloc[0]
    assert r["records"] == len(df) and r["classes"] == len(sizes)
    assert r["prosecutor_max"] == pytest.approx(1 / sizes.min())
    assert r["prosecutor_avg"] == pytest.approx(len(sizes) / len(df)) and r["marketer"] == pytest.approx(len(sizes) / len(df))
    assert r["records_at_risk"] == sizes[1 / sizes > 0.05].sum() and r["sample_uniques"] == (sizes == 1).sum()
    assert pd.isna(r["journalist_max"])
    con.execute("CREATE TABLE pop AS SELECT * FROM rel UNION ALL SELECT * FROM rel WHERE age < 2")  # a larger population
    p = con.execute("SELECT * FROM risk_measures('rel', ['zip', 'age'], population_table := 'pop')").df().iloc[0]
    big = df.groupby(["zip", "age"], dropna=False).size() * np.where(
        np.array([a for _, a in sizes.index]) < 2, 2, 1)
    assert p["journalist_max"] == pytest.approx(1 / big.min())
    assert p["marketer"] == pytest.approx((sizes / big).sum() / len(df))


def test_record_risks_keep_every_row(release):
    con, df = release
    rr = con.execute("SELECT * FROM record_risks('rel', ['zip', 'age']) ORDER BY id").df()
    sizes = _classes(df)["id"].transform("size")
    assert len(rr) == len(df) and (rr["class_size"].values == sizes.values).all()
    assert rr["prosecutor_risk"].to_numpy() == pytest.approx(1 / sizes.to_numpy())
