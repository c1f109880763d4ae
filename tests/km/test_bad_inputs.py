"""Bad input to km_anonymize(), km_anonymity(), km_check(), km_measures() and hierarchy_from_parents(): each
error names the function and the argument, and a failed run leaves no table behind."""
import duckdb
import pytest

import duckdb_anon
from duckdb_anon.km import km_anonymize


@pytest.fixture(scope="module")
def bcon(module_con):
    module_con.execute("CREATE TABLE r AS SELECT p AS person, p % 3 AS item, p % 2 AS band, 'x' AS note FROM range(12) a(p)")
    module_con.execute("CREATE TABLE h_bad AS SELECT '0' AS leaf, ['0', 'A', '*'] AS path")  # lacks items 1 and 2
    module_con.execute("CREATE TABLE h_cycle AS SELECT * FROM (VALUES ('0', ['0', 'A', '*']), ('1', ['1', 'A', 'B']), "
                       "('2', ['2', 'A', '*'])) t(leaf, path)")
    module_con.execute("CREATE TABLE taken AS SELECT 1 AS x")
    duckdb_anon.set_pseudonym_key(module_con, "bkey", duckdb_anon.new_pseudonym_key())
    return module_con


GOOD = dict(person="person", items=["item"], k=2, m=1, into="fresh", key_name="bkey")
CASES = [
    (dict(table_name="nope"), "table_name"),
    (dict(table_name=""), "table_name"),
    (dict(items=[]), "items"),
    (dict(items="item"), "items"),
    (dict(items=["item", "ITEM"]), "items"),
    (dict(items=["missing"]), "items"),
    (dict(k=0), "'k'"),
    (dict(k=True), "'k'"),
    (dict(k=2.5), "'k'"),
    (dict(m=0), "'m'"),
    (dict(seed=-1), "seed"),
    (dict(person="missing"), "person"),
    (dict(person="item"), "person"),
    (dict(person=None), "person"),  # no privacy unit declared for r
    (dict(keep=["missing"]), "keep"),
    (dict(keep=["item"]), "keep"),
    (dict(hierarchies={"band": "h_bad"}), "hierarchies"),  # not an item column
    (dict(hierarchies={"item": "h_bad"}), "hierarchies"),  # values 1 and 2 missing
    (dict(hierarchies={"item": "h_cycle"}), "hierarchies"),  # two roots
    (dict(hierarchies={"item": "no_such_table"}), "hierarchies"),
    (dict(hierarchies=["item"]), "hierarchies"),
    (dict(into="taken"), "into"),
    (dict(into=""), "into"),
    (dict(strategy="other"), "strategy"),
    (dict(person_output="hashed"), "person_output"),
    (dict(key_name=None), "key_name"),
    (dict(key_name="no_key_set"), "key_name"),
    (dict(key_name="a;b"), "key_name"),
    (dict(release_name=" "), "release_name"),
]


@pytest.mark.parametrize("change, argument", CASES)
def test_bad_argument_names_function_and_argument(bcon, change, argument):
    args = {**GOOD, **change}
    table = args.pop("table_name", "r")
    before = bcon.execute("SELECT count(*) FROM duckdb_tables()").fetchall()[0][0]
    with pytest.raises((ValueError, duckdb.Error)) as err:
        km_anonymize(bcon, table, **args)
    assert "km_anonymize()" in str(err.value) and argument in str(err.value)
    assert bcon.execute("SELECT count(*) FROM duckdb_tables()").fetchall()[0][0] == before  # nothing left behind


SQL_BAD_INPUTS = [
    ("SELECT * FROM km_anonymity('r', ['item'], 0, 1, person := 'person', key_name := 'bkey')", "km_anonymity", "'k'"),
    ("SELECT * FROM km_anonymity('r', 'item', 2, 1, person := 'person', key_name := 'bkey')", "km_anonymity", "items"),
    ("SELECT * FROM km_anonymity('r', ['item'], 2, 'x', person := 'person', key_name := 'bkey')", "km_anonymity", "'m'"),
    ("SELECT * FROM km_anonymity('r', ['item'], 2, 1, person := 'nope', key_name := 'bkey')", "km_anonymity", "person"),
    ("SELECT * FROM km_check('r', 'person', ['item'], 2, 5)", "km_check", "'m'"),
    ("SELECT * FROM km_check('r', 'person', [], 2, 1)", "km_check", "items"),
    ("SELECT * FROM km_measures('r', NULL, ['item'])", "km_measures", "release_table"),
    ("SELECT * FROM km_measures('r', 'r', ['item'], hierarchies := {'band': 'h_bad'})", "km_measures", "hierarchies"),
    ("SELECT * FROM km_measures('r', 'r', ['item'], person := 'nope')", "km_measures", "person"),
    ("SELECT * FROM km_measures('r', 'r', ['item'], person := 3)", "km_measures", "person"),
    ("SELECT * FROM km_measures('r', 'r', ['item'], person := '__anon_p')", "km_measures", "person"),
    ("SELECT * FROM hierarchy_from_parents('r')", "hierarchy_from_parents", "table_name"),
]


@pytest.mark.parametrize("sql, fn, argument", SQL_BAD_INPUTS)
def test_bad_sql_argument_names_function_and_argument(bcon, sql, fn, argument):
    with pytest.raises(duckdb.Error) as err:
        bcon.execute(sql).fetchall()
    assert f"{fn}()" in str(err.value) and argument in str(err.value)
