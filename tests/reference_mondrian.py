"""A deliberately plain Python Mondrian, written from the papers' rules, used as a test oracle.

It shares no code with the SQL implementation: rows are tuples of sort keys, partitions are lists of
row indexes, and every rule is spelled out as a loop. Slow, but small tables are all the tests need.
"""
import math
from collections import Counter


def mondrian_reference(keys, k, mode="strict", hierarchies=None, sensitive=None, model=None, max_suppression=0.0,
                       suppressed=None):
    """Partition rows into equivalence classes.

    keys: list of rows, each a tuple with one entry per QI: a number for numeric QIs (the value, or the
    category code), or for a QI listed in `hierarchies` the leaf value itself. Returns a list of classes,
    each a sorted list of row indexes.
    Dimension choice: widest range normalised by the whole table's range, computed from the partition's
    own values, ties to the earliest QI; a hierarchical QI's width is the share of the hierarchy's leaves
    under the lowest node covering the partition's leaves (0 for a single leaf). Strict: split at the
    median value, left = values <= median, both sides need >= k rows, else the next widest QI. Relaxed:
    rows equal to the median are shared out so the halves hold n//2 and n - n//2 rows; tied rows go left
    in order of their QI vector, then row order. A hierarchical QI splits into the children of that node,
    every non-empty child needing >= k rows.
    hierarchies: {qi position: {leaf: path from the leaf to the root}}. sensitive: one value per row;
    model: {'l', 'l_kind', 'c', 't'} (None = not asked): every side of a cut must satisfy it.
    max_suppression: the root may suppress floor(f * rows); a cut whose failing sides (under k rows or the
    model) fit the partition's budget, beside at least one good side, suppresses them, and the good sides
    share what is left of the budget in proportion to their rows. Suppressed rows are appended to the
    list `suppressed` when one is given.
    """
    hierarchies = hierarchies or {}
    n_qi = len(keys[0]) if keys else 0
    spans = []
    for d in range(n_qi):
        col = [row[d] for row in keys]
        spans.append(0 if d in hierarchies or not col else max(col) - min(col))
    check = _model_check(sensitive, model) if model else (lambda rows: True)
    checked = bool(hierarchies) or model is not None
    done, todo = [], [(list(range(len(keys))), math.floor(max_suppression * len(keys)))]
    while todo:
        part, budget = todo.pop()
        pieces = _split(part, keys, spans, k, mode, hierarchies, check, budget, checked)
        if pieces is None:
            done.append(sorted(part))
            continue
        good = [g for g in pieces if len(g) >= k and check(g)]
        failing = [i for g in pieces if g not in good for i in g]
        if suppressed is not None:
            suppressed.extend(failing)
        good_rows = sum(len(g) for g in good)
        todo.extend((g, math.floor((budget - len(failing)) * len(g) / good_rows)) for g in good)
    return sorted(done)


def covering_node(hierarchy, leaves):
    """The root-first path of the lowest node above all `leaves` (their longest common root-first prefix)."""
    paths = [list(reversed(hierarchy[leaf])) for leaf in leaves]
    prefix = []
    for names in zip(*paths):
        if len(set(names)) > 1:
            break
        prefix.append(names[0])
    return prefix


def leaves_under(hierarchy, prefix):
    return sum(1 for path in hierarchy.values() if list(reversed(path))[:len(prefix)] == prefix)


def hierarchy_width(hierarchy, leaves):
    if len(set(leaves)) < 2:
        return 0.0
    return leaves_under(hierarchy, covering_node(hierarchy, leaves)) / len(hierarchy)


def _width(part, keys, spans, d, hierarchies):
    col = [keys[i][d] for i in part]
    if d in hierarchies:
        return hierarchy_width(hierarchies[d], col)
    return (max(col) - min(col)) / spans[d] if spans[d] else 0.0


def _cut_allowed(pieces, k, check, budget):
    """All pieces good (k rows and the model), or some good and the rest within the suppression budget."""
    good = [len(g) >= k and check(g) for g in pieces]
    failing = sum(len(g) for g, ok in zip(pieces, good) if not ok)
    return all(good) or (any(good) and failing <= budget)


def _split(part, keys, spans, k, mode, hierarchies, check, budget=0, checked=False):
    n = len(part)
    order = sorted(range(len(spans)), key=lambda d: (-_width(part, keys, spans, d, hierarchies), d))
    for d in order:
        if d in hierarchies:
            leaves = {keys[i][d] for i in part}
            if len(leaves) < 2:
                continue
            depth = len(covering_node(hierarchies[d], leaves))
            groups = {}
            for i in part:
                child = list(reversed(hierarchies[d][keys[i][d]]))[depth]
                groups.setdefault(child, []).append(i)
            if _cut_allowed(list(groups.values()), k, check, budget):
                return list(groups.values())
            continue
        values = sorted(keys[i][d] for i in part)
        if len(set(values)) < 2 or (n // 2 < k and not budget):
            continue
        median = values[n // 2 - 1]  # the value where the running count reaches n//2
        if mode == "strict":
            left = [i for i in part if keys[i][d] <= median]
            right = [i for i in part if keys[i][d] > median]
            both = len(left) >= k and len(right) >= k
            if not right or not (both or (budget > 0 and (len(left) >= k or len(right) >= k))):
                continue
            if (checked or budget > 0) and not _cut_allowed([left, right], k, check, budget):
                continue
            return left, right
        below = [i for i in sorted(part) if keys[i][d] < median]
        ties = sorted((i for i in part if keys[i][d] == median), key=lambda i: (_sortable(keys[i], hierarchies), i))
        above = [i for i in sorted(part) if keys[i][d] > median]
        take = n // 2 - len(below)
        return below + ties[:take], ties[take:] + above
    return None


def _sortable(row, hierarchies):
    """A row's QI vector as a sort key; a hierarchical QI sorts by its leaf's path read from the root."""
    return tuple(tuple(reversed(hierarchies[d][v])) if d in hierarchies else v for d, v in enumerate(row))


def _model_check(sensitive, model):
    """A function telling whether a group of rows satisfies l-diversity / t-closeness as asked."""
    table = Counter(sensitive)
    order = sorted(table, key=lambda v: (v is None, v))
    numeric = all(isinstance(v, (int, float)) for v in table if v is not None)

    def holds(rows):
        counts = Counter(sensitive[i] for i in rows)
        if model.get("l") is not None:
            if diversity(counts, model.get("l_kind", "distinct"), model.get("c", 2)) < model["l"] - 1e-9:
                return False
        if model.get("t") is not None:
            if emd(counts, table, order, numeric) > model["t"] + 1e-12:
                return False
        return True
    return holds


def diversity(counts, kind, c=2):
    """l of a group by one definition: distinct values; exp(entropy); largest l of recursive (c, l)."""
    if kind == "distinct":
        return len(counts)
    n = sum(counts.values())
    if kind == "entropy":
        return math.exp(-sum(v / n * math.log(v / n) for v in counts.values()))
    r = sorted(counts.values(), reverse=True)
    return max((l for l in range(1, len(r) + 1) if r[0] < c * sum(r[l - 1:])), default=0)


def emd(counts, table, order, numeric):
    """Earth mover's distance between a group's and the table's distributions."""
    n, total = sum(counts.values()), sum(table.values())
    diffs = [counts.get(v, 0) / n - table[v] / total for v in order]
    if not numeric:
        return 0.5 * sum(abs(x) for x in diffs)
    if len(order) < 2:
        return 0.0
    running, acc = 0.0, 0.0
    for x in diffs:
        running += x
        acc += abs(running)
    return acc / (len(order) - 1)
