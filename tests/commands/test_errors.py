"""duckdb_anon/commands/errors.py and the exit codes duckdb_anon.cli turns its errors into, in-process on real
DuckDB errors: a macro's "fn(): argument 'x'" becomes the option that set x (exit 2), a lock is exit 4, a
DuckDB failure exit 1 on one line without DuckDB's context, and every code is listed in the --help epilog.
tests/commands/test_files.py runs the same codes end to end through subprocesses."""
import duckdb
import pytest

from duckdb_anon.cli import _failed, build_parser
from duckdb_anon.commands.errors import (EXIT_BAD_ARGUMENT, EXIT_FAILED, EXIT_GATE_FAILED, EXIT_LOCKED, BadArgument,
                                         DatabaseLocked, MissingExtra, argument_error, first_line, open_error,
                                         publish_error)
from duckdb_anon.roles import DeclarationError


def raised(con, sql) -> duckdb.Error:
    with pytest.raises(duckdb.Error) as err:
        con.execute(sql).fetchall()
    return err.value


@pytest.fixture(scope="module")
def bad_k(module_con):
    """A real error of a macro naming its argument, with DuckDB's class prefix and LINE context."""
    module_con.execute("CREATE TABLE errors_t AS SELECT i AS x FROM range(5) r(i)")
    return raised(module_con, "SELECT * FROM mondrian('errors_t', ['x'], 0)")


def test_first_line_drops_the_class_prefix_and_the_context(module_con, bad_k):
    assert "\n" in str(bad_k) and str(bad_k).startswith("Invalid Input Error: ")
    assert first_line(bad_k) == str(bad_k).splitlines()[0].removeprefix("Invalid Input Error: ")
    binder = raised(module_con, "SELECT no_such_column FROM errors_t")
    assert str(binder).startswith("Binder Error: ") and first_line(binder).startswith("Referenced column")
    assert first_line(ValueError()) == "ValueError"


def test_an_error_naming_an_argument_names_the_option_that_set_it(module_con, bad_k):
    bad = argument_error(bad_k, {"k": "-k"})
    assert isinstance(bad, BadArgument) and bad.argument == "-k"
    assert str(bad) == "-k: " + first_line(bad_k)[first_line(bad_k).index("mondrian(): argument 'k'"):]
    assert argument_error(bad_k, {}).argument == "k"  # an argument without an option is named as it is
    assert argument_error(raised(module_con, "SELECT no_such_column FROM errors_t"), {"k": "-k"}) is None


def test_a_publishing_error_reads_as_the_command_line_says_it():
    """A refused declaration is a bad TABLE; 'pass replace=True' becomes 'add --replace'; anything else stays."""
    declared = publish_error(DeclarationError("declare_role(): the column 'x' is not in the table"), {}, DeclarationError)
    assert isinstance(declared, BadArgument) and declared.argument == "TABLE"
    exists = publish_error(ValueError("publish_release(): argument 'name': table 'r' exists (pass replace=True to replace "
                                      "the release)"), {"name": "--name"}, DeclarationError)
    assert str(exists) == "--name: publish_release(): argument 'name': table 'r' exists (add --replace to replace the release)"
    other = RuntimeError("disk full")
    assert publish_error(other, {}, DeclarationError) is other


def test_opening_a_file_that_is_no_database_is_a_bad_argument(tmp_path):
    path = tmp_path / "not a database.duckdb"
    path.write_text("plain text")
    with pytest.raises(duckdb.Error) as err:
        duckdb.connect(str(path))
    bad = open_error("--db", path, err.value)
    assert isinstance(bad, BadArgument) and bad.argument == "--db" and "cannot open" in str(bad)
    locked = open_error("--db", path, duckdb.IOException(f'IO Error: Could not set lock on file "{path}": Conflicting '
                                                         "lock is held in python (PID 1). See also https://duckdb.org"))
    assert isinstance(locked, DatabaseLocked) and "See also" not in str(locked) and str(locked).startswith("--db: ")


@pytest.mark.parametrize("error, code", [(BadArgument("--qi", "names no column"), EXIT_BAD_ARGUMENT),
                                         (DatabaseLocked("--db: locked"), EXIT_LOCKED),
                                         (MissingExtra("needs matplotlib"), EXIT_FAILED),
                                         (RuntimeError("something else"), EXIT_FAILED)])
def test_each_error_has_its_exit_code_and_one_line(capsys, error, code):
    assert _failed("report", error) == code
    assert capsys.readouterr().err == f"duckdb-anon report: {error}\n"


def test_a_duckdb_error_exits_1_naming_its_type_without_the_context(module_con, capsys):
    error = raised(module_con, "SELECT no_such_column FROM errors_t")
    assert _failed("sql", error) == EXIT_FAILED
    assert capsys.readouterr().err == f"duckdb-anon sql: {type(error).__name__}: {first_line(error)}\n"


def test_the_codes_differ_and_the_help_lists_each():
    codes = [EXIT_FAILED, EXIT_BAD_ARGUMENT, EXIT_GATE_FAILED, EXIT_LOCKED]
    assert len(set(codes)) == 4 and 0 not in codes
    epilog = build_parser(()).epilog
    assert all(f"{code} " in epilog for code in codes)
