"""mondrian() has two recursions, both generated from the level plan: the plain one (duckdb_anon/mondrian/macros.py),
which plain calls run, and the checked one (mondrian/checked_macros.py, from mondrian/checked.py), which runs when
a hierarchy, a model or suppression is asked for. Each test here is a small table where one rule decides the
classes: both recursions must give the classes the plain-Python reference (tests/reference_mondrian.py)
gives, and the same release, labels included.

The checked recursion runs on a second connection whose dispatcher names no plain macro (as for a call
with a hierarchy), so each table is anonymized both ways on real DuckDB."""
import pytest

import duckdb_anon
from tests.conftest import qi_sql
from duckdb_anon.mondrian.macros import SHAPES, partition_macros
from tests.reference_mondrian import mondrian_reference



@pytest.fixture(scope="module")
def cons():
    """(generated, checked): two connections, the second one's anon_partition always taking the checked path."""
    generated, checked = duckdb_anon.connect(), duckdb_anon.connect()
    checked.execute("CREATE OR REPLACE MACRO anon_level_partitioner(q, mode, rule) AS NULL")
    yield generated, checked
    generated.close()
    checked.close()


def load(cons, columns):
    for con in cons:
        _load(con, columns)


def _load(con, columns):
    """Table t: id (0, 1, ...) and the given columns, {name: (SQL type, values)}."""
    names = list(columns)
    rows = zip(*(values for _, values in columns.values()))
    values = ", ".join("(" + ", ".join([str(i)] + ["NULL" if v is None else repr(v) for v in row]) + ")"
                       for i, row in enumerate(rows))
    casts = ", ".join(f"c{j}::{columns[name][0]} AS {name}" for j, name in enumerate(names))
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT c AS id, {casts} FROM (VALUES {values}) "
                f"v(c, {', '.join(f'c{j}' for j in range(len(names)))}) ORDER BY id")


def classes(con, qis, k, options=""):
    """The classes of mondrian_classes(), each a sorted tuple of ids."""
    rows = con.execute(f"SELECT list(t.id ORDER BY t.id) FROM mondrian_classes('t', {qi_sql(qis)}, {k}{options}) m "
                       f"JOIN (SELECT row_number() OVER () AS row_id, id FROM t) t USING (row_id) GROUP BY class_id").fetchall()
    return sorted(tuple(ids) for (ids,) in rows)


def release(con, qis, k, options, shape):
    return con.execute(f"SELECT * FROM mondrian('t', {qi_sql(qis)}, {k}, output := '{shape}'{options}) ORDER BY id").fetchall()


def both(cons, qis, k, options="", shapes=("text",)):
    """The classes, after checking that both recursions give them and the same release."""
    generated, checked = (classes(con, qis, k, options) for con in cons)
    assert generated == checked
    for shape in shapes:
        assert release(cons[0], qis, k, options, shape) == release(cons[1], qis, k, options, shape)
    return generated


def reference(keys, k, mode="strict"):
    return sorted(tuple(c) for c in mondrian_reference(keys, k, mode))


def test_widest_qi_ties_go_to_the_earliest_listed(cons):
    x, y = [0, 1, 2, 3], [0, 3, 1, 2]  # equal widths everywhere: the list order alone picks the QI
    load(cons, {"x": ("INTEGER", x), "y": ("INTEGER", y)})
    xy, yx = both(cons, ["x", "y"], 2), both(cons, ["y", "x"], 2)
    assert xy == reference(list(zip(x, y)), 2) == [(0, 1), (2, 3)]
    assert yx == reference(list(zip(y, x)), 2) == [(0, 2), (1, 3)]


def test_median_is_where_the_running_count_reaches_half(cons):
    load(cons, {"x": ("INTEGER", [1, 1, 1, 2, 3, 4])})  # 3 of 6 rows reached at key 1: cut after it
    assert both(cons, ["x"], 3) == reference([(v,) for v in [1, 1, 1, 2, 3, 4]], 3) == [(0, 1, 2), (3, 4, 5)]
    load(cons, {"x": ("INTEGER", [1, 1, 2, 2, 2, 3])})  # the median cut leaves 1 row: no cut
    assert both(cons, ["x"], 2) == [(0, 1, 2, 3, 4, 5)]


def test_strict_falls_back_to_the_next_widest_qi(cons):
    x, y = [0, 0, 0, 0, 0, 10], [0, 1, 2, 3, 4, 5]  # x is tried first; its cut leaves 1 row on a side
    load(cons, {"x": ("INTEGER", x), "y": ("INTEGER", y)})
    assert both(cons, ["x", "y"], 2) == reference(list(zip(x, y)), 2) == [(0, 1, 2), (3, 4, 5)]


def test_relaxed_shares_ties_in_qi_vector_order(cons):
    x, y = [1, 1, 1, 1, 2, 3], [3, 2, 1, 0, 0, 0]  # four rows tied at the median; three go left
    load(cons, {"x": ("INTEGER", x), "y": ("INTEGER", y)})
    got = both(cons, ["x", "y"], 3, ", mode := 'relaxed'")
    assert got == reference(list(zip(x, y)), 3, "relaxed") == [(0, 4, 5), (1, 2, 3)]  # not row order: (0, 1, 2)


def test_null_sorts_after_every_number(cons):
    x = [1, 2, 3, None, None, 4]
    load(cons, {"x": ("INTEGER", x)})
    fill = 4 + max(4 - 1, 1)  # one table range beyond the largest value
    assert both(cons, ["x"], 3) == reference([(fill if v is None else v,) for v in x], 3) == [(0, 1, 2), (3, 4, 5)]
    labels = cons[0].execute("SELECT DISTINCT x FROM mondrian('t', ['x'], 3) WHERE id >= 3").fetchall()
    assert labels == [("4,NULL",)]


@pytest.mark.parametrize("order,codes", [("appearance", {"b": 0, "a": 1, "c": 2}), ("value", {"a": 0, "b": 1, "c": 2})])
def test_categories_are_ordered_by_first_appearance_or_by_value(cons, order, codes):
    c = ["b", "a", "b", "c"]
    load(cons, {"c": ("VARCHAR", c)})
    got = both(cons, ["c"], 2, f", categorical_order := '{order}'")
    assert got == reference([(codes[v],) for v in c], 2)
    assert got == ([(0, 2), (1, 3)] if order == "appearance" else [(0, 1, 2, 3)])


def test_inherited_rule_widths_come_from_the_region(cons):
    # after the first cut on x, y's region is still the whole table's: inherited cuts y where actual cuts x
    load(cons, {"x": ("INTEGER", [4, 3, 5, 2, 6, 1, 1]), "y": ("INTEGER", [9, 5, 5, 3, 7, 2, 1])})
    assert both(cons, ["x", "y"], 2) == [(0, 1), (2, 4), (3, 5, 6)]
    assert both(cons, ["x", "y"], 2, ", split_rule := 'inherited'") == [(0, 4), (1, 2), (3, 5, 6)]


def test_labels_and_typed_bounds(cons):
    load(cons, {"num": ("DOUBLE", [1.5, 2.5, 2.5, 9.0, None, 7.0]),
                "d": ("DATE", ["2020-01-01", "2020-01-03", "2020-02-01", "2021-01-01", "2021-06-01", "2020-12-31"]),
                "s": ("VARCHAR", ["a,b", "{x}", "NULL", "*", "a,b", "q"])})
    both(cons, ["num", "d", "s"], 2, shapes=("text", "typed"))
    # typed bounds recomputed from the source rows of each class (the typed labels group the classes)
    con = cons[0]
    con.execute("CREATE OR REPLACE TABLE g AS FROM mondrian('t', ['num', 'd', 's'], 2, output := 'typed')")
    mismatched = con.execute("""
        SELECT count(*) FROM (SELECT g.num, g.d, min(t.num) AS lo, max(t.num) AS hi, min(t.d) AS dlo, max(t.d) AS dhi
                              FROM g JOIN t USING (id) GROUP BY g.num, g.d, g.s)
        WHERE num.lo IS DISTINCT FROM lo OR num.hi IS DISTINCT FROM hi OR d.lo IS DISTINCT FROM dlo
              OR d.hi IS DISTINCT FROM dhi""").fetchall()[0][0]
    assert mismatched == 0
    escaped = con.execute("SELECT list(DISTINCT s ORDER BY s) FROM mondrian('t', ['num', 'd', 's'], 2)").fetchall()[0][0]
    assert all(label.startswith("{") or label in ("a\\,b", "\\{x\\}", "\\NULL", "\\*", "q") for label in escaped)


def test_every_shape_the_dispatcher_names_is_installed(cons):
    con = cons[0]
    installed = {name for (name,) in con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE starts_with(function_name, 'anon_level_partition_')").fetchall()}
    assert installed == {f"anon_level_partition_{w}_{m}_{r}" for w, m, r in SHAPES}
    for q in range(1, 40):
        for mode in ("strict", "relaxed"):
            for rule in ("actual", "inherited"):
                name = con.execute("SELECT anon_level_partitioner(?, ?, ?)", [q, mode, rule]).fetchall()[0][0]
                assert name is None or name in installed
                if name is not None:  # a shape holds at least the call's QIs
                    assert int(name.split("_")[3]) >= q
    assert con.execute("SELECT anon_level_partitioner(8, 'strict', 'actual')").fetchall()[0][0] is not None
    assert con.execute("SELECT anon_level_partitioner(2, 'strict''; --', 'actual')").fetchall()[0][0] is None


def test_generated_names_are_refused_as_table_names(cons):
    """A user table named like a relation of the generated recursion would be shadowed inside it."""
    import sqlglot
    from sqlglot import exp

    internal = set(cons[0].execute("SELECT anon_mondrian_internal_names()").fetchall()[0][0])
    for (width, _, rule), statement in zip(SHAPES, partition_macros()):
        if rule == "inherited" or width > 8:  # the same relations as the others
            continue
        body = statement[statement.index(" AS TABLE ") + len(" AS TABLE "):].rstrip(";")
        names = {cte.alias for cte in sqlglot.parse_one(body, read="duckdb").find_all(exp.CTE)}
        assert names <= internal, names - internal
