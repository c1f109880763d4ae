"""Privacy unit declarations: a person column, a key reaching it through another table, and what goes
wrong with them. Counts of people are recomputed with plain SQL over the source."""
import duckdb
import pytest

import duckdb_anon
from tests.conftest import assert_error_names
from duckdb_anon.roles import DeclarationError


@pytest.fixture
def clinic(con):
    con.execute("CREATE TABLE patients AS SELECT range AS patient_id, 'P' || range AS name FROM range(300)")
    # each patient has 1 to 4 visits; each visit one diagnosis
    con.execute("CREATE TABLE visits AS SELECT p.patient_id AS patient, v AS visit, ['flu', 'asthma', 'migraine'][(p.patient_id + v) % 3 + 1] AS diagnosis "
                "FROM patients p, range(4) t(v) WHERE v <= p.patient_id % 4")
    duckdb_anon.declare_privacy_unit(con, "patients", "patient_id")
    duckdb_anon.declare_privacy_unit(con, "visits", "patient", via_table="patients", via_key="patient_id")
    return con


def bounded_people(con, table, **extra):
    arguments = "".join(f", {k} := {v}" for k, v in extra.items())
    return dict(con.execute(f"SELECT diagnosis, persons FROM dp_bounded_aggregates('{table}', ['diagnosis'], "
                            f"max_groups_contributed := 3, max_rows_per_group := 4, key := 'k'{arguments})").fetchall())


def test_a_table_reaching_the_person_through_a_key_counts_people_not_rows(clinic):
    expected = dict(clinic.execute("SELECT diagnosis, count(DISTINCT patient) FROM visits GROUP BY ALL").fetchall())
    assert bounded_people(clinic, "visits") == expected
    rows = dict(clinic.execute("SELECT diagnosis, count(*) FROM visits GROUP BY ALL").fetchall())
    assert rows != expected  # visits repeat people: a row-level count would be another figure


def test_the_declared_unit_gives_what_an_explicit_column_gives(clinic):
    assert bounded_people(clinic, "visits") == bounded_people(clinic, "visits", privacy_unit_column="'patient'")


def test_a_key_that_repeats_in_the_person_table_is_refused(clinic):
    clinic.execute("INSERT INTO patients VALUES (5, 'twin')")
    assert_error_names(clinic, "SELECT * FROM privacy_unit_rows('visits')", ["privacy_unit_rows", "patient_id", "repeats"])


def test_an_explicit_column_contradicting_the_declaration_is_refused(clinic):
    assert_error_names(clinic, "SELECT * FROM dp_bounded_aggregates('visits', ['diagnosis'], max_groups_contributed := 1, "
                               "privacy_unit_column := 'visit')", ["dp_bounded_aggregates", "'privacy_unit_column'", "declared"])


def test_declarations_changed_without_compiling_are_refused(clinic):
    clinic.execute("UPDATE anon_privacy_units SET unit_column = 'name' WHERE table_name = 'patients'")
    assert_error_names(clinic, "SELECT * FROM privacy_unit_rows('patients')", ["privacy_unit_rows", "changed", "apply_privacy_units"])
    duckdb_anon.apply_privacy_units(clinic)
    assert clinic.execute("SELECT count(DISTINCT __anon_unit) FROM privacy_unit_rows('patients')").fetchall()[0][0] == 300


def test_bad_declarations(con):
    con.execute("CREATE TABLE people AS SELECT 1 AS id")
    with pytest.raises(DeclarationError, match="declare_privacy_unit.*no column 'pid'"):
        duckdb_anon.declare_privacy_unit(con, "people", "pid")
    with pytest.raises(DeclarationError, match="'via_table' and 'via_key'"):
        duckdb_anon.declare_privacy_unit(con, "people", "id", via_table="people")
    con.execute("CREATE TABLE events AS SELECT 1 AS who")
    with pytest.raises(DeclarationError, match="no privacy unit of its own"):
        duckdb_anon.declare_privacy_unit(con, "events", "who", via_table="people", via_key="id")
    # nothing of a refused declaration stays behind
    assert con.execute("SELECT count(*) FROM anon_privacy_units").fetchall()[0][0] == 0


def test_declarations_and_the_compiled_macro_persist_in_the_file(tmp_path):
    path = str(tmp_path / "units.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE people AS SELECT range AS id FROM range(7)")
    duckdb_anon.declare_privacy_unit(con, "people", "id")
    con.close()
    plain = duckdb.connect(path)  # no package: the macro reads the declaration
    assert plain.execute("SELECT count(DISTINCT __anon_unit) FROM privacy_unit_rows('people')").fetchall()[0][0] == 7
    plain.close()
