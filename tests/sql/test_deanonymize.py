"""Scoreboard-RH (Narayanan-Shmatikov) on synthetic sparse ratings: the paper's qualitative findings."""
import duckdb
import pytest

from tests.conftest import assert_error_names


@pytest.fixture
def ratings(con):
    con.execute("CREATE TABLE published AS SELECT * FROM synthetic_ratings(3000, items := 1000, ratings_per_user := 30, seed := 1)")
    return con


def rate(con, known, value_noise=0, with_dates=True, published="published", source="published"):
    con.execute(f"""CREATE OR REPLACE TABLE aux AS SELECT * FROM synthetic_aux('{source}', 200, known_items := {known},
                    value_noise := {value_noise}, with_dates := {str(with_dates).lower()}, seed := 5)""")
    con.execute("CREATE OR REPLACE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    return con.execute(f"SELECT reidentified FROM deanonymize_evaluate('{published}', 'aux', 'truth')").fetchone()[0]


def test_more_known_items_reidentify_more(ratings):
    # ratings known to +-1 and no dates: the attack is far from saturated at two items
    rates = [rate(ratings, m, value_noise=1, with_dates=False) for m in (2, 4, 8)]
    assert rates[0] < rates[1] < rates[2] and rates[2] > 0.7


def test_dates_beat_no_dates_and_exact_beats_noisy(ratings):
    assert rate(ratings, 2, value_noise=1, with_dates=True) > rate(ratings, 2, value_noise=1, with_dates=False) + 0.3
    assert rate(ratings, 2, value_noise=0, with_dates=False) > rate(ratings, 2, value_noise=1, with_dates=False) + 0.2


def test_perturbing_the_release_lowers_but_does_not_remove_reidentification(ratings):
    con = ratings
    con.execute("""CREATE TABLE perturbed AS SELECT record_id, item,
                   least(5, greatest(1, value + (hash(record_id, item, 'p') % 3)::INTEGER - 1)) AS value,
                   ts + ((hash(record_id, item, 'q') % 61)::INTEGER - 30) AS ts FROM published""")
    clean, noisy = rate(con, 4), rate(con, 4, published="perturbed")
    assert 0.2 < noisy < clean


def test_absent_targets_match_far_less_often_and_leave_more_uncertainty(ratings):
    con = ratings
    con.execute("CREATE TABLE missing AS SELECT DISTINCT record_id FROM published ORDER BY hash(record_id, 'gone') LIMIT 300")
    con.execute("CREATE TABLE partial AS SELECT * FROM published WHERE record_id NOT IN (SELECT record_id FROM missing)")
    con.execute("CREATE TABLE gone AS SELECT * FROM published WHERE record_id IN (SELECT record_id FROM missing)")
    con.execute("""CREATE TABLE aux AS SELECT * FROM synthetic_aux('gone', 100, known_items := 8, seed := 2)
                   UNION ALL SELECT * FROM synthetic_aux('partial', 100, known_items := 8, seed := 2)""")
    con.execute("""CREATE TABLE truth AS SELECT DISTINCT target_id,
                   CASE WHEN target_id IN (SELECT record_id FROM missing) THEN NULL ELSE target_id END AS record_id FROM aux""")
    present, hit, absent, false_rate = con.execute(
        "SELECT present_targets, reidentified, absent_targets, false_match_rate FROM deanonymize_evaluate('partial', 'aux', 'truth')").fetchone()
    assert (present, absent) == (100, 100)
    assert false_rate < hit / 3  # phi = 1.5 does not make false matches rare on this data (see README)
    ent = dict(con.execute("""SELECT t.record_id IS NULL, median(d.entropy_bits) FROM deanonymize('partial', 'aux') d
                              JOIN truth t USING (target_id) GROUP BY 1""").fetchall())
    assert ent[True] > ent[False]


def test_scores_by_hand_on_a_tiny_release(con):
    con.execute("""CREATE TABLE pub AS SELECT * FROM (VALUES (1, 10, 5, DATE '2005-01-01'), (1, 11, 3, DATE '2005-02-01'),
                   (2, 10, 4, DATE '2005-01-03'), (3, 12, 1, DATE '2005-03-01')) v(record_id, item, value, ts)""")
    con.execute("CREATE TABLE a AS SELECT 7 AS target_id, 10 AS item, 5 AS value, DATE '2005-01-01' AS ts")
    best, score, runner = con.execute("SELECT best_record, score, runner_up FROM deanonymize('pub', 'a')").fetchone()
    import math
    wt = 1 / math.log(2)  # item 10 is rated by two records
    assert best == 1 and score == pytest.approx(wt * 2)
    assert runner == pytest.approx(wt * (math.exp(-1 / 1.5) + math.exp(-2 / 30)))


# ---- bad input -------------------------------------------------------------------------------------------

def tiny_tables(con):
    """A small release, an aux table, truth, and copies of each lacking one needed column."""
    con.execute("CREATE TABLE pub AS SELECT * FROM synthetic_ratings(200, items := 80, ratings_per_user := 10, seed := 3)")
    con.execute("CREATE TABLE aux AS SELECT * FROM synthetic_aux('pub', 20, known_items := 4, seed := 4)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    con.execute("CREATE TABLE pub_no_id AS SELECT record_id AS rid, item, value, ts FROM pub")
    con.execute("CREATE TABLE aux_no_ts AS SELECT target_id, item, value FROM aux")
    con.execute("CREATE TABLE aux_no_value_no_ts AS SELECT target_id, item FROM aux")
    con.execute("CREATE TABLE truth_no_record AS SELECT target_id FROM truth")
    con.execute("CREATE TABLE people AS SELECT range AS id, range * 3 AS x, range % 7 AS y FROM range(60)")
    con.execute("CREATE TABLE people_no_y AS SELECT id, x FROM people")
    con.execute("CREATE TABLE people_no_id AS SELECT x, y FROM people")
    return con


@pytest.fixture
def tiny(con):
    return tiny_tables(con)


@pytest.fixture(scope="module")
def tiny_read_only(module_con):
    """The same tables once for the module, for the rows below that only read them."""
    return tiny_tables(module_con)


@pytest.mark.parametrize("call, words", [
    ("deanonymize('pub_no_id', 'aux')", ["deanonymize()", "'published_table'", "'record_id'"]),
    ("deanonymize('pub', 'aux_no_ts')", ["deanonymize()", "'aux_table'", "'ts'"]),
    ("deanonymize('pub', 'aux_no_value_no_ts')", ["deanonymize()", "'aux_table'", "'value'", "'ts'"]),
    ("deanonymize_evaluate('pub_no_id', 'aux', 'truth')", ["deanonymize_evaluate()", "'published_table'", "'record_id'"]),
    ("deanonymize_evaluate('pub', 'aux_no_ts', 'truth')", ["deanonymize_evaluate()", "'aux_table'", "'ts'"]),
    ("deanonymize_evaluate('pub', 'aux', 'truth_no_record')", ["deanonymize_evaluate()", "'truth_table'", "'record_id'"]),
    ("linkage_nearest('people', 'people_no_y', ['x', 'y'], 'id')", ["linkage_nearest()", "'aux_table'", "'y'"]),
    ("linkage_nearest('people_no_y', 'people', ['x', 'y'], 'id')", ["linkage_nearest()", "'release_table'", "'y'"]),
    ("linkage_nearest('people', 'people_no_id', ['x', 'y'], 'id')", ["linkage_nearest()", "'aux_table'", "'id'"]),
])
def test_missing_columns_are_named(tiny_read_only, call, words):
    assert_error_names(tiny_read_only, f"SELECT * FROM {call}", words)


def test_empty_aux_gives_no_targets_and_no_people(tiny):
    con = tiny
    con.execute("CREATE TABLE nobody AS SELECT * FROM aux LIMIT 0")
    assert con.execute("SELECT * FROM deanonymize('pub', 'nobody')").fetchall() == []
    # deanonymize_evaluate counts the truth table's targets: none of them is found
    present, hit, absent, false_rate, entropy = con.execute(
        "SELECT present_targets, reidentified, absent_targets, false_match_rate, median_entropy_bits "
        "FROM deanonymize_evaluate('pub', 'nobody', 'truth')").fetchone()
    assert present == con.execute("SELECT count(*) FROM truth").fetchone()[0] and hit == 0
    assert absent == 0 and false_rate is None and entropy is None
    con.execute("CREATE TABLE nobody_known AS SELECT * FROM people LIMIT 0")
    assert con.execute("SELECT * FROM linkage_nearest('people', 'nobody_known', ['x', 'y'], 'id')").fetchone() == (0, None, None)


def test_empty_aux_lacking_columns_is_still_an_error(tiny):
    tiny.execute("CREATE TABLE nobody_no_ts AS SELECT target_id, item, value FROM aux LIMIT 0")
    for call in ("deanonymize('pub', 'nobody_no_ts')", "deanonymize_evaluate('pub', 'nobody_no_ts', 'truth')"):
        with pytest.raises(duckdb.Error, match="aux_table"):
            tiny.execute(f"SELECT * FROM {call}").fetchall()


def test_column_names_are_case_insensitive_and_extra_columns_ignored(tiny):
    con = tiny
    con.execute("CREATE TABLE pub_upper AS SELECT 'x' AS note, value AS VALUE, ts AS TS, item AS Item, record_id AS Record_ID FROM pub")
    same = "SELECT target_id, best_record, score, eccentricity FROM deanonymize('{}', 'aux') ORDER BY target_id"
    upper, plain = con.execute(same.format("pub_upper")).fetchall(), con.execute(same.format("pub")).fetchall()
    assert [row[:2] for row in upper] == [row[:2] for row in plain]
    # sums of floats may differ in the last bits with the order the threads add them
    assert [row[2:] for row in upper] == [pytest.approx(row[2:]) for row in plain]


def test_linkage_nearest_pairs_qis_by_name_not_column_order(tiny):
    con = tiny
    con.execute("CREATE TABLE known AS SELECT id, x, y FROM people WHERE id % 4 = 0")
    con.execute("CREATE TABLE known_reordered AS SELECT y, id, x FROM known")
    ours = con.execute("SELECT * FROM linkage_nearest('people', 'known', ['x', 'y'], 'id')").fetchone()
    reordered = con.execute("SELECT * FROM linkage_nearest('people', 'known_reordered', ['y', 'x'], 'id')").fetchone()
    assert reordered == ours and ours[0] == 15
    assert ours[1] == 1.0  # exact values of distinct (x, y) rows: everyone's nearest record is their own


# ---- generalized releases --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["text", "typed"])
def test_scores_by_hand_on_a_generalized_release(con, shape):
    """Labels cover ranges: a record holds item 10 when its item label covers 10, and the value and date
    terms use the gap to the covered range (0 inside)."""
    if shape == "text":
        rows = "(1, '10-11', '4-5', '2005-01-01/2005-01-10'), (2, '10', '1-2', '2005-02-01'), (3, '12-13', '5', '2005-01-05')"
    else:
        def s(lo, hi, kind="INTEGER"):
            return f"{{'lo': {lo}::{kind}, 'hi': {hi}::{kind}, 'mean': NULL::DOUBLE}}"
        rows = ", ".join([
            f"(1, {s(10, 11)}, {s(4, 5)}, {s(repr('2005-01-01'), repr('2005-01-10'), 'DATE')})",
            f"(2, {s(10, 10)}, {s(1, 2)}, {s(repr('2005-02-01'), repr('2005-02-01'), 'DATE')})",
            f"(3, {s(12, 13)}, {s(5, 5)}, {s(repr('2005-01-05'), repr('2005-01-05'), 'DATE')})"])
    con.execute(f"CREATE TABLE pub AS SELECT * FROM (VALUES {rows}) v(record_id, item, value, ts)")
    con.execute("CREATE TABLE a AS SELECT 7 AS target_id, 10 AS item, 5 AS value, DATE '2005-01-05' AS ts")
    best, score, runner = con.execute("SELECT best_record, score, runner_up FROM deanonymize('pub', 'a')").fetchone()
    import math
    wt = 1 / math.log(2)  # two records hold item 10
    assert best == 1 and score == pytest.approx(wt * 2)
    assert runner == pytest.approx(wt * (math.exp(-3 / 1.5) + math.exp(-27 / 30)))


def test_mondrian_release_of_ratings_still_reidentifies(con):
    """k enforced row by row over (item, value, ts) leaves each user's set of rows distinctive: the attack
    reads both output shapes alike and still re-identifies most users, if fewer than on the raw ratings."""
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(300, items := 200, ratings_per_user := 10, seed := 2)")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], 5)")
    con.execute("CREATE TABLE rel_typed AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], 5, output := 'typed')")
    assert con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY item, value, ts)").fetchone()[0] >= 5
    con.execute("CREATE TABLE aux AS SELECT * FROM synthetic_aux('ratings', 100, known_items := 6, seed := 3)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    rates = {t: con.execute(f"SELECT reidentified FROM deanonymize_evaluate('{t}', 'aux', 'truth')").fetchone()[0]
             for t in ("ratings", "rel", "rel_typed")}
    assert rates["rel"] == pytest.approx(rates["rel_typed"])
    assert 0.5 < rates["rel"] <= rates["ratings"]


# realistic_ratings(): the shape of public movie ratings, recomputed here in plain SQL over its output.

@pytest.fixture(scope="module")
def realistic(module_con):
    module_con.execute("CREATE TABLE realistic AS SELECT * FROM realistic_ratings(1000, seed := 3)")
    return module_con


def test_realistic_ratings_are_records_of_distinct_items(realistic):
    people, repeats, outside = realistic.execute("""
        SELECT count(DISTINCT record_id),
               (SELECT count(*) FROM (SELECT record_id, item FROM realistic GROUP BY ALL HAVING count(*) > 1)),
               count(*) FILTER (WHERE item NOT BETWEEN 0 AND 1681 OR value NOT BETWEEN 1 AND 5
                                OR ts NOT BETWEEN DATE '1997-09-20' AND DATE '1997-09-20' + 213)
        FROM realistic""").fetchall()[0]
    assert (people, repeats, outside) == (1000, 0, 0)


def test_realistic_activity_is_long_tailed(realistic):
    least, median, mean, most = realistic.execute(
        "SELECT min(n), median(n), avg(n), max(n) FROM (SELECT count(*) AS n FROM realistic GROUP BY record_id)").fetchall()[0]
    assert least >= 20 and 55 <= median <= 75 and mean > median + 10 and 400 <= most <= 740


def test_realistic_item_popularity_is_long_tailed(realistic):
    top, median, rare, rho = realistic.execute("""
        SELECT max(n), median(n), count(*) FILTER (WHERE n < 5), corr(item, n)
        FROM (SELECT item, count(*) AS n FROM realistic GROUP BY item)""").fetchall()[0]
    assert top > 400 and median < 40 and rare >= 20  # one item rated by most, most items by few
    assert abs(rho) < 0.1  # an id says nothing of its popularity


def test_realistic_ratings_are_skewed_and_independent_of_the_item(realistic):
    shares = dict(realistic.execute(
        "SELECT value, count(*) / sum(count(*)) OVER () FROM realistic GROUP BY value").fetchall())
    for value, expected in {1: 0.06, 2: 0.11, 3: 0.27, 4: 0.34, 5: 0.22}.items():
        assert abs(shares[value] - expected) < 0.01
    # draws of one row come from hashes differing in a tag: they must not correlate
    assert abs(realistic.execute("SELECT corr(item, value) FROM realistic").fetchall()[0][0]) < 0.03


def test_realistic_dates_come_in_bursts(realistic):
    days, first_share, per_person = realistic.execute("""
        SELECT (SELECT count(DISTINCT ts) FROM realistic),
               median(top / total), median(dates)
        FROM (SELECT record_id, max(n) AS top, sum(n) AS total, count(*) AS dates
              FROM (SELECT record_id, ts, count(*) AS n FROM realistic GROUP BY ALL) GROUP BY record_id)""").fetchall()[0]
    assert days == 214  # every day of the window is someone's
    assert first_share > 0.3 and 2 <= per_person <= 10  # most of a record on one day, a few days each


def test_realistic_ratings_follow_the_seed_and_fit_small_item_sets(con):
    one = con.execute("SELECT * FROM realistic_ratings(30, seed := 1) ORDER BY ALL").fetchall()
    assert one == con.execute("SELECT * FROM realistic_ratings(30, seed := 1) ORDER BY ALL").fetchall()
    assert one != con.execute("SELECT * FROM realistic_ratings(30, seed := 2) ORDER BY ALL").fetchall()
    sizes = con.execute("SELECT min(n), max(n), max(top) FROM (SELECT count(*) AS n, max(item) AS top "
                        "FROM realistic_ratings(50, items := 5) GROUP BY record_id)").fetchall()[0]
    assert sizes == (2, 2, 4)  # 44 % of 5 items, within the item ids
