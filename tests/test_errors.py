"""Bad input: a clear error naming the function and the argument, nothing modified or left behind."""
import duckdb
import pytest

import duckdb_anon


@pytest.fixture(scope="module")
def small(module_con):
    """A table every bad-argument row reads (each checks that nothing was modified or left behind)."""
    module_con.execute("CREATE TABLE t AS SELECT range AS a, range % 3 AS b FROM range(20)")
    return module_con


def _objects(con):
    return con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0], \
        con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0]


@pytest.mark.parametrize("call, words", [
    ("mondrian('t', 'a', 5)", ["mondrian()", "'qis'", "list"]),
    ("mondrian('t', [], 5)", ["mondrian()", "'qis'", "at least one"]),
    ("mondrian('t', ['a', 'a'], 5)", ["mondrian()", "'qis'", "twice"]),
    ("mondrian('t', ['a'], 0)", ["mondrian()", "'k'", "at least 1"]),
    ("mondrian('t', ['a'], 2.5)", ["mondrian()", "'k'", "integer"]),
    ("mondrian('t', ['a'], '5')", ["mondrian()", "'k'", "integer"]),
    ("mondrian('t', ['a'], 21)", ["mondrian()", "'k'", "only 20 rows"]),
    ("mondrian('t', ['a'], 5, 'loose')", ["mondrian()", "'mode'", "'loose'"]),
    ("mondrian('t', ['a'], 5, output := 'json')", ["mondrian()", "'output'"]),
    ("mondrian('t', ['a'], 5, categorical_order := 'random')", ["mondrian()", "'categorical_order'"]),
    ("mondrian('t', ['a'], 5, split_rule := 'widest')", ["mondrian()", "'split_rule'"]),
    ("mondrian_classes('t', ['a'], 0)", ["mondrian_classes()", "'k'"]),
    ("mondrian('t', ['nope'], 5)", ["nope"]),
    ("mondrian('no_such_table', ['a'], 5)", ["no_such_table"]),
])
def test_bad_arguments_are_named(small, call, words):
    before = _objects(small)
    with pytest.raises(duckdb.Error) as err:
        small.execute(f"SELECT * FROM {call}").fetchall()
    for word in words:
        assert word in str(err.value)
    assert _objects(small) == before
    assert small.execute("SELECT count(*), sum(a), sum(b) FROM t").fetchone() == (20, 190, 19)


def test_empty_table_gives_an_empty_release(con):
    con.execute("CREATE TABLE e (a INTEGER, b VARCHAR)")
    assert con.execute("SELECT * FROM mondrian('e', ['a', 'b'], 5)").fetchall() == []


@pytest.mark.parametrize("name", ['x"; DROP TABLE victim; --', "select", "with space", "ünïcødé", "it's"])
def test_hostile_and_odd_names_work_and_drop_nothing(con, name):
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    quoted = '"' + name.replace('"', '""') + '"'
    col = '"' + ("c " + name).replace('"', '""') + '"'
    con.execute(f"CREATE TABLE {quoted} AS SELECT range AS {col}, range % 4 AS \"order\" FROM range(30)")
    rows = con.execute("SELECT * FROM mondrian(?, [?, 'order'], 5)", [quoted, "c " + name]).fetchall()
    assert len(rows) == 30
    assert con.execute("SELECT count(*) FROM victim").fetchone()[0] == 1
    assert con.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0] == 30


def test_schema_qualified_view(con):
    con.execute('CREATE SCHEMA s; CREATE TABLE s.base AS SELECT range AS a FROM range(12); '
                'CREATE VIEW s."the view" AS SELECT * FROM s.base')
    assert len(con.execute("SELECT * FROM mondrian('s.\"the view\"', ['a'], 4)").fetchall()) == 12


@pytest.mark.parametrize("spelling", ["__anon_x", "__ANON_X"])
@pytest.mark.parametrize("call, fn, arg", [
    (lambda con, c: duckdb_anon.declare_role(con, "r", c, "quasi_identifier"), "declare_role", "column"),
    (lambda con, c: duckdb_anon.declare_privacy_unit(con, "r", c), "declare_privacy_unit", "column"),
    (lambda con, c: duckdb_anon.preserve_patterns(con, "r", [c], "walked"), "preserve_patterns", "columns"),
])
def test_python_declarations_refuse_a_reserved_column_in_any_case(con, call, fn, arg, spelling):
    """The table really holds the column, so only the reserved-name rule (anon_reserved_name) can refuse it;
    nothing is declared or written."""
    con.execute(f'CREATE TABLE r AS SELECT range AS id, range % 5 AS "{spelling}" FROM range(50)')
    before = _objects(con), con.execute("SELECT count(*) FROM anon_column_roles").fetchone()[0]
    with pytest.raises(ValueError, match=rf"^{fn}\(\): argument '{arg}' holds a reserved __anon_ name"):
        call(con, spelling)
    assert (_objects(con), con.execute("SELECT count(*) FROM anon_column_roles").fetchone()[0]) == before
    assert con.execute("SELECT count(*) FROM anon_privacy_units").fetchone()[0] == 0
