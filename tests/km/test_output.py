"""The person column of a k^m release (duckdb_anon/km/output.py): a per-release pseudonym by default, checked
against the source with plain SQL and against a digest recomputed with hashlib; 'drop' and 'raw' on request;
no key, no release."""
import hashlib
from collections import Counter
from itertools import combinations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.km import km_anonymize
from tests.conftest import examples

KEY = duckdb_anon.new_pseudonym_key()


@pytest.fixture(scope="module")
def ocon():
    con = duckdb_anon.connect()
    duckdb_anon.set_pseudonym_key(con, "okey", KEY)
    con.execute("CREATE TABLE r AS SELECT * FROM synthetic_ratings(80, items := 12, ratings_per_user := 5, seed := 3)")
    yield con
    con.close()


def expected_pseudonym(value, release_name: str) -> str:
    """anon_release_pseudonym recomputed: sha256(key || sha256(key || value)), 32 hex digits, under the release
    key, itself that digest of 'release:' || name under the pseudonym key."""
    def hmac(key: str, text: str) -> str:
        return hashlib.sha256((key + hashlib.sha256((key + text).encode()).hexdigest()).encode()).hexdigest()
    return hmac(hmac(KEY, "release:" + release_name)[:32], str(value))[:32]


def records(rows) -> Counter:
    """The multiset of people's records: each person's sorted item labels, whoever the person is."""
    by_person: dict = {}
    for person, item in rows:
        by_person.setdefault(person, []).append(item)
    return Counter(tuple(sorted(items, key=repr)) for items in by_person.values())


def rare(rows, k: int, m: int) -> list:
    held = Counter()
    by_person: dict = {}
    for person, item in rows:
        by_person.setdefault(person, set()).add(item)
    for items in by_person.values():
        for size in range(1, m + 1):
            held.update(frozenset(s) for s in combinations(sorted(items, key=repr), size))
    return [s for s, n in held.items() if n < k]


def test_without_a_key_nothing_is_released_and_the_error_says_how_to_set_one(ocon):
    with pytest.raises(ValueError) as err:
        km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="nokey")
    message = str(err.value)
    assert all(word in message for word in ("km_anonymize()", "'key_name'", "set_pseudonym_key", "person_output"))
    with pytest.raises(ValueError, match=r"km_anonymize\(\): argument 'key_name': the pseudonym key duckdb_anon_key_unset is not set"):
        km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="nokey", key_name="unset")
    with pytest.raises(ValueError, match=r"km_anonymize\(\): argument 'person_output' must be"):
        km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="nokey", person_output="hash")
    with pytest.raises(duckdb.Error, match=r"km_anonymity\(\): argument 'key_name' is None"):
        ocon.execute("SELECT * FROM km_anonymity('r', ['item'], 3, 2, person := 'record_id')").fetchall()
    with pytest.raises(ValueError, match=r"publish_km\(\): argument 'key_name' is None"):
        duckdb_anon.publish_km(ocon, "r", "nokey", items=["item"], k=3, m=2, person="record_id")
    assert ocon.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'nokey' "
                        "OR table_name LIKE '__anon_km%'").fetchall() == [(0,)]


def test_the_default_release_holds_per_release_pseudonyms_and_keeps_km(ocon):
    """No raw id is in the release (plain SQL over it); each person has one pseudonym, the hashlib digest of
    their id; the records are the raw release's, person for person; k^m holds; another release name gives
    pseudonyms sharing nothing with the first."""
    km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="o_raw", person_output="raw")
    for name in ("o_a", "o_b"):
        km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into=name, key_name="okey")
    assert ocon.execute("SELECT count(*) FROM o_a WHERE record_id IN (SELECT record_id::VARCHAR FROM r) "
                        "OR record_id IS NULL OR len(record_id) <> 32").fetchall() == [(0,)]
    assert ocon.execute("SELECT count(*) FROM o_a a JOIN o_b b USING (record_id)").fetchall() == [(0,)]
    raw = ocon.execute("SELECT record_id, item FROM o_raw").fetchall()
    released = ocon.execute("SELECT record_id, item FROM o_a").fetchall()
    assert sorted((expected_pseudonym(p, "o_a"), i) for p, i in raw) == sorted(released)
    assert records(raw) == records(released) and len(records(released)) > 1
    assert rare(released, 3, 2) == []


def test_drop_and_the_sql_entry_and_publish_km(ocon):
    km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="o_drop", person_output="drop",
                 keep=["value"])
    assert [c[0] for c in ocon.execute("DESCRIBE o_drop").fetchall()] == ["item", "value"]
    km_anonymize(ocon, "r", person="record_id", items=["item"], k=3, m=2, into="o_py", key_name="okey", release_name="rel")
    via_sql = ocon.execute("SELECT * FROM km_anonymity('r', ['item'], 3, 2, person := 'record_id', key_name := 'okey', "
                           "release_name := 'rel')").fetchall()
    assert sorted(via_sql) == sorted(ocon.execute("SELECT * FROM o_py").fetchall())
    unnamed = [ocon.execute("SELECT DISTINCT record_id FROM km_anonymity('r', ['item'], 3, ?, person := 'record_id', "
                            "key_name := 'okey') ORDER BY ALL", [m]).fetchall() for m in (2, 2, 1)]
    assert unnamed[0] == unnamed[1] and not set(unnamed[0]) & set(unnamed[2])  # same call, same pseudonyms
    row = duckdb_anon.publish_km(ocon, "r", "o_pub", items=["item"], k=3, m=2, person="record_id", key_name="okey")
    assert row["achieved_k"] >= 3 and '"person_output": "pseudonym"' in row["arguments"]
    published = ocon.execute("SELECT record_id, item FROM o_pub").fetchall()
    assert sorted(published) == sorted((expected_pseudonym(p, "o_pub"), i)
                                       for p, i in ocon.execute("SELECT record_id, item FROM o_raw").fetchall())


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 4)), min_size=1, max_size=30), k=st.integers(2, 3))
def test_random_tables_one_pseudonym_per_person_and_km(ocon, rows, k):
    ocon.execute("CREATE OR REPLACE TABLE h AS SELECT * FROM (VALUES " + ", ".join(f"({p}, {i})" for p, i in rows)
                 + ") t(person, item)")
    ocon.execute("DROP TABLE IF EXISTS h_out; DROP TABLE IF EXISTS h_raw")
    km_anonymize(ocon, "h", person="person", items=["item"], k=k, m=2, into="h_out", key_name="okey")
    km_anonymize(ocon, "h", person="person", items=["item"], k=k, m=2, into="h_raw", person_output="raw")
    released = ocon.execute("SELECT person, item FROM h_out").fetchall()
    raw = ocon.execute("SELECT person, item FROM h_raw").fetchall()
    assert rare(released, k, 2) == []
    assert sorted(released) == sorted((expected_pseudonym(p, "h_out"), i) for p, i in raw)
    assert not {p for p, _ in released} & {str(p) for p, _ in rows}
