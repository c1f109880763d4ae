"""Installation: idempotent, persisted in the database file, usable from a plain DuckDB connection."""
import duckdb

import duckdb_anon


def test_install_twice_and_version(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    duckdb_anon.install(con)
    assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
    con.close()
    con = duckdb.connect(path)  # a database that already has the functions
    duckdb_anon.install(con)
    con.close()


def test_pure_sql_functions_work_without_the_package(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS age, ['a','b','c'][range % 3 + 1] AS zip FROM range(100)")
    con.execute("CREATE VIEW p_k5 AS SELECT * FROM mondrian('p', ['age', 'zip'], 5)")
    expected = con.execute("SELECT * FROM p_k5 ORDER BY id").fetchall()
    con.close()
    plain = duckdb.connect(path)  # never imports or installs anything
    assert plain.execute("SELECT * FROM p_k5 ORDER BY id").fetchall() == expected
    assert plain.execute("SELECT achieved_k FROM release_measures('p_k5', ['age', 'zip'])").fetchone()[0] >= 5
    plain.close()


def test_plain_client_can_extract_localities_but_not_walk(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 7 % 31)::DOUBLE AS v FROM range(60)")
    con.close()
    plain = duckdb.connect(path)
    assert plain.execute("SELECT count(*) FROM localities('t', 'v', segment_size := 20)").fetchone()[0] > 0
    plain.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 20)")
    try:
        plain.execute("SELECT * FROM random_walk('t', 'v', 'locs', segment_size := 20)").fetchall()
        raise AssertionError("random_walk ran without its Python kernel")
    except duckdb.Error as err:
        assert "anon_random_walk" in str(err)
    plain.close()
    con = duckdb_anon.connect(path)  # installing again brings the kernel back on this connection
    assert con.execute("SELECT count(*) FROM random_walk('t', 'v', 'locs', iterations := 10, segment_size := 20)").fetchone()[0] == 60
    con.close()
