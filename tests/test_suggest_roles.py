"""suggest_roles(): one suggestion per column with its evidence, recomputed here with pandas; the suggested
declarations run as SQL and leave no column undeclared."""
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import duckdb_anon
from tests.conftest import examples


def as_text(series):
    """Values as the text they compare by, NULL a value of its own."""
    return series.map(lambda v: "<NULL>" if pd.isna(v) else str(v))


def make_people(con, n=400):
    con.execute(f"""CREATE TABLE people AS SELECT range AS patient_id, 'Name ' || range AS full_name,
        'p' || range || '@mail.example' AS contact, '+1 555 ' || lpad((range * 7919 % 10000000)::VARCHAR, 7, '0') AS tel,
        lpad((range % 900 + 100)::VARCHAR, 3, '0') || '-' || lpad((range % 90 + 10)::VARCHAR, 2, '0') || '-' || lpad(range::VARCHAR, 4, '0') AS tax_code,
        DATE '1940-01-01' + (range * 37 % 20000)::INTEGER AS born, (10000 + range % 37)::VARCHAR AS zip,
        ['flu', 'asthma', 'none'][range % 3 + 1] AS diagnosis, (range * 104729 % 99991) * 1.5 AS weight_kg,
        range % 4 AS shift, 'clinic A' AS site FROM range({n})""")


def test_roles_and_their_evidence(con):
    make_people(con)
    got = con.execute("SELECT * FROM suggest_roles('people')").df().set_index("column_name")
    data = con.execute("SELECT * FROM people").df()
    assert list(got.index) == list(data.columns)  # one row per column, in the table's order
    roles = got["suggested_role"].to_dict()
    assert roles == {"patient_id": "identifier", "full_name": "identifier", "contact": "identifier", "tel": "identifier",
                     "tax_code": "identifier", "born": "quasi_identifier", "zip": "quasi_identifier",
                     "diagnosis": "sensitive", "weight_kg": "identifier", "shift": "quasi_identifier", "site": "insensitive"}
    assert got.loc["contact", "value_hint"] == "email" and got.loc["tel", "value_hint"] == "phone"
    assert got.loc["tax_code", "value_hint"] == "ssn" and got.loc["born", "value_hint"] == "date"
    assert "no evidence" in got.loc["shift", "reason"]  # fails closed: unknown means quasi-identifier
    for column in data.columns:
        counts = as_text(data[column]).value_counts()
        assert got.loc[column, "distinct_share"] == pytest.approx(len(counts) / len(data))
        assert got.loc[column, "unique_share"] == pytest.approx(counts[counts == 1].sum() / len(data))
    qis = [c for c, role in roles.items() if role == "quasi_identifier"]
    together = data[qis].astype(str).agg("|".join, axis=1).value_counts()
    assert got.loc[qis, "qi_unique_share"].tolist() == pytest.approx([together[together == 1].sum() / len(data)] * len(qis))
    assert got.loc[["patient_id", "diagnosis"], "qi_unique_share"].isna().all()


def test_adult_flags_the_survey_weight(adult_con):
    got = adult_con.execute("SELECT * FROM suggest_roles('adult')").df().set_index("column_name")
    weights = adult_con.execute("SELECT fnlwgt, count(*) AS n FROM adult GROUP BY fnlwgt").df()
    assert got.loc["fnlwgt", "unique_share"] == pytest.approx(weights.loc[weights.n == 1, "n"].sum() / 30162)
    assert "singles out 47.9 % of rows alone" in got.loc["fnlwgt", "reason"]
    assert got.loc["rid", "suggested_role"] == "identifier"
    assert (got["suggested_role"] != "insensitive").all()  # no Adult column is a constant


def test_income_and_outcome_columns_are_suggested_sensitive(adult_con):
    """Adult's income bracket (`class`, '<=50K' / '>50K') and capital gains are what the table says about
    people: sensitive, not quasi-identifiers. Income brackets are recognised by their values too, whatever
    the column's name; plain numbers (an age) are not amounts of money."""
    got = dict(adult_con.execute("SELECT column_name, suggested_role FROM suggest_roles('adult')").fetchall())
    assert got["class"] == got["capital_gain"] == got["capital_loss"] == "sensitive"
    assert got["age"] == got["sex"] == "quasi_identifier"
    adult_con.execute("CREATE OR REPLACE TEMP VIEW renamed AS SELECT age, class AS bracket, "
                      "'$' || (capital_gain + 1) AS amount, (capital_gain + 1) || 'k' AS earned FROM adult")
    rows = {r[0]: r[1:] for r in adult_con.execute(
        "SELECT column_name, suggested_role, value_hint FROM suggest_roles('renamed')").fetchall()}
    shares = adult_con.execute("SELECT avg((class IN ('<=50K', '>50K'))::INT) FROM adult").fetchall()[0][0]
    assert shares >= 0.8  # the bracket values are the money-like ones
    assert rows["bracket"] == rows["amount"] == rows["earned"] == ("sensitive", "money")
    assert rows["age"][0] == "quasi_identifier" and rows["age"][1] is None


def test_suggested_declarations_run_and_leave_nothing_undeclared(con):
    make_people(con)
    text = con.execute("SELECT suggest_roles_sql('people')").fetchall()[0][0]
    assert text.count("INSERT INTO anon_column_roles") == 11 and "INSERT INTO anon_policies" in text
    con.execute(text)
    assert duckdb_anon.apply_policies(con) == {}
    release = con.execute("SELECT * FROM anonymized('people')").df()
    assert len(release) == 400 and not {"patient_id", "full_name", "contact", "tel", "tax_code", "weight_kg"} & set(release.columns)
    assert release.groupby(["born", "zip", "shift"]).size().min() >= 10


def test_hostile_table_and_column_names_stay_literals(con):
    con.execute("""CREATE TABLE "odd 'name" AS SELECT range AS "it's", range % 3 AS "z""ip" FROM range(30)""")
    text = con.execute("""SELECT suggest_roles_sql('"odd ''name"')""").fetchall()[0][0]
    con.execute(text)
    assert con.execute("SELECT column_name FROM anon_column_roles ORDER BY 1").fetchall() == [("it's",), ('z"ip',)]


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["a", "b", None]), st.just(7)),
                min_size=1, max_size=30))
def test_evidence_on_small_tables_with_ties_nulls_and_constants(module_con, rows):
    con = module_con  # one installed connection for every example: each creates its table and drops it
    try:
        frame = pd.DataFrame(rows, columns=["x", "y", "c"])
        con.execute("CREATE TABLE t (x INTEGER, y VARCHAR, c INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        got = con.execute("SELECT * FROM suggest_roles('t')").df().set_index("column_name")
        assert list(got.index) == ["x", "y", "c"]
        for column in frame.columns:
            counts = as_text(frame[column]).value_counts()
            assert got.loc[column, "distinct_share"] == pytest.approx(len(counts) / len(frame))
            assert got.loc[column, "unique_share"] == pytest.approx(counts[counts == 1].sum() / len(frame))
            # one value says nothing until two rows show it
            assert (got.loc[column, "suggested_role"] == "insensitive") == (len(counts) == 1 and len(frame) >= 2)
    finally:
        con.execute("DROP TABLE IF EXISTS t")


@pytest.mark.parametrize("sql, words", [
    ("SELECT * FROM suggest_roles(NULL)", ["suggest_roles()", "'table_name'"]),
    ("SELECT * FROM suggest_roles(42)", ["suggest_roles()", "'table_name'"]),
    ("SELECT suggest_roles_sql(NULL)", ["suggest_roles()", "'table_name'"]),
    ("SELECT * FROM suggest_roles('nope')", ["nope"]),
])
def test_bad_input(module_con, sql, words):
    from tests.conftest import assert_error_names
    assert_error_names(module_con, sql, words)


# Names whose role the name alone says (an independent list, not anon_name_hint's regex).
NAMED = {"patient_id": "identifier", "name": "identifier", "ssn": "identifier", "email": "identifier",
         "phone": "identifier", "user_id": "identifier", "birth_date": "quasi_identifier", "zip": "quasi_identifier",
         "diagnosis": "sensitive"}


@st.composite
def tiny_tables(draw):
    """0, 1 or 2 rows (sometimes more), identifier-like columns plus `x` (no hint); values constant, NULL or few."""
    rows = draw(st.sampled_from([0, 1, 1, 2, 2, 3]))
    names = draw(st.lists(st.sampled_from(sorted(NAMED)), min_size=1, max_size=4, unique=True)) + ["x"]
    value = st.one_of(st.none(), st.sampled_from(["a", "b", "1", "123-45-6789", "a@b.co"]))
    columns = {}
    for column in names:
        constant = draw(st.booleans())
        first = draw(value)
        columns[column] = [first if constant else draw(value) for _ in range(rows)]
    return pd.DataFrame(columns, dtype=object)


@settings(max_examples=examples(20), deadline=None)
@given(frame=tiny_tables())
def test_small_tables_never_make_a_named_column_insensitive(module_con, frame):
    """An empty or one-row table, or a constant column, says nothing against a column's name: before, every
    column of such a table was suggested insensitive ('a single value'), identifiers included."""
    module_con.register("tiny_frame", frame)
    module_con.execute("CREATE OR REPLACE TABLE tiny AS SELECT * FROM tiny_frame")
    got = dict(module_con.execute("SELECT column_name, suggested_role FROM suggest_roles('tiny')").fetchall())
    for column, role in NAMED.items():
        if column in got:  # the name's role, or identifier when the values look like e-mails or SSNs
            assert got[column] in (role, "identifier"), (column, frame)
    # x has no name hint: insensitive exactly when two rows or more hold one value (NULL a value of its own),
    # unless its values themselves look like e-mails or SSNs
    distinct = as_text(frame["x"]).nunique()
    patterned = len(frame) > 0 and frame["x"].dropna().isin(["123-45-6789", "a@b.co"]).all() and frame["x"].notna().any()
    if not patterned:
        assert (got["x"] == "insensitive") == (len(frame) >= 2 and distinct == 1), frame
    assert "insensitive" not in {got[c] for c in NAMED if c in got}
