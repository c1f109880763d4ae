"""duckdb_anon/engines/duckdb_engine.py: the kind it reads each DuckDB type as, held against what the SQL
mondrian() does with a column of that type (the two must agree: the level driver's release is mondrian()'s),
and the Engine contract on a real connection (create, append, count, value, rows, number, drop), with no
intermediate relation left behind by a run that fails."""
import duckdb
import pytest

from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, TEMPORAL, Names
from duckdb_anon.engines.duckdb_engine import DuckDBEngine
from duckdb_anon.mondrian import mondrian
from tests.conftest import multiset_differences

ROWS = 8  # row i holds the value below (i = 7: NULL); ties from i % 5

# Every type a table column can hold: the DuckDB type and a value of it from the row number i.
TYPES = [
    ("TINYINT", "(i % 5)"), ("SMALLINT", "(i % 5) * 300"), ("INTEGER", "(i % 5) * 70000"),
    ("BIGINT", "(i % 5) * 5000000000"), ("HUGEINT", "(i % 5) * 100000000000000000000::HUGEINT"), ("UTINYINT", "(i % 5)"),
    ("USMALLINT", "(i % 5)"), ("UINTEGER", "(i % 5)"), ("UBIGINT", "(i % 5)"), ("UHUGEINT", "(i % 5)"),
    ("FLOAT", "(i % 5) / 4"), ("DOUBLE", "(i % 5) / 3"), ("DECIMAL(10,2)", "(i % 5) / 4"),
    ("DECIMAL(38,10)", "(i % 5) * 12345678.125"),
    ("DATE", "DATE '2020-02-27' + (i % 5)::INTEGER"), ("TIMESTAMP", "TIMESTAMP '2020-01-01 10:00' + (i % 5) * INTERVAL 7 HOUR"),
    ("TIMESTAMP_S", "TIMESTAMP '2020-01-01' + (i % 5) * INTERVAL 1 DAY"),
    ("TIMESTAMP_MS", "TIMESTAMP '2020-01-01' + (i % 5) * INTERVAL 1 SECOND"),
    ("TIMESTAMP_NS", "TIMESTAMP '2020-01-01' + (i % 5) * INTERVAL 1 MINUTE"),
    ("TIMESTAMPTZ", "TIMESTAMPTZ '2020-03-29 00:30:00+00' + (i % 5) * INTERVAL 1 HOUR"),
    ("TIME", "TIME '08:00' + (i % 5) * INTERVAL 1 MINUTE"), ("TIMETZ", "TIMETZ '08:00:00+02'"),
    ("TIME_NS", "TIME '09:00' + (i % 5) * INTERVAL 1 SECOND"),
    ("ENUM('lo', 'mid', 'hi')", "['hi', 'lo', 'mid'][i % 3 + 1]"), ("BOOLEAN", "i % 2 = 0"),
    ("VARCHAR", "'v' || (i % 5)"), ("VARCHAR COLLATE NOCASE", "['a', 'A', 'b'][i % 3 + 1]"),
    ("INTERVAL", "(i % 5) * INTERVAL 1 DAY"), ("BLOB", "('b' || (i % 5))::BLOB"), ("UUID", "uuid()"),
    ("BIT", "'101'::BIT"), ("BIGNUM", "(i % 5)"), ("INTEGER[]", "[i % 5]"), ("INTEGER[2]", "[i % 5, 1]"),
    ("STRUCT(a INTEGER)", "{'a': i % 5}"), ("MAP(VARCHAR, INTEGER)", "MAP {'a': i % 5}"),
    ("UNION(a INTEGER, b VARCHAR)", "(i % 5)::INTEGER"),
]
COLUMNS = [f"c{n}" for n in range(len(TYPES))]


def column_of(type_name: str) -> str:
    return COLUMNS[[t for t, _ in TYPES].index(type_name)]


UNUSUAL = ("HUGEINT", "UHUGEINT", "DECIMAL(38,10)", "FLOAT", "TIMESTAMPTZ", "TIMESTAMP_NS", "TIMESTAMP_S", "TIME",
           "TIME_NS", "TIMETZ", "ENUM('lo', 'mid', 'hi')", "BOOLEAN")


@pytest.fixture(scope="module")
def kinds(module_con):
    """One table holding a column of every type (test-only fixed SQL), and the engine's reading of it."""
    con = module_con
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok')")  # a named type reads as what it names
    declared = ", ".join(f"{c} {type_name}" for c, (type_name, _) in zip(COLUMNS, TYPES))
    values = ", ".join(f"CASE WHEN i < {ROWS - 1} THEN {value} END" for _, value in TYPES)
    con.execute(f"CREATE TABLE kinds (id BIGINT, {declared}, named mood)")
    con.execute(f"INSERT INTO kinds SELECT i, {values}, ['sad', 'ok'][i % 2 + 1] FROM range({ROWS}) r(i)")
    return con, {qi.name: qi for qi in DuckDBEngine(con, "kinds").columns()}


def test_a_column_is_read_as_the_sql_mondrian_reads_it(kinds):
    """Kind None exactly where mondrian()'s own rule (anon_qi_kind, the check that refuses a QI)
    says no; numeric and temporal exactly where its rules anon_is_numeric and anon_is_temporal order the
    column by magnitude; a temporal key equal to the SQL's ordering key (anon_numeric_key) row by row."""
    con, read = kinds
    columns = COLUMNS + ["named"]
    rules = con.execute("SELECT " + ", ".join(f"[(anon_qi_kind(typeof({c})) IS NOT NULL), anon_is_numeric({c}), anon_is_temporal({c})]"
                                              for c in columns) + " FROM kinds LIMIT 1").fetchone()
    for c, (generalizable, numeric, temporal) in zip(columns, rules):
        expected = None if not generalizable else TEMPORAL if temporal else NUMERIC if numeric else CATEGORICAL
        assert read[c].kind == expected, (c, read[c])
        if expected == TEMPORAL:
            key = read[c].key.format(x=c)
            assert con.execute(f"SELECT count(*) FROM kinds WHERE ({key})::DOUBLE IS DISTINCT FROM "
                               f"anon_numeric_key({c})").fetchone()[0] == 0, c


def test_a_column_read_as_none_is_one_mondrian_refuses(kinds):
    """The rule above is mondrian()'s: it refuses a QI of a type the engine reads as kind None."""
    con, read = kinds
    refused = next(c for c in COLUMNS if read[c].kind is None)
    with pytest.raises(duckdb.Error, match=rf"mondrian\(\): argument 'qis'.*{refused}.*cannot be generalized"):
        con.execute("SELECT count(*) FROM mondrian('kinds', ['c0', ?], 2)", [refused]).fetchall()


def test_every_kind_is_met_and_the_documented_ones_hold(kinds):
    """The table above reaches all four readings; the types the docs name land where they say."""
    _, read = kinds
    kind_of = {type_name: read[c].kind for c, (type_name, _) in zip(COLUMNS, TYPES)}
    assert {NUMERIC, TEMPORAL, CATEGORICAL, None} == set(kind_of.values())
    assert [kind_of[t] for t in ("DECIMAL(10,2)", "HUGEINT", "DATE", "TIMESTAMPTZ", "TIME", "ENUM('lo', 'mid', 'hi')",
                                 "BOOLEAN", "VARCHAR", "INTERVAL", "BLOB", "INTEGER[]")] == \
        [NUMERIC, NUMERIC, TEMPORAL, TEMPORAL, CATEGORICAL, CATEGORICAL, CATEGORICAL, CATEGORICAL, None, None, None]
    assert read["named"].kind == CATEGORICAL  # a named ENUM type


def test_the_level_driver_releases_the_unusual_types_as_mondrian_does(kinds):
    """One release over a QI of each of the types tests/mondrian/test_driver.py's tables do not hold (wide
    and unsigned integers, wide decimals, FLOAT, the timestamps of other units or with a time zone, the
    times, ENUMs, BOOLEAN), through the engine and through the SQL macro: the same rows (both keep only the
    QIs and the id)."""
    con, read = kinds
    qis = [column_of(t) for t in UNUSUAL] + ["named"]
    assert all(read[c].kind is not None for c in qis)
    mondrian(con, "kinds", qis, 2, into="kinds_driver", keep=["id"])
    con.execute("CREATE TABLE kinds_sql AS SELECT * FROM mondrian('kinds', ?, 2, keep := ['id'])", [qis])
    assert multiset_differences(con, "kinds_driver", "kinds_sql") == (0, 0)
    assert con.execute("SELECT count(DISTINCT COLUMNS(?)) FROM kinds_sql", [qis[0]]).fetchone()[0] > 1  # it cut the table


@pytest.mark.parametrize("order", ["appearance", "value"])
def test_a_collated_text_qi_is_released_as_mondrian_does(con, order):
    """Values equal under the column's collation ('a', 'A' under NOCASE) are one category on both paths: one
    cell, one code, one spelling in a label."""
    con.execute("CREATE TABLE t (x INTEGER, c VARCHAR COLLATE NOCASE)")
    con.execute("INSERT INTO t SELECT i % 5, ['a', 'A', 'b'][i % 3 + 1] FROM range(8) r(i)")
    mondrian(con, "t", ["x", "c"], 2, categorical_order=order, into="driver")
    con.execute("CREATE TABLE macro AS SELECT * FROM mondrian('t', ['x', 'c'], 2, categorical_order := ?)", [order])
    assert multiset_differences(con, "driver", "macro") == (0, 0)
    labels = [row[0] for row in con.execute("SELECT DISTINCT c FROM macro").fetchall()]
    assert not [label for label in labels if "a" in label.lower() and label.lower().count("a") > 1], labels


def test_an_unreadable_table_names_the_function_and_the_argument(module_con):
    for fn in ("mondrian", "km_anonymize"):
        with pytest.raises(ValueError, match=rf"^{fn}\(\): argument 'table_name': cannot read 'no_such_table'"):
            DuckDBEngine(module_con, "no_such_table", fn)


def test_the_engine_contract_on_a_hostile_table_name(con):
    """source() reads a table whose name would end a quoted literal; create, append, count, value, rows and
    number() do what the Engine interface says; drop() forgets a TEMP relation only, and no error when
    it is gone."""
    name = "t'); DROP TABLE victim; --"
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM (VALUES (3, \'c\'), (1, \'a\'), (NULL, \'n\'), (2, \'b\')) v(x, y)')
    engine = DuckDBEngine(con, name)
    assert [(qi.name, qi.kind) for qi in engine.columns()] == [("x", NUMERIC), ("y", CATEGORICAL)]
    source = engine.source().sql("duckdb")
    assert sorted(con.execute(f"SELECT y FROM {source}").fetchall()) == [("a",), ("b",), ("c",), ("n",)]

    names = Names()
    made, grown, numbered = (names.real(names(what)) for what in ("made", "grown", "numbered"))
    engine.create(made, f"SELECT x FROM {source} WHERE x IS NOT NULL")
    engine.create(made, f"SELECT x * 10 AS x FROM {source} WHERE x IS NOT NULL")  # replaced, not added to
    assert engine.count(made) == 3 and engine.value(f"SELECT sum(x) FROM {made}") == 60
    assert sorted(engine.rows(f"SELECT x FROM {made}")) == [(10,), (20,), (30,)]
    for _ in range(3):
        engine.append(grown, f"SELECT x FROM {source}")
    assert engine.count(grown) == 12  # the first append creates, the others insert
    engine.number(numbered, f"SELECT x, y FROM {source}", "x")
    assert engine.rows(f"SELECT x, __anon_row FROM {numbered} ORDER BY __anon_row") == \
        [(1, 1), (2, 2), (3, 3), (None, 4)]  # ascending, NULLs last, from 1
    temporary = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert {made, grown, numbered} <= temporary

    con.execute(f"CREATE TABLE {made} AS SELECT 'mine' AS owner")  # a user's table of the same name
    for relation in names.made:
        engine.drop(relation)
        engine.drop(relation)  # gone already: no error
    assert con.execute(f"SELECT owner FROM main.{made}").fetchall() == [("mine",)]
    assert not {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert con.execute("SELECT x FROM victim").fetchall() == [(1,)]


def intermediate(con) -> list[str]:
    """Every relation a run's Names made that is still there."""
    return [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '\\_\\_anon\\_lv\\_%' "
                                      "ESCAPE '\\' UNION ALL SELECT view_name FROM duckdb_views() "
                                      "WHERE view_name LIKE '\\_\\_anon%' ESCAPE '\\'").fetchall()]


@pytest.mark.parametrize("how", ["k beyond the rows", "hierarchy without a leaf", "target schema missing", "released"])
def test_a_run_leaves_no_intermediate_relation_whether_it_fails_or_not(con, how):
    """The driver's relations are dropped when the run fails early (the check on k, the hierarchies' leaves)
    or late (the release cannot be written), and when it succeeds."""
    con.execute("CREATE TABLE people AS SELECT i AS id, i % 7 AS age, ['a', 'b', 'c'][i % 3 + 1] AS zip FROM range(30) r(i)")
    con.execute("CREATE TABLE zip_edges AS SELECT * FROM (VALUES ('a', 'ab'), ('b', 'ab'), ('ab', '*')) e(value, parent)")
    con.execute("CREATE TABLE zips AS SELECT * FROM hierarchy_from_parents('zip_edges')")  # no leaf 'c'
    arguments = {"k beyond the rows": dict(k=31), "hierarchy without a leaf": dict(hierarchies={"zip": "zips"}),
                 "target schema missing": dict(into="no_schema.out"), "released": {}}[how]
    call = dict(k=3, into="out") | arguments
    if how == "released":
        mondrian(con, "people", ["age", "zip"], **call)
        assert con.execute("SELECT count(*) FROM out").fetchone()[0] == 30
    else:
        with pytest.raises((ValueError, duckdb.Error)) as err:
            mondrian(con, "people", ["age", "zip"], **call)
        if isinstance(err.value, ValueError):
            assert str(err.value).startswith("mondrian(): argument '")
    assert intermediate(con) == []
