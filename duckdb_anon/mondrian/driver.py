"""The level loop: run one level's queries until no partition can be cut, then label the classes.

Engine-agnostic: an :class:`Engine` runs generated SQL and keeps intermediate relations. Each level
materializes its state, so memory holds one level at a time and finished partitions leave the loop
(work per level is proportional to the partitions still being cut).
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import duckdb

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import CATEGORICAL, QI, RUN, Engine, Names
from duckdb_anon.mondrian import cells as cell_queries
from duckdb_anon.mondrian import release as release_queries
from duckdb_anon.mondrian.checked import CheckedPlan
from duckdb_anon.mondrian.macros import recursion
from duckdb_anon.mondrian.models import MODEL_MACROS, NO_MODELS, Models
from duckdb_anon.mondrian.plan import Plan

# On DuckDB, a state of at most this many pieces is cut to the end in one recursive statement (the levels
# of mondrian()'s macro): each level run as statements of its own costs DuckDB planning and materializing
# whatever its size, while larger states keep one level per statement, which bounds memory.
FINISH_PIECES = 1_000_000


def make_plan(qis, k, mode, rule, categorical_order, dialect, medians="running", models=NO_MODELS) -> Plan:
    """The plan of a run: CheckedPlan when cuts must have their sides counted."""
    return (CheckedPlan if models.checked else Plan)(qis, k, mode, rule, categorical_order, dialect, medians, models)


def _rest(plan: Plan) -> str:
    """Over ``start`` (a level's state) and ``span``: its pieces cut to the end in one recursive statement."""
    return f"WITH RECURSIVE {recursion(plan, 'SELECT * FROM start')} SELECT cell, off, n, part FROM parts"


# the steps that are not the plan's own methods
_STEPS = {"labels": release_queries.labels, "rest": _rest}


@lru_cache(maxsize=256)
def _generated(plan_key: tuple, step: str, tables: tuple) -> str:
    """A step's SQL (`tables`: its placeholders and the relations they stand for), rendered once per plan:
    sqlglot's parse and generate cost more than the query itself on small tables."""
    plan = make_plan(*plan_key)
    text = _STEPS[step](plan) if step in _STEPS else getattr(plan, step)()
    return plan.sql(text, **dict(tables))


@contextmanager
def argument_errors(fn: str):
    """A DuckDB error that names an argument of `fn` (the SQL rules' messages) raised as ValueError, as the
    checks run in Python raise theirs; any other error as it is."""
    try:
        yield
    except duckdb.Error as exc:
        message = str(exc).split("Error: ", 1)[-1]
        if message.startswith(f"{fn}(): argument"):
            raise ValueError(message) from None
        raise


def _raise_rule(rule: str, sql: str, parameters: list) -> None:
    """Run `sql`, a call of the SQL's error rule `rule` (a macro), on a private DuckDB holding it: its error
    as a ValueError."""
    con = sql_rules.private_duckdb(rule)
    try:
        con.execute(sql, parameters).fetchall()
    except duckdb.Error as exc:
        raise ValueError(str(exc).split("Error: ", 1)[-1]) from None
    finally:
        con.close()


def check_columns(fn: str, columns: list[QI], table, qis: list[str], sensitive: str | None, keep,
                  table_arg: str = "table_name") -> list[str]:
    """mondrian()'s checks of the source's columns (anon_mondrian_columns: no reserved name, the QIs and the
    sensitive column present, every QI generalizable) and its `keep` rule (anon_published_columns), run on
    a private DuckDB holding them, with mondrian()'s messages: the columns the release publishes.
    `columns`: the source's (an engine's columns()); `table`: the source as the messages show it, given
    as argument `table_arg`."""
    con = sql_rules.private_duckdb("anon_mondrian_columns", "anon_published_columns")
    try:
        return con.execute(
            "SELECT CASE WHEN anon_mondrian_columns($fn, $table, $names, map(list_transform($names, lambda n: lower(n)), "
            "$types), $qis, $sensitive, table_arg := $table_arg) THEN anon_published_columns($fn, $names, $qis, $keep) END",
            {"fn": fn, "table": table, "names": [c.name for c in columns], "types": [c.type for c in columns],
             "qis": list(qis), "sensitive": sensitive, "keep": list(keep) if isinstance(keep, tuple) else keep,
             "table_arg": table_arg}).fetchall()[0][0]
    except duckdb.Error as exc:
        raise ValueError(str(exc).split("Error: ", 1)[-1]) from None
    finally:
        con.close()


def resolve_qis(engine: Engine, qis: list[str]) -> list[QI]:
    """The QIs as the source's columns (their real names and kinds), once check_columns has passed."""
    by_name = {column.name.lower(): column for column in engine.columns()}
    return [by_name[q.lower()] for q in qis]


def _check_models(fn: str, engine: Engine, plan: Plan, names: Names, models: Models, qis: tuple[QI, ...],
                  cells: str) -> None:
    """mondrian()'s checks of the models before any cut, with its errors (anon_missing_leaf,
    anon_model_unmet): every value of a QI with a hierarchy is one of its leaves, and the whole table
    satisfies the model (else no cut ever will)."""
    if models.hier:
        missing = engine.rows(names.real(plan.sql(cell_queries.missing_leaf(plan), cells=cells)))
        if missing:
            d, value = min(missing, key=lambda row: row[0])
            _raise_rule("anon_missing_leaf", "SELECT anon_missing_leaf(?, ?, ?)", [fn, qis[d].name, value])
    if models.sensitive is not None:
        tdist = names("tdist")
        engine.create(names.real(tdist), names.real(plan.sql(plan.tdist(), cells=cells)))
        holds, diversity = engine.value(names.real(plan.sql(plan.whole_table(), tdist=tdist))) or (None, None)
        if holds == 0:  # (an empty table has no distribution: the check on k reports it)
            # the model is anon_model_literal's STRUCT literal, SQL text the macros wrote
            _raise_rule("anon_model_unmet", f"SELECT anon_model_unmet(?, ?, {models.model}, ?)", [fn, models.sensitive.name, diversity])


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
    rules = (tuple(resolve_qis(engine, qis)), int(k), mode, split_rule, categorical_order, engine.dialect)
    checked = models.checked
    medians = "running" if checked else medians  # checked cuts count their sides from the running totals
    plan = make_plan(*rules, "running", models)  # for the queries made once per run; query() caches the per-level ones

    def create(name, sql):
        engine.create(names.real(name), names.real(sql))

    if hierarchies:  # the plans read them as hanc and hnode
        create(names("hanc"), hierarchies[0])
        create(names("hnode"), hierarchies[1])

    cells, span, final = names("cells"), names("span"), names("final")
    engine.begin("cells")
    source = engine.source()
    if engine.stepwise:
        grouped = names("grouped")
        create(grouped, plan.sql(cell_queries.grouped(plan, engine.numbered), source=source))
        codes = {d: names(f"codes{d}") for d, qi in enumerate(plan.qis)
                 if qi.kind == CATEGORICAL and d not in models.hier}
        for d, name in codes.items():  # numbered by the engine: a window over every value runs in one task on Spark
            engine.number(names.real(name), names.real(plan.sql(cell_queries.code_keys(d), grouped=grouped)),
                          cell_queries.code_order(plan))
        ranks = names("sranks") if models.sensitive is not None else None
        if ranks:  # the sensitive values' ranks, likewise
            engine.number(names.real(ranks), names.real(plan.sql(cell_queries.sensitive_keys(), grouped=grouped)), "rv")
        create(cells, plan.sql(cell_queries.cells(plan, engine.numbered, True, tuple(codes), ranks is not None),
                               source=source, grouped=grouped, **({"svalues": ranks} if ranks else {}),
                               **{f"codes{d}": name for d, name in codes.items()}))
    else:
        create(cells, plan.sql(cell_queries.cells(plan, engine.numbered), source=source))
    create(span, plan.sql(plan.span(), cells=cells))
    _check_models(fn, engine, plan, names, models, rules[0], cells)
    total, distinct = engine.value(names.real(plan.sql("SELECT [total_rows, cell_count] FROM span", span=span)))
    total = total or 0
    if k > total:
        raise ValueError(f"{fn}(): argument 'k' is {k} but the table has only {total} rows")
    # the loop reads the cells' keys (and sensitive ranks), the span, the hierarchies' relations and the
    # sensitive distribution; Spark hands few cells to DuckDB on the driver, with the models' macros
    inputs = {cells: plan.sql(cell_queries.keys(plan), cells=cells), span: plan.sql("SELECT * FROM span", span=span)}
    for relation in (["hanc", "hnode"] if hierarchies else []) + (["tdist"] if models.sensitive is not None else []):
        inputs[RUN + relation] = f"SELECT * FROM {RUN + relation}"
    loop = engine.level_engine(distinct, {names.real(name): names.real(sql) for name, sql in inputs.items()},
                               MODEL_MACROS if models.sensitive is not None else ())
    # where most QI vectors are unique, medians from quantiles beat a sort per level, and DuckDB runs a
    # level's steps as separate statements (in one statement it re-reads the shared steps)
    if medians is None:
        medians = "quantile" if loop.quantiles and distinct >= 0.9 * total else "running"
    stepwise = loop.stepwise or medians == "quantile"

    def step(name, method, on=loop, **tables):
        """Materialize (append, for `final`) the step `method` under `name` on the engine `on`."""
        sql = _generated(rules[:-1] + (on.dialect, medians, models), method, tuple(sorted(tables.items())))
        (on.create if name != final else on.append)(names.real(name), names.real(sql))

    state, following, decided = names("state_a"), names("state_b"), names("decided")
    cands = names("cands")
    first_judged, first_sides, first_decided = names("first_judged"), names("first_sides"), names("first_decided")
    other_judged, other_sides, other_decided = names("other_judged"), names("other_sides"), names("other_decided")
    attempt, fallback = names("attempt"), names("fallback")
    step(state, "root", cells=cells, span=span)
    pieces, level = distinct, 0
    while True:  # one level: decide every partition's cut, set the uncut ones aside, cut the others
        level += 1
        if loop is engine and engine.dialect == "duckdb" and not (checked or hierarchies) and pieces <= FINISH_PIECES:
            engine.begin(f"levels {level} and on")
            step(final, "rest", start=state, span=span)
            break
        loop.begin(f"level {level}")
        if checked:  # each partition's widest cut judged, its sides counted; then the others where it failed
            step(cands, "candidates", state=state, span=span)
            step(first_judged, "first_judged", state=state, cands=cands)
            step(first_sides, "first_sides", state=state, first_judged=first_judged)
            step(first_decided, "first_decisions", cands=cands, first_judged=first_judged, first_sides=first_sides)
            step(other_judged, "other_judged", state=state, cands=cands, first_decided=first_decided)
            step(other_sides, "other_sides", state=state, other_judged=other_judged)
            step(other_decided, "other_decisions", cands=cands, other_judged=other_judged, other_sides=other_sides)
            step(decided, "checked_decisions", first_decided=first_decided, other_decided=other_decided)
        elif stepwise:
            step(cands, "candidates", state=state, span=span)
            step(attempt, "attempt", state=state, cands=cands)
            if mode == "strict":
                step(fallback, "fallback", state=state, cands=cands, attempt=attempt)
            step(decided, "decisions", cands=cands, attempt=attempt, **({"fallback": fallback} if mode == "strict" else {}))
        else:
            step(decided, "level", state=state, span=span)
        step(final, "finished", state=state, decided=decided)
        if loop.count(names.real(decided)) == 0:
            break
        loop.drop(names.real(following))  # two levels old: gone before the next is written, not after
        # (a placeholder names only what the step reads: the plain cut has a CTE of its own named sides)
        step(following, "cut", state=state, decided=decided,
             **({"first_sides": first_sides, "other_sides": other_sides} if checked else {}))
        state, following = following, state
        pieces = loop.count(names.real(state))
    labels = names("labels")
    engine.begin("labels")
    if loop is not engine:
        engine.take_back(loop, names.real(final))
    step(labels, "labels", on=engine, cells=cells, final=final)
    columns = published if published is not None else [column.name for column in engine.columns()]
    return names.real(plan.sql(release_queries.release(plan, columns, shape, engine.numbered), source=source,
                               columns=columns, cells=cells, final=final, labels=labels))
