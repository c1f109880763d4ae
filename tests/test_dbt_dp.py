"""The dbt package's dp_release materialization, run by a real `dbt build`: a model publishes a DP aggregate
and debits the budget of its people in one transaction; a build the budget cannot pay fails with the
ledger's refusal and leaves no table, no record and no debit. The database is read back with plain duckdb.
"""
from __future__ import annotations

import json

import duckdb
import pytest

pytest.importorskip("dbt.adapters.duckdb", reason="dbt-duckdb is not installed (pip install 'duckdb-anon[dbt]')")

import duckdb_anon  # noqa: E402
from duckdb_anon.dbt import package_path  # noqa: E402
from tests.test_dbt import run_dbt  # noqa: E402

MODEL = """{{ config(materialized='dp_release', group_by=['item'], value='value', aggregates=['count', 'avg'],
                  epsilon=EPSILON, delta=1e-6, max_groups_contributed=3, min_value=1, max_value=5) }}
{{ ref('ratings_src').identifier }}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A dbt project over a database holding `ratings` (declared: one person per record_id) with a budget
    of epsilon 1, delta 1e-5, after `dbt deps`."""
    root = tmp_path_factory.mktemp("dbt_dp")
    (root / "dbt_project.yml").write_text("name: dp_example\nversion: '1.0.0'\nconfig-version: 2\nprofile: dp_example\n"
                                          "model-paths: ['models']\nflags:\n  send_anonymous_usage_stats: false\n")
    (root / "profiles.yml").write_text("dp_example:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
                                       "      path: dp.duckdb\n      threads: 1\n      plugins:\n        - module: duckdb_anon.dbt\n")
    (root / "packages.yml").write_text(f"packages:\n  - local: {json.dumps(str(package_path()))}\n")
    (root / "models").mkdir()
    # the source as a model, so that ref() orders it first: a view of the table made below
    (root / "models" / "ratings_src.sql").write_text("{{ config(materialized='view') }}\nSELECT * FROM ratings\n")
    con = duckdb_anon.connect(str(root / "dp.duckdb"))
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(3000, items := 10, ratings_per_user := 5, seed := 3)")
    con.execute("CREATE VIEW ratings_src AS SELECT * FROM ratings")
    duckdb_anon.declare_privacy_unit(con, "ratings_src", "record_id")
    duckdb_anon.set_dp_budget(con, "ratings_src", 1.0, 1e-5)
    con.close()
    deps = run_dbt(root, "deps")
    assert deps.returncode == 0, deps.stdout + deps.stderr
    return root


def ledger(root):
    con = duckdb.connect(str(root / "dp.duckdb"), read_only=True)  # plain duckdb
    try:
        spent = con.execute("SELECT epsilon_spent, delta_spent FROM anon_dp_budgets WHERE unit_table = 'ratings_src'").fetchall()[0]
        releases = con.execute("SELECT name, epsilon, delta, groups FROM anon_dp_releases ORDER BY name").fetchall()
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        rows = con.execute("SELECT count(*) FROM item_ratings").fetchall()[0][0] if "item_ratings" in tables else None
        return spent, releases, tables, rows
    finally:
        con.close()


def test_a_dp_release_model_debits_then_a_build_past_the_budget_fails_and_changes_nothing(project):
    (project / "models" / "item_ratings.sql").write_text(MODEL.replace("EPSILON", "0.6"))
    build = run_dbt(project, "build")
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr
    spent, releases, tables, rows = ledger(project)
    assert spent == pytest.approx((0.6, 1e-6))
    assert releases == [("item_ratings", pytest.approx(0.6), pytest.approx(1e-6), rows)] and rows > 0
    con = duckdb.connect(str(project / "dp.duckdb"), read_only=True)
    try:  # the released figures: ten items, means within the range, counts near the truth (3000 people, 3 items each)
        items = con.execute("SELECT item, count, avg FROM item_ratings").fetchall()
    finally:
        con.close()
    assert all(1 <= avg <= 5 for _, _, avg in items) and {item for item, *_ in items} <= set(range(10))

    # 0.6 + 0.5 > 1: refused, with what is left; an epsilon that is no number: named with dp_release and the
    # argument (not a cast error of the ledger's arithmetic); no table, no record, no debit (one dbt run for both)
    (project / "models" / "item_ratings_b.sql").write_text(MODEL.replace("EPSILON", "0.5"))
    (project / "models" / "item_ratings_c.sql").write_text(MODEL.replace("EPSILON", "'much'"))
    again = run_dbt(project, "build", "--select", "item_ratings_b", "item_ratings_c")
    output = again.stdout + again.stderr
    assert again.returncode != 0
    assert "dp_release(): the release would spend epsilon 0.5, delta 1e-06 from the budget of 'ratings_src', " \
           "which has epsilon 0.4, delta 9e-06 left" in output
    assert "dp_release(): argument 'epsilon' must be a number > 0, got 'much'" in output and "Conversion Error" not in output
    assert ledger(project) == (spent, releases, tables, rows)
    # one the budget can pay, failing after the debit (a group column the table lacks): rolled back, debit included
    (project / "models" / "item_ratings_b.sql").write_text(MODEL.replace("EPSILON", "0.1").replace("['item']", "['shelf']"))
    failed = run_dbt(project, "build", "--select", "item_ratings_b")
    assert failed.returncode != 0 and "dp_aggregate(): argument 'group_by'" in failed.stdout + failed.stderr
    assert ledger(project) == (spent, releases, tables, rows)

