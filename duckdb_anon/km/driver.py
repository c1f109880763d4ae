"""The k^m loop: climb the generalization ladder rung by rung, then suppress level-wise to a fixed point.

Engine-agnostic: an :class:`Engine` runs the SQL of :mod:`duckdb_anon.km.plan` and keeps the intermediate
relations. The loops live here because each step depends on the last: which items are still pending on
the ladder, and which itemsets became rare after a suppression.
"""
from __future__ import annotations

import math
from functools import lru_cache

from duckdb_anon.engines.base import Engine, Names
from duckdb_anon.km.plan import Plan


@lru_cache(maxsize=512)
def _generated(plan_key: tuple, method: str, args: tuple) -> str:
    """A query's SQL, generated once per plan and arguments: sqlglot's parse and generate cost more than
    the query itself on small tables, and the rounds ask for the same queries again."""
    return getattr(Plan(*plan_key), method)(*args)


class _Cached:
    """A Plan whose queries over internal names come from the cache."""

    def __init__(self, *plan_key):
        self.key, self.plan = plan_key, Plan(*plan_key)

    def __getattr__(self, method):
        return lambda *args: _generated(self.key, method, args)


def ladder(heights: list[int]) -> list[tuple[int, ...]]:
    """The rungs: level vectors from all leaves up to all roots, one column one level at a time, the last
    column first in every round (the first item column, usually the item itself, stays exact longest)."""
    levels = [0] * len(heights)
    rungs = [tuple(levels)]
    while any(lv < h for lv, h in zip(levels, heights)):
        for c in reversed(range(len(heights))):
            if levels[c] < heights[c]:
                levels[c] += 1
                rungs.append(tuple(levels))
    return rungs


def first_threshold(k: int, m: int, people: int) -> int:
    """The holders a label needs on the ladder: k for m = 1; for m >= 2, at least sqrt(k * people). Two
    labels held by a and b of N people share about a * b / N holders when they are independent, so labels
    held by fewer than sqrt(k * N) mostly form rare pairs, which the rounds would take back one rung at a
    time, each round counting every pair again. Starting them higher takes fewer rounds and, on synthetic
    ratings, loses no more information (docs/performance.md, Costs by part). The rounds check every itemset
    either way."""
    return k if m < 2 else max(k, math.ceil(math.sqrt(k * people)))


def run(engine: Engine, fn: str, person: str, items: list[str], k: int, m: int, hierarchy: str | None,
        hierarchical: tuple[bool, ...], names: Names, published: list[str], seed: int = 0,
        max_rounds: int = 50, generalize: bool = True, threshold: int | None = None,
        stats: dict | None = None) -> str:
    """Compute the k^m release and return its SQL (valid while the intermediate relations live).

    `hierarchy`: the name of a relation (col, leaf, path) holding the path of every value of the item
    columns flagged in `hierarchical`, col being the column's position in `items` (None: no column has
    one); built by the caller, which checks the hierarchies.
    `generalize` False: the baseline that only suppresses (items stay exact or go, no rounds).
    `threshold`: the holders a label needs on the ladder (None: first_threshold()).
    `stats`, when given, receives the rungs, rounds, passes and suppressed (person, label) pairs."""
    direct = Plan(len(items), k, engine.dialect, seed, hierarchical)  # for the queries over the source
    plan = _Cached(len(items), k, engine.dialect, seed, tuple(hierarchical))
    source = engine.source()

    def create(name, sql):
        engine.create(names.real(name), names.real(sql))

    leaves, holders, paths = names("leaves"), names("holders"), names("paths")
    engine.begin("records")
    create(leaves, direct.leaves(source, person, items))
    create(holders, direct.holders(source, person, items, leaves))
    # m beyond the largest record is clamped to it, exactly: no record holds an itemset larger than itself,
    # so k^m and k^(largest) ask the same of every release. (k beyond the people suppresses every row.)
    people, largest = engine.rows(names.real(direct.sql(
        "SELECT count(*), coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM holders GROUP BY p)", holders=holders)))[0]
    m = max(1, min(m, largest))
    create(paths, plan.paths(leaves, hierarchy))
    found = engine.value(names.real(plan.missing(paths)))
    if found is not None:
        raise ValueError(f"{fn}(): argument 'hierarchies': the hierarchy of '{items[int(found[0])]}' has no leaf "
                         f"{found[1]!r}, a value of the table")
    heights = engine.value(names.real(plan.heights(paths)))
    rungs = ladder(heights) if generalize else [(0,) * len(items)]
    max_rounds = max_rounds if generalize else 0
    gen, floors, labels, numbered = names("gen"), names("floors"), names("labels"), names("numbered")
    rec, following, changed, step = names("rec_a"), names("rec_b"), names("changed"), names("step")
    taken, back, victims = names("taken"), names("back"), names("victims")
    rares = {size: names(f"rare_{size}") for size in range(1, m + 1)}
    for name, what in ((gen, "gen"), (floors, "floors"), (labels, "labels")):
        engine.append(names.real(name), plan.none(what))  # created empty: later appends insert
    leaf_count = engine.count(names.real(leaves))
    if threshold is None and not generalize:
        threshold = k
    if threshold is None:  # see first_threshold
        threshold = first_threshold(k, m, people)
    start, round_, clean = 0, 0, False
    while True:  # one round: the pending items climb the ladder, then the rare itemsets' weakest labels go back
        engine.begin(f"round {round_ + 1}")
        if engine.count(names.real(gen)) < leaf_count:
            for r in range(start, len(rungs)):
                create(step, direct.step(rungs[r], r, round_, threshold))
                engine.append(names.real(gen), names.real(plan.rung(paths, holders, gen, floors, step)))
        engine.append(names.real(labels), names.real(plan.new_labels(labels, gen)))
        create(numbered, plan.numbered(gen, labels))
        create(rec, plan.records(holders, numbered))
        if round_ >= max_rounds:
            break
        if round_ > 0:  # only itemsets with a changed label can have become rare
            create(changed, plan.changed(numbered, taken, step))
        found = []
        for size in range(2, m + 1):
            create(rares[size], plan.rare(rec, size, changed if round_ > 0 else None))
            if engine.count(names.real(rares[size])):
                found.append((size, rares[size]))
        if not found:
            clean = True  # every itemset is held by k people: the ladder saw to sizes 1, the rounds to 2..m
            break
        create(taken, plan.weakest(rec, tuple(found)))
        create(back, plan.take_back(numbered, taken))
        engine.append(names.real(floors), names.real(direct.sql("SELECT * FROM back", back=back)))
        start = engine.value(names.real(direct.sql("SELECT min(floor) FROM back", back=back)))
        create(gen, plan.kept_items(numbered, taken))  # replaced: gen stays appendable
        round_ += 1
    engine.begin("suppress")  # what the rounds left rare (max_rounds reached), suppressed person by person
    passes, removed = 0, 0
    while not clean:
        passes += 1
        changed_any = False
        for size in range(1, m + 1):
            create(rares[size], plan.rare(rec, size))
            if engine.count(names.real(rares[size])) == 0:
                continue
            create(victims, plan.victims(rec, rares[size], size))
            removed += engine.count(names.real(victims))
            create(following, plan.without(rec, victims))
            rec, following = following, rec
            changed_any = True
        if not changed_any:
            break
    if stats is not None:
        stats.update(m=m, rungs=len(rungs), heights=list(heights), rounds=round_ + 1, passes=passes, suppressed_pairs=removed)
    kept = names("kept")
    engine.begin("release")
    create(kept, plan.kept(holders, numbered, rec, leaves))
    return names.real(direct.release(source, person, items, published, kept))
