"""The level loop: run one level's queries until no partition can be cut, then label the classes.

Engine-agnostic: an :class:`Engine` runs generated SQL and keeps intermediate relations. Each level
materializes its state, so memory holds one level at a time and finished partitions leave the loop
(work per level is proportional to the partitions still being cut).
"""
from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from functools import lru_cache

from sqlglot import exp

from duckdb_anon.levels.plan import QI, Plan


class Engine(ABC):
    """What the level loop needs from a SQL engine."""

    dialect: str  # sqlglot dialect name
    numbered: bool  # the source carries its row number as __anon_row
    # materialize each step of a level's decision (Spark: its CTEs are inlined at every reference, and
    # the strict fallback reads them many times); DuckDB decides a level in one statement
    stepwise: bool = False
    # the engine reads quantile_disc(x, p) as an aggregate (DuckDB; Spark only knows WITHIN GROUP)
    quantiles: bool = False

    @abstractmethod
    def source(self) -> exp.Expression:
        """The source relation, as a sqlglot table expression."""

    @abstractmethod
    def columns(self) -> list[QI | None]:
        """The source's columns in order, as QIs (the name, how values order, a temporal key), or a QI
        of kind None for a column Mondrian cannot generalize."""

    @abstractmethod
    def create(self, name: str, sql: str) -> None:
        """Materialize a query under `name`."""

    @abstractmethod
    def append(self, name: str, sql: str) -> None:
        """Add a query's rows to the relation `name` (created on first use)."""

    @abstractmethod
    def count(self, name: str) -> int:
        """Rows of relation `name`."""

    @abstractmethod
    def value(self, sql: str):
        """The single value a query returns."""

    @abstractmethod
    def drop(self, name: str) -> None:
        """Forget relation `name` (no error when it does not exist)."""

    def begin(self, step: str) -> None:
        """The driver starts a step ('cells', 'level 3', 'labels'): engines may label their work by it."""


RUN = "__anon_lv_run_"  # the prefix of intermediate relations in cached SQL; each run puts its own in


class Names:
    """Unique names for one run's intermediate relations, remembered so they can all be dropped."""

    def __init__(self):
        self.prefix = f"__anon_lv_{uuid.uuid4().hex[:12]}_"
        self.made: list[str] = []

    def __call__(self, what: str) -> str:
        self.made.append(self.prefix + what)
        return RUN + what

    def real(self, sql: str) -> str:
        """SQL over this run's relations (the prefix is ours, never user input)."""
        return sql.replace(RUN, self.prefix)


@lru_cache(maxsize=256)
def _generated(plan_key: tuple, method: str, tables: tuple) -> str:
    """A level query's SQL, generated once per plan: sqlglot's parse and generate cost more than the
    query itself on small tables."""
    return getattr(Plan(*plan_key), method)(*tables)


def resolve_qis(fn: str, engine: Engine, qis: list[str]) -> list[QI]:
    """The QIs with their real column names and kinds; an unknown or unsupported column is an error."""
    by_name = {column.name.lower(): column for column in engine.columns()}
    out = []
    for q in qis:
        if q.lower() not in by_name:
            raise ValueError(f"{fn}(): argument 'qis': the table has no column '{q}'")
        column = by_name[q.lower()]
        if column.kind is None:
            raise ValueError(f"{fn}(): argument 'qis': column '{column.name}' has a type that cannot be generalized")
        out.append(column)
    return out


def run(engine: Engine, fn: str, qis: list[str], k: int, mode: str = "strict", shape: str = "text",
        categorical_order: str = "appearance", split_rule: str = "actual", names: Names | None = None,
        medians: str | None = None, published: list[str] | None = None) -> str:
    """Partition the source and return the release's SQL (valid while the intermediate relations live).

    `published`: the source columns the release holds, in the source's order (the caller's
    ``anon_published_columns``, which applies mondrian()'s `keep`); None: every column.

    `medians`: how each level finds its medians, 'running' or 'quantile' (same release; see
    ``Plan._medians``); None picks 'quantile' when nine in ten rows have a QI vector of their own.

    The caller drops ``names.made`` once it has materialized the release."""
    names = names if names is not None else Names()
    rules = (tuple(resolve_qis(fn, engine, qis)), int(k), mode, split_rule, categorical_order, engine.dialect)
    plan = Plan(*rules)  # for the queries made once per run; query() caches the per-level ones

    def create(name, sql):
        engine.create(names.real(name), names.real(sql))

    cells, span, final = names("cells"), names("span"), names("final")
    engine.begin("cells")
    if engine.stepwise:
        grouped = names("grouped")
        create(grouped, plan.grouped(engine.source(), engine.numbered))
        create(cells, plan.cells(engine.source(), engine.numbered, grouped))
    else:
        create(cells, plan.cells(engine.source(), engine.numbered))
    create(span, plan.span(cells))
    total, distinct = engine.value(names.real(plan.sql("SELECT [total_rows, cell_count] FROM span", span=span)))
    total = total or 0
    if k > total:
        raise ValueError(f"{fn}(): argument 'k' is {k} but the table has only {total} rows")
    # where most QI vectors are unique, medians from quantiles beat a sort per level, and DuckDB runs a
    # level's steps as separate statements (in one statement it re-reads the shared steps)
    if medians is None:
        medians = "quantile" if engine.quantiles and distinct >= 0.9 * total else "running"
    stepwise = engine.stepwise or medians == "quantile"

    def query(method, *tables):
        return _generated(rules + (medians,), method, tables)

    state, following, decided = names("state_a"), names("state_b"), names("decided")
    if stepwise:
        cands, attempt, fallback = names("cands"), names("attempt"), names("fallback")
    create(state, query("root", cells, span))
    level = 0
    while True:  # one level: decide every partition's cut, set the uncut ones aside, cut the others
        level += 1
        engine.begin(f"level {level}")
        if stepwise:
            create(cands, query("candidates", state, span))
            create(attempt, query("attempt", state, cands))
            if mode == "strict":
                create(fallback, query("fallback", state, cands, attempt))
            create(decided, query("decisions", cands, attempt, fallback if mode == "strict" else None))
        else:
            create(decided, query("level", state, span))
        engine.append(names.real(final), names.real(query("finished", state, decided)))
        if engine.count(names.real(decided)) == 0:
            break
        engine.drop(names.real(following))  # two levels old: gone before the next is written, not after
        create(following, query("cut", state, decided))
        state, following = following, state
    labels = names("labels")
    engine.begin("labels")
    create(labels, query("labels", cells, final))
    columns = published if published is not None else [column.name for column in engine.columns()]
    return names.real(plan.release(engine.source(), columns, cells, final, labels, shape, engine.numbered))

