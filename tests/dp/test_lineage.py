"""DP lineage: a view's people are those of the declared tables it reads (their unit, their budget), public
groups must not read the people's data, epsilon is finite (and above 10 only on request), and publish_dp's
errors name publish_dp() and the argument. Small tables: the whole module runs in a few seconds."""
import json
import math
import shutil

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import duckdb_anon
from duckdb_anon import relations
from duckdb_anon.cli import main
from duckdb_anon.roles import DeclarationError
from tests.conftest import examples

DP = "epsilon := 1, delta := 0, max_groups_contributed := 1, public_groups := 'items'"


@pytest.fixture(scope="module")
def people():
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE ratings AS SELECT i % 40 AS record_id, i % 3 AS item, 1 + i % 5 AS value FROM range(120) t(i)")
    con.execute("CREATE TABLE items AS SELECT range AS item FROM range(3)")  # public: written, not read from ratings
    con.execute("CREATE TABLE raw AS FROM ratings")  # no privacy unit declared
    duckdb_anon.declare_privacy_unit(con, "ratings", "record_id")
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE VIEW s.rv AS SELECT record_id AS person, item, value FROM ratings WHERE value > 1")
    con.execute("CREATE VIEW rvv AS WITH x AS (SELECT * FROM S.RV) SELECT person AS who, item FROM x")  # a view over a view
    con.execute("CREATE VIEW items_v AS SELECT DISTINCT item FROM ratings")
    con.execute("CREATE VIEW items_sub AS SELECT item FROM items WHERE item IN (SELECT item FROM rvv)")
    yield con
    con.close()


def _error(con, sql) -> str:
    with pytest.raises(duckdb.Error) as err:
        con.execute(sql).fetchall()
    return str(err.value)


def test_base_tables_follow_views_ctes_and_queries(people):
    key = ("memory", "main", "ratings")
    for relation in ("s.rv", "RVV", "items_v", "SELECT * FROM rvv r JOIN items i USING (item)", "(FROM query_table('rvv'))"):
        assert key in relations.base_tables(people, relation)
    assert relations.base_tables(people, "items") == [("memory", "main", "items")]
    assert ("memory", "main", "items") not in relations.base_tables(people, "rvv")
    with pytest.raises(relations.RelationError, match="no table or view named 'nope'"):
        relations.base_tables(people, "SELECT * FROM nope")


def test_a_view_inherits_the_unit_and_refuses_a_conflicting_person_column(people):
    message = _error(people, f"SELECT * FROM dp_aggregate('rvv', ['item'], {DP}, privacy_unit_column := 'item')")
    assert "dp_aggregate(): argument 'privacy_unit_column'" in message and "'ratings'" in message
    message = _error(people, f"SELECT * FROM dp_aggregate('rvv', ['item'], {DP})")
    assert "argument 'privacy_unit_column'" in message and "'who'" in message  # asks for the copy lineage found
    got = people.execute(f"SELECT item, count_distinct FROM dp_aggregate('rvv', ['item'], {DP}, "
                         "aggregates := ['count_distinct'], privacy_unit_column := 'who')").fetchall()
    assert sorted(r[0] for r in got) == [0, 1, 2]


def test_no_privacy_unit_is_refused_also_with_a_value(people):
    for extra in ("", ", value := 'value', aggregates := ['sum'], min_value := 0, max_value := 5"):
        message = _error(people, f"SELECT * FROM dp_aggregate('raw', ['item'], {DP}{extra})")
        assert "dp_aggregate(): argument 'privacy_unit_column'" in message


@pytest.mark.parametrize("groups", ["ratings", "items_v", "items_sub", "rvv"])
def test_public_groups_reading_the_private_table_are_refused(people, groups):
    message = _error(people, f"SELECT * FROM dp_aggregate('ratings', ['item'], epsilon := 1, delta := 0, "
                             f"max_groups_contributed := 1, public_groups := '{groups}')")
    assert "dp_aggregate(): argument 'public_groups'" in message and "main.ratings" in message


def test_epsilon_above_ten_needs_allow_large_epsilon(people):
    call = "SELECT count(*) FROM dp_aggregate('ratings', ['item'], epsilon := 11, delta := 0, max_groups_contributed := 1, public_groups := 'items'"
    assert "argument 'epsilon'" in _error(people, call + ")") and "allow_large_epsilon" in _error(people, call + ")")
    assert people.execute(call + ", allow_large_epsilon := true)").fetchall() == [(3,)]
    assert "argument 'epsilon'" in _error(people, call.replace("11", "'inf'::DOUBLE") + ", allow_large_epsilon := true)")


@settings(max_examples=examples(8), deadline=None)
@given(st.lists(st.sampled_from(["rename", "filter", "cte", "subquery", "union", "compute"]), min_size=1, max_size=3))
def test_random_view_shapes_inherit_exactly_when_the_person_column_is_copied(people, steps):
    """A chain of views over ratings: the person column is found when every step copies it, refused otherwise."""
    source, column = "ratings", "record_id"
    shapes = {"rename": "SELECT {c} AS p{n}, item FROM {s}", "filter": "SELECT {c} AS p{n}, item FROM {s} WHERE item >= 0",
              "cte": "WITH w AS (SELECT * FROM {s}) SELECT {c} AS p{n}, item FROM w",
              "subquery": "SELECT q.{c} AS p{n}, q.item FROM (SELECT {c}, item FROM {s}) q",
              "union": "SELECT {c} AS p{n}, item FROM {s} UNION ALL SELECT {c}, item FROM {s}",
              "compute": "SELECT {c} + 1 AS p{n}, item FROM {s}"}
    for n, step in enumerate(steps):
        people.execute(f"CREATE OR REPLACE TEMP VIEW h{n} AS " + shapes[step].format(c=column, s=source, n=n))
        source, column = f"h{n}", f"p{n}"
    found = json.loads(people.execute("SELECT anon_dp_lineage('dp_aggregate', ?, NULL, NULL)::VARCHAR", [source]).fetchall()[0][0]) \
        if "compute" not in steps else None
    if "compute" in steps:
        assert "privacy_unit_column" in _error(people, f"SELECT anon_dp_lineage('dp_aggregate', '{source}', NULL, NULL)")
    else:
        assert found == {"unit_table": "ratings", "person_column": column, "declared": False}


@pytest.fixture
def ledger(con):
    con.execute("CREATE TABLE patients AS SELECT range AS pid, range % 4 AS dx FROM range(60)")
    con.execute("CREATE TABLE visits AS SELECT pid, dx, v FROM patients, range(2) t(v)")
    con.execute("CREATE TABLE dxs AS SELECT range AS dx FROM range(4)")
    duckdb_anon.declare_privacy_unit(con, "patients", "pid")
    duckdb_anon.declare_privacy_unit(con, "visits", "pid", via_table="patients", via_key="pid")
    con.execute("CREATE VIEW vv AS SELECT pid AS person, dx FROM visits WHERE v = 0")
    return con


def test_a_view_spends_its_peoples_budget_and_cannot_hold_one(ledger):
    with pytest.raises(DeclarationError, match="set_dp_budget\\(\\): argument 'unit_table'.*set the budget of 'patients'"):
        duckdb_anon.set_dp_budget(ledger, "vv", 1.0, 1e-6)
    with pytest.raises(DeclarationError, match="'unit_table'.*set the budget of 'patients'"):
        duckdb_anon.set_dp_budget(ledger, "visits", 1.0, 1e-6)
    duckdb_anon.set_dp_budget(ledger, "patients", 1.0, 1e-6)
    release = duckdb_anon.publish_dp(ledger, "vv", "by_dx", group_by=["dx"], epsilon=0.25, delta=0,
                                     max_groups_contributed=1, public_groups="dxs")
    assert release["unit_table"] == "patients"
    spent = ledger.execute("SELECT unit_table, epsilon_spent, epsilon - epsilon_spent FROM anon_dp_budgets").fetchall()
    assert spent == [("patients", 0.25, pytest.approx(release["epsilon_left"]))]
    assert ledger.execute("SELECT count(*) FROM by_dx").fetchall() == [(4,)]
    with pytest.raises(DeclarationError, match="publish_dp\\(\\): argument 'privacy_unit_column'"):
        duckdb_anon.publish_dp(ledger, "vv", "x", group_by=["dx"], epsilon=0.25, delta=0, max_groups_contributed=1,
                               public_groups="dxs", privacy_unit_column="dx")
    assert ledger.execute("SELECT epsilon_spent FROM anon_dp_budgets").fetchall() == [(0.25,)]


BAD = [({"delta": 2.0}, "'delta'"), ({"delta": math.nan}, "'delta'"), ({"epsilon": math.inf}, "'epsilon'"),
       ({"epsilon": 12.0}, "allow_large_epsilon"), ({"group_by": ["shelf"]}, "'group_by'"),
       ({"public_groups": "patients"}, "'public_groups'")]


def test_publish_dp_errors_name_publish_dp_and_the_argument_before_any_work(ledger):
    duckdb_anon.set_dp_budget(ledger, "patients", 100.0, 0.1)
    for bad, named in BAD:
        arguments = {"group_by": ["dx"], "epsilon": 0.5, "delta": 1e-6, "max_groups_contributed": 1, **bad}
        with pytest.raises(DeclarationError, match=f"^publish_dp\\(\\): .*{named}") as err:
            duckdb_anon.publish_dp(ledger, "visits", "x", **arguments)
        assert "would spend" not in str(err.value)
    assert ledger.execute("SELECT epsilon_spent FROM anon_dp_budgets").fetchall() == [(0.0,)]


def test_budgets_are_finite(ledger, installed_template, tmp_path, capsys):
    for value in (math.inf, math.nan):
        for arg in ("epsilon", "delta"):
            with pytest.raises(DeclarationError, match=f"argument '{arg}' must be a finite number"):
                duckdb_anon.set_dp_budget(ledger, "patients", **{"epsilon": 1.0, "delta": 1e-6, arg: value})
    assert ledger.execute("SELECT count(*) FROM anon_dp_budgets").fetchall() == [(0,)]
    path = tmp_path / "p.duckdb"
    shutil.copy(installed_template, path)  # a database file with the macros, without installing again
    assert main(["dp-budget", str(path), "patients", "--epsilon", "inf", "--delta", "1e-6"]) != 0
    assert "--epsilon" in capsys.readouterr().err
