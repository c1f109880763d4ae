"""No name reaches generated SQL unescaped: every generator of SQL text (suggest_roles_sql, the CLI's
suggest-roles --sql, anon_compile_policies, mondrian()'s query, the level driver, the frozen releases, the
anonymized view) is fed table and column names built to break out of a literal, an identifier or a
comment, and the SQL it produces is run against a database holding a `victim` table. The victim must
survive, and the generated SQL must work on the hostile-named table (or fail with an error naming the
function), never run the statement smuggled in the name."""
import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import duckdb_anon
from duckdb_anon.publishing import PublishError
from duckdb_anon import mondrian
from duckdb_anon.cli import main
from duckdb_anon.releases import publish_mondrian, publish_release
from duckdb_anon.roles import create_anonymized_view
from tests.conftest import examples

PAYLOAD = "DROP TABLE victim; --"
HOSTILE_TABLES = [
    f"t\n{PAYLOAD}",
    f"t\r{PAYLOAD}",
    f"t'); {PAYLOAD}",
    f't"; {PAYLOAD}',
    f"t */ {PAYLOAD} /*",
    f"t\u2028{PAYLOAD}",
]
# column names, one per kind of escape; `qi_*` are generalized, the others published or dropped
QI_AGE = f"age\n{PAYLOAD}"
QI_ZIP = f"zip'); {PAYLOAD}"
ID = f'id"; {PAYLOAD} /*'
DIAG = f"diag */ ; {PAYLOAD}"


def quoted(name: str) -> str:
    """A quoted identifier, computed here independently of the package's anon_sql_identifier."""
    return '"' + name.replace('"', '""') + '"'


def reference(table: str) -> str:
    """How a user names the table to the package's functions (query_table reads the string as a name, so a
    name holding a double quote is given quoted)."""
    return quoted(table) if '"' in table else table


def hostile_database(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute("CREATE TABLE victim AS SELECT 42 AS x")
    con.execute(f"CREATE TABLE {quoted(table)} AS SELECT 'P' || range AS {quoted(ID)}, range % 40 AS {quoted(QI_AGE)}, "
                f"'z' || (range % 5) AS {quoted(QI_ZIP)}, ['flu', 'cold', 'asthma'][range % 3 + 1] AS {quoted(DIAG)} "
                "FROM range(60)")


def victim_intact(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'victim'").fetchall()[0][0] == 1 \
        and con.execute("SELECT x FROM victim").fetchall() == [(42,)]


def class_sizes(con: duckdb.DuckDBPyConnection, relation: str, qis: list[str]) -> int:
    """The smallest group of rows sharing their QI labels, by a plain GROUP BY."""
    by = ", ".join(quoted(q) for q in qis)
    return con.execute(f"SELECT min(n) FROM (SELECT count(*) AS n FROM {relation} GROUP BY {by})").fetchall()[0][0]


@pytest.fixture(params=HOSTILE_TABLES, ids=["newline", "carriage-return", "quote", "double-quote", "comment", "u2028"])
def hostile(request):
    con = duckdb_anon.connect()
    hostile_database(con, request.param)
    yield con, reference(request.param)
    con.close()


def test_suggest_roles_sql_runs_as_declarations_only(hostile):
    con, table = hostile
    text = con.execute("SELECT suggest_roles_sql(?)", [table]).fetchall()[0][0]
    con.execute(text)
    assert victim_intact(con)
    declared = con.execute("SELECT column_name FROM anon_column_roles WHERE table_name = ? ORDER BY 1", [table]).fetchall()
    assert sorted(c for (c,) in declared) == sorted([ID, QI_AGE, QI_ZIP, DIAG])
    assert con.execute("SELECT k FROM anon_policies WHERE table_name = ?", [table]).fetchall() == [(10,)]
    statements = con.extract_statements(text)
    assert len(statements) == 5 and all(s.type == duckdb.StatementType.INSERT for s in statements)
    # the heading comment is one line for any reader (Python splits on every Unicode line break)
    assert text.splitlines()[0].endswith("review every line before running it.")


def test_cli_suggest_roles_sql_file_runs_as_declarations_only(tmp_path, capsys):
    for number, table in enumerate(HOSTILE_TABLES):
        database, script = tmp_path / f"db{number}.duckdb", tmp_path / f"roles{number}.sql"
        con = duckdb_anon.connect(str(database))
        hostile_database(con, table)
        con.close()
        code = main(["suggest-roles", reference(table), "--db", str(database), "--sql", str(script), "--quiet"])
        assert code == 0, capsys.readouterr().err
        con = duckdb_anon.connect(str(database))
        con.execute(script.read_bytes().decode("utf-8"))  # as written: no newline translation
        assert victim_intact(con)
        assert con.execute("SELECT count(*) FROM anon_column_roles WHERE table_name = ?",
                           [reference(table)]).fetchall() == [(4,)]
        con.close()


def release_name(con, publish, table, leading, *arguments) -> str:
    """The hostile table's name as a release name; one holding a double quote or a control character is refused
    up front by the publishing core (naming the argument, nothing written), and a plain name is used instead."""
    name = table.replace('"', "'") + " frozen"
    if any(ord(c) < 32 for c in name):
        with pytest.raises(PublishError, match=r"argument 'name' must be a table name without double quotes or control"):
            publish(con, *leading, name, *arguments)
        assert victim_intact(con)
        return "frozen"
    return name


def test_compiled_policies_release_the_hostile_table(hostile):
    con, table = hostile
    for column, role in ((QI_AGE, "quasi_identifier"), (QI_ZIP, "quasi_identifier"), (DIAG, "sensitive"),
                         (ID, "identifier")):
        duckdb_anon.declare_role(con, table, column, role)
    duckdb_anon.set_policy(con, table, 5)
    problems = duckdb_anon.apply_policies(con)
    if table.startswith('"'):  # the catalog matches declarations to a table by its plain name, not a quoted one
        assert "has no column" in problems[table] and victim_intact(con)
        with pytest.raises(duckdb.Error, match=r"anonymized\(\): the declarations of"):
            con.execute("SELECT * FROM anonymized(?)", [table]).fetchall()
        return
    assert problems == {}
    release = con.execute("SELECT * FROM anonymized(?)", [table])
    assert [d[0] for d in release.description] == [QI_AGE, QI_ZIP, DIAG]
    assert len(release.fetchall()) == 60 and victim_intact(con)
    create_anonymized_view(con, table, table + " view")
    assert class_sizes(con, quoted(table + " view"), [QI_AGE, QI_ZIP]) >= 5
    published = publish_release(con, table, release_name(con, publish_release, table, (table,)))  # read back by query_table
    assert published["rows"] == 60 and victim_intact(con)


def test_mondrian_and_its_keep_on_hostile_names(hostile):
    con, table = hostile
    release = con.execute("SELECT * FROM mondrian(?, ?, 5, keep := ?)", [table, [QI_AGE, QI_ZIP], [DIAG]])
    assert [d[0] for d in release.description] == [QI_AGE, QI_ZIP, DIAG] and len(release.fetchall()) == 60
    con.execute("CREATE TABLE released AS SELECT * FROM mondrian(?, ?, 5, keep := ?)", [table, [QI_AGE, QI_ZIP], [DIAG]])
    assert class_sizes(con, "released", [QI_AGE, QI_ZIP]) >= 5
    with pytest.raises(duckdb.Error, match=r"mondrian\(\): argument 'keep'"):
        con.execute("SELECT * FROM mondrian(?, ?, 5, keep := ?)", [table, [QI_AGE], [f"nope'); {PAYLOAD}"]]).fetchall()
    assert victim_intact(con)


def test_level_driver_and_frozen_releases_on_hostile_names(hostile):
    con, table = hostile
    mondrian.mondrian(con, table, [QI_AGE, QI_ZIP], 5, into=table + " levels", keep=[DIAG])
    assert class_sizes(con, quoted(table + " levels"), [QI_AGE, QI_ZIP]) >= 5
    arguments = ([QI_AGE, QI_ZIP], 5)
    published = publish_mondrian(con, table, release_name(con, publish_mondrian, table, (table,), *arguments), *arguments,
                                 id_column=ID, keep=[ID, DIAG])
    assert published["rows"] == 60 and published["ncp_percent"] is not None
    assert victim_intact(con)


@settings(max_examples=examples(30), deadline=None)
@given(st.text(alphabet=["\n", "\r", "'", '"', ";", "-", "/", "*", " ", "D", "\u2028", "\x85"], min_size=1, max_size=12))
def test_any_name_stays_in_its_literal_and_comment(module_con, tail):
    """suggest_roles_sql's text for a table named with any mix of quotes, comment marks and line breaks is
    exactly five INSERT statements, whatever the name (no statement escapes, no comment swallows one)."""
    name = "t" + tail
    module_con.execute(f"CREATE OR REPLACE TABLE {quoted(name)} AS SELECT range AS {quoted('c' + tail)} FROM range(3)")
    try:
        text = module_con.execute("SELECT suggest_roles_sql(?)", [reference(name)]).fetchall()[0][0]
        statements = module_con.extract_statements(text)
        assert [s.type for s in statements] == [duckdb.StatementType.INSERT] * 2
        assert text.splitlines()[0].endswith("review every line before running it.")
    finally:
        module_con.execute(f"DROP TABLE {quoted(name)}")
