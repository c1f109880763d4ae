"""Pseudonym keys: under 128 bits refused on both paths (the Python helper and the session variable read by
SQL), a 256-bit key from new_pseudonym_key() works, and pseudonyms match an independent computation."""
import hashlib
import string

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import duckdb_anon
from duckdb_anon import roles
from test_roles import declare_patients, make_patients

WEAK = ["", "x", "password", "passwordpasswordpassword", "a" * 64, "0123456789abcdef0123456789abcde",  # 31 hex digits
        "correct horse battery staple", "abababababababababababab"]
STRONG = ["0123456789abcdef0123456789abcdef", "Zq3xW8pLm2Rt6Yv9Bn4Kd7", "A1b2C3d4E5f6G7h8I9j0Kk=="]


@pytest.fixture(scope="module")
def declared(module_con):
    """The patients table with its roles and policy declared (each row below sets the key itself)."""
    make_patients(module_con)
    declare_patients(module_con)
    return module_con


@pytest.mark.parametrize("key", WEAK)
def test_weak_keys_are_refused_by_the_helper(module_con, key):
    with pytest.raises(roles.DeclarationError, match=r"set_pseudonym_key\(\): argument 'key'"):
        roles.set_pseudonym_key(module_con, "clinic", key)


@pytest.mark.parametrize("key", WEAK)
def test_weak_keys_set_in_sql_are_refused_when_the_release_is_read(declared, key):
    con = declared
    con.execute("SET VARIABLE duckdb_anon_key_clinic = ?", [key])
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): the pseudonym key duckdb_anon_key_clinic"):
        con.execute("SELECT * FROM anonymized('patients')").fetchall()


@pytest.mark.parametrize("key", STRONG)
def test_keys_of_128_bits_are_accepted(module_con, key):
    con = module_con
    roles.set_pseudonym_key(con, "clinic", key)
    assert con.execute("SELECT anon_key_problem(getvariable('duckdb_anon_key_clinic'))").fetchall() == [(None,)]


def test_a_new_256_bit_key_works_and_matches_an_independent_hmac_style_computation(con):
    key = duckdb_anon.new_pseudonym_key()
    assert len(key) == 64 and all(c in string.hexdigits for c in key)
    assert duckdb_anon.new_pseudonym_key() != key
    make_patients(con, n=50)
    declare_patients(con, k=5)
    roles.set_pseudonym_key(con, "clinic", key)
    released = sorted(r[0] for r in con.execute("SELECT pid FROM anonymized('patients')").fetchall())
    expected = sorted(hashlib.sha256((key + hashlib.sha256((key + str(i)).encode()).hexdigest()).encode()).hexdigest()[:32]
                      for i in range(50))
    assert released == expected


@settings(max_examples=200, deadline=None)
@given(key=st.text(alphabet=string.ascii_letters + string.digits + "+/_=- !", max_size=40)
       | st.text(alphabet="0123456789abcdefABCDEF", min_size=20, max_size=40))
def test_the_rule_as_documented(module_con, key):
    """Accepted exactly when: 32+ hex digits, or 22+ base64 characters not all hex; 10+ different characters."""
    problem = module_con.execute("SELECT anon_key_problem(?)", [key]).fetchall()[0][0]
    base64_alphabet = set(string.ascii_letters + string.digits + "+/_=-")
    all_hex = all(c in string.hexdigits for c in key)
    long_enough = len(key) >= 32 if all_hex else (len(key) >= 22 and set(key) <= base64_alphabet)
    assert (problem is None) == (long_enough and len(set(key)) >= 10)
