"""duckdb_anon/engines/base.py: the one renderer (user names enter only as quoted identifiers, values only
as literals, tables keep their placeholder's alias, the output reads back in DuckDB and Spark SQL),
literal() read back by DuckDB as the value it was made from, and Names."""
import math
import re

import duckdb
import pytest
import sqlglot
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from duckdb_anon.engines.base import RUN, Names, literal, render
from tests.conftest import examples

HOSTILE = ['x"; DROP TABLE victim; --', "it's", "two words", "select", "ünï\u2028code", 'a""b', "x]"]


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE victim AS SELECT 1 AS x")
    columns = ", ".join(f'{n} AS "{name.replace(chr(34), chr(34) * 2)}"' for n, name in enumerate(HOSTILE))
    con.execute(f"CREATE TABLE hostile AS SELECT {columns}")
    yield con
    assert con.execute("SELECT x FROM victim").fetchall() == [(1,)]  # nothing ever ran as SQL
    con.close()


def reads_back(sql: str, dialect: str) -> exp.Expression:
    """`sql` parsed by sqlglot in `dialect`: the same tree whichever engine it was written for."""
    return sqlglot.parse_one(sql, read=dialect)


@pytest.mark.parametrize("position, name", list(enumerate(HOSTILE)))
def test_a_mapped_identifier_is_a_quoted_name_in_both_dialects(db, position, name):
    """A column placeholder mapped to a hostile name reads that column on DuckDB; in both dialects' text it
    parses back as one column of exactly that name, never as more SQL."""
    text = "SELECT __c AS out FROM hostile WHERE __c IS NOT NULL"
    column = {"__c": name}.get
    assert db.execute(render(text, "duckdb", column)).fetchall() == [(position,)]
    for dialect in ("duckdb", "spark"):
        tree = reads_back(render(text, dialect, column), dialect)
        assert [c.name for c in tree.find_all(exp.Column)] == [name, name]
        assert isinstance(tree, exp.Select) and not list(tree.find_all(exp.Drop))


def test_an_unmapped_identifier_stays_as_written(db):
    assert render("SELECT x FROM victim", "duckdb", lambda name: None) == "SELECT x FROM victim"


@pytest.mark.parametrize("value", ["'); DROP TABLE victim; --", "a\\'b", 7, -2.5, None, True, ["x'y", None]])
def test_a_parameter_becomes_a_literal_in_both_dialects(db, value):
    """`__p_<name>` columns become parameters[name]; a qualified column of that name is a real column."""
    text = "SELECT __p_v AS v, h.__p_v AS own FROM (SELECT 1 AS __p_v) AS h"
    duck = render(text, "duckdb", parameters={"v": literal(value)})
    assert db.execute(duck).fetchall() == [(value, 1)]
    spark = render(text, "spark", parameters={"v": literal(value)})
    assert db.execute(reads_back(spark, "spark").sql("duckdb")).fetchall() == [(value, 1)]


def test_tables_are_substituted_keeping_their_alias(db):
    """A placeholder table becomes the relation (a name or an expression) under the placeholder's name or
    its own alias, so column references through either still read; a schema-qualified table of the same
    name is left alone, and so is __anon_source without a `source`."""
    db.execute("CREATE TABLE real_cells AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) v(x, y)")
    text = "SELECT cells.x, c2.y FROM cells JOIN cells AS c2 ON cells.x = c2.x ORDER BY cells.x"
    assert db.execute(render(text, "duckdb", cells="real_cells")).fetchall() == [(1, "a"), (2, "b")]
    relation = exp.Table(this=exp.Anonymous(this="query_table", expressions=[exp.Literal.string("real_cells")]))
    assert db.execute(render(text, "duckdb", cells=relation)).fetchall() == [(1, "a"), (2, "b")]
    assert render("SELECT * FROM main.cells", "duckdb", cells="real_cells") == "SELECT * FROM main.cells"
    assert render("SELECT * FROM __anon_source", "duckdb") == "SELECT * FROM __anon_source"


def test_the_source_is_substituted_keeping_its_alias(db):
    """__anon_source becomes `source`, here a table whose name would end a quoted literal, read by name."""
    db.execute("""CREATE TABLE "it's" AS SELECT 41 AS x""")
    source = exp.Table(this=exp.Anonymous(this="query_table", expressions=[exp.Literal.string("it's")]))
    for text in ("SELECT s.x + 1 FROM __anon_source AS s", "SELECT x + 1 FROM __anon_source"):
        assert db.execute(render(text, "duckdb", source=source)).fetchall() == [(42,)]
        relation = reads_back(render(text, "spark", source=source), "spark").find(exp.Anonymous)
        assert relation.name.lower() == "query_table" and relation.expressions[0].name == "it's"


def test_rewrite_sees_every_other_node_in_the_target_dialect(db):
    """`rewrite(node, dialect)` replaces what the renderer does not (an algorithm's own placeholders)."""
    seen = set()

    def twice(node, dialect):
        seen.add(dialect)
        if isinstance(node, exp.Anonymous) and node.name == "__twice":
            return exp.Mul(this=node.expressions[0].copy(), expression=exp.Literal.number(2))
        return node

    text = "SELECT __twice(x) + __p_one FROM victim"
    assert db.execute(render(text, "duckdb", rewrite=twice, parameters={"one": literal(1)})).fetchall() == [(3,)]
    spark = render(text, "spark", rewrite=twice, parameters={"one": literal(1)})
    assert db.execute(reads_back(spark, "spark").sql("duckdb")).fetchall() == [(3,)]
    assert seen == {"duckdb", "spark"} and "__twice" not in spark


HUGEINT = st.integers(-(2 ** 127) + 1, 2 ** 127 - 1)  # DuckDB reads a wider integer literal as a DOUBLE
SCALARS = st.one_of(st.none(), st.booleans(), HUGEINT, st.floats(), st.text(max_size=12))
LISTS = st.one_of(st.lists(st.one_of(st.none(), st.integers(-10 ** 6, 10 ** 6)), max_size=4),
                  st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=4),
                  st.lists(st.lists(st.booleans(), max_size=2), min_size=1, max_size=3))


def same(got, value) -> bool:
    if isinstance(value, float):
        return got is not None and (math.isnan(value) and math.isnan(float(got)) or float(got) == value)
    return got == value and type(got) is type(value) if value is not None else got is None


@settings(max_examples=examples(20), deadline=None)
@given(value=st.one_of(SCALARS, LISTS))
@example(value=float("nan"))
@example(value=float("-inf"))
@example(value=0.1)
@example(value=-(2 ** 127) + 1)
@example(value="it's \\ \n 'quoted'")
@example(value=[])
def test_literal_reads_back_as_the_value_in_both_dialects(value):
    """SELECT <literal(value)> gives the value back (a float as the number it is; nan and the infinities
    too), written for DuckDB or written for Spark and read back by sqlglot."""
    con = CON
    text = literal(value).sql("duckdb")
    assert same(con.execute("SELECT " + text).fetchone()[0], value), text
    spark = reads_back("SELECT " + literal(value).sql("spark"), "spark").sql("duckdb")
    assert same(con.execute(spark).fetchone()[0], value), spark


CON = duckdb.connect()  # literal() needs no table: one connection for every example


def test_names_are_unique_per_run_and_real_only_through_the_run():
    """Each run's relations get a prefix of its own (a plain identifier: no quoting needed); the SQL a plan
    holds names them under RUN, which real() turns into the run's; made lists each, for the drop."""
    a, b = Names(), Names()
    assert a.prefix != b.prefix and re.fullmatch(r"__anon_lv_[0-9a-f]{12}_", a.prefix)
    placeholder = a("cells")
    assert placeholder == RUN + "cells" and b("cells") == placeholder  # the plan's text is the same for both
    assert a.real(f"SELECT * FROM {placeholder}") == f"SELECT * FROM {a.prefix}cells"
    assert a.real(placeholder) != b.real(placeholder)
    a("state")
    assert a.made == [a.prefix + "cells", a.prefix + "state"] and b.made == [b.prefix + "cells"]
    con = duckdb.connect()
    for name in a.made + b.made:
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT 1 AS x")  # the prefix needs no quotes
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == 3
