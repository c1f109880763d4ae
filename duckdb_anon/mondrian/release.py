"""The release of a level-driver run: each class's labels, and every source row with its class's label.

The label rules live once, in ``sql/00_helpers.sql``: anon_label_text (numbers and dates "lo-hi" or
"lo/hi" or the value, then ",NULL" when the class also holds NULL; categories the value or the set of
values present in key order, "{a,b}") and anon_label_escape (how a category value is written in a
label). The texts below call them; Plan.sql inlines them for Spark. A QI with a hierarchy reads as the
deepest node covering the class's leaves; suppressed rows (part -1) read '*', their typed bounds NULL
(as anon_mondrian_labelled, sql/10_mondrian.sql).
"""
from __future__ import annotations

from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, TEMPORAL
from duckdb_anon.mondrian.plan import Plan


def labels(plan: Plan) -> str:
    """Over ``cells`` and ``final``: per class (partition), rows, and per QI its text label and typed
    bounds (lo, hi, mean)."""
    ctes, joins, cols = ["members AS (SELECT f.part, f.n, "
                         f"{plan._each('c.v{d}, c.k{d}')} FROM final f JOIN cells c ON f.cell = c.cell)"], [], []
    for d, qi in enumerate(plan.qis):
        if qi.kind == CATEGORICAL:
            ctes.append(f"set{d} AS (SELECT part, "
                        f"list_transform(list_sort(list({{'k': k{d}, 'v': v{d}}})), lambda x: x.v) AS vals, "
                        f"arg_min(v{d}, k{d}) FILTER (WHERE v{d} IS NOT NULL) AS lo, "
                        f"arg_max(v{d}, k{d}) FILTER (WHERE v{d} IS NOT NULL) AS hi "
                        f"FROM (SELECT DISTINCT part, v{d}, k{d} FROM members) GROUP BY part)")
            joins.append(f"JOIN set{d} ON set{d}.part = b.part")
            cols.append([f"anon_label_text(CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), set{d}.vals, false, false, false)",
                         f"set{d}.lo", f"set{d}.hi", "CAST(NULL AS DOUBLE)"])
        else:
            temporal = "true" if qi.kind == TEMPORAL else "false"
            mean = "CAST(NULL AS DOUBLE)" if qi.kind == TEMPORAL else f"b.vsum{d} / b.vrows{d}"
            cols.append([f"anon_label_text(b.lo{d}, b.hi{d}, [CAST(NULL AS VARCHAR)], b.nulls{d} > 0, true, {temporal})",  # (a list Spark can fold)
                         f"b.lo{d}", f"b.hi{d}", mean])
    sums = [f"min(k{d}) AS klo{d}, max(k{d}) AS khi{d}" for d in plan.models.hier]
    for d, qi in enumerate(plan.qis):
        sums.append(f"max(CASE WHEN v{d} IS NULL THEN 1 ELSE 0 END) AS nulls{d}")
        if qi.kind != CATEGORICAL:
            sums.append(f"min(v{d}) AS lo{d}, max(v{d}) AS hi{d}")
        if qi.kind == NUMERIC:
            sums.append(f"sum(CAST(v{d} AS DOUBLE) * n) AS vsum{d}, sum(CASE WHEN v{d} IS NOT NULL THEN n END) AS vrows{d}")
    ctes.append(f"base AS (SELECT part, sum(n) AS size, {', '.join(sums)} FROM members GROUP BY part)")
    for d in plan.models.hier:
        ctes.append(f"lca{d} AS (SELECT b.part, arg_max(h.name, h.depth) AS name FROM base b JOIN hnode h "
                    f"ON h.d = {d} AND h.lo <= b.klo{d} AND h.hi >= b.khi{d} GROUP BY b.part)")
        joins.append(f"LEFT JOIN lca{d} ON lca{d}.part = b.part")
        cols[d][0] = f"lca{d}.name"
    if plan.models.suppress > 0:
        cols = [[f"CASE WHEN b.part < 0 THEN '*' ELSE {c[0]} END"] + [f"CASE WHEN b.part >= 0 THEN {e} END" for e in c[1:]]
                for c in cols]
    out = ", ".join(f"{c[0]} AS text{d}, {c[1]} AS lo{d}, {c[2]} AS hi{d}, {c[3]} AS mean{d}" for d, c in enumerate(cols))
    return f"WITH {', '.join(ctes)} SELECT b.part, b.size, {out} FROM base b {' '.join(joins)}"


def release(plan: Plan, columns: list[str], shape: str, numbered: bool) -> str:
    """Over ``__anon_source``, ``cells``, ``final`` and ``labels``: every source row and column (`columns`,
    rendered as ``__col_<i>``), in the source's column order, each QI replaced by its class's label:
    `shape` 'text' (the rendering) or 'typed' (STRUCT(lo, hi, mean)). A cell that relaxed mode cut into
    pieces sends its rows to the pieces in row order."""
    positions = {qi.name.lower(): d for d, qi in enumerate(plan.qis)}
    out = []
    for i, name in enumerate(columns):
        d = positions.get(name.lower())
        if d is None:
            out.append(f"r.__col_{i}")
        elif shape == "text":
            out.append(f"l.text{d} AS __col_{i}")
        else:
            out.append(f"{{'lo': l.lo{d}, 'hi': l.hi{d}, 'mean': l.mean{d}}} AS __col_{i}")
    match = " AND ".join([f"r.__qi_{d} IS NOT DISTINCT FROM c.v{d}" for d in range(plan.q)]
                         + (["r.__anon_sensitive IS NOT DISTINCT FROM c.sv"] if plan.sensitive else []))
    row = "__anon_row" if numbered else "row_number() OVER ()"
    if plan.mode == "strict":  # a cell is never cut: rows find their class through their cell alone
        return f"""
            SELECT {', '.join(out)} FROM __anon_source r JOIN cells c ON {match}
            JOIN final f ON f.cell = c.cell JOIN labels l ON l.part = f.part"""
    return f"""
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
