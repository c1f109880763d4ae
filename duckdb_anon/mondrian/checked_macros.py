"""mondrian()'s checked recursion (hierarchies, l-diversity, t-closeness, suppression), generated from
:class:`~duckdb_anon.mondrian.checked.CheckedPlan` as macros.py generates the plain one from ``Plan``.

One iteration of the ``WITH RECURSIVE`` (macros.recursion's UNION ALL) is one level of the level driver's
checked run: candidates, every cut judged, the sides of the checked cuts counted, the widest allowed cut
per partition, and the cut itself (which suppresses the sides that fail). So the rules of a checked cut
are written once, in checked.py, for the driver, Spark and the pure-SQL ``mondrian()``.

The driver writes what it knows of a run into the text; the recursion learns it only at the call. So:

- which QIs have a hierarchy: every key column may have one (``CheckedPlan.hier_at_call``); a partition's
  QI is cut by its hierarchy when the hierarchy's nodes (hnode, made from the call's hierarchies) cover
  it, else at its median;
- the sensitive column, the model and the suppression share are arguments: a call without a sensitive
  column ranks one NULL value and counts its sides only where a hierarchy or a budget asks for it; the
  model STRUCT is read by anon_model_holds as the measures read it;
- the number of QIs: fixed key columns per shape (macros.py's reason), unused ones 0 and never cut.

The recursion is installed as text, not as a table macro: DuckDB parses a macro's body at every install
(about 0.9 ms per kB, 13-20 ms per shape here), while a text constant costs nothing to install and is
parsed only by the calls that run it (anon_partition hands it to query() with the call's arguments put in
as escaped literals by anon_fill_sql, sql/10_mondrian.sql). ``anon_checked_partition_sql(q, mode, rule)``
gives the text of the narrowest shape holding q QIs, or NULL.
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import NUMERIC, QI
from duckdb_anon.mondrian.checked import CheckedPlan
from duckdb_anon.mondrian.macros import _AsWritten, k_as_parameter
from duckdb_anon.mondrian.macros import recursion as plain_recursion
from duckdb_anon.mondrian.models import Models, hierarchy_relations

# (key columns, mode, split rule): the shapes of anon_checked_partition_sql
SHAPES = tuple((width, mode, rule) for width in (8, 16, 32) for mode in ("strict", "relaxed")
               for rule in ("actual", "inherited"))
_K = 987654321  # a stand-in for k while the plan writes its text (macros.k_as_parameter replaces it)
_ARG = "__anon_arg__"  # the text marks each argument as _ARG name _ARG (anon_fill_sql puts it in)


def arg(name: str) -> str:
    """The place of the call's argument `name` in the text: anon_partition gives fn, table_name, qis, k,
    categorical_order, hierarchy_sql, sensitive and model."""
    return f"{_ARG}{name}{_ARG}"


class _AtCall(CheckedPlan):
    """The checked plan with what the driver knows of a run read from the call's arguments."""

    hier_at_call = True
    sql = _AsWritten.sql  # the text as written, over the CTE names of the recursion

    def __init__(self, *rules):
        super().__init__(*rules)
        self.hierarchy_tables = {name: name for name in self.hierarchy_tables}  # the recursion's own CTEs

    def _sensitive_on(self) -> str:
        return f"({arg('sensitive')} IS NOT NULL)"

    def _ordered(self) -> str:
        return "whole.ordered"

    def _suppress(self) -> str:
        return f"coalesce(struct_extract({arg('model')}, 'suppress'), 0)"


def recursion(plan: CheckedPlan, first: str) -> str:
    """The CTEs ``pieces`` and ``parts`` (to follow WITH RECURSIVE and CTEs defining span, hanc, hnode and
    tdist): ``parts`` holds the pieces of every partition cut to the end, from the state `first` on;
    suppressed pieces have part -1.
    Each iteration is one checked level of the driver (driver.run), in the plain recursion's shape
    (macros.recursion: a UNION ALL of pieces carrying their keys, sensitive rank and budget, which
    DuckDB spills)."""
    decide = f"""cands AS MATERIALIZED ({plan.candidates("state", "span")}),
     judged AS MATERIALIZED ({plan.judged("state", "cands")}),
     sides AS MATERIALIZED ({plan.sides("state", "judged")}),
     decided AS MATERIALIZED ({plan.checked_decisions("cands", "judged", "sides")})"""
    return plain_recursion(plan, first, decide, plan.cut("state", "decided", "sides"))


def partition_sql(width: int, mode: str, rule: str) -> str:
    """The text of one shape: the pieces (cell, off, n, part) with their cells' columns, as
    anon_partition returns them."""
    fn, table, qis, order, hierarchies, sensitive, model = (
        arg(name) for name in ("fn", "table_name", "qis", "categorical_order", "hierarchy_sql", "sensitive", "model"))
    models = Models(hier=tuple(range(width)), sensitive=QI("__anon_sensitive", NUMERIC), model=model, suppress=1.0)
    plan = _AtCall(tuple(QI(f"__k{d}", NUMERIC) for d in range(width)), _K, mode, rule, "appearance", "duckdb",
                   "running", models)
    keys = ", ".join(f"coalesce(c.__anon_keys[{d + 1}], 0)::DOUBLE AS k{d}" for d in range(width))
    hanc, hnode = hierarchy_relations(fn, hierarchies, f"list_transform({qis}, lambda q: lower(q))", checked=False)
    attainable = (f"SELECT anon_model_attainable({fn}, {sensitive}, {model}, v[1], v[2]) "
                  f"FROM ({plan.whole_table('tdist')}) AS whole_table(v)")
    text = f"""
WITH RECURSIVE
keyed_cells AS MATERIALIZED (SELECT * FROM anon_keyed_cells({fn}, {table}, {qis}, {order}, {hierarchies}, {sensitive})),
hanc AS MATERIALIZED ({hanc}),
hnode AS MATERIALIZED ({hnode}),
sranks AS ({plan.sensitive_ranks("(SELECT __anon_s AS sv FROM keyed_cells)")}),
cells AS MATERIALIZED (SELECT c.__anon_cell AS cell, c.__anon_n AS n, r.r AS s, {keys}
                       FROM keyed_cells c JOIN sranks r ON c.__anon_s IS NOT DISTINCT FROM r.rv),
span AS MATERIALIZED ({plan.span("cells")}),
tdist AS MATERIALIZED (SELECT *, (SELECT anon_is_numeric(any_value(__anon_s)) FROM keyed_cells) AS ordered
                       FROM ({plan.tdist("cells")})),
{recursion(plan, f"SELECT * FROM ({plan.root('cells', 'span')}) WHERE ({attainable})")}
SELECT p.cell, p.off, p.n, p.part, c.* EXCLUDE (__anon_cell, __anon_n, __anon_keys)
FROM (SELECT cell, off, n, part FROM parts) p JOIN keyed_cells c ON c.__anon_cell = p.cell"""
    return k_as_parameter(text, _K, "mondrian/checked_macros.py", arg("k"))


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
