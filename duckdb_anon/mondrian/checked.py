"""One level of Mondrian when cuts must have their sides counted: hierarchies, l-diversity / t-closeness and
suppression, the rules of ``anon_partition`` (sql/10_mondrian.sql) as level queries.

- A QI with a hierarchy is cut into the children of the node covering the partition's leaves (its lowest
  common ancestor); its width is that node's share of the hierarchy's leaves, whatever the split rule.
  Other QIs are cut at their median as in :class:`Plan`.
- A cut is *checked* when it is hierarchical, when a sensitive column is given, or when the partition
  still may suppress rows (its budget > 0): every side it makes is then counted; a side is good when it
  holds k rows and satisfies the model (anon_model_holds over its sensitive histogram). A checked cut is
  allowed when every side is good, or when some are and the rows of the others fit the budget; those
  rows are suppressed (partition -1) and the rest of the budget is shared among the good sides in
  proportion to their rows (rounded down). With a budget, a strict cut may leave one side under k.
- The widest allowed cut is taken, ties to the earliest QI, in two rounds: the first judges each
  partition's widest cut alone; only the partitions it leaves uncut have every other cut judged. (Judging
  every cut at once counted every row once per QI, in windows and aggregate states that DuckDB does not
  spill.)
- A hierarchical side is named by the partition's offset plus the rows of the sides before it (in code
  order); a numeric cut names its sides as Plan does.

The privacy models themselves live in ``sql/07_models.sql`` (anon_model_holds, called here and inlined for
Spark), the hierarchies' relations in ``sql/05_hierarchies.sql`` (models.hierarchy_relations). Each method
returns DuckDB text over placeholders, as Plan's do.
"""
from __future__ import annotations

from duckdb_anon.mondrian.models import model_holds, model_inputs
from duckdb_anon.mondrian.plan import Plan


class CheckedPlan(Plan):
    """The level queries of a run with hierarchies, a privacy model or suppression.

    The level driver knows at each run which QIs have a hierarchy, whether a sensitive column is given and
    the model, and writes them into the text. mondrian()'s generated recursion (checked_macros.py) learns
    them only at the call (`at_call`): every QI position is then listed in ``models.hier`` and a QI is cut
    by its hierarchy when the partition has a covering node in it (hnode holds rows for the QI), and the
    sensitive column, the order of its values and the suppression share are the call's parameters
    (``__p_sensitive``, ``__p_model``; the order read from ``tdist``)."""

    def __init__(self, *rules, at_call: bool = False):
        super().__init__(*rules)
        self.at_call = at_call

    def _sensitive_on(self) -> str:
        """SQL: is a sensitive column given (then every cut has its sides counted)?"""
        if self.at_call:
            return "(__p_sensitive IS NOT NULL)"
        return "true" if self.sensitive else "false"

    def _ordered(self) -> str:
        """SQL: are the sensitive values ordered (numbers and dates, for t-closeness)?"""
        return "whole.ordered" if self.at_call else str(self.models.ordered).lower()

    def _suppress(self) -> str:
        """SQL: the share of rows that may be suppressed (the root's budget is that share of the rows)."""
        if self.at_call:
            return "coalesce(struct_extract(__p_model, 'suppress'), 0)"
        return repr(float(self.models.suppress))

    def _root_extra(self) -> str:
        """The root's pieces also carry their sensitive rank (s) and their partition's suppression budget."""
        return (f", {'c.s' if self.sensitive else 'CAST(NULL AS BIGINT) AS s'}, "
                f"CAST(floor({self._suppress()} * s.total_rows) AS BIGINT) AS budget")

    def _width(self, d: int) -> str:
        lo, hi = ("rlo", "rhi") if self.rule == "inherited" else ("lo", "hi")
        numeric = f"CASE WHEN s.range{d} > 0 THEN (p.{hi}{d} - p.{lo}{d}) / s.range{d} ELSE 0.0 END"
        if d not in self.models.hier:
            return numeric
        # the covering node's share of the leaves; a single leaf counts 0
        node = f"CASE WHEN p.hi{d} > p.lo{d} THEN CAST(l{d}.nhi - l{d}.nlo + 1 AS DOUBLE) / l{d}.leaves ELSE 0.0 END"
        return f"CASE WHEN l{d}.depth IS NOT NULL THEN {node} ELSE {numeric} END" if self.at_call else node

    def candidates(self) -> str:
        """Over ``state``, ``span`` and ``hnode``: per partition that a cut could still leave with a good side: rows, budget, and per QI lo, hi,
        width; for a hierarchy's QI the depth of the node covering its leaves (nd<d>); the QI of its widest cut
        (first: Plan._widest's; NULL when every QI's keys are equal)."""
        region = f", {self._each('min(rlo{d}) AS rlo{d}, max(rhi{d}) AS rhi{d}')}" if self.rule == "inherited" else ""
        best, pick = self._widest()
        lcas, joins = [], []
        for d in self.models.hier:
            lcas.append(f"l{d} AS (SELECT g.part, arg_max(h.lo, h.depth) AS nlo, arg_max(h.hi, h.depth) AS nhi, "
                        f"max(h.depth) AS depth, max(h.leaves) AS leaves FROM grp g JOIN hnode h "
                        f"ON h.d = {d} AND h.lo <= g.lo{d} AND h.hi >= g.hi{d} GROUP BY g.part)")
            joins.append(f"{'LEFT ' if self.at_call else ''}JOIN l{d} ON l{d}.part = p.part")
        depths = "".join(f", l{d}.depth AS nd{d}" for d in self.models.hier)
        widths = ", ".join(f"{self._width(d)} AS w{d}" for d in range(self.q))
        return f"""
            WITH grp AS (SELECT part, sum(n) AS rows, max(budget) AS budget,
                                {self._each('min(k{d}) AS lo{d}, max(k{d}) AS hi{d}')}{region}
                         FROM state WHERE part >= 0 GROUP BY part
                         HAVING sum(n) >= 2 * __p_k OR (max(budget) > 0 AND sum(n) > __p_k))
            {''.join(', ' + c for c in lcas)}
            SELECT *, CASE WHEN best >= 0 THEN {pick} END AS first
            FROM (SELECT *, {best} AS best FROM (SELECT p.*, {widths}{depths} FROM grp p CROSS JOIN span s {' '.join(joins)}))"""

    def kept(self) -> tuple[str, str, str]:
        """Plan.kept()'s columns with the sensitive rank (s) and the budget a checked level reads."""
        carried, restored, piece = super().kept()
        return f"{carried}, s, budget", restored, piece

    def first_judged(self) -> str:
        """Over ``state`` and ``cands``: each candidate's widest cut, judged as :meth:`_judged` says."""
        return self._judged("first", "p.d = c.first")

    def other_judged(self) -> str:
        """Over ``state``, ``cands`` and ``first_decided``: the other cuts of the candidates whose widest cut
        is not allowed."""
        return self._judged("other", "p.d <> c.first AND c.part NOT IN (SELECT part FROM first_decided)")

    def _judged(self, round: str, which: str) -> str:
        """Over ``state`` and ``cands``: the cuts of the round (`which`: SQL over candidate c and position p.d)
        among those a candidate could take (a QI whose keys differ): its median (numeric cuts), whether it is
        valid before its sides are counted, and whether they must be (checked)."""
        positions = self._each("SELECT {d} AS d", " UNION ALL ")
        hier = " OR ".join(f"(p.d = {d} AND c.nd{d} IS NOT NULL)" if self.at_call else f"p.d = {d}"
                           for d in self.models.hier) or "false"
        depth = ("CASE p.d " + " ".join(f"WHEN {d} THEN c.nd{d}" for d in self.models.hier) + " END"
                 if self.models.hier else "CAST(NULL AS BIGINT)")
        valid = ("(m.cum >= __p_k AND t.rows - m.cum >= __p_k) OR (t.budget > 0 AND t.rows - m.cum > 0 "
                 "AND (m.cum >= __p_k OR t.rows - m.cum >= __p_k))" if self.mode == "strict"
                 else "t.rows // 2 >= __p_k")
        # CTE names carry the round: Spark refuses a name defined twice in one statement
        return (f"""
            WITH {round}_tried AS (SELECT c.part, p.d AS dim, c.rows, c.budget, false AS unit, {hier} AS hier, {depth} AS nd,
                                          {self._of_dim('p.d', 'c.w{d}')} AS w
                                   FROM cands c CROSS JOIN ({positions}) p
                                   WHERE {self._of_dim('p.d', 'c.hi{d} > c.lo{d}')} AND {which}),
            {round}_plain AS (SELECT * FROM {round}_tried WHERE NOT hier),
            {self._medians(round + '_plain', round + '_plain_')}
            SELECT t.*, m.split, m.nxt, m.cnt, m.cum,
                   t.hier OR (m.cum IS NOT NULL AND ({valid})) AS valid,
                   t.hier OR {self._sensitive_on()} OR t.budget > 0 AS checked
            FROM {round}_tried t LEFT JOIN {round}_plain_median m ON m.part = t.part AND m.dim = t.dim""")

    def _group(self, key: str) -> str:
        """The side of a cut a piece falls on: a hierarchy's child (its run's start), else 0 / 1."""
        child = "a.lo" if self.models.hier else "CAST(NULL AS BIGINT)"
        return f"CASE WHEN j.hier THEN {child} WHEN {key} > j.split THEN 1 ELSE 0 END"

    def _child(self, cut: str, key: str) -> str:
        """The join that finds a piece's child of a hierarchical cut (its ancestor one level below the node)."""
        return (f"LEFT JOIN hanc a ON {cut}.hier AND a.d = {cut}.dim AND a.code = {key} AND a.depth = {cut}.nd + 1"
                if self.models.hier else "")

    def first_sides(self) -> str:
        """Over ``state``, ``first_judged``, ``hanc`` and ``tdist``: :meth:`_sides` of the first round's cuts."""
        return self._sides("first")

    def other_sides(self) -> str:
        """Over ``state``, ``other_judged``, ``hanc`` and ``tdist``: :meth:`_sides` of the other round's cuts."""
        return self._sides("other")

    def _sides(self, round: str) -> str:
        """Over ``state``, ``<round>_judged``, ``hanc`` and ``tdist``: per checked valid cut, per side: rows, good (k rows and the model), and the rows of the sides
        before it (before, in side order)."""
        key = self._of_dim("j.dim", "s.k{d}")
        # a side's sensitive values are rows (one per value, with the windows the models read), aggregated per
        # side: no per-side list, so every step spills. (The relations' aliases differ from the macros'
        # lambda variables, which Spark's inlined copy keeps.)
        if self.sensitive:
            valued = f"SELECT part, dim, g, s, cnt, {model_inputs('cnt', 's', 'part, dim, g')} FROM {round}_counted"
            good = f" AND {model_holds(self.models.model, 'side.cnt', 'side.s', 'whole', self._ordered())}"
            source = f"{round}_valued side CROSS JOIN tdist whole"
        else:
            valued, good, source = f"SELECT * FROM {round}_counted", "", f"{round}_valued side"
        return (f"""
            WITH {round}_counted AS (SELECT j.part, j.dim, {self._group(key)} AS g, s.s, sum(s.n) AS cnt
                                     FROM state s JOIN {round}_judged j ON s.part = j.part AND j.valid AND j.checked
                                     {self._child('j', key)}
                                     GROUP BY j.part, j.dim, {self._group(key)}, s.s),
            {round}_valued AS ({valued}),
            {round}_each AS (SELECT side.part, side.dim, side.g, sum(side.cnt) AS rows, sum(side.cnt) >= __p_k{good} AS good
                             FROM {source} GROUP BY side.part, side.dim, side.g)
            SELECT part, dim, g, rows, good, sum(rows) OVER (PARTITION BY part, dim ORDER BY g) - rows AS before
            FROM {round}_each""")

    def first_decisions(self) -> str:
        """Over ``cands``, ``first_judged`` and ``first_sides``: :meth:`_decisions` of the first round."""
        return self._decisions("first")

    def other_decisions(self) -> str:
        """Over ``cands``, ``other_judged`` and ``other_sides``: :meth:`_decisions` of the other round."""
        return self._decisions("other")

    def _decisions(self, round: str) -> str:
        """Over ``cands``, ``<round>_judged`` and ``<round>_sides``: per partition the round's widest allowed cut (ties to the earliest QI),
        with the rows its failing sides hold and its good sides' rows, and its candidate's ranges and widths."""
        region = f", {self._each('c.rlo{d}, c.rhi{d}')}" if self.rule == "inherited" else ""
        # the first round judges one cut per partition
        choice = "1" if round == "first" else "row_number() OVER (PARTITION BY j.part ORDER BY j.w DESC, j.dim)"
        return (f"""
            WITH {round}_verdict AS (SELECT part, dim, bool_and(good) AS all_good, bool_or(good) AS any_good,
                                            coalesce(sum(CASE WHEN NOT good THEN rows END), 0) AS failing,
                                            sum(CASE WHEN good THEN rows END) AS good_rows
                                     FROM {round}_sides GROUP BY part, dim),
            {round}_allowed AS (SELECT j.*, v.failing, v.good_rows, {choice} AS choice
                                FROM {round}_judged j LEFT JOIN {round}_verdict v ON v.part = j.part AND v.dim = j.dim
                                WHERE j.valid AND (NOT j.checked
                                                   OR coalesce(v.all_good OR (v.any_good AND v.failing <= j.budget), false)))
            SELECT a.part, a.dim, a.split, a.nxt, a.cnt, a.cum, a.rows, a.hier, a.nd, a.budget, a.failing, a.good_rows,
                   {self._each('c.lo{d}, c.hi{d}, c.w{d}')}{region}
            FROM {round}_allowed a JOIN cands c ON c.part = a.part WHERE a.choice = 1""")

    @staticmethod
    def checked_decisions() -> str:
        """Over ``first_decided`` and ``other_decided``: per partition its allowed cut, of either round."""
        return "SELECT * FROM first_decided UNION ALL SELECT * FROM other_decided"

    def decide(self) -> str:
        """CTEs over ``state``, ``span`` and the hierarchies ending in ``decided``: each round's cuts judged,
        the sides of the checked ones counted, the widest allowed one per partition."""
        steps = [("cands", self.candidates()),
                 ("first_judged", self.first_judged()), ("first_sides", self.first_sides()),
                 ("first_decided", self.first_decisions()),
                 ("other_judged", self.other_judged()), ("other_sides", self.other_sides()),
                 ("other_decided", self.other_decisions()),
                 ("decided", self.checked_decisions())]
        return ", ".join(f"{name} AS MATERIALIZED ({text})" for name, text in steps)

    def cut(self) -> str:
        """Over ``state``, ``decided``, ``first_sides``, ``other_sides`` and ``hanc``: the next level's state: each piece of a decided partition on its side; a hierarchical side
        named by the rows before it, a side that is not good suppressed (part -1); each side's budget."""
        key = self._of_dim("d.dim", "s.k{d}")
        go_left = "d.cum" if self.mode == "strict" else "d.rows // 2"
        region_in, region_out = self._regions()
        placed = f"""
            joined AS (SELECT s.cell, s.off, s.n, s.part, s.s, {self._each('s.k{d}')}{region_in},
                              d.dim, d.split, d.nxt, d.cnt, d.cum, d.rows, d.hier, d.budget AS parent_budget, d.failing,
                              d.good_rows, {go_left} AS go_left, {key} AS v,
                              {'a.lo' if self.models.hier else 'CAST(NULL AS BIGINT)'} AS hg
                       FROM state s JOIN decided d ON s.part = d.part {self._child('d', key)}),
            placed AS (SELECT j.*, x.before AS side_before, coalesce(NOT x.good, false) AS suppressed,
                              CAST(coalesce(floor((j.parent_budget - j.failing) * x.rows / j.good_rows), 0) AS BIGINT) AS budget
                       FROM joined j LEFT JOIN (SELECT * FROM first_sides UNION ALL SELECT * FROM other_sides) x
                       ON x.part = j.part AND x.dim = j.dim AND x.g = CASE WHEN j.hier THEN j.hg WHEN j.v > j.split THEN 1 ELSE 0 END)"""
        if self.mode == "strict":  # cells stay whole: each goes to one side
            pieces = ("pieces AS (SELECT *, off AS new_off, n AS new_n, "
                      "CASE WHEN suppressed THEN -1 WHEN hier THEN part + side_before "
                      "WHEN side = 0 THEN part ELSE part + go_left END AS new_part "
                      "FROM (SELECT *, CASE WHEN hier OR v <= split THEN 0 ELSE 1 END AS side FROM placed))")
        else:  # a hierarchical cut moves whole cells; a numeric one shares the cells tied at its median
            lefts, before = self._relaxed_sharing()
            pieces = (f"shared AS (SELECT *, CASE WHEN hier THEN n ELSE {lefts} END AS lefts "
                      f"FROM (SELECT *, {before} AS before FROM placed)), "
                      "pieces AS (SELECT *, 0 AS side, off AS new_off, lefts AS new_n, "
                      "CASE WHEN hier THEN part + side_before ELSE part END AS new_part FROM shared WHERE lefts > 0 "
                      "UNION ALL "
                      "SELECT *, 1, off + lefts, n - lefts, part + go_left FROM shared WHERE n - lefts > 0)")
        return f"""
            WITH {placed}, {pieces}
            SELECT cell, new_off AS off, new_n AS n, new_part AS part, {self._each('k{d}')}{region_out}, s, budget
            FROM pieces"""

    # ---- made once per run ------------------------------------------------------------------------------
    def tdist(self) -> str:
        """Over ``cells``: the sensitive distribution of the whole table: per rank its share (q), the running share (cq),
        the running total of cq after a 0 (cc), and the histogram (hist: rank, rows, running rows), in rank order.

        No step sorts every value in one task (a window without PARTITION BY does on Spark): a running count
        adds, to a value's running count within its block of 4,096 ranks (a window per block), the rows of
        the blocks before it (a join of the few blocks' totals); cc is the running count's running count."""
        def running(values: str, columns: str, column: str, name: str) -> str:
            return f"""{name}_blocked AS (SELECT {columns}, s // 4096 AS b, sum({column}) OVER (PARTITION BY s // 4096 ORDER BY s) AS within FROM {values}),
            {name}_blocks AS (SELECT b, sum({column}) AS n FROM {name}_blocked GROUP BY b),
            {name}_earlier AS (SELECT a.b, coalesce(sum(e.n), 0) AS n FROM {name}_blocks a LEFT JOIN {name}_blocks e ON e.b < a.b GROUP BY a.b),
            {name} AS (SELECT {', '.join('x.' + c for c in columns.split(', '))}, x.within + p.n AS {name} FROM {name}_blocked x JOIN {name}_earlier p ON p.b = x.b)"""
        return (f"""
            WITH hist AS (SELECT s, sum(n) AS n FROM cells GROUP BY s),
            total AS (SELECT sum(n) AS rows FROM hist),
            {running('hist', 's, n', 'n', 'below')},
            {running('below', 's, n, below', 'below', 'cumulated')},
            shares AS (SELECT x.s, x.n, x.below, CAST(x.n AS DOUBLE) / t.rows AS share, CAST(x.below AS DOUBLE) / t.rows AS running,
                              CAST(x.cumulated AS DOUBLE) / t.rows AS cumulated
                       FROM cumulated x CROSS JOIN total t)
            SELECT list_transform(list_sort(list({{'r': s, 'x': share}})), lambda e: e.x) AS q,
                   list_transform(list_sort(list({{'r': s, 'x': running}})), lambda e: e.x) AS cq,
                   list_concat([0.0], list_transform(list_sort(list({{'r': s, 'x': cumulated}})), lambda e: e.x)) AS cc,
                   list_sort(list({{'r': s, 'n': n, 'below': below}})) AS hist
            FROM shares""")

    def whole_table(self) -> str:
        """Over ``tdist``: [1 when the whole table satisfies the model, 0 when not (NULL: no rows), its diversity of the model's
        kind]: the table is one group of the models' macros, every rank present. Its inputs come without a
        window over every value (one task on Spark): the running rows from tdist, the running sum of the
        smallest counts per block of counts of one power of two plus the blocks below it."""
        model = self.models.model
        holds = model_holds(model, "v.n", "v.r", "whole", self._ordered())
        running = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        return (f"""
            WITH ranked AS (SELECT h.r AS r, h.n AS n, h.below AS below, floor(log2(h.n)) AS b
                            FROM (SELECT unnest(hist) AS h FROM tdist)),
            sized AS (SELECT r, n, below, b, sum(n) OVER (PARTITION BY b ORDER BY n {running}) AS within FROM ranked),
            blocks AS (SELECT b, sum(n) AS n FROM ranked GROUP BY b),
            earlier AS (SELECT a.b, coalesce(sum(e.n), 0) AS n FROM blocks a LEFT JOIN blocks e ON e.b < a.b GROUP BY a.b),
            totals AS (SELECT sum(n) AS rows, max(n) AS top, count(*) AS ranks FROM ranked),
            valued AS (SELECT x.r, x.n, t.rows AS m_rows, x.below AS m_below,
                              CASE WHEN x.r < t.ranks THEN x.r + 1 END AS m_next, x.within + p.n AS m_tail, t.top AS m_top
                       FROM sized x JOIN earlier p ON p.b = x.b CROSS JOIN totals t)
            SELECT [CASE WHEN count(*) = 0 THEN NULL WHEN {holds} THEN 1.0 ELSE 0.0 END,
                    anon_diversity({model}, v.n, v.m_tail, v.m_top)]
            FROM valued v CROSS JOIN tdist whole""")
