"""The publishing core: the promises every release keeps, written once, and every publisher goes through it.

Each publisher (publish_release, publish_mondrian, publish_rerelease, publish_km, publish_tables,
publish_dp, preserve_patterns, masked_copy, the CLI and the dbt materializations) computes its release its
own way, but writes it through these functions, so a new publisher gets the guarantees by construction:

- **the target is never a table the release reads** (check_target): names resolved as DuckDB resolves them
  (case, schema, catalog, views over views: duckdb_anon.relations), and an existing table is replaced only
  when it is a release the catalog records and the caller said replace;
- **storage order carries nothing of raw ids or of the source's order** (ordered_sql): a release is stored
  in the order of a hash of its own published row, so row i of a release says nothing the row itself does
  not, and two releases with different pseudonyms are in unrelated orders;
- **the catalog and the DP ledger are append-only** (log, check_ledger): every publish appends a row to
  anon_publish_log (sql/74_publish_log.sql), hash-chained; what a privacy unit spent is the sum of its rows,
  checked against its budget before each DP publish;
- **no package object holds a raw identifier**: the people of a release are recorded as keyed digests
  (anon_person_digest, sql/76_lineage.sql) under the catalog key, which lives beside the database file and
  never in it (catalog_key);
- **all or nothing** (transaction): the release, its records and its debit commit together; a full disk
  is reported naming the publisher and the operation, and leaves nothing behind.

Argument checks that size work live with each algorithm (they know its bounds); this module checks the
arguments it owns (the target) before any work starts. SQL text here is fixed text, parameters, and names
quoted by the SQL macros' own escaping.
"""
from __future__ import annotations

import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

import duckdb

from duckdb_anon import relations
from duckdb_anon.errors import is_disk_full
from duckdb_anon.roles import DeclarationError

KEY_VARIABLE = "duckdb_anon_catalog_key"
KEY_SUFFIX = ".anon-key"


class PublishError(DeclarationError):
    """A publish refused or failed; the message names the publisher and the argument or operation."""


# --- the catalog key --------------------------------------------------------------------------------------

def _key_file(con: duckdb.DuckDBPyConnection) -> Path | None:
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    return None if path in (None, "", ":memory:") else Path(os.path.abspath(path + KEY_SUFFIX))


def catalog_key(con: duckdb.DuckDBPyConnection) -> None:
    """Put the database's catalog key in the session (variable duckdb_anon_catalog_key), reading it from
    '<file>.anon-key' beside the database file or creating that file (mode 0600) the first time. An in-memory
    database gets a key of its own that dies with it. Two processes creating the file at once agree: the
    file is written under a temporary name and linked into place, and the loser reads the winner's key."""
    if con.execute(f"SELECT getvariable('{KEY_VARIABLE}') IS NOT NULL").fetchall()[0][0]:
        return
    path = _key_file(con)
    key = secrets.token_hex(32)
    if path is not None:
        if not path.exists():
            temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(key + "\n")
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        key = path.read_text().strip()
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise PublishError(f"publishing: the catalog key file {str(path)!r} is damaged (64 hex digits expected); "
                               "restore it from a backup: without it earlier releases cannot be audited")
    con.execute(f"SET VARIABLE {KEY_VARIABLE} = ?", [key])


def load_catalog_key(con: duckdb.DuckDBPyConnection) -> None:
    """catalog_key() when the key file exists already (connect() calls it: no file is made by opening one)."""
    path = _key_file(con)
    if path is not None and path.exists():
        catalog_key(con)


# --- the target -------------------------------------------------------------------------------------------

def leaf_text(leaf: relations.Key) -> str:
    return ".".join(leaf)


def recorded(con: duckdb.DuckDBPyConnection, leaf: relations.Key) -> bool:
    """Is the table a release the package wrote (in the publish log, or in a catalog of an older version)?"""
    if con.execute("SELECT count(*) FROM anon_publish_log WHERE list_contains(tables, ?)", [leaf_text(leaf)]).fetchall()[0][0]:
        return True
    if tuple(leaf) != table_leaf(con, leaf[2]):  # the older catalogs name tables in the current schema only
        return False
    return bool(con.execute(
        "SELECT (SELECT count(*) FROM anon_releases WHERE lower(name) = $n) + (SELECT count(*) FROM anon_dp_releases WHERE "
        "lower(name) = $n) + (SELECT count(*) FROM anon_table_releases WHERE lower(persons_table) = $n OR lower(events_table) = $n)",
        {"n": leaf[2]}).fetchall()[0][0])


def _plain_table(con: duckdb.DuckDBPyConnection, name: str) -> relations.Key | None:
    """The base table that `name`, taken whole as one name, is (temp first, then the current schema), or None."""
    found = con.execute("SELECT lower(database_name), lower(schema_name), lower(table_name) FROM duckdb_tables() "
                        "WHERE lower(table_name) = lower(?) AND ((database_name = 'temp') OR (database_name = current_database() "
                        "AND schema_name = current_schema())) ORDER BY database_name = 'temp' DESC LIMIT 1", [name]).fetchall()
    return tuple(found[0]) if found else None


def reads_of(table: str | None, hierarchies: object = None) -> list[str | None]:
    """What a release of `table` generalized by `hierarchies` ({column: hierarchy table}) reads."""
    return [table, *(hierarchies.values() if isinstance(hierarchies, dict) else [])]


def source_tables(con: duckdb.DuckDBPyConnection, reads: list[str | None]) -> tuple[set[relations.Key], str | None]:
    """The base tables the relations in `reads` read, and why some could not be told (or None)."""
    leaves: set[relations.Key] = set()
    unresolved = None
    for relation in reads:
        if relation is None:
            continue
        plain = _plain_table(con, relation)
        if plain is not None:  # a table's own name, as query_table() reads it: whatever characters it holds
            leaves.add(plain)
            continue
        try:
            leaves |= set(relations.base_tables(con, relation))
        except relations.RelationError as why:
            unresolved = f"{relation!r}: {why}"
    return leaves, unresolved


def check_target(con: duckdb.DuckDBPyConnection, fn: str, name: object, *, reads: list[str | None], replace: bool,
                 argument: str = "name") -> relations.Key:
    """Refuse a release table `name` (a plain table name in the current schema, as every publisher takes it)
    that is a table the release reads, a view, or an existing table that is not a recorded release or that
    `replace` does not allow; returns the table it will be, (catalog, schema, table) in lower case."""
    if not isinstance(name, str) or not name.strip():
        raise PublishError(f"{fn}(): argument {argument!r} must be a table name, got {name!r}")
    if '"' in name or any(ord(c) < 32 for c in name):
        raise PublishError(f"{fn}(): argument {argument!r} must be a table name without double quotes or control "
                           f"characters, got {name!r}")
    leaf = table_leaf(con, name)
    kind = con.execute("SELECT 'table' FROM duckdb_tables() WHERE lower(database_name) = ? AND lower(schema_name) = ? "
                       "AND lower(table_name) = ? UNION ALL SELECT 'view' FROM duckdb_views() WHERE lower(database_name) = ? "
                       "AND lower(schema_name) = ? AND lower(view_name) = ?", [*leaf, *leaf]).fetchall()
    kind = kind[0][0] if kind else None
    leaves, unresolved = source_tables(con, reads)
    if leaf in leaves:
        raise PublishError(f"{fn}(): argument {argument!r}: {name!r} is a table the release reads ({leaf_text(leaf)}); "
                           "a release never replaces its source: choose another name")
    if kind == "view":
        raise PublishError(f"{fn}(): argument {argument!r}: {name!r} is a view; choose another name")
    if kind == "table":
        if unresolved is not None:
            raise PublishError(f"{fn}(): argument {argument!r}: table {name!r} exists and what the release reads cannot be "
                               f"told ({unresolved}), so replacing it might destroy the source: choose a new name")
        if not replace:
            raise PublishError(f"{fn}(): argument {argument!r}: table {name!r} exists (pass replace=True to replace the release)")
        if not recorded(con, leaf):
            raise PublishError(f"{fn}(): argument {argument!r}: table {name!r} is not a release recorded in the catalog; "
                               "replace=True replaces only the package's own releases: choose another name")
    return leaf


# --- storage order ----------------------------------------------------------------------------------------

#: The storage order of a release: a hash of the published row itself (every column; `{hidden}` are working
#: columns left out of the release). Rows in the same position say nothing of the source's order or raw ids,
#: and releases with different pseudonyms are in unrelated orders.
ORDER_KEY = "hash(*COLUMNS(*{hidden}))"


def order_key(hidden: list[str] = ()) -> str:
    """The ORDER BY key of a release whose query also carries the working columns `hidden` (quoted names)."""
    return ORDER_KEY.format(hidden=f" EXCLUDE ({', '.join(hidden)})" if hidden else "")


def ordered_sql(select_sql: str) -> str:
    """`select_sql` in the order a release is stored (ORDER_KEY; DuckDB keeps insertion order in a table it
    creates from a query)."""
    return f"SELECT * FROM ({select_sql}) AS __anon_release ORDER BY {order_key()}"


# --- all or nothing, and the log --------------------------------------------------------------------------

@contextmanager
def transaction(con: duckdb.DuckDBPyConnection, fn: str, operation: str):
    """One transaction for the whole publish: everything commits or nothing does. A full disk becomes a
    PublishError naming `fn` and `operation`."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException as error:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:  # a failed COMMIT has ended the transaction already
            pass
        if is_disk_full(error):
            raise PublishError(f"{fn}(): the disk is full while {operation}; nothing was published (free space, or "
                               "SET temp_directory to a disk with room)") from error
        raise


def check_log(con: duckdb.DuckDBPyConnection, fn: str) -> None:
    """Refuse to publish on a publish log whose hash chain is broken (rows edited or deleted by hand)."""
    problem = con.execute("SELECT anon_publish_log_problem()").fetchall()[0][0]
    if problem is not None:
        raise PublishError(f"{fn}(): {problem}; the catalog can no longer be trusted, so nothing is published")


def log(con: duckdb.DuckDBPyConnection, fn: str, release_name: str, *, tables: list[relations.Key | str],
        reads: list[str | None], record: dict | None, unit_table: str | None = None, epsilon: float = 0.0,
        delta: float = 0.0) -> str:
    """Append the publish to anon_publish_log (inside the caller's transaction, after checking the chain);
    returns the new row's hash."""
    check_log(con, fn)
    leaves, _ = source_tables(con, reads)
    written = [t if isinstance(t, str) else leaf_text(t) for t in tables]
    statement = con.execute("SELECT anon_publish_log_sql(?, ?, ?::VARCHAR[], ?::VARCHAR[], ?, ?, ?, ?)",
                            [fn, release_name, written, sorted(leaf_text(s) for s in leaves), unit_table, float(epsilon),
                             float(delta), None if record is None else json.dumps(record, default=str, sort_keys=True)]
                            ).fetchall()[0][0]
    con.execute(statement)
    return con.execute("SELECT hash FROM anon_publish_log ORDER BY seq DESC LIMIT 1").fetchall()[0][0]


def check_ledger(con: duckdb.DuckDBPyConnection, fn: str, unit_table: str) -> None:
    """Refuse a DP publish whose ledger does not add up: the budget's spent (epsilon, delta) must equal the sum
    of the unit's rows in the publish log, and its last recorded spend must be the log's last row for the unit."""
    check_log(con, fn)
    problem = con.execute("SELECT anon_dp_ledger_problem(?)", [unit_table]).fetchall()[0][0]
    if problem is not None:
        raise PublishError(f"{fn}(): {problem}; nothing is published")


def table_leaf(con: duckdb.DuckDBPyConnection, name: str) -> relations.Key:
    """The (catalog, schema, table) a plain table name of the current schema is."""
    current = con.execute("SELECT lower(current_database()), lower(current_schema())").fetchall()[0]
    return (current[0], current[1], name.lower())


def carry_over(con: duckdb.DuckDBPyConnection, unit_table: str) -> None:
    """A budget spent before the publish log existed (an older version's database) gets one log row carrying
    its spent (epsilon, delta) over (anon_dp_carry_over_sql), so the ledger adds up from then on."""
    statement = con.execute("SELECT anon_dp_carry_over_sql(?)", [unit_table]).fetchall()[0][0]
    if statement is not None:
        con.execute(statement)
        con.execute(con.execute("SELECT anon_dp_last_spend_sql(?)", [unit_table]).fetchall()[0][0])


def digest_legacy_people(con: duckdb.DuckDBPyConnection) -> None:
    """At install: a catalog of an older version holds raw persons in anon_release_people and
    anon_release_held; replace them with their digests (once: anon_catalog_people_digested records it)."""
    if con.execute("SELECT count(*) FROM anon_catalog_people_digested").fetchall()[0][0]:
        return
    legacy = con.execute("SELECT (SELECT count(*) FROM anon_release_people) + (SELECT count(*) FROM anon_release_held)"
                         ).fetchall()[0][0]
    if legacy:
        catalog_key(con)
        for table in ("anon_release_people", "anon_release_held"):
            con.execute(f"UPDATE {table} SET person = anon_person_digest(person)")
    con.execute("INSERT INTO anon_catalog_people_digested VALUES (true)")
