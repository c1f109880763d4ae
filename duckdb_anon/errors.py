"""Errors that say where: recognizing a full disk, the documented bounds on work-sizing arguments, and
reserved column names.

A full disk reaches Python in several shapes: DuckDB's IOException ("No space left on device", or
"could not write all bytes" when a write came up short), or an OSError with errno 28 (ENOSPC) from our
own file handling. ``is_disk_full`` recognizes them all in one place, so every writer (masked_copy, the
publishing core) reports it the same way: naming the operation and the path, after removing what it had
begun to write.

The bounds live in SQL (``anon_limit`` in sql/03_arguments.sql), one home for the macros and the Python
entries; ``check_at_most`` reads them for the latter. So does the reserved-name rule (``anon_reserved_name``,
sql/03_arguments.sql): ``check_not_reserved`` runs that macro, for Python entries that take column names.
"""
from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator

import duckdb

from duckdb_anon import sql_rules

_DISK_FULL_TEXT = ("no space left on device", "disk full", "could not write all bytes", "not enough space")


class DiskFullError(OSError):
    """The disk filled while an operation wrote: ``str()`` names the operation and the path; ``errno`` is
    ENOSPC, so callers catching OSError see it too."""

    def __init__(self, operation: str, path: str, cause: BaseException):
        super().__init__(errno.ENOSPC, f"{operation}: the disk holding {path!r} is full (No space left on device); "
                         f"nothing was written there: free space, or write elsewhere. ({cause})")
        self.operation, self.path = operation, path

    def __str__(self) -> str:  # the message alone, without OSError's "[Errno 28]" prefix
        return self.strerror


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc` (or an exception it was raised from) says the disk is full."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        if isinstance(exc, (duckdb.IOException, duckdb.Error, OSError)) and any(
                text in str(exc).lower() for text in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def disk_full_as(operation: str, path: str, cleanup: Callable[[], None] | None = None) -> Iterator[None]:
    """Run the block; a full disk becomes DiskFullError naming `operation` (e.g. "masked_copy()") and
    `path`, after `cleanup()` (remove the partial target and any temporary file). Other errors pass
    through unchanged (cleanup is the caller's business then)."""
    try:
        yield
    except BaseException as exc:
        if not is_disk_full(exc):
            raise
        if cleanup is not None:
            cleanup()
        raise DiskFullError(operation, path, exc) from exc


def check_at_most(con: duckdb.DuckDBPyConnection, fn: str, arg: str, value: int, limit_name: str) -> int:
    """`value`, or a ValueError naming fn and arg when it exceeds the bound `limit_name` (anon_limit)."""
    limit = con.execute("SELECT anon_limit(?)", [limit_name]).fetchall()[0][0]
    if value > limit:
        raise ValueError(f"{fn}(): argument '{arg}' must be at most {limit} (a bound on the work it sizes), got {value!r}")
    return value


def check_not_reserved(fn: str, arg: str, names, error: type[Exception] = ValueError) -> None:
    """An `error` (ValueError) naming fn and arg when one of the column names `names` is reserved, as the SQL rule
    anon_reserved_name decides (run on a private DuckDB holding it: no installed database is needed)."""
    names = [n for n in ([names] if isinstance(names, str) else list(names or [])) if isinstance(n, str)]
    if not names:
        return
    cursor = sql_rules.private_duckdb("anon_reserved_name")
    try:
        reserved = cursor.execute("SELECT list_filter(?::VARCHAR[], lambda n: anon_reserved_name(n))", [names]).fetchall()[0][0]
    finally:
        cursor.close()
    if reserved:
        raise error(f"{fn}(): argument '{arg}' holds a reserved __anon_ name: {reserved[0]!r}")
