"""Wrong types given to the declaration functions are DeclarationError naming the function and the argument
(not AttributeError, and not a string DuckDB would cast: set_policy(k='10')); nothing is written."""
import pytest

from duckdb_anon import roles

CALLS = [  # (function, argument, call)
    ("declare_role", "column", lambda con: roles.declare_role(con, "p", None, "quasi_identifier")),
    ("declare_role", "column", lambda con: roles.declare_role(con, "p", 3, "quasi_identifier")),
    ("declare_role", "table", lambda con: roles.declare_role(con, None, "age", "quasi_identifier")),
    ("declare_role", "role", lambda con: roles.declare_role(con, "p", "age", ["quasi_identifier"])),
    ("declare_role", "hierarchy", lambda con: roles.declare_role(con, "p", "age", "quasi_identifier", hierarchy=5)),
    ("declare_role", "pseudonymize", lambda con: roles.declare_role(con, "p", "id", "identifier", pseudonymize="yes")),
    ("declare_role", "mask", lambda con: roles.declare_role(con, "p", "age", "masked", mask=1)),
    ("set_policy", "k", lambda con: roles.set_policy(con, "p", "10")),
    ("set_policy", "k", lambda con: roles.set_policy(con, "p", True)),
    ("set_policy", "k", lambda con: roles.set_policy(con, "p", 5.0)),
    ("set_policy", "k", lambda con: roles.set_policy(con, "p", 2**63 - 1)),
    ("set_policy", "table", lambda con: roles.set_policy(con, None, 5)),
    ("set_policy", "l", lambda con: roles.set_policy(con, "p", 5, l="2")),
    ("set_policy", "c", lambda con: roles.set_policy(con, "p", 5, c=None)),
    ("set_policy", "max_suppression", lambda con: roles.set_policy(con, "p", 5, max_suppression="0.1")),
    ("set_policy", "mode", lambda con: roles.set_policy(con, "p", 5, mode=None)),
    ("set_policy", "key_name", lambda con: roles.set_policy(con, "p", 5, key_name=7)),
    ("set_policy", "undeclared", lambda con: roles.set_policy(con, "p", 5, undeclared=["drop"])),
    ("create_anonymized_view", "view", lambda con: roles.create_anonymized_view(con, "p", None)),
]


@pytest.fixture(scope="module")
def people(module_con):
    module_con.execute("CREATE TABLE p AS SELECT range AS id, 20 + range % 50 AS age FROM range(10)")
    return module_con


@pytest.mark.parametrize("fn, arg, call", CALLS, ids=[f"{fn}-{arg}-{i}" for i, (fn, arg, _) in enumerate(CALLS)])
def test_a_wrong_type_is_a_declaration_error_naming_the_argument(people, fn, arg, call):
    with pytest.raises(roles.DeclarationError, match=rf"^{fn}\(\): argument '{arg}'"):
        call(people)
    assert people.execute("SELECT count(*) FROM anon_column_roles").fetchall() == [(0,)]
    assert people.execute("SELECT count(*) FROM anon_policies").fetchall() == [(0,)]
    assert people.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal AND view_name = 'None'").fetchall() == [(0,)]


def test_right_types_still_declare(people):
    roles.declare_role(people, "p", "age", "quasi_identifier")
    roles.set_policy(people, "p", 2, l=None, c=2.5, max_suppression=0)
    assert people.execute("SELECT role FROM anon_column_roles WHERE table_name = 'p'").fetchall() == [("quasi_identifier",)]
    assert people.execute("SELECT k, c FROM anon_policies WHERE table_name = 'p'").fetchall() == [(2, 2.5)]
    people.execute("DELETE FROM anon_column_roles; DELETE FROM anon_policies")
