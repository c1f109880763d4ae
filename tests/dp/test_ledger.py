"""publish_dp() and the budget ledger: one transaction, refusal with what is left, no overspend from
threads or from two processes, everything readable in SQL."""
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import duckdb_anon
from duckdb_anon.dp.ledger import BudgetError
from duckdb_anon.roles import DeclarationError

ARGS = dict(group_by=["item"], epsilon=0.4, delta=1e-6, max_groups_contributed=3)


def ratings(con):
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(500, items := 20, ratings_per_user := 10, seed := 2)")
    duckdb_anon.declare_privacy_unit(con, "ratings", "record_id")


def test_publish_writes_and_debits_then_refuses_overspend_saying_what_is_left(con):
    ratings(con)
    duckdb_anon.set_dp_budget(con, "ratings", 1.0, 1e-5)
    first = duckdb_anon.publish_dp(con, "ratings", "counts_1", **ARGS)
    second = duckdb_anon.publish_dp(con, "ratings", "counts_2", **ARGS)
    assert second["epsilon_left"] == pytest.approx(0.2)
    with pytest.raises(BudgetError, match=r"publish_dp\(\).*epsilon 0\.4.*epsilon 0\.2, delta 8e-06 left"):
        duckdb_anon.publish_dp(con, "ratings", "counts_3", **ARGS)
    # the refused release left no table and no record; the ledger says what was spent
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'counts_3'").fetchall()[0][0] == 0
    assert con.execute("SELECT epsilon_spent, delta_spent, releases FROM anon_dp_ledger").fetchall()[0] == pytest.approx((0.8, 2e-6, 2))
    recorded = con.execute("SELECT name, groups FROM anon_dp_releases ORDER BY name").fetchall()
    assert recorded == [("counts_1", first["groups"]), ("counts_2", second["groups"])]
    assert con.execute("SELECT count(*) FROM counts_1").fetchall()[0][0] == first["groups"]


def test_laplace_on_public_groups_spends_no_delta_and_a_failed_query_spends_nothing(con):
    ratings(con)
    con.execute("CREATE TABLE items AS SELECT range AS item FROM range(20)")
    duckdb_anon.set_dp_budget(con, "ratings", 1.0, 0.0)
    duckdb_anon.publish_dp(con, "ratings", "public_counts", group_by=["item"], epsilon=0.5, delta=0,
                           max_groups_contributed=3, public_groups="items")
    with pytest.raises(Exception, match="publish_dp.*'noise'"):
        duckdb_anon.publish_dp(con, "ratings", "bad", **{**ARGS, "delta": 0}, public_groups="items", noise="cauchy")
    assert con.execute("SELECT epsilon_spent, delta_spent FROM anon_dp_ledger").fetchall()[0] == (0.5, 0.0)


def test_no_budget_no_unit_and_existing_names_are_refused(con):
    ratings(con)
    with pytest.raises(DeclarationError, match="no budget"):
        duckdb_anon.publish_dp(con, "ratings", "x", **ARGS)
    con.execute("CREATE TABLE loose AS SELECT 1 AS who, 1 AS item")
    with pytest.raises(DeclarationError, match="no privacy unit declared for 'loose'"):
        duckdb_anon.publish_dp(con, "loose", "x", **ARGS)
    duckdb_anon.set_dp_budget(con, "ratings", 5.0, 1e-5)
    duckdb_anon.publish_dp(con, "ratings", "x", **ARGS)
    with pytest.raises(DeclarationError, match="'name'.*exists"):
        duckdb_anon.publish_dp(con, "ratings", "X", **ARGS)  # names are case-insensitive: X is table x
    with pytest.raises(DeclarationError, match="set_dp_budget.*'epsilon'"):
        duckdb_anon.set_dp_budget(con, "ratings", 0, 1e-5)
    assert con.execute("SELECT epsilon_spent FROM anon_dp_ledger").fetchall()[0][0] == pytest.approx(0.4)


def test_threads_publishing_at_once_never_overspend(tmp_path):
    con = duckdb_anon.connect(str(tmp_path / "ledger.duckdb"))
    ratings(con)
    duckdb_anon.set_dp_budget(con, "ratings", 1.0, 1e-5)  # room for 2 releases of 0.4, not 3
    outcomes = []

    def publish(i):
        cursor = con.cursor()
        try:
            duckdb_anon.publish_dp(cursor, "ratings", f"counts_{i}", **ARGS)
            outcomes.append("published")
        except BudgetError:
            outcomes.append("refused")

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["published"] * 2 + ["refused"] * 4
    assert con.execute("SELECT epsilon_spent, releases FROM anon_dp_ledger").fetchall()[0] == (pytest.approx(0.8), 2)
    con.close()


PUBLISHER = textwrap.dedent("""
    import sys, time, duckdb, duckdb_anon
    from duckdb_anon.dp.ledger import BudgetError
    path, name = sys.argv[1], sys.argv[2]
    for attempt in range(600):  # the file is locked while the other process holds it
        try:
            con = duckdb_anon.connect(path)
            break
        except duckdb.IOException:
            time.sleep(0.05)
    try:
        duckdb_anon.publish_dp(con, "ratings", name, group_by=["item"], epsilon=0.4, delta=1e-6, max_groups_contributed=3)
        print("published")
    except BudgetError:
        print("refused")
""")


def test_two_processes_publishing_at_once_never_overspend(tmp_path):
    path = str(tmp_path / "ledger.duckdb")
    con = duckdb_anon.connect(path)
    ratings(con)
    duckdb_anon.set_dp_budget(con, "ratings", 0.5, 1e-5)  # room for one release of 0.4
    con.close()
    root = str(Path(__file__).resolve().parents[2])
    runs = [subprocess.Popen([sys.executable, "-c", PUBLISHER, path, f"counts_{i}"], stdout=subprocess.PIPE, text=True,
                             env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"}) for i in range(2)]
    # the last line: a slow query on a loaded machine may print DuckDB's progress bar first
    said = sorted(run.communicate(timeout=120)[0].strip().splitlines()[-1] for run in runs)
    assert said == ["published", "refused"]
    con = duckdb_anon.connect(path)
    assert con.execute("SELECT epsilon_spent, releases FROM anon_dp_ledger").fetchall()[0] == (pytest.approx(0.4), 1)
    con.close()
