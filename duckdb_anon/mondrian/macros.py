"""mondrian()'s recursion, generated from the level plan: the level driver's queries as one recursive macro.

The level driver (driver.py) runs each level of ``plan.Plan`` as its own statements. Here the same
queries -- the root state, one level's decisions, its cut and its finished pieces -- become the body of
one ``WITH RECURSIVE``: each iteration reads the pieces still being cut, decides their partitions' cuts,
emits the new pieces and marks the pieces of the partitions left uncut as done. So the rules are written
once, in plan.py, for the driver, Spark and the pure-SQL ``mondrian()``.

A macro cannot know at install time how many QIs a call has, and the plan gives each QI a column of its
own (scalar columns are what make it fast: a list of keys per cell, unnested every level, cost the
hand-written recursion 3-4 times as much). So each macro has a fixed number of key columns (SHAPES);
a call with fewer QIs fills the other columns with 0, a constant no level ever cuts (its keys never
differ). Creating a macro costs every install 5-30 ms (DuckDB parses and checks its 6-37 kB), so only
the common shapes have one. ``anon_partition`` (sql/10_mondrian.sql) calls the macro of the call's shape,
and the checked recursion (checked_macros.py) when there is none or when a hierarchy, a model or
suppression is asked for.

The plan's text is DuckDB SQL already, so the macros take it as written (sqlglot's round trip would cost
about 0.1 s per macro at every install); k enters as the macro's parameter ``__anon_k``.
"""
from __future__ import annotations

import re
from functools import lru_cache

from duckdb_anon.engines.base import NUMERIC, QI
from duckdb_anon.mondrian.plan import Plan

# (key columns, mode, split rule): the shapes anon_level_partitioner (sql/10_mondrian.sql) calls
SHAPES = tuple((8, mode, rule) for mode in ("strict", "relaxed") for rule in ("actual", "inherited")) + (
    (16, "strict", "actual"), (16, "relaxed", "actual"))
_K = 987654321  # a stand-in for k while the plan writes its text, replaced by the macro's parameter


class _AsWritten(Plan):
    """The plan's queries as it writes them, over the CTE names it uses as placeholders."""

    def sql(self, text, source=None, columns=None, **tables):
        assert source is None and columns is None and all(name == real for name, real in tables.items())
        return text


def as_written(*rules) -> Plan:
    """The plan of `rules` (Plan's arguments) writing DuckDB text over its placeholder names."""
    return _AsWritten(*rules)


def recursion(plan: Plan, first: str, decide: str | None = None, cut: str | None = None) -> str:
    """The CTEs ``pieces`` and ``parts`` (to follow WITH RECURSIVE and CTEs defining ``span``): ``parts``
    holds the pieces of every partition cut to the end (cell, off, n, part), from the state `first` (a
    SELECT of the plan's state columns) on. Each iteration is one level of the driver: `decide` (CTEs over
    ``state`` ending in ``decided``; by default ``plan.level``) decides the cuts of the partitions the last
    iteration moved, `cut` (a query over them; by default ``plan.cut``) emits their pieces, and
    ``plan.finished`` emits the pieces of the partitions no cut was found for, marked done; the next
    iteration reads only the pieces not done, and the recursion ends when none is left. The checked
    recursion (checked_macros.py) gives its own `decide` and `cut`; a piece it suppresses (part -1) is
    in no partition decided, so the level after its cut emits it done, once.

    A piece carries what ``plan.kept()`` names: cell, rows, partition and keys (in relaxed mode the
    offset; a region). The recursion is a plain UNION ALL, which keeps every level's rows but spills them
    to disk. USING KEY would keep one row per piece, but DuckDB (2.0) holds those rows, and each
    iteration's, in memory: 100-130 bytes per piece carrying only (cell, part), and 10M pieces with their
    8 keys exceeded a 2 GB limit before the first level (docs/performance.md, high-cardinality tables)."""
    carried, restored, piece = plan.kept()
    restored = f", {restored}" if restored else ""
    decide = decide or f'decided AS ({plan.level("state", "span")})'
    return f"""pieces AS (
    SELECT {carried}, false AS done FROM ({first})
    UNION ALL
    (WITH state AS MATERIALIZED (SELECT *{restored} FROM pieces WHERE NOT done),
     {decide}
     SELECT {carried}, false AS done FROM ({cut or plan.cut("state", "decided")})
     UNION ALL
     SELECT {carried}, true FROM state WHERE part IN (SELECT part FROM ({plan.finished("state", "decided")})))),
parts AS (SELECT {piece} FROM pieces WHERE done)"""


def _body(width: int, mode: str, rule: str) -> str:
    plan = as_written(tuple(QI(f"__k{d}", NUMERIC) for d in range(width)), _K, mode, rule, "appearance", "duckdb",
                      "quantile")  # medians: quantiles for cells of one row, running sums for the others
    keys = ", ".join(f"coalesce(__anon_keys[{d + 1}], 0)::DOUBLE AS k{d}" for d in range(width))
    text = f"""
WITH RECURSIVE
keyed_cells AS MATERIALIZED (SELECT * FROM anon_keyed_cells(fn, table_name, qis, categorical_order, NULL, NULL)),
cells AS MATERIALIZED (SELECT __anon_cell AS cell, __anon_n AS n, {keys} FROM keyed_cells),
span AS MATERIALIZED ({plan.span("cells")}),
{recursion(plan, plan.root("cells", "span"))}
SELECT p.cell, p.off, p.n, p.part, c.* EXCLUDE (__anon_cell, __anon_n, __anon_keys)
FROM (SELECT cell, off, n, part FROM parts) p JOIN keyed_cells c ON c.__anon_cell = p.cell"""
    return k_as_parameter(text, _K, "mondrian/macros.py")


def k_as_parameter(text: str, k: int, where: str, parameter: str = "__anon_k") -> str:
    """`text` written with the stand-in `k`, with the macro's `parameter` in its place."""
    text = text.replace(str(2 * k), f"(2 * {parameter})").replace(str(k), parameter)
    leftover = re.search(r"\d{8,}", text)  # (a leading .{0,40} made the search backtrack: 75 ms per shape)
    if leftover:  # k entered the text in a form not replaced above: never install such a macro
        raise AssertionError(f"{where}: the plan writes k in a form the macro cannot take: "
                             f"{text[max(leftover.start() - 40, 0):leftover.end()]}")
    return text


@lru_cache(maxsize=1)
def partition_macros() -> tuple[str, ...]:
    """The CREATE MACRO statements of the generated partitioners, rendered once per process."""
    return tuple(
        f"CREATE OR REPLACE MACRO anon_level_partition_{width}_{mode}_{rule}(fn, table_name, qis, __anon_k, "
        f"categorical_order) AS TABLE {_body(width, mode, rule)};"
        for width, mode, rule in SHAPES)
