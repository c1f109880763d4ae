"""The random walk of pattern-preserving anonymization (Xue, Karras et al., CIKM 2011), in numpy.

Every segment of a column is a point in a polytope: the order chain x_t <= x_{t+1}, the kept locality
constraints (x_j - x_i <= x_k - x_j, or >=), and one box per value, lower_g <= x_g <= upper_g (the paper's
bound vector H; random_walk() gives each value the box of radius r standard deviations around its original
value by default). Each step draws a
direction per segment, finds by a ratio test over the slacks of all constraints the interval
[lambda_min, lambda_max] that keeps the point feasible, and moves by a lambda drawn from it: uniform on the
interval (hit-and-run, the default, which samples the polytope uniformly in the limit) or uniform on
[0, max(0, lambda_max)] (the paper's forward-only rule). All segments move together, vectorized.

Directions: odd steps draw a direction uniformly on each segment's sphere; even steps shift every segment
as a whole (the all-ones direction). A shift keeps every order and locality constraint, so only the boxes
limit it, while a random direction in a segment with many nearly tight localities can move only a hair
(fnlwgt on Adult: 3 units in 1,000 random steps, against segments 23,000 wide). The mixture of
state-independent, symmetric directions, each followed by a uniform draw on the feasible chord, keeps the
uniform distribution on the polytope stationary, boxes included (tests/test_walk.py checks both the ordered
simplex and a boxed one against rejection sampling).

Ties: from a point where values tie (Adult's age repeats each value hundreds of times, so most segments
are one repeated value) almost no random direction is feasible, and hit-and-run would never move. The walk
therefore starts with one step along the rank direction: each value's rank in its segment, centred, while
values at their bounds only move inward. That step is feasible by construction and leaves the values
strictly ordered; the random steps follow.

Rounding can never leave a release infeasible: every `check_every` steps, and at the end, every constraint is
checked in the same form check_localities() uses, and a segment that fails goes back to its last checked
state.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from duckdb_anon.engines.duckdb_engine import create_function

METHODS = ("hit_and_run", "forward")


BLOCKS = 2  # segments are walked in this many independent blocks, in parallel threads (one per core here)


def walk(values, starts, ci, cj, ck, le, lower, upper, iterations, seed, method="hit_and_run", check_every=100):
    """Walk `values` (sorted by segment, then position; segment s starts at starts[s]) and return the new
    values. ci/cj/ck index into `values`; le[c] is True for x_j - x_i <= x_k - x_j, False for >=.
    lower/upper: one bound for every value, one per segment, or one for all (+-inf: no bound).

    Segments never interact, so they are cut into BLOCKS contiguous blocks, each walked with its own random
    stream (seeded by seed and the block number) in a thread pool: numpy releases the GIL for most of the
    work. The blocks do not depend on the number of threads, so neither does the release."""
    x = np.asarray(values, dtype=np.float64).copy()
    starts = np.asarray(starts, dtype=np.int64)
    n, segments = len(x), len(starts)
    if n == 0 or iterations == 0:
        return x
    if method not in METHODS:
        raise ValueError(f"random_walk(): argument 'method' must be one of {METHODS}, got {method!r}")
    lower, upper = (_per_value(b, starts, n) for b in (lower, upper))
    ci, cj, ck = (np.asarray(a, dtype=np.int64) for a in (ci, cj, ck))
    le = np.asarray(le, dtype=bool)
    edges = np.linspace(0, segments, min(BLOCKS, segments) + 1).astype(np.int64)  # segment ranges
    bounds = np.append(starts, n)
    jobs = []
    for b in range(len(edges) - 1):
        first, last = bounds[edges[b]], bounds[edges[b + 1]]  # value range of the block
        mine = (ci >= first) & (ci < last)
        jobs.append((b, first, last, starts[edges[b]:edges[b + 1]] - first, ci[mine] - first, cj[mine] - first,
                     ck[mine] - first, le[mine], lower[first:last], upper[first:last]))

    def run(job):
        b, first, last, *rest = job
        x[first:last] = _walk_block(x[first:last].copy(), *rest, iterations, np.random.default_rng([seed, b]),
                                    method, check_every)

    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        list(pool.map(run, jobs))
    return x


def _per_value(bound, starts, n):
    """A bound given for all values, per segment or per value, as one float per value."""
    b = np.asarray(bound, dtype=np.float64).ravel()
    if b.size == n:
        return b
    if b.size == 1:
        return np.full(n, b[0])
    if b.size == len(starts):
        return np.repeat(b, np.diff(np.append(starts, n)))
    raise ValueError(f"random_walk(): {b.size} bounds for {n} values in {len(starts)} segments")


def _walk_block(x, starts, ci, cj, ck, le, lower, upper, iterations, rng, method, check_every):
    n, segments = len(x), len(starts)
    seg = np.repeat(np.arange(segments), np.diff(np.append(starts, n)))
    # order pair (g, g+1) is attached to g; the last value of a segment has none
    opens = np.append(seg[:-1] == seg[1:], False)
    nxt = np.nonzero(opens)[0]
    sign = np.where(le, 1.0, -1.0)  # a.x <= 0 with a = sign * (-1, 2, -1)
    by_segment = np.argsort(seg[ci], kind="stable")  # localities grouped by segment, for reduceat
    ci, cj, ck, sign = ci[by_segment], cj[by_segment], ck[by_segment], sign[by_segment]
    lseg = seg[ci]
    lstarts = np.nonzero(np.diff(lseg, prepend=-1))[0] if len(lseg) else np.zeros(0, dtype=np.int64)
    lsegs = lseg[lstarts]
    checkpoint = x.copy()
    for step in range(0, iterations + 1):
        if step > 0 and step % 2 == 0:
            # every other step shifts whole segments: a shift leaves every order and locality term unchanged,
            # so only the boxes limit it and the ratio test reduces to two per-segment extremes
            lam_lo = np.minimum(np.maximum.reduceat(lower - x, starts), 0.0)
            lam_hi = np.maximum(np.minimum.reduceat(upper - x, starts), 0.0)
            move = np.ones(n)
        else:
            u = _rank_direction(x, seg, starts, lower, upper) if step == 0 else rng.standard_normal(n)
            norm = np.sqrt(np.add.reduceat(u * u, starts))
            u /= np.where(norm > 0, norm, 1.0)[seg]
            lam_lo, lam_hi = _chord(x, u, starts, opens, ci, cj, ck, sign, lstarts, lsegs, lower, upper)
            # no direction at all (a lone value pinned to its box): the chord is unbounded, and inf * 0 = NaN
            lam_lo[norm == 0], lam_hi[norm == 0] = 0.0, 0.0
            move = u
        if method == "forward" or step == 0:
            lam = lam_hi * rng.random(segments)
        else:
            lam = lam_lo + (lam_hi - lam_lo) * rng.random(segments)
        x += (lam * (1.0 - 1e-12))[seg] * move  # a hair inside, so rounding rarely touches a facet
        if step % check_every == 0 or step == iterations:  # step 0 is checked too
            bad = _violated_segments(x, seg, nxt, ci, cj, ck, sign, lower, upper, segments)
            x[bad[seg]] = checkpoint[bad[seg]]
            checkpoint = x.copy()
    return x


def _chord(x, u, starts, opens, ci, cj, ck, sign, lstarts, lsegs, lower, upper):
    """Per segment, the interval [lam_lo, lam_hi] of steps x + lam*u that keep every constraint: the ratio
    test over the slacks of the bounds, the order pairs and the localities. opens[g]: value g opens an order
    pair (g, g+1), i.e. it is not the last of its segment."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # per value: the bound it runs into going forward (upper if u > 0) and going back
        moving = u != 0
        hi_v = np.where(moving, (np.where(u > 0, upper, lower) - x) / u, np.inf)
        lo_v = np.where(moving, (np.where(u > 0, lower, upper) - x) / u, -np.inf)
        # the order pair it opens, on contiguous slices: x_g + lam u_g <= x_{g+1} + lam u_{g+1}
        du = u[:-1] - u[1:]
        ratio = (x[1:] - x[:-1]) / du
        hi_v[:-1] = np.minimum(hi_v[:-1], np.where(opens[:-1] & (du > 0), ratio, np.inf))
        lo_v[:-1] = np.maximum(lo_v[:-1], np.where(opens[:-1] & (du < 0), ratio, -np.inf))
        lam_hi = np.minimum.reduceat(hi_v, starts)
        lam_lo = np.maximum.reduceat(lo_v, starts)
        if len(ci):
            au_l = sign * (2 * u[cj] - u[ci] - u[ck])
            r_l = sign * (x[ci] - 2 * x[cj] + x[ck]) / au_l
            lam_hi[lsegs] = np.minimum(lam_hi[lsegs], np.minimum.reduceat(np.where(au_l > 0, r_l, np.inf), lstarts))
            lam_lo[lsegs] = np.maximum(lam_lo[lsegs], np.maximum.reduceat(np.where(au_l < 0, r_l, -np.inf), lstarts))
    return np.minimum(lam_lo, 0.0), np.maximum(lam_hi, 0.0)  # the current point is feasible


def _rank_direction(x, seg, starts, lower, upper):
    """Each value's centred rank in its segment; values tied at a domain bound move only inward, in rank
    order, so the first (last) of them stays on the bound and the rest come off it."""
    sizes = np.diff(np.append(starts, len(x)))
    pos = np.arange(len(x)) - starts[seg]
    v = pos - (sizes[seg] - 1) / 2.0
    at_low, at_high = x <= lower, x >= upper
    low_rank = np.cumsum(at_low) - np.maximum.accumulate(np.where(~at_low, np.cumsum(at_low), 0))
    high_rank = _reverse_run_rank(at_high)
    v = np.where(at_low, low_rank - 1.0, v)
    v = np.where(at_high & ~at_low, -(high_rank - 1.0), v)
    return v


def _reverse_run_rank(flags):
    """For runs of True, the position counted from the run's end (1 = last of the run); 0 elsewhere."""
    rev = flags[::-1]
    run = np.cumsum(rev) - np.maximum.accumulate(np.where(~rev, np.cumsum(rev), 0))
    return run[::-1]


def _violated_segments(x, seg, nxt, ci, cj, ck, sign, lower, upper, segments):
    """Segments breaking any constraint, tested exactly as check_localities() tests a release."""
    bad = np.zeros(segments, dtype=bool)
    bad[seg[(x < lower) | (x > upper)]] = True
    bad[seg[nxt][~(x[nxt] <= x[nxt + 1])]] = True
    left, right = x[cj] - x[ci], x[ck] - x[cj]
    ok = np.where(sign > 0, left <= right, left >= right)
    bad[seg[ci][~ok]] = True
    return bad


def _udf(values, starts, ci, cj, ck, le, lower, upper, iterations, seed, method):
    """The vectorized UDF body: one walk per row of its arguments."""
    import pyarrow as pa

    out = []
    for r in range(len(values)):
        res = walk(*(a[r].values.to_numpy(zero_copy_only=False) for a in (values, starts, ci, cj, ck, le, lower, upper)),
                   iterations[r].as_py(), seed[r].as_py(), method[r].as_py())
        out.append(res)
    return pa.array(out, type=pa.list_(pa.float64()))


def register(con) -> None:
    """Register the kernel as the vectorized (arrow) scalar UDF anon_random_walk on `con`.

    Connections of one process to the same database file share one database instance and its functions:
    a second connection finds the function registered already, by the first, and uses it."""
    create_function(con, "anon_random_walk", _udf,
                    ["DOUBLE[]", "BIGINT[]", "BIGINT[]", "BIGINT[]", "BIGINT[]", "BOOLEAN[]",
                     "DOUBLE[]", "DOUBLE[]", "BIGINT", "BIGINT", "VARCHAR"], "DOUBLE[]",
                    type="arrow", side_effects=False)
