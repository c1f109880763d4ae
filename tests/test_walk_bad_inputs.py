"""Bad input to localities(), check_localities(), random_walk(), linkage_rank() and linkage_pattern(): each
is refused with an error naming the function and the argument at fault, and the tables are left as they were."""
import pytest

from tests.conftest import assert_error_names

SETUP = """
CREATE TABLE t AS SELECT range AS id, (range * 7 % 13)::DOUBLE AS v, 'x' || range AS s FROM range(60);
CREATE TABLE l AS SELECT * FROM localities('t', 'v');
CREATE TABLE wrong AS SELECT 1 AS foo;
"""

BAD_INPUTS = [
    # localities()
    ("SELECT * FROM localities(1, 'v')", ["localities()", "'table_name'"]),
    ("SELECT * FROM localities(NULL, 'v')", ["localities()", "'table_name'"]),
    ("SELECT * FROM localities('t', 3)", ["localities()", "'column_name'"]),
    ("SELECT * FROM localities('t', NULL)", ["localities()", "'column_name'"]),
    ("SELECT * FROM localities('t', 'nope')", ["localities()", "'column_name'", "no column"]),
    ("SELECT * FROM localities('t', 's')", ["localities()", "'column_name'", "numeric"]),
    ("SELECT * FROM localities('t', 'v', segment_size := 2)", ["localities()", "'segment_size'"]),
    ("SELECT * FROM localities('t', 'v', segment_size := 2.5)", ["localities()", "'segment_size'"]),
    ("SELECT * FROM localities('t', 'v', segment_size := NULL)", ["localities()", "'segment_size'"]),
    ("SELECT * FROM localities('t', 'v', sample := 0)", ["localities()", "'sample'"]),
    ("SELECT * FROM localities('t', 'v', sample := 1.5)", ["localities()", "'sample'"]),
    ("SELECT * FROM localities('t', 'v', sample := 'a')", ["localities()", "'sample'"]),
    ("SELECT * FROM localities('t', 'v', sample := NULL)", ["localities()", "'sample'"]),
    ("SELECT * FROM localities('t', 'v', seed := -1)", ["localities()", "'seed'"]),
    ("SELECT * FROM localities('t', 'v', seed := NULL)", ["localities()", "'seed'"]),
    ("SELECT * FROM localities('t', 'v', group_by := 'nope')", ["localities()", "'group_by'"]),
    ("SELECT * FROM localities('t', 'v', group_by := 3)", ["localities()", "'group_by'"]),
    # check_localities()
    ("SELECT * FROM check_localities('t', 'v', 'wrong')", ["check_localities()", "'locality_table'", "i_row"]),
    ("SELECT * FROM check_localities('t', 'nope', 'l')", ["check_localities()", "'column_name'"]),
    ("SELECT * FROM check_localities('t', 'v', 5)", ["check_localities()", "'locality_table'"]),
    ("SELECT * FROM check_localities(5, 'v', 'l')", ["check_localities()", "'table_name'"]),
    # random_walk()
    ("SELECT * FROM random_walk('t', 'v', 'wrong')", ["random_walk()", "'locality_table'", "segment", "d_k"]),
    ("SELECT * FROM random_walk('t', 'v', 7)", ["random_walk()", "'locality_table'"]),
    ("SELECT * FROM random_walk(7, 'v', 'l')", ["random_walk()", "'table_name'"]),
    ("SELECT * FROM random_walk('t', 'nope', 'l')", ["random_walk()", "'column_name'", "no column"]),
    ("SELECT * FROM random_walk('t', 's', 'l')", ["random_walk()", "'column_name'", "numeric"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', iterations := -1)", ["random_walk()", "'iterations'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', iterations := 'x')", ["random_walk()", "'iterations'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', iterations := NULL)", ["random_walk()", "'iterations'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', seed := -3)", ["random_walk()", "'seed'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', lower := 50, upper := 40)", ["random_walk()", "'lower'", "above upper"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', lower := 5)", ["random_walk()", "'lower'", "contain every value"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', bounds := 'domain', upper := 5)", ["random_walk()", "'lower'", "contain every value"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', lower := 'a')", ["random_walk()", "'lower'", "number"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', upper := 'inf'::DOUBLE)", ["random_walk()", "'upper'", "number"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', method := 'sideways')", ["random_walk()", "'method'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', method := 3)", ["random_walk()", "'method'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', bounds := 'galaxy')", ["random_walk()", "'bounds'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', bounds := NULL)", ["random_walk()", "'bounds'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', radius := 0)", ["random_walk()", "'radius'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', radius := -1)", ["random_walk()", "'radius'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', radius := NULL)", ["random_walk()", "'radius'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', radius := 'big')", ["random_walk()", "'radius'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', segment_size := 2)", ["random_walk()", "'segment_size'"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', segment_size := 30)", ["random_walk()", "'locality_table'", "does not match"]),
    ("SELECT * FROM random_walk('t', 'v', 'l', group_by := 'nope')", ["random_walk()", "'group_by'"]),
    # linkage_rank()
    ("SELECT * FROM linkage_rank('t', 't', 'v', 'id')", ["linkage_rank()", "'columns'", "list"]),
    ("SELECT * FROM linkage_rank('t', 't', [], 'id')", ["linkage_rank()", "'columns'", "at least one"]),
    ("SELECT * FROM linkage_rank('t', 't', ['v', 'V'], 'id')", ["linkage_rank()", "'columns'", "twice"]),
    ("SELECT * FROM linkage_rank('t', 't', ['v', NULL], 'id')", ["linkage_rank()", "'columns'", "NULL"]),
    ("SELECT * FROM linkage_rank('t', 't', ['v'], 'v')", ["linkage_rank()", "'id_column'"]),
    ("SELECT * FROM linkage_rank('t', 't', ['v'], NULL)", ["linkage_rank()", "'id_column'"]),
    ("SELECT * FROM linkage_rank('t', 'wrong', ['v'], 'id')", ["linkage_rank()", "'original_table'", "'v'"]),
    ("SELECT * FROM linkage_rank('wrong', 't', ['v'], 'id')", ["linkage_rank()", "'release_table'", "'v'"]),
    ("SELECT * FROM linkage_rank(1, 't', ['v'], 'id')", ["linkage_rank()", "'release_table'"]),
    ("SELECT * FROM linkage_rank('t', NULL, ['v'], 'id')", ["linkage_rank()", "'original_table'"]),
    # linkage_pattern()
    ("SELECT * FROM linkage_pattern('t', 't', 'nope', 'id')", ["linkage_pattern()", "_table'", "lacks the column(s) 'nope'"]),
    ("SELECT * FROM linkage_pattern('t', 't', 3, 'id')", ["linkage_pattern()", "'column_name'"]),
    ("SELECT * FROM linkage_pattern('t', 't', 'v', NULL)", ["linkage_pattern()", "'id_column'"]),
    ("SELECT * FROM linkage_pattern('t', 'wrong', 'v', 'id')", ["linkage_pattern()", "'original_table'"]),
    ("SELECT * FROM linkage_pattern(NULL, 't', 'v', 'id')", ["linkage_pattern()", "'release_table'"]),
    ("SELECT * FROM linkage_pattern('t', 't', 'v', 'id', segment_size := 1)", ["linkage_pattern()", "'segment_size'"]),
    ("SELECT * FROM linkage_pattern('t', 't', 'v', 'id', tolerance := 0)", ["linkage_pattern()", "'tolerance'"]),
    ("SELECT * FROM linkage_pattern('t', 't', 'v', 'id', tolerance := NULL)", ["linkage_pattern()", "'tolerance'"]),
]


@pytest.fixture(scope="module")
def db():
    import duckdb_anon

    con = duckdb_anon.connect()
    con.execute(SETUP)
    yield con
    con.close()


@pytest.mark.parametrize("sql, words", BAD_INPUTS, ids=[sql for sql, _ in BAD_INPUTS])
def test_bad_input_names_function_and_argument(db, sql, words):
    before = db.execute("SELECT count(*), sum(v) FROM t").fetchall()
    tables = db.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    assert_error_names(db, sql, words)
    assert db.execute("SELECT count(*), sum(v) FROM t").fetchall() == before
    assert db.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == tables  # nothing left behind
