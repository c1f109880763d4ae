"""A masked copy of a whole database: every table written with its declarations applied, into a new file.

The rule for each column is the SQL one (``sql/77_masked_copy.sql``, ``anon_released_column_sql``):
identifiers dropped or pseudonymized, masked columns masked, other declared columns copied as they are,
columns nobody declared refused (or dropped where the table's policy says ``undeclared = 'drop'``). This
module only moves files: the source is attached read-only to an in-memory database holding the functions,
its declarations are copied there, each of its tables is seen through a view of the same name (so the
declarations, which name tables as the source does, apply unchanged), and every table is written in one
pass to a temporary file that is renamed into place only when all of them are written.

Pseudonyms and keyed masks depend only on the key and the person, so a patient id pseudonymized in two
tables still joins, and a person's fake name is the same in every table of the copy.
"""
from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import duckdb

from duckdb_anon.errors import disk_full_as
from duckdb_anon.lineage import sql_identifier
from duckdb_anon.publishing import ordered_sql

SOURCE = "__anon_copy_source"  # where the source is attached (read-only)
TARGET = "__anon_copy_target"  # where the copy is written
SUMMARY_TABLE = "anon_copy_summary"  # in the copy: what each column of each table became
FAKE_MASKS = ("first_name", "last_name", "name", "email", "phone", "address", "company")


class CopyError(ValueError):
    """A copy that cannot be made; the message names the function and the argument, or the table and column."""


def _paths(source_path, target_path, replace: bool) -> tuple[Path, Path]:
    source, target = Path(source_path), Path(target_path)
    if not source.is_file():
        raise CopyError(f"masked_copy(): argument 'source_path': {source} "
                        f"{'is not a file' if source.exists() else 'does not exist'}")
    if target.resolve() == source.resolve() or (target.exists() and target.samefile(source)):
        raise CopyError(f"masked_copy(): argument 'target_path': {target} is the source file: a copy never overwrites its source")
    if not target.parent.is_dir():
        raise CopyError(f"masked_copy(): argument 'target_path': folder {target.parent} does not exist")
    if target.is_dir():
        raise CopyError(f"masked_copy(): argument 'target_path': {target} is a folder")
    if target.exists() and not replace:
        raise CopyError(f"masked_copy(): argument 'target_path': {target} exists (pass replace=True to replace it)")
    return source, target


def _attach_source(con: duckdb.DuckDBPyConnection, source: Path) -> None:
    try:
        con.execute(f"ATTACH ? AS {SOURCE} (READ_ONLY)", [str(source)])
    except duckdb.Error as exc:
        raise CopyError(f"masked_copy(): argument 'source_path': cannot open {source} as a DuckDB database: "
                        f"{str(exc).splitlines()[0]}") from None


def _copy_catalog(con: duckdb.DuckDBPyConnection, package_tables: set[str]) -> None:
    """The source's declarations (and fake value pools, if it holds some) into the working database."""
    present = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ? "
                                             "AND schema_name = 'main'", [SOURCE]).fetchall()}
    for table in ("anon_column_roles", "anon_policies", "anon_fake_values"):
        if table in present and table in package_tables:  # fixed names of the package's own catalog
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {SOURCE}.main.{table}")


def _tables(con: duckdb.DuckDBPyConnection, package_tables: set[str], wanted: list[str] | None) -> list[tuple[str, str, str]]:
    """(schema, table, declared name) of every table to copy. The declared name is how the declarations
    name the table: 'table' in the main schema (or 'main.table', if that is what they use), else 'schema.table'."""
    found = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? AND NOT internal "
                        "ORDER BY schema_name, table_name", [SOURCE]).fetchall()
    declared = {row[0].lower(): row[0] for row in con.execute(
        "SELECT table_name FROM anon_column_roles UNION SELECT table_name FROM anon_policies").fetchall()}
    tables = []
    for schema, table in found:
        if schema == "main" and table in package_tables:
            continue  # the package's catalog: declarations, releases, ledgers
        if schema == "main" and table == SUMMARY_TABLE:
            raise CopyError(f"masked_copy(): argument 'source_path': the source has a table {SUMMARY_TABLE}, the name "
                            "the copy gives its summary: rename it")
        names = [table, f"main.{table}"] if schema == "main" else [f"{schema}.{table}"]
        tables.append((schema, table, next((declared[n.lower()] for n in names if n.lower() in declared), names[0])))
    if wanted is not None:
        unknown = sorted(set(wanted) - {t[2] for t in tables} - {t[1] for t in tables})
        if unknown:
            raise CopyError(f"masked_copy(): argument 'tables': the source has no table {', '.join(map(repr, unknown))}")
        tables = [t for t in tables if t[2] in wanted or t[1] in wanted]
    if not tables:
        raise CopyError("masked_copy(): argument 'source_path': the source holds no table to copy")
    return tables


def _views(con: duckdb.DuckDBPyConnection, tables: list[tuple[str, str, str]]) -> None:
    """A view per source table, same schema and name, in the working database."""
    for schema, table, _ in tables:
        quoted = f"{sql_identifier(con, schema)}.{sql_identifier(con, table)}"
        if schema != "main":
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {sql_identifier(con, schema)}")
        con.execute(f"CREATE VIEW {quoted} AS SELECT * FROM {SOURCE}.{quoted}")


def _load_pools(con: duckdb.DuckDBPyConnection) -> None:
    """Fake value pools for the locales the declarations ask for, when the source did not bring them."""
    locales = [row[0] for row in con.execute(
        "SELECT DISTINCT coalesce(mask_args['locale'], 'en_US') FROM anon_column_roles WHERE role = 'masked' "
        "AND list_contains(?, mask) AND coalesce(mask_args['locale'], 'en_US') NOT IN (SELECT pool_locale FROM anon_fake_values)",
        [list(FAKE_MASKS)]).fetchall()]
    if locales:
        from duckdb_anon.masking import load_fake_values  # imports Faker: only when a fake mask needs it
        load_fake_values(con, locales)


def _set_keys(con: duckdb.DuckDBPyConnection, tables: list[tuple[str, str, str]], keys) -> None:
    """Set the pseudonym key of every policy whose table the copy pseudonymizes or masks with a key; a key
    missing is refused before anything is written."""
    from duckdb_anon.roles import DeclarationError, set_pseudonym_key

    needed = con.execute(
        "SELECT key_name, string_agg(DISTINCT table_name, ', ' ORDER BY table_name) FROM anon_roles "
        "WHERE list_contains(?, table_name) AND key_name IS NOT NULL AND (pseudonymize OR (role = 'masked' AND mask_spec.keyed)) "
        "GROUP BY key_name ORDER BY key_name", [[t[2] for t in tables]]).fetchall()
    for key_name, users in needed:
        key = keys(key_name) if callable(keys) else (keys or {}).get(key_name)
        if key is None:
            raise CopyError(f"masked_copy(): argument 'keys': no key for key_name {key_name!r} (used by {users})")
        try:
            set_pseudonym_key(con, key_name, key)
        except DeclarationError as exc:
            raise CopyError(f"masked_copy(): argument 'keys': the key for {key_name!r}: {str(exc).split(': ', 1)[1]}") from None


def _plan(con: duckdb.DuckDBPyConnection, tables: list[tuple[str, str, str]]) -> list[tuple]:
    """Every column's fate, after refusing the whole copy if any table cannot be copied (naming each table
    and column at fault), so that a refused copy writes nothing."""
    columns = con.execute("SELECT table_name, column_name, role, became, problem, expression FROM anon_copy_columns(?)",
                          [[name for *_, name in tables]]).fetchall()
    problems = sorted({f"table {row[0]!r}: {row[4]}" for row in columns if row[4] is not None})
    problems += [f"table {name!r}: every column is left out" for *_, name in tables
                 if not problems and all(row[5] is None for row in columns if row[0] == name)]
    if problems:
        raise CopyError("masked_copy(): refused, nothing was written: " + "; ".join(problems))
    where = {name: (schema, table) for schema, table, name in tables}
    return [where[row[0]] + row[:4] for row in columns]


def masked_copy(source_path, target_path, *, replace: bool = False, keys=None,
                tables: list[str] | None = None, progress=None) -> list[dict]:
    """Write a masked copy of the DuckDB file `source_path` to `target_path`; returns what each column became.

    Every table of the source (or those named in `tables`) is written with its declarations applied (see
    the module docstring); the copy also holds the table ``anon_copy_summary`` (table, column, role, what
    it became). `keys` maps each policy's key_name to its pseudonym key (from new_pseudonym_key()), as a
    dict or a function of the key name; a key is set for this copy only and never written. The source is
    opened read-only and never changed; the copy is written to a temporary file renamed into place at the
    end, so a refused or failed copy leaves no target. An existing target is refused unless `replace`. `progress`: a function of the working
    connection returning a context manager whose value has a ``step(text)`` method (the CLI passes its
    progress line, which polls that connection)."""
    from duckdb_anon import connect

    source, target = _paths(source_path, target_path, replace)
    con = connect()
    try:
        package_tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        _attach_source(con, source)
        with progress(con) if progress is not None else nullcontext() as shown:
            return _copy(con, source, target, replace, keys, tables, package_tables,
                         shown.step if shown is not None else (lambda text: None))
    finally:
        con.close()


def _copy(con: duckdb.DuckDBPyConnection, source: Path, target: Path, replace: bool, keys, tables, package_tables: set[str],
          step) -> list[dict]:
    """The copy itself, on a working connection with the source attached: checks first, then the writes."""
    from duckdb_anon.commands.files import written_atomically

    step(f"reading the declarations of {source}")
    _copy_catalog(con, package_tables)
    selected = _tables(con, package_tables, tables)
    _set_keys(con, selected, keys)
    _views(con, selected)
    _load_pools(con)
    plan = _plan(con, selected)
    statements = dict(con.execute("SELECT table_name, select_sql FROM anon_copy_statements(?)",
                                  [[{"declared": name, "schema": schema, "name": table} for schema, table, name in selected]]
                                  ).fetchall())
    # a full disk is reported naming the operation and the target; written_atomically and the finally below
    # have removed the temporary file and its WAL by then, and the target only ever appears by a rename
    with disk_full_as("masked_copy()", str(target)), written_atomically(target, "target_path", force=replace) as temporary:
        try:
            con.execute(f"ATTACH ? AS {TARGET}", [str(temporary)])
            for schema, table, name in selected:
                step(f"copying {name}")
                quoted = f"{sql_identifier(con, schema)}.{sql_identifier(con, table)}"
                if schema != "main":
                    con.execute(f"CREATE SCHEMA IF NOT EXISTS {TARGET}.{sql_identifier(con, schema)}")
                # stored in the order of its published rows: the source's order (often by raw id) is not carried over
                con.execute(f"CREATE TABLE {TARGET}.{quoted} AS {ordered_sql(statements[name])}")
            con.execute(f"CREATE TABLE {TARGET}.main.{SUMMARY_TABLE} (schema_name VARCHAR, table_name VARCHAR, "
                        "declared_as VARCHAR, column_name VARCHAR, role VARCHAR, became VARCHAR)")
            con.executemany(f"INSERT INTO {TARGET}.main.{SUMMARY_TABLE} VALUES (?, ?, ?, ?, ?, ?)", plan)
        finally:  # detached (checkpointed and closed) before the rename, or before removal on failure
            try:
                con.execute(f"DETACH DATABASE IF EXISTS {TARGET}")  # its checkpoint can fail too on a full disk
            finally:
                Path(f"{temporary}.wal").unlink(missing_ok=True)
    fields = ("schema_name", "table_name", "declared_as", "column_name", "role", "became")
    return [dict(zip(fields, row)) for row in plan]
