"""linkage_classes(): linkage of known people against a generalized release, checked against a plain
pandas/numpy recomputation that parses the labels itself (nothing is read from our macros but the release)."""
import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, assert_error_names

QIS = ["age", "education_num", "sex", "race"]
NUMERIC = {"age", "education_num"}
QI_SQL = "[" + ", ".join(f"'{q}'" for q in QIS) + "]"
METRICS = ["people", "consistent_with_one_class", "own_class_found", "reidentified", "mean_candidates"]


# ---- the independent recomputation -------------------------------------------------------------------

def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def covers(label, value, numeric):
    """Does a release label cover a known value? Written from the label conventions, not from the SQL."""
    if _missing(value):
        if label is None or label == "*":
            return True
        return label.endswith(",NULL") if numeric else (label.startswith("{") and "NULL" in label[1:-1].split(","))
    if label is None:
        return False
    if label == "*":
        return True
    if numeric:
        body = label[:-len(",NULL")] if label.endswith(",NULL") else label
        for i in range(1, len(body)):  # a range's separator is the '-' that follows a digit
            if body[i] == "-" and body[i - 1].isdigit():
                return float(body[:i]) <= float(value) <= float(body[i + 1:])
        return float(body) == float(value)
    if label.startswith("{") and label.endswith("}"):
        return str(value) in label[1:-1].split(",")
    return label == str(value)


def _cells(frame, column):
    return [None if _missing(v) else v for v in frame[column].astype(object)]


def _codes(items):
    """Distinct items (None included) -> position, in order of first appearance."""
    return {item: i for i, item in enumerate(dict.fromkeys(items))}


def pandas_linkage(release, aux, qis, numeric, id_col):
    """The five figures of linkage_classes(), by brute force over (person, class) with numpy masks."""
    labels = {q: [None if v is None else str(v) for v in _cells(release, q)] for q in qis}
    keys = list(zip(*(labels[q] for q in qis)))
    class_of_key = {}
    row_class = np.array([class_of_key.setdefault(key, len(class_of_key)) for key in keys])
    sizes = np.bincount(row_class, minlength=len(class_of_key))
    class_of_id = dict(zip(_cells(release, id_col), row_class))
    class_keys = list(class_of_key)
    mask = np.ones((len(aux), len(class_keys)), dtype=bool)
    for j, q in enumerate(qis):  # per QI: a cover table of distinct values x distinct labels, then indexed
        values, class_labels = _cells(aux, q), [key[j] for key in class_keys]
        value_index, label_index = _codes(values), _codes(class_labels)
        table = np.array([[covers(lab, val, q in numeric) for lab in label_index] for val in value_index], dtype=bool)
        table = table.reshape(len(value_index), len(label_index))
        mask &= table[np.ix_([value_index[v] for v in values], [label_index[lab] for lab in class_labels])]
    candidates = mask @ sizes
    own = [class_of_id.get(i) for i in _cells(aux, id_col)]
    found = np.array([o is not None and mask[p, o] for p, o in enumerate(own)], dtype=bool)
    if len(aux) == 0:
        return {"people": 0}
    return {"people": len(aux),
            "consistent_with_one_class": float(np.mean(mask.sum(axis=1) == 1)),
            "own_class_found": float(found.mean()),
            "reidentified": float(np.mean(np.where(found, 1.0 / np.maximum(candidates, 1), 0.0))),
            "mean_candidates": float(candidates.mean())}


def linkage(con, release, aux, qis=QI_SQL, id_col="rid", **extra):
    args = "".join(f", {k} := {v}" for k, v in extra.items())
    row = con.execute(f"SELECT * FROM linkage_classes('{release}', '{aux}', {qis}, '{id_col}'{args})").fetchone()
    return dict(zip(METRICS, row))


def assert_same(ours, theirs):
    assert ours["people"] == theirs["people"]
    for m in METRICS[1:]:
        assert ours[m] == pytest.approx(theirs[m], abs=1e-9), m


# ---- Adult ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def adult():
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    duckdb_anon.load_adult(con, "adult")
    source = con.execute("SELECT * FROM adult").df()
    aux = source.sample(400, random_state=11)[["rid"] + QIS]
    con.register("aux_frame", aux)
    con.execute("CREATE TABLE aux AS SELECT * FROM aux_frame")
    con.unregister("aux_frame")
    for k in (2, 10, 50):
        con.execute(f"CREATE TABLE release_k{k} AS SELECT * FROM mondrian('adult', {QI_SQL}, {k})")
    yield con, source, aux
    con.close()


@pytest.mark.parametrize("k", [2, 10, 50])
def test_mondrian_release_finds_everyone_and_respects_one_over_k(adult, k):
    con, _, aux = adult
    release = con.execute(f"SELECT * FROM release_k{k}").df()
    theirs = pandas_linkage(release, aux, QIS, NUMERIC, "rid")
    ours = linkage(con, f"release_k{k}", "aux")
    assert_same(ours, theirs)
    assert ours["own_class_found"] == 1.0
    assert theirs["reidentified"] <= 1.0 / k + 1e-12  # every own class holds at least k rows
    assert ours["mean_candidates"] >= k


def test_original_data_reidentifies_far_more_than_any_release(adult):
    con, source, aux = adult
    ours = linkage(con, "adult", "aux")
    # Labels are the exact values: a person's candidates are the rows sharing their whole QI tuple.
    tuples = source.groupby(QIS).size().rename("same").reset_index()
    expected = 1.0 / aux.merge(tuples, on=QIS, how="left")["same"]
    assert ours["reidentified"] == pytest.approx(expected.mean())
    assert ours["own_class_found"] == 1.0 and ours["consistent_with_one_class"] == 1.0
    assert ours["reidentified"] > 2 * linkage(con, "release_k2", "aux")["reidentified"]


def test_larger_k_reidentifies_less(adult):
    con, _, _ = adult
    rates = [linkage(con, f"release_k{k}", "aux")["reidentified"] for k in (2, 10, 50)]
    assert rates[0] > rates[1] > rates[2] > 0


def test_relaxed_mondrian_classes_overlap(adult):
    """Relaxed Mondrian shares tied values between classes: a person can then fit several classes."""
    con, _, aux = adult
    con.execute(f"CREATE OR REPLACE TEMP TABLE relaxed AS SELECT * FROM mondrian('adult', {QI_SQL}, 10, 'relaxed')")
    ours = linkage(con, "relaxed", "aux")
    assert_same(ours, pandas_linkage(con.execute("SELECT * FROM relaxed").df(), aux, QIS, NUMERIC, "rid"))
    assert ours["own_class_found"] == 1.0 and ours["consistent_with_one_class"] < 1.0


# ---- random small tables ---------------------------------------------------------------------------------

@st.composite
def small_cases(draw):
    n = draw(st.integers(1, 24))
    pool = draw(st.lists(st.one_of(st.none(), st.integers(-6, 6)), min_size=1, max_size=5))
    a = [draw(st.sampled_from(pool)) for _ in range(n)]  # few values: ties, negatives, NULL
    b = [7] * n if draw(st.booleans()) else draw(st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n))
    table = pd.DataFrame({"id": range(n), "a": a, "b": b, "c": c})
    k = draw(st.integers(1, n))
    mode = draw(st.sampled_from(["strict", "relaxed"]))
    # the adversary's people: some rows of the table, some of them known with one wrong (or unknown) value
    picked = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    aux = table.iloc[picked].astype(object).reset_index(drop=True)
    for i in range(len(aux)):
        column = draw(st.sampled_from([None, "a", "b", "c"]))
        if column == "c":
            aux.loc[i, "c"] = draw(st.sampled_from(["x", "y", "z", "w", None]))
        elif column:
            aux.loc[i, column] = draw(st.one_of(st.none(), st.integers(-9, 9)))
    return table, aux, k, mode


@pytest.fixture(scope="module")
def scratch():
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    yield con
    con.close()


def _load(con, name, frame):
    con.execute(f"CREATE OR REPLACE TABLE {name} (id INTEGER, a INTEGER, b INTEGER, c VARCHAR)")
    rows = [[None if _missing(v) else v for v in row] for row in frame.astype(object).itertuples(index=False)]
    if rows:
        con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", rows)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])  # each runs Mondrian
@given(small_cases())
def test_matches_pandas_on_random_small_tables(scratch, case):
    table, aux, k, mode = case
    con = scratch
    _load(con, "t", table)
    _load(con, "t_aux", aux)
    con.execute(f"CREATE OR REPLACE TABLE t_rel AS SELECT * FROM mondrian('t', ['a', 'b', 'c'], {k}, '{mode}')")
    release = con.execute("SELECT * FROM t_rel").df()
    ours = linkage(con, "t_rel", "t_aux", qis="['a', 'b', 'c']", id_col="id")
    assert_same(ours, pandas_linkage(release, aux, ["a", "b", "c"], {"a", "b"}, "id"))
    # the unaltered table as its own release: labels are the exact values
    ours = linkage(con, "t", "t_aux", qis="['a', 'b', 'c']", id_col="id")
    assert_same(ours, pandas_linkage(table, aux, ["a", "b", "c"], {"a", "b"}, "id"))


# ---- another tool's release: negatives, dates, ',NULL', '*', hierarchies ------------------------------------

def handmade_tables(con):
    con.execute("""CREATE TABLE h AS SELECT * FROM (VALUES ('x', ['x', 'xy', '*']), ('y', ['y', 'xy', '*']),
                   ('z', ['z', 'zz', '*'])) v(leaf, path)""")
    con.execute("""CREATE TABLE rel AS SELECT * FROM (VALUES
        (1, '-5--3', '2020-01-01/2020-01-31', 'xy'), (2, '-5--3', '2020-01-01/2020-01-31', 'xy'),
        (3, '-2-4,NULL', '2020-02-01', '*'), (4, '-2-4,NULL', '2020-02-01', '*'),
        (5, '*', '2020-01-15/2020-03-01,NULL', 'zz')) v(id, a, d, c)""")
    con.execute("""CREATE TABLE people AS SELECT * FROM (VALUES
        (1, -4, DATE '2020-01-10', 'x'), (3, NULL, DATE '2020-02-01', 'z'),
        (5, 100, NULL, 'z'), (9, -6, DATE '2020-01-10', 'x')) v(id, a, d, c)""")
    return con


@pytest.fixture
def handmade(con):
    return handmade_tables(con)


@pytest.fixture(scope="module")
def handmade_read_only(module_con):
    """The same tables once for the module, with copies of `people` lacking a column, for the bad-input rows."""
    handmade_tables(module_con)
    module_con.execute("CREATE TABLE no_id AS SELECT a, d, c FROM people")
    module_con.execute("CREATE TABLE no_qi AS SELECT id, a, d FROM people")
    return module_con


def test_labels_by_hand_with_and_without_hierarchies(handmade):
    qis = "['a', 'd', 'c']"
    # With the hierarchy: person 1 fits only rows 1-2 (-4 in -5..-3, 10 Jan in January, x under xy);
    # person 3 (age unknown) fits rows 3-4 (',NULL', '*') and row 5 (1 Feb in range, z under zz);
    # person 5 fits row 5 only ('*', date unknown but ',NULL'); person 9 (-6, 10 Jan) fits nothing.
    ours = linkage(handmade, "rel", "people", qis=qis, id_col="id", hierarchies="{'c': 'h'}")
    assert ours == pytest.approx({"people": 4, "consistent_with_one_class": 2 / 4, "own_class_found": 3 / 4,
                                  "reidentified": (1 / 2 + 1 / 3 + 1 + 0) / 4, "mean_candidates": (2 + 3 + 1 + 0) / 4})
    # A MAP works as well, and QI names are case-insensitive.
    assert linkage(handmade, "rel", "people", qis=qis, id_col="ID", hierarchies="MAP {'C': 'h'}") == ours
    # Without it, node names are plain categories: only '*' still covers, so only person 3 fits (rows 3-4).
    plain = linkage(handmade, "rel", "people", qis=qis, id_col="id")
    assert plain == pytest.approx({"people": 4, "consistent_with_one_class": 1 / 4, "own_class_found": 1 / 4,
                                   "reidentified": (1 / 2) / 4, "mean_candidates": 2 / 4})


# ---- bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, words", [
    ("linkage_classes('rel', 'no_id', ['a', 'd', 'c'], 'id')", ["linkage_classes()", "'aux_table'", "'id'"]),
    ("linkage_classes('rel', 'no_qi', ['a', 'd', 'c'], 'id')", ["linkage_classes()", "'aux_table'", "'c'"]),
    ("linkage_classes('no_qi', 'people', ['a', 'd', 'c'], 'id')", ["linkage_classes()", "'release_table'", "'c'"]),
    ("linkage_classes('rel', 'people', 'a', 'id')", ["linkage_classes()", "'qis'", "list"]),
    ("linkage_classes('rel', 'people', [], 'id')", ["linkage_classes()", "'qis'", "at least one"]),
    ("linkage_classes('rel', 'people', ['a', 'A'], 'id')", ["linkage_classes()", "'qis'", "twice"]),
    ("linkage_classes('rel', 'people', ['a'], 1)", ["linkage_classes()", "'id_column'"]),
    ("linkage_classes('rel', 'people', ['a', 'id'], 'id')", ["linkage_classes()", "'id_column'"]),
    ("linkage_classes('rel', 'people', ['a'], 'id', hierarchies := 'h')", ["linkage_classes()", "'hierarchies'"]),
    ("linkage_classes('rel', 'people', ['a'], 'id', hierarchies := {'c': 'h'})", ["linkage_classes()", "'hierarchies'"]),
])
def test_bad_arguments_are_named(handmade_read_only, call, words):
    assert_error_names(handmade_read_only, f"SELECT * FROM {call}", words)


def test_empty_aux_gives_zero_people(handmade):
    handmade.execute("CREATE TABLE nobody AS SELECT * FROM people LIMIT 0")
    ours = linkage(handmade, "rel", "nobody", qis="['a', 'd', 'c']", id_col="id")
    assert ours["people"] == 0 and all(ours[m] is None for m in METRICS[1:])
    # an empty aux still has to have the columns
    handmade.execute("CREATE TABLE nobody_no_id AS SELECT a, d, c FROM people LIMIT 0")
    with pytest.raises(duckdb.Error, match="aux_table"):
        linkage(handmade, "rel", "nobody_no_id", qis="['a', 'd', 'c']", id_col="id")


def test_plain_duckdb_client_can_run_it(tmp_path, handmade):
    path = str(tmp_path / "audit.duckdb")
    with duckdb_anon.connect(path) as con:
        con.execute("CREATE TABLE rel AS SELECT range AS id, (range // 3)::VARCHAR AS a FROM range(6)")
        con.execute("CREATE TABLE people AS SELECT range AS id, (range // 3)::INTEGER AS a FROM range(6)")
    with duckdb.connect(path) as plain:
        row = plain.execute("SELECT * FROM linkage_classes('rel', 'people', ['a'], 'id')").fetchone()
    assert row[0] == 6 and row[3] == pytest.approx(1 / 3)  # two classes of three exact values each


def test_dates_timestamps_and_negative_numbers_from_mondrian(con):
    """Every person's own row stays consistent with mondrian's 'lo/hi' date labels and negative ranges."""
    con.execute("""CREATE TABLE events AS SELECT range AS id, (range % 13) - 9 AS delta,
                   DATE '2021-03-01' + (range * 7 % 40)::INTEGER AS day,
                   TIMESTAMP '2021-03-01 08:00:00' + INTERVAL (range * 37 % 50) MINUTE AS at,
                   CASE WHEN range % 11 = 0 THEN NULL ELSE range % 4 END AS grade
                   FROM range(120)""")
    for k in (3, 8):
        con.execute(f"CREATE OR REPLACE TABLE events_rel AS SELECT * FROM mondrian('events', ['delta', 'day', 'at', 'grade'], {k})")
        labels = con.execute("SELECT day, delta FROM events_rel").fetchall()
        assert any("/" in day for day, _ in labels) and any(delta.startswith("-") for _, delta in labels)
        ours = linkage(con, "events_rel", "events", qis="['delta', 'day', 'at', 'grade']", id_col="id")
        assert ours["people"] == 120 and ours["own_class_found"] == 1.0
        assert ours["reidentified"] <= 1.0 / k + 1e-12


def test_linkage_against_a_hierarchical_mondrian_release(con):
    import duckdb_anon
    duckdb_anon.load_adult(con, "adult")
    tables = duckdb_anon.load_adult_hierarchies(con)
    hierarchies = "{'workclass': 'h_workclass', 'marital_status': 'h_marital_status'}"
    qis = ["age", "workclass", "marital_status", "sex"]
    qi_list = "[" + ", ".join(f"'{q}'" for q in qis) + "]"
    con.execute(f"CREATE TABLE rel AS SELECT * FROM mondrian('adult', {qi_list}, 10, hierarchies := {hierarchies})")
    con.execute("CREATE TABLE known AS SELECT * FROM adult USING SAMPLE 300 ROWS (reservoir, 3)")
    result = con.execute(f"SELECT * FROM linkage_classes('rel', 'known', {qi_list}, 'rid', hierarchies := {hierarchies})").df().iloc[0]
    # independently: a person fits a released row when each label covers their value (hierarchy labels: the
    # node lies on the leaf's path, read here from the hierarchy tables; numbers: the range)
    paths = {qi: dict(con.execute(f"SELECT leaf, path FROM {tables[qi]}").fetchall()) for qi in ("workclass", "marital_status")}
    release = con.execute("SELECT * FROM rel").df()
    known = con.execute("SELECT * FROM known").df()
    lo_hi = release["age"].astype(str).str.extract(r"^(\d+)(?:-(\d+))?$").astype(float)
    lo_hi[1] = lo_hi[1].fillna(lo_hi[0])
    shares = []
    for _, person in known.iterrows():
        fits = ((lo_hi[0] <= person["age"]) & (person["age"] <= lo_hi[1])
                & release["workclass"].isin(paths["workclass"][person["workclass"]])
                & release["marital_status"].isin(paths["marital_status"][person["marital_status"]])
                & ((release["sex"] == person["sex"]) | release["sex"].str.contains(person["sex"], regex=False)))
        own = fits & (release["rid"] == person["rid"])
        shares.append(1 / fits.sum() if own.any() else 0.0)
    assert result["people"] == 300 and result["own_class_found"] == 1.0
    assert result["reidentified"] == pytest.approx(sum(shares) / len(shares)) and result["reidentified"] <= 0.1


# ---- both release shapes, releases without ids ---------------------------------------------------------

@pytest.fixture
def mixed(con):
    """60 people with a number, a category and a date; a strict Mondrian release of them in both shapes
    (categories coded by value, so the typed bounds lo..hi name a run of categories in value order)."""
    con.execute("""CREATE TABLE people AS SELECT range AS id, (range * 7) % 23 AS age,
                   ['a', 'b', 'c', 'd'][range % 4 + 1] AS town, DATE '2020-01-01' + (range * 5 % 31)::INTEGER AS day
                   FROM range(60)""")
    for shape in ("text", "typed"):
        con.execute(f"""CREATE TABLE rel_{shape} AS SELECT * FROM mondrian('people', ['age', 'town', 'day'], 4,
                        output := '{shape}', categorical_order := 'value')""")
    return con


def test_typed_and_text_releases_give_the_same_audit(mixed):
    qis = "['age', 'town', 'day']"
    text = mixed.execute(f"SELECT * FROM linkage_classes('rel_text', 'people', {qis}, 'id')").fetchone()
    typed = mixed.execute(f"SELECT * FROM linkage_classes('rel_typed', 'people', {qis}, 'id')").fetchone()
    assert text == pytest.approx(typed) and text[2] == 1.0 and text[3] <= 1 / 4 + 1e-12
    # without ids (the ids dropped from the release) every person counts as present: the same figures here
    mixed.execute("CREATE TABLE rel_no_id AS SELECT * EXCLUDE (id) FROM rel_text")
    assert mixed.execute(f"SELECT * FROM linkage_classes('rel_no_id', 'people', {qis}, NULL)").fetchone() == pytest.approx(text)
    near_text = mixed.execute(f"SELECT * FROM linkage_nearest('rel_text', 'people', {qis}, 'id')").fetchone()
    near_typed = mixed.execute(f"SELECT * FROM linkage_nearest('rel_typed', 'people', {qis}, 'id')").fetchone()
    assert near_text == pytest.approx(near_typed)
    # a person lies at distance 0 from exactly the rows whose labels cover them, so on a strict release the
    # nearest-record linkage equals the class linkage: 1 / (rows of the own class)
    sizes = mixed.execute("SELECT count(*) OVER (PARTITION BY age, town, day) FROM rel_text").fetchall()
    assert near_text[1] == pytest.approx(np.mean([1 / n for (n,) in sizes])) == pytest.approx(text[3])


def test_linkage_nearest_matches_categories_exactly(con):
    """Numbers scaled by the release's range, categories 0 on an exact match and 1 otherwise: recomputed
    with numpy over every (person, record) pair."""
    rng = np.random.default_rng(7)
    n = 80
    release = pd.DataFrame({"id": range(n), "x": rng.integers(0, 50, n).astype(float),
                            "c": rng.choice(["red", "green", "blue"], n)})
    release["x"] += rng.normal(0, 3, n).round(1)  # a perturbed release of the people below
    people = release.copy()
    people["x"] = people["x"].round(0)
    people = people.iloc[::2]
    con.register("release_df", release)
    con.register("people_df", people)
    con.execute("CREATE TABLE rel AS SELECT * FROM release_df")
    con.execute("CREATE TABLE known AS SELECT * FROM people_df")
    span = release["x"].max() - release["x"].min()
    places, shares = [], []
    for _, person in people.iterrows():
        dist = ((release["x"] - person["x"]) / span) ** 2 + (release["c"] != person["c"]).astype(float)
        own = dist[release["id"] == person["id"]].iloc[0]
        places.append(1 + (dist < own).sum())
        shares.append(1 / (dist == own).sum() if (dist < own).sum() == 0 else 0.0)
    row = con.execute("SELECT * FROM linkage_nearest('rel', 'known', ['x', 'c'], 'id')").fetchone()
    assert row[0] == len(people)
    assert row[1] == pytest.approx(np.mean(shares)) and row[2] == pytest.approx(np.mean(places))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 8)), st.sampled_from(["red", "blue", None])), min_size=1, max_size=30),
       st.lists(st.tuples(st.one_of(st.none(), st.integers(-2, 10)), st.sampled_from(["red", "blue", "green", None])),
                min_size=1, max_size=30))
def test_linkage_nearest_matches_numpy_with_ties_and_nulls(con, released, known):
    """Many ties (small integers; the release spans 0..8, so every distance is an exact binary fraction and
    ties are exact), NULL numbers and categories on both sides, people absent from the release: places and
    shares recomputed with numpy over every (person, record) pair."""
    release = pd.DataFrame([(0, None), (8, None), *released], columns=["x", "c"])
    release.insert(0, "id", range(len(release)))
    people = pd.DataFrame(known, columns=["x", "c"])
    people.insert(0, "id", range(0, 2 * len(people), 2))  # odd ids and ids past the release are absent from it
    con.execute("CREATE OR REPLACE TABLE rel (id INTEGER, x INTEGER, c VARCHAR)")
    con.execute("CREATE OR REPLACE TABLE known (id INTEGER, x INTEGER, c VARCHAR)")
    con.executemany("INSERT INTO rel VALUES (?, ?, ?)", release.astype(object).where(release.notna(), None).values.tolist())
    con.executemany("INSERT INTO known VALUES (?, ?, ?)", people.astype(object).where(people.notna(), None).values.tolist())

    def gap_x(v, x):  # a released number covers only itself; else the gap over the span (8), a NULL on one
        if pd.isna(x) and pd.isna(v):  # side one unit (scaled like any gap of a number)
            return 0.0
        return abs(v - x) / 8 if not (pd.isna(v) or pd.isna(x)) else 1 / 8

    def gap_c(v, c):
        return 0.0 if (pd.isna(v) and pd.isna(c)) or v == c else 1.0

    places, shares = [], []
    for _, person in people[people["id"].isin(release["id"])].iterrows():
        dist = np.array([gap_x(r.x, person["x"]) ** 2 + gap_c(r.c, person["c"]) ** 2 for r in release.itertuples()])
        own = dist[(release["id"] == person["id"]).values][0]
        places.append(1 + (dist < own).sum())
        shares.append(1 / (dist == own).sum() if (dist < own).sum() == 0 else 0.0)
    row = con.execute("SELECT * FROM linkage_nearest('rel', 'known', ['x', 'c'], 'id')").fetchone()
    assert row[0] == len(places)
    if places:
        assert row[1] == pytest.approx(np.mean(shares)) and row[2] == pytest.approx(np.mean(places))
