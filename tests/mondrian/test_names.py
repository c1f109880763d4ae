"""QI and sensitive names match the table's columns whatever their case; QIs of types that cannot be
generalized are refused with an error naming the function, 'qis', the column and its type."""
import duckdb
import pytest

from tests.conftest import assert_error_names


@pytest.fixture
def patients(con):
    con.execute("""CREATE TABLE patients AS SELECT range AS id, 20 + range % 50 AS Age, (10000 + range * 7 % 300)::VARCHAR AS zip,
                   range % 2 AS sex, ['flu', 'cold', 'covid'][range % 3 + 1] AS Diagnosis FROM range(200)""")
    con.execute("CREATE TABLE h_age AS SELECT * FROM hierarchy_intervals('patients', 'age', [10, 20])")
    return con


def rows(con, sql):
    return sorted(con.execute(sql).fetchall())


@pytest.mark.parametrize("args", ["", ", mode := 'relaxed'", ", output := 'typed'", ", sensitive := 'diagnosis', l := 2",
                                  ", hierarchies := {'AGE': 'h_age'}"])
def test_qi_names_in_any_case_give_the_same_release(patients, args):
    exact = rows(patients, f"SELECT * FROM mondrian('patients', ['Age', 'zip'], 10{args})")
    other = rows(patients, f"SELECT * FROM mondrian('patients', ['AGE', 'Zip'], 10{args.replace('diagnosis', 'DIAGNOSIS')})")
    assert exact == other
    assert len(other) == 200
    names = [d[0] for d in patients.execute(f"SELECT * FROM mondrian('patients', ['AGE', 'Zip'], 10{args})").description]
    assert names == ["id", "Age", "zip", "sex", "Diagnosis"]  # the table's own names and order


def test_classes_accept_names_in_any_case(patients):
    exact = rows(patients, "SELECT row_id, class_id FROM mondrian_classes('patients', ['Age', 'zip'], 10)")
    assert rows(patients, "SELECT row_id, class_id FROM mondrian_classes('patients', ['aGe', 'ZIP'], 10)") == exact


def test_a_column_listed_twice_in_different_cases_is_an_error(patients):
    assert_error_names(patients, "SELECT * FROM mondrian('patients', ['age', 'AGE'], 10)", ["mondrian()", "'qis'", "twice"])


@pytest.fixture(scope="module")
def odd_types(module_con):
    """A table with a column of each type that cannot be generalized, and an empty copy."""
    module_con.execute("""CREATE TABLE t AS SELECT range AS id, range % 7 AS a, {'p': range} AS s, [range] AS l,
                          map([range], [1]) AS m, uuid() AS u, 'x'::BLOB AS b, INTERVAL 1 DAY * range AS iv FROM range(30)""")
    module_con.execute("CREATE TABLE e AS SELECT * FROM t LIMIT 0")
    return module_con


@pytest.mark.parametrize("column, type_name", [("s", "STRUCT("), ("l", "BIGINT[]"), ("m", "MAP("), ("u", "UUID"),
                                                ("b", "BLOB"), ("iv", "INTERVAL")])
@pytest.mark.parametrize("fn", ["mondrian", "mondrian_classes"])
def test_a_qi_that_cannot_be_generalized_is_named(odd_types, fn, column, type_name):
    con = odd_types
    for table in ("t", "e"):  # an empty table is refused too
        assert_error_names(con, f"SELECT * FROM {fn}('{table}', ['a', '{column}'], 5)",
                           [f"{fn}(): argument 'qis': column '{column}' has type {type_name}", "cannot be generalized"])


def test_boolean_time_and_enum_qis_are_generalized(con):
    con.execute("CREATE TYPE level AS ENUM ('low', 'mid', 'high')")
    con.execute("""CREATE TABLE t AS SELECT range AS id, range % 2 = 0 AS flag, TIME '08:00' + to_minutes(range % 9) AS at,
                   (['low', 'mid', 'high'][range % 3 + 1])::level AS lvl FROM range(60)""")
    release = con.execute("SELECT * FROM mondrian('t', ['flag', 'at', 'lvl'], 5)").df()
    assert len(release) == 60
    assert release.groupby(["flag", "at", "lvl"]).size().min() >= 5


@pytest.mark.parametrize("name", ["pieces", "raw", "main.cells", '"Labels"'])
def test_a_table_named_like_an_internal_relation_is_refused_not_misread(name):
    """Inside DuckDB's binding mondrian()'s own relations shadow a user table of the same name (one such
    table lost 40 of its 100 rows): the name is refused, naming table_name; a view of another name works."""
    import duckdb_anon
    con = duckdb_anon.connect()
    try:
        con.execute(f"CREATE TABLE {name} AS SELECT range AS id, range % 20 AS age, range % 3 AS zip FROM range(100)")
        with pytest.raises(duckdb.Error, match=r"mondrian\(\): argument 'table_name'.*uses internally"):
            con.execute(f"SELECT * FROM mondrian('{name}', ['age', 'zip'], 5)").fetchall()
        con.execute(f"CREATE VIEW readable AS SELECT * FROM {name}")
        release = con.execute("SELECT * FROM mondrian('readable', ['age', 'zip'], 5)").df()
        assert len(release) == 100 and release.groupby(["age", "zip"]).size().min() >= 5
    finally:
        con.close()


@pytest.mark.parametrize("fn", ["mondrian", "mondrian_classes"])
def test_a_qi_named_like_an_internal_column_is_refused_and_the_renaming_view_works(module_con, fn):
    """A QI called n, part, cell, ... (the columns the partition carries beside the QIs) was read in place of
    them: a binder error about struct_extract. Each is refused naming the function, 'qis' and the column;
    the view the message suggests releases with every class of at least k rows (counted with plain SQL)."""
    reserved = [r[0] for r in module_con.execute("SELECT unnest(anon_mondrian_internal_columns())").fetchall()]
    assert {"n", "part", "cell", "off"} <= set(reserved)
    module_con.execute(f"CREATE OR REPLACE TABLE reserved_{fn} AS SELECT (i * 7919) % 50 AS q, i % 7 AS other "
                       "FROM range(300) r(i)")
    for name in reserved + [name.upper() for name in reserved[:2]]:
        module_con.execute(f'CREATE OR REPLACE VIEW named_{fn} AS SELECT q AS "{name}", other FROM reserved_{fn}')
        assert_error_names(module_con, f"SELECT * FROM {fn}('named_{fn}', ['other', '{name}'], 5)",
                           [f"{fn}(): argument 'qis': column '{name}'", "uses internally", "RENAME"])
    module_con.execute(f'CREATE OR REPLACE VIEW renamed_{fn} AS SELECT * RENAME ("n" AS n_value) FROM '
                       f'(SELECT q AS n, other FROM reserved_{fn})')
    if fn == "mondrian":
        sizes = module_con.execute(f"SELECT min(c), sum(c) FROM (SELECT count(*) AS c FROM mondrian('renamed_{fn}', "
                                   "['n_value', 'other'], 5) GROUP BY ALL)").fetchall()[0]
    else:
        sizes = module_con.execute(f"SELECT min(c), sum(c) FROM (SELECT count(*) AS c FROM mondrian_classes('renamed_{fn}', "
                                   "['n_value', 'other'], 5) GROUP BY class_id)").fetchall()[0]
    assert sizes[0] >= 5 and sizes[1] == 300


def _lambda_parameters():
    """Every lambda parameter name the installed macros use (x, c, piece, ...), read from sql/*.sql; names
    with the reserved __anon_ prefix are left out (a table cannot use them: tested elsewhere)."""
    import re
    from pathlib import Path
    text = "".join(p.read_text() for p in sorted((Path(__file__).resolve().parents[2] / "sql").glob("*.sql")))
    return sorted({name for pair in re.findall(r"lambda ([a-z_]+)(?:\s*,\s*([a-z_]+))?\s*:", text)
                   for name in pair if name and not name.startswith("__anon_")})


@pytest.fixture(scope="module")
def lambda_named(module_con):
    """60 rows whose columns are named like the macros' lambda parameters, beside qa, qb (QIs), s3 and id."""
    names = _lambda_parameters()
    assert {"x", "c", "q", "piece"} <= set(names)
    names = sorted(set(names) | {"e"})  # the label code's parameter was e before it had the __anon_ prefix
    columns = ", ".join(f'(range * {3 + i}) % {5 + i} AS "{name}"' for i, name in enumerate(names))
    module_con.execute(f"CREATE TABLE lambda_named AS SELECT range AS id, 20 + range % 30 AS qa, range % 4 AS qb, range % 3 AS s3, {columns} "
                       "FROM range(60)")
    reserved = {r[0] for r in module_con.execute("SELECT unnest(anon_mondrian_internal_columns())").fetchall()}
    return module_con, names, [name for name in names if name not in reserved]


def _quoted(names):
    return ", ".join('"' + name.replace('"', '""') + '"' for name in names)


@pytest.mark.parametrize("role", ["qi", "other"])
@pytest.mark.parametrize("args", [", mode := 'strict'", ", mode := 'relaxed'", ", output := 'typed'",
                                  ", sensitive := 's3', l := 2"])
def test_columns_named_like_a_lambda_parameter_are_released(lambda_named, role, args):
    """A QI named e was bound in place of the labels' lambda parameter (a binder error about GROUP BY): each
    name the macros use as a lambda parameter works as a QI and as a carried column; every row comes out,
    each class has at least k rows and the carried columns keep their values (counted with plain SQL)."""
    con, names, usable = lambda_named
    qis = usable if role == "qi" else ["qa", "qb"]
    con.execute(f"CREATE OR REPLACE TEMP TABLE out_lambda AS SELECT * FROM mondrian('lambda_named', {qis!r}, 5{args})")
    sizes = con.execute(f"SELECT min(c), sum(c) FROM (SELECT count(*) AS c FROM out_lambda GROUP BY {_quoted(qis)})").fetchall()[0]
    assert sizes[0] >= 5 and sizes[1] == 60
    carried = ["id"] + [name for name in names if name not in qis]
    changed = con.execute(f"SELECT count(*) FROM (SELECT {_quoted(carried)} FROM lambda_named "
                          f"EXCEPT ALL SELECT {_quoted(carried)} FROM out_lambda)").fetchall()[0][0]
    assert changed == 0


def test_classes_of_qis_named_like_a_lambda_parameter(lambda_named):
    con, _, usable = lambda_named
    sizes = con.execute(f"SELECT min(c), sum(c), sum(d) FROM (SELECT count(*) AS c, count(DISTINCT row_id) AS d "
                        f"FROM mondrian_classes('lambda_named', {usable!r}, 5) GROUP BY class_id)").fetchall()[0]
    assert sizes[0] >= 5 and sizes[1] == 60 and sizes[2] == 60


@pytest.mark.parametrize("column", ["__anon_x", "__ANON_Y"])
@pytest.mark.parametrize("fn", ["mondrian", "mondrian_classes"])
def test_a_table_with_a_column_of_a_reserved_name_is_refused_naming_table_name(con, fn, column):
    """mondrian()'s macros number and carry rows under __anon_ names: such a source column would be
    published as NULL (or read in place of theirs), so the table is refused, whatever the name's case."""
    con.execute(f'CREATE TABLE r AS SELECT range AS id, range % 9 AS a, range AS "{column}" FROM range(30)')
    assert_error_names(con, f"SELECT * FROM {fn}('r', ['a'], 3)",
                       [f"{fn}(): argument 'table_name' 'r' has a column of a reserved __anon_ name ({column})"])
    con.execute('CREATE VIEW v AS SELECT * RENAME ("' + column + '" AS kept) FROM r')  # the way out it names
    assert con.execute(f"SELECT count(*) FROM {fn}('v', ['a'], 3)").fetchall() == [(30,)]
