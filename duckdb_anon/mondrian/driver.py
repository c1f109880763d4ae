"""The level loop: run one level's queries until no partition can be cut, then label the classes.

Engine-agnostic: an :class:`Engine` runs generated SQL and keeps intermediate relations. Each level
materializes its state, so memory holds one level at a time and finished partitions leave the loop
(work per level is proportional to the partitions still being cut).
"""
from __future__ import annotations

from functools import lru_cache

from duckdb_anon.engines.base import CATEGORICAL, QI, Engine, Names
from duckdb_anon.mondrian.checked import CheckedPlan
from duckdb_anon.mondrian.models import MODEL_MACROS, NO_MODELS, Models
from duckdb_anon.mondrian.macros import as_written, recursion
from duckdb_anon.mondrian.plan import Plan

# On DuckDB, a state of at most this many pieces is cut to the end in one recursive statement (the levels
# of mondrian()'s macro): each level run as statements of its own costs DuckDB 30-50 ms of planning and
# materializing whatever its size, while larger states keep one level per statement, which bounds memory.
FINISH_PIECES = 1_000_000


def make_plan(qis, k, mode, rule, categorical_order, dialect, medians="running", models=NO_MODELS) -> Plan:
    """The plan of a run: CheckedPlan when cuts must have their sides counted."""
    return (CheckedPlan if models.checked else Plan)(qis, k, mode, rule, categorical_order, dialect, medians, models)


@lru_cache(maxsize=256)
def _generated(plan_key: tuple, method: str, tables: tuple) -> str:
    """A level query's SQL, generated once per plan: sqlglot's parse and generate cost more than the
    query itself on small tables."""
    return getattr(make_plan(*plan_key), method)(*tables)


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


def _check_models(fn: str, engine: Engine, plan: Plan, names: Names, models: Models, qis: tuple[QI, ...],
                  cells: str) -> None:
    """mondrian()'s checks of the models before any cut: every value of a QI with a hierarchy is one of its
    leaves, and the whole table satisfies the model (else no cut ever will). Errors name the argument."""
    if models.hier:
        missing = engine.rows(names.real(plan.missing_leaf(cells)))
        if missing:
            d, value = min(missing, key=lambda row: row[0])
            shown = f"'{value}'" if value is not None else "for NULL"
            raise ValueError(f"{fn}(): argument 'hierarchies': the hierarchy of '{qis[d].name}' has no leaf "
                             f"{shown}, a value of the column")
    if models.sensitive is not None:
        tdist = names("tdist")
        engine.create(names.real(tdist), names.real(plan.tdist(cells)))
        holds, diversity = engine.value(names.real(plan.whole_table(tdist))) or (None, None)
        if holds == 0:  # (an empty table has no distribution: the check on k reports it)
            shown = f"{diversity!r}" if models.l_kind == "entropy" else f"{int(diversity)}"
            raise ValueError(f"{fn}(): argument '{'l' if models.l_given else 't'}' cannot be met: the whole table "
                             f"is only {shown} ({models.l_kind})-diverse in '{models.sensitive.name}'")


def run(engine: Engine, fn: str, qis: list[str], k: int, mode: str = "strict", shape: str = "text",
        categorical_order: str = "appearance", split_rule: str = "actual", names: Names | None = None,
        medians: str | None = None, published: list[str] | None = None, models: Models = NO_MODELS,
        hierarchies: tuple[str, str] | None = None) -> str:
    """Partition the source and return the release's SQL (valid while the intermediate relations live).

    `published`: the source columns the release holds, in the source's order (the caller's
    ``anon_published_columns``, which applies mondrian()'s `keep`); None: every column.

    `medians`: how each level finds its medians, 'running' or 'quantile' (same release; see
    ``Plan._medians``); None picks 'quantile' when nine in ten rows have a QI vector of their own.

    `models`: the hierarchies' QI positions, the sensitive column, the model and the suppression share;
    `hierarchies`: then the SQL (the engine's) of the relations hanc and hnode (see levels.models).

    The caller drops ``names.made`` once it has materialized the release."""
    names = names if names is not None else Names()
    rules = (tuple(resolve_qis(fn, engine, qis)), int(k), mode, split_rule, categorical_order, engine.dialect)
    checked = models.checked
    medians = "running" if checked else medians  # checked cuts count their sides from the running totals
    plan = make_plan(*rules, "running", models)  # for the queries made once per run; query() caches the per-level ones

    def create(name, sql):
        engine.create(names.real(name), names.real(sql))

    if hierarchies:  # the plans read them as hanc and hnode (Plan.hierarchy_tables)
        create(names("hanc"), hierarchies[0])
        create(names("hnode"), hierarchies[1])

    cells, span, final = names("cells"), names("span"), names("final")
    engine.begin("cells")
    if engine.stepwise:
        grouped = names("grouped")
        create(grouped, plan.grouped(engine.source(), engine.numbered))
        codes = {d: names(f"codes{d}") for d, qi in enumerate(plan.qis)
                 if qi.kind == CATEGORICAL and d not in models.hier}
        for d, name in codes.items():  # numbered by the engine: a window over every value runs in one task on Spark
            engine.number(names.real(name), names.real(plan.code_keys(d, grouped)), plan.code_order())
        ranks = names("sranks") if models.sensitive is not None else None
        if ranks:  # the sensitive values' ranks, likewise
            engine.number(names.real(ranks), names.real(plan.sensitive_keys(grouped)), "rv")
        create(cells, plan.cells(engine.source(), engine.numbered, grouped, codes, ranks))
    else:
        create(cells, plan.cells(engine.source(), engine.numbered))
    create(span, plan.span(cells))
    _check_models(fn, engine, plan, names, models, rules[0], cells)
    total, distinct = engine.value(names.real(plan.sql("SELECT [total_rows, cell_count] FROM span", span=span)))
    total = total or 0
    if k > total:
        raise ValueError(f"{fn}(): argument 'k' is {k} but the table has only {total} rows")
    # the loop reads the cells' keys (and sensitive ranks), the span, the hierarchies' relations and the
    # sensitive distribution; Spark hands few cells to DuckDB on the driver, with the models' macros
    inputs = {cells: plan.keys(cells), span: plan.sql("SELECT * FROM span", span=span)}
    for relation in ([plan.hierarchy_tables["hanc"], plan.hierarchy_tables["hnode"]] if hierarchies else []) + \
            ([plan.hierarchy_tables["tdist"]] if models.sensitive is not None else []):
        inputs[relation] = f"SELECT * FROM {relation}"
    loop = engine.level_engine(distinct, {names.real(name): names.real(sql) for name, sql in inputs.items()},
                               MODEL_MACROS if models.sensitive is not None else ())
    # where most QI vectors are unique, medians from quantiles beat a sort per level, and DuckDB runs a
    # level's steps as separate statements (in one statement it re-reads the shared steps)
    if medians is None:
        medians = "quantile" if loop.quantiles and distinct >= 0.9 * total else "running"
    stepwise = loop.stepwise or medians == "quantile"

    def query(method, *tables, on=loop):
        return _generated(rules[:-1] + (on.dialect, medians, models), method, tables)

    def step(name, sql):
        loop.create(names.real(name), names.real(sql))

    state, following, decided = names("state_a"), names("state_b"), names("decided")
    if checked:
        cands, judged, sides = names("cands"), names("judged"), names("sides")
    elif stepwise:
        cands, attempt, fallback = names("cands"), names("attempt"), names("fallback")
    step(state, query("root", cells, span))
    pieces, level = distinct, 0
    while True:  # one level: decide every partition's cut, set the uncut ones aside, cut the others
        level += 1
        if loop is engine and engine.dialect == "duckdb" and not (checked or hierarchies) and pieces <= FINISH_PIECES:
            engine.begin(f"levels {level} and on")
            rest = recursion(as_written(*rules, medians), f"SELECT * FROM {state}")
            engine.append(names.real(final), names.real(f"WITH RECURSIVE span AS (SELECT * FROM {span}), {rest} "
                                                        "SELECT cell, off, n, part FROM parts"))
            break
        loop.begin(f"level {level}")
        if checked:  # every cut judged at once, its sides counted
            step(cands, query("candidates", state, span))
            step(judged, query("judged", state, cands))
            step(sides, query("sides", state, judged))
            step(decided, query("checked_decisions", cands, judged, sides))
        elif stepwise:
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
        step(following, query("cut", state, decided, *([sides] if checked else [])))
        state, following = following, state
        pieces = loop.count(names.real(state))
    labels = names("labels")
    engine.begin("labels")
    if loop is not engine:
        engine.take_back(loop, names.real(final))
    create(labels, query("labels", cells, final, on=engine))
    columns = published if published is not None else [column.name for column in engine.columns()]
    return names.real(plan.release(engine.source(), columns, cells, final, labels, shape, engine.numbered))

