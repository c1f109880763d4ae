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

import hashlib
import os
import threading
import time
from functools import lru_cache
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
    from duckdb_anon._catalog_upgrade import restore_old_catalogs, set_aside_old_catalogs

    upgraded = set_aside_old_catalogs(con)  # catalog tables whose old CHECK refuses what this version writes
    for text in sql_rules.file_texts():
        con.execute(text)
    restore_old_catalogs(con, upgraded)
    # The version is itself a macro, so a plain client can tell what a database file holds.
    con.execute(f"CREATE OR REPLACE MACRO duckdb_anon_version() AS '{__version__}'")
    for statement in dp.macros():  # the DP aggregates, generated from dp/plan.py (they call the sql/ helpers)
        con.execute(statement)
    for statement in partition_macros() + checked_macros():  # mondrian()'s recursions, generated from mondrian/
        con.execute(statement)
    _apply_declarations(con)
    con.execute(f"CREATE OR REPLACE MACRO duckdb_anon_install_stamp() AS '{install_stamp()}'")


def _apply_declarations(con: duckdb.DuckDBPyConnection) -> None:
    """What depends on the catalog's rows, which a plain client may have changed: raw persons recorded as an
    older version did, digested; the macros compiled from the declarations."""
    from duckdb_anon.privacy_units import apply_privacy_units
    from duckdb_anon.publishing import digest_legacy_people
    from duckdb_anon.roles import apply_policies

    digest_legacy_people(con)  # a catalog of an older version held raw persons
    apply_privacy_units(con)  # privacy_unit_rows()
    apply_policies(con)  # anonymized() (with no declarations it only explains)
    # what they were compiled from, read after the apply (which records the declared columns' places)
    digest = con.execute("SELECT anon_declarations_digest()").fetchall()[0][0]
    con.execute(f"CREATE OR REPLACE MACRO anon_applied_declarations() AS '{digest}'")  # hex digits only


def _refresh_declarations(con: duckdb.DuckDBPyConnection, recorded: bool) -> None:
    """_apply_declarations, unless nothing they are compiled from changed since the last apply (`recorded`:
    the database holds that apply's anon_declarations_digest, sql/70_roles.sql): compiling costs a few
    tenths of a second at every connect, checking the digest a few milliseconds."""
    from duckdb_anon.publishing import digest_legacy_people

    if recorded and con.execute("SELECT anon_applied_declarations() = anon_declarations_digest()").fetchall()[0][0]:
        digest_legacy_people(con)  # (a no-op once digested; cheap to ask)
        return
    _apply_declarations(con)


@lru_cache(maxsize=1)
def install_stamp() -> str:
    """A digest of what an install writes: the package's version and the text of every SQL file and Python
    module of the package (the generated macros come from the modules). A database whose stamp
    (``duckdb_anon_install_stamp()``) equals it holds this exact install."""
    from duckdb_anon import __version__

    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for path in [*sorted(package.rglob("*.py")), *sql_rules.sql_files()]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def _macros_present(con: duckdb.DuckDBPyConnection, *names: str) -> set[str]:
    """Which of the macros `names` the connection's database holds (one look: listing DuckDB's functions
    costs tens of milliseconds whatever the filter)."""
    return {row[0] for row in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE database_name = current_database() "
        "AND list_contains(?, function_name)", [list(names)]).fetchall()}


def installed_stamp(con: duckdb.DuckDBPyConnection) -> str | None:
    """The install stamp of the connection's database, or None (no install, or one older than stamps)."""
    found = _macros_present(con, "duckdb_anon_install_stamp")
    return con.execute("SELECT duckdb_anon_install_stamp()").fetchall()[0][0] if found else None


def _write_in_transaction(con: duckdb.DuckDBPyConnection, write=_write_macros) -> None:
    """`write` (every macro) in a transaction of its own, retried when a concurrent writer wins a conflict;
    inside a transaction the caller opened, it becomes part of that one (which a conflict aborts: no retry)."""
    for attempt in range(ATTEMPTS):
        try:
            con.execute("BEGIN TRANSACTION")
        except duckdb.TransactionException:  # the caller's transaction is open
            write(con)
            return
        try:
            write(con)
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


def install(con: duckdb.DuckDBPyConnection, *, reuse: bool = False) -> duckdb.DuckDBPyConnection:
    """Create or replace every duckdb-anon macro in the connection's current database; returns `con`.

    `reuse`: when the database already holds this exact install (its stamp, :func:`install_stamp`), write
    only what the declarations compile to, not every macro again (what connect() and the dbt plugin do).
    Safe to call from several threads at once. On a read-only database it only registers the Python
    kernel, and raises if the file does not hold this version's macros."""
    from duckdb_anon import __version__

    con.complete()  # a pending result would make create_function fail ("unfinished result")
    path, readonly = _database(con)
    with _lock_for(path):
        udfs.register_functions(con)  # before the SQL: macros that call a UDF can only be created once it exists
        if not readonly:
            present = _macros_present(con, "duckdb_anon_install_stamp", "duckdb_anon_version", "anon_applied_declarations")
            current = reuse and {"duckdb_anon_install_stamp", "duckdb_anon_version"} <= present and \
                con.execute("SELECT duckdb_anon_install_stamp(), duckdb_anon_version()").fetchall()[0] == (install_stamp(), __version__)
            recorded = "anon_applied_declarations" in present
            _write_in_transaction(con, (lambda c: _refresh_declarations(c, recorded)) if current else _write_macros)
        elif (found := installed_version(con)) != __version__:
            raise duckdb.InvalidInputException(
                f"install(): argument 'con' is a read-only connection to a database holding "
                f"{'duckdb-anon ' + found if found else 'no duckdb-anon macros'}, not version {__version__}; "
                f"open it read-write once to install")
    return con


def installed_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The duckdb-anon version installed in the connection's database, or None."""
    # fetchall(): read every result to its end, so no pending result blocks a later install()
    found = _macros_present(con, "duckdb_anon_version")
    return con.execute("SELECT duckdb_anon_version()").fetchall()[0][0] if found else None


def _just_created(database: str) -> bool:
    """Whether the file `database` was created (or written) in the last few seconds: only then can its
    missing headers mean that another process is creating it, rather than a file that is not DuckDB's."""
    try:
        return time.time() - os.stat(database).st_mtime < 5
    except (OSError, TypeError, ValueError):
        return False


def _empty(con: duckdb.DuckDBPyConnection) -> bool:
    """Is the connection's database new, in memory or a file, and writable: no table, view or macro in it?
    (Macros are looked for last, and only in a database without tables: listing DuckDB's functions costs
    tens of milliseconds, and an installed database has its catalog tables.)"""
    if not con.execute(
            "SELECT NOT readonly AND (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()) = 0 "
            "AND (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND NOT internal) = 0 "
            "FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]:
        return False
    return con.execute("SELECT count(*) = 0 FROM duckdb_functions() WHERE database_name = current_database() "
                       "AND NOT internal").fetchall()[0][0]


def _template_folder() -> Path:
    """Where the install template lives: $DUCKDB_ANON_CACHE, else duckdb-anon under the user's cache folder."""
    given = os.environ.get("DUCKDB_ANON_CACHE")
    return Path(given) if given else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "duckdb-anon"


@lru_cache(maxsize=1)
def _template() -> Path | None:
    """A database file holding this exact install (named by its stamp), made once per stamp and user; None
    when the cache folder cannot be written. Made under another name and renamed, so a reader never finds
    half a file; templates of other stamps are removed then."""
    folder = _template_folder()
    path = folder / f"installed-{install_stamp()}.duckdb"
    if path.exists():
        return path
    partial = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        con = duckdb.connect(str(partial))
        try:
            install(con)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(partial, path)
    except (OSError, duckdb.Error):
        for leftover in (partial, partial.with_name(partial.name + ".wal")):
            _remove(leftover)
        return None
    for old in folder.glob("installed-*.duckdb"):
        if old != path:
            _remove(old)
    return path


def _remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:  # not ours to remove, or no folder there
        pass


def _copy_template(con: duckdb.DuckDBPyConnection, new: bool = False) -> bool:
    """Fill a new database, in memory or a file, from the install template (about a tenth of an install's
    cost); False when there is no template to copy, or the database is not new (the caller installs).
    `new`: the caller just opened the database as a private in-memory one, so it is known to be empty (looking
    costs two listings of DuckDB's functions, most of the rest of the copy's time).
    Behind the file's lock, as install() is: threads of one process may create one file at once."""
    if not new and not _empty(con):
        return False
    path = _template()
    if path is None:
        return False
    file = None if new else _database(con)[0]
    with _lock_for(file):
        if not new and not _empty(con):  # another thread filled it meanwhile
            return False
        udfs.register_functions(con)  # before the macros that call them
        database = con.execute("SELECT current_database()").fetchall()[0][0]
        try:
            con.execute("ATTACH ? AS __anon_template (READ_ONLY)", [str(path)])
        except duckdb.Error:  # removed meanwhile (a newer version's template replaced it)
            return False
        try:
            con.execute(f'COPY FROM DATABASE __anon_template TO "{database.replace(chr(34), chr(34) * 2)}"')
        finally:
            con.execute("DETACH __anon_template")
    return True


def connect(database: str = ":memory:", **config) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (``duckdb.connect(database, config=config)``) with duckdb-anon installed.

    A new in-memory database is filled from a template of this exact install, kept in the user's cache
    folder (``$DUCKDB_ANON_CACHE``, else ``~/.cache/duckdb-anon``) and made on first use; a file that holds
    this exact install already (see :func:`install`'s `reuse`) only has its declarations compiled again.
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
        # an unnamed in-memory database is new and private to this connection (a named one, ':memory:name',
        # may be shared)
        if not _copy_template(con, new=database in (":memory:", "")):
            install(con, reuse=True)
        from duckdb_anon.publishing import load_catalog_key
        load_catalog_key(con)  # the catalog key beside the file, if there is one, for the SQL that reads the people
        return con
    except BaseException:
        con.close()
        raise
