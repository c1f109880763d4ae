"""Category labels: the text mondrian() writes (sql/00_helpers.sql anon_label_escape, and the level driver's
copy in duckdb_anon/mondrian/plan.py) and how the audits read it back (sql/55_release_labels.sql). Values that
hold the label's own characters, or are spelled 'NULL' or '*', must neither merge two classes nor be misread."""
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, multiset_differences
from duckdb_anon import mondrian

# 10 examples: each runs mondrian() and the level driver (about 1.8 s together)
SETTINGS = settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TRICKY = ["a", "b", "a,b", "b,c", "c", "NULL", "*", "{a}", "x\\", "\\,", "}", ""]


def _table(con, values):
    con.register("frame", pd.DataFrame({"id": range(len(values)), "cat": pd.array(values, dtype="string")}))
    con.execute("CREATE OR REPLACE TABLE t AS SELECT id, cat::VARCHAR AS cat FROM frame ORDER BY id")
    con.unregister("frame")


def _read_back(con, release):
    """Per distinct label of the release: the set of values the audits' reader says it covers (None: NULL)."""
    rows = con.execute(f"SELECT label, b.elems, b.null_ok, b.star FROM (SELECT label, anon_label_read(to_json(label), "
                       f"'category') AS b FROM (SELECT DISTINCT cat AS label FROM {release}))").fetchall()
    return {label: (set(elems) | ({None} if null_ok else set()), star) for label, elems, null_ok, star in rows}


def _classes_by_label(con, release):
    """Per distinct label: the original values of the rows released with it (pandas, from the source)."""
    joined = con.execute(f"SELECT r.cat AS label, t.cat AS value FROM {release} r JOIN t USING (id)").df()
    joined = joined.astype(object).where(joined.notna(), None)
    return {None if pd.isna(label) else label: set(group["value"]) for label, group in joined.groupby("label", dropna=False)}


def _covered_by_label(con, release, values):
    """Per distinct label: which of the table's values the reader says it covers. (A single label also covers
    its own text as written, for raw releases whose values hold backslashes; the table never holds both.)"""
    present = set(values)
    return {label: covered & present for label, (covered, _) in _read_back(con, release).items()}


def test_sets_of_values_holding_commas_stay_two_classes(con):
    # appearance order a,b / c / a / b,c, ten rows each: k = 20 cuts between 'c' and 'a'
    _table(con, [["a,b", "c"][i % 2] for i in range(20)] + [["a", "b,c"][i % 2] for i in range(20)])
    con.execute("CREATE TABLE r AS SELECT * FROM mondrian('t', ['cat'], 20)")
    labels = con.execute("SELECT cat, count(*) FROM r GROUP BY cat ORDER BY cat").fetchall()
    assert len(labels) == 2 and [n for _, n in labels] == [20, 20], labels
    assert con.execute("SELECT classes, achieved_k FROM release_measures('r', ['cat'])").fetchall() == [(2, 20)]
    assert con.execute("SELECT count(*) FROM equivalence_classes('r', ['cat'])").fetchall()[0][0] == 2
    mondrian.mondrian(con, "t", ["cat"], 20, into="lv")
    assert multiset_differences(con, "r", "lv") == (0, 0)
    # linkage: everyone's values fit their own class of 20 only
    people, one_class, own, reidentified, candidates = con.execute(
        "SELECT * FROM linkage_classes('r', 't', ['cat'], 'id')").fetchall()[0]
    assert (people, one_class, own, candidates) == (40, 1.0, 1.0, 20.0)
    assert reidentified == pytest.approx(1 / 20)


def test_the_text_null_is_not_null(con):
    _table(con, ["NULL"] * 5 + [None] * 5 + ["*"] * 5)
    alone = con.execute("SELECT DISTINCT cat FROM mondrian('t', ['cat'], 5)").fetchall()
    together = con.execute("SELECT DISTINCT cat FROM mondrian('t', ['cat'], 10)").fetchall()
    assert len(alone) == 3 and (None,) in alone  # three classes, three labels; NULLs alone read NULL
    assert len(together) == 1  # 15 rows: one class holding all three
    for k in (5, 10):
        con.execute(f"CREATE OR REPLACE TABLE r AS SELECT * FROM mondrian('t', ['cat'], {k})")
        assert _covered_by_label(con, "r", ["NULL", None, "*"]) == _classes_by_label(con, "r")
        assert not any(star for _, star in _read_back(con, "r").values())  # the text '*' is not a suppressed row


@st.composite
def tricky_tables(draw):
    n = draw(st.integers(2, 30))
    values = draw(st.lists(st.one_of(st.none(), st.sampled_from(TRICKY)), min_size=n, max_size=n))
    return values, draw(st.integers(1, n)), draw(st.sampled_from(["appearance", "value"]))


@SETTINGS
@given(tricky_tables())
def test_labels_read_back_as_their_class_values_on_both_paths(con, case):
    values, k, order = case
    _table(con, values)
    con.execute(f"CREATE OR REPLACE TABLE r AS SELECT * FROM mondrian('t', ['cat'], {k}, categorical_order := '{order}')")
    assert _covered_by_label(con, "r", values) == _classes_by_label(con, "r")
    con.execute("DROP TABLE IF EXISTS lv")
    mondrian.mondrian(con, "t", ["cat"], k, into="lv", categorical_order=order)
    assert multiset_differences(con, "r", "lv") == (0, 0)
    # the audit finds everyone in their own class (strict Mondrian: one class per label)
    own = con.execute("SELECT own_class_found FROM linkage_classes('r', 't', ['cat'], 'id')").fetchall()[0][0]
    assert own == 1.0

