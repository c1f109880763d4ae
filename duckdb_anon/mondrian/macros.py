"""mondrian()'s plain recursion, generated from the level plan: the level driver's steps as one recursive macro.

The level driver (driver.py) runs each level of ``plan.Plan`` as its own statements. Here the same
texts -- the root state, one level's decisions, its cut and its finished pieces -- become the body of one
``WITH RECURSIVE``: each iteration reads the pieces still being cut, decides their partitions' cuts,
emits the new pieces and marks the pieces of the partitions left uncut as done. The level rules live in
plan.py; the cells and their keys in ``sql/10_mondrian.sql`` (anon_keyed_cells), which the macros read.

A macro cannot know at install time how many QIs a call has, and the plan gives each QI a column of its
own (scalar columns are much faster than a list of keys per cell, unnested every level). So each macro
has a fixed number of key columns (SHAPES); a call with fewer QIs fills the other columns with 0, a
constant no level ever cuts (its keys never differ). Creating a macro costs every install time, so only
the common shapes have one: ``anon_level_partitioner``, generated from SHAPES below, names the macro of a
call's shape, and ``anon_partition`` (sql/10_mondrian.sql) calls it, or the checked recursion
(checked_macros.py) when there is none or when a hierarchy, a model or suppression is asked for.

The plan's texts are DuckDB SQL, taken as written; k is the macro's parameter ``__p_k``, the placeholder
the plan writes for it.
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import NUMERIC, QI
from duckdb_anon.mondrian.plan import Plan

# (key columns, mode, split rule): the generated partitioners, narrowest first
SHAPES = tuple((8, mode, rule) for mode in ("strict", "relaxed") for rule in ("actual", "inherited")) + (
    (16, "strict", "actual"), (16, "relaxed", "actual"))


def recursion(plan: Plan, first: str) -> str:
    """The CTEs ``pieces`` and ``parts`` (to follow WITH RECURSIVE, with ``span`` at hand): ``parts`` holds
    the pieces of every partition cut to the end (cell, off, n, part), from the state `first` (a SELECT of
    the plan's state columns) on. Each iteration is one level of the driver: ``plan.decide()`` decides the
    cuts of the partitions the last iteration moved, ``plan.cut()`` emits their pieces, and
    ``plan.undecided()`` picks the pieces of the partitions no cut was found for, marked done; the next
    iteration reads only the pieces not done, and the recursion ends when none is left. A piece a checked
    cut suppresses (part -1) is in no partition decided, so the level after its cut emits it done, once.

    A piece carries what ``plan.kept()`` names. The recursion is a plain UNION ALL, which keeps every
    level's rows but lets DuckDB spill them to disk; USING KEY would keep one row per piece, but holds those
    rows, and each iteration's, in memory (docs/performance.md, high-cardinality tables)."""
    carried, restored, piece = plan.kept()
    restored = f", {restored}" if restored else ""
    return f"""pieces AS (
    SELECT {carried}, false AS done FROM ({first})
    UNION ALL
    (WITH state AS MATERIALIZED (SELECT *{restored} FROM pieces WHERE NOT done),
     {plan.decide()}
     SELECT {carried}, false AS done FROM ({plan.cut()})
     UNION ALL
     SELECT {carried}, true FROM state s WHERE {plan.undecided('s')})),
parts AS MATERIALIZED (SELECT {piece} FROM pieces WHERE done)"""


def cells_of_parts() -> str:
    """The SELECT ending a recursion: every piece of ``parts`` with its cell's columns from ``keyed_cells``.

    The cells are filtered by a figure of ``parts`` (a filter that keeps every cell) so that the join's
    table over them, every cell's columns, is built once the recursion has ended: built first, DuckDB held
    it beside the whole recursion, unspilled (about 150 bytes a cell)."""
    return """
SELECT p.cell, p.off, p.n, p.part, c.* EXCLUDE (__anon_cell, __anon_n, __anon_keys)
FROM (SELECT cell, off, n, part FROM parts) p
JOIN (SELECT * FROM keyed_cells WHERE __anon_cell >= (SELECT min(cell) FROM parts)) c ON c.__anon_cell = p.cell"""


def _body(width: int, mode: str, rule: str) -> str:
    plan = Plan(tuple(QI(f"__k{d}", NUMERIC) for d in range(width)), None, mode, rule, "appearance", "duckdb",
                "quantile")  # medians: quantiles for cells of one row, running sums for the others
    keys = ", ".join(f"coalesce(__anon_keys[{d + 1}], 0)::DOUBLE AS k{d}" for d in range(width))
    return f"""
WITH RECURSIVE
keyed_cells AS MATERIALIZED (SELECT * FROM anon_keyed_cells(fn, table_name, qis, categorical_order, NULL, NULL)),
cells AS MATERIALIZED (SELECT __anon_cell AS cell, __anon_n AS n, {keys} FROM keyed_cells),
span AS MATERIALIZED ({plan.span()}),
{recursion(plan, plan.root())}{cells_of_parts()}"""


def _name(width: int, mode: str, rule: str) -> str:
    return f"anon_level_partition_{width}_{mode}_{rule}"


@lru_cache(maxsize=1)
def partition_macros() -> tuple[str, ...]:
    """The CREATE MACRO statements of the generated partitioners and of anon_level_partitioner(q, mode,
    rule), the name of the narrowest one serving q QIs in `mode` under split rule `rule` (NULL: none),
    rendered once per process."""
    cases = " ".join(f"WHEN q <= {width} AND mode = '{mode}' AND rule = '{rule}' THEN '{_name(width, mode, rule)}'"
                     for width, mode, rule in SHAPES)
    return tuple(
        f"CREATE OR REPLACE MACRO {_name(width, mode, rule)}(fn, table_name, qis, __p_k, categorical_order) "
        f"AS TABLE {_body(width, mode, rule)};" for width, mode, rule in SHAPES) + (
        f"CREATE OR REPLACE MACRO anon_level_partitioner(q, mode, rule) AS CASE {cases} END;",)
