"""Multi-table releases (publish_tables): persons by Mondrian, events by k^m-anonymity, joined by a
per-release pseudonym. Checked with pandas and hashlib, not with the package's own measures."""
import hashlib

import duckdb
import pytest

import duckdb_anon
from duckdb_anon.multitable import publish_tables
from duckdb_anon.roles import DeclarationError
from tests.test_roles import KEY

OTHER_KEY = duckdb_anon.new_pseudonym_key()


def release_pseudonym(value, key: str, release: str) -> str:
    """The documented derivation, recomputed in Python: digest(digest(key, 'release:' + name), value)."""
    def digest(secret: str, text: str) -> str:
        inner = hashlib.sha256((secret + text).encode()).hexdigest()
        return hashlib.sha256((secret + inner).encode()).hexdigest()[:32]
    return digest(digest(key, "release:" + release), str(value))


def make_tables(con, people=160):
    """persons(pid, name, age, zip) and events(pid, item, value, ts, note): ratings of synthetic people."""
    con.execute(f"CREATE TABLE persons AS SELECT range AS pid, 'name ' || range AS name, 20 + (range * 7) % 50 AS age, "
                f"10000 + (range * 13) % 40 AS zip FROM range({people})")
    con.execute(f"CREATE TABLE events AS SELECT record_id AS pid, item % 12 AS item, value, ts, 'private note' AS note "
                f"FROM synthetic_ratings({people}, items := 40, ratings_per_user := 6, seed := 3)")
    duckdb_anon.set_pseudonym_key(con, "clinic", KEY)


def publish(con, name, **extra):
    arguments = dict(persons="persons", events="events", person="pid", qis=["age", "zip"], k=5, items=["item"], m=2,
                     key_name="clinic")
    arguments.update(extra)
    return publish_tables(con, name, **arguments)


@pytest.fixture(scope="module")
def published(module_con):
    """Two releases of the same tables, r1 (publishing the events' value too) and r2."""
    make_tables(module_con)
    recorded = publish(module_con, "r1", keep=[], events_keep=["value"])
    publish(module_con, "r2", events_keep=["value"])
    return module_con, recorded


def test_the_two_tables_join_within_a_release_on_the_documented_pseudonym(published):
    con, recorded = published
    persons = con.execute("SELECT * FROM r1_persons").df()
    events = con.execute("SELECT * FROM r1_events").df()
    source_p = con.execute("SELECT * FROM persons").df()
    source_e = con.execute("SELECT * FROM events").df()
    assert list(persons.columns) == ["pid", "age", "zip"] and list(events.columns) == ["pid", "item", "value"]
    # the pseudonym is the documented derivation: map every released pseudonym back to its person
    back = {release_pseudonym(p, KEY, "r1"): p for p in source_p["pid"]}
    assert persons["pid"].map(back).notna().all() and events["pid"].map(back).notna().all()
    assert persons["pid"].is_unique and set(events["pid"]) <= set(persons["pid"])
    # every person row's labels cover that person's own values
    mapped = persons.assign(raw=persons["pid"].map(back)).merge(source_p, left_on="raw", right_on="pid", suffixes=("", "_src"))
    for qi in ["age", "zip"]:
        lo_hi = mapped[qi].astype(str).str.split("-", expand=True)
        lo, hi = lo_hi[0].astype(int), lo_hi[lo_hi.columns[-1]].astype(int)
        assert ((lo <= mapped[qi + "_src"]) & (mapped[qi + "_src"] <= hi)).all()
    # join counts: each released person joins exactly the released events of that person, and no more than the source's
    joined = events.merge(persons, on="pid")
    assert len(joined) == len(events)
    released_counts = events.assign(raw=events["pid"].map(back)).groupby("raw").size()
    source_counts = source_e.groupby("pid").size()
    assert (released_counts <= source_counts.reindex(released_counts.index)).all()
    kept_people = set(persons["pid"].map(back))
    events_of_kept = source_e[source_e["pid"].isin(kept_people)]
    assert recorded["events_dropped"] == len(source_e) - len(events_of_kept)
    assert recorded["events_suppressed"] == len(events_of_kept) - len(events) and recorded["events_rows"] == len(events)
    assert recorded["persons_rows"] == len(persons)
    assert recorded["persons_without_events"] == len(set(persons["pid"]) - set(events["pid"]))
    assert len(events) > 0.5 * len(source_e)  # the release is not vacuous
    # the person table is a frozen release too: k holds on it, recomputed
    assert persons.groupby(["age", "zip"]).size().min() >= 5
    catalog = con.execute("SELECT source_table, method, k, person_column FROM anon_releases WHERE name = 'r1_persons'").fetchall()
    assert catalog == [("persons", "mondrian", 5, "pid")]


def test_two_releases_do_not_link_and_the_real_key_never_appears(published):
    con, _ = published
    one = set(con.execute("SELECT pid FROM r1_persons UNION SELECT pid FROM r1_events").df()["pid"])
    two = set(con.execute("SELECT pid FROM r2_persons UNION SELECT pid FROM r2_events").df()["pid"])
    assert one and two and not one & two
    assert con.execute("SELECT count(*) FROM r1_events e JOIN r2_persons p USING (pid)").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM r2_events e JOIN r1_persons p USING (pid)").fetchall() == [(0,)]
    plain = set(con.execute("SELECT anon_pseudonym(pid, 'clinic') FROM persons").df().iloc[:, 0])
    assert not (one | two) & plain  # not the pseudonyms a policy release with the same key publishes
    raw = {str(v) for v in con.execute("SELECT pid FROM persons").df()["pid"]}
    assert not (one | two) & raw and all(len(p) == 32 for p in one | two)
    for table in ["r1_persons", "r1_events", "r2_persons", "r2_events", "anon_table_releases", "anon_releases"]:
        text = con.execute(f"SELECT * FROM {table}").df().to_csv()
        assert KEY not in text and KEY[12:76] not in text
        assert "private note" not in text and "name 1" not in text  # undeclared columns stay out
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'name': release 'r1' exists"):
        publish(con, "r1", persons_into="other_p", events_into="other_e")
    with pytest.raises(DeclarationError, match=r"publish_rerelease\(\): argument 'previous': 'r2_persons' is the person table"):
        duckdb_anon.publish_rerelease(con, "persons", "r3_persons")  # it cannot make the per-release pseudonym
    # deterministic: the same tables give the same rows; only the pseudonyms differ between the releases
    for part in ("persons", "events"):
        rows = [sorted(map(str, con.execute(f"SELECT * EXCLUDE (pid) FROM r{n}_{part}").fetchall())) for n in (1, 2)]
        assert rows[0] == rows[1]
    by_person = [con.execute(f"SELECT p.* EXCLUDE (pid), list(e.item ORDER BY e.item, e.value) FROM r{n}_persons p "
                             f"LEFT JOIN r{n}_events e USING (pid) GROUP BY ALL ORDER BY ALL").fetchall() for n in (1, 2)]
    assert by_person[0] == by_person[1]


def test_a_person_suppressed_by_mondrian_has_no_row(con):
    make_tables(con, people=120)
    # region 'd' sits right under the root with one person: cutting the root suppresses them (every QI '*')
    con.execute("ALTER TABLE persons ADD COLUMN region VARCHAR")
    con.execute("UPDATE persons SET region = CASE WHEN pid = 7 THEN 'd' WHEN pid % 2 = 0 THEN 'a' ELSE 'b' END")
    con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('a', ['a', 'g1', '*']), ('b', ['b', 'g1', '*']), ('d', ['d', '*'])) v(leaf, path)")
    options = dict(qis=["age", "region"], hierarchies={"region": "h"}, max_suppression=0.05)
    recorded = publish(con, "r1", **options)
    starred = con.execute("SELECT pid FROM mondrian('persons', ['age', 'region'], 5, hierarchies := MAP {'region': 'h'}, "
                          "max_suppression := 0.05, keep := ['pid']) WHERE age = '*'").df()["pid"]
    assert 7 in set(starred) and recorded["persons_suppressed"] == len(starred)
    for gone in starred:
        hidden = release_pseudonym(gone, KEY, "r1")
        assert con.execute("SELECT count(*) FROM r1_persons WHERE pid = ?", [hidden]).fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM r1_events WHERE pid = ?", [hidden]).fetchall() == [(0,)]
    events_of_starred = con.execute("SELECT count(*) FROM events WHERE pid IN (SELECT unnest(?))", [list(starred)]).fetchall()[0][0]
    assert recorded["events_dropped"] == events_of_starred > 0
    assert recorded["persons_rows"] == 120 - len(starred)
    assert con.execute("SELECT count(*) FROM r1_persons WHERE age = '*' OR region = '*'").fetchall() == [(0,)]


def test_bad_arguments_name_the_argument_and_leave_nothing_behind(con):
    make_tables(con)
    con.execute("RESET VARIABLE duckdb_anon_key_clinic")
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'key_name': the pseudonym key duckdb_anon_key_clinic is not set"):
        publish(con, "r1")
    con.execute("SET VARIABLE duckdb_anon_key_clinic = 'anon-key-v1-0123'")
    with pytest.raises(DeclarationError, match=r"argument 'key_name'.*not a key from the key generator"):
        publish(con, "r1")
    duckdb_anon.set_pseudonym_key(con, "clinic", KEY)
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'person': 'item' does not identify"):
        publish(con, "r1", persons="events", person="item")
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'events_person': 'events' has no column 'nope'"):
        publish(con, "r1", events_person="nope")
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'm' must be an integer"):
        publish(con, "r1", m=0)
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'events': cannot read table 'missing'"):
        publish(con, "r1", events="missing")
    con.execute("CREATE TABLE bad_events AS SELECT 1 AS x")
    with pytest.raises(DeclarationError, match=r"publish_tables\(\): argument 'events_into': table 'bad_events' exists"):
        publish(con, "bad")
    with pytest.raises(duckdb.Error):  # a failure inside the publish (here: mondrian() refuses the QI)
        publish(con, "r2", qis=["age", "no_such_column"])
    left = con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'r2%' OR table_name LIKE '__anon_tables%'").fetchall()
    assert left == [] and con.execute("SELECT count(*) FROM anon_table_releases").fetchall() == [(0,)]
    assert con.execute("SELECT * FROM bad_events").fetchall() == [(1,)]
