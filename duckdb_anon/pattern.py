"""Pattern-preserving anonymization of several columns in one call.

Each column is walked independently (CIKM 2011): its localities are extracted from the source table, then
random_walk() replaces it. random_walk() returns every row in source order with the other columns
untouched, so walking the columns one after another over the previous result composes exactly. The
locality tables are kept (one per column), so the release can be checked with check_localities().
"""
from __future__ import annotations

import duckdb


def quote(name: str) -> str:
    """A DuckDB identifier, double-quoted so that no name can escape it."""
    return '"' + name.replace('"', '""') + '"'


def preserve_patterns(con: duckdb.DuckDBPyConnection, table: str, columns: list[str], target: str, *,
                      segment_size: int = 20, sample: float = 0.1, seed: int = 0, iterations: int = 1000,
                      method: str = "hit_and_run", bounds: str = "radius", radius: float = 0.5) -> dict[str, str]:
    """Create table `target`: `table` with each of `columns` walked, and one locality table per column,
    named `<target>_<column>_localities`. Returns {column: locality table name}. `table` is resolved like
    query_table() (quote parts that need it); `target` is a plain table name. Existing tables of those
    names are replaced; nothing else is created or left behind. The other arguments are those of
    localities() and random_walk(), with the same defaults: each value stays within `radius` standard
    deviations of its original value and within the column's observed min and max (bounds 'radius')."""
    if not columns or len(set(columns)) != len(columns):
        raise ValueError("preserve_patterns(): argument 'columns' must name distinct columns")
    names = {c: f"{target}_{c}_localities" for c in columns}
    current, scratch = table, f"{target}__walking"
    # The walk's kernel runs its own threads; DuckDB's other workers only compete with them for the cores
    # (fnlwgt on Adult, 4,000 steps: 10.1 s with 2 DuckDB threads, 6.5 s with 1), so walk with one.
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    try:
        con.execute("SET threads = 1")
        for i, col in enumerate(columns):
            con.execute(f"CREATE OR REPLACE TABLE {quote(names[col])} AS SELECT * FROM localities(?, ?, "
                        "segment_size := ?, sample := ?, seed := ?)", [table, col, segment_size, sample, seed])
            out = target if i == len(columns) - 1 else f"{scratch}{i % 2}"
            con.execute(f"CREATE OR REPLACE TABLE {quote(out)} AS SELECT * FROM random_walk(?, ?, ?, "
                        "iterations := ?, seed := ?, method := ?, segment_size := ?, bounds := ?, radius := ?)",
                        [current if i == 0 else quote(current), col, quote(names[col]), iterations, seed + i,
                         method, segment_size, bounds, radius])
            current = out
    finally:
        con.execute(f"SET threads = {int(threads)}")
        for i in range(2):
            con.execute(f"DROP TABLE IF EXISTS {quote(f'{scratch}{i}')}")
    return names
