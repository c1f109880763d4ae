"""Install the SQL macros into a DuckDB connection.

The numpy kernels are registered as Python UDFs on the connection first (they live only as long as it);
the macros are persistent (not TEMP): dbt and other tools talk through cursors, which do not see TEMP
macros, and persistent macros stay in a database file for plain DuckDB clients. Every statement is
``CREATE OR REPLACE``, so installing twice, or over an older version, upgrades in place.

Concurrency. Connections of one process to the same file share one database instance, and two installs
writing the same macros at once make DuckDB abort one of them ("Catalog write-write conflict"). So an
install runs in one transaction (another connection sees the old macros or the new ones, never half of
them), installs into one file take turns behind a per-file lock of this process, and a conflict with a
writer outside that lock (another tool on the same instance) is retried a few times with a growing pause.
Across processes DuckDB lets one process open a file read-write, or many open it read-only: a read-only
connection is not written to (the macros must be installed already), and connect() turns the lock
conflict into an error that says who holds the file. Processes creating one new file at once: DuckDB
writes the file's headers after creating it, so the others may find a file without them ("not a valid
DuckDB database file"); connect() tries again for about 1.5 s, and then says the file is being created.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import duckdb

from duckdb_anon import sql_rules, udfs

ATTEMPTS = 6  # tries of one install against conflicting writers; pauses 0.05 s, 0.1 s, ... 0.8 s between
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _database(con: duckdb.DuckDBPyConnection) -> tuple[str | None, bool]:
    """The file behind the connection's current database (None in memory) and whether it is read-only."""
    return con.execute("SELECT path, readonly FROM duckdb_databases() WHERE database_name = current_database()"
                       ).fetchall()[0]


def _lock_for(path: str | None) -> threading.Lock:
    """One lock per database file in this process; an in-memory database is private to its connection."""
    if path is None:
        return threading.Lock()
    key = str(Path(path).resolve())
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _write_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Every macro, the version and the declarations: the statements of one transaction."""
    from duckdb_anon import __version__, dp
    from duckdb_anon.mondrian.checked_macros import checked_macros
    from duckdb_anon.mondrian.macros import partition_macros
    from duckdb_anon.privacy_units import apply_privacy_units
    from duckdb_anon._catalog_upgrade import restore_old_catalogs, set_aside_old_catalogs
    from duckdb_anon.roles import apply_policies

    upgraded = set_aside_old_catalogs(con)  # catalog tables whose old CHECK refuses what this version writes
    for text in sql_rules.file_texts():
        con.execute(text)
    restore_old_catalogs(con, upgraded)
    from duckdb_anon.publishing import digest_legacy_people
    digest_legacy_people(con)  # a catalog of an older version held raw persons
    # The version is itself a macro, so a plain client can tell what a database file holds.
    con.execute(f"CREATE OR REPLACE MACRO duckdb_anon_version() AS '{__version__}'")
    for statement in dp.macros():  # the DP aggregates, generated from dp/plan.py (they call the sql/ helpers)
        con.execute(statement)
    for statement in partition_macros() + checked_macros():  # mondrian()'s recursions, generated from mondrian/
        con.execute(statement)
    apply_privacy_units(con)  # privacy_unit_rows() from the declarations the file holds
    apply_policies(con)  # anonymized() from the declarations the file holds (none yet: it only explains)


def _write_in_transaction(con: duckdb.DuckDBPyConnection) -> None:
    """_write_macros in a transaction of its own, retried when a concurrent writer wins a conflict; inside a
    transaction the caller opened, it becomes part of that one (which a conflict aborts: no retry)."""
    for attempt in range(ATTEMPTS):
        try:
            con.execute("BEGIN TRANSACTION")
        except duckdb.TransactionException:  # the caller's transaction is open
            _write_macros(con)
            return
        try:
            _write_macros(con)
            con.execute("COMMIT")
            return
        except BaseException as err:
            try:
                con.execute("ROLLBACK")
            except duckdb.TransactionException:  # a failed COMMIT has ended the transaction already
                pass
            if not isinstance(err, duckdb.TransactionException) or "conflict" not in str(err) \
                    or attempt == ATTEMPTS - 1:
                raise
        time.sleep(0.05 * 2 ** attempt)


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Create or replace every duckdb-anon macro in the connection's current database; returns `con`.

    Safe to call from several threads at once. On a read-only database it only registers the Python
    kernel, and raises if the file does not hold this version's macros."""
    from duckdb_anon import __version__

    con.complete()  # a pending result would make create_function fail ("unfinished result")
    path, readonly = _database(con)
    with _lock_for(path):
        udfs.register_functions(con)  # before the SQL: macros that call a UDF can only be created once it exists
        if not readonly:
            _write_in_transaction(con)
        elif (found := installed_version(con)) != __version__:
            raise duckdb.InvalidInputException(
                f"install(): argument 'con' is a read-only connection to a database holding "
                f"{'duckdb-anon ' + found if found else 'no duckdb-anon macros'}, not version {__version__}; "
                f"open it read-write once to install")
    return con


def installed_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The duckdb-anon version installed in the connection's database, or None."""
    # fetchall(): read every result to its end, so no pending result blocks a later install()
    found = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckdb_anon_version'"
    ).fetchall()[0][0]
    return con.execute("SELECT duckdb_anon_version()").fetchall()[0][0] if found else None


def _just_created(database: str) -> bool:
    """Whether the file `database` was created (or written) in the last few seconds: only then can its
    missing headers mean that another process is creating it, rather than a file that is not DuckDB's."""
    try:
        return time.time() - os.stat(database).st_mtime < 5
    except (OSError, TypeError, ValueError):
        return False


def connect(database: str = ":memory:", **config) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (``duckdb.connect(database, config=config)``) with duckdb-anon installed.

    ``access_mode='READ_ONLY'`` opens a file that already holds the macros without writing to it; many
    processes can do so at once, while only one process at a time can open a file read-write."""
    for attempt in range(ATTEMPTS):
        try:
            con = duckdb.connect(database, config=config) if config else duckdb.connect(database)
            break
        except duckdb.IOException as err:
            if "lock" in str(err).lower():
                raise duckdb.IOException(
                    f"connect(): argument 'database' {database!r} is open read-write in another process, and DuckDB "
                    f"lets one process at a time write a file; close it there, or open it with access_mode='READ_ONLY' "
                    f"everywhere ({err})") from None
            if "not a valid duckdb database file" not in str(err).lower() or not _just_created(database):
                raise
            # Another process is creating the file: DuckDB creates it before it takes the lock and writes the
            # headers, so a second process can read a file without them. Once they are written, the next try
            # opens it (or meets the lock, reported above).
            if attempt == ATTEMPTS - 1:
                raise duckdb.IOException(
                    f"connect(): argument 'database' {database!r}: the database file is being created by another "
                    f"process; retry ({str(err).splitlines()[0]})") from None
            time.sleep(0.05 * 2 ** attempt)
    try:
        install(con)
        from duckdb_anon.publishing import load_catalog_key
        load_catalog_key(con)  # the catalog key beside the file, if there is one, for the SQL that reads the people
        return con
    except BaseException:
        con.close()
        raise
