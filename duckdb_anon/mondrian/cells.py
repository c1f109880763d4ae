"""The cells of a level-driver run and their keys, as DuckDB SQL over placeholders (Plan.sql renders them).

The rules are those of ``sql/10_mondrian.sql``, their one home: rows with identical QI values form one
cell (anon_cells); per QI a DOUBLE key: the value for numbers, the engine's time key for dates and
timestamps (on DuckDB anon_numeric_key, sql/00_helpers.sql), for categories a code 0 .. m-1 by first
appearance (the cell's first row) or by value, and under a hierarchy the leaf's code; a NULL number takes
the key anon_null_key gives (called here, inlined for Spark). This module computes them in the shape an
engine that materializes each step needs (joins and windows, no DuckDB-only MAP or COLUMNS); the tests
hold it to mondrian()'s cells through the releases.
"""
from __future__ import annotations

from duckdb_anon.engines.base import CATEGORICAL, TEMPORAL
from duckdb_anon.mondrian.plan import Plan


def grouped(plan: Plan, numbered: bool) -> str:
    """Over ``__anon_source``: one row per distinct QI vector: v<d> (the values), n (rows), cell (its first
    row). `numbered`: the source already has a row number __anon_row (Spark); else DuckDB's scan position."""
    row = "__anon_row" if numbered else "row_number() OVER ()"
    sv = ", sv" if plan.sensitive else ""  # with a sensitive column, a cell also shares its value
    return (f"SELECT {plan._each('v{d}')}{sv}, count(*) AS n, min(__anon_row) AS cell FROM "
            f"(SELECT {row} AS __anon_row, {plan._each('__qi_{d} AS v{d}')}"
            f"{', __anon_sensitive AS sv' if plan.sensitive else ''} FROM __anon_source) "
            f"GROUP BY {plan._each('v{d}')}{sv}")


def code_keys(d: int) -> str:
    """Over ``grouped``: per value of categorical QI `d`, cv (the value) and first_row (its first row)."""
    return f"SELECT v{d} AS cv, min(cell) AS first_row FROM grouped GROUP BY v{d}"


def code_order(plan: Plan) -> str:
    """The column of code_keys() whose ascending order (NULLs last) numbers a categorical QI's values:
    its first row (categorical order 'appearance') or the value itself ('value')."""
    return "first_row" if plan.categorical_order == "appearance" else "cv"


def sensitive_keys() -> str:
    """Over ``grouped``: the distinct sensitive values (rv), for an engine to number (as code_keys())."""
    return "SELECT DISTINCT sv AS rv FROM grouped"


def cells(plan: Plan, numbered: bool, given: bool = False, codes: tuple[int, ...] = (), ranks: bool = False) -> str:
    """grouped() with each QI's key k<d> added (and, with a sensitive column, its rank s).

    `given`: read grouped() from the relation ``grouped`` (engines that would compute it once per reference,
    as Spark inlines CTEs); else computed here. `codes`: the categorical QIs whose codes an engine numbered,
    in ``codes<d>`` (code_keys() numbered by code_order() in __anon_row, from 1); the others are numbered
    here by a window over every value. `ranks`: likewise the sensitive values, in ``svalues``."""
    ctes, joins, raw = [], [], []
    for d, qi in enumerate(plan.qis):
        if d in plan.models.hier:  # the leaf's code (NULL when the hierarchy lacks the value: an error)
            joins.append(f"LEFT JOIN (SELECT DISTINCT leaf, code FROM hanc WHERE d = {d}) h{d} "
                         f"ON h{d}.leaf = CAST(g.v{d} AS VARCHAR)")
            raw.append(f"CAST(h{d}.code AS DOUBLE) AS r{d}")
        elif qi.kind == CATEGORICAL:
            ctes.append(f"c{d} AS (SELECT cv, (__anon_row - 1)::DOUBLE AS code FROM codes{d})" if d in codes else
                        f"c{d} AS (SELECT cv, (dense_rank() OVER (ORDER BY {code_order(plan)} NULLS LAST) - 1)::DOUBLE "
                        f"AS code FROM ({code_keys(d)}))")
            joins.append(f"LEFT JOIN c{d} ON g.v{d} IS NOT DISTINCT FROM c{d}.cv")
            raw.append(f"c{d}.code AS r{d}")
        elif qi.kind == TEMPORAL:
            raw.append(f"CAST({qi.key.format(x=f'g.v{d}')} AS DOUBLE) AS r{d}")
        else:
            raw.append(f"g.v{d}::DOUBLE AS r{d}")
    sens = ""
    if plan.sensitive:  # the sensitive value's rank in value order, NULL last (as the measures rank it)
        ctes.append("sranks AS (SELECT rv, CAST(__anon_row AS INTEGER) AS r FROM svalues)" if ranks else
                    f"sranks AS ({plan.sensitive_ranks('grouped')})")
        joins.append("LEFT JOIN sranks ON g.sv IS NOT DISTINCT FROM sranks.rv")
        sens = ", g.sv, sranks.r AS s"
    ctes = [*([] if given else [f"grouped AS ({grouped(plan, numbered)})"]), *ctes,
            f"coded AS (SELECT g.cell, g.n, {plan._each('g.v{d} AS v{d}')}{sens}, {', '.join(raw)} "
            f"FROM grouped g {' '.join(joins)})",
            f"bounds AS (SELECT {plan._each('min(r{d}) AS lo{d}, max(r{d}) AS hi{d}')} FROM coded)"]
    # a hierarchy's code stays NULL where it lacks the value (the driver reports it)
    keys = ", ".join(f"r{d} AS k{d}" if d in plan.models.hier else
                     f"coalesce(r{d}, anon_null_key(lo{d}, hi{d})) AS k{d}" for d in range(plan.q))
    return (f"WITH {', '.join(ctes)} SELECT cell, n, {plan._each('v{d}')}{', sv, s' if plan.sensitive else ''}, "
            f"{keys} FROM coded CROSS JOIN bounds")


def keys(plan: Plan) -> str:
    """Over ``cells``: what the levels read of the cells (Plan.root()): cell, n, the keys, the sensitive rank."""
    return f"SELECT cell, n, {plan._each('k{d}')}{', s' if plan.sensitive else ''} FROM cells"


def missing_leaf(plan: Plan) -> str:
    """Over ``cells``: per QI whose hierarchy lacks a value of the column, its position and one such value
    as text (NULL only when NULL is the one lacking); no row when every value is a leaf. An aggregate, not
    a LIMIT, which Spark would run in one task. (The error is anon_missing_leaf's, sql/05_hierarchies.sql.)"""
    lacking = " UNION ALL ".join(f"SELECT {d} AS d, CAST(v{d} AS VARCHAR) AS v FROM cells WHERE k{d} IS NULL"
                                 for d in plan.models.hier)
    return f"SELECT d, min(v) AS v FROM ({lacking}) GROUP BY d"
