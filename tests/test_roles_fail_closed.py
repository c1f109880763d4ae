"""Fail closed: a column nobody declared never reaches a release, when the declarations are applied and on
every later read (schema drift), from Python and from a plain DuckDB client that never imports the package."""
import subprocess
import sys
import textwrap

import duckdb
import pytest

import duckdb_anon
from duckdb_anon import roles
from test_roles import KEY, declare_patients, make_patients


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
    path = tmp_path / "clinic.duckdb"
    con = duckdb_anon.connect(str(path))
    make_patients(con)
    declare_patients(con)
    roles.create_anonymized_view(con, "patients", "patients_anon")
    con.close()
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
