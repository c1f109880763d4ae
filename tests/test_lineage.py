"""Publishing a second release of a source audits it for differencing against the first: refused with the
figures, or recorded with the risk when the caller allows it. Figures are recomputed in pandas from the two
release tables (matched on the published pseudonym), not from the package's measures."""
import duckdb
import pandas as pd
import pytest

import duckdb_anon
from duckdb_anon.roles import DeclarationError
from tests.independent import row_keys
from tests.test_roles import KEY

QIS = ["age", "sex", "zip"]
DECLARATIONS = """INSERT INTO anon_column_roles (table_name, column_name, role, pseudonymize) VALUES
    ('patients', 'patient_id', 'identifier', true), ('patients', 'name', 'identifier', false),
    ('patients', 'birth_date', 'identifier', false), ('patients', 'age', 'quasi_identifier', false),
    ('patients', 'zip', 'quasi_identifier', false), ('patients', 'sex', 'quasi_identifier', false),
    ('patients', 'diagnosis', 'sensitive', false), ('patients', 'visits', 'insensitive', false);
INSERT INTO anon_policies (table_name, k, l, key_name) VALUES ('patients', 10, 2, 'clinic');"""


def clinic(con):
    """The example `patients` (2,000 people) declared as in docs/releases.md, `more`: 2,100 people whose
    first 2,000 are those of `patients` (the rest are people to insert), and release r1."""
    duckdb_anon.load_patients(con)
    duckdb_anon.load_patients(con, "more", rows=2100)
    con.execute(DECLARATIONS)
    duckdb_anon.apply_policies(con)
    duckdb_anon.set_pseudonym_key(con, "clinic", KEY)
    duckdb_anon.publish_release(con, "patients", "r1")


def insert(con, n, first=2001):
    con.execute("INSERT INTO patients SELECT * FROM more WHERE patient_id BETWEEN ? AND ?", [f"P{first:05d}", f"P{first + n - 1:05d}"])


def differencing(a: pd.DataFrame, b: pd.DataFrame, qis, id_column, k):
    """pandas: (people below k, people singled out) when a and b are intersected on id_column."""
    both = a.assign(_a=row_keys(a, qis).values)[[id_column, "_a"]].merge(
        b.assign(_b=row_keys(b, qis).values)[[id_column, "_b"]], on=id_column, validate="one_to_one")
    effective = both.groupby(["_a", "_b"])[id_column].transform("size")
    return int((effective < k).sum()), int((effective == 1).sum())


@pytest.fixture(scope="module")
def published(module_con):
    clinic(module_con)
    return module_con


@pytest.mark.parametrize("inserted", [1, 10, 100])
def test_a_second_release_after_inserts_is_refused_with_the_figures_and_recorded_when_allowed(published, inserted):
    con = published
    insert(con, inserted)
    source = con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall()
    try:
        with pytest.raises(DeclarationError) as refused:
            duckdb_anon.publish_release(con, "patients", "r2")
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'r2'").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM anon_release_people WHERE release_name = 'r2'").fetchall() == [(0,)]
        recorded = duckdb_anon.publish_release(con, "patients", "r2", allow_differencing=True)
        below, singled = differencing(con.execute("SELECT * FROM r1").df(), con.execute("SELECT * FROM r2").df(),
                                      QIS, "patient_id", 10)
        assert below > 0
        message = str(refused.value)
        assert message.startswith("publish_release(): ") and "'r1'" in message
        assert f"leaves {below} of the 2000 people in both below k = 10 and singles out {singled}" in message
        assert recorded["previous_release"] == "r1" and recorded["person_column"] == "patient_id"
        assert (recorded["differencing_below_k"], recorded["differencing_singled_out"]) == (below, singled)
        warning = recorded["differencing_warning"]
        assert warning.startswith("published with allow_differencing") and f"leaves {below} " in warning
        assert con.execute("SELECT * FROM patients ORDER BY patient_id").fetchall() == source
    finally:
        con.execute("DELETE FROM patients WHERE patient_id > 'P02000'")
        con.execute("DROP TABLE IF EXISTS r2")
        con.execute("DELETE FROM anon_releases WHERE name = 'r2'")
        con.execute("DELETE FROM anon_release_people WHERE release_name = 'r2'")


def test_the_people_of_a_release_are_recorded_with_their_classes(published):
    """anon_release_people holds each release row's source person, as the catalog's keyed digest (never the
    raw id), and labels: the release's own rows, matched through the digest and pseudonym computed here."""
    from tests.independent import catalog_digest
    from tests.test_roles import expected_pseudonym
    release = published.execute("SELECT * FROM r1").df()
    people = published.execute("SELECT person, labels FROM anon_release_people WHERE release_name = 'r1'").df()
    raw = {str(i) for i in published.execute("SELECT patient_id FROM patients").df()["patient_id"]}
    assert not raw & set(people["person"])  # no raw id in the catalog
    pseudonym_of = {catalog_digest(published, i): expected_pseudonym(KEY, i) for i in raw}
    people["patient_id"] = [pseudonym_of[p] for p in people["person"]]
    people["recorded"] = [tuple(labels) for labels in people["labels"]]
    joined = release.merge(people, on="patient_id", validate="one_to_one")
    assert len(joined) == len(release) == 2000
    assert list(joined["recorded"]) == list(zip(*(joined[q] for q in QIS)))


def test_an_unchanged_source_can_be_published_again(published):
    """Nothing below k: the same data gives the same classes, so the audit finds nothing to refuse."""
    recorded = duckdb_anon.publish_release(published, "patients", "r1", replace=True)
    assert (recorded["differencing_below_k"], recorded["differencing_singled_out"]) == (0, 0)
    assert recorded["differencing_warning"] is None and recorded["previous_release"] is None


def test_without_a_person_column_a_later_release_fails_closed(con):
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 37 AS age FROM range(200)")
    first = duckdb_anon.publish_mondrian(con, "t", "m1", ["age"], 5)
    assert first["person_column"] is None
    with pytest.raises(DeclarationError, match=r"publish_mondrian\(\): the earlier release 'm1' of 't' cannot be audited "
                                               r".*without a column identifying its people.*allow_differencing=True"):
        duckdb_anon.publish_mondrian(con, "t", "m2", ["age"], 5, id_column="id")
    assert con.execute("SELECT count(*) FROM anon_releases").fetchall() == [(1,)]
    recorded = duckdb_anon.publish_mondrian(con, "t", "m2", ["age"], 5, id_column="id", allow_differencing=True)
    assert recorded["differencing_below_k"] is None and "without a differencing audit" in recorded["differencing_warning"]
    assert recorded["previous_release"] == "m1"


@pytest.mark.parametrize("id_column, words", [("nope", "has no column 'nope'"), ("age", "does not identify the rows")])
def test_a_bad_id_column_is_an_error_naming_it(con, id_column, words):
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 37 AS age FROM range(200)")
    con.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('t', 'id', 'identifier'), "
                "('t', 'age', 'quasi_identifier'); INSERT INTO anon_policies (table_name, k) VALUES ('t', 5)")
    duckdb_anon.apply_policies(con)
    with pytest.raises(DeclarationError, match=rf"publish_release\(\): argument 'id_column'.*{words}"):
        duckdb_anon.publish_release(con, "t", "r", id_column=id_column)
    assert duckdb_anon.publish_release(con, "t", "r")["person_column"] == "id"  # the declared identifier


def test_install_keeps_the_catalog_and_upgrades_an_old_one(tmp_path):
    path = str(tmp_path / "old.duckdb")
    old = duckdb.connect(path)  # anon_releases as an earlier version made it, with a release in it
    old.execute("CREATE TABLE anon_releases (name VARCHAR PRIMARY KEY, source_table VARCHAR NOT NULL, method VARCHAR NOT NULL, "
                "fingerprint VARCHAR, arguments VARCHAR, created_at TIMESTAMP NOT NULL, rows BIGINT NOT NULL, qis VARCHAR[] NOT NULL, "
                "k BIGINT, achieved_k BIGINT, sensitive VARCHAR, achieved_l BIGINT, achieved_t DOUBLE, ncp_percent DOUBLE)")
    old.execute("INSERT INTO anon_releases VALUES ('old', 't', 'mondrian', NULL, NULL, TIMESTAMP '2026-01-01', 3, ['a'], 2, 2, "
                "NULL, NULL, NULL, NULL)")
    duckdb_anon.install(old)
    old.execute("INSERT INTO anon_release_people VALUES ('old', 'p1', ['1-2'])")
    duckdb_anon.install(old)
    assert old.execute("SELECT name, person_column, previous_release FROM anon_releases").fetchall() == [("old", None, None)]
    assert old.execute("SELECT * FROM anon_release_people").fetchall() == [("old", "p1", ["1-2"])]
    old.close()


def test_publishing_refuses_declarations_changed_since_they_were_applied(con):
    """As anonymized() does: the release would not be the one the applied declarations describe."""
    from tests.test_roles import declare_patients, make_patients
    make_patients(con)
    declare_patients(con)
    duckdb_anon.set_pseudonym_key(con, "clinic", KEY)
    con.execute("UPDATE anon_policies SET k = 20")
    with pytest.raises(DeclarationError, match=r"publish_release\(\): argument 'table': .*changed since they were applied"):
        duckdb_anon.publish_release(con, "patients", "r")
    duckdb_anon.apply_policies(con)
    assert duckdb_anon.publish_release(con, "patients", "r")["k"] == 20
