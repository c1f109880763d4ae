"""Declared roles -> anonymized() -> views: k-anonymity checked independently, identifiers dropped or
pseudonymized, persistence in the file for plain DuckDB clients, and the bad declarations."""
import hashlib
import subprocess
import sys
import textwrap

import duckdb
import pytest

import duckdb_anon
from duckdb_anon import roles
from tests.independent import class_sizes, row_keys

KEY = "anon-key-v1-d1e3b8fcffdc570476ff28016409a6c3a16316fcf5514944ea1fca4ae69f9ffe-8a5de635"  # from new_pseudonym_key()
OTHER_KEY = "anon-key-v1-4bfebaebae2ae7d41f0db5286657b71c7f947fd1d593bf2874278bb952b743eb-d9dfd02e"


def make_patients(con, name="patients", n=600):
    con.execute(f"""CREATE TABLE {name} AS SELECT range AS pid, 'Name ' || range AS full_name, 20 + range % 53 AS age,
                    10000 + (range * 7) % 41 AS zip, ['flu', 'asthma', 'diabetes', 'none'][range % 4 + 1] AS diagnosis,
                    range % 3 AS visits FROM range({n})""")


def declare_patients(con, name="patients", k=10, **policy):
    roles.declare_role(con, name, "pid", "identifier", pseudonymize=True)
    roles.declare_role(con, name, "full_name", "identifier")
    roles.declare_role(con, name, "age", "quasi_identifier")
    roles.declare_role(con, name, "zip", "quasi_identifier")
    roles.declare_role(con, name, "diagnosis", "sensitive")
    roles.declare_role(con, name, "visits", "insensitive")
    roles.set_policy(con, name, k, key_name="clinic", **policy)
    roles.apply_policies(con)


def make_clinic_file(path):
    """A database file at `path` holding patients, its declarations applied, and the live view patients_anon."""
    con = duckdb_anon.connect(str(path))
    make_patients(con)
    declare_patients(con)
    roles.create_anonymized_view(con, "patients", "patients_anon")
    con.close()
    return path


def expected_pseudonym(key, value):
    inner = hashlib.sha256((key + str(value)).encode()).hexdigest()
    return hashlib.sha256((key + inner).encode()).hexdigest()[:32]


def test_declared_roles_give_a_k_anonymous_l_diverse_view(con):
    make_patients(con)
    before = con.execute("SELECT * FROM patients ORDER BY pid").fetchall()
    declare_patients(con, l=2)
    roles.set_pseudonym_key(con, "clinic", KEY)
    roles.create_anonymized_view(con, "patients", "patients_anon")
    release = con.execute("SELECT * FROM patients_anon").df()
    assert list(release.columns) == ["pid", "age", "zip", "diagnosis", "visits"]  # full_name dropped
    assert len(release) == 600 and class_sizes(release, ["age", "zip"]).min() >= 10
    key = row_keys(release, ["age", "zip"])
    assert release.groupby(key.values)["diagnosis"].nunique().min() >= 2
    assert sorted(release["pid"]) == sorted(expected_pseudonym(KEY, i) for i in range(600))
    assert con.execute("SELECT * FROM patients ORDER BY pid").fetchall() == before  # source untouched
    # the view follows the data
    con.execute("INSERT INTO patients SELECT range, 'x', 30, 10001, 'flu', 0 FROM range(600, 650)")
    grown = con.execute("SELECT * FROM patients_anon").df()
    assert len(grown) == 650 and class_sizes(grown, ["age", "zip"]).min() >= 10


def test_pseudonyms_are_stable_across_tables_and_change_with_the_key(con):
    make_patients(con, "patients")
    con.execute("CREATE TABLE visits AS SELECT pid, 40 + pid % 30 AS weight, pid % 5 AS ward FROM patients")
    declare_patients(con)
    roles.declare_role(con, "visits", "pid", "identifier", pseudonymize=True)
    roles.declare_role(con, "visits", "weight", "quasi_identifier")
    roles.declare_role(con, "visits", "ward", "quasi_identifier")
    roles.set_policy(con, "visits", 5, key_name="clinic")
    roles.apply_policies(con)
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): no pseudonym key in this session: SET VARIABLE duckdb_anon_key_clinic"):
        con.execute("SELECT * FROM anonymized('patients')").fetchall()
    roles.set_pseudonym_key(con, "clinic", KEY)
    first = set(r[0] for r in con.execute("SELECT pid FROM anonymized('patients')").fetchall())
    joined = con.execute("SELECT count(*) FROM anonymized('patients') p JOIN anonymized('visits') v USING (pid)").fetchone()[0]
    assert len(first) == 600 and joined == 600  # joins survive pseudonymization
    roles.set_pseudonym_key(con, "clinic", OTHER_KEY)
    second = set(r[0] for r in con.execute("SELECT pid FROM anonymized('patients')").fetchall())
    assert len(second) == 600 and not first & second


def test_views_work_from_a_plain_duckdb_client_after_reopening(tmp_path):
    path = make_clinic_file(tmp_path / "clinic.duckdb")
    con = duckdb.connect(str(path))
    con.execute("CREATE VIEW patients_k5 AS SELECT * FROM mondrian('patients', ['age', 'zip'], 5)")
    con.close()
    script = textwrap.dedent(f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r})
        con.execute("SET VARIABLE duckdb_anon_key_clinic = '{KEY}'")
        for view in ("patients_anon", "patients_k5"):
            rows = con.execute(f"SELECT age, zip, count(*) OVER (PARTITION BY age, zip) FROM {{view}}").fetchall()
            print(view, len(rows), min(r[2] for r in rows))
        assert "duckdb_anon" not in sys.modules
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    sizes = dict((line.split()[0], (int(line.split()[1]), int(line.split()[2]))) for line in out.stdout.splitlines())
    assert sizes["patients_anon"][0] == 600 and sizes["patients_anon"][1] >= 10
    assert sizes["patients_k5"][0] == 600 and sizes["patients_k5"][1] >= 5


def test_reinstall_upgrades_functions_and_keeps_declarations(tmp_path):
    path = str(tmp_path / "clinic.duckdb")
    con = duckdb_anon.connect(path)
    make_patients(con)
    declare_patients(con)
    con.execute("CREATE OR REPLACE MACRO duckdb_anon_version() AS '0.0.1'")
    con.close()
    con = duckdb.connect(path)
    duckdb_anon.install(con)
    assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
    assert con.execute("SELECT count(*) FROM anon_column_roles").fetchone()[0] == 6
    roles.set_pseudonym_key(con, "clinic", KEY)
    assert con.execute("SELECT count(*) FROM anonymized('patients')").fetchone()[0] == 600
    con.close()


def test_bad_declarations(con):
    make_patients(con)
    with pytest.raises(roles.DeclarationError, match=r"declare_role\(\): argument 'column': .* has no column 'height'"):
        roles.declare_role(con, "patients", "height", "quasi_identifier")
    with pytest.raises(roles.DeclarationError, match=r"declare_role\(\): argument 'role'"):
        roles.declare_role(con, "patients", "age", "secret")
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    with pytest.raises(roles.DeclarationError, match=r"'age' of 'patients' is already declared quasi_identifier"):
        roles.declare_role(con, "patients", "age", "sensitive")
    with pytest.raises(duckdb.ConstraintException):  # the same, written as plain SQL
        con.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('patients', 'age', 'sensitive')")
    with pytest.raises(roles.DeclarationError, match=r"set_policy\(\)"):
        roles.set_policy(con, "patients", 0)


def test_declaring_again_is_a_no_op_and_a_policy_needs_a_table(con):
    """A script or notebook run twice declares the same roles twice: nothing changes. Another role (or
    hierarchy, or pseudonymization) for a declared column still needs the old row deleted first."""
    make_patients(con)
    roles.declare_role(con, "patients", "pid", "identifier", pseudonymize=True)
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    before = con.execute("SELECT * FROM anon_column_roles ORDER BY ALL").fetchall()
    roles.declare_role(con, "patients", "pid", "identifier", pseudonymize=True)
    roles.declare_role(con, "patients", "AGE", "quasi_identifier")
    assert con.execute("SELECT * FROM anon_column_roles ORDER BY ALL").fetchall() == before
    for other in [("age", "sensitive", {}), ("pid", "identifier", {}), ("age", "quasi_identifier", {"hierarchy": "h_age"})]:
        with pytest.raises(roles.DeclarationError, match=r"declare_role\(\): argument 'column': .* is already declared"):
            roles.declare_role(con, "patients", other[0], other[1], **other[2])
    with pytest.raises(roles.DeclarationError, match=r"set_policy\(\): argument 'table' names no readable table: no_such_table"):
        roles.set_policy(con, "no_such_table", 10)
    assert con.execute("SELECT count(*) FROM anon_policies").fetchall()[0][0] == 0


@pytest.mark.parametrize("sql, message", [
    ("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('patients', 'height', 'quasi_identifier')",
     "the table has no column 'height'"),
    ("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('patients', 'AGE', 'sensitive')",
     "column 'AGE' has 2 roles"),
    ("UPDATE anon_column_roles SET role = 'insensitive' WHERE column_name = 'age'",
     "declares no quasi_identifier column"),
])
def test_invalid_declarations_written_in_sql_are_reported_by_anonymized(con, sql, message):
    make_patients(con)
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    roles.set_policy(con, "patients", 10)
    con.execute(sql)
    roles.apply_policies(con)
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): .*" + message):
        con.execute("SELECT * FROM anonymized('patients')").fetchall()


def test_policy_with_suppression_and_an_older_catalog(tmp_path):
    import duckdb as plain_duckdb
    path = str(tmp_path / "old.duckdb")
    old = plain_duckdb.connect(path)  # the catalog as the first version made it, without max_suppression
    old.execute("""CREATE TABLE anon_policies (table_name VARCHAR PRIMARY KEY, k INTEGER NOT NULL, mode VARCHAR NOT NULL DEFAULT 'strict',
                   l DOUBLE, l_kind VARCHAR NOT NULL DEFAULT 'distinct', c DOUBLE NOT NULL DEFAULT 2, t DOUBLE, key_name VARCHAR)""")
    old.close()
    con = duckdb_anon.connect(path)
    make_patients(con)
    declare_patients(con, k=25, max_suppression=0.05)
    roles.set_pseudonym_key(con, "clinic", KEY)
    release = con.execute("SELECT * FROM anonymized('patients')").df()
    hidden = release["age"] == "*"
    assert len(release) == 600 and hidden.sum() <= 30
    assert class_sizes(release[~hidden], ["age", "zip"]).min() >= 25
    con.close()


def test_stale_declarations_and_changed_columns_are_errors_at_query_time(con):
    make_patients(con)
    declare_patients(con)
    roles.set_pseudonym_key(con, "clinic", KEY)
    roles.create_anonymized_view(con, "patients", "patients_anon")
    con.execute("UPDATE anon_policies SET k = 20")
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): the declarations of 'patients' changed since they were applied"):
        con.execute("SELECT * FROM patients_anon").fetchall()
    roles.apply_policies(con)
    assert class_sizes(con.execute("SELECT * FROM patients_anon").df(), ["age", "zip"]).min() >= 20
    con.execute("ALTER TABLE patients DROP COLUMN zip")
    # two checks see the dropped column and DuckDB runs them in no fixed order: either names it
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): table 'patients' no longer has .*'zip' is gone|"
                                           r"mondrian\(\): argument 'qis' \(table 'patients'\) lacks the column\(s\) 'zip'"):
        con.execute("SELECT * FROM patients_anon").fetchall()
