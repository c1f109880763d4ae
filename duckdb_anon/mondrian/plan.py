"""The level steps of Mondrian: one level's queries, written once as DuckDB SQL over placeholder names.

Each step is one method returning DuckDB-dialect text over the relations it reads, named by placeholders
(``state``, ``span``, ``cands``, ``decided``...), and over internal column names only (k0, v0, part...).
:meth:`Plan.sql` renders a text for an engine (engines.base.render): placeholders become the run's
relations, ``__qi_<d>`` the QI columns, ``__p_k`` the value of k (a parameter, never text), and the SQL
macros a step calls are inlined for a dialect other than DuckDB. mondrian()'s generated recursions
(macros.py, checked_macros.py) take the same texts as written, ``__p_k`` being their parameter.

Where each rule lives:

- the cells and their keys: ``sql/10_mondrian.sql`` (anon_cells, anon_keyed_cells, anon_null_key), read by
  cells.py; the labels: ``sql/00_helpers.sql`` (anon_label_text, anon_label_escape), read by release.py;
- how a level cuts (here, once): per partition and QI, width = (hi - lo) / (the table's range), or the
  region's width for split_rule 'inherited'; QIs are tried widest first, ties to the earliest listed,
  among those whose keys differ; the median is the key where the running row count, in key order, first
  reaches rows // 2; strict: the left side is keys <= median and both sides need k rows (else the next
  widest QI is tried); relaxed: the sides get rows // 2 and the rest, tied cells shared in QI-vector
  order, then row order; a partition is named by its offset in a virtual row order: the left piece
  keeps it, the right one adds the left's rows, so names never collide and class ids follow from them;
- cuts whose sides are counted (hierarchies, models, suppression): checked.py.

The tests hold the driver, Spark, both generated recursions and the plain-Python reference
(tests/reference_mondrian.py) to the same release.
"""
from __future__ import annotations

from sqlglot import exp

from duckdb_anon import sql_rules
from duckdb_anon.engines.base import QI, RUN, literal, render
from duckdb_anon.mondrian.models import MODEL_MACROS, NO_MODELS, Models

#: the run's relations of hierarchies and of the sensitive distribution (driver.run makes them)
HIERARCHY_TABLES = ("hanc", "hnode", "tdist")
#: the SQL macros the plan's texts call: called on DuckDB, inlined for another dialect
MACROS = (*MODEL_MACROS, "anon_label_text", "anon_null_key")


def _inline(node: exp.Expression, dialect: str) -> exp.Expression:
    return sql_rules.inline(node, dialect, sql_rules.callees(*MACROS))


class Plan:
    """The queries of one Mondrian run. `k` may be None when the texts are only taken as written."""

    def __init__(self, qis: tuple[QI, ...], k: int | None, mode: str, rule: str, categorical_order: str,
                 dialect: str, medians: str = "running", models: Models = NO_MODELS):
        self.qis, self.k, self.mode, self.rule, self.medians = qis, k, mode, rule, medians
        self.categorical_order, self.dialect, self.models = categorical_order, dialect, models
        self.q = len(qis)
        self.sensitive = models.sensitive is not None

    # ---- rendering -------------------------------------------------------------------------------------
    def sql(self, text: str, source: exp.Expression | None = None, columns: list[str] | None = None,
            **tables: str) -> str:
        """`text` in the engine's dialect: the QI columns (``__qi_<d>``), the sensitive column, the source's
        columns (``__col_<i>``, from `columns``), k (``__p_k``) and the relations put in (the hierarchy
        relations under the run's names unless `tables` names them)."""
        def column(name):
            if name == "__anon_sensitive":
                return self.models.sensitive.name
            if name.startswith("__qi_"):
                return self.qis[int(name[5:])].name
            if name.startswith("__col_") and columns is not None:
                return columns[int(name[6:])]
            return None

        tables = {**{name: RUN + name for name in HIERARCHY_TABLES}, **tables}
        parameters = {"k": literal(self.k)} if self.k is not None else None
        return render(text, self.dialect, column, source, _inline, parameters, **tables)

    def _each(self, template: str, sep: str = ", ") -> str:
        """`template` once per QI, with {d} its position."""
        return sep.join(template.format(d=d) for d in range(self.q))

    def _of_dim(self, dim: str, template: str) -> str:
        """`template` ({d}: a QI position) for the QI whose position is the value of `dim`."""
        return f"CASE {dim} " + self._each(f"WHEN {{d}} THEN {template}", " ") + " END"

    @staticmethod
    def _running(freq: str, by: str) -> str:
        """Rows (`cnt`) per key of `freq` with their running total in key order (`cum`) and the next key
        (`nxt`), per group `by`: the median is the row where `cum` first reaches rows // 2."""
        window = f"PARTITION BY {by} ORDER BY key"
        return (f"SELECT *, CAST(sum(cnt) OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS cum, "
                f"lead(key) OVER ({window}) AS nxt FROM {freq}")

    @staticmethod
    def _at_median(running: str, rows: str) -> str:
        return f"{running}.cum >= {rows} // 2 AND {running}.cum - {running}.cnt < {rows} // 2"

    @staticmethod
    def sensitive_ranks(values: str) -> str:
        """Per sensitive value (column sv of `values`, one row per cell) its rank in value order, NULL last,
        as the measures rank it: rv (the value), r (the rank, from 1)."""
        return f"SELECT sv AS rv, dense_rank() OVER (ORDER BY sv NULLS LAST) AS r FROM {values} GROUP BY sv"

    # ---- the state ---------------------------------------------------------------------------------------
    def span(self) -> str:
        """Over ``cells``: the whole table's key range per QI (the normaliser of widths, the root region),
        its rows and cells."""
        return (f"SELECT sum(n) AS total_rows, count(*) AS cell_count, "
                f"{self._each('min(k{d}) AS lo{d}, max(k{d}) AS hi{d}, max(k{d}) - min(k{d}) AS range{d}')} FROM cells")

    def kept(self) -> tuple[str, str, str]:
        """How a recursion over the levels keeps its pieces (macros.recursion): the columns a piece carries
        from level to level, the state's other columns (constants), and a piece's cell, off, n, part over
        the carried columns. A piece carries its keys (a join back to the cells would hold a hash table over
        every cell for the whole recursion, which DuckDB never spills). Strict mode never cuts a cell, so
        there a piece's offset is 0."""
        region = f", {self._each('rlo{d}, rhi{d}')}" if self.rule == "inherited" else ""
        keys = self._each("k{d}")
        if self.mode == "strict":
            return f"cell, n, part, {keys}{region}", "0::BIGINT AS off", "cell, 0::BIGINT AS off, n, part"
        return f"cell, off, n, part, {keys}{region}", "", "cell, off, n, part"

    def root(self) -> str:
        """Over ``cells`` and ``span``: the first level's state, every cell whole in partition 0 (region: the
        whole table)."""
        region = f", {self._each('s.lo{d} AS rlo{d}, s.hi{d} AS rhi{d}')}" if self.rule == "inherited" else ""
        return (f"SELECT c.cell, 0::BIGINT AS off, c.n::BIGINT AS n, 0::BIGINT AS part, {self._each('c.k{d}')}{region}"
                f"{self._root_extra()} FROM cells c CROSS JOIN span s")

    def _root_extra(self) -> str:
        """What else the root's pieces carry (CheckedPlan: the sensitive rank and the budget)."""
        return ""

    # ---- one level ---------------------------------------------------------------------------------------
    def candidates(self) -> str:
        """Over ``state`` and ``span``: per partition that could still be cut (2k rows or more): rows, and per
        QI lo, hi, width."""
        region = f", {self._each('min(rlo{d}) AS rlo{d}, max(rhi{d}) AS rhi{d}')}" if self.rule == "inherited" else ""
        lo, hi = ("rlo", "rhi") if self.rule == "inherited" else ("lo", "hi")
        width = self._each(f"CASE WHEN s.range{{d}} > 0 THEN (p.{hi}{{d}} - p.{lo}{{d}}) / s.range{{d}} ELSE 0.0 END AS w{{d}}")
        return (f"SELECT p.*, {width} FROM "
                f"(SELECT part, sum(n) AS rows, max(n) = 1 AS unit, {self._each('min(k{d}) AS lo{d}, max(k{d}) AS hi{d}')}{region} "
                f" FROM state GROUP BY part HAVING sum(n) >= 2 * __p_k) p CROSS JOIN span s")

    def _eligible(self, d: int) -> str:
        return f"CASE WHEN hi{d} > lo{d} THEN w{d} ELSE -1.0 END"

    def _widest(self) -> tuple[str, str]:
        """Which QI a candidate cuts first: SQL over its lo, hi and w columns for the width of its widest QI
        whose keys differ (-1 when none), and, over that width as column ``best``, that QI's position, ties
        to the earliest."""
        # Spark's greatest() needs two arguments or more
        best = f"greatest({', '.join(self._eligible(d) for d in range(self.q))})" if self.q > 1 else self._eligible(0)
        pick = "CASE " + " ".join(f"WHEN {self._eligible(d)} = best THEN {d}" for d in range(self.q)) + " END"
        return best, pick

    def _valid(self) -> str:
        return "cum >= __p_k AND rows - cum >= __p_k" if self.mode == "strict" else "rows // 2 >= __p_k"

    def _medians(self, picks: str, prefix: str) -> str:
        """CTEs (named `prefix`...) ending in ``<prefix>median``: per (part, dim) of `picks` (columns part,
        dim, rows, unit), the median key (split), the next key (nxt), rows at it (cnt) and up to it (cum):
        the key where the running row count, in key order, first reaches rows // 2.

        'running' medians total the rows per key and run a sum in key order (a sort per level). 'quantile'
        medians take the parts whose cells hold one row each (unit) from quantile_disc over their cells
        instead: it picks the element at (count - 1) // 2, so an odd count gets one -infinity element and
        the pick is the (rows // 2)-th either way, and one aggregate gives its counts. Where nearly every
        key is distinct, the aggregate is cheaper than the sort; where cells hold many rows, the running
        sum over few keys is."""
        key = self._of_dim("p.dim", "s.k{d}")
        quantiles = self.medians == "quantile"
        general = "WHERE NOT unit" if quantiles else ""  # the parts the running sum still serves
        running = f"""
                SELECT r.part, r.dim, r.key AS split, r.nxt, r.cnt, r.cum
                FROM {prefix}running r JOIN {picks} p ON r.part = p.part AND r.dim = p.dim
                WHERE {self._at_median('r', 'p.rows')}"""
        quantile = f"""
                SELECT k.part, k.dim, u.split, min(CASE WHEN k.key > u.split THEN k.key END) AS nxt,
                       CAST(sum(CASE WHEN k.key = u.split THEN k.n ELSE 0 END) AS BIGINT) AS cnt,
                       CAST(sum(CASE WHEN k.key <= u.split THEN k.n ELSE 0 END) AS BIGINT) AS cum
                FROM {prefix}keyed k JOIN {prefix}unit_split u ON k.part = u.part AND k.dim = u.dim
                GROUP BY k.part, k.dim, u.split
                UNION ALL"""
        unit_split = f"""
            {prefix}unit_split AS (
                SELECT part, dim, quantile_disc(key, 0.5) AS split
                FROM (SELECT part, dim, key FROM {prefix}keyed WHERE unit
                      UNION ALL SELECT part, dim, CAST('-infinity' AS DOUBLE) FROM {picks} WHERE unit AND rows % 2 = 1)
                GROUP BY part, dim),"""
        return f"""
            {prefix}keyed AS (SELECT p.part, p.dim, p.unit, {key} AS key, s.n FROM state s JOIN {picks} p ON s.part = p.part),
            {unit_split if quantiles else ''}
            {prefix}freq AS (SELECT part, dim, key, CAST(sum(n) AS BIGINT) AS cnt FROM {prefix}keyed {general}
                             GROUP BY part, dim, key),
            {prefix}running AS ({self._running(prefix + 'freq', 'part, dim')}),
            {prefix}median AS ({quantile if quantiles else ''}{running})"""

    def attempt(self) -> str:
        """Over ``state`` and ``cands``: each candidate's widest QI whose keys differ, its median, and whether
        the cut there is allowed: part, dim, split, nxt (the next key), cnt (rows at the split), cum (rows up
        to it), rows, valid; one row per candidate with a QI whose keys differ."""
        best, pick = self._widest()
        return (f"""
            WITH tried AS (SELECT part, rows, unit, {pick} AS dim
                           FROM (SELECT *, {best} AS best FROM cands) WHERE best >= 0),
            {self._medians('tried', 'tried_')}
            SELECT t.part, t.dim, m.split, m.nxt, m.cnt, m.cum, t.rows, {self._valid()} AS valid
            FROM tried_median m JOIN tried t ON m.part = t.part""")

    def fallback(self) -> str:
        """Strict mode, over ``state``, ``cands`` and ``attempt``: for the candidates whose widest cut failed,
        every other QI's median at once; per partition the widest QI whose cut is allowed (ties to the
        earliest). Same columns as attempt()."""
        positions = self._each("SELECT {d} AS d", " UNION ALL ")
        # CTE names differ from attempt()'s: Spark refuses a name defined twice in one statement
        return (f"""
            WITH failed AS (SELECT c.*, a.dim AS tried FROM cands c JOIN attempt a ON c.part = a.part WHERE NOT a.valid),
            others AS (SELECT f.part, p.d AS dim, f.rows, f.unit, {self._of_dim('p.d', 'f.w{d}')} AS w
                       FROM failed f CROSS JOIN ({positions}) p
                       WHERE {self._of_dim('p.d', 'f.hi{d} > f.lo{d}')} AND f.tried <> p.d),
            {self._medians('others', 'others_')},
            every_ranked AS (SELECT m.*, o.rows, row_number() OVER (PARTITION BY m.part ORDER BY o.w DESC, m.dim) AS choice
                             FROM others_median m JOIN others o ON m.part = o.part AND m.dim = o.dim WHERE {self._valid()})
            SELECT part, dim, split, nxt, cnt, cum, rows, true AS valid FROM every_ranked WHERE choice = 1""")

    def decisions(self) -> str:
        """Over ``cands``, ``attempt`` and (strict) ``fallback``: the allowed cuts (one per partition) with
        their candidate's ranges and widths."""
        tried = ["attempt"] + (["fallback"] if self.mode == "strict" else [])
        cuts = " UNION ALL ".join(f"SELECT part, dim, split, nxt, cnt, cum FROM {t} WHERE valid" for t in tried)
        region = f", {self._each('c.rlo{d}, c.rhi{d}')}" if self.rule == "inherited" else ""
        return (f"SELECT cuts.*, c.rows, {self._each('c.lo{d}, c.hi{d}, c.w{d}')}{region} "
                f"FROM ({cuts}) cuts JOIN cands c ON c.part = cuts.part")

    def level(self) -> str:
        """Over ``state`` and ``span``: one level's decisions in one statement (the steps above as CTEs): per
        partition that can be cut, the cut (dim, split, nxt, cnt, cum) and its candidate's rows, ranges and
        widths."""
        fallback = f", fallback AS ({self.fallback()})" if self.mode == "strict" else ""
        return f"WITH cands AS ({self.candidates()}), attempt AS ({self.attempt()}){fallback} {self.decisions()}"

    def decide(self) -> str:
        """CTEs over ``state`` and ``span`` ending in ``decided`` (a recursion's one level)."""
        return f"decided AS ({self.level()})"

    def _relaxed_sharing(self) -> tuple[str, str]:
        """Relaxed mode: the rows of a piece that go left (lefts), the tied rows before it (before)."""
        lefts = ("CASE WHEN v < split THEN n WHEN v > split THEN 0 "
                 "ELSE least(greatest(go_left - (cum - cnt) - before, 0), n) END")
        before = (f"coalesce(sum(n) OVER (PARTITION BY part, v = split ORDER BY {self._each('k{d}')}, cell, off "
                  "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)")
        return lefts, before

    def _regions(self) -> tuple[str, str]:
        """Split_rule 'inherited': the columns a cut reads (region_in) and each piece's region (region_out)."""
        if self.rule != "inherited":
            return "", ""
        region_in = f", {self._each('s.rlo{d}, s.rhi{d}, d.lo{d}, d.hi{d}, d.w{d}')}"
        right_lo = ("CASE WHEN cum > rows // 2 THEN split ELSE coalesce(nxt, split) END" if self.mode == "relaxed"
                    else "coalesce(nxt, split)")
        chosen_w = self._of_dim("dim", "w{d}")
        outs = []
        for d in range(self.q):  # the chosen QI narrows; the QIs examined before it take their actual range
            examined = f"(w{d} > {chosen_w} OR (w{d} = {chosen_w} AND {d} <= dim))"
            outs.append(f"CASE WHEN dim = {d} THEN CASE WHEN side = 0 THEN lo{d} ELSE {right_lo} END "
                        f"WHEN {examined} THEN lo{d} ELSE rlo{d} END AS rlo{d}")
            outs.append(f"CASE WHEN dim = {d} THEN CASE WHEN side = 0 THEN split ELSE hi{d} END "
                        f"WHEN {examined} THEN hi{d} ELSE rhi{d} END AS rhi{d}")
        return region_in, ", " + ", ".join(outs)

    def cut(self) -> str:
        """Over ``state`` and ``decided``: the next level's state, every piece of a decided partition cut at
        its median. Relaxed mode shares the cells tied at the median: in QI-vector order, then row order,
        each takes what the left side still needs. Split_rule 'inherited' also narrows each piece's region."""
        key = self._of_dim("d.dim", "s.k{d}")
        go_left = "d.cum" if self.mode == "strict" else "d.rows // 2"
        region_in, region_out = self._regions()
        if self.mode == "strict":  # cells stay whole: each goes to one side, in one pass
            sides = ("sides AS (SELECT *, off AS new_off, n AS new_n, part + side * go_left AS new_part "
                     "FROM (SELECT *, CASE WHEN v <= split THEN 0 ELSE 1 END AS side FROM joined))")
        else:  # a cell tied at the median may send rows to both sides
            lefts, before = self._relaxed_sharing()
            sides = (f"shared AS (SELECT *, {lefts} AS lefts FROM (SELECT *, {before} AS before FROM joined)), "
                     "sides AS (SELECT *, 0 AS side, off AS new_off, lefts AS new_n, part AS new_part FROM shared WHERE lefts > 0 "
                     "UNION ALL "
                     "SELECT *, 1, off + lefts, n - lefts, part + go_left FROM shared WHERE n - lefts > 0)")
        return f"""
            WITH joined AS (SELECT s.cell, s.off, s.n, s.part, {self._each('s.k{d}')}{region_in},
                                   d.dim, d.split, d.nxt, d.cnt, d.cum, d.rows, {go_left} AS go_left, {key} AS v
                            FROM state s JOIN decided d ON s.part = d.part),
            {sides}
            SELECT cell, new_off AS off, new_n AS n, new_part AS part, {self._each('k{d}')}{region_out} FROM sides"""

    @staticmethod
    def undecided(piece: str) -> str:
        """SQL over ``decided``: is the piece `piece` (an alias of ``state``) in a partition no cut was found
        for, so final? (Against the decided partitions, few, not the finished pieces, possibly every one:
        a join's table over those would not spill.)"""
        return f"{piece}.part NOT IN (SELECT part FROM decided)"

    def finished(self) -> str:
        """Over ``state`` and ``decided``: the pieces of the partitions no cut was found for: final."""
        return f"SELECT s.cell, s.off, s.n, s.part FROM state s WHERE {self.undecided('s')}"
