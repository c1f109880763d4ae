"""The level loop: run one level's queries until no partition can be cut, then label the classes.

Engine-agnostic: an :class:`Engine` runs generated SQL and keeps intermediate relations. Each level
materializes its state, so memory holds one level at a time and finished partitions leave the loop
(work per level is proportional to the partitions still being cut).
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import CATEGORICAL, QI, Engine, Names
from duckdb_anon.levels.plan import Plan


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
        codes = {d: names(f"codes{d}") for d, qi in enumerate(plan.qis) if qi.kind == CATEGORICAL}
        for d, name in codes.items():  # numbered by the engine: a window over every value runs in one task on Spark
            engine.number(names.real(name), names.real(plan.code_keys(d, grouped)), plan.code_order())
        create(cells, plan.cells(engine.source(), engine.numbered, grouped, codes))
    else:
        create(cells, plan.cells(engine.source(), engine.numbered))
    create(span, plan.span(cells))
    total, distinct = engine.value(names.real(plan.sql("SELECT [total_rows, cell_count] FROM span", span=span)))
    total = total or 0
    if k > total:
        raise ValueError(f"{fn}(): argument 'k' is {k} but the table has only {total} rows")
    # the loop reads the cells' keys and the span; Spark hands few cells to DuckDB on the driver
    loop = engine.level_engine(distinct, {names.real(cells): names.real(plan.keys(cells)),
                                          names.real(span): names.real(plan.sql("SELECT * FROM span", span=span))})
    # where most QI vectors are unique, medians from quantiles beat a sort per level, and DuckDB runs a
    # level's steps as separate statements (in one statement it re-reads the shared steps)
    if medians is None:
        medians = "quantile" if loop.quantiles and distinct >= 0.9 * total else "running"
    stepwise = loop.stepwise or medians == "quantile"

    def query(method, *tables, on=loop):
        return _generated(rules[:-1] + (on.dialect, medians), method, tables)

    def step(name, sql):
        loop.create(names.real(name), names.real(sql))

    state, following, decided = names("state_a"), names("state_b"), names("decided")
    if stepwise:
        cands, attempt, fallback = names("cands"), names("attempt"), names("fallback")
    step(state, query("root", cells, span))
    level = 0
    while True:  # one level: decide every partition's cut, set the uncut ones aside, cut the others
        level += 1
        loop.begin(f"level {level}")
        if stepwise:
            step(cands, query("candidates", state, span))
            step(attempt, query("attempt", state, cands))
            if mode == "strict":
                step(fallback, query("fallback", state, cands, attempt))
            step(decided, query("decisions", cands, attempt, fallback if mode == "strict" else None))
        else:
            step(decided, query("level", state, span))
        loop.append(names.real(final), names.real(query("finished", state, decided)))
        if loop.count(names.real(decided)) == 0:
            break
        loop.drop(names.real(following))  # two levels old: gone before the next is written, not after
        step(following, query("cut", state, decided))
        state, following = following, state
    labels = names("labels")
    engine.begin("labels")
    if loop is not engine:
        engine.take_back(loop, names.real(final))
    create(labels, query("labels", cells, final, on=engine))
    columns = published if published is not None else [column.name for column in engine.columns()]
    return names.real(plan.release(engine.source(), columns, cells, final, labels, shape, engine.numbered))

