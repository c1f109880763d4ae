"""duckdb-anon dp-budget and dp-publish, run through the CLI's main() on a real database file: the release
and the debit land together, overspend is refused saying what is left, bad options are named."""
import duckdb
import pytest

import duckdb_anon
from duckdb_anon.cli import main


@pytest.fixture
def ratings_db(tmp_path):
    path = str(tmp_path / "ratings.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(3000, items := 30, ratings_per_user := 10, seed := 5)")
    duckdb_anon.declare_privacy_unit(con, "ratings", "record_id")
    con.close()
    return path


PUBLISH = ["--group-by", "item", "--value", "value", "--aggregates", "count", "avg", "--epsilon", "0.6", "--delta", "1e-6",
           "--max-groups", "3", "--min-value", "1", "--max-value", "5", "--quiet"]


def test_dp_publish_writes_debits_and_refuses_overspend(ratings_db, capsys):
    assert main(["dp-budget", ratings_db, "ratings", "--epsilon", "1", "--delta", "1e-5"]) == 0
    assert main(["dp-publish", ratings_db, "ratings", "items_dp", *PUBLISH]) == 0
    assert "epsilon_left" in capsys.readouterr().out
    assert main(["dp-publish", ratings_db, "ratings", "items_dp_2", *PUBLISH]) == 1
    assert "epsilon 0.4, delta 9e-06 left" in capsys.readouterr().err
    con = duckdb.connect(ratings_db)
    released = con.execute("SELECT count(*) FROM items_dp").fetchall()[0][0]
    assert con.execute("SELECT groups, epsilon FROM anon_dp_releases").fetchall() == [(released, 0.6)]
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'items_dp_2'").fetchall()[0][0] == 0
    con.close()


@pytest.mark.parametrize("options, named", [(["--epsilon", "-1"], "--epsilon"), (["--noise", "cauchy"], "--noise"),
                                            (["--group-by", "shelf"], "--group-by")])
def test_dp_publish_names_the_bad_option(ratings_db, capsys, options, named):
    main(["dp-budget", ratings_db, "ratings", "--epsilon", "5", "--delta", "1e-5"])
    # given again after the good ones, the bad value is the one argparse keeps
    assert main(["dp-publish", ratings_db, "ratings", "bad", *PUBLISH, *options]) == 2
    assert named in capsys.readouterr().err
