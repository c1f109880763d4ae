"""Frozen releases (publish_release, publish_mondrian, anon_releases) and the differencing audit of two
releases of overlapping data, checked with pandas."""
import duckdb
import pytest

import duckdb_anon
from duckdb_anon import roles
from duckdb_anon.roles import DeclarationError
from tests.independent import class_sizes
from tests.test_roles import KEY, declare_patients, make_patients


def test_a_frozen_release_stays_put_while_a_live_view_moves(con):
    make_patients(con)
    declare_patients(con, l=2)
    roles.set_pseudonym_key(con, "clinic", KEY)
    roles.create_anonymized_view(con, "patients", "patients_live")
    recorded = duckdb_anon.publish_release(con, "patients", "patients_2026")
    frozen = con.execute("SELECT * FROM patients_2026").df()
    assert len(frozen) == 600 and list(frozen.columns) == ["pid", "age", "zip", "diagnosis", "visits"]
    sizes = class_sizes(frozen, ["age", "zip"])
    diverse = frozen.groupby(["age", "zip"])["diagnosis"].nunique()
    assert recorded["rows"] == 600 and recorded["achieved_k"] == sizes.min() >= 10
    assert recorded["achieved_l"] == diverse.min() >= 2 and recorded["qis"] == ["age", "zip"]
    assert recorded["method"] == "policy" and recorded["k"] == 10 and recorded["sensitive"] == "diagnosis"
    assert recorded["fingerprint"] == con.execute("SELECT anon_policy_fingerprint('patients')").fetchall()[0][0]
    assert 0 < recorded["ncp_percent"] < 100
    catalog = con.execute("SELECT name, source_table, rows FROM anon_releases").fetchall()
    assert catalog == [("patients_2026", "patients", 600)]
    before_live = con.execute("SELECT * FROM patients_live ORDER BY pid").fetchall()
    con.execute("INSERT INTO patients SELECT range, 'x', 20 + range % 7, 10001, 'flu', 0 FROM range(600, 640)")
    assert con.execute("SELECT * FROM patients_2026").df().equals(frozen)
    assert con.execute("SELECT * FROM patients_live ORDER BY pid").fetchall() != before_live


def test_ncp_of_a_policy_release_equals_ncp_on_the_release_with_matching_ids(con):
    make_patients(con)
    declare_patients(con)
    roles.set_pseudonym_key(con, "clinic", KEY)
    recorded = duckdb_anon.publish_release(con, "patients", "r")
    # independent route: the source's rows matched to the release through the same pseudonyms, in pandas
    release = con.execute("SELECT * FROM r").df()
    source = con.execute("SELECT anon_pseudonym(pid, 'clinic') AS pid, age, zip FROM patients").df()
    joined = release.merge(source, on="pid", suffixes=("", "_orig"))
    widths = 0.0
    for qi in ["age", "zip"]:
        span = source[qi].max() - source[qi].min()
        per_class = joined.groupby(["age", "zip"])[qi + "_orig"].agg(["min", "max", "size"])
        widths += ((per_class["max"] - per_class["min"]) / span * per_class["size"]).sum()
    assert recorded["ncp_percent"] == pytest.approx(100 * widths / (2 * len(release)))


def test_publishing_refuses_an_existing_name_and_leaves_nothing_on_failure(con):
    make_patients(con)
    declare_patients(con)
    con.execute("CREATE TABLE taken AS SELECT 1 AS x")
    roles.set_pseudonym_key(con, "clinic", KEY)
    with pytest.raises(roles.DeclarationError, match=r"publish_release\(\): argument 'name': table 'taken' exists"):
        duckdb_anon.publish_release(con, "patients", "taken")
    assert con.execute("SELECT * FROM taken").fetchall() == [(1,)]
    with pytest.raises(roles.DeclarationError, match=r"argument 'name': table 'taken' is not a release recorded"):
        duckdb_anon.publish_release(con, "patients", "taken", replace=True)  # replace only replaces releases
    assert con.execute("SELECT * FROM taken").fetchall() == [(1,)]
    duckdb_anon.publish_release(con, "patients", "released")
    duckdb_anon.publish_release(con, "patients", "released", replace=True, allow_differencing=True)
    assert con.execute("SELECT count(*) FROM released").fetchall() == [(600,)]
    fresh = duckdb.connect()  # no key in this session: anonymized() fails half-way, nothing is left behind
    duckdb_anon.install(fresh)
    make_patients(fresh)
    declare_patients(fresh)
    with pytest.raises(duckdb.Error, match="no pseudonym key"):
        duckdb_anon.publish_release(fresh, "patients", "half_done")
    assert fresh.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'half_done'").fetchall() == [(0,)]
    assert fresh.execute("SELECT count(*) FROM anon_releases").fetchall() == [(0,)]
    assert fresh.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '__anon%'").fetchall() == [(0,)]
    fresh.close()


def test_publishing_an_undeclared_table_is_refused_naming_the_argument(con):
    make_patients(con)
    with pytest.raises(roles.DeclarationError, match=r"publish_release\(\): argument 'table'"):
        duckdb_anon.publish_release(con, "patients", "r")
    roles.declare_role(con, "patients", "age", "quasi_identifier")
    roles.set_policy(con, "patients", 5)
    with pytest.raises(roles.DeclarationError, match=r"publish_release\(\): argument 'table': .*no declared role: pid"):
        duckdb_anon.publish_release(con, "patients", "r")
    with pytest.raises(roles.DeclarationError, match=r"publish_release\(\): argument 'name'"):
        duckdb_anon.publish_release(con, "patients", "")


def test_publish_mondrian_records_its_arguments(con):
    make_patients(con)
    recorded = duckdb_anon.publish_mondrian(con, "patients", "m", ["age", "zip"], 7, id_column="pid", mode="relaxed")
    release = con.execute("SELECT * FROM m").df()
    assert recorded["method"] == "mondrian" and '"mode": "relaxed"' in recorded["arguments"]
    assert recorded["achieved_k"] == class_sizes(release, ["age", "zip"]).min() >= 7 and recorded["rows"] == 600
    direct = con.execute("SELECT ncp_percent FROM ncp('m', 'patients', ['age', 'zip'], 'pid')").fetchall()[0][0]
    assert recorded["ncp_percent"] == pytest.approx(direct)


def effective_classes(a, b, qis, id_column):
    """pandas: per person in both releases, how many people share both their labels."""
    both = a.merge(b, on=id_column, suffixes=("_a", "_b"))
    keys = [q + "_a" for q in qis] + [q + "_b" for q in qis]
    return both.groupby(keys)[id_column].transform("size")


def test_inserting_one_row_lets_two_releases_be_intersected(con):
    """Ages 1..40, k = 10: one inserted person moves every cut; intersecting the releases before and after
    leaves most people in effective classes far below k."""
    con.execute("CREATE TABLE s AS SELECT range AS id, range % 40 + 1 AS age FROM range(40)")
    con.execute("CREATE TABLE before_insert AS SELECT * FROM mondrian('s', ['age'], 10)")
    con.execute("INSERT INTO s VALUES (40, 5)")
    con.execute("CREATE TABLE after_insert AS SELECT * FROM mondrian('s', ['age'], 10)")
    got = con.execute("SELECT * FROM release_differencing('before_insert', 'after_insert', ['age'], 'id')").df().iloc[0]
    a, b = con.execute("SELECT * FROM before_insert").df(), con.execute("SELECT * FROM after_insert").df()
    assert class_sizes(a, ["age"]).min() >= 10 and class_sizes(b, ["age"]).min() >= 10  # each release alone is 10-anonymous
    effective = effective_classes(a, b, ["age"], "id")
    assert got["people_in_both"] == len(effective) == 40 and got["k"] == 10
    assert got["smallest_effective_class"] == effective.min() == 1
    assert got["people_below_k"] == (effective < 10).sum() > 0
    assert got["share_below_k"] == pytest.approx((effective < 10).mean())
    assert got["people_singled_out"] == (effective == 1).sum() > 0


def test_a_release_compared_with_itself_leaks_nothing(con):
    make_patients(con)
    con.execute("CREATE TABLE r AS SELECT * FROM mondrian('patients', ['age', 'zip'], 10)")
    got = con.execute("SELECT * FROM release_differencing('r', 'r', ['age', 'zip'], 'pid')").df().iloc[0]
    assert got["people_below_k"] == 0 and got["smallest_effective_class"] >= 10 and got["people_in_both"] == 600


@pytest.fixture(scope="module")
def two_releases(module_con):
    """A release r of the patients, and dup: r with some of its rows twice."""
    make_patients(module_con)
    module_con.execute("CREATE TABLE r AS SELECT * FROM mondrian('patients', ['age', 'zip'], 10)")
    module_con.execute("CREATE TABLE dup AS SELECT * FROM r UNION ALL SELECT * FROM r LIMIT 700")
    return module_con


@pytest.mark.parametrize("call, words", [
    ("release_differencing('r', 'dup', ['age'], 'pid')", ["release_differencing()", "'id_column'", "release_b"]),
    ("release_differencing('r', 'r', [], 'pid')", ["release_differencing()", "'qis'"]),
    ("release_differencing('r', 'r', ['age'], 'pid', k := 0)", ["release_differencing()", "'k'"]),
    ("release_differencing('r', 'r', ['age'], NULL)", ["release_differencing()", "'id_column'"]),
])
def test_differencing_bad_input(two_releases, call, words):
    from tests.conftest import assert_error_names
    assert_error_names(two_releases, f"SELECT * FROM {call}", words)


def test_a_view_over_mondrian_is_named_as_such_not_reported_as_infinite_recursion(con):
    """DuckDB cannot expand mondrian() inside mondrian() (a view over a release, or a view over that view):
    the publishing functions say so and how to go on; a plain view and the materialized release pass."""
    con.execute("CREATE TABLE rv AS SELECT i % 50 AS age, i % 7 AS zip, i AS id FROM range(200) r(i)")
    con.execute("CREATE VIEW rv_release AS SELECT * FROM mondrian('rv', ['age', 'zip'], 5)")
    con.execute("CREATE VIEW rv_outer AS SELECT * FROM rv_release WHERE id > 0")
    con.execute("CREATE VIEW rv_plain AS SELECT * FROM rv WHERE id > 0")
    found = {name: con.execute("SELECT anon_view_release_macro(?)", [name]).fetchall()[0][0]
             for name in ("rv_release", "rv_outer", "rv_plain", "rv")}
    assert found == {"rv_release": "mondrian", "rv_outer": "mondrian", "rv_plain": None, "rv": None}
    for source in ("rv_release", "rv_outer"):
        with pytest.raises(DeclarationError) as err:
            duckdb_anon.publish_mondrian(con, source, "rv_k10", ["age", "zip"], 10)
        assert all(word in str(err.value) for word in ("publish_mondrian()", "'table'", "materialize", source))
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'rv_k10'").fetchall() == [(0,)]
    con.execute("CREATE TABLE rv_frozen AS SELECT * FROM rv_outer")
    row = duckdb_anon.publish_mondrian(con, "rv_frozen", "rv_k10", ["age", "zip"], 10)
    assert row["rows"] == 199
    assert con.execute("SELECT min(c) FROM (SELECT count(*) AS c FROM rv_k10 GROUP BY age, zip)").fetchall()[0][0] >= 10
