"""The attack gate of k^m-anonymity: Scoreboard-RH with an adversary who knows m of a person's ratings
exactly (item, rating, day) finds the right record at most 1/k of the time, plus a sampling margin.

The release's labels (item intervals '0-4', rating bands '2-3', dates as years '2001' or months '2001-03')
are read here with plain Python, to recompute independently which records cover what the adversary knows."""
import math

import pandas as pd
import pytest

from duckdb_anon.km import km_anonymize

K, M, TARGETS = 5, 2, 200


def bounds(labels: pd.Series, parse) -> tuple[pd.Series, pd.Series]:
    """(lo, hi) of every label: 'lo-hi', 'v', '*' (everything); `parse` reads the ends."""
    lo = labels.map(lambda label: parse(label, False))
    hi = labels.map(lambda label: parse(label, True))
    return lo, hi


def number_end(label: str, high: bool) -> float:
    if label == "*":
        return math.inf if high else -math.inf
    lo, _, hi = label.partition("-")
    return float(hi or lo) if high else float(lo)


def day_end(label: str, high: bool) -> pd.Timestamp:
    """A day, a month 'YYYY-MM' or a year 'YYYY' as its first or last day."""
    if label == "*":
        return pd.Timestamp.max if high else pd.Timestamp.min
    start = pd.Timestamp(label + {4: "-01-01", 7: "-01"}.get(len(label), ""))
    if not high or len(label) == 10:
        return start
    return start + (pd.offsets.YearEnd(0) if len(label) == 4 else pd.offsets.MonthEnd(0))


def parsed(released: pd.DataFrame) -> pd.DataFrame:
    out = released.copy()
    for column, parse in (("item", number_end), ("value", number_end), ("ts", day_end)):
        out[column + "_lo"], out[column + "_hi"] = bounds(released[column], parse)
    return out


def covered(pairs: pd.DataFrame) -> pd.Series:
    """Rows of (known rating, released row) pairs where the row's labels cover the rating."""
    return ((pairs["item_lo"] <= pairs["k_item"]) & (pairs["k_item"] <= pairs["item_hi"])
            & (pairs["value_lo"] <= pairs["k_value"]) & (pairs["k_value"] <= pairs["value_hi"])
            & (pairs["ts_lo"] <= pairs["k_ts"]) & (pairs["k_ts"] <= pairs["ts_hi"]))


@pytest.fixture(scope="module")
def attacked(module_con):
    con = module_con
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(300, items := 20, ratings_per_user := 8, seed := 2)")
    con.execute("CREATE TABLE h_item AS SELECT * FROM hierarchy_intervals('ratings', 'item', [5, 20])")
    con.execute("CREATE TABLE h_value AS SELECT * FROM hierarchy_intervals('ratings', 'value', [2])")
    con.execute("CREATE TABLE h_ts AS SELECT * FROM hierarchy_dates('ratings', 'ts')")
    km_anonymize(con, "ratings", person="record_id", items=["item", "value", "ts"], k=K, m=M,
                 hierarchies={"item": "h_item", "value": "h_value", "ts": "h_ts"}, into="released",
                 person_output="raw")  # the evaluation matches the truth by id
    # the adversary: M of each target's ratings, exact rating and day
    con.execute(f"CREATE TABLE aux AS SELECT * FROM synthetic_aux('ratings', {TARGETS}, known_items := {M}, days_noise := 0, seed := 5)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT a.target_id, r.record_id FROM aux a "
                "LEFT JOIN (SELECT DISTINCT record_id FROM released) r ON r.record_id = a.target_id")
    return con


def test_the_top_candidate_is_right_at_most_one_in_k_times(attacked):
    con = attacked
    present, top1, top5 = con.execute("SELECT present_targets, top1_share, top5_share "
                                      "FROM deanonymize_evaluate('released', 'aux', 'truth')").fetchall()[0]
    # Every target counts at most 1/k when k^m holds and ties are shared (see the next test); the margin is
    # two standard errors of a mean of `present` draws with success chance 1/k, for the targets whose known
    # ratings were partly suppressed (their own record no longer covers them: their share is not 1/k-bounded
    # by construction).
    margin = 2 * math.sqrt((1 / K) * (1 - 1 / K) / present)
    assert present >= 60 and top1 <= 1 / K + margin
    assert top1 > 0 and top5 >= top1  # the attack ran on the release's labels


def test_targets_whose_knowledge_survives_tie_with_at_least_k_records(attacked):
    """An adversary who knows M ratings the release kept (covered by the target's own released rows): every
    record covering all of them scores the maximum, and there are at least k of them."""
    con = attacked
    released = parsed(con.execute("SELECT * FROM released").df())
    source = con.execute("SELECT record_id AS target_id, item AS k_item, value AS k_value, ts::TIMESTAMP AS k_ts, "
                         "hash(record_id, item, 7) AS pick FROM ratings").df()
    own = source.merge(released, left_on="target_id", right_on="record_id")
    kept = own[covered(own)].drop_duplicates(["target_id", "k_item"]).sort_values(["target_id", "pick"])
    aux = kept.groupby("target_id").head(M)
    aux = aux[aux.groupby("target_id")["k_item"].transform("size") == M][["target_id", "k_item", "k_value", "k_ts"]]
    assert aux["target_id"].nunique() >= 10
    pairs = aux.merge(released, how="cross")
    holding = pairs[covered(pairs)].groupby(["target_id", "record_id"])["k_item"].nunique()
    holders = holding[holding == M].groupby("target_id").size()
    assert holders.min() >= K  # k^m through the adversary's eyes: at least k records cover all they know
    support = {i: int(((released["item_lo"] <= i) & (i <= released["item_hi"])).sum()) for i in aux["k_item"].unique()}
    best_possible = aux.groupby("target_id")["k_item"].apply(lambda items: sum(2 / math.log(max(support[i], 2)) for i in items))
    con.register("aux_view", aux)
    con.execute("CREATE OR REPLACE TABLE aux_kept AS SELECT target_id, k_item AS item, k_value AS value, k_ts::DATE AS ts FROM aux_view")
    con.execute("CREATE OR REPLACE TABLE truth_kept AS SELECT DISTINCT target_id, target_id AS record_id FROM aux_kept")
    best = con.execute("SELECT target_id, score FROM deanonymize('released', 'aux_kept') ORDER BY target_id").df().set_index("target_id")
    # full credit for covering labels: the best score is 2 wt(i) summed over the known items
    assert best["score"].to_numpy() == pytest.approx(best_possible.loc[best.index].to_numpy(), abs=1e-8)
    top1 = con.execute("SELECT top1_share FROM deanonymize_evaluate('released', 'aux_kept', 'truth_kept')").fetchall()[0][0]
    assert top1 == pytest.approx((1 / holders).mean()) and top1 <= 1 / K


def test_the_labels_k_m_releases_publish_are_read_as_what_they_cover(module_con):
    """Months and years (hierarchy_dates' nodes) cover their days, '*' any date, and with `hierarchies` an item
    label naming a node of the item's hierarchy (a genre) covers every item below it: every record whose
    labels cover what the adversary knows scores the full credit."""
    con = module_con
    cases = [("2000-02", "2000-02-29 23:59:59", True), ("2000-02", "2000-03-01", False), ("2001", "2001-12-31 12:00", True),
             ("2001", "2002-01-01", False), ("2001", "2000-12-31", False), ("2001-01/2001-03", "2001-03-31", True)]
    for label, when, expected in cases:
        got = con.execute("SELECT anon_label_covers(anon_label_read(to_json(?::VARCHAR), 'temporal'), ?::VARCHAR, "
                          "anon_numeric_key(?::TIMESTAMP))", [label, when, when]).fetchall()[0][0]
        assert got is expected, (label, when)
    con.execute("CREATE TABLE genres AS SELECT * FROM (VALUES ('a', ['a', 'g1', '*']), ('b', ['b', 'g1', '*']), "
                "('c', ['c', '*'])) v(leaf, path)")
    con.execute("CREATE TABLE by_genre AS SELECT * FROM (VALUES (1, 'g1', '4', '*'), (2, 'g1', '4-5', '2001'), (3, 'b', '4', '2001'), "
                "(4, 'c', '4', '2001'), (5, '*', '4', '2001-05'), (6, 'g1', '4', '2002')) v(record_id, item, value, ts)")
    con.execute("CREATE TABLE knows_a AS SELECT 9 AS target_id, 'a' AS item, 4 AS value, DATE '2001-05-05' AS ts")
    scored = dict(con.execute("SELECT record_id, score FROM (SELECT unnest(top_candidates, recursive := true) FROM "
                              "anon_deanonymize('deanonymize', 'by_genre', 'knows_a', 1.5, 30, 1.5, true, {'item': 'genres'}))").fetchall())
    full = 2 / math.log(4)  # four released rows cover item 'a': g1 three times and '*'
    assert sorted(scored) == [1, 2, 5, 6] and all(scored[r] == pytest.approx(full) for r in (1, 2, 5))
    assert scored[6] < full  # 2002 is 120 days away
    with pytest.raises(Exception, match=r"deanonymize\(\): argument 'hierarchies'"):
        con.execute("SELECT * FROM deanonymize('by_genre', 'knows_a', hierarchies := {'value': 'genres'})").fetchall()
