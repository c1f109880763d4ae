"""The k^m loop: climb the generalization ladder rung by rung, then suppress level-wise to a fixed point.

Engine-agnostic: an :class:`Engine` runs the SQL of :mod:`duckdb_anon.km.plan` and keeps the intermediate
relations. The loops live here because each step depends on the last: which items are still pending on
the ladder, and which itemsets became rare after a suppression.
"""
from __future__ import annotations

from duckdb_anon.engines.base import Engine, Names
from duckdb_anon.km.plan import Plan


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


def run(engine: Engine, fn: str, person: str, items: list[str], k: int, m: int, hierarchy: str | None,
        hierarchical: tuple[bool, ...], names: Names, published: list[str], seed: int = 0,
        stats: dict | None = None) -> str:
    """Compute the k^m release and return its SQL (valid while the intermediate relations live).

    `hierarchy`: the name of a relation (col, leaf, path) holding the path of every value of the item
    columns flagged in `hierarchical`, col being the column's position in `items` (None: no column has
    one); built by the caller, which checks the hierarchies.
    `stats`, when given, receives the rungs, passes and suppressed (person, label) pairs."""
    plan = Plan(len(items), k, engine.dialect, seed, hierarchical)
    source = engine.source()

    def create(name, sql):
        engine.create(names.real(name), names.real(sql))

    leaves, holders, paths = names("leaves"), names("holders"), names("paths")
    engine.begin("records")
    create(leaves, plan.leaves(source, person, items))
    create(holders, plan.holders(source, person, items, leaves))
    create(paths, plan.paths(leaves, hierarchy))
    found = engine.value(names.real(plan.missing(paths)))
    if found is not None:
        raise ValueError(f"{fn}(): argument 'hierarchies': the hierarchy of '{items[int(found[0])]}' has no leaf "
                         f"{found[1]!r}, a value of the table")
    heights = engine.value(names.real(plan.heights(paths)))
    gen, numbered = names("gen"), names("gen_numbered")
    rungs = ladder(heights)
    engine.begin("generalize")
    create(gen, plan.none())
    leaf_count = engine.count(names.real(leaves))
    for r, levels in enumerate(rungs):
        engine.append(names.real(gen), names.real(plan.rung(paths, holders, gen, levels, r)))
        if engine.count(names.real(gen)) == leaf_count:
            break
    create(numbered, plan.numbered(gen))
    rec, following, rare, victims = names("rec_a"), names("rec_b"), names("rare"), names("victims")
    create(rec, plan.records(holders, numbered))
    engine.begin("suppress")
    passes, removed = 0, 0
    while True:
        passes += 1
        changed = False
        for size in range(1, m + 1):
            create(rare, plan.rare(rec, size))
            if engine.count(names.real(rare)) == 0:
                continue
            create(victims, plan.victims(rec, rare, size))
            removed += engine.count(names.real(victims))
            create(following, plan.without(rec, victims))
            rec, following = following, rec
            changed = True
        if not changed:
            break
    if stats is not None:
        stats.update(rungs=len(rungs), heights=list(heights), passes=passes, suppressed_pairs=removed)
    kept = names("kept")
    engine.begin("release")
    create(kept, plan.kept(holders, numbered, rec, leaves))
    return names.real(plan.release(source, person, items, published, kept))
