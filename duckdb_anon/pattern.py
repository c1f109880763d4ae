"""Pattern-preserving anonymization of several columns in one call.

Each column is walked independently (CIKM 2011): its localities are extracted from the source table, then
random_walk() replaces it. random_walk() returns every row in source order with the other columns
untouched, so walking the columns one after another over the previous result composes exactly. The
locality tables are kept (one per column), so the release can be checked with check_localities().
"""
from __future__ import annotations

import duckdb

from duckdb_anon import publishing
from duckdb_anon.errors import check_not_reserved


def quote(name: str) -> str:
    """A DuckDB identifier, double-quoted so that no name can escape it."""
    return '"' + name.replace('"', '""') + '"'


POSITIONS = "__anon_walk_positions"  # each walked row's source position and its position in the release


def preserve_patterns(con: duckdb.DuckDBPyConnection, table: str, columns: list[str], target: str, *,
                      segment_size: int = 20, sample: float = 0.1, seed: int = 0, iterations: int = 1000,
                      method: str = "hit_and_run", bounds: str = "radius", radius: float = 0.5,
                      replace: bool = False) -> dict[str, str]:
    """Create table `target`: `table` with each of `columns` walked, and one locality table per column,
    named `<target>_<column>_localities`. Returns {column: locality table name}. `table` is resolved like
    query_table() (quote parts that need it); `target` is a plain table name. An existing table of one of
    those names is replaced only with ``replace=True`` and only when it is a release the catalog records;
    the source is never one of them (duckdb_anon.publishing). Everything is written in one transaction and
    recorded in the publish log; nothing else is created or left behind. The release is stored in the order
    of its own rows, not the source's. The other arguments are those of localities() and random_walk(), with
    the same defaults: each value stays within `radius` standard deviations of its original value and within
    the column's observed min and max (bounds 'radius')."""
    fn = "preserve_patterns"
    if not isinstance(columns, (list, tuple)) or not columns or not all(isinstance(c, str) and c for c in columns) \
            or len({c.lower() for c in columns}) != len(columns):
        raise publishing.PublishError(f"{fn}(): argument 'columns' must name distinct columns, got {columns!r}")
    check_not_reserved(fn, "columns", columns, publishing.PublishError)
    if not isinstance(target, str) or not target.strip():
        raise publishing.PublishError(f"{fn}(): argument 'target' must be a table name, got {target!r}")
    names = {c: f"{target}_{c}_localities" for c in columns}
    written = [publishing.check_target(con, fn, target, reads=[table], replace=replace, argument="target")]
    written += [publishing.check_target(con, fn, n, reads=[table], replace=replace, argument="target") for n in names.values()]
    current, scratch = table, "__anon_walking"
    # The walk's kernel runs its own threads; DuckDB's other workers only compete with them for the cores
    # (see docs/performance.md), so walk with one.
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    try:
        con.execute("SET threads = 1")
        with publishing.transaction(con, fn, f"writing release {target!r}"):
            for i, col in enumerate(columns):
                con.execute(f"CREATE OR REPLACE TABLE {quote(names[col])} AS SELECT * FROM localities(?, ?, "
                            "segment_size := ?, sample := ?, seed := ?)", [table, col, segment_size, sample, seed])
                out = f"{scratch}{i % 2}"
                con.execute(f"CREATE OR REPLACE TEMP TABLE {quote(out)} AS SELECT * FROM random_walk(?, ?, ?, "
                            "iterations := ?, seed := ?, method := ?, segment_size := ?, bounds := ?, radius := ?)",
                            [current if i == 0 else quote(current), col, quote(names[col]), iterations, seed + i,
                             method, segment_size, bounds, radius])
                current = out
            # stored in the release's own order; the locality tables name rows by position, so they follow it
            con.execute(f"CREATE OR REPLACE TEMP TABLE {POSITIONS} AS SELECT row_number() OVER "
                        f"(ORDER BY {publishing.order_key(['__anon_source_row'])}, __anon_source_row) AS __anon_row, * FROM "
                        f"(SELECT row_number() OVER () AS __anon_source_row, * FROM {quote(current)})")
            con.execute(f"CREATE OR REPLACE TABLE {quote(target)} AS SELECT * EXCLUDE (__anon_row, __anon_source_row) "
                        f"FROM {POSITIONS} ORDER BY __anon_row")
            for locality in names.values():
                moved = ", ".join(f"(SELECT p.__anon_row FROM {POSITIONS} p WHERE p.__anon_source_row = l.{c}) AS {c}"
                                  for c in ("i_row", "j_row", "k_row"))
                con.execute(f"CREATE OR REPLACE TABLE {quote(locality)} AS SELECT l.* REPLACE ({moved}) FROM {quote(locality)} l")
            publishing.log(con, fn, target, tables=written, reads=[table],
                           record={"table": table, "columns": list(columns), "segment_size": segment_size, "sample": sample,
                                   "seed": seed, "iterations": iterations, "method": method, "bounds": bounds,
                                   "radius": radius})
    finally:
        con.execute(f"SET threads = {int(threads)}")
        for i in range(2):
            con.execute(f"DROP TABLE IF EXISTS temp.main.{quote(f'{scratch}{i}')}")
        con.execute(f"DROP TABLE IF EXISTS temp.main.{POSITIONS}")
    return names
