"""deanonymize_evaluate()'s best-guess figures (top1_share, top5_share) and unique_record_share, checked
against a hand-made release and against an independent numpy scorer (independent.py); and the case they
exist for: a Mondrian release of ratings where no match stands out (reidentified ~0) while the adversary's
top candidate is usually the right person."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.independent import scoreboard_shares as independent_shares
from tests.conftest import examples

EVALUATE = ("SELECT reidentified, top1_share, top5_share, released_records, unique_record_share "
            "FROM deanonymize_evaluate(?, ?, ?)")


def test_ties_and_unreached_targets_count_as_a_uniform_draw(con):
    """Six records: 1, 2 and 3 release the same row, 4 rates item 10 differently, 5 and 6 rate other items."""
    con.execute("""CREATE TABLE pub AS SELECT * FROM (VALUES
        (1, 10, 5, DATE '2005-01-01'), (2, 10, 5, DATE '2005-01-01'), (3, 10, 5, DATE '2005-01-01'),
        (4, 10, 1, DATE '2005-06-01'), (5, 11, 3, DATE '2005-01-01'), (6, 12, 3, DATE '2005-01-01'))
        v(record_id, item, value, ts)""")
    con.execute("""CREATE TABLE known AS SELECT * FROM (VALUES
        (100, 10, 5, DATE '2005-01-01'),  -- is record 1: tied with 2 and 3 at the top
        (400, 10, 5, DATE '2005-01-01'),  -- is record 4: three records score more
        (500, 99, 3, DATE '2005-01-01'),  -- is record 5: knows an item nobody released, every record scores 0
        (600, 10, 5, DATE '2005-01-01'))  -- is record 6: scores 0, behind 4 records, tied with record 5
        v(target_id, item, value, ts)""")
    con.execute("CREATE TABLE truth AS SELECT * FROM (VALUES (100, 1), (400, 4), (500, 5), (600, 6)) v(target_id, record_id)")
    hit, top1, top5, records, unique = con.execute(EVALUATE, ["pub", "known", "truth"]).fetchall()[0]
    # top 1: 1/3 (a draw among three), 0, 1/6 (a draw among all six), 0
    assert top1 == pytest.approx((1 / 3 + 0 + 1 / 6 + 0) / 4)
    # top 5: five places for three tied records; two places left after three better; five of six; one place
    # left after four better, for two tied records
    assert top5 == pytest.approx((1 + 1 + 5 / 6 + 1 / 2) / 4)
    assert hit == 0  # no best record stands out: 1, 2 and 3 tie
    assert records == 6 and unique == pytest.approx(3 / 6)  # 4, 5 and 6 release rows no one else has


@settings(max_examples=examples(6), deadline=None)
@given(users=st.integers(30, 80), known=st.integers(1, 6), k=st.sampled_from([0, 2, 5]), seed=st.integers(0, 1000))
def test_shares_match_an_independent_scorer(module_con, users, known, k, seed):
    """Raw ratings (k = 0) and typed Mondrian releases of them: every target is in the release."""
    con = module_con
    con.execute("CREATE OR REPLACE TABLE r AS SELECT * FROM synthetic_ratings(?, items := 40, ratings_per_user := 6, seed := ?)",
                [users, seed])
    release = "r"
    if k:
        con.execute("CREATE OR REPLACE TABLE rel AS SELECT * FROM mondrian('r', ['item', 'value', 'ts'], ?, output := 'typed')", [k])
        release = "rel"
    con.execute("CREATE OR REPLACE TABLE a AS SELECT * FROM synthetic_aux('r', 15, known_items := ?, value_noise := 1, seed := ?)",
                [known, seed])
    con.execute("CREATE OR REPLACE TABLE t AS SELECT DISTINCT target_id, target_id AS record_id FROM a")
    _, top1, top5, records, unique = con.execute(EVALUATE, [release, "a", "t"]).fetchall()[0]
    expected = independent_shares(con, release, "a", typed=bool(k))
    assert (top1, top5, unique) == pytest.approx(expected)
    assert records == con.execute("SELECT count(DISTINCT record_id) FROM r").fetchall()[0][0]


# ---- the case the shares exist for ---------------------------------------------------------------------

def mondrian_ratings(con, k=25, output="typed"):
    """300 users' ratings released by Mondrian over (item, value, ts); 100 targets knowing 8 exact ratings
    with dates +-14 days."""
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(300, items := 300, ratings_per_user := 20, seed := 2)")
    con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], {k}, output := '{output}')")
    con.execute("CREATE TABLE known AS SELECT * FROM synthetic_aux('ratings', 100, known_items := 8, seed := 3)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM known")


def test_no_match_stands_out_yet_the_top_candidate_is_usually_right(con):
    """k = 25: the eccentricity-gated share reads ~0 while the best-scored record is the target's own for
    most targets, far above 1/k; the evaluation reports both."""
    mondrian_ratings(con)
    smallest = con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY item, value, ts)").fetchall()[0][0]
    assert smallest >= 25
    hit, top1, top5, records, unique = con.execute(EVALUATE, ["rel", "known", "truth"]).fetchall()[0]
    expected_top1, expected_top5, expected_unique = independent_shares(con, "rel", "known", typed=True)
    assert hit <= 0.02
    assert top1 == pytest.approx(expected_top1) and expected_top1 > 10 / 25
    assert top5 == pytest.approx(expected_top5) and top5 >= top1
    assert unique == pytest.approx(expected_unique) and expected_unique > 0.9
