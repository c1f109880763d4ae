"""Every publisher against every invariant of the publishing core (duckdb_anon.publishing), table-driven: a
new publisher is added to PUBLISHERS and gets every check. Each check recomputes its property from the tables
with plain SQL, numpy or hashlib, not with the package's measures:

- the source is intact (a checksum of its rows before and after), and a target that is the source (by its
  name, in another case, or through a view) is refused naming the publisher and the argument;
- replace=True never replaces a table that is not a recorded release;
- storage order carries nothing of raw ids (|Spearman rho| between a row's position and its person's raw id
  under 0.05, on 3,000 people stored sorted by id) nor, for per-release pseudonyms, of another release;
- every publish is in the append-only publish log, a replaced release's earlier record included, with an
  unbroken hash chain (recomputed here with hashlib);
- no table or view the package created holds a raw identifier.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

import duckdb_anon
from duckdb_anon import roles
from duckdb_anon.publishing import PublishError

KEY = roles.new_pseudonym_key()
PEOPLE = 3000


def make_sources(con) -> None:
    """patients (3,000, stored in id order, ids unrelated to the QIs) and their events (1-4 each, id order)."""
    con.execute(f"""CREATE TABLE patients AS SELECT 'P' || lpad(range::VARCHAR, 6, '0') AS patient_id,
                    'Name ' || lpad(range::VARCHAR, 6, '0') AS full_name, (20 + hash(range, 'a') % 50)::INTEGER AS age,
                    (10000 + hash(range, 'z') % 9)::INTEGER AS zip, ['flu', 'asthma', 'diabetes', 'none'][(hash(range, 'd') % 4)::INTEGER + 1] AS diagnosis,
                    (hash(range, 'v') % 5)::INTEGER AS visits FROM range({PEOPLE}) ORDER BY patient_id""")
    con.execute("""CREATE TABLE events AS SELECT p.patient_id, (hash(p.patient_id, e.i) % 12)::INTEGER AS item
                   FROM patients p, range(4) e(i) WHERE e.i <= hash(p.patient_id, 'n') % 4 ORDER BY p.patient_id, e.i""")
    for column, role, extra in (("patient_id", "identifier", {"pseudonymize": True}), ("full_name", "identifier", {}),
                                ("age", "quasi_identifier", {}), ("zip", "quasi_identifier", {}),
                                ("diagnosis", "sensitive", {}), ("visits", "insensitive", {})):
        roles.declare_role(con, "patients", column, role, **extra)
    roles.set_policy(con, "patients", 10, key_name="clinic")
    roles.apply_policies(con)
    roles.set_pseudonym_key(con, "clinic", KEY)
    duckdb_anon.declare_privacy_unit(con, "patients", "patient_id")
    duckdb_anon.declare_privacy_unit(con, "events", "patient_id", via_table="patients", via_key="patient_id")
    duckdb_anon.set_dp_budget(con, "patients", 100.0, 1e-3)


def pseudonym(value: str) -> str:
    inner = hashlib.sha256((KEY + value).encode()).hexdigest()
    return hashlib.sha256((KEY + inner).encode()).hexdigest()[:32]


def release_pseudonym(release: str, value: str) -> str:
    """anon_release_pseudonym, recomputed: the keyed digest under the release key (itself the digest of
    'release:' || name under the key)."""
    release_key = pseudonym("release:" + release)
    inner = hashlib.sha256((release_key + value).encode()).hexdigest()
    return hashlib.sha256((release_key + inner).encode()).hexdigest()[:32]


# Each publisher: how it publishes `name` (the tables it writes: name, and more for some), what it reads,
# and how a row of its first table is mapped back to a raw id (None: its rows are not people).
def _release(con, name, replace=False):
    return duckdb_anon.publish_release(con, "patients", name, replace=replace, allow_differencing=True)


def _mondrian(con, name, replace=False):
    return duckdb_anon.publish_mondrian(con, "patients", name, ["age", "zip"], 10, keep=["patient_id"], id_column="patient_id",
                                        replace=replace, allow_differencing=True)


def _rerelease(con, name, replace=False):
    if not con.execute("SELECT count(*) FROM anon_releases WHERE name = 'first_of_lineage'").fetchall()[0][0]:
        duckdb_anon.publish_mondrian(con, "patients", "first_of_lineage", ["age", "zip"], 10, keep=["patient_id"],
                                     id_column="patient_id", allow_differencing=True)
    return duckdb_anon.publish_rerelease(con, "patients", name, previous="first_of_lineage", replace=replace)


def _km(con, name, replace=False):
    return duckdb_anon.publish_km(con, "events", name, items=["item"], k=5, m=2, person="patient_id", key_name="clinic",
                                  replace=replace, allow_differencing=True)


def _tables(con, name, replace=False):
    text = name if isinstance(name, str) and name else "bad"  # a bad persons_into is checked first
    return duckdb_anon.publish_tables(con, text + "_set", persons="patients", events="events", person="patient_id",
                                      qis=["age", "zip"], k=10, items=["item"], m=2, key_name="clinic", persons_into=name,
                                      events_into=text + "_ev", replace=replace, allow_differencing=True)


def _dp(con, name, replace=False):
    return duckdb_anon.publish_dp(con, "events", name, group_by=["item"], epsilon=0.5, delta=1e-5, max_groups_contributed=2,
                                  replace=replace)


def _walk(con, name, replace=False):
    return duckdb_anon.preserve_patterns(con, "patients", ["age"], name, segment_size=20, sample=0.1, iterations=10,
                                         replace=replace)


PUBLISHERS = {
    # name: (function, publisher's name in errors, source read, argument naming the target, raw id of a row)
    "publish_release": (_release, "publish_release", "patients", "name", lambda release, v: v),
    "publish_mondrian": (_mondrian, "publish_mondrian", "patients", "name", lambda release, v: v),
    "publish_rerelease": (_rerelease, "publish_rerelease", "patients", "name", lambda release, v: v),
    "publish_km": (_km, "publish_km", "events", "name", lambda release, v: v),
    "publish_tables": (_tables, "publish_tables", "patients", "persons_into", lambda release, v: v),
    "publish_dp": (_dp, "publish_dp", "events", "name", None),
    "preserve_patterns": (_walk, "preserve_patterns", "patients", "target", lambda release, v: v),
}


def raw_ids_by_row(con, publisher: str, table: str) -> list[str]:
    """The raw patient id of each row of release `table`, in storage order, mapped back independently."""
    ids = [r[0] for r in con.execute("SELECT patient_id FROM patients").fetchall()]
    stored = [r[0] for r in con.execute(f'SELECT patient_id FROM "{table}"').fetchall()]  # scan = storage order
    if publisher == "publish_release":
        back = {pseudonym(i): i for i in ids}
    elif publisher in ("publish_km", "publish_tables"):
        release = table + "_set" if publisher == "publish_tables" else table
        back = {release_pseudonym(release, i): i for i in ids}
    else:
        back = {i: i for i in ids}
    return [back[s] for s in stored]


def spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def checksum(con, table: str):
    return con.execute(f'SELECT count(*), sum(hash(COLUMNS(*))) FROM (SELECT * FROM "{table}")').fetchall()[0]


@pytest.fixture(scope="module")
def db(module_con):
    make_sources(module_con)
    module_con.execute("CREATE VIEW patients_view AS SELECT * FROM patients")
    return module_con


@pytest.mark.parametrize("publisher", PUBLISHERS)
def test_a_release_never_replaces_what_it_reads(db, publisher):
    publish, fn, source, argument, _ = PUBLISHERS[publisher]
    before = {t: checksum(db, t) for t in ("patients", "events")}
    for target in (source, source.upper()):
        for replace in (False, True):
            with pytest.raises(PublishError, match=rf"{fn}\(\): argument '{argument}': '{target}' is a table the release reads"):
                publish(db, target, replace=replace)
    with pytest.raises(PublishError, match=rf"{fn}\(\): argument '{argument}': 'patients_view' is a view"):
        publish(db, "patients_view", replace=True)
    db.execute("CREATE OR REPLACE TABLE not_a_release AS SELECT 42 AS answer")
    with pytest.raises(PublishError, match=rf"{fn}\(\): argument '{argument}': table 'not_a_release' is not a release recorded"):
        publish(db, "not_a_release", replace=True)
    assert db.execute("SELECT * FROM not_a_release").fetchall() == [(42,)]
    assert {t: checksum(db, t) for t in ("patients", "events")} == before
    for bad in ([] if publisher == "publish_tables" else [None]) + ["", 'quo"te']:  # persons_into=None: the default name
        with pytest.raises(PublishError, match=rf"{fn}\(\): argument '{argument}'"):
            publish(db, bad)


@pytest.mark.parametrize("publisher", PUBLISHERS)
def test_storage_order_carries_nothing_of_raw_ids_and_the_log_keeps_every_publish(db, publisher):
    publish, fn, source, argument, raw_id = PUBLISHERS[publisher]
    name = f"order_{publisher}"
    before = checksum(db, source)
    publish(db, name)
    publish(db, name, replace=True)  # the log keeps both
    assert checksum(db, source) == before
    if raw_id is not None:
        ids = raw_ids_by_row(db, publisher, name)
        position = np.arange(len(ids))
        assert len(ids) >= 2000
        assert abs(spearman(position, np.array([int(i[1:]) for i in ids]))) < 0.05
    rows = db.execute("SELECT publisher, record FROM anon_publish_log WHERE release_name = ? ORDER BY seq",
                      [name + "_set" if publisher == "publish_tables" else name]).fetchall()
    assert [r[0] for r in rows] == [fn, fn]
    log = db.execute("SELECT seq, published_at, publisher, release_name, tables, sources, unit_table, epsilon, delta, record, "
                     "previous_hash, hash FROM anon_publish_log ORDER BY seq").fetchall()
    previous = ""
    for i, row in enumerate(log):
        seq, at, who, release, tables, sources, unit, epsilon, delta, record, prev, digest = row
        assert seq == i + 1 and prev == previous
        at_text, epsilon_text, delta_text = db.execute("SELECT ?::TIMESTAMP::VARCHAR, ?::DOUBLE::VARCHAR, ?::DOUBLE::VARCHAR",
                                                       [at, epsilon, delta]).fetchall()[0]
        fields = [prev, str(seq), at_text, who, release, "\x1e".join(tables), "\x1e".join(sources), unit or "",
                  epsilon_text, delta_text, record or ""]
        assert digest == hashlib.sha256("\x1f".join(fields).encode()).hexdigest()
        previous = digest


@pytest.mark.parametrize("publisher", ["publish_km", "publish_tables"])
def test_two_releases_with_their_own_pseudonyms_are_stored_in_unrelated_orders(db, publisher):
    publish = PUBLISHERS[publisher][0]
    positions = []
    for name in (f"pair_a_{publisher}", f"pair_b_{publisher}"):
        publish(db, name)
        ids = raw_ids_by_row(db, publisher, name)
        spots: dict[str, list[int]] = {}  # a person's mean position: the first would favour people with many rows
        for position, i in enumerate(ids):
            spots.setdefault(i, []).append(position)
        positions.append({i: float(np.mean(p)) for i, p in spots.items()})
    common = sorted(set(positions[0]) & set(positions[1]))
    assert len(common) >= 2000
    # unrelated orders: within 4 standard errors of 0 (1 / sqrt(n - 1) for Spearman's rho); the keys are fresh
    # each run, so a fixed 0.05 (2.2 standard errors at 2,000 people) failed about one run in 35
    rho = spearman(np.array([positions[0][i] for i in common]), np.array([positions[1][i] for i in common]))
    assert abs(rho) < 4 / np.sqrt(len(common) - 1)


def test_no_table_or_view_the_package_made_holds_a_raw_identifier(db):
    """After every publisher ran (the tests above), scan every text cell of every table and view except the
    two sources for a raw patient id or name: the catalog holds keyed digests only."""
    for publisher, (publish, *_rest) in PUBLISHERS.items():
        if not db.execute("SELECT count(*) FROM anon_publish_log WHERE publisher = ?", [_rest[0]]).fetchall()[0][0]:
            publish(db, f"scan_{publisher}")
    relations = db.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                           "AND table_name NOT IN ('patients', 'events') UNION ALL SELECT view_name FROM duckdb_views() "
                           "WHERE NOT internal AND database_name = current_database() AND view_name NOT IN ('patients_view') "
                           "AND view_name NOT LIKE 'anonymized%'").fetchall()
    # releases keep patient_id raw where the test asked (mondrian keep, the walk): those tables are the user's choice
    asked_raw = {r[0] for r in db.execute("SELECT unnest(tables) FROM anon_publish_log WHERE publisher IN "
                                          "('publish_mondrian', 'publish_rerelease', 'preserve_patterns')").fetchall()}
    scanned = 0
    for (relation,) in relations:
        if f"memory.main.{relation.lower()}" in asked_raw:
            continue
        found = db.execute(f'SELECT count(*) FROM "{relation}" t WHERE regexp_matches(CAST(t AS VARCHAR), '
                           "'(P|Name )[0-9]{6}')").fetchall()[0][0]
        assert found == 0, relation
        scanned += 1
    assert scanned >= 10


def test_the_dp_ledger_adds_up_and_an_edit_by_hand_is_refused(db):
    db.execute("CREATE TABLE ledger_people AS SELECT range AS pid, range % 5 AS g FROM range(200)")
    duckdb_anon.declare_privacy_unit(db, "ledger_people", "pid")
    duckdb_anon.set_dp_budget(db, "ledger_people", 3.0, 1e-3)
    arguments = dict(group_by=["g"], epsilon=1.0, delta=1e-5, max_groups_contributed=1)
    duckdb_anon.publish_dp(db, "ledger_people", "ledger_r", **arguments)
    duckdb_anon.publish_dp(db, "ledger_people", "ledger_r", replace=True, **arguments)
    spent, logged, releases = db.execute(
        "SELECT b.epsilon_spent, (SELECT sum(epsilon) FROM anon_publish_log WHERE unit_table = 'ledger_people'), l.releases "
        "FROM anon_dp_budgets b JOIN anon_dp_ledger l USING (unit_table) WHERE unit_table = 'ledger_people'").fetchall()[0]
    assert spent == pytest.approx(2.0) and logged == pytest.approx(2.0) and releases == 2
    for edit, undo in (("UPDATE anon_dp_budgets SET epsilon_spent = 0 WHERE unit_table = 'ledger_people'",
                        "UPDATE anon_dp_budgets SET epsilon_spent = 2.0 WHERE unit_table = 'ledger_people'"),
                       ("UPDATE anon_publish_log SET epsilon = 0 WHERE seq = (SELECT max(seq) FROM anon_publish_log)",
                        "UPDATE anon_publish_log SET epsilon = 1.0 WHERE seq = (SELECT max(seq) FROM anon_publish_log)")):
        db.execute(edit)
        with pytest.raises(PublishError, match=r"publish_dp\(\): .*(edited by hand|add up)"):
            duckdb_anon.publish_dp(db, "ledger_people", "ledger_r2", **arguments)
        db.execute(undo)
    kept = db.execute("SELECT * FROM anon_publish_log WHERE seq = (SELECT max(seq) FROM anon_publish_log)").fetchall()
    db.execute("DELETE FROM anon_publish_log WHERE seq = (SELECT max(seq) FROM anon_publish_log)")
    db.execute("UPDATE anon_dp_budgets SET epsilon_spent = 1.0, delta_spent = 1e-5 WHERE unit_table = 'ledger_people'")
    with pytest.raises(PublishError, match=r"publish_dp\(\): the last spend recorded"):
        duckdb_anon.publish_dp(db, "ledger_people", "ledger_r2", **arguments)
    db.execute("INSERT INTO anon_publish_log VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", list(kept[0]))
    db.execute("UPDATE anon_dp_budgets SET epsilon_spent = 2.0, delta_spent = 2e-5 WHERE unit_table = 'ledger_people'")
    duckdb_anon.publish_dp(db, "ledger_people", "ledger_r2", **arguments)  # restored: it adds up again
    assert db.execute("SELECT epsilon_spent FROM anon_dp_budgets WHERE unit_table = 'ledger_people'").fetchall()[0][0] == \
        pytest.approx(3.0)


def test_the_catalog_key_lives_beside_the_file_and_an_older_catalog_is_digested(tmp_path):
    """A file database: the key file appears beside it (owner-only), the same key is read back by the next
    connection (so a later release is audited against the earlier one's people), and raw persons an older
    version recorded are replaced by their digests at install."""
    import os
    import stat

    from tests.independent import catalog_digest
    path = tmp_path / "clinic.duckdb"
    con = duckdb_anon.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 'P' || lpad(range::VARCHAR, 6, '0') AS id, range % 40 AS age FROM range(200)")
    duckdb_anon.publish_mondrian(con, "t", "t1", ["age"], 5, keep=["id"], id_column="id")
    key_file = tmp_path / "clinic.duckdb.anon-key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    first = catalog_digest(con, "P000007")
    con.close()
    con = duckdb_anon.connect(str(path))
    assert catalog_digest(con, "P000007") == first == con.execute("SELECT anon_person_digest('P000007')").fetchall()[0][0]
    duckdb_anon.publish_mondrian(con, "t", "t2", ["age"], 5, keep=["id"], id_column="id", allow_differencing=True)
    assert con.execute("SELECT count(*) FROM anon_release_people a JOIN anon_release_people b USING (person) "
                       "WHERE a.release_name = 't1' AND b.release_name = 't2'").fetchall() == [(200,)]  # matched across sessions
    assert key_file.read_text().strip() not in path.read_bytes().decode("latin-1")  # never inside the file
    con.execute("DELETE FROM anon_catalog_people_digested; DELETE FROM anon_release_people")  # as an older version left it
    con.execute("INSERT INTO anon_release_people VALUES ('old', 'P000123', ['x'])")
    con.close()
    con = duckdb_anon.connect(str(path))
    assert con.execute("SELECT person FROM anon_release_people WHERE release_name = 'old'").fetchall() == \
        [(catalog_digest(con, "P000123"),)]
    con.close()


def test_a_publish_on_a_full_disk_names_the_publisher_and_leaves_nothing(tmp_path, installed_template):
    """On a real tmpfs a little larger than the database: the release's write fills it; the error names the
    publisher and the operation, and neither the table, nor its catalog row, nor a log row is left."""
    import os
    import shutil
    import subprocess

    folder = tmp_path / "tiny"
    folder.mkdir()
    size = 2 * os.path.getsize(installed_template) // 1024 + 4096  # room to install, not for the release
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {mounted.stderr.strip()}")
    try:
        path = folder / "full.duckdb"
        shutil.copy(installed_template, path)
        con = duckdb_anon.connect(str(path))
        con.execute("CREATE TEMP TABLE big AS SELECT i AS id, i % 50 AS age, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s "
                    "FROM range(100000) r(i)")
        with pytest.raises(PublishError, match=r"publish_mondrian\(\): the disk is full while writing release 'big_r'"):
            duckdb_anon.publish_mondrian(con, "big", "big_r", ["age"], 5, keep=["s"])
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'big_r'").fetchall() == [(0,)]
        assert con.execute("SELECT (SELECT count(*) FROM anon_releases) + (SELECT count(*) FROM anon_publish_log)").fetchall() == [(0,)]
        con.close()
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_masked_copy_stores_no_table_in_its_source_order(tmp_path, installed_template):
    """The masked copy (another file) keeps the storage-order promise: a table stored in raw-id order is
    copied in an order unrelated to the ids its pseudonyms stand for."""
    import shutil

    source = tmp_path / "source.duckdb"
    shutil.copy(installed_template, source)
    con = duckdb_anon.connect(str(source))
    make_sources(con)
    con.close()
    duckdb_anon.masked_copy(source, tmp_path / "copy.duckdb", keys={"clinic": KEY}, tables=["patients"])
    copy = duckdb_anon.connect(str(tmp_path / "copy.duckdb"))
    back = {pseudonym("P" + str(i).zfill(6)): i for i in range(PEOPLE)}
    ids = [back[r[0]] for r in copy.execute("SELECT patient_id FROM patients").fetchall()]
    copy.close()
    assert sorted(ids) == list(range(PEOPLE))
    assert abs(spearman(np.arange(len(ids)), np.array(ids))) < 0.05


def test_the_dbt_package_orders_releases_by_the_cores_key():
    """The dbt materializations are Jinja and cannot call Python: their release_order() macro must render the
    core's own key."""
    import re
    from pathlib import Path

    from duckdb_anon import publishing
    text = (Path(duckdb_anon.__file__).parent / "dbt_package" / "macros" / "sql_text.sql").read_text()
    body = re.search(r"{% macro release_order\(\) -%}\n(.*?)\n{%- endmacro %}", text, re.S).group(1)
    assert body == f"ORDER BY {publishing.order_key()}"
