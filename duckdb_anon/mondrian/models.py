"""Hierarchies, l-diversity, t-closeness and suppression for the level plan, from the SQL macros' own rules.

The rules live once, in SQL: the models in ``sql/07_models.sql`` (anon_model_holds and the macros it calls),
hierarchies in ``sql/05_hierarchies.sql`` (validation, leaf codes, node runs), the argument checks in
``sql/11_mondrian_api.sql`` (anon_model_literal, anon_hierarchy_sql). This module only carries them to the
level plan:

- on DuckDB the plan calls ``anon_model_holds`` itself; for another dialect (Spark) :func:`inline_models`
  replaces the call by the macros' bodies, as duckdb_anon.sql_rules reads them, in Spark's list functions;
  the macros aggregate a group's rows, one per sensitive value, which carry the windows of
  :func:`model_inputs` (the inputs that sql/07_models.sql's header defines);
- a hierarchy becomes two small relations computed by DuckDB's macros (on the engine's connection, or an
  in-memory one for Spark): ``hanc`` (d, leaf, code, depth, lo), each leaf's code and, per depth, the
  start of its ancestor's run of codes; ``hnode`` (d, name, lo, hi, depth, leaves), every node's run.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import CATEGORICAL, QI


@dataclass(frozen=True)
class Models:
    """What a run enforces besides k: the QI positions with a hierarchy, the sensitive column (its kind
    says whether its values are ordered, for t-closeness), the model as anon_model_literal's STRUCT
    literal ({'l', 'l_kind', 'c', 't', 'suppress'}; l_kind and c again for the whole-table check's
    message), and the share of rows that may be suppressed."""
    hier: tuple[int, ...] = ()
    sensitive: QI | None = None
    model: str | None = None
    suppress: float = 0.0
    l_kind: str = "distinct"
    c: float = 2.0
    l_given: bool = False

    @property
    def checked(self) -> bool:
        """Do cuts need their sides counted (the macro's `checked` cuts)?"""
        return bool(self.hier) or self.sensitive is not None or self.suppress > 0

    @property
    def ordered(self) -> bool:
        return self.sensitive is not None and self.sensitive.kind != CATEGORICAL


NO_MODELS = Models()


#: The macros model_arguments and hierarchy_queries call, and the relations they return read: a private
#: DuckDB holding them serves an engine without mondrian()'s macros (Spark).
MODEL_ARGUMENT_MACROS = ("anon_model_literal", "anon_hierarchy_sql", "anon_sql_literal", "anon_sql_list",
                         "anon_hierarchy_leaves", "anon_hierarchy_maps")


def model_arguments(con, fn: str, qis: list[str], mode: str, sensitive, l, l_kind, c, t, max_suppression) -> str:
    """anon_model_literal's checks (errors name fn and the argument) and its STRUCT literal."""
    return con.execute("SELECT anon_model_literal(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [fn, list(qis), mode, sensitive, l, l_kind, c, t, max_suppression]).fetchall()[0][0]


def hierarchy_queries(con, fn: str, hierarchies, qis: list[str]) -> tuple[str, str] | None:
    """DuckDB SQL for the relations hanc and hnode of `hierarchies` (QI name -> hierarchy table on `con`),
    or None without hierarchies. anon_hierarchy_sql checks the argument (bind time) and gives the SQL
    that reads the tables, quoted here as a literal by anon_sql_literal; anon_hierarchy_leaves validates
    the trees when the relations are made."""
    if not hierarchies:
        return None
    literal = con.execute("SELECT anon_sql_literal(anon_hierarchy_sql(?, ?, ?))",
                          [fn, hierarchies, list(qis)]).fetchall()[0][0]
    positions = con.execute("SELECT anon_sql_list(?)", [[q.lower() for q in qis]]).fetchall()[0][0]
    name = con.execute("SELECT anon_sql_literal(?)", [fn]).fetchall()[0][0]
    return hierarchy_relations(name, literal, positions)


def hierarchy_relations(fn: str, hierarchy_sql: str, positions: str, checked: bool = True) -> tuple[str, str]:
    """The SELECTs of hanc and hnode, given SQL expressions for the function's name, the hierarchies' SQL
    text (anon_hierarchy_sql's) and the QIs' lower-case names in order: quoted literals for the level
    driver, a macro's parameters for mondrian()'s generated recursion. `checked`: validate the trees
    (mondrian()'s cells have done it already)."""
    check = "" if checked else ", checked := false"
    anc = (f"SELECT list_position({positions}, qi) - 1 AS d, leaf, code::BIGINT AS code, "
           f"unnest(range(len(anc)))::BIGINT AS depth, unnest(anc)::BIGINT AS lo "
           f"FROM anon_hierarchy_leaves({fn}, {hierarchy_sql}{check})")
    node = (f"SELECT list_position({positions}, e.key) - 1 AS d, e.n.name AS name, e.n.lo::BIGINT AS lo, "
            f"e.n.hi::BIGINT AS hi, e.n.depth::BIGINT AS depth, e.leaves::BIGINT AS leaves "
            f"FROM (SELECT {{'key': m.key, 'n': unnest(m.value), 'leaves': h.leaf_counts[m.key]}} AS e "
            f"FROM (SELECT unnest(map_entries(nodes)) AS m, leaf_counts "
            f"FROM anon_hierarchy_maps({fn}, {hierarchy_sql}, checked := false)) AS h(m, leaf_counts))")
    return anc, node


def model_inputs(n: str, r: str, group: str = "") -> str:
    """The window columns the models' macros read besides n and r (sql/07_models.sql's header), over rows
    with the count `n` and the rank `r` of one sensitive value of a group (`group`: its PARTITION BY list;
    empty: one group): m_rows, m_below, m_next, m_tail, m_top. Each is computed only if the model reads it."""
    over = f"PARTITION BY {group} " if group else ""
    running = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    return (f"sum({n}) OVER ({over}) AS m_rows, sum({n}) OVER ({over}ORDER BY {r} {running}) AS m_below, "
            f"lead({r}) OVER ({over}ORDER BY {r}) AS m_next, sum({n}) OVER ({over}ORDER BY {n} {running}) AS m_tail, "
            f"max({n}) OVER ({over}) AS m_top")


def model_holds(model: str, n: str, r: str, whole: str, ordered: str) -> str:
    """SQL: anon_model_holds over rows carrying :func:`model_inputs`, `whole` the relation of the table's
    distribution (q, cq, cc), `ordered` SQL for whether the sensitive values are ordered."""
    return (f"anon_model_holds({model}, {n}, {r}, m_rows, m_below, m_next, m_tail, m_top, "
            f"{whole}.q, {whole}.cq, {whole}.cc, {ordered})")


def inline_models(node: exp.Expression, dialect: str) -> exp.Expression:
    """For a dialect other than DuckDB, a call of a models macro (anon_model_holds, anon_diversity and the
    macros they call) as the macros' expression (duckdb_anon.sql_rules.inline)."""
    return sql_rules.inline(node, dialect, sql_rules.callees(*MODEL_MACROS))


#: The macros the level plan calls for the models: a level engine on a DuckDB of its own defines them.
MODEL_MACROS = ("anon_model_holds", "anon_diversity")
