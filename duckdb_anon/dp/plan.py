"""The SQL of a differentially private aggregate, written once and generated for each engine by sqlglot.

The text reads internal names only: the relation ``__dp_source`` with the columns ``__anon_unit`` (the
person), ``__anon_group`` (the group key, one value: a struct of the group columns) and ``__anon_value``
(the value summed or averaged, DOUBLE, NULL rows already left out), and ``__dp_public`` (column
``__anon_group``: the groups given in advance, if any). Arguments appear as placeholders ``__p_<name>``:
for DuckDB they become the parameters of the macro generated at install time, for Spark validated
literals. User input never enters the text.

The rules, each stated once here:

- contribution bounding: per person at most ``max_groups`` groups, chosen by an MD5 order keyed by a key
  that is fresh per query on the publishing path (so the choice is random per person, not by row order),
  and per person and group at most ``max_rows`` rows, chosen the same way; values clamped to [lo, hi];
- per group three bounded aggregates: ``persons`` (distinct people; changes by at most 1 when one person
  leaves), ``rows`` (by at most max_rows) and ``nsum``, the sum of clamped values minus the midpoint of
  [lo, hi] (by at most max_rows * (hi - lo) / 2); one person touches at most max_groups groups;
- the mechanisms released: persons (for count_distinct, for partition selection, and for count when
  max_rows = 1, where rows = persons), rows (count with max_rows > 1) and nsum (sum and avg);
  epsilon is split equally among the mechanisms used; with Gaussian noise delta too, a share going to
  partition selection; with Laplace noise all of delta goes to partition selection;
- Laplace scale = max_groups * sensitivity / epsilon_share; Gaussian sigma from OpenDP's calibration for
  L2 sensitivity sqrt(max_groups) * sensitivity (see noise.py);
- partition selection (no public groups): a group is released when its noisy person count reaches
  1 + scale * ln(max_groups / (2 delta)) (Laplace) or 1 + sigma * Phi^-1(1 - delta / max_groups) (Gaussian):
  a group that exists only through one person then appears with probability at most delta / max_groups,
  so at most delta over the person's max_groups groups;
- count = noisy rows (or persons), sum = noisy nsum + mid * count, avg = mid + noisy nsum / max(count, 1)
  clamped to [lo, hi]; each with a confidence interval for the noise: value +- the quantile of the noise
  (two noises at half the error rate each, by the union bound, for sum and avg).
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp

#: what dp_aggregate() can release, and the columns each adds to the result
AGGREGATES = ("count", "count_distinct", "sum", "avg")
PARAMETERS = ("epsilon", "delta", "max_groups", "max_rows", "lo", "hi", "noise", "aggregates", "public", "key",
              "confidence")

_BOUNDED = """
src AS (
    SELECT __anon_unit AS u, __anon_group AS g, __anon_value AS v FROM __dp_source
    WHERE __anon_unit IS NOT NULL AND (NOT __p_public OR __anon_group IN (SELECT __anon_group FROM __dp_public))),
settings AS (SELECT coalesce(__p_key, CAST(uuid() AS VARCHAR)) AS key),
keyed AS (
    SELECT u, g, v, md5(concat(s.key, '|', CAST(u AS VARCHAR), '|', CAST(g AS VARCHAR))) AS group_key,
           md5(concat(s.key, '|', CAST(v AS VARCHAR))) AS row_key
    FROM src CROSS JOIN settings s),
ranked AS (
    SELECT u, g, v, dense_rank() OVER (PARTITION BY u ORDER BY group_key, g) AS group_rank,
           row_number() OVER (PARTITION BY u, g ORDER BY row_key, v) AS row_rank
    FROM keyed),
bounded AS (
    SELECT u, g, least(greatest(v, __p_lo), __p_hi) AS v FROM ranked
    WHERE group_rank <= __p_max_groups AND row_rank <= __p_max_rows),
aggregates AS (
    SELECT g, count(DISTINCT u) AS persons, count(*) AS rows, sum(v - (__p_lo + __p_hi) / 2.0) AS nsum
    FROM bounded GROUP BY g)"""


def _scale(sensitivity: str) -> str:
    """The noise scale of a mechanism whose per-group sensitivity is `sensitivity`."""
    return (f"CASE WHEN __p_noise = 'laplace' THEN __p_max_groups * ({sensitivity}) / eps_each "
            f"ELSE anon_dp_gaussian_sigma(eps_each, delta_each, sqrt(__p_max_groups) * ({sensitivity})) END")


def _half_width(scale: str, alpha: str) -> str:
    """Half the width of the interval holding the noise of `scale` with probability 1 - `alpha`."""
    return (f"CASE WHEN __p_noise = 'laplace' THEN {scale} * ln(1.0 / ({alpha})) "
            f"ELSE {scale} * anon_dp_normal_quantile(1.0 - ({alpha}) / 2.0) END")


_HAS = "list_contains(__p_aggregates, '{}')"
_COUNTED = f"({_HAS.format('count')} OR {_HAS.format('sum')} OR {_HAS.format('avg')})"
_VALUED = f"({_HAS.format('sum')} OR {_HAS.format('avg')})"
_MECHANISMS = "(CAST(use_p AS INT) + CAST(use_r AS INT) + CAST(use_s AS INT))"

_NOISY = f"""
flags AS (
    SELECT {_HAS.format('count_distinct')} OR NOT __p_public OR ({_COUNTED} AND __p_max_rows = 1) AS use_p,
           {_COUNTED} AND __p_max_rows > 1 AS use_r, {_VALUED} AS use_s, NOT __p_public AS selecting),
budget AS (
    SELECT *, __p_epsilon / {_MECHANISMS} AS eps_each,
           CASE WHEN __p_noise = 'gaussian' THEN __p_delta / ({_MECHANISMS} + CAST(selecting AS INT)) ELSE 0.0 END AS delta_each,
           CASE WHEN NOT selecting THEN 0.0 WHEN __p_noise = 'gaussian' THEN __p_delta / ({_MECHANISMS} + 1)
                ELSE __p_delta END AS delta_select
    FROM flags),
scales AS (
    SELECT *, CASE WHEN use_p THEN {_scale('1.0')} END AS scale_p,
           CASE WHEN use_r THEN {_scale('__p_max_rows')} END AS scale_r,
           CASE WHEN use_s THEN {_scale('__p_max_rows * (__p_hi - __p_lo) / 2.0')} END AS scale_s
    FROM budget),
spent AS (
    SELECT *, CASE WHEN NOT selecting THEN NULL WHEN __p_noise = 'laplace' THEN 1.0 + scale_p * ln(__p_max_groups / (2.0 * delta_select))
                   ELSE 1.0 + scale_p * anon_dp_normal_quantile(1.0 - delta_select / __p_max_groups) END AS threshold,
           CASE WHEN use_r THEN scale_r ELSE scale_p END AS scale_c
    FROM scales),
candidates AS (
    SELECT g, persons, rows, nsum FROM aggregates WHERE NOT __p_public
    UNION ALL
    SELECT p.__anon_group, coalesce(a.persons, 0), coalesce(a.rows, 0), coalesce(a.nsum, 0.0)
    FROM (SELECT DISTINCT __anon_group FROM __dp_public) p LEFT JOIN aggregates a ON a.g = p.__anon_group
    WHERE __p_public),
noisy AS (
    SELECT c.g, anon_dp_noise(CAST(c.persons AS DOUBLE), s.scale_p, __p_noise) AS np,
           anon_dp_noise(CAST(c.rows AS DOUBLE), s.scale_r, __p_noise) AS nr,
           anon_dp_noise(c.nsum, s.scale_s, __p_noise) AS ns
    FROM candidates c CROSS JOIN spent s),
released AS (
    SELECT n.g, n.np, n.ns, CASE WHEN s.use_r THEN n.nr ELSE n.np END AS nc,
           {_half_width('s.scale_p', '1.0 - __p_confidence')} AS hp,
           {_half_width('s.scale_c', '1.0 - __p_confidence')} AS hc,
           {_half_width('s.scale_c', '(1.0 - __p_confidence) / 2.0')} AS hc2,
           {_half_width('s.scale_s', '(1.0 - __p_confidence) / 2.0')} AS hs2
    FROM noisy n CROSS JOIN spent s
    WHERE NOT s.selecting OR n.np >= s.threshold),
result AS (
    SELECT g AS __anon_group, nc AS "count", nc - hc AS count_ci_low, nc + hc AS count_ci_high,
           np AS count_distinct, np - hp AS count_distinct_ci_low, np + hp AS count_distinct_ci_high,
           ns + mid * nc AS "sum", ns + mid * nc - (hs2 + abs(mid) * hc2) AS sum_ci_low,
           ns + mid * nc + (hs2 + abs(mid) * hc2) AS sum_ci_high,
           least(greatest(mid + ns / greatest(nc, 1.0), __p_lo), __p_hi) AS "avg",
           CASE WHEN nc - hc2 > 0 THEN greatest(mid + least((ns - hs2) / (nc - hc2), (ns - hs2) / (nc + hc2)), __p_lo)
                ELSE __p_lo END AS avg_ci_low,
           CASE WHEN nc - hc2 > 0 THEN least(mid + greatest((ns + hs2) / (nc - hc2), (ns + hs2) / (nc + hc2)), __p_hi)
                ELSE __p_hi END AS avg_ci_high
    FROM (SELECT *, (__p_lo + __p_hi) / 2.0 AS mid FROM released))"""


def columns(aggregates) -> list[str]:
    """The result's value columns for `aggregates`, in their order."""
    return [f"{a}{suffix}" for a in AGGREGATES if a in aggregates for suffix in ("", "_ci_low", "_ci_high")]


def render(text: str, dialect: str, parameters: dict[str, exp.Expression], **tables: exp.Expression) -> str:
    """Parse DuckDB-dialect `text`, replace each ``__p_<name>`` by `parameters[name]` and each table named in
    `tables` by its relation, and write it in `dialect`."""
    tree = sqlglot.parse_one(text, read="duckdb")

    def substitute(node):
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__p_"):
            return parameters[node.name[4:]].copy()
        if isinstance(node, exp.Table) and node.name in tables and not node.db:
            return exp.alias_(tables[node.name].copy(), node.alias or node.name, table=True)
        return node

    return tree.transform(substitute).sql(dialect)


def bounded_query() -> str:
    """Per group (``__anon_group``) the bounded, un-noised aggregates persons, rows and nsum."""
    return f"WITH {_BOUNDED} SELECT g AS __anon_group, persons, rows, nsum FROM aggregates"


def released_query() -> str:
    """Per released group the noisy aggregates and their intervals (every aggregate's columns)."""
    return f"WITH {_BOUNDED}, {_NOISY} SELECT * FROM result"


def delta_spent(noise: str, delta: float, public: bool) -> float:
    """The delta a release spends: none with Laplace noise on public groups (only partition selection and
    Gaussian noise use delta, and they use all of it)."""
    return 0.0 if noise == "laplace" and public else float(delta)
