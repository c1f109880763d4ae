"""k^m-anonymity (duckdb_anon.km, sql/85_km.sql): the property checked with pandas over the release alone,
the rare-genre case, the measures recomputed by hand, the SQL entry, the frozen release."""
import json
from collections import Counter
from itertools import combinations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.km import km_anonymize
from tests.conftest import examples

GENRES = {0: "g0", 1: "g0", 2: "g0", 3: "g1", 4: "g1", 5: "g1", 6: "g2"}  # g2 holds one item


def records(release: pd.DataFrame, person: str, items: list[str]) -> dict:
    """person -> the set of their released items (tuples of labels; NULL as None)."""
    frame = release[items].astype(object).where(release[items].notna(), None)
    out: dict = {}
    for p, row in zip(release[person], frame.itertuples(index=False, name=None)):
        out.setdefault(p, set()).add(row)
    return out


def rare_itemsets(release: pd.DataFrame, person: str, items: list[str], k: int, m: int) -> list:
    """Every itemset of up to m items some released record holds that fewer than k records hold."""
    held = Counter()
    for record in records(release, person, items).values():
        ordered = sorted(record, key=repr)
        for size in range(1, m + 1):
            held.update(frozenset(s) for s in combinations(ordered, size))
    return [s for s, n in held.items() if n < k]


def ancestors(value, path_of: dict) -> set:
    """The labels a value may be released as: itself (as text; NULL stays None) and its ancestors."""
    text = None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return {text, *path_of.get(text, [text, "*"])[1:]}


def assert_covers(source: pd.DataFrame, release: pd.DataFrame, person: str, items: list[str], paths: dict):
    """Each person's released rows are at most their source rows, and each released row generalizes one of
    the person's source rows column by column (paths: column -> {value text: path})."""
    by_person = {p: g for p, g in source.groupby(person)}
    for p, rows in release.groupby(person):
        mine = by_person[p]
        assert len(rows) <= len(mine)
        for row in rows[items].astype(object).where(rows[items].notna(), None).itertuples(index=False, name=None):
            assert any(all(label in ancestors(value, paths.get(c, {})) for label, value, c in zip(row, original, items))
                       for original in mine[items].astype(object).where(mine[items].notna(), None).itertuples(index=False, name=None)), \
                (p, row)


@pytest.fixture(scope="module")
def kcon():
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE genre_edges AS SELECT * FROM (VALUES " + ", ".join(f"('{i}', '{g}')" for i, g in GENRES.items())
                + ") t(value, parent)")
    con.execute("CREATE TABLE genres AS SELECT * FROM hierarchy_from_parents('genre_edges')")
    yield con
    con.close()


rows_strategy = st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), st.integers(0, 6)),
                                   st.one_of(st.none(), st.sampled_from(["a", "b"]))), min_size=1, max_size=40)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_strategy, k=st.integers(2, 3), m=st.integers(1, 3), heavy=st.booleans(), constant=st.booleans())
def test_every_itemset_of_up_to_m_released_items_is_held_by_k_people(kcon, rows, k, m, heavy, constant):
    """Random small transaction tables: ties and repeated rows, NULL items, one heavy person holding every
    item (heavy), one item for everyone (constant)."""
    if heavy:
        rows = rows + [(8, i, b) for i in range(7) for b in ("a", "b")]
    if constant:
        rows = [(p, 3, "a") for p, _, _ in rows]
    source = pd.DataFrame(rows, columns=["person", "item", "band"]).astype({"item": "Int64"})
    kcon.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM source")
    kcon.execute("DROP TABLE IF EXISTS out")
    km_anonymize(kcon, "t", person="person", items=["item", "band"], k=k, m=m, hierarchies={"item": "genres"}, person_output="raw", into="out")
    release = kcon.execute("SELECT * FROM out").df()
    assert list(release.columns) == ["person", "item", "band"]
    assert rare_itemsets(release, "person", ["item", "band"], k, m) == []
    genre_paths = {str(i): [str(i), g, "*"] for i, g in GENRES.items()}
    assert_covers(source, release, "person", ["item", "band"], {"item": genre_paths})
    # nothing but the all-root item ('*', '*') is ever dropped for lack of a hierarchy rung: a label with
    # every column at its root is never released
    assert not ((release["item"] == "*") & (release["band"] == "*")).any()
    if constant and len(set(source["person"])) >= k:  # one item held by k people or more goes out whole
        assert len(release) == len(source)


def test_one_rare_genre_costs_its_one_row_and_nothing_else(kcon):
    """Ten people rate items 0..5 (genres g0, g1); one of them also rates item 6, alone in genre g2. The
    item cannot hide at its genre either: its row goes, and every other row stays exact (a cut of the
    hierarchy would move every item to the root)."""
    kcon.execute("CREATE OR REPLACE TABLE rg AS SELECT p AS person, i AS item FROM range(10) a(p), range(6) b(i) "
                 "UNION ALL SELECT 0, 6")
    kcon.execute("DROP TABLE IF EXISTS rg_out")
    km_anonymize(kcon, "rg", person="person", items=["item"], k=5, m=2, hierarchies={"item": "genres"}, person_output="raw", into="rg_out")
    source = kcon.execute("SELECT person, item::VARCHAR AS item FROM rg").df()
    release = kcon.execute("SELECT * FROM rg_out").df()
    expected = source[source["item"] != "6"]
    assert sorted(map(tuple, release.values.tolist())) == sorted(map(tuple, expected.values.tolist()))
    loss, rows_out, items_out, spearman = kcon.execute(
        "SELECT information_loss, rows_suppressed, items_suppressed, popularity_spearman "
        "FROM km_measures('rg', 'rg_out', ['item'], hierarchies := {'item': 'genres'})").fetchall()[0]
    assert loss == pytest.approx(1 / 61) and rows_out == pytest.approx(1 / 61)
    assert items_out == pytest.approx(1 / 7)
    before = source["item"].value_counts()
    after = release["item"].value_counts().reindex(before.index, fill_value=0)
    assert spearman == pytest.approx(before.rank().corr(after.rank()))


def test_generalized_labels_are_measured_by_the_leaves_they_stand_for(kcon):
    """Items 0..2 (genre g0), each rated by two of six people: at k = 3 no item is held by three, so all
    climb to g0 (3 of 7 leaves: NCP 3/7 per row)."""
    kcon.execute("CREATE OR REPLACE TABLE gl AS SELECT p AS person, p % 3 AS item FROM range(6) a(p)")
    kcon.execute("DROP TABLE IF EXISTS gl_out")
    km_anonymize(kcon, "gl", person="person", items=["item"], k=3, m=1, hierarchies={"item": "genres"}, person_output="raw", into="gl_out")
    assert kcon.execute("SELECT list(DISTINCT item), count(*) FROM gl_out").fetchall()[0] == (["g0"], 6)
    loss, rows_out, items_out, exact = kcon.execute(
        "SELECT information_loss, rows_suppressed, items_suppressed, exact_rows "
        "FROM km_measures('gl', 'gl_out', ['item'], hierarchies := {'item': 'genres'})").fetchall()[0]
    assert loss == pytest.approx(3 / 7) and rows_out == 0 and items_out == 0 and exact == {"item": 0.0}


def mean_ranks(values: list) -> list[float]:
    """1-based ranks, tied values sharing the mean of their places."""
    order = sorted(values)
    first = {}
    for place, v in enumerate(order, 1):
        first.setdefault(v, place)
    return [first[v] + (order.count(v) - 1) / 2 for v in values]


def spearman(xs: list, ys: list):
    """Pearson's correlation of the mean ranks, by hand; None when either side is constant."""
    rx, ry = mean_ranks(xs), mean_ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sum((a - mx) * (b - my) for a, b in zip(rx, ry)) / (sxx * syy) ** 0.5


def released_popularity(source_items: list, released_labels: list) -> tuple[list, list]:
    """Per distinct source value: its source rows, and its released popularity: each released row whose
    label covers it (the value, its genre, or the root) counts one over the leaves the label stands for."""
    genre_paths = {str(i): [str(i), g, "*"] for i, g in GENRES.items()}
    leaves = Counter(node for path in genre_paths.values() for node in path[1:])
    values = sorted(set(source_items), key=repr)
    before = [source_items.count(v) for v in values]
    after = [sum(1.0 if label == v else 1 / leaves[label] for label in released_labels
                 if label == v or (label != v and label in ancestors(v, genre_paths) - {v}) or label == "*")
             for v in values]
    return before, after


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers(0, 6))), min_size=2, max_size=40),
       k=st.integers(2, 4), m=st.integers(1, 2))
def test_popularity_spearman_ranks_source_rows_against_the_labels_covering_them(kcon, rows, k, m):
    kcon.execute("CREATE OR REPLACE TABLE ps AS SELECT * FROM (SELECT unnest(?::INTEGER[]) AS person, unnest(?::INTEGER[]) AS item)",
                 [[p for p, _ in rows], [i for _, i in rows]])
    kcon.execute("DROP TABLE IF EXISTS ps_out")
    km_anonymize(kcon, "ps", person="person", items=["item"], k=k, m=m, hierarchies={"item": "genres"}, person_output="raw", into="ps_out")
    measured = kcon.execute("SELECT popularity_spearman FROM km_measures('ps', 'ps_out', ['item'], "
                            "hierarchies := {'item': 'genres'})").fetchall()[0][0]
    source = [None if i is None else str(i) for _, i in rows]
    released = [r[0] for r in kcon.execute("SELECT item FROM ps_out").fetchall()]
    expected = spearman(*released_popularity(source, released))
    assert (measured is None) == (expected is None) and (expected is None or measured == pytest.approx(expected))


def records_table(kcon, name: str, rows: list[tuple], band_type: str = "VARCHAR") -> None:
    """Table `name` of (person, item, band) rows."""
    kcon.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM (SELECT unnest(?::INTEGER[]) AS person, "
                 f"unnest(?::INTEGER[]) AS item, unnest(?::{band_type}[]) AS band)",
                 [[p for p, _, _ in rows], [i for _, i, _ in rows], [b for _, _, b in rows]])


def genre_release(kcon, name: str, rows: list[tuple], k: int, m: int, band_type: str = "VARCHAR") -> None:
    """records_table `name` and its k^m release `name`_out over (item, band), the genres on item, raw ids."""
    records_table(kcon, name, rows, band_type)
    kcon.execute(f"DROP TABLE IF EXISTS {name}_out")
    km_anonymize(kcon, name, person="person", items=["item", "band"], k=k, m=m, hierarchies={"item": "genres"},
                 person_output="raw", into=f"{name}_out")


def top_kept(source_items: list, released_labels: list, top: int = 100) -> float | None:
    """top100_kept by hand: the source's `top` most frequent values (T of them with the ties at the last
    place) that every order of the released popularity's ties puts among its T most popular."""
    values = sorted(set(source_items), key=repr)
    before, after = released_popularity(source_items, released_labels)
    n = dict(zip(values, before))
    kept = dict(zip(values, after))
    cut = min(top, len(values))
    leaders = [v for v in values if sum(n[w] > n[v] for w in values) < cut]
    if not leaders:
        return None
    return sum(kept[v] > 0 and sum(kept[w] >= kept[v] for w in values) <= len(leaders) for v in leaders) / len(leaders)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers(0, 6)), st.integers(1, 3)),
                     min_size=2, max_size=40),
       k=st.integers(2, 4), m=st.integers(1, 2))
def test_exact_rows_and_top_kept_match_a_count_by_hand(kcon, rows, k, m):
    """exact_rows: per item column, the share of source rows a released row shows as a source value;
    top100_kept: the leaders (fewer than 100 values here: all of them) whose released popularity places
    them among the leaders whatever order its ties take."""
    genre_release(kcon, "ex", rows, k, m, band_type="INTEGER")
    exact, kept = kcon.execute("SELECT exact_rows, top100_kept FROM km_measures('ex', 'ex_out', ['item', 'band'], "
                               "hierarchies := {'item': 'genres'})").fetchall()[0]
    release = kcon.execute("SELECT item, band FROM ex_out").fetchall()
    for column, position in (("item", 1), ("band", 2)):
        values = {None if r[position] is None else str(r[position]) for r in rows}
        shown = sum(label[position - 1] in values for label in release)
        assert exact[column] == pytest.approx(shown / len(rows))
    source = [None if i is None else str(i) for _, i, _ in rows]
    expected = top_kept(source, [label[0] for label in release])
    assert kept == pytest.approx(expected)
    assert top_kept(source, source, 2) == 1.0  # the source itself keeps its leaders, ties across the cut and all


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_strategy, k=st.integers(1, 4), m=st.integers(1, 4))
def test_km_check_counts_what_a_count_by_hand_counts(kcon, rows, k, m):
    """km_check on any table of records (here the source itself, rarely k^m-anonymous): the fewest people
    holding an itemset of up to m items some record holds, and how many such itemsets fewer than k hold."""
    records_table(kcon, "kc", rows)
    least, rare = kcon.execute("SELECT min_support, rare_itemsets FROM km_check('kc', 'person', ['item', 'band'], ?, ?)",
                               [k, m]).fetchall()[0]
    frame = pd.DataFrame(rows, columns=["person", "item", "band"]).astype(object)
    frame["item"] = frame["item"].map(lambda v: None if v is None else str(v))
    held = Counter()
    for record in records(frame, "person", ["item", "band"]).values():
        for size in range(1, m + 1):
            held.update(frozenset(s) for s in combinations(sorted(record, key=repr), size))
    assert least == min(held.values())
    assert rare == len(rare_itemsets(frame, "person", ["item", "band"], k, m))


def pair_support_error(source: list[tuple], release: list[tuple]) -> float | None:
    """pair_support_error by hand, for records (person, item, band) with the genres on item and no
    hierarchy on band: over the 100 most frequent pairs of (item, band) items (ties broken by the items' JSON
    text; a small table's items are all among its 300 most frequent), the mean of |true - estimated| / true
    support. A released
    label tuple covering an item counts one over the leaves its labels stand for, a person's chance of
    holding an item is the sum over their label tuples (at most 1), and a pair's estimate the sum over
    people of the product of the two chances."""
    text = lambda v: None if v is None else str(v)
    records: dict = {}
    for p, item, band in source:
        records.setdefault(p, set()).add((text(item), text(band)))
    pairs = Counter(frozenset(pair) for items in records.values() for pair in combinations(sorted(items, key=repr), 2))
    if not pairs:
        return None
    as_json = lambda item: json.dumps(list(item), separators=(",", ":"))  # the SQL's text of an item
    ordered = {pair: tuple(sorted(as_json(i) for i in pair)) for pair in pairs}
    top = sorted(pairs, key=lambda pair: (-pairs[pair], ordered[pair]))[:100]
    genre_paths = {str(i): [str(i), g, "*"] for i, g in GENRES.items()}
    genre_leaves = Counter(node for path in genre_paths.values() for node in path[1:])
    bands = {text(b) for _, _, b in source}

    def leaves(column: int, value, label) -> int | None:  # the leaves `label` stands for, if it covers `value`
        if label == value:
            return 1
        if label == "*":
            return genre_leaves["*"] if column == 0 else len(bands)
        if column == 0 and label in genre_paths.get(value, [])[1:]:
            return genre_leaves[label]
        return None

    released: dict = {}
    for p, item, band in release:
        released.setdefault(p, set()).add((item, band))

    def chance(labels: set, item: tuple) -> float:
        total = 0.0
        for g in labels:
            counts = [leaves(c, item[c], g[c]) for c in (0, 1)]
            if None not in counts:
                total += 1 / (counts[0] * counts[1])
        return min(1.0, total)

    errors = []
    for pair in top:
        a, b = sorted(pair, key=repr)
        estimate = sum(chance(labels, a) * chance(labels, b) for labels in released.values())
        errors.append(abs(pairs[pair] - estimate) / pairs[pair])
    return sum(errors) / len(errors)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_strategy, k=st.integers(2, 4), m=st.integers(1, 2))
def test_pair_support_error_matches_a_count_by_hand(kcon, rows, k, m):
    genre_release(kcon, "pe", rows, k, m)
    measured, unread = kcon.execute(
        "SELECT (SELECT pair_support_error FROM km_measures('pe', 'pe_out', ['item', 'band'], "
        "                                               hierarchies := {'item': 'genres'}, person := 'person')), "
        "       (SELECT pair_support_error FROM km_measures('pe', 'pe_out', ['item', 'band']))").fetchall()[0]
    expected = pair_support_error(rows, kcon.execute("SELECT person, item, band FROM pe_out").fetchall())
    assert unread is None  # without a person column there are no records to read pairs from
    assert (measured is None) == (expected is None)
    assert expected is None or measured == pytest.approx(expected)
    # the source itself keeps every pair's support
    same = kcon.execute("SELECT pair_support_error FROM km_measures('pe', 'pe', ['item', 'band'], person := 'person')"
                        ).fetchall()[0][0]
    assert (same is None) == (expected is None) and (same is None or same == pytest.approx(0.0))


def test_top_kept_on_realistic_ratings_matches_a_count_by_hand(kcon):
    """Over a thousand items, generalized into ranges of 10 and 100: the released popularity ties every
    item of a range, so the cut at the 100th place decides which leaders are kept."""
    kcon.execute("CREATE OR REPLACE TABLE rr AS SELECT record_id, item FROM realistic_ratings(200, seed := 6)")
    kcon.execute("CREATE OR REPLACE TABLE h_rr AS SELECT * FROM hierarchy_intervals('rr', 'item', [10, 100])")
    kcon.execute("DROP TABLE IF EXISTS rr_out")
    km_anonymize(kcon, "rr", person="record_id", items=["item"], k=8, m=2, hierarchies={"item": "h_rr"},
                 person_output="raw", into="rr_out")
    kept = kcon.execute("SELECT top100_kept FROM km_measures('rr', 'rr_out', ['item'], hierarchies := {'item': 'h_rr'})"
                        ).fetchall()[0][0]
    paths = {leaf: path for leaf, path in kcon.execute("SELECT leaf, path FROM h_rr").fetchall()}
    source = [str(i) for (i,) in kcon.execute("SELECT item FROM rr").fetchall()]
    released = Counter(label for (label,) in kcon.execute("SELECT item FROM rr_out").fetchall())
    n = Counter(source)
    leaves = Counter(node for path in paths.values() for node in path[1:])
    popularity = {v: released[v] + sum(released[node] / leaves[node] for node in paths[v][1:]) for v in n}
    leaders = [v for v in n if sum(n[w] > n[v] for w in n) < 100]
    expected = sum(popularity[v] > 0 and sum(popularity[w] >= popularity[v] for w in n) <= len(leaders)
                   for v in leaders) / len(leaders)
    assert len(n) > 500 and 0 < expected < 1  # the cut matters
    assert kept == pytest.approx(expected)


def test_a_release_of_the_source_itself_keeps_every_row_exact_and_every_leader(kcon):
    kcon.execute("CREATE OR REPLACE TABLE same AS SELECT * FROM realistic_ratings(60, seed := 4)")
    kept, exact, spearman = kcon.execute("SELECT top100_kept, exact_rows, popularity_spearman "
                                         "FROM km_measures('same', 'same', ['item', 'value', 'ts'])").fetchall()[0]
    assert kept == 1.0 and exact == {"item": 1.0, "value": 1.0, "ts": 1.0} and spearman == pytest.approx(1.0)


def test_popularity_spearman_is_defined_when_every_item_is_generalized(kcon):
    """Items of genre g0 rated by 4, 2 and 2 of 8 people, of g1 by 2 each: at k = 5 none stays itself, g0
    goes out with 8 rows and g1 with 6; the correlation compares item popularity with genre popularity."""
    kcon.execute("CREATE OR REPLACE TABLE pg AS SELECT * FROM (VALUES (0, 0), (1, 0), (2, 0), (3, 0), (4, 1), (5, 1), "
                 "(6, 2), (7, 2), (0, 3), (1, 4), (2, 5), (3, 3), (4, 4), (5, 5)) t(person, item)")
    kcon.execute("DROP TABLE IF EXISTS pg_out")
    km_anonymize(kcon, "pg", person="person", items=["item"], k=5, m=1, hierarchies={"item": "genres"}, person_output="raw", into="pg_out")
    released = [r[0] for r in kcon.execute("SELECT item FROM pg_out").fetchall()]
    source = [str(i) for (i,) in kcon.execute("SELECT item FROM pg").fetchall()]
    assert not set(released) & set(source)  # no item released as itself
    expected = spearman(*released_popularity(source, released))
    assert expected is not None
    assert kcon.execute("SELECT popularity_spearman FROM km_measures('pg', 'pg_out', ['item'], "
                        "hierarchies := {'item': 'genres'})").fetchall()[0][0] == pytest.approx(expected)


def test_release_publishes_only_person_items_and_keep_and_follows_the_declared_person(kcon):
    """Fail closed: `note` never goes out; a row whose person is NULL belongs to nobody and is left out."""
    kcon.execute("CREATE OR REPLACE TABLE kp AS SELECT p AS person, p % 2 AS item, 'secret' || p AS note, p * 10 AS extra "
                 "FROM range(12) a(p) UNION ALL SELECT NULL, 0, 'nobody', 0")  # a row without a person is left out
    duckdb_anon.declare_privacy_unit(kcon, "kp", "person")
    for name, keep, columns in (("kp_a", None, ["person", "item"]), ("kp_b", ["extra"], ["person", "item", "extra"])):
        kcon.execute(f"DROP TABLE IF EXISTS {name}")
        km_anonymize(kcon, "kp", items=["item"], k=3, m=1, person_output="raw", into=name, keep=keep)
        assert [r[0] for r in kcon.execute(f"DESCRIBE {name}").fetchall()] == columns
    assert kcon.execute("SELECT count(*) FROM kp_a").fetchall()[0][0] == 12


def test_a_privacy_unit_declared_through_another_table_is_followed(kcon):
    """Diagnoses reach their patient through visits (two visits a patient): with no person given, the release
    is k^m over patients, not visits, under visits' person column; a diagnosis whose visit is unknown belongs
    to nobody and is left out. The SQL entry follows the same link."""
    kcon.execute("CREATE OR REPLACE TABLE kv AS SELECT v AS visit_id, v // 2 AS pid FROM range(24) a(v)")
    kcon.execute("CREATE OR REPLACE TABLE kd AS SELECT v AS visit_id, (v * 7 + d) % 5 AS code, 'note' || v AS note "
                 "FROM range(24) a(v), range(2) b(d) UNION ALL SELECT 99, 1, 'lost'")
    duckdb_anon.declare_privacy_unit(kcon, "kv", "pid")
    duckdb_anon.declare_privacy_unit(kcon, "kd", "visit_id", via_table="kv", via_key="visit_id")
    kcon.execute("DROP TABLE IF EXISTS kd_out")
    km_anonymize(kcon, "kd", items=["code"], k=4, m=2, person_output="raw", into="kd_out")
    release = kcon.execute("SELECT * FROM kd_out").df()
    assert list(release.columns) == ["pid", "code"]
    assert rare_itemsets(release, "pid", ["code"], 4, 2) == []
    source = kcon.execute("SELECT * FROM kd").df().merge(kcon.execute("SELECT * FROM kv").df(), on="visit_id")
    assert_covers(source, release, "pid", ["code"], {})
    assert 0 < len(release) <= 48 and set(release["pid"]) <= set(range(12))
    via_sql = kcon.execute("SELECT * FROM km_anonymity('kd', ['code'], 4, 2, person_output := 'raw')").fetchall()
    assert sorted(via_sql) == sorted(kcon.execute("SELECT * FROM kd_out").fetchall())
    assert kcon.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '__anon_km%'").fetchall() == [(0,)]
    kcon.execute("CREATE OR REPLACE TABLE ke AS SELECT v % 13 AS pid, v % 3 AS code FROM range(60) a(v)")  # the key is the pid
    kcon.execute("CREATE OR REPLACE TABLE kpat AS SELECT range AS pid FROM range(12)")
    duckdb_anon.declare_privacy_unit(kcon, "kpat", "pid")
    duckdb_anon.declare_privacy_unit(kcon, "ke", "pid", via_table="kpat", via_key="pid")
    kcon.execute("DROP TABLE IF EXISTS ke_out")
    km_anonymize(kcon, "ke", items=["code"], k=3, m=2, person_output="raw", into="ke_out")  # pid 12 is nobody in kpat: left out
    assert kcon.execute("SELECT max(pid), count(*) FILTER (WHERE pid = 12) FROM ke_out").fetchall() == [(11, 0)]
    kcon.execute("CREATE OR REPLACE TABLE kd2 AS SELECT visit_id, code, visit_id AS pid FROM kd")  # a pid of its own
    duckdb_anon.declare_privacy_unit(kcon, "kd2", "visit_id", via_table="kv", via_key="visit_id")
    with pytest.raises(ValueError, match=r"km_anonymize\(\): argument 'person' is None .*'kv'.'pid'.*privacy_unit_rows"):
        km_anonymize(kcon, "kd2", items=["code"], k=4, m=2, person_output="raw", into="kd2_out")


def test_same_seed_same_release_and_the_sql_entry_agrees(kcon):
    kcon.execute("CREATE OR REPLACE TABLE sr AS SELECT * FROM synthetic_ratings(60, items := 30, ratings_per_user := 6, seed := 4)")
    kcon.execute("CREATE OR REPLACE TABLE sr_h AS SELECT * FROM hierarchy_intervals('sr', 'item', [5, 15])")
    releases = []
    for name in ("sr_a", "sr_b"):
        kcon.execute(f"DROP TABLE IF EXISTS {name}")
        km_anonymize(kcon, "sr", person="record_id", items=["item", "value"], k=4, m=2, hierarchies={"item": "sr_h"}, person_output="raw", into=name)
        releases.append(kcon.execute(f"SELECT * FROM {name}").fetchall())
    via_sql = kcon.execute("SELECT * FROM km_anonymity('sr', ['item', 'value'], 4, 2, person := 'record_id', person_output := 'raw', "
                           "hierarchies := {'item': 'sr_h'})").fetchall()
    assert releases[0] == releases[1]
    assert sorted(via_sql) == sorted(releases[0])
    release = kcon.execute("SELECT * FROM sr_a").df()
    assert rare_itemsets(release, "record_id", ["item", "value"], 4, 2) == []
    assert kcon.execute("SELECT rare_itemsets, min_support >= 4 FROM km_check('sr_a', 'record_id', ['item', 'value'], 4, 2)"
                        ).fetchall()[0] == (0, True)


def test_the_suppression_baseline_keeps_items_exact_and_reaches_km(kcon):
    kcon.execute("CREATE OR REPLACE TABLE sb AS SELECT * FROM synthetic_ratings(60, items := 30, ratings_per_user := 6, seed := 5)")
    kcon.execute("DROP TABLE IF EXISTS sb_out")
    km_anonymize(kcon, "sb", person="record_id", items=["item"], k=4, m=2, person_output="raw", into="sb_out", strategy="suppress")
    release = kcon.execute("SELECT * FROM sb_out").df()
    assert rare_itemsets(release, "record_id", ["item"], 4, 2) == []
    source_items = set(kcon.execute("SELECT DISTINCT item::VARCHAR FROM sb").df().iloc[:, 0])
    assert set(release["item"]) <= source_items  # never generalized


def test_a_frozen_km_release_is_recorded_with_its_arguments(kcon):
    kcon.execute("CREATE OR REPLACE TABLE fr AS SELECT p AS person, i AS item FROM range(8) a(p), range(4) b(i)")
    duckdb_anon.set_pseudonym_key(kcon, "fr_key", duckdb_anon.new_pseudonym_key())
    row = duckdb_anon.publish_km(kcon, "fr", "fr_release", items=["item"], k=3, m=2, person="person", key_name="fr_key")
    assert (row["method"], row["rows"], row["achieved_k"], row["k"]) == ("km", 32, 8, 3)
    assert kcon.execute("SELECT count(*) FROM fr_release").fetchall()[0][0] == 32
    with pytest.raises(Exception, match="publish_km") as err:  # a second release of the source is not audited
        duckdb_anon.publish_km(kcon, "fr", "fr_again", items=["item"], k=3, m=2, person="person", key_name="fr_key")
    assert "allow_differencing" in str(err.value) and "id_column" not in str(err.value)  # publish_km has no id_column
    again = duckdb_anon.publish_km(kcon, "fr", "fr_again", items=["item"], k=3, m=2, person="person", key_name="fr_key",
                                   allow_differencing=True)
    assert again["previous_release"] == "fr_release" and "without a differencing audit" in again["differencing_warning"]
    assert "id_column" not in again["differencing_warning"]
