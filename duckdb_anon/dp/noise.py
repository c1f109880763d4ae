"""The noise of the DP aggregates: OpenDP's samplers, called once per batch from a vectorized UDF.

Why OpenDP: its Laplace and Gaussian samplers draw discretized noise from the operating system's secure
generator, exactly (no floating-point sampling of a continuous law, which leaks through the low bits of
the result). They are never seeded, so a release cannot be reproduced: determinism, which every other
function of this package keeps, does not apply to DP noise.

Four functions (UDFS), registered on each connection by install() and as Spark UDFs by dp.spark, each
engine registering them its way (Engine.register_udfs):

- ``anon_dp_noise(x, scale, kind)``: x plus Laplace(scale) or Gaussian(sigma = scale) noise; NULL when x or
  scale is NULL; x itself when scale is 0. Batches: the values of one (scale, kind) go to one call.
- ``anon_dp_gaussian_sigma(epsilon, delta, l2)``: the smallest sigma (to 0.1 %) that OpenDP's accounting
  proves (epsilon, delta)-DP for a Gaussian mechanism of L2 sensitivity l2 (its zCDP to approximate DP
  conversion).
- ``anon_dp_normal_quantile(p)``: the standard normal quantile, for Gaussian thresholds and intervals.
- ``anon_dp_noisy_max(scores, scale)``: OpenDP's report-noisy-max over a list of {'i': candidate, 's':
  score} (the exponential mechanism that chooses bounds); the winner's i.
"""
from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist

import duckdb
import numpy as np

from duckdb_anon.engines.base import Udf
from duckdb_anon.engines.duckdb_engine import register_udfs

KINDS = ("laplace", "gaussian")


@lru_cache(maxsize=1)
def _opendp():
    """OpenDP's prelude, imported when noise is first needed rather than by every connection."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@lru_cache(maxsize=256)
def _measurement(kind: str, scale: float):
    """OpenDP's vector measurement adding `kind` noise of `scale` to each value."""
    dp = _opendp()
    if kind == "laplace":
        return dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=scale)
    if kind == "gaussian":
        return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), scale=scale)
    raise ValueError(f"anon_dp_noise(): argument 'kind' must be one of {KINDS}, got {kind!r}")


def add_noise(values: np.ndarray, scales: np.ndarray, kinds: list) -> np.ndarray:
    """values + noise, element by element; NaN where a value or scale is missing (NaN)."""
    out = np.full(len(values), np.nan)
    live = ~(np.isnan(values) | np.isnan(scales))
    kinds = np.asarray(kinds, dtype=object)
    for kind in set(kinds[live].tolist()):
        for scale in np.unique(scales[live & (kinds == kind)]):
            chosen = live & (kinds == kind) & (scales == scale)
            if scale < 0:
                raise ValueError(f"anon_dp_noise(): argument 'scale' must be >= 0, got {scale}")
            out[chosen] = values[chosen] if scale == 0 else _measurement(kind, float(scale))(values[chosen].tolist())
    return out


def _zcdp_epsilon(sigma: float, delta: float, l2: float) -> float:
    """The epsilon OpenDP proves at `delta` for Gaussian noise `sigma` on L2 sensitivity `l2`."""
    dp = _opendp()
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    profile = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=sigma))
    return dp.c.make_fix_delta(profile, delta).map(l2)[0]


@lru_cache(maxsize=256)
def gaussian_sigma(epsilon: float, delta: float, l2: float) -> float:
    """The smallest sigma (within 0.1 %) for which OpenDP proves (epsilon, delta)-DP at L2 sensitivity l2."""
    if l2 == 0:
        return 0.0
    lo, hi = l2 * 1e-3, l2 * 1.0
    while _zcdp_epsilon(hi, delta, l2) > epsilon:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _zcdp_epsilon(mid, delta, l2) > epsilon else (lo, mid)
    return hi


@lru_cache(maxsize=64)
def _noisy_max(scale: float):
    """OpenDP's report-noisy-max (the exponential mechanism) over scores that one person moves by at most 1
    each, in any direction: epsilon = 2 / scale."""
    dp = _opendp()
    return dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float),
                               dp.max_divergence(), scale=scale)


def noisy_max(scores: list | None, scale: float | None) -> int | None:
    """The candidate (its `i`) whose score `s` wins after OpenDP's noise of `scale`, from a list of
    {'i', 's'} in any order (engines collect lists in no set order); NULL for NULL input."""
    if scores is None or scale is None or not scores:
        return None
    pairs = sorted((int(p["i"]), float(p["s"])) for p in scores)
    return pairs[_noisy_max(float(scale))([s for _, s in pairs])][0]


def normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


#: the four functions as the engines register them (duckdb_anon.engines: DuckDBEngine, SparkEngine)
UDFS = (Udf("anon_dp_noise", add_noise, ("DOUBLE", "DOUBLE", "VARCHAR"), "DOUBLE", batch=True, fresh=True),
        Udf("anon_dp_gaussian_sigma", gaussian_sigma, ("DOUBLE",) * 3, "DOUBLE"),
        Udf("anon_dp_normal_quantile", normal_quantile, ("DOUBLE",), "DOUBLE"),
        Udf("anon_dp_noisy_max", noisy_max, ("STRUCT(i INTEGER, s DOUBLE)[]", "DOUBLE"), "BIGINT", fresh=True))


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register the four functions on `con` (install() does, through duckdb_anon.udfs)."""
    register_udfs(con, UDFS)
