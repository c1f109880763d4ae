"""mondrian()'s checked recursion (hierarchies, l-diversity, t-closeness, suppression), generated from
:class:`~duckdb_anon.mondrian.checked.CheckedPlan` as macros.py generates the plain one from ``Plan``.

One iteration of the ``WITH RECURSIVE`` (macros.recursion) is one level of the level driver's checked run:
candidates, every cut judged, the sides of the checked cuts counted, the widest allowed cut per
partition, and the cut itself (which suppresses the sides that fail). The rules of a checked cut live in
checked.py; the cells, their keys and the whole-table check in ``sql/10_mondrian.sql`` (anon_keyed_cells,
anon_model_attainable); the hierarchies' relations in ``sql/05_hierarchies.sql``.

The driver writes what it knows of a run into the text; the recursion learns it only at the call
(``CheckedPlan(at_call=True)``): which QIs have a hierarchy (every key column may have one), the sensitive
column, the model and the suppression share are the call's arguments, and the number of QIs is fixed per
shape (macros.py's reason), unused key columns 0 and never cut.

The recursion is installed as text, not as a table macro: DuckDB parses a macro's body at every install,
while a text constant is parsed only by the calls that run it. anon_partition (sql/10_mondrian.sql) hands
it to query() with each argument ``__p_<name>`` put in by anon_fill_sql as an escaped literal -- the
placeholders the plan writes (``__p_k``) and those below. ``anon_checked_partition_sql(q, mode, rule)``
gives the text of the narrowest shape holding q QIs, or NULL.
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import NUMERIC, QI
from duckdb_anon.mondrian.checked import CheckedPlan
from duckdb_anon.mondrian.macros import cells_of_parts, recursion
from duckdb_anon.mondrian.models import Models, hierarchy_relations

# (key columns, mode, split rule): the shapes of anon_checked_partition_sql
SHAPES = tuple((width, mode, rule) for width in (8, 16, 32) for mode in ("strict", "relaxed")
               for rule in ("actual", "inherited"))
#: the arguments anon_partition puts in, each written ``__p_<name>`` in the text
ARGUMENTS = ("fn", "table_name", "qis", "k", "categorical_order", "hierarchy_sql", "sensitive", "model")


def partition_sql(width: int, mode: str, rule: str) -> str:
    """The text of one shape: the pieces (cell, off, n, part) with their cells' columns, as
    anon_partition returns them."""
    models = Models(hier=tuple(range(width)), sensitive=QI("__anon_sensitive", NUMERIC), model="__p_model",
                    suppress=1.0)
    plan = CheckedPlan(tuple(QI(f"__k{d}", NUMERIC) for d in range(width)), None, mode, rule, "appearance", "duckdb",
                       "running", models, at_call=True)
    keys = ", ".join(f"coalesce(c.__anon_keys[{d + 1}], 0)::DOUBLE AS k{d}" for d in range(width))
    hanc, hnode = hierarchy_relations("__p_fn", "__p_hierarchy_sql", "list_transform(__p_qis, lambda q: lower(q))",
                                      checked=False)
    attainable = (f"SELECT anon_model_attainable(__p_fn, __p_sensitive, __p_model, v[1], v[2]) "
                  f"FROM ({plan.whole_table()}) AS whole_table(v)")
    return f"""
WITH RECURSIVE
keyed_cells AS MATERIALIZED (SELECT * FROM anon_keyed_cells(__p_fn, __p_table_name, __p_qis, __p_categorical_order,
                                                            __p_hierarchy_sql, __p_sensitive)),
hanc AS MATERIALIZED ({hanc}),
hnode AS MATERIALIZED ({hnode}),
sranks AS ({plan.sensitive_ranks("(SELECT __anon_s AS sv FROM keyed_cells)")}),
cells AS MATERIALIZED (SELECT c.__anon_cell AS cell, c.__anon_n AS n, r.r AS s, {keys}
                       FROM keyed_cells c JOIN sranks r ON c.__anon_s IS NOT DISTINCT FROM r.rv),
span AS MATERIALIZED ({plan.span()}),
tdist AS MATERIALIZED (SELECT *, (SELECT anon_is_numeric(any_value(__anon_s)) FROM keyed_cells) AS ordered
                       FROM ({plan.tdist()})),
{recursion(plan, f"SELECT * FROM ({plan.root()}) WHERE ({attainable})")}{cells_of_parts()}"""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@lru_cache(maxsize=1)
def checked_macros() -> tuple[str, ...]:
    """The CREATE MACRO statements of anon_checked_partition_sql (the text of the narrowest shape holding q
    QIs in `mode` under split rule `rule`, or NULL) and anon_checked_partition_width (the most QIs a call
    can have), rendered once per process."""
    cases = " ".join(f"WHEN q <= {width} AND mode = '{mode}' AND rule = '{rule}' THEN {_literal(partition_sql(width, mode, rule))}"
                     for width, mode, rule in SHAPES)
    return (f"CREATE OR REPLACE MACRO anon_checked_partition_sql(q, mode, rule) AS CASE {cases} END;",
            f"CREATE OR REPLACE MACRO anon_checked_partition_width() AS {max(width for width, _, _ in SHAPES)};")
