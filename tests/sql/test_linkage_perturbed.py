"""linkage_rank() and linkage_pattern(), checked against independent pandas recomputations and attacks
with a known outcome; and the default pipeline's privacy and utility on a synthetic table with heavy ties
and a long tail."""
import numpy as np
import pandas as pd
import pytest

import duckdb_anon


def _pandas_rank_links(orig, rel, col):
    """Per column: the expected share linked by rank (ties: 1/m when the own record lies in the tie's ranks)."""
    o = orig.dropna(subset=[col]).copy()
    r = rel.dropna(subset=[col]).copy()
    o = o[o["id"].isin(r["id"])]
    r = r[r["id"].isin(o["id"])]
    o["a"] = o[col].rank(method="min")
    o["b"] = o[col].rank(method="max")
    r = r.sort_values([col, "id"], kind="stable")
    r["rk"] = np.arange(1, len(r) + 1)
    m = o.merge(r[["id", "rk"]], on="id")
    hit = (m["rk"] >= m["a"]) & (m["rk"] <= m["b"])
    return (hit / (m["b"] - m["a"] + 1)).mean()


def test_linkage_rank_matches_pandas_with_ties_and_nulls(con):
    rng = np.random.default_rng(3)
    n = 300
    orig = pd.DataFrame({"id": np.arange(n), "x": rng.integers(0, 20, n).astype(float), "y": rng.normal(size=n)})
    orig.loc[::17, "x"] = np.nan
    rel = orig.copy()
    rel["x"] = rel["x"] + rng.normal(scale=2, size=n)
    rel["y"] = rel["y"] + rng.normal(scale=0.05, size=n)
    con.register("o_df", orig)
    con.register("r_df", rel)
    con.execute("CREATE TABLE o AS SELECT * FROM o_df")
    con.execute("CREATE TABLE r AS SELECT * FROM r_df")
    rows = {c: (p, s) for c, p, s, _ in con.execute("SELECT * FROM linkage_rank('r', 'o', ['y', 'x'], 'id')").fetchall()}
    assert rows["x"][0] == orig["x"].notna().sum() and rows["y"][0] == n
    for col in ("x", "y"):
        assert rows[col][1] == pytest.approx(_pandas_rank_links(orig, rel, col))
    # jointly: the records whose rank lies in the person's range in both columns
    o, r = orig.dropna(), rel.dropna()
    ranks = {c: (o[c].rank(method="min").to_numpy(), o[c].rank(method="max").to_numpy()) for c in ("x", "y")}
    rk = {c: r.sort_values([c, "id"]).assign(rk=np.arange(1, len(r) + 1)).set_index("id")["rk"].reindex(o["id"]).to_numpy()
          for c in ("x", "y")}
    credit = []
    for p in range(len(o)):
        ok = np.ones(len(o), bool)
        for c in ("x", "y"):
            ok &= (rk[c] >= ranks[c][0][p]) & (rk[c] <= ranks[c][1][p])
        credit.append(1 / ok.sum() if ok[p] else 0.0)
    assert rows["*"][1] == pytest.approx(np.mean(credit))


def test_an_unchanged_release_is_linked_by_rank_and_a_shuffled_one_is_not(con):
    con.execute("CREATE TABLE o AS SELECT range AS id, (hash(range) % 100000)::DOUBLE AS v FROM range(500)")
    con.execute("CREATE TABLE same AS SELECT * FROM o")
    con.execute("CREATE TABLE shuffled AS SELECT id, (SELECT max(v) FROM o) - v AS v FROM o")  # the order reversed
    same = con.execute("SELECT linked_to_own_record FROM linkage_rank('same', 'o', ['v'], 'id') WHERE column_name = '*'").fetchall()
    rev = con.execute("SELECT linked_to_own_record FROM linkage_rank('shuffled', 'o', ['v'], 'id') WHERE column_name = '*'").fetchall()
    assert same[0][0] > 0.99 and rev[0][0] < 0.01


def _pattern_attack(orig, rel, size, tolerance=1e-5):
    """linkage_pattern()'s adversary by exhaustive search: per segment, every shift that puts one of its
    values on a released value, scored by the segment's distinct values within t of a released value; the
    best (then the smallest) kept when it places at least half of them; rank-to-rank links."""
    o = orig.sort_values(["v", "row"]).reset_index(drop=True)
    o["segment"] = np.arange(len(o)) // size
    r = rel.sort_values(["v", "id"]).reset_index(drop=True)
    ys, ids = r["v"].to_numpy(), r["id"].to_numpy()
    t = tolerance * orig["v"].std(ddof=0)
    linked, found = 0, 0
    for _, seg in o.groupby("segment"):
        vals = np.unique(seg["v"])
        shifts = np.unique((ys[None, :] - vals[:, None]).ravel())
        lo = np.searchsorted(ys, vals[None, :] + shifts[:, None] - t)
        hit = (lo < len(ys)) & (ys[np.minimum(lo, len(ys) - 1)] <= vals[None, :] + shifts[:, None] + t)
        score = hit.sum(axis=1)
        if score.max() < len(vals) / 2:
            continue
        found += 1
        c = shifts[np.argmax(score)]  # the first of the best: the smallest
        for v, holders in seg.groupby("v"):
            m, target = len(holders), v + c
            p0 = np.searchsorted(ys, target)
            ranks = np.arange(max(0, p0 - m), min(len(ys), p0 + m))
            nearest = np.sort(ranks[np.lexsort((ranks, np.abs(ys[ranks] - target)))[:m]])
            linked += (ids[nearest] == holders.sort_values("row")["id"].to_numpy()).sum()
    return linked / len(o), found


def _pattern_row(con, release, size=20):
    return con.execute(f"SELECT * FROM linkage_pattern('{release}', 'o', 'v', 'id', segment_size := {size})").fetchall()[0]


@pytest.fixture
def pattern_tables(con):
    """o: 600 values with ties (every fifth repeats the one before), in 30 segments of 20; shifted: each
    segment carried by its own shift, far from the others, each value jittered well within the tolerance
    (as whole-segment steps do); permuted: the same values dealt to other people."""
    rng = np.random.default_rng(11)
    v = np.cumsum(rng.integers(1, 60, 600)).astype(float)
    v[4::5] = v[3::5]
    orig = pd.DataFrame({"id": rng.permutation(600) + 1000, "v": rng.permutation(v)})
    orig["row"] = np.arange(len(orig))
    seg = orig.sort_values(["v", "row"])["id"].to_numpy().reshape(30, 20)
    shift = {i: s for k, s in zip(seg, rng.permutation(30) * 100000.0) for i in k}
    t = 1e-5 * orig["v"].std(ddof=0)
    shifted = orig.assign(v=orig["v"] + orig["id"].map(shift) + rng.uniform(-0.3 * t, 0.3 * t, 600))
    permuted = orig.assign(v=rng.permutation(orig["v"].to_numpy()))
    for name, df in [("o", orig), ("shifted", shifted), ("permuted", permuted)]:
        con.register(f"{name}_df", df[["id", "v"]])
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_df")  # row order kept: row = scan position
    return orig, shifted, permuted


def test_linkage_pattern_links_rigidly_shifted_segments_as_exhaustive_search_does(con, pattern_tables):
    orig, shifted, _ = pattern_tables
    row = _pattern_row(con, "shifted")
    expected, found = _pattern_attack(orig, shifted, 20)
    assert row[0] == 600 and row[2] == 30 and row[3] == found == 30
    # everyone with a value of their own (60 %) and, by chance, about half the holders of the 60 tied pairs
    assert row[1] == pytest.approx(expected) and row[1] > 0.75
    # the same with any number of threads
    con.execute("SET threads = 1")
    assert _pattern_row(con, "shifted") == row


def test_linkage_pattern_finds_permuted_values_but_not_the_people(con, pattern_tables):
    orig, _, permuted = pattern_tables
    row = _pattern_row(con, "permuted")
    expected, found = _pattern_attack(orig, permuted, 20)
    assert row[3] == found == 30  # every segment's pattern is there, unmoved
    assert row[1] == pytest.approx(expected) and row[1] < 0.02  # but on other people


def test_linkage_pattern_finds_nothing_in_noise(con):
    con.execute("""CREATE TABLE o AS SELECT range AS id, (range * 37 + hash(range) % 30)::DOUBLE AS v FROM range(2000)""")
    con.execute("""CREATE TABLE noisy AS SELECT id, v + (hash(id, 'noise') % 2000)::DOUBLE AS v FROM o""")
    assert _pattern_row(con, "noisy")[1] < 0.02


@pytest.fixture(scope="module")
def synthetic():
    """15,000 rows: a log-normal income rounded to whole units (long right tail, ties), hours with 10 values
    (heavy ties), and a log-normal count; released by the default pipeline."""
    con = duckdb_anon.connect()
    con.execute("""CREATE TABLE syn AS SELECT id, round(exp(4 + 0.5 * z1))::DOUBLE AS income,
                   (38 + (hash(id, 3) % 10))::INTEGER AS hours, round(exp(2.5 + 0.5 * z2))::INTEGER AS visits
                   FROM (SELECT range AS id,
                           sqrt(-2 * ln((hash(range, 1) % 1000000 + 1) / 1e6)) * cos(2 * pi() * (hash(range, 2) % 1000000) / 1e6) AS z1,
                           sqrt(-2 * ln((hash(range, 4) % 1000000 + 1) / 1e6)) * cos(2 * pi() * (hash(range, 5) % 1000000) / 1e6) AS z2
                         FROM range(15000))""")
    names = duckdb_anon.preserve_patterns(con, "syn", ["income", "hours", "visits"], "pub")
    yield con, names
    con.close()


def test_default_pipeline_keeps_patterns_utility_and_protects(synthetic):
    con, names = synthetic
    for col, locs in names.items():
        assert con.execute(f"SELECT count(*) FROM check_localities('pub', '{col}', '{locs}')").fetchall()[0][0] == 0
    src = con.execute("SELECT * FROM syn ORDER BY id").df()
    pub = con.execute("SELECT * FROM pub ORDER BY id").df()
    assert (src["id"].values == pub["id"].values).all()
    rel_err = {c: (np.abs(pub[c] - src[c]) / src[c].abs()).mean() for c in names}
    overall = np.mean(list(rel_err.values()))
    assert 0.05 <= overall <= 0.2, rel_err
    for c in names:  # Spearman's rank correlation, recomputed with pandas
        assert src[c].rank().corr(pub[c].rank()) >= 0.9, c
    joint = con.execute("SELECT linked_to_own_record FROM linkage_rank('pub', 'syn', ['income', 'hours', 'visits'], 'id') "
                        "WHERE column_name = '*'").fetchall()[0][0]
    assert joint <= 0.02
    for c in names:
        assert con.execute(f"SELECT linked_to_own_record FROM linkage_pattern('pub', 'syn', '{c}', 'id')").fetchall()[0][0] <= 0.02
    con.execute("CREATE TABLE known AS SELECT * FROM syn WHERE id % 20 = 0")  # the adversary knows 750 people
    nearest = con.execute("SELECT linked_to_own_record FROM linkage_nearest('pub', 'known', ['income', 'hours', 'visits'], 'id')"
                          ).fetchall()[0][0]
    assert nearest <= 0.02
    # the same audits find the unprotected data: unchanged, most people link
    raw = con.execute("SELECT linked_to_own_record FROM linkage_nearest('syn', 'known', ['income', 'hours', 'visits'], 'id')"
                      ).fetchall()[0][0]
    assert raw > 5 * max(nearest, 0.01)
