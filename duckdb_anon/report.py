"""The ``duckdb-anon report`` page: what a release protects and what it costs, in one self-contained HTML file.

One concept in three steps, each a function: :func:`gather` runs our SQL macros inside DuckDB (only one-row
measures and small per-class-size histograms come back to Python, never the table itself),
:func:`render_plots` draws PNGs with matplotlib's Agg backend, in memory, and :func:`write_html` writes the
page: every piece of text HTML-escaped, every image a ``data:`` URI, so the file needs nothing else.

Table names and column names reach DuckDB only as parameters of the table macros (they take names as
strings and resolve them with ``query_table``), never as SQL text.
"""
from __future__ import annotations

import html
import importlib
import io
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from duckdb_anon.commands.errors import BadArgument, MissingExtra
from duckdb_anon.report_html import STYLE, glossary, image, number, table, verdict

INSTALL_HINT = "pip install 'duckdb-anon[report]' (from a checkout: pip install '.[report]')"


@dataclass(frozen=True)
class ReportRequest:
    release: str  # a table or view name the macros can read with query_table()
    qis: list[str]
    label: str  # how the user named the release (file or table), shown on the page and in errors
    sensitive: str | None = None
    original: str | None = None  # with id_column: NCP needs the original values
    id_column: str | None = None
    original_label: str = ""
    database: str | None = None  # the --db file the names resolve in, for error messages
    threshold: float = 0.2  # records whose prosecutor risk exceeds this count as "at risk"
    aux: str | None = None  # with id_column: people an adversary knows, for the linkage audit
    aux_label: str = ""
    hierarchies: dict[str, str] | None = None  # QI -> hierarchy table, for NCP and the linkage audit
    scoreboard_aux: str | None = None  # what an adversary knows of some people's rows (target_id, item, value, ts)
    scoreboard_truth: str | None = None  # (target_id, record_id); None: a target is the record with its id
    scoreboard_label: str = ""


@dataclass
class Measures:
    release: dict  # release_measures(): rows, classes, achieved_k, avg_class_size, ...
    risk: dict  # risk_measures(): prosecutor_max/_avg, marketer, records_at_risk, sample_uniques
    class_sizes: list[tuple[int, int]]  # (class size, number of classes), from class_profile()
    risk_counts: list[tuple[float, int]]  # (prosecutor risk, number of records), from record_risks()
    smallest_columns: list[str] = field(default_factory=list)  # the smallest classes, from class_profile()
    smallest_rows: list[tuple] = field(default_factory=list)
    privacy: dict | None = None  # privacy_measures() with the sensitive column
    ncp: dict | None = None  # ncp(): ncp_percent, per_qi, matched_rows
    linkage: dict | None = None  # linkage_classes(): people, reidentified, own_class_found, ...
    non_qi_columns: list[str] = field(default_factory=list)  # every released column that is not a QI
    scoreboard: dict | None = None  # deanonymize_evaluate(): reidentified, top1_share, top5_share, ...


def require_matplotlib() -> None:
    """Fail early, before any work, when the optional plotting dependency is absent."""
    try:
        importlib.import_module("matplotlib")  # imported, not just found: a broken install fails here too
    except ImportError:
        raise MissingExtra(f"needs matplotlib to draw its plots; install it with: {INSTALL_HINT}") from None


def _one_row(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> dict:
    result = con.execute(sql, params)
    names = [d[0] for d in result.description]
    return dict(zip(names, result.fetchone()))


def gather(con: duckdb.DuckDBPyConnection, request: ReportRequest, smallest: int = 10) -> Measures:
    """All the numbers of the report, each from one of our macros, aggregated inside DuckDB."""
    table, qis = request.release, list(request.qis)
    release = _one_row(con, "SELECT * FROM release_measures(?, ?)", [table, qis])
    if not release["rows"]:
        raise BadArgument("RELEASE", f"{request.label!r} has no rows: nothing to report")
    risk = _one_row(con, "SELECT * FROM risk_measures(?, ?, threshold := ?)", [table, qis, request.threshold])
    class_sizes = con.execute("SELECT class_size, count(*) FROM class_profile(?, ?) GROUP BY class_size "
                              "ORDER BY class_size", [table, qis]).fetchall()
    risk_counts = con.execute("SELECT prosecutor_risk, count(*) FROM record_risks(?, ?) GROUP BY prosecutor_risk "
                              "ORDER BY prosecutor_risk", [table, qis]).fetchall()
    profile = con.execute("SELECT * FROM class_profile(?, ?, sensitive := ?) ORDER BY class_size LIMIT ?",
                          [table, qis, request.sensitive, smallest])
    columns = [d[0] for d in profile.description]
    rows = profile.fetchall()
    if request.sensitive is None:  # the l and t columns are all NULL without a sensitive column
        keep = [i for i, c in enumerate(columns) if c not in ("distinct_l", "entropy_l", "recursive_l", "t")]
        columns, rows = [columns[i] for i in keep], [tuple(r[i] for i in keep) for r in rows]
    measures = Measures(release, risk, class_sizes, risk_counts, columns, rows)
    released = [d[0] for d in con.execute("SELECT * FROM query_table(?) LIMIT 0", [table]).description]
    measures.non_qi_columns = [c for c in released if c.lower() not in {q.lower() for q in qis}]
    if request.sensitive is not None:
        measures.privacy = _one_row(con, "SELECT * FROM privacy_measures(?, ?, sensitive := ?)",
                                    [table, qis, request.sensitive])
    if request.original is not None:
        measures.ncp = _one_row(con, "SELECT * FROM ncp(?, ?, ?, ?, hierarchies := ?)",
                                [table, request.original, qis, request.id_column, request.hierarchies])
    if request.aux is not None:
        measures.linkage = _one_row(con, "SELECT * FROM linkage_classes(?, ?, ?, ?, hierarchies := ?)",
                                    [table, request.aux, qis, request.id_column, request.hierarchies])
    return measures


def gather_scoreboard(con: duckdb.DuckDBPyConnection, request: ReportRequest) -> dict:
    """deanonymize_evaluate() of the release (record_id, item, value, ts) against request.scoreboard_aux.
    Without a truth table, a target is present when the release holds a record with its id, absent otherwise
    (a temporary table, named with its catalog so that a table of the user's database cannot stand in for
    it, dropped afterwards)."""
    truth = request.scoreboard_truth
    if truth is None:
        con.execute("CREATE OR REPLACE TEMP TABLE anon_report_truth AS SELECT DISTINCT a.target_id, r.record_id "
                    "FROM query_table(?) a LEFT JOIN (SELECT DISTINCT record_id FROM query_table(?)) r "
                    "ON r.record_id = a.target_id", [request.scoreboard_aux, request.release])
    try:
        return _one_row(con, "SELECT * FROM deanonymize_evaluate(?, ?, ?)",
                        [request.release, request.scoreboard_aux, truth or "temp.main.anon_report_truth"])
    finally:
        con.execute("DROP TABLE IF EXISTS temp.main.anon_report_truth")


def scoreboard_lines(m: Measures, aux_label: str) -> list[tuple[str, str]]:
    """Scoreboard-RH as the summary says it: the adversary's best guesses beside the eccentricity-gated
    matches, so that a release the gate calls safe cannot hide a top candidate that is usually right."""
    s = m.scoreboard
    records = s["released_records"]
    chance = f"chance 1/{records:,} = {1 / records:.4f}" if records else "no records"
    return [("Scoreboard-RH top-1", f"{number(s['top1_share'])} of {number(s['present_targets'])} targets of "
                                    f"{aux_label}: own record scored best ({chance})"),
            ("Scoreboard-RH top-5", f"{number(s['top5_share'])}: own record among the 5 best-scored"),
            ("Scoreboard-RH matched", f"{number(s['reidentified'])}: best record is their own and stands out "
                                      f"(eccentricity >= 1.5); false matches of absent targets "
                                      f"{number(s['false_match_rate'])}"),
            ("unique records", f"{number(s['unique_record_share'])} of {number(records)} records: "
                               "no other record has the same released rows")]


def summary(request: ReportRequest, m: Measures) -> list[tuple[str, str]]:
    """(measure, value) pairs: the printed summary and the page's summary table say the same thing."""
    rows = m.release["rows"]
    lines = [("rows", number(rows)),
             ("classes", number(m.release["classes"])),
             ("achieved k", number(m.release["achieved_k"])),
             ("average class size", number(m.release["avg_class_size"], 2)),
             ("prosecutor risk", f"max {number(m.risk['prosecutor_max'])}, avg {number(m.risk['prosecutor_avg'])}"),
             ("marketer risk", number(m.risk["marketer"])),
             ("records at risk", f"{number(m.risk['records_at_risk'])} (prosecutor risk > {request.threshold:g})"),
             ("sample uniques", number(m.risk["sample_uniques"]))]
    if m.privacy is not None:
        p = m.privacy
        lines += [(f"l-diversity of {request.sensitive}", f"distinct {number(p['distinct_l'])}, "
                   f"entropy {number(p['entropy_l'], 2)}, recursive (c = 2) {number(p['recursive_l'])}"),
                  (f"t-closeness of {request.sensitive}", number(p["t"]))]
    if m.ncp is not None:
        matched = m.ncp["matched_rows"]
        note = f"{number(matched)} rows matched on {request.id_column}"
        if matched != rows:
            note += f"; WARNING: the release has {number(rows)}"
        lines.append(("NCP", f"{number(m.ncp['ncp_percent'])} % ({note})"))
    if m.linkage is not None:
        k = m.linkage
        note = f"{number(k['people'])} people of {request.aux_label}"
        if not k["own_class_found"]:  # 0, NULL: nobody matched, so reidentified 0 is no evidence
            note += "; WARNING: nobody matched to their own row by id: not measured"
        lines.append(("linkage", f"reidentified {number(k['reidentified'])}, consistent with one class "
                                 f"{number(k['consistent_with_one_class'])}, own class found "
                                 f"{number(k['own_class_found'])} ({note})"))
    if m.scoreboard is not None:
        lines += scoreboard_lines(m, request.scoreboard_label)
    lines.append(("non-QI columns", non_qi_text(m)))
    return lines


def non_qi_text(m: Measures) -> str:
    """The released columns that are not QIs, by name: an identifier that passed through shows here."""
    return ", ".join(m.non_qi_columns) if m.non_qi_columns else "none"



def summary_text(request: ReportRequest, m: Measures) -> str:
    """The summary as the command prints it: a title line, then '  measure  value' lines."""
    lines = summary(request, m)
    width = max(len(name) for name, _ in lines)
    title = f"duckdb-anon report: {request.label} (quasi-identifiers: {', '.join(request.qis)})"
    return "\n".join([title, *(f"  {name:<{width}}  {value}" for name, value in lines)])


def _png(figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)  # Agg whatever backend the user configured: no display needed
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def render_plots(request: ReportRequest, m: Measures) -> dict[str, bytes | None]:
    """PNG bytes per plot; None where the data for it was not given (NCP without the original)."""
    import numpy as np
    from matplotlib.figure import Figure

    plots: dict[str, bytes | None] = {}
    sizes, classes = zip(*m.class_sizes)
    figure = Figure(figsize=(7, 3.6))
    ax = figure.subplots()
    bins = np.linspace(min(sizes) - 0.5, max(sizes) + 0.5, min(50, max(sizes) - min(sizes) + 1) + 1)
    ax.hist(sizes, bins=bins, weights=classes, color="#4878a8")
    achieved = m.release["achieved_k"]
    ax.axvline(achieved, color="#c0392b", linestyle="--", label=f"achieved k = {achieved}")
    ax.set(xlabel="class size (rows)", ylabel="classes", title="Equivalence-class sizes")
    ax.legend()
    plots["class_sizes"] = _png(figure)

    plots["ncp"] = None
    if m.ncp is not None:
        names, values = list(m.ncp["per_qi"].keys()), list(m.ncp["per_qi"].values())
        figure = Figure(figsize=(7, 3.6))
        ax = figure.subplots()
        ax.bar(names, values, color="#4878a8")
        ax.axhline(m.ncp["ncp_percent"], color="#c0392b", linestyle="--", label=f"overall {m.ncp['ncp_percent']:.2f} %")
        ax.set(ylabel="NCP (%)", title="Information loss per quasi-identifier")
        for label in ax.get_xticklabels():  # long column names: slanted, anchored at their bar
            label.set(rotation=30, horizontalalignment="right")
        ax.legend()
        plots["ncp"] = _png(figure)

    risks, records = zip(*m.risk_counts)
    figure = Figure(figsize=(7, 3.6))
    ax = figure.subplots()
    ax.hist(risks, bins=np.linspace(0, max(risks), 31), weights=records, color="#4878a8")
    if request.threshold <= max(risks):
        ax.axvline(request.threshold, color="#c0392b", linestyle="--", label=f"threshold {request.threshold:g}")
        ax.legend()
    ax.set(xlabel="prosecutor risk (1 / class size)", ylabel="records", title="Re-identification risk per record")
    plots["risk"] = _png(figure)
    return plots


def _terms_shown(m: Measures) -> set[str]:
    """The glossary's terms for the measures this page shows."""
    shown = {"rows, classes", "achieved k", "prosecutor risk", "marketer risk", "records at risk", "sample uniques",
             "non-QI columns"}
    for term, present in (("l-diversity", m.privacy), ("t-closeness", m.privacy), ("NCP", m.ncp),
                          ("linkage", m.linkage), ("Scoreboard-RH", m.scoreboard)):
        if present is not None:
            shown.add(term)
    return shown


def write_html(path: Path, request: ReportRequest, m: Measures, plots: dict[str, bytes | None],
               gates: list[tuple[str, str, str]] = ()) -> None:
    """The page; `gates` are (gate, measured value, result) rows, shown when thresholds were given."""
    e = html.escape
    gates_section = "" if not gates else ("<h2>Release gates</h2>\n"
                                          + table(["gate", "measured", "result"], list(gates), [g[2] for g in gates])
                                          + f"<p>Columns released besides the quasi-identifiers: "
                                            f"<code>{e(non_qi_text(m))}</code>.</p>")
    qis = ", ".join(request.qis)
    if plots["ncp"] is None:
        ncp_section = ('<p class="absent">No NCP plot: information loss compares the release with the original '
                       'data, so it needs <code>--original ORIGINAL --id ID_COLUMN</code>.</p>')
    else:
        ncp_section = (image(plots["ncp"], "NCP per quasi-identifier")
                       + table(["quasi-identifier", "NCP (%)"], list(m.ncp["per_qi"].items())))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>duckdb-anon report: {e(request.label)}</title><style>{STYLE}</style></head>
<body>
<h1>Anonymization report</h1>
<p>Release <code>{e(request.label)}</code>; quasi-identifiers: <code>{e(qis)}</code>.</p>
{verdict(list(gates))}
<h2>Summary</h2>
{table(["measure", "value"], summary(request, m))}
{gates_section}
<h2>Equivalence-class sizes</h2>
{image(plots["class_sizes"], "histogram of equivalence-class sizes")}
<h2>Information loss (NCP per quasi-identifier)</h2>
{ncp_section}
<h2>Re-identification risk</h2>
{image(plots["risk"], "histogram of per-record prosecutor risk")}
<p>{e(number(m.risk["records_at_risk"]))} of {e(number(m.release["rows"]))} records
({100 * m.risk["records_at_risk"] / m.release["rows"]:.2f} %) have a prosecutor risk above {request.threshold:g};
{e(number(m.risk["sample_uniques"]))} records are alone in their class.</p>
<h2>The {len(m.smallest_rows)} smallest classes</h2>
{table(m.smallest_columns, m.smallest_rows)}
{glossary(_terms_shown(m))}
<p><small>Generated by duckdb-anon on {e(stamp)}; every number computed inside DuckDB by the package's SQL
macros.</small></p>
</body>
</html>
"""
    Path(path).write_text(page, encoding="utf-8")


# ---- a perturbed release (random_walk(), noise): distortion and the three linkage audits -------------------

@dataclass
class PerturbedMeasures:
    distortion: list[tuple]  # distortion(): (column, Dst, entries), '*' last
    rank: list[tuple]  # linkage_rank(): (column, people, linked_to_own_record, mean_candidates), '*' last
    pattern: list[tuple]  # linkage_pattern() per column: (column, people, linked_to_own_record, segments, found)
    nearest: tuple | None  # linkage_nearest() of a sample of people: (people, linked_to_own_record, mean_rank)


def gather_perturbed(con: duckdb.DuckDBPyConnection, request: ReportRequest, segment_size: int = 20,
                     sample: int = 1000) -> PerturbedMeasures:
    """The report of a perturbed release: Dst per column and the share of people re-linked to their own
    record by nearest values (a sample of `sample` people: the audit compares each with every record), by
    rank and by segment pattern. Every number comes from the SQL macros."""
    table, original, qis, rid = request.release, request.original, list(request.qis), request.id_column
    dst = con.execute("SELECT * FROM distortion(?, ?, ?, ?)", [table, original, qis, rid]).fetchall()
    rank = con.execute("SELECT * FROM linkage_rank(?, ?, ?, ?)", [table, original, qis, rid]).fetchall()
    pattern = [(q, *con.execute("SELECT * FROM linkage_pattern(?, ?, ?, ?, segment_size := ?)",
                                [table, original, q, rid, segment_size]).fetchall()[0]) for q in qis]
    # the sample size is this function's own integer, not user text
    con.execute("CREATE OR REPLACE TEMP TABLE anon_report_known AS SELECT * FROM query_table(?) "
                f"USING SAMPLE reservoir({int(sample)} ROWS) REPEATABLE (0)", [original])
    try:
        nearest = con.execute("SELECT * FROM linkage_nearest(?, 'anon_report_known', ?, ?)", [table, qis, rid]).fetchall()[0]
    finally:
        con.execute("DROP TABLE IF EXISTS anon_report_known")
    return PerturbedMeasures(dst, rank, pattern, nearest)


def perturbed_summary(m: PerturbedMeasures) -> list[tuple[str, str]]:
    """(measure, value) pairs for a perturbed release."""
    lines = [(f"Dst {c}", number(d)) for c, d, _ in m.distortion]
    if m.nearest is not None:
        lines.append(("re-linked by nearest values", f"{100 * (m.nearest[1] or 0):.2f} % of {m.nearest[0]:,} people"))
    lines += [(f"re-linked by rank {c}", f"{100 * (s or 0):.2f} %") for c, _, s, _ in m.rank]
    lines += [(f"re-linked by segment pattern {c}", f"{100 * (s or 0):.2f} % ({found} of {segments} segments found)")
              for c, _, s, segments, found in m.pattern]
    return lines


def write_perturbed_html(path: Path, request: ReportRequest, m: PerturbedMeasures) -> str:
    """A self-contained page (no plots) and the printed summary of a perturbed release; returns the summary."""
    e = html.escape
    lines = perturbed_summary(m)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>duckdb-anon report: {e(request.label)}</title><style>{STYLE}</style></head>
<body>
<h1>Perturbed-release report</h1>
<p>Release <code>{e(request.label)}</code> against <code>{e(request.original_label)}</code> (rows matched on
<code>{e(request.id_column or '')}</code>); columns: <code>{e(", ".join(request.qis))}</code>.</p>
<p>Dst is the mean relative change of each value. Each re-linkage figure is the share of people an adversary
who knows their original values links to their own released record.</p>
{table(["measure", "value"], lines)}
</body>
</html>
"""
    Path(path).write_text(page, encoding="utf-8")
    return perturbed_summary_text(request, m)


def perturbed_summary_text(request: ReportRequest, m: PerturbedMeasures) -> str:
    """The printed summary of a perturbed release."""
    lines = perturbed_summary(m)
    width = max(len(name) for name, _ in lines)
    return "\n".join([f"duckdb-anon report (perturbed): {request.label} ({', '.join(request.qis)})",
                      *(f"  {name:<{width}}  {value}" for name, value in lines)])
