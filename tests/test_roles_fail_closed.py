"""Fail closed: a column nobody declared never reaches a release, when the declarations are applied and on
every later read (schema drift), from Python and from a plain DuckDB client that never imports the package."""
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

import duckdb_anon
from duckdb_anon import roles
from tests.test_roles import KEY, declare_patients, make_clinic_file, make_patients


def test_undeclared_columns_are_refused_naming_the_function_table_and_every_column(con):
    make_patients(con)
    con.execute("ALTER TABLE patients ADD COLUMN birth_date DATE")
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    roles.declare_role(con, "patients", "zip", "quasi_identifier")
    roles.set_policy(con, "patients", 10)
    problems = roles.apply_policies(con)
    for column in ("pid", "full_name", "diagnosis", "visits", "birth_date"):
        assert column in problems["patients"]
    with pytest.raises(duckdb.Error) as err:
        con.execute("SELECT * FROM anonymized('patients')").fetchall()
    message = str(err.value)
    assert "anonymized()" in message and "'patients'" in message
    assert all(column in message for column in ("pid", "full_name", "diagnosis", "visits", "birth_date"))


def test_policy_may_drop_undeclared_columns(con):
    make_patients(con)
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    roles.declare_role(con, "patients", "zip", "quasi_identifier")
    roles.declare_role(con, "patients", "visits", "insensitive")
    roles.set_policy(con, "patients", 10, undeclared="drop")
    assert roles.apply_policies(con) == {}
    release = con.execute("SELECT * FROM anonymized('patients')").df()
    assert list(release.columns) == ["age", "zip", "visits"] and len(release) == 600
    assert release.groupby(["age", "zip"]).size().min() >= 10
    with pytest.raises(roles.DeclarationError, match=r"set_policy\(\): argument 'undeclared'"):
        roles.set_policy(con, "patients", 10, undeclared="keep")


def _add_ssn(con):
    con.execute("ALTER TABLE patients ADD COLUMN ssn VARCHAR")
    con.execute("UPDATE patients SET ssn = lpad(pid::VARCHAR, 3, '0') || '-12-3456'")


@pytest.mark.parametrize("undeclared", ["error", "drop"])
def test_a_column_added_after_applying_never_reaches_a_read(con, undeclared):
    make_patients(con)
    declare_patients(con)
    roles.set_policy(con, "patients", 10, key_name="clinic", undeclared=undeclared)
    roles.apply_policies(con)
    roles.set_pseudonym_key(con, "clinic", KEY)
    roles.create_anonymized_view(con, "patients", "patients_anon")
    _add_ssn(con)
    for query in ("SELECT * FROM anonymized('patients')", "SELECT * FROM patients_anon"):
        if undeclared == "error":
            with pytest.raises(duckdb.Error, match=r"anonymized\(\): table 'patients' has columns with no declared role: ssn"):
                con.execute(query).fetchall()
        else:
            release = con.execute(query).df()
            assert "ssn" not in release.columns and len(release) == 600
            assert not release.astype(str).apply(lambda col: col.str.contains("-12-3456")).any().any()


def test_drift_through_a_view_from_a_plain_client(tmp_path):
    """ADD COLUMN and a removed identifier declaration, read through the view by a process that never
    imports duckdb_anon: neither the new column nor the raw ids are published."""
    path = make_clinic_file(tmp_path / "clinic.duckdb")
    reader = textwrap.dedent(f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r})
        con.execute("SET VARIABLE duckdb_anon_key_clinic = '{KEY}'")
        step = sys.argv[1]
        if step == "add_column":
            con.execute("ALTER TABLE patients ADD COLUMN ssn VARCHAR")
            con.execute("UPDATE patients SET ssn = pid::VARCHAR || '-12-3456'")
        elif step == "drop_identifier_declaration":
            con.execute("DELETE FROM anon_column_roles WHERE column_name = 'pid'")
        elif step == "reapply":
            con.execute(con.execute("SELECT anon_compile_policies()").fetchall()[0][0])
        try:
            rows = con.execute("SELECT * FROM patients_anon").df()
            print("published", ",".join(rows.columns), len(rows))
        except duckdb.Error as err:
            print("refused", str(err).replace(chr(10), " "))
        assert "duckdb_anon" not in sys.modules
    """)

    def read(step):
        out = subprocess.run([sys.executable, "-c", reader, step], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert read("none").startswith("published pid,age,zip,diagnosis,visits 600")
    refused = read("add_column")
    assert refused.startswith("refused") and "no declared role: ssn" in refused
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE patients DROP COLUMN ssn")
    con.close()
    assert read("none").startswith("published")
    stale = read("drop_identifier_declaration")
    assert stale.startswith("refused") and "changed since they were applied" in stale
    undeclared = read("reapply")
    assert undeclared.startswith("refused") and "no declared role: pid" in undeclared


def test_declarations_match_columns_in_any_case(con):
    con.execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS Age, range % 7 AS zip FROM range(300)")
    con.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('p', 'ID', 'identifier'), "
                "('p', 'AGE', 'quasi_identifier'), ('p', 'Zip', 'quasi_identifier')")
    con.execute("INSERT INTO anon_policies (table_name, k) VALUES ('p', 12)")
    assert roles.apply_policies(con) == {}
    release = con.execute("SELECT * FROM anonymized('p')").df()
    assert list(release.columns) == ["Age", "zip"] and len(release) == 300  # the table's own spelling; id left out
    assert release.groupby(["Age", "zip"]).size().min() >= 12


# Schema changes that keep every declared name but not every declared column: the names move, or hold
# another column, or another type. Each is read through the view by a client that never imports duckdb_anon.
SAME_NAMES_OTHER_COLUMNS = {
    "swap_same_type": ["ALTER TABLE patients RENAME full_name TO tmp", "ALTER TABLE patients RENAME diagnosis TO full_name",
                       "ALTER TABLE patients RENAME tmp TO diagnosis"],
    "swap_other_type": ["ALTER TABLE patients RENAME pid TO tmp", "ALTER TABLE patients RENAME diagnosis TO pid",
                        "ALTER TABLE patients RENAME tmp TO diagnosis"],
    "drop_then_rename_into_it": ["ALTER TABLE patients DROP COLUMN visits", "ALTER TABLE patients RENAME full_name TO visits"],
    "type_change": ["ALTER TABLE patients ALTER visits TYPE VARCHAR", "UPDATE patients SET visits = full_name"],
    "recreated_in_another_order": ["CREATE TABLE reordered AS SELECT pid, age, zip, diagnosis, full_name, visits FROM patients",
                                   "DROP TABLE patients", "ALTER TABLE reordered RENAME TO patients"],
}
EXPECTED_COMPLAINTS = {  # what the refusal says about each moved column, as the error words it
    "swap_same_type": ["'full_name' is column 5, declared as column 2", "'diagnosis' is column 2, declared as column 5"],
    "swap_other_type": ["'pid' is column 5, declared as column 1", "'diagnosis' is column 1, declared as column 5"],
    "drop_then_rename_into_it": ["'full_name' is gone (declared as column 2)", "'visits' is column 2, declared as column 6"],
    "type_change": ["'visits' is VARCHAR, declared as BIGINT"],
    "recreated_in_another_order": ["'full_name' is column 5, declared as column 2", "'diagnosis' is column 4, declared as column 5"],
}

PLAIN_READER = textwrap.dedent("""
    import json, sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("SET VARIABLE duckdb_anon_key_clinic = ?", [sys.argv[2]])
    for statement in json.loads(sys.argv[3]):
        con.execute(statement)
    if sys.argv[4] == "reapply":
        con.execute(con.execute("SELECT anon_compile_policies()").fetchall()[0][0])
    try:
        rows = con.execute("SELECT * FROM patients_anon").df()
        print(json.dumps({"published": rows.astype(str).to_dict("list")}))
    except duckdb.Error as err:
        print(json.dumps({"refused": str(err)}))
    assert "duckdb_anon" not in sys.modules
""")


def _plain_read(path, statements, then=""):
    out = subprocess.run([sys.executable, "-c", PLAIN_READER, str(path), KEY, json.dumps(statements), then],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def clinic_template(tmp_path_factory):
    return make_clinic_file(tmp_path_factory.mktemp("template") / "clinic.duckdb")


@pytest.fixture
def clinic_file(clinic_template, tmp_path):
    """A copy of the clinic database file, its declarations applied, for one test to change."""
    return Path(shutil.copy(clinic_template, tmp_path / "clinic.duckdb"))


@pytest.mark.parametrize("change", sorted(SAME_NAMES_OTHER_COLUMNS))
def test_a_declared_name_that_no_longer_names_its_column_is_refused_from_a_plain_client(clinic_file, change):
    result = _plain_read(clinic_file, SAME_NAMES_OTHER_COLUMNS[change])
    assert "refused" in result, f"published after {change}: {result}"
    message = result["refused"]
    assert "anonymized(): table 'patients' no longer has the columns its declarations were applied to" in message
    assert all(complaint in message for complaint in EXPECTED_COMPLAINTS[change]), message
    plain = duckdb.connect(str(clinic_file), read_only=True)  # the refusal changed nothing
    assert plain.execute("SELECT count(*) FROM patients").fetchall() == [(600,)]
    plain.close()


def test_renames_that_restore_every_column_and_applied_changes_are_published(clinic_file):
    round_trip = ["ALTER TABLE patients RENAME pid TO tmp", "ALTER TABLE patients RENAME tmp TO pid"]
    published = _plain_read(clinic_file, round_trip)["published"]
    assert list(published) == ["pid", "age", "zip", "diagnosis", "visits"] and len(published["pid"]) == 600
    retyped = _plain_read(clinic_file, ["ALTER TABLE patients ALTER visits TYPE VARCHAR", CLEAR_RECORDED], then="reapply")
    assert sorted(set(retyped["published"]["visits"])) == ["0", "1", "2"]  # declared again, on the new type
    assert not any(value.startswith("Name ") for column in retyped["published"].values() for value in column)


CLEAR_RECORDED = "UPDATE anon_column_roles SET column_index = NULL, data_type = NULL WHERE table_name = 'patients'"


def test_applying_again_does_not_accept_a_swap_until_the_recorded_places_are_cleared(clinic_file):
    """Every install applies the declarations (the CLI, the dbt plugin, duckdb_anon.connect): each declared
    column's place and type, recorded when it was first applied, keep a swap refused across applies."""
    refused = _plain_read(clinic_file, SAME_NAMES_OTHER_COLUMNS["swap_same_type"], then="reapply")["refused"]
    assert "anonymized(): the declarations of 'patients' are invalid: column" in refused
    assert "declared when it was column 2 (VARCHAR)" in refused or "declared when it was column 5 (VARCHAR)" in refused
    duckdb_anon.connect(str(clinic_file)).close()  # installs, so applies again, from Python
    assert "declared when it was column" in _plain_read(clinic_file, [])["refused"]
    published = _plain_read(clinic_file, [CLEAR_RECORDED], then="reapply")["published"]  # the user's explicit choice
    assert list(published) == ["pid", "diagnosis", "age", "zip", "visits"] and len(published["pid"]) == 600  # as it now is


@pytest.mark.parametrize("column", ["pid", "full_name", "age", "visits"])  # pseudonymized, dropped, QI, published
def test_a_declared_column_renamed_away_is_refused_naming_it(clinic_file, column):
    result = _plain_read(clinic_file, [f"ALTER TABLE patients RENAME {column} TO renamed"])
    assert "refused" in result and f'"{column}"' in result["refused"].replace("'", '"'), result
