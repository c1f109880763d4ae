"""The SQL of level-synchronous Mondrian, written once and generated for each engine's dialect by sqlglot.

Every query is SQL text over internal names only (k0, v0, part, ...), parsed by sqlglot as DuckDB SQL and
written out in the engine's dialect. User input never enters the text: a QI column appears as a
placeholder column ``__qi_<i>`` and the source as ``__anon_source``, both replaced in the parsed tree by
quoted identifiers, and numbers (k) are validated integers.

The rules are those of ``sql/10_mondrian.sql`` (the pure-SQL ``mondrian()``), and the tests hold the two
to the same release:

- cells: rows with identical QI values form one cell (strict Mondrian never separates them); per QI a
  DOUBLE key: the value for numbers, microseconds since the epoch for dates and timestamps, and for
  categories a code 0 .. m-1 by first appearance (the cell's first row) or by value; a NULL number sorts
  one table range beyond the largest value;
- per partition and QI, width = (hi - lo) / (the table's range), or the region's width for split_rule
  'inherited'; QIs are tried widest first, ties to the earliest listed, among those whose keys differ;
- the median is the key where the running row count, in key order, first reaches rows // 2; strict: the
  left side is keys <= median and both sides need k rows (else the next widest QI is tried); relaxed:
  the sides get rows // 2 and the rest, tied cells shared in QI-vector order, then row order;
- a partition is named by its offset in a virtual row order: the left piece keeps it, the right one
  adds the left's rows, so names never collide and class ids follow from them.

With hierarchies, a privacy model or suppression (``Models``), cells, labels and the release follow them
here (a hierarchy's QI keyed by its leaf code and labelled by the covering node, suppressed rows '*'), and
:class:`~duckdb_anon.mondrian.checked.CheckedPlan` decides and cuts each level.
"""
from __future__ import annotations

from sqlglot import exp

from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, QI, RUN, TEMPORAL, render  # noqa: F401 (the kinds plans read)
from duckdb_anon.mondrian.models import NO_MODELS, Models, inline_models


def _escaped(value: str) -> str:
    """SQL for one category value as a text label writes it: the rule of anon_label_escape
    (sql/00_helpers.sql), in SQL every engine reads (`value` is an internal column name)."""
    text = f"CAST({value} AS VARCHAR)"
    return (f"CASE WHEN {value} IS NULL THEN 'NULL' WHEN {text} IN ('NULL', '*') THEN '\\' || {text} "
            f"ELSE replace(replace(replace(replace({text}, '\\', '\\\\'), ',', '\\,'), '{{', '\\{{'), '}}', '\\}}') END")


class Plan:
    """The queries of one Mondrian run, in one dialect, over tables named by `names`."""

    def __init__(self, qis: tuple[QI, ...], k: int, mode: str, rule: str, categorical_order: str, dialect: str,
                 medians: str = "running", models: Models = NO_MODELS):
        self.qis, self.k, self.mode, self.rule, self.medians = qis, int(k), mode, rule, medians
        self.categorical_order, self.dialect, self.models = categorical_order, dialect, models
        self.q = len(qis)
        self.sensitive = models.sensitive is not None
        # the run's relations of hierarchies and of the sensitive distribution (driver.run makes them)
        self.hierarchy_tables = {name: RUN + name for name in ("hanc", "hnode", "tdist")}

    # ---- rendering -------------------------------------------------------------------------------------
    def sql(self, text: str, source: exp.Expression | None = None, columns: list[str] | None = None,
            **tables: str) -> str:
        """Parse DuckDB-dialect `text`, put the QI columns (``__qi_<d>``), the source's columns
        (``__col_<i>``, from `columns`) and the tables in, write it in the engine's dialect."""
        def column(name):
            if name == "__anon_sensitive":
                return self.models.sensitive.name
            if name.startswith("__qi_"):
                return self.qis[int(name[5:])].name
            if name.startswith("__col_") and columns is not None:
                return columns[int(name[6:])]
            return None

        return render(text, self.dialect, column, source, inline_models, **tables)

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

    # ---- cells -----------------------------------------------------------------------------------------
    def _grouped(self, numbered: bool) -> str:
        row = "__anon_row" if numbered else "row_number() OVER ()"
        sv = ", sv" if self.sensitive else ""  # with a sensitive column, a cell also shares its value
        return (f"SELECT {self._each('v{d}')}{sv}, count(*) AS n, min(__anon_row) AS cell FROM "
                f"(SELECT {row} AS __anon_row, {self._each('__qi_{d} AS v{d}')}"
                f"{', __anon_sensitive AS sv' if self.sensitive else ''} FROM __anon_source) "
                f"GROUP BY {self._each('v{d}')}{sv}")

    def grouped(self, source: exp.Expression, numbered: bool) -> str:
        """One row per distinct QI vector: v<d> (the values), n (rows), cell (its first row).

        `numbered`: the source already has a row number __anon_row (Spark); else DuckDB's scan position."""
        return self.sql(self._grouped(numbered), source=source)

    def _code_keys(self, d: int) -> str:
        return f"SELECT v{d} AS cv, min(cell) AS first_row FROM grouped GROUP BY v{d}"

    def code_order(self) -> str:
        """The column of code_keys() whose ascending order (NULLs last) numbers a categorical QI's values:
        its first row (categorical order 'appearance') or the value itself ('value')."""
        return "first_row" if self.categorical_order == "appearance" else "cv"

    def code_keys(self, d: int, grouped: str) -> str:
        """Per value of categorical QI `d`: cv (the value) and first_row (its first row); a value's code is its
        place, from 0, in code_order(). For engines that number rows themselves (Engine.number)."""
        return self.sql(self._code_keys(d), grouped=grouped)

    def sensitive_keys(self, grouped: str) -> str:
        """The distinct sensitive values (rv); a value's rank is its place, from 1, in value order, NULL last.
        For engines that number rows themselves (Engine.number), as code_keys()."""
        return self.sql("SELECT DISTINCT sv AS rv FROM grouped", grouped=grouped)

    def cells(self, source: exp.Expression, numbered: bool, grouped: str | None = None,
              numbered_codes: dict[int, str] | None = None, numbered_ranks: str | None = None) -> str:
        """grouped() with each QI's key k<d> added. `grouped`: a relation holding grouped() (engines that
        would compute it once per reference, as Spark inlines CTEs); else computed here. `numbered_codes`:
        per categorical QI, a relation holding code_keys() numbered by code_order() in __anon_row (from 1);
        else the codes are numbered here by a window over every value. `numbered_ranks`: likewise the
        sensitive values, sensitive_keys() numbered by rv."""
        codes, joins, raw = [], [], []
        for d, qi in enumerate(self.qis):
            if d in self.models.hier:  # the leaf's code (NULL when the hierarchy lacks the value: an error)
                joins.append(f"LEFT JOIN (SELECT DISTINCT leaf, code FROM hanc WHERE d = {d}) h{d} "
                             f"ON h{d}.leaf = CAST(g.v{d} AS VARCHAR)")
                raw.append(f"CAST(h{d}.code AS DOUBLE) AS r{d}")
            elif qi.kind == CATEGORICAL:
                codes.append(f"c{d} AS (SELECT cv, (__anon_row - 1)::DOUBLE AS code FROM codes{d})"
                             if d in (numbered_codes or {}) else
                             f"c{d} AS (SELECT cv, (dense_rank() OVER (ORDER BY {self.code_order()} NULLS LAST) - 1)::DOUBLE "
                             f"AS code FROM ({self._code_keys(d)}))")
                joins.append(f"LEFT JOIN c{d} ON g.v{d} IS NOT DISTINCT FROM c{d}.cv")
                raw.append(f"c{d}.code AS r{d}")
            elif qi.kind == TEMPORAL:
                raw.append(f"CAST({qi.key.format(x=f'g.v{d}')} AS DOUBLE) AS r{d}")
            else:
                raw.append(f"g.v{d}::DOUBLE AS r{d}")
        sens = ""
        if self.sensitive:  # the sensitive value's rank in value order, NULL last (as the measures rank it)
            codes.append("sranks AS (SELECT rv, CAST(__anon_row AS INTEGER) AS r FROM svalues)" if numbered_ranks else
                         f"sranks AS ({self.sensitive_ranks('grouped')})")
            joins.append("LEFT JOIN sranks ON g.sv IS NOT DISTINCT FROM sranks.rv")
            sens = ", g.sv, sranks.r AS s"
        ctes = [*([] if grouped else [f"grouped AS ({self._grouped(numbered)})"]), *codes,
                f"coded AS (SELECT g.cell, g.n, {self._each('g.v{d} AS v{d}')}{sens}, {', '.join(raw)} "
                f"FROM grouped g {' '.join(joins)})",
                f"bounds AS (SELECT {self._each('min(r{d}) AS lo{d}, max(r{d}) AS hi{d}')} FROM coded)"]
        # a NULL number sorts one table range beyond the largest value (0 when the column is all NULL); a
        # hierarchy's code stays NULL where it lacks the value (the driver reports it)
        keys = ", ".join(f"r{d} AS k{d}" if d in self.models.hier else
                         f"coalesce(r{d}, coalesce(hi{d} + greatest(hi{d} - lo{d}, 1), 0)) AS k{d}" for d in range(self.q))
        tables = {**({"grouped": grouped} if grouped else {}),
                  **{f"codes{d}": name for d, name in (numbered_codes or {}).items()}, **self.hierarchy_tables,
                  **({"svalues": numbered_ranks} if numbered_ranks else {})}
        return self.sql(f"WITH {', '.join(ctes)} SELECT cell, n, {self._each('v{d}')}{', sv, s' if self.sensitive else ''}, "
                        f"{keys} FROM coded CROSS JOIN bounds", source=source, **tables)

    @staticmethod
    def sensitive_ranks(values: str) -> str:
        """Per sensitive value (column sv of `values`, one row per cell) its rank in value order, NULL last,
        as the measures rank it: rv (the value), r (the rank, from 1)."""
        return f"SELECT sv AS rv, dense_rank() OVER (ORDER BY sv NULLS LAST) AS r FROM {values} GROUP BY sv"

    def keys(self, cells: str) -> str:
        """What the levels read of the cells (root()): cell, n, the keys, and the sensitive rank (s)."""
        return self.sql(f"SELECT cell, n, {self._each('k{d}')}{', s' if self.sensitive else ''} FROM cells", cells=cells)

    def span(self, cells: str) -> str:
        """The whole table's key range per QI (the normaliser of widths, the root region) and its rows."""
        return self.sql(f"SELECT sum(n) AS total_rows, count(*) AS cell_count, {self._each('min(k{d}) AS lo{d}, max(k{d}) AS hi{d}, max(k{d}) - min(k{d}) AS range{d}')} "
                        f"FROM cells", cells=cells)

    def kept(self) -> tuple[str, str, str]:
        """How a recursion over the levels keeps its pieces (mondrian/macros.py): the columns a piece carries
        from level to level, the state's other columns (constants), and a piece's cell, off, n, part over
        the carried columns. A piece carries its keys: reading them back from the cells by a join instead
        held a hash table over every cell for the whole recursion (~800 MB at 10M cells), which DuckDB
        never spills. Strict mode never cuts a cell, so there a piece's offset is 0."""
        region = f", {self._each('rlo{d}, rhi{d}')}" if self.rule == "inherited" else ""
        keys = self._each("k{d}")
        if self.mode == "strict":
            return f"cell, n, part, {keys}{region}", "0::BIGINT AS off", "cell, 0::BIGINT AS off, n, part"
        return f"cell, off, n, part, {keys}{region}", "", "cell, off, n, part"

    def root(self, cells: str, span: str) -> str:
        """The first level's state: every cell whole, in partition 0 (region: the whole table). With models,
        each piece also carries its sensitive rank (s) and its partition's suppression budget."""
        region = f", {self._each('s.lo{d} AS rlo{d}, s.hi{d} AS rhi{d}')}" if self.rule == "inherited" else ""
        checked = (f", {'c.s' if self.sensitive else 'CAST(NULL AS BIGINT) AS s'}, "
                   f"CAST(floor({self._suppress()} * s.total_rows) AS BIGINT) AS budget"
                   if self.models.checked else "")
        return self.sql(f"SELECT c.cell, 0::BIGINT AS off, c.n::BIGINT AS n, 0::BIGINT AS part, {self._each('c.k{d}')}{region}"
                        f"{checked} FROM cells c CROSS JOIN span s", cells=cells, span=span)

    # ---- one level ---------------------------------------------------------------------------------------
    def _candidates(self) -> str:
        """Per partition that could still be cut (2k rows or more): rows, and per QI lo, hi, width."""
        region = f", {self._each('min(rlo{d}) AS rlo{d}, max(rhi{d}) AS rhi{d}')}" if self.rule == "inherited" else ""
        lo, hi = ("rlo", "rhi") if self.rule == "inherited" else ("lo", "hi")
        width = self._each(f"CASE WHEN s.range{{d}} > 0 THEN (p.{hi}{{d}} - p.{lo}{{d}}) / s.range{{d}} ELSE 0.0 END AS w{{d}}")
        return (f"SELECT p.*, {width} FROM "
                f"(SELECT part, sum(n) AS rows, max(n) = 1 AS unit, {self._each('min(k{d}) AS lo{d}, max(k{d}) AS hi{d}')}{region} "
                f" FROM state GROUP BY part HAVING sum(n) >= {2 * self.k}) p CROSS JOIN span s")

    def _eligible(self, d: int) -> str:
        return f"CASE WHEN hi{d} > lo{d} THEN w{d} ELSE -1.0 END"

    def _valid(self) -> str:
        return (f"cum >= {self.k} AND rows - cum >= {self.k}" if self.mode == "strict"
                else f"rows // 2 >= {self.k}")

    def _medians(self, picks: str, prefix: str) -> str:
        """CTEs (named `prefix`...) ending in ``<prefix>median``: per (part, dim) of `picks` (columns part,
        dim, rows, unit), the median key (split), the next key (nxt), rows at it (cnt) and up to it (cum):
        the key where the running row count, in key order, first reaches rows // 2.

        'running' medians total the rows per key and run a sum in key order (a sort per level). 'quantile'
        medians take the parts whose cells hold one row each (unit) from quantile_disc over their cells
        instead: it picks the element at (count - 1) // 2, so an odd count gets one -infinity element and
        the pick is the (rows // 2)-th either way, and one aggregate gives its counts. Where nearly every
        key is distinct, the aggregate costs a third of the sort; where cells hold many rows, the running
        sum over few keys is cheaper."""
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

    def _attempt(self) -> str:
        """Each candidate's widest QI whose keys differ: its median, and whether the cut there is allowed.
        Returns part, dim, split, nxt (the next key), cnt (rows at the split), cum (rows up to it), rows,
        valid; one row per candidate with a QI whose keys differ."""
        # Spark's greatest() needs two arguments or more
        best = f"greatest({', '.join(self._eligible(d) for d in range(self.q))})" if self.q > 1 else self._eligible(0)
        pick = " ".join(f"WHEN {self._eligible(d)} = best THEN {d}" for d in range(self.q))
        return (f"""
            WITH tried AS (SELECT part, rows, unit, CASE {pick} END AS dim
                           FROM (SELECT *, {best} AS best FROM cands) WHERE best >= 0),
            {self._medians('tried', 'tried_')}
            SELECT t.part, t.dim, m.split, m.nxt, m.cnt, m.cum, t.rows, {self._valid()} AS valid
            FROM tried_median m JOIN tried t ON m.part = t.part""")

    def _fallback(self) -> str:
        """Strict mode, the candidates whose widest cut failed: every other QI's median at once; per
        partition the widest QI whose cut is allowed (ties to the earliest). Same columns as attempt()."""
        positions = self._each("SELECT {d} AS d", " UNION ALL ")
        # CTE names differ from _attempt()'s: Spark refuses a name defined twice in one statement
        return (f"""
            WITH failed AS (SELECT c.*, a.dim AS tried FROM cands c JOIN attempt a ON c.part = a.part WHERE NOT a.valid),
            others AS (SELECT f.part, p.d AS dim, f.rows, f.unit, {self._of_dim('p.d', 'f.w{d}')} AS w
                       FROM failed f CROSS JOIN ({positions}) p
                       WHERE {self._of_dim('p.d', 'f.hi{d} > f.lo{d}')} AND f.tried <> p.d),
            {self._medians('others', 'others_')},
            every_ranked AS (SELECT m.*, o.rows, row_number() OVER (PARTITION BY m.part ORDER BY o.w DESC, m.dim) AS choice
                             FROM others_median m JOIN others o ON m.part = o.part AND m.dim = o.dim WHERE {self._valid()})
            SELECT part, dim, split, nxt, cnt, cum, rows, true AS valid FROM every_ranked WHERE choice = 1""")

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

    def cut(self, state: str, decided: str) -> str:
        """The next level's state: every piece of a decided partition, cut at its median. Relaxed mode shares
        the cells tied at the median: in QI-vector order, then row order, each takes what the left side
        still needs. Split_rule 'inherited' also narrows each piece's region."""
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
        return self.sql(f"""
            WITH joined AS (SELECT s.cell, s.off, s.n, s.part, {self._each('s.k{d}')}{region_in},
                                   d.dim, d.split, d.nxt, d.cnt, d.cum, d.rows, {go_left} AS go_left, {key} AS v
                            FROM state s JOIN decided d ON s.part = d.part),
            {sides}
            SELECT cell, new_off AS off, new_n AS n, new_part AS part, {self._each('k{d}')}{region_out} FROM sides""",
                        state=state, decided=decided)

    def candidates(self, state: str, span: str) -> str:
        return self.sql(self._candidates(), state=state, span=span, **self.hierarchy_tables)

    def attempt(self, state: str, cands: str) -> str:
        return self.sql(self._attempt(), state=state, cands=cands)

    def fallback(self, state: str, cands: str, attempt: str) -> str:
        return self.sql(self._fallback(), state=state, cands=cands, attempt=attempt)

    def _decisions(self) -> str:
        """The allowed cuts (one per partition) with their candidate's ranges and widths."""
        tried = ["attempt"] + (["fallback"] if self.mode == "strict" else [])
        cuts = " UNION ALL ".join(f"SELECT part, dim, split, nxt, cnt, cum FROM {t} WHERE valid" for t in tried)
        region = f", {self._each('c.rlo{d}, c.rhi{d}')}" if self.rule == "inherited" else ""
        return (f"SELECT cuts.*, c.rows, {self._each('c.lo{d}, c.hi{d}, c.w{d}')}{region} "
                f"FROM ({cuts}) cuts JOIN cands c ON c.part = cuts.part")

    def decisions(self, cands: str, attempt: str, fallback: str | None = None) -> str:
        return self.sql(self._decisions(), cands=cands, attempt=attempt,
                        **({"fallback": fallback} if fallback else {}))

    def level(self, state: str, span: str) -> str:
        """One level's decisions in one statement (the steps above as CTEs): per partition that can be
        cut, the cut (dim, split, nxt, cnt, cum) and its candidate's rows, ranges and widths."""
        fallback = f", fallback AS ({self._fallback()})" if self.mode == "strict" else ""
        return self.sql(f"WITH cands AS ({self._candidates()}), attempt AS ({self._attempt()}){fallback} "
                        f"{self._decisions()}", state=state, span=span)

    def finished(self, state: str, decided: str) -> str:
        """The pieces of the partitions no cut was found for: final."""
        return self.sql("SELECT s.cell, s.off, s.n, s.part FROM state s WHERE s.part NOT IN (SELECT part FROM decided)",
                        state=state, decided=decided)

    # ---- the release -------------------------------------------------------------------------------------
    def labels(self, cells: str, final: str) -> str:
        """Per class (partition): rows, and per QI its text label and typed bounds (lo, hi, mean).

        Numbers and dates read "lo-hi" ("lo/hi" for dates and times) or the value, then ",NULL" when the
        class also holds NULL; categories read as the value, or the set of values present in key order,
        "{a,b}", each escaped as _escaped writes it. A QI with a hierarchy reads as the deepest node
        covering the class's leaves; suppressed rows (part -1) read '*', their typed bounds NULL."""
        ctes, joins, cols = ["members AS (SELECT f.part, f.n, "
                             f"{self._each('c.v{d}, c.k{d}')} FROM final f JOIN cells c ON f.cell = c.cell)"], [], []
        for d, qi in enumerate(self.qis):
            if qi.kind == CATEGORICAL:
                ctes.append(f"set{d} AS (SELECT part, count(*) AS m, max(v{d}) AS one, "
                            # a list sorted once per class: faster than an ordered string_agg
                            f"array_to_string(list_transform(list_sort(list({{'k': k{d}, 's': {_escaped(f'v{d}')}}})), "
                            f"lambda x: x.s), ',') AS vals, "
                            f"arg_min(v{d}, k{d}) FILTER (WHERE v{d} IS NOT NULL) AS lo, "
                            f"arg_max(v{d}, k{d}) FILTER (WHERE v{d} IS NOT NULL) AS hi "
                            f"FROM (SELECT DISTINCT part, v{d}, k{d} FROM members) GROUP BY part)")
                joins.append(f"JOIN set{d} ON set{d}.part = b.part")
                cols.append([f"CASE WHEN set{d}.m = 1 THEN CASE WHEN set{d}.one IS NOT NULL THEN {_escaped(f'set{d}.one')} END "
                             f"ELSE '{{' || set{d}.vals || '}}' END", f"set{d}.lo", f"set{d}.hi", "CAST(NULL AS DOUBLE)"])
            else:
                dash = "/" if qi.kind == TEMPORAL else "-"
                mean = ("CAST(NULL AS DOUBLE)" if qi.kind == TEMPORAL
                        else f"b.vsum{d} / b.vrows{d}")
                cols.append([f"CASE WHEN b.lo{d} IS NULL THEN NULL ELSE CASE WHEN b.lo{d} = b.hi{d} THEN CAST(b.lo{d} AS VARCHAR) "
                             f"ELSE CAST(b.lo{d} AS VARCHAR) || '{dash}' || CAST(b.hi{d} AS VARCHAR) END "
                             f"|| CASE WHEN b.nulls{d} > 0 THEN ',NULL' ELSE '' END END", f"b.lo{d}", f"b.hi{d}", mean])
        sums = [f"min(k{d}) AS klo{d}, max(k{d}) AS khi{d}" for d in self.models.hier]
        for d, qi in enumerate(self.qis):
            sums.append(f"max(CASE WHEN v{d} IS NULL THEN 1 ELSE 0 END) AS nulls{d}")
            if qi.kind != CATEGORICAL:
                sums.append(f"min(v{d}) AS lo{d}, max(v{d}) AS hi{d}")
            if qi.kind == NUMERIC:
                sums.append(f"sum(CAST(v{d} AS DOUBLE) * n) AS vsum{d}, sum(CASE WHEN v{d} IS NOT NULL THEN n END) AS vrows{d}")
        ctes.append(f"base AS (SELECT part, sum(n) AS size, {', '.join(sums)} FROM members GROUP BY part)")
        for d in self.models.hier:
            ctes.append(f"lca{d} AS (SELECT b.part, arg_max(h.name, h.depth) AS name FROM base b JOIN hnode h "
                        f"ON h.d = {d} AND h.lo <= b.klo{d} AND h.hi >= b.khi{d} GROUP BY b.part)")
            joins.append(f"LEFT JOIN lca{d} ON lca{d}.part = b.part")
            cols[d][0] = f"lca{d}.name"
        if self.models.suppress > 0:
            cols = [[f"CASE WHEN b.part < 0 THEN '*' ELSE {c[0]} END"] + [f"CASE WHEN b.part >= 0 THEN {e} END" for e in c[1:]]
                    for c in cols]
        out = ", ".join(f"{c[0]} AS text{d}, {c[1]} AS lo{d}, {c[2]} AS hi{d}, {c[3]} AS mean{d}" for d, c in enumerate(cols))
        return self.sql(f"WITH {', '.join(ctes)} SELECT b.part, b.size, {out} FROM base b {' '.join(joins)}",
                        cells=cells, final=final, **self.hierarchy_tables)

    def release(self, source: exp.Expression, columns: list[str], cells: str, final: str, labels: str,
                shape: str, numbered: bool) -> str:
        """Every source row and column, in the source's column order, each QI replaced by its class's label:
        `shape` 'text' (the rendering) or 'typed' (STRUCT(lo, hi, mean)). A cell that relaxed mode cut into
        pieces sends its rows to the pieces in row order."""
        positions = {qi.name.lower(): d for d, qi in enumerate(self.qis)}
        out = []
        for i, name in enumerate(columns):
            d = positions.get(name.lower())
            if d is None:
                out.append(f"r.__col_{i}")
            elif shape == "text":
                out.append(f"l.text{d} AS __col_{i}")
            else:
                out.append(f"{{'lo': l.lo{d}, 'hi': l.hi{d}, 'mean': l.mean{d}}} AS __col_{i}")
        match = " AND ".join([f"r.__qi_{d} IS NOT DISTINCT FROM c.v{d}" for d in range(self.q)]
                             + (["r.__anon_sensitive IS NOT DISTINCT FROM c.sv"] if self.sensitive else []))
        row = "__anon_row" if numbered else "row_number() OVER ()"
        if self.mode == "strict":  # a cell is never cut: rows find their class through their cell alone
            text = f"""
                SELECT {', '.join(out)} FROM __anon_source r JOIN cells c ON {match}
                JOIN final f ON f.cell = c.cell JOIN labels l ON l.part = f.part"""
        else:
            text = f"""
                WITH rows AS (SELECT {row} AS __anon_row_id, * FROM __anon_source),
                located AS (SELECT r.*, c.cell AS __anon_cell FROM rows r JOIN cells c ON {match}),
                whole AS (SELECT cell, min(part) AS part FROM final GROUP BY cell HAVING count(*) = 1),
                ranked AS (SELECT *, row_number() OVER (PARTITION BY __anon_cell ORDER BY __anon_row_id) - 1 AS __anon_rank
                           FROM located WHERE __anon_cell NOT IN (SELECT cell FROM whole)),
                placed AS (SELECT r.*, -1 AS __anon_rank, w.part AS __anon_part FROM located r JOIN whole w ON w.cell = r.__anon_cell
                           UNION ALL
                           SELECT r.*, f.part FROM ranked r JOIN final f
                           ON f.cell = r.__anon_cell AND r.__anon_rank >= f.off AND r.__anon_rank < f.off + f.n)
                SELECT {', '.join(out)} FROM placed r JOIN labels l ON l.part = r.__anon_part"""
        return self.sql(text, source=source, columns=columns, cells=cells, final=final, labels=labels)
