"""The level loop: run one level's queries until no partition can be cut, then label the classes.

Engine-agnostic: an :class:`Engine` runs generated SQL and keeps intermediate relations. Each level
materializes its state, so memory holds one level at a time and finished partitions leave the loop
(work per level is proportional to the partitions still being cut).
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import QI, Engine, Names
from duckdb_anon.levels.macros import as_written, recursion
from duckdb_anon.levels.plan import Plan

# On DuckDB, a state of at most this many pieces is cut to the end in one recursive statement (the levels
# of mondrian()'s macro): each level run as statements of its own costs DuckDB 30-50 ms of planning and
# materializing whatever its size, while larger states keep one level per statement, which bounds memory.
FINISH_PIECES = 1_000_000


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
    pieces, level = distinct, 0
    while True:  # one level: decide every partition's cut, set the uncut ones aside, cut the others
        level += 1
        if engine.dialect == "duckdb" and pieces <= FINISH_PIECES:
            engine.begin(f"levels {level} and on")
            rest = recursion(as_written(*rules, medians), f"SELECT * FROM {state}")
            engine.append(names.real(final), names.real(f"WITH RECURSIVE span AS (SELECT * FROM {span}), {rest} "
                                                        "SELECT cell, off, n, part FROM parts"))
            break
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
        pieces = engine.count(names.real(state))
    labels = names("labels")
    engine.begin("labels")
    create(labels, query("labels", cells, final))
    columns = published if published is not None else [column.name for column in engine.columns()]
    return names.real(plan.release(engine.source(), columns, cells, final, labels, shape, engine.numbered))

