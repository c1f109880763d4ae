"""publish_rerelease(): re-releases that an id-matched intersection with any earlier release of the lineage
cannot break below k. Every property is recomputed in pandas from the release tables and the source."""
import itertools

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.roles import DeclarationError
from tests.independent import catalog_digest, row_keys
from tests.test_lineage import QIS, clinic, differencing, insert
from tests.test_roles import KEY, expected_pseudonym
from tests.conftest import examples


def check_release(con, source, release, lineage, qis, id_column, k, l=None, sensitive=None, pseudonym=None):
    """What a re-release promises, checked on the tables: every class has k rows (and l distinct sensitive
    values); the people of the source not published are exactly those held back; nobody is below k in an
    id-matched intersection with any earlier release; against any earlier release, the people of a class not
    released up to then are 0 or at least k."""
    frame = con.execute(f"SELECT * FROM {release}").df()
    key = row_keys(frame, qis)
    assert key.value_counts().min() >= k
    if l is not None:
        assert frame.groupby(key.values)[sensitive].nunique().min() >= l
    people = con.execute(f"SELECT {id_column} FROM {source}").df()[id_column]
    held = con.execute("SELECT person FROM anon_release_held WHERE release_name = ?", [release]).df()["person"]
    held = set(held)  # the catalog records people as keyed digests
    published = {p for p in people.astype(str) if catalog_digest(con, p) not in held}
    shown = published if pseudonym is None else {pseudonym(p) for p in published}
    assert set(frame[id_column].astype(str)) == shown and len(frame) == len(shown)
    seen = set()
    for earlier in lineage:  # oldest first
        before = con.execute(f"SELECT * FROM {earlier}").df()
        assert differencing(before, frame, qis, id_column, k) == (0, 0), (earlier, release)
        seen |= set(before[id_column])
        new = ~frame[id_column].isin(seen)  # people in no release up to `earlier` (not those back after being held)
        gained = pd.Series(new.values, index=key.values).groupby(level=0).sum()
        assert ((gained == 0) | (gained >= k)).all(), (earlier, release)
    return frame, len(held)


@pytest.fixture
def clinic_con(con):
    clinic(con)
    return con


@pytest.mark.parametrize("inserted", [1, 10, 100])
def test_a_rerelease_after_inserts_cannot_be_differenced(clinic_con, inserted):
    con = clinic_con
    insert(con, inserted)
    source = con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall()
    recorded = duckdb_anon.publish_rerelease(con, "patients", "r2")
    assert con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall() == source
    _, held = check_release(con, "patients", "r2", ["r1"], QIS, "patient_id", 10, 2, "diagnosis",
                            lambda p: expected_pseudonym(KEY, p))
    assert held <= inserted  # only new people wait
    assert recorded["previous_release"] == "r1" and recorded["differencing_below_k"] == 0
    assert recorded["rows"] == 2000 + inserted - held and recorded["achieved_k"] >= 10


def test_a_lineage_with_deletes_holds_back_shrunken_classes_and_stays_safe_pairwise(clinic_con):
    con = clinic_con
    insert(con, 100)
    duckdb_anon.publish_rerelease(con, "patients", "r2")
    con.execute("DELETE FROM patients WHERE hash(patient_id) % 7 = 0 AND patient_id <= 'P02000'")  # about 290 people leave
    con.execute("INSERT INTO patients SELECT * REPLACE ('Q' || patient_id[2:] AS patient_id) FROM more "
                "WHERE patient_id BETWEEN 'P00001' AND 'P00030'")  # 30 new people
    source = con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall()
    duckdb_anon.publish_rerelease(con, "patients", "r3")
    assert con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall() == source
    _, held = check_release(con, "patients", "r3", ["r1", "r2"], QIS, "patient_id", 10, 2, "diagnosis",
                            lambda p: expected_pseudonym(KEY, p))
    reasons = dict(con.execute("SELECT reason, count(*) FROM anon_release_held WHERE release_name = 'r3' GROUP BY ALL").fetchall())
    assert held > 0 and any("fall below k" in reason or "too few of the people" in reason for reason in reasons)
    lineage = con.execute("SELECT name, previous_release FROM anon_releases ORDER BY created_at").fetchall()
    assert lineage == [("r1", None), ("r2", "r1"), ("r3", "r2")]


def test_a_plain_publish_of_the_same_change_is_refused(clinic_con):
    """The contrast the re-release exists for: the same inserts, republished by Mondrian, are refused."""
    insert(clinic_con, 10)
    with pytest.raises(DeclarationError, match="below k = 10"):
        duckdb_anon.publish_release(clinic_con, "patients", "r2")
    assert duckdb_anon.publish_rerelease(clinic_con, "patients", "r2")["differencing_below_k"] == 0


@pytest.mark.parametrize("call, words", [
    (dict(previous="nope"), ["publish_rerelease()", "'previous'", "no release 'nope'"]),
    (dict(previous="other"), ["publish_rerelease()", "'previous'", "release of 'o'"]),
    (dict(previous="bare"), ["publish_rerelease()", "'previous'", "no person column"]),
    (dict(previous="m1", join_batch=0), ["publish_rerelease()", "'join_batch'"]),
])
def test_rerelease_bad_input_names_the_argument(con, call, words):
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 37 AS age, range % 3 AS s FROM range(200)")
    con.execute("CREATE TABLE o AS FROM t")
    duckdb_anon.publish_mondrian(con, "t", "m1", ["age"], 5, id_column="id")
    duckdb_anon.publish_mondrian(con, "o", "other", ["age"], 5, id_column="id")
    duckdb_anon.publish_mondrian(con, "t", "bare", ["age"], 5, allow_differencing=True)
    with pytest.raises(DeclarationError) as err:
        duckdb_anon.publish_rerelease(con, "t", "m2", **call)
    assert all(word in str(err.value) for word in words)
    assert con.execute("SELECT count(*) FROM anon_releases WHERE name = 'm2'").fetchall() == [(0,)]


def test_a_km_release_is_not_followed_by_a_rerelease(con):
    """A k^m release has many rows per person and no classes to keep: refused as `previous`, whether or not
    the catalog row names a person column, without suggesting an argument publish_km does not take."""
    con.execute("CREATE TABLE visits AS SELECT p AS person, i AS item FROM range(8) a(p), range(4) b(i)")
    duckdb_anon.publish_km(con, "visits", "v1", items=["item"], k=3, m=2, person="person", person_output="raw")
    for person_column in (None, "person"):
        con.execute("UPDATE anon_releases SET person_column = ? WHERE name = 'v1'", [person_column])
        with pytest.raises(DeclarationError) as err:
            duckdb_anon.publish_rerelease(con, "visits", "v2")
        message = str(err.value)
        assert all(word in message for word in ("publish_rerelease()", "'previous'", "'v1'", "'km'")), message
        assert "id_column" not in message
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'v2'").fetchall() == [(0,)]


step = st.tuples(st.integers(0, 12), st.integers(0, 25), st.integers(0, 6))  # deleted, inserted, moved


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), steps=st.lists(step, min_size=1, max_size=3))
@example(seed=3465, steps=[(0, 15, 0), (0, 12, 0), (5, 0, 0)])  # deletions left 3 of a batch of 4 newcomers
def test_random_inserts_deletes_and_moves_never_break_k_between_any_two_releases(con, seed, steps):
    """A small table, k = 4 and l = 2; each step deletes, inserts and moves (changes the age of) a few people
    chosen by the seed, then re-releases. Every pair of releases of the lineage is checked."""
    for table in ("t", "m0", "m1", "m2", "m3"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute("DELETE FROM anon_releases; DELETE FROM anon_release_people; DELETE FROM anon_release_held")
    con.execute("CREATE TABLE t AS SELECT range AS id, (hash(range, $s) % 40)::INTEGER AS age, (hash(range, $s, 1) % 3)::INTEGER AS zip, "
                "['a', 'b', 'c'][(hash(range, $s, 2) % 3)::INTEGER + 1] AS s FROM range(60)", {"s": seed})
    duckdb_anon.publish_mondrian(con, "t", "m0", ["age", "zip"], 4, id_column="id", sensitive="s", l=2)
    releases, next_id = ["m0"], 1000
    for number, (deleted, inserted, moved) in enumerate(steps, start=1):
        con.execute("DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY hash(id, $s, $n) LIMIT $d)",
                    {"s": seed, "n": number, "d": deleted})
        con.execute("UPDATE t SET age = (age + 17) % 40 WHERE id IN (SELECT id FROM t ORDER BY hash(id, $s, $n, 1) LIMIT $m)",
                    {"s": seed, "n": number, "m": moved})
        con.execute("INSERT INTO t SELECT $f + range, (hash(range, $s, $n) % 40)::INTEGER, (hash(range, $s, $n, 1) % 3)::INTEGER, "
                    "['a', 'b', 'c'][(hash(range, $s, $n, 2) % 3)::INTEGER + 1] FROM range($i)",
                    {"f": next_id, "s": seed, "n": number, "i": inserted})
        next_id += inserted
        source = con.execute("SELECT * FROM t ORDER BY id").fetchall()
        name = f"m{number}"
        duckdb_anon.publish_rerelease(con, "t", name)
        assert con.execute("SELECT * FROM t ORDER BY id").fetchall() == source
        check_release(con, "t", name, releases, ["age", "zip"], "id", 4, 2, "s")
        releases.append(name)
    for a, b in itertools.combinations(releases, 2):  # the person map agrees with the tables
        assert differencing(con.execute(f"SELECT * FROM {a}").df(), con.execute(f"SELECT * FROM {b}").df(),
                            ["age", "zip"], "id", 4) == (0, 0)


def test_a_rerelease_publishes_the_columns_of_the_release_it_follows(con):
    """Not the source's: a column the first release did not publish (dropped here by hand) stays out."""
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 37 AS age, 'secret ' || range AS note FROM range(200)")
    duckdb_anon.publish_mondrian(con, "t", "m1", ["age"], 5, id_column="id")
    con.execute("ALTER TABLE m1 DROP COLUMN note")
    con.execute("INSERT INTO t SELECT 200 + range, range % 37, 'new ' || range FROM range(20)")
    duckdb_anon.publish_rerelease(con, "t", "m2")
    assert con.execute("SELECT * FROM m2 LIMIT 0").df().columns.tolist() == ["id", "age"]
    con.execute("DROP TABLE m1")
    with pytest.raises(DeclarationError, match=r"publish_rerelease\(\): argument 'previous': the table of release 'm1' no longer"):
        duckdb_anon.publish_rerelease(con, "t", "m3", previous="m1")
