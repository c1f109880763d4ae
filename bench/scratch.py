"""A benchmark's generated input, kept in a database file of its own and made once: the file appears
under its name only when complete (written as `<name>.partial`, then renamed), so a run stopped half way
leaves nothing a later run would take for the table."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb


def generated_database(path: Path, fill: Callable[[duckdb.DuckDBPyConnection], None]) -> Path:
    """`path`, made first if it does not exist: a plain DuckDB file that `fill` writes the tables into."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    con = duckdb.connect(str(partial))
    try:
        fill(con)
    finally:
        con.close()
    partial.rename(path)
    return path
