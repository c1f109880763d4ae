"""The masking functions (sql/69_masking.sql) on their own and as the masked role: keyed fake values recomputed
in Python from the key, partial masking, noise, date shift, shuffle and ranges checked against plain Python
over small random inputs, and the errors."""
import hashlib

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import duckdb_anon
from duckdb_anon import roles
from tests.test_roles import KEY, OTHER_KEY
from tests.conftest import examples

FIRST = ["Ann", "Bob", "Cleo", "Dev", "Eve", "Finn", "Gus"]  # small pools of our own: no Faker needed
LAST = ["Moss", "Nash", "Oak", "Page", "Quinn"]
DOMAINS = ["mail.example", "post.example"]


@pytest.fixture(scope="module")
def mcon():
    con = duckdb_anon.connect()
    con.executemany("INSERT INTO anon_fake_values (pool_locale, pool_kind, pool) VALUES ('xx_TEST', ?, ?)",
                    [("first_name", FIRST), ("last_name", LAST), ("email_domain", DOMAINS)])
    roles.set_pseudonym_key(con, "k1", KEY)
    roles.set_pseudonym_key(con, "k2", OTHER_KEY)
    yield con
    con.close()


def digest(key: str, value) -> str:
    """The keyed digest, recomputed: SHA-256 of the key and the SHA-256 of the key and the value."""
    inner = hashlib.sha256((key + str(value)).encode()).hexdigest()
    return hashlib.sha256((key + inner).encode()).hexdigest()


def slot(key: str, value, number: int) -> int:
    return int(digest(key, value)[8 * number:8 * number + 8], 16)


def test_fake_names_are_picked_by_the_keyed_digest_of_the_person_alone(mcon):
    rows = mcon.execute("""SELECT person, anon_fake_first_name(real, 'k1', person := person, locale := 'xx_TEST'),
                                  anon_fake_name('another real name', 'k1', person := person, locale := 'xx_TEST'),
                                  anon_fake_email(real, 'k1', person := person, locale := 'xx_TEST'),
                                  anon_fake_first_name(real, 'k2', person := person, locale := 'xx_TEST')
                           FROM (SELECT range AS person, 'Real ' || range AS real FROM range(200))""").fetchall()
    for person, first, full, email, first_other_key in rows:
        expected_first = FIRST[slot(KEY, person, 0) % len(FIRST)]
        expected_last = LAST[slot(KEY, person, 1) % len(LAST)]
        assert first == expected_first  # the real value plays no part: only the key and the person
        assert full == f"{expected_first} {expected_last}"  # the same person: the same first name everywhere
        assert email == (f"{expected_first.lower()}.{expected_last.lower()}{slot(KEY, person, 2) % 100}"
                         f"@{DOMAINS[slot(KEY, person, 3) % len(DOMAINS)]}")
        assert first_other_key == FIRST[slot(OTHER_KEY, person, 0) % len(FIRST)]
    assert sum(r[1] != r[4] for r in rows) > 100  # another key, other names (7 names: about 6 in 7 differ)
    assert mcon.execute("SELECT anon_fake_name(NULL, 'k1', locale := 'xx_TEST')").fetchall()[0][0] is None


def test_keyed_masks_refuse_to_run_without_a_key_and_name_the_function(mcon):
    for sql, fn in [("SELECT anon_fake_name('a', 'nokey', locale := 'xx_TEST')", "anon_fake_first_name()"),
                    ("SELECT anon_noise(1.0, 0.1, 'nokey')", "anon_noise()"),
                    ("SELECT anon_date_shift(DATE '2020-01-01', 3, 'nokey', 1)", "anon_date_noise()"),
                    ("SELECT anon_shuffle(i, 'nokey', i) FROM range(3) t(i)", "anon_shuffle()")]:
        with pytest.raises(duckdb.Error, match="no pseudonym key in this session") as err:
            mcon.execute(sql).fetchall()
        assert fn in str(err.value)
    with pytest.raises(duckdb.Error, match=r"anon_fake_first_name\(\): argument 'locale': no fake first_name values"):
        mcon.execute("SELECT anon_fake_first_name('a', 'k1', locale := 'zz_NONE')").fetchall()


def partial(value: str, prefix: int, padding: str, suffix: int) -> str:
    if len(value) <= prefix + suffix:
        return padding
    return value[:prefix] + padding + (value[len(value) - suffix:] if suffix else "")


@settings(max_examples=examples(60), deadline=None)
@given(values=st.lists(st.text(alphabet="abcXYZ0189 -'", max_size=12), min_size=1, max_size=8),
       prefix=st.integers(0, 4), suffix=st.integers(0, 4), padding=st.sampled_from(["XXXX", "*", ""]))
def test_partial_keeps_only_the_prefix_and_suffix(mcon, values, prefix, padding, suffix):
    got = mcon.execute("SELECT list_transform(?::VARCHAR[], lambda v: anon_partial(v, ?, ?, ?))",
                       [values, prefix, padding, suffix]).fetchall()[0][0]
    assert got == [partial(v, prefix, padding, suffix) for v in values]


@settings(max_examples=examples(25), deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3000)), min_size=2, max_size=25),
       days=st.integers(0, 40))
def test_date_shift_keeps_every_interval_within_a_person(mcon, rows, days):
    shifted = mcon.execute("""SELECT person, d, anon_date_shift(d, ?, 'k1', person)::DATE
                              FROM (SELECT unnest(?::INTEGER[]) AS person, DATE '2000-01-01' + unnest(?::INTEGER[]) AS d)""",
                           [days, [p for p, _ in rows], [d for _, d in rows]]).fetchall()
    offsets = {}
    for person, original, moved in shifted:
        offset = (moved - original).days
        assert -days <= offset <= days
        offsets.setdefault(person, set()).add(offset)
    assert all(len(found) == 1 for found in offsets.values())  # one offset per person: intervals kept
    assert len(shifted) == len(rows)


@settings(max_examples=examples(25), deadline=None)
@given(values=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=30), ratio=st.sampled_from([0.0, 0.05, 0.5]))
def test_noise_stays_within_the_ratio_and_is_keyed(mcon, values, ratio):
    rows = mcon.execute("""SELECT v, anon_noise(v, ?, 'k1', person := i), anon_noise(v, ?, 'k1', person := i),
                                  anon_noise(v, ?, 'k2', person := i)
                           FROM (SELECT unnest(?::BIGINT[]) AS v, unnest(range(len(?))) AS i)""",
                        [ratio, ratio, ratio, values, values]).fetchall()
    for v, noisy, again, _ in rows:
        assert abs(noisy - v) <= ratio * abs(v) + 1e-6 and noisy == again
    if ratio > 0 and any(v != 0 for v in values):
        assert any(a != c for v, a, _, c in rows if v != 0)


@settings(max_examples=examples(25), deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=1, max_size=30))
def test_shuffle_is_a_keyed_permutation_of_the_column(mcon, values):
    sql = """SELECT i, v, anon_shuffle(v, ?, i) AS s FROM (SELECT unnest(range(len(?))) AS i, unnest(?::INTEGER[]) AS v)
             ORDER BY i"""
    first = mcon.execute(sql, ["k1", values, values]).fetchall()
    assert first == mcon.execute(sql, ["k1", values, values]).fetchall()  # deterministic
    key = lambda x: (x is None, x)  # noqa: E731
    assert sorted((r[2] for r in first), key=key) == sorted(values, key=key)  # the same values, as often
    if len(set(values)) == len(values) > 1:
        assert all(r[1] != r[2] for r in first)  # every value moved to another row


@settings(max_examples=examples(40), deadline=None)
@given(value=st.integers(-10**5, 10**5), width=st.integers(1, 500))
def test_range_holds_the_value(mcon, value, width):
    text = mcon.execute("SELECT anon_range(?, ?)", [value, width]).fetchall()[0][0]
    low, high = (int(part) for part in text.strip("[)").split(", "))
    assert low <= value < high and high - low == width and low % width == 0


def test_bad_arguments_name_the_function_and_the_argument(mcon):
    for sql, words in [("SELECT anon_partial('abc', -1, 'X', 0)", "anon_partial(): argument 'prefix'"),
                       ("SELECT anon_noise(1, -0.5, 'k1')", "anon_noise(): argument 'ratio'"),
                       ("SELECT anon_date_noise(DATE '2020-01-01', 1.5, 'k1')", "anon_date_noise(): argument 'days'"),
                       ("SELECT anon_range(3, 0)", "anon_range(): argument 'width'"),
                       ("SELECT anon_date_trunc(DATE '2020-01-01', 'decade')", "anon_date_trunc(): argument 'unit'"),
                       ("SELECT anon_fake_name('a', NULL, locale := 'xx_TEST')", "argument 'key_name' is NULL")]:
        with pytest.raises(duckdb.Error) as err:
            mcon.execute(sql).fetchall()
        assert words in str(err.value)


def test_masked_role_applies_in_anonymized_and_bad_declarations_are_refused(con):
    con.executemany("INSERT INTO anon_fake_values (pool_locale, pool_kind, pool) VALUES ('xx_TEST', ?, ?)",
                    [("first_name", FIRST), ("last_name", LAST)])
    con.execute("CREATE TABLE p AS SELECT range AS pid, 'Real ' || range AS name, 20 + range % 40 AS age, "
                "'0612' || lpad(range::VARCHAR, 6, '0') AS phone FROM range(200)")
    roles.declare_role(con, "p", "pid", "identifier")
    roles.declare_role(con, "p", "age", "quasi_identifier")
    roles.declare_role(con, "p", "name", "masked", mask="name", mask_args={"by": "pid", "locale": "xx_TEST"})
    for bad, argument in [(dict(mask="nope"), "'mask'"), (dict(mask="partial", mask_args={"prefix": 2}), "'mask_args'"),
                          (dict(mask="range", mask_args={"width": 5}), "'mask_args'"),  # a number mask on text
                          (dict(mask="name", mask_args={"by": "no_such"}), "'mask_args'")]:
        with pytest.raises(roles.DeclarationError, match=f"declare_role\\(\\): argument {argument}"):
            roles.declare_role(con, "p", "phone", "masked", **bad)
    roles.declare_role(con, "p", "phone", "masked", mask="partial", mask_args={"prefix": 2, "padding": "******", "suffix": 2})
    roles.set_policy(con, "p", 5, key_name="k")
    assert roles.apply_policies(con) == {}
    roles.set_pseudonym_key(con, "k", KEY)
    release = con.execute("SELECT * FROM anonymized('p')").df()
    assert list(release.columns) == ["name", "age", "phone"]  # pid dropped
    expected = {f"{FIRST[slot(KEY, pid, 0) % len(FIRST)]} {LAST[slot(KEY, pid, 1) % len(LAST)]}" for pid in range(200)}
    assert set(release["name"]) <= expected and not set(release["name"]) & {f"Real {i}" for i in range(200)}
    assert set(release["phone"]) == {"06******" + f"{i:06d}"[-2:] for i in range(200)}


def test_connect_does_not_load_fake_values_and_load_fake_values_loads_each_locale_once(con):
    assert con.execute("SELECT count(*) FROM anon_fake_values").fetchall()[0][0] == 0
    from duckdb_anon.masking import load_fake_values
    assert load_fake_values(con, ["en_US", "fr_FR"]) == ["en_US", "fr_FR"]
    assert load_fake_values(con, ["en_US"]) == []  # already there: kept
    pools = dict(((loc, kind), values) for loc, kind, values in
                 con.execute("SELECT pool_locale, pool_kind, pool FROM anon_fake_values").fetchall())
    assert {kind for _, kind in pools} == {"first_name", "last_name", "email_domain", "phone", "address", "company"}
    assert "Michael" in pools[("en_US", "first_name")] and "Martin" in pools[("fr_FR", "last_name")]
    assert all(len(values) == len(set(values)) > 0 for values in pools.values())
    with pytest.raises(ValueError, match="load_fake_values\\(\\): argument 'locales'"):
        load_fake_values(con, ["xx_NOWHERE"])


def test_a_catalog_made_before_the_masked_role_is_upgraded_with_its_rows(tmp_path):
    path = str(tmp_path / "old.duckdb")
    with duckdb.connect(path) as old:  # the catalog as earlier versions created it
        old.execute("""CREATE TABLE anon_column_roles (table_name VARCHAR NOT NULL, column_name VARCHAR NOT NULL,
                       role VARCHAR NOT NULL CHECK (role IN ('identifier', 'quasi_identifier', 'sensitive', 'insensitive')),
                       hierarchy VARCHAR, pseudonymize BOOLEAN NOT NULL DEFAULT false, PRIMARY KEY (table_name, column_name))""")
        old.execute("CREATE TABLE t AS SELECT 1 AS a, 'x' AS b")
        old.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('t', 'a', 'quasi_identifier')")
    con = duckdb_anon.connect(path)
    try:
        roles.declare_role(con, "t", "b", "masked", mask="partial", mask_args={"prefix": 0, "padding": "*", "suffix": 0})
        assert con.execute("SELECT column_name, role FROM anon_column_roles ORDER BY 1").fetchall() == [
            ("a", "quasi_identifier"), ("b", "masked")]
    finally:
        con.close()


def test_a_mask_without_by_keys_on_the_tables_one_person_column(con):
    """Before: without mask_args['by'] a fake name was keyed on the real name, a fixed substitution that
    frequency-rank matching reads back without the key (docs/masking.md). Now the table's one person column
    keys it."""
    con.executemany("INSERT INTO anon_fake_values (pool_locale, pool_kind, pool) VALUES ('xx_TEST', ?, ?)",
                    [("first_name", FIRST), ("last_name", LAST)])
    duckdb_anon.load_patients(con, "p", rows=1000)
    roles.declare_role(con, "p", "patient_id", "identifier")
    roles.declare_role(con, "p", "age", "quasi_identifier")
    roles.declare_role(con, "p", "name", "masked", mask="name", mask_args={"locale": "xx_TEST"})
    roles.set_policy(con, "p", 2, key_name="k", undeclared="drop")
    assert roles.apply_policies(con) == {}
    roles.set_pseudonym_key(con, "k", KEY)
    people = con.execute("SELECT patient_id, name FROM p ORDER BY patient_id").fetchall()
    release = sorted(r[0] for r in con.execute("SELECT name FROM anonymized('p')").fetchall())
    by_person = [f"{FIRST[slot(KEY, pid, 0) % len(FIRST)]} {LAST[slot(KEY, pid, 1) % len(LAST)]}" for pid, _ in people]
    assert release == sorted(by_person)  # keyed on patient_id, recomputed from the key
    by_value = [r[0] for r in con.execute("SELECT anon_fake_name(name, 'k', locale := 'xx_TEST') FROM p ORDER BY patient_id").fetchall()]
    real = [name for _, name in people]
    fakes_of = lambda fakes: {r: {f for r2, f in zip(real, fakes) if r2 == r} for r in set(real)}  # noqa: E731
    assert all(len(f) == 1 for f in fakes_of(by_value).values())  # by value: one fake per real name, a substitution
    assert min(len(f) for f in fakes_of(by_person).values()) > 1  # by person: no real name keeps one fake
    # two person columns: which one is the person is for the declaration to say
    roles.declare_role(con, "p", "zip", "identifier")
    problem = roles.apply_policies(con)["p"]
    assert "mask_args['by']" in problem and "patient_id, zip" in problem
    with pytest.raises(duckdb.Error, match=r"mask_args\['by'\]"):
        con.execute("SELECT * FROM anonymized('p')").fetchall()


def test_a_privacy_unit_keys_masks_and_a_table_with_no_person_column_keys_on_the_value(con):
    con.execute("CREATE TABLE ev AS SELECT range % 7 AS pid, 'Real ' || (range % 7) AS name, range % 3 AS day FROM range(30)")
    con.execute("CREATE TABLE other AS SELECT 'Real ' || range AS name, range AS day FROM range(5)")
    for table in ("ev", "other"):
        roles.declare_role(con, table, "name", "masked", mask="name")
        roles.declare_role(con, table, "day", "quasi_identifier")
        roles.set_policy(con, table, 1, key_name="k", undeclared="drop")
    duckdb_anon.declare_privacy_unit(con, "ev", "pid")
    roles.apply_policies(con)
    args = dict(con.execute("SELECT table_name, mask_args FROM anon_roles WHERE role = 'masked'").fetchall())
    assert args == {"ev": {"by": "pid"}, "other": None}  # no person column: the user's documented risk


def test_date_trunc_with_an_unknown_unit_names_the_function_and_the_argument(module_con):
    with pytest.raises(duckdb.Error, match=r"anon_date_trunc\(\): argument 'unit' must be one of"):
        module_con.execute("SELECT anon_date_trunc(DATE '2024-05-17', 'fortnight')").fetchall()
    assert module_con.execute("SELECT anon_date_trunc(DATE '2024-05-17', 'quarter')::DATE").fetchall()[0][0].isoformat() == "2024-04-01"
