"""Pseudonym keys: only keys in the generator's self-checking format are accepted, on both paths (the Python
helper and the session variable read by SQL at every read); typed, guessed or mistyped keys are refused;
keys from new_pseudonym_key() work and pseudonyms match an independent computation."""
import hashlib
import string

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import duckdb_anon
from duckdb_anon import roles
from tests.test_roles import declare_patients, make_patients
from tests.conftest import examples


def with_checksum(random_part):
    """A key around `random_part`, its checksum computed here with hashlib (not by the package)."""
    return f"anon-key-v1-{random_part}-{hashlib.sha256(('anon-key-v1-' + random_part).encode()).hexdigest()[:8]}"


def one_changed(key, at):
    return key[:at] + ("0" if key[at] != "0" else "1") + key[at + 1:]


FRESH = duckdb_anon.new_pseudonym_key()
GUESSABLE = {"32 hex digits": "0123456789abcdef0123456789abcdef", "22 letters": "abcdefghijklmnopqrstuv",
             "a keyboard row": "1234567890qwertyuiopas"}
WEAK = {**GUESSABLE, "empty": "", "one letter": "x", "password": "password", "64 times a": "a" * 64,
        "a passphrase": "correct horse battery staple",
        "truncated": FRESH[:-1], "upper case": FRESH.upper(), "random part alone": FRESH[12:], "padded": " " + FRESH,
        "typo in the random part": one_changed(FRESH, 30), "typo in the checksum": one_changed(FRESH, 80),
        "checksum around 64 times a": with_checksum("a" * 64),  # valid checksums, nothing random
        "checksum around a counted pattern": with_checksum("0123456789abcdef" * 4)}


@pytest.fixture(scope="module")
def declared(module_con):
    """The patients table with its roles and policy declared (each row below sets the key itself)."""
    make_patients(module_con)
    declare_patients(module_con)
    return module_con


@pytest.mark.parametrize("key", list(WEAK.values()), ids=list(WEAK))
def test_guessable_and_mistyped_keys_are_refused_by_the_helper(module_con, key):
    with pytest.raises(roles.DeclarationError, match=r"set_pseudonym_key\(\): argument 'key' .*new_pseudonym_key\(\)"):
        roles.set_pseudonym_key(module_con, "clinic", key)


@pytest.mark.parametrize("key", list(WEAK.values()), ids=list(WEAK))
def test_guessable_keys_set_in_sql_are_refused_when_the_release_is_read(declared, key):
    con = declared
    con.execute("SET VARIABLE duckdb_anon_key_clinic = ?", [key])
    with pytest.raises(duckdb.Error, match=r"anonymized\(\): the pseudonym key duckdb_anon_key_clinic .*new-key"):
        con.execute("SELECT * FROM anonymized('patients')").fetchall()


def test_a_generated_key_is_accepted_and_one_changed_character_anywhere_is_refused(module_con):
    key = duckdb_anon.new_pseudonym_key()
    roles.set_pseudonym_key(module_con, "clinic", key)
    assert module_con.execute("SELECT getvariable('duckdb_anon_key_clinic')").fetchall() == [(key,)]
    changed = [one_changed(key, at) for at in range(len(key))]
    problems = module_con.execute("SELECT list(anon_key_problem(k)) FROM unnest(?) t(k)", [changed]).fetchall()[0][0]
    assert all(p is not None for p in problems)


def test_a_new_256_bit_key_works_and_matches_an_independent_hmac_style_computation(con):
    key = duckdb_anon.new_pseudonym_key()
    random_part = key[len("anon-key-v1-"):-9]
    assert len(random_part) == 64 and all(c in string.hexdigits for c in random_part)
    assert key == with_checksum(random_part) and duckdb_anon.new_pseudonym_key() != key
    make_patients(con, n=50)
    declare_patients(con, k=5)
    roles.set_pseudonym_key(con, "clinic", key)
    released = sorted(r[0] for r in con.execute("SELECT pid FROM anonymized('patients')").fetchall())
    expected = sorted(hashlib.sha256((key + hashlib.sha256((key + str(i)).encode()).hexdigest()).encode()).hexdigest()[:32]
                      for i in range(50))
    assert released == expected


@settings(max_examples=examples(200), deadline=None)
@given(random_part=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
       | st.lists(st.sampled_from("0123456789abcdef"[:12]), min_size=4, max_size=8).map(lambda block: ("".join(block) * 16)[:64]),
       checksum_ok=st.booleans())
def test_the_rule_as_documented(module_con, random_part, checksum_ok):
    """Accepted exactly when: the format, the checksum, 10+ different hex digits, 32+ different adjacent pairs."""
    key = with_checksum(random_part) if checksum_ok else one_changed(with_checksum(random_part), 80)
    problem = module_con.execute("SELECT anon_key_problem(?)", [key]).fetchall()[0][0]
    looks_random = len(set(random_part)) >= 10 and len({random_part[i:i + 2] for i in range(63)}) >= 32
    assert (problem is None) == (checksum_ok and looks_random)
