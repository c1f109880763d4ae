"""The SQL of a differentially private aggregate, written once and rendered for each engine by render() below.

The text reads internal names only: the relation ``__dp_source`` with the columns ``__anon_unit`` (the
person), ``__anon_group`` (the group key, one value: a struct of the group columns) and ``__anon_value``
(the value summed or averaged, DOUBLE, NULL rows already left out), and ``__dp_public`` (column
``__anon_group``: the groups given in advance, if any). Arguments appear as placeholders ``__p_<name>``: in
the DuckDB macros (dp.macros(), text install() creates) the macros' parameters; in dp.bounded_aggregates()
(run by DuckDBEngine) and on Spark (dp.spark, run by SparkEngine) literals of checked values
(engines.base.literal). User input never enters the text.

The rules, each stated once here:

- contribution bounding: per person at most ``max_groups`` groups, chosen in the order of a hash of a key
  and the (person, group) pair, the key fresh per query on the publishing path (so the choice is random per
  person, not by row order), and per person and group at most ``max_rows`` rows, chosen the same way;
  values clamped to [lo, hi];
- per group three bounded aggregates: ``persons`` (distinct people; changes by at most 1 when one person
  leaves), ``rows`` (by at most max_rows) and ``nsum``, the sum of clamped values minus the midpoint of
  [lo, hi] (by at most max_rows * (hi - lo) / 2); one person touches at most max_groups groups;
- the budget, when a bound is left to choose: first PEOPLE_SHARE of epsilon on a noisy count of people
  (Laplace, sensitivity 1: one person changes the count by 1); then the epsilon of each choice is a fixed
  function of that noisy count (choice_epsilon(): what its exponential mechanism needs for a rank error of
  RANK_ERROR times the count, at most M_SHARE or RANGE_SHARE of epsilon), and the aggregates get the rest.
  Why it stays epsilon-DP: the parts run in sequence, each later part's epsilon a function of the earlier
  parts' outputs only (post-processing), and whatever those outputs are the parts add up to exactly epsilon
  (the people count's share is fixed; the aggregates get epsilon less what was spent before them).
  Sequential composition holds for parameters chosen adaptively when their sum is bounded by a fixed total
  (a privacy filter; for pure DP, and for (epsilon, delta) with basic composition, the accounting used
  here: the deltas are fixed, only the split of epsilon adapts, and Gaussian sigmas are calibrated per
  part to its (epsilon, delta));
- the mechanisms released: persons (for count_distinct, for partition selection, and for count when
  max_rows = 1, where rows = persons), rows (count with max_rows > 1), nsum (sum and avg), the median;
  epsilon, less what the people count and choosing max_groups spent, is split equally among the mechanisms
  used; what choosing the range spent is paid by the mechanisms that read the values (nsum, the median;
  by all when none is asked), so that choosing it releases no fewer groups; with Gaussian noise delta is
  split too (among those that add noise: not the median), a share going to partition selection; with
  Laplace noise all of delta goes to partition selection;
- Laplace scale = max_groups * sensitivity / epsilon_share; Gaussian sigma from OpenDP's calibration for
  L2 sensitivity sqrt(max_groups) * sensitivity (see noise.py);
- partition selection (no public groups): a group is released when its noisy person count reaches
  1 + scale * ln(max_groups / (2 delta)) (Laplace) or 1 + sigma * Phi^-1(1 - delta / max_groups) (Gaussian):
  a group that exists only through one person then appears with probability at most delta / max_groups,
  so at most delta over the person's max_groups groups;
- max_groups left to choose, with partition selection and Laplace noise: per candidate m, E(m) = the sum
  over groups of P(kept_g(m) + Laplace(b_m) >= threshold_m), the expected number of groups released, where
  kept_g(m) is the group's people when each keeps m groups (in the key's order). One person changes
  kept_g(m) by 1 in at most m groups, and P moves by at most 1 / (2 b_m) = eps_each / (2 m) per unit, so E(m)
  moves by at most eps_each / 2, for every m. The score of m is min(f(m), -max over m' > m of f(m')) with
  f = E - T, T = max(M_RELEASED * max E, max E - min(M_SLACK * sqrt(max E + 1), M_NOISE * eps_each / eps_m)):
  high for the largest m expected to release nearly the most groups: within M_SLACK standard deviations of a
  count of max E, or within M_NOISE noise scales of this choice (eps_each / eps_m groups) when that is
  less, as the budget grows the fewer the people are, and finer than its noise no choice resolves; or
  M_RELEASED of max E when it is small. T grows with max E at a slope in [0, 1] (M_SLACK = 2; the noise
  term is fixed once the noisy count of people is), so when a
  person leaves E(m) and T both fall by at most eps_each / 2 and f moves by at most that; report-noisy-max
  with scale 2 * (eps_each / 2) / eps_m, over scores less M_PRIOR noise scales times ln(1 + m / typical):
  a base measure (1 + m / typical)^-M_PRIOR, data-independent (typical: M_TYPICAL, or the noisy count of
  people over M_PEOPLE when smaller, at least 1: a function of a released figure), that decides when the
  data cannot (a few groups released whatever m, where noise would otherwise pick any of the grid, most of
  it m that release nothing);
- the value range left to choose: first a center, the grid point nearest the people's values (one value
  each) in grid steps, each person's distance clipped at CENTER_STEPS (score: minus the sum of the clipped
  distances over CENTER_STEPS, moved by at most 1 per person); then min_value among the points at or below
  the center, max_value among those at or above, each scored as its quantile (LO_LEVEL, HI_LEVEL) and
  preferred RANGE_PRIOR scales per step nearer the center. Beyond the data every point scores alike (no
  rank tells them apart): the preference takes the point nearest the data among those tied, and the
  center keeps it from running past the data when the people are too few for any rank to count;
- the median: one of MEDIAN_POINTS evenly spaced points of [lo, hi], by report-noisy-max over scores
  (minus how far a point is from splitting the group's values in half) that one person moves by max_rows
  in each of max_groups groups: scale 2 * max_rows * max_groups / epsilon_share, no delta;
- count = noisy rows (or persons), sum = noisy nsum + mid * count, avg = mid + noisy nsum / max(count, 1)
  clamped to [lo, hi]; each with a confidence interval for the noise: value +- the quantile of the noise
  (two noises at half the error rate each, by the union bound, for sum and avg).
"""
from __future__ import annotations

from sqlglot import exp

from duckdb_anon.engines.base import render as engine_render

#: what dp_aggregate() can release, and the columns each adds to the result
AGGREGATES = ("count", "count_distinct", "sum", "avg", "median")
#: the median is chosen among this many evenly spaced points of [min_value, max_value]
MEDIAN_POINTS = 64
PARAMETERS = ("epsilon", "delta", "max_groups", "max_rows", "lo", "hi", "valued", "noise", "aggregates", "public", "key",
              "confidence")

#: bounds the user leaves out are chosen by the exponential mechanism, each from a fixed grid of candidates:
#: max_groups spending M_SHARE of epsilon, when groups are selected with Laplace noise as the largest
#: candidate expected to release nearly the most groups any candidate would (fewer groups dropped per
#: person: less bias), else at the median of the people's group counts; the value range spending
#: RANGE_SHARE of epsilon, CENTER_SHARE of it on a center and the rest split between min_value and
#: max_value, at the 5th and 95th percentiles of one value drawn per person
M_SHARE, RANGE_SHARE, CENTER_SHARE = 0.1, 0.15, 0.3
#: the budget adapts to the data's size: PEOPLE_SHARE of epsilon buys a noisy count of people (Laplace,
#: sensitivity 1) before anything else; each choice then spends what its exponential mechanism needs to land,
#: with probability 1 - CHOICE_BETA, within a rank error of RANK_ERROR[choice] times that count of the best
#: candidate (choice_epsilon()), M_SHARE and RANGE_SHARE of epsilon at most
PEOPLE_SHARE, CHOICE_BETA = 0.01, 0.05
RANK_ERROR = {"max_groups": 0.001, "range": 0.01}
M_LEVEL, LO_LEVEL, HI_LEVEL = 0.5, 0.05, 0.95
M_RELEASED, M_SLACK, M_NOISE = 0.75, 2.0, 4.5
#: the data-independent preferences that break ties, in noise scales: toward max_groups of a typical m or less
#: (M_PRIOR times ln(1 + m / typical)), toward the center for the range (RANGE_PRIOR per grid step). The
#: typical m is M_TYPICAL, or one per M_PEOPLE people of the noisy count when fewer (at least 1): with few
#: people a few groups at most clear the threshold whatever m, every candidate scores within the noise, and
#: the smallest m release the most (the threshold grows as m ln m, a group's kept people as m)
M_PRIOR, M_TYPICAL, M_PEOPLE, RANGE_PRIOR = 2.0, 10.0, 2000.0, 1.5
CENTER_STEPS = 10
M_GRID = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000)
V_GRID = tuple(sorted({0.0} | {sign * m * 10.0 ** k for sign in (-1, 1) for m in (1, 2, 5) for k in range(-3, 7)}))


def _grid(values) -> str:
    return "SELECT * FROM (VALUES " + ", ".join(f"({i}, {v!r})" for i, v in enumerate(values)) + ") AS t(i, c)"


def choice_epsilon(choice: str, people: str = "people_noisy") -> str:
    """SQL: the epsilon spent choosing `choice` ('max_groups' or 'range'), a data-independent function of the
    noisy count of people `people` (SQL), decreasing in it, at most its share of epsilon.

    Why this rule: report-noisy-max at scale 2 / eps over K candidates picks, with probability 1 - beta, a
    candidate whose score is within 2 ln(K / beta) / eps of the best. A score that one person moves by at most
    1 is a rank: the choice is then within rho * n people of the best rank when eps = 2 ln(K / beta) / (rho n).
    Many people make a quantile accurate at a small epsilon; few need more than the cap allows, and get the
    cap (M_SHARE, RANGE_SHARE). The range's smallest part, CENTER_SHARE of it, must reach that accuracy
    (the min and max get more). For max_groups under partition selection the score counts groups released,
    moved by eps_each / 2 per person: rho n people are rho n eps_each / 2 groups (57 at 232,350 people and
    epsilon 1), of the order of the rule's tolerance of M_NOISE noise scales (44 groups there).
    """
    if choice == "max_groups":
        cap, candidates, part = M_SHARE, len(M_GRID), 1.0
    else:
        cap, candidates, part = RANGE_SHARE, len(V_GRID), min(CENTER_SHARE, (1 - CENTER_SHARE) / 2)
    needed = f"2.0 * ln({candidates} / {CHOICE_BETA}) / ({part * RANK_ERROR[choice]!r} * greatest(coalesce({people}, 1.0), 1.0))"
    return f"least(__p_epsilon * {cap}, {needed})"


def _scores(column: str, level: float, grid: str, keep: str = "true", prior: str = "0.0") -> str:
    """The exponential mechanism's score of each candidate c of `grid` as the `level` quantile of `column`
    (one value per person, n of them): minus how far c is from being one, max(level * n - #(x <= c),
    #(x < c) - level * n, 0), so that a value many people share scores 0 (ties are common: ratings).
    One person moves each score by at most 1, so noisy max with scale 2 / epsilon is epsilon-DP. Only the
    candidates where `keep` holds, each score plus `prior` (data-independent), both over the candidate's
    index i and the columns of ``range_center``."""
    n = f"count(p.{column})"
    return (f"SELECT list({{'i': i, 's': score + {prior}}}) AS scores FROM (SELECT g.i, -greatest({level} * {n} - count_if(p.{column} <= g.c), "
            f"count_if(p.{column} < g.c) - {level} * {n}, 0) AS score FROM {grid} g LEFT JOIN people p ON true GROUP BY g.i) "
            f"CROSS JOIN range_center WHERE {keep}")


def _scale(sensitivity: str, m: str = "max_groups", eps: str = "eps_each") -> str:
    """The noise scale of a mechanism whose per-group sensitivity is `sensitivity`, one person adding to `m`
    groups, spending `eps`."""
    return (f"CASE WHEN __p_noise = 'laplace' THEN {m} * ({sensitivity}) / {eps} "
            f"ELSE anon_dp_gaussian_sigma({eps}, delta_each, sqrt({m}) * ({sensitivity})) END")


def _threshold(scale: str, m: str = "max_groups") -> str:
    """The noisy people count a group must reach to be released (partition selection), for noise `scale`."""
    return (f"CASE WHEN NOT selecting THEN NULL WHEN __p_noise = 'laplace' THEN 1.0 + {scale} * ln({m} / (2.0 * delta_select)) "
            f"ELSE 1.0 + {scale} * anon_dp_normal_quantile(1.0 - delta_select / {m}) END")


_HAS = "list_contains(__p_aggregates, '{}')"
_COUNTED = f"({_HAS.format('count')} OR {_HAS.format('sum')} OR {_HAS.format('avg')})"
_VALUED = f"({_HAS.format('sum')} OR {_HAS.format('avg')})"
_NOISES = "(CAST(use_p AS INT) + CAST(use_r AS INT) + CAST(use_s AS INT))"  # the mechanisms that add noise
_MECHANISMS = f"({_NOISES} + CAST(use_median AS INT))"
_VALUE_MECHANISMS = "(CAST(use_s AS INT) + CAST(use_median AS INT))"  # those that read the values, and the range

_BOUNDED = f"""
src AS (
    SELECT __anon_unit AS u, __anon_group AS g, __anon_value AS v FROM __dp_source
    WHERE __anon_unit IS NOT NULL AND (NOT __p_public OR __anon_group IN (SELECT __anon_group FROM __dp_public))),
settings AS (SELECT coalesce(__p_key, CAST(uuid() AS VARCHAR)) AS key),
choices AS (
    SELECT __p_max_groups IS NULL AS choose_m, __p_valued AND __p_lo IS NULL AS choose_lo,
           __p_valued AND __p_hi IS NULL AS choose_hi,
           __p_max_groups IS NULL OR (__p_valued AND (__p_lo IS NULL OR __p_hi IS NULL)) AS choosing),
people AS (  -- one row per person (when a bound is chosen): their number of groups and one value drawn at random
    SELECT u, count(DISTINCT g) AS d, arg_min(v, __keyed_hash(s.key, u, v)) AS one_v
    FROM src CROSS JOIN settings s WHERE (SELECT choosing FROM choices) GROUP BY u),
people_count AS (  -- PEOPLE_SHARE of epsilon: the people, Laplace noise of sensitivity 1
    SELECT c.*, CASE WHEN c.choosing THEN __p_epsilon * {PEOPLE_SHARE} ELSE 0.0 END AS eps_people,
           anon_dp_noise(CAST(n.n AS DOUBLE), CASE WHEN c.choosing THEN 1.0 / (__p_epsilon * {PEOPLE_SHARE}) END, 'laplace')
           AS people_noisy
    FROM choices c CROSS JOIN (SELECT count(*) AS n FROM people) n),
quantile_budget AS (  -- each choice's epsilon from the noisy count (what it would spend; spent when chosen)
    SELECT *, eps_range_rule * {CENTER_SHARE} AS eps_center,
           eps_range_rule * {1 - CENTER_SHARE} / greatest(CAST(choose_lo AS INT) + CAST(choose_hi AS INT), 1) AS eps_v,
           eps_range_rule * CAST(choose_lo OR choose_hi AS INT) AS eps_range
    FROM (SELECT *, {choice_epsilon("max_groups")} AS eps_m, {choice_epsilon("range")} AS eps_range_rule FROM people_count)),
flags AS (
    SELECT *, {_HAS.format('count_distinct')} OR NOT __p_public OR ({_COUNTED} AND __p_max_rows = 1) AS use_p,
           {_COUNTED} AND __p_max_rows > 1 AS use_r, {_VALUED} AS use_s, {_HAS.format('median')} AS use_median,
           NOT __p_public AS selecting
    FROM quantile_budget),
shares AS (  -- max_groups is paid by every mechanism, the range by those of the values (by all when none is asked)
    SELECT *, __p_epsilon - eps_people - eps_m * CAST(choose_m AS INT) - CASE WHEN {_VALUE_MECHANISMS} = 0 THEN eps_range ELSE 0.0 END
              AS eps_rest
    FROM flags),
budget AS (
    SELECT *, eps_rest / {_MECHANISMS} AS eps_each,
           eps_rest / {_MECHANISMS} - CASE WHEN {_VALUE_MECHANISMS} > 0 THEN eps_range / {_VALUE_MECHANISMS} ELSE 0.0 END AS eps_value,
           CASE WHEN __p_noise = 'gaussian' THEN __p_delta / ({_NOISES} + CAST(selecting AS INT)) ELSE 0.0 END AS delta_each,
           CASE WHEN NOT selecting THEN 0.0 WHEN __p_noise = 'gaussian' THEN __p_delta / ({_NOISES} + 1)
                ELSE __p_delta END AS delta_select
    FROM shares),
m_grid AS ({_grid(M_GRID)}),
keyed AS (
    SELECT u, g, v, __keyed_hash(s.key, u, g) AS group_key, __keyed_hash(s.key, u, g, v) AS row_key
    FROM src CROSS JOIN settings s),
ranked AS (
    -- one sort per person: pairs in key order, rows in key order within a pair (the rank of a row within
    -- its pair is its row number less the rank of the pair's first row)
    SELECT u, g, v, dense_rank() OVER by_pair AS group_rank, row_number() OVER by_row - rank() OVER by_pair + 1 AS row_rank
    FROM keyed
    WINDOW by_pair AS (PARTITION BY u ORDER BY group_key, g), by_row AS (PARTITION BY u ORDER BY group_key, g, row_key, v)),
pair_ranks AS (  -- per group and rank: people for whom it is their group of that rank (in key order)
    SELECT g, group_rank, count(*) AS pairs FROM ranked
    WHERE row_rank = 1 AND (SELECT choose_m AND selecting AND __p_noise = 'laplace' FROM budget) GROUP BY g, group_rank),
m_kept AS (  -- per candidate m and group: the people who keep the group when each keeps m groups
    SELECT m.i, m.c, p.g, sum(p.pairs) AS kept FROM m_grid m JOIN pair_ranks p ON p.group_rank <= m.c GROUP BY m.i, m.c, p.g),
m_expected AS (  -- with the noise scale and the threshold that candidate would have
    SELECT k.i, k.kept, {_scale('1.0', 'k.c')} AS scale, {_threshold(_scale('1.0', 'k.c'), 'k.c')} AS threshold
    FROM m_kept k CROSS JOIN budget),
m_release AS (  -- per candidate: the expected number of groups released, less nearly the most any candidate has
    SELECT i, s - greatest({M_RELEASED} * max(s) OVER (), max(s) OVER ()
                           - least({M_SLACK} * sqrt(max(s) OVER () + 1.0), {M_NOISE} * eps_each / eps_m)) AS f FROM (
        SELECT g.i, coalesce(e.s, 0.0) AS s, b.eps_each, b.eps_m FROM m_grid g CROSS JOIN budget b LEFT JOIN (
            SELECT i, sum(CASE WHEN kept >= threshold THEN 1.0 - 0.5 * exp(-(kept - threshold) / scale)
                               ELSE 0.5 * exp(-(threshold - kept) / scale) END) AS s FROM m_expected GROUP BY i) e ON e.i = g.i)),
m_release_scores AS (  -- high for the largest candidate whose f >= 0: min(its f, minus every larger candidate's f),
    -- less M_PRIOR noise scales per step up the grid
    SELECT list({{'i': r.i, 's': r.score - {M_PRIOR} * b.eps_each / b.eps_m
                                  * ln(1.0 + g.c / least({M_TYPICAL}, greatest(coalesce(b.people_noisy, 0.0) / {M_PEOPLE}, 1.0)))}}) AS scores FROM (
        SELECT i, least(f, coalesce(-max(f) OVER (ORDER BY i ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), f)) AS score
        FROM m_release) r JOIN m_grid g ON g.i = r.i CROSS JOIN budget b),
v_grid AS ({_grid(V_GRID)}),
v_positions AS (  -- per value drawn: its people and its position on the grid (halfway between two points it falls between)
    SELECT x.n, (count_if(g.c < x.v) + count_if(g.c <= x.v) - 1) / 2.0 AS pos
    FROM (SELECT one_v AS v, count(*) AS n FROM people WHERE one_v IS NOT NULL GROUP BY one_v) x JOIN v_grid g ON true
    GROUP BY x.v, x.n),
center_scores AS (  -- minus the people's distances to the point in grid steps, each clipped at CENTER_STEPS, over CENTER_STEPS
    SELECT list({{'i': i, 's': score}}) AS scores FROM (
        SELECT g.i, -coalesce(sum(v.n * least(abs(g.i - v.pos), {CENTER_STEPS})), 0) / {CENTER_STEPS}.0 AS score
        FROM v_grid g LEFT JOIN v_positions v ON true GROUP BY g.i)),
range_center AS (
    SELECT CASE WHEN q.choose_lo OR q.choose_hi THEN anon_dp_noisy_max(c.scores, 2.0 / q.eps_center) END AS center,
           2.0 / q.eps_v AS v_scale
    FROM budget q CROSS JOIN center_scores c),
m_scores AS ({_scores("d", M_LEVEL, "m_grid")}),
lo_scores AS ({_scores("one_v", LO_LEVEL, "v_grid", "i <= center", f"{RANGE_PRIOR} * v_scale * i")}),
hi_scores AS ({_scores("one_v", HI_LEVEL, "v_grid", "i >= center", f"-{RANGE_PRIOR} * v_scale * i")}),
picks AS (
    SELECT q.*, CASE WHEN q.choose_m AND q.selecting AND __p_noise = 'laplace' THEN anon_dp_noisy_max(r.scores, q.eps_each / q.eps_m)
                     WHEN q.choose_m THEN anon_dp_noisy_max(m.scores, 2.0 / q.eps_m) END AS m_pick,
           CASE WHEN q.choose_lo THEN anon_dp_noisy_max(l.scores, 2.0 / q.eps_v) END AS lo_pick,
           CASE WHEN q.choose_hi THEN anon_dp_noisy_max(h.scores, 2.0 / q.eps_v) END AS hi_pick
    FROM budget q CROSS JOIN m_scores m CROSS JOIN m_release_scores r LEFT JOIN lo_scores l ON true LEFT JOIN hi_scores h ON true),
picked AS (
    SELECT p.*, coalesce(__p_max_groups, mg.c) AS max_groups, coalesce(CAST(__p_lo AS DOUBLE), lg.c) AS lo_pick_value,
           coalesce(CAST(__p_hi AS DOUBLE), hg.c) AS hi_pick_value
    FROM picks p LEFT JOIN m_grid mg ON mg.i = p.m_pick LEFT JOIN v_grid lg ON lg.i = p.lo_pick
         LEFT JOIN v_grid hg ON hg.i = p.hi_pick),
chosen AS (
    SELECT *, least(lo_pick_value, hi_pick_value) AS lo, greatest(lo_pick_value, hi_pick_value) AS hi,
           (least(lo_pick_value, hi_pick_value) + greatest(lo_pick_value, hi_pick_value)) / 2.0 AS mid
    FROM picked),
bounded AS (
    SELECT r.u, r.g, least(greatest(r.v, c.lo), c.hi) - c.mid AS v FROM ranked r CROSS JOIN chosen c
    WHERE r.group_rank <= c.max_groups AND r.row_rank <= __p_max_rows),
aggregates AS (
    SELECT g, count(DISTINCT u) AS persons, count(*) AS rows, sum(v) AS nsum FROM bounded GROUP BY g)"""


def _half_width(scale: str, alpha: str) -> str:
    """Half the width of the interval holding the noise of `scale` with probability 1 - `alpha`."""
    return (f"CASE WHEN __p_noise = 'laplace' THEN {scale} * ln(1.0 / ({alpha})) "
            f"ELSE {scale} * anon_dp_normal_quantile(1.0 - ({alpha}) / 2.0) END")


_NOISY = f"""
scales AS (
    SELECT *, CASE WHEN use_p THEN {_scale('1.0')} END AS scale_p,
           CASE WHEN use_r THEN {_scale('__p_max_rows')} END AS scale_r,
           CASE WHEN use_s THEN {_scale('__p_max_rows * (hi - lo) / 2.0', eps='eps_value')} END AS scale_s,
           -- the median's exponential mechanism: a person moves a group's scores by max_rows, in max_groups groups
           CASE WHEN use_median THEN 2.0 * __p_max_rows * max_groups / eps_value END AS scale_median,
           (hi - lo) / {MEDIAN_POINTS - 1}.0 AS median_step
    FROM chosen),
spent AS (
    SELECT *, {_threshold('scale_p')} AS threshold,
           CASE WHEN use_r THEN scale_r ELSE scale_p END AS scale_c
    FROM scales),
candidates AS (
    SELECT g, persons, rows, nsum FROM aggregates WHERE NOT __p_public
    UNION ALL
    SELECT p.__anon_group, coalesce(a.persons, 0), coalesce(a.rows, 0), coalesce(a.nsum, 0.0)
    FROM (SELECT DISTINCT __anon_group FROM __dp_public) p LEFT JOIN aggregates a ON a.g = p.__anon_group
    WHERE __p_public),
median_hist AS (  -- per group: values counted by the first point above them (a) and at or above them (b)
    SELECT b.g, least(greatest(CAST(floor((b.v + c.mid - c.lo) / c.median_step) AS BIGINT) + 1, 0), {MEDIAN_POINTS}) AS a,
           least(greatest(CAST(ceil((b.v + c.mid - c.lo) / c.median_step) AS BIGINT), 0), {MEDIAN_POINTS}) AS b, count(*) AS n
    FROM bounded b CROSS JOIN spent c WHERE c.use_median AND c.median_step > 0 GROUP BY 1, 2, 3),
median_points AS ({_grid(tuple(range(MEDIAN_POINTS)))}),
median_scores AS (  -- per group and point: minus how far it is from being a median (the rule of _scores at 1/2)
    SELECT c.g, k.i, -greatest(0.5 * coalesce(sum(h.n), 0) - coalesce(sum(CASE WHEN h.b <= k.i THEN h.n END), 0),
                              coalesce(sum(CASE WHEN h.a <= k.i THEN h.n END), 0) - 0.5 * coalesce(sum(h.n), 0), 0) AS score
    FROM candidates c CROSS JOIN median_points k CROSS JOIN spent s LEFT JOIN median_hist h ON h.g = c.g
    WHERE s.use_median GROUP BY c.g, k.i),
median_lists AS (SELECT g, list({{'i': i, 's': score}}) AS scores FROM median_scores GROUP BY g),
noisy AS (
    SELECT c.g, anon_dp_noise(CAST(c.persons AS DOUBLE), s.scale_p, __p_noise) AS np,
           anon_dp_noise(CAST(c.rows AS DOUBLE), s.scale_r, __p_noise) AS nr,
           anon_dp_noise(c.nsum, s.scale_s, __p_noise) AS ns
    FROM candidates c CROSS JOIN spent s),
released AS (
    SELECT n.g, n.np, n.ns, CASE WHEN s.use_r THEN n.nr ELSE n.np END AS nc, s.lo, s.hi, s.mid, s.max_groups,
           s.people_noisy, s.eps_people, s.eps_m * CAST(s.choose_m AS INT) AS eps_m_spent, s.eps_range,
           CASE WHEN s.use_median THEN s.lo + s.median_step * coalesce(anon_dp_noisy_max(ml.scores, s.scale_median), 0) END AS med,
           s.scale_median * (ln({MEDIAN_POINTS}.0) + ln(1.0 / (1.0 - __p_confidence))) AS median_rank_error,
           {_half_width('s.scale_p', '1.0 - __p_confidence')} AS hp,
           {_half_width('s.scale_c', '1.0 - __p_confidence')} AS hc,
           {_half_width('s.scale_c', '(1.0 - __p_confidence) / 2.0')} AS hc2,
           {_half_width('s.scale_s', '(1.0 - __p_confidence) / 2.0')} AS hs2
    FROM noisy n CROSS JOIN spent s LEFT JOIN median_lists ml ON ml.g = n.g
    WHERE NOT s.selecting OR n.np >= s.threshold),
result AS (
    SELECT g AS __anon_group, nc AS "count", nc - hc AS count_ci_low, nc + hc AS count_ci_high,
           np AS count_distinct, np - hp AS count_distinct_ci_low, np + hp AS count_distinct_ci_high,
           ns + mid * nc AS "sum", ns + mid * nc - (hs2 + abs(mid) * hc2) AS sum_ci_low,
           ns + mid * nc + (hs2 + abs(mid) * hc2) AS sum_ci_high,
           least(greatest(mid + ns / greatest(nc, 1.0), lo), hi) AS "avg",
           CASE WHEN nc - hc2 > 0 THEN greatest(mid + least((ns - hs2) / (nc - hc2), (ns - hs2) / (nc + hc2)), lo)
                ELSE lo END AS avg_ci_low,
           CASE WHEN nc - hc2 > 0 THEN least(mid + greatest((ns + hs2) / (nc - hc2), (ns + hs2) / (nc + hc2)), hi)
                ELSE hi END AS avg_ci_high,
           med AS median, median_rank_error,
           max_groups AS max_groups_contributed, lo AS min_value, hi AS max_value,
           people_noisy, eps_people AS epsilon_people, eps_m_spent AS epsilon_max_groups, eps_range AS epsilon_range,
           __p_epsilon - eps_people - eps_m_spent - eps_range AS epsilon_aggregates
    FROM released)"""


#: the result's columns when a bound is chosen: the noisy count of people and the epsilon each part spent
CHOICE_COLUMNS = ("people_noisy", "epsilon_people", "epsilon_max_groups", "epsilon_range", "epsilon_aggregates")


def columns(aggregates) -> list[str]:
    """The result's value columns for `aggregates`, in their order: each value with its interval; the
    median with its error in rank (how many values from the middle it may be, at the confidence level)."""
    return [f"{a}{suffix}" for a in AGGREGATES if a in aggregates
            for suffix in (("", "_rank_error") if a == "median" else ("", "_ci_low", "_ci_high"))]


def _keyed_hash(args: list[exp.Expression], dialect: str, portable: bool) -> exp.Expression:
    """The hash ordering a person's groups and rows: the engine's fastest (DuckDB's hash, Spark's xxhash64),
    or, `portable`, MD5 of the values as JSON, the same on every engine (to compare engines row for row)."""
    if portable:
        values = exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier(f"a{i}"), expression=a) for i, a in enumerate(args)])
        # Spark leaves NULL fields out of JSON unless told not to; DuckDB writes them as null
        options = [exp.Anonymous(this="map", expressions=[exp.Literal.string("ignoreNullFields"), exp.Literal.string("false")])]
        return exp.func("md5", exp.Anonymous(this="to_json", expressions=[values, *(options if dialect == "spark" else [])]))
    if dialect == "duckdb":  # hashed again: DuckDB combines the values' hashes with too little mixing to order by
        return exp.Anonymous(this="hash", expressions=[exp.Anonymous(this="hash", expressions=args)])
    return exp.Anonymous(this="xxhash64", expressions=args)


def render(text: str, dialect: str, parameters: dict[str, exp.Expression], portable: bool = False,
           **tables: exp.Expression) -> str:
    """`text` through the one renderer (duckdb_anon.engines.base.render): each ``__p_<name>`` becomes
    `parameters[name]`, each table named in `tables` its relation, and ``__keyed_hash(...)`` the engine's hash."""
    def keyed_hash(node, dialect):
        if isinstance(node, exp.Anonymous) and node.name.lower() == "__keyed_hash":
            return _keyed_hash([a.copy() for a in node.expressions], dialect, portable)
        return node

    return engine_render(text, dialect, rewrite=keyed_hash, parameters=parameters, **tables)


def bounded_query() -> str:
    """Per group (``__anon_group``) the bounded, un-noised aggregates persons, rows and nsum."""
    return f"WITH {_BOUNDED} SELECT g AS __anon_group, persons, rows, nsum FROM aggregates"


def bounded_parameters(max_groups=None, max_rows=None, lo=None, hi=None, valued=False, key=None) -> dict:
    """bounded_query()'s placeholders as Python values (engines.base.literal() writes them): the budget's
    NULL, noise and aggregates any valid value (they only serve to choose max_groups, which it never does)."""
    return dict.fromkeys(PARAMETERS) | dict(
        noise="laplace", aggregates=["count"], max_groups=max_groups, max_rows=max_rows, valued=valued,
        lo=None if lo is None else float(lo), hi=None if hi is None else float(hi), public=False, key=key)


def released_query() -> str:
    """Per released group the noisy aggregates and their intervals (every aggregate's columns)."""
    return f"WITH {_BOUNDED}, {_NOISY} SELECT * FROM result"

