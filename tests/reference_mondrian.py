"""A deliberately plain Python Mondrian, written from the paper's rules, used as a test oracle.

It shares no code with the SQL implementation: rows are tuples of sort keys, partitions are lists of
row indexes, and every rule is spelled out as a loop. Slow, but small tables are all the tests need.
"""


def mondrian_reference(keys, k, mode="strict"):
    """Partition rows into equivalence classes.

    keys: list of rows, each a tuple of comparable numbers (one per QI: the value for numeric QIs, the
    category code for categorical ones). Returns a list of classes, each a sorted list of row indexes.
    Dimension choice: widest range normalised by the whole table's range, computed from the partition's
    own values, ties to the earliest QI. Strict: split at the median value, left = values <= median, both
    sides need >= k rows, else the next widest QI. Relaxed: rows equal to the median are shared out so the
    halves hold n//2 and n - n//2 rows; tied rows go left in order of their QI vector, then row order.
    """
    n_qi = len(keys[0]) if keys else 0
    spans = []
    for d in range(n_qi):
        col = [row[d] for row in keys]
        spans.append(max(col) - min(col) if col else 0)
    done, todo = [], [list(range(len(keys)))]
    while todo:
        part = todo.pop()
        halves = _split(part, keys, spans, k, mode)
        if halves is None:
            done.append(sorted(part))
        else:
            todo.extend(halves)
    return sorted(done)


def _width(part, keys, spans, d):
    col = [keys[i][d] for i in part]
    return (max(col) - min(col)) / spans[d] if spans[d] else 0.0


def _split(part, keys, spans, k, mode):
    n = len(part)
    order = sorted(range(len(spans)), key=lambda d: (-_width(part, keys, spans, d), d))
    for d in order:
        values = sorted(keys[i][d] for i in part)
        if len(set(values)) < 2 or n // 2 < k:
            continue
        median = values[n // 2 - 1]  # the value where the running count reaches n//2
        if mode == "strict":
            left = [i for i in part if keys[i][d] <= median]
            right = [i for i in part if keys[i][d] > median]
            if len(left) < k or len(right) < k:
                continue
            return left, right
        below = [i for i in sorted(part) if keys[i][d] < median]
        ties = sorted((i for i in part if keys[i][d] == median), key=lambda i: (keys[i], i))
        above = [i for i in sorted(part) if keys[i][d] > median]
        take = n // 2 - len(below)
        return below + ties[:take], ties[take:] + above
    return None
