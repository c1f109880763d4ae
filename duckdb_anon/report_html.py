"""The report page's parts: its style, tables, the verdict banner and the glossary of the measures.

The page must read on a laptop screen (1280 px) without scrolling sideways: tables sit in a container that
scrolls on its own when a class label is too long to wrap, and long cells wrap. The banner says at the top
whether the release passed the gates the user asked for, gate by gate; the glossary says what each measure
on the page means, next to its numbers, so the reader does not need the documentation open.
"""
from __future__ import annotations

import base64
import html

STYLE = """body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;
overflow-wrap:anywhere}
td.n{text-align:right;overflow-wrap:normal}img{max-width:100%;height:auto}.absent{color:#666;font-style:italic}
code{background:#f3f3f3;overflow-wrap:anywhere}
.verdict{padding:.6em 1em;margin:1em 0;border-radius:4px;border:2px solid}.verdict ul{margin:.3em 0 0}
.pass{background:#e6f4ea;color:#0d652d;border-color:#0d652d}.fail{background:#fce8e6;color:#a50e0e;border-color:#a50e0e}
.none{background:#f1f3f4;color:#3c4043;border-color:#9aa0a6}
tr.passed td:last-child{color:#0d652d}tr.FAILED td:last-child{color:#a50e0e;font-weight:600}
dl.glossary dt{font-weight:600;margin-top:.5em}dl.glossary dd{margin-left:1.5em}"""

NUMERIC_CELL = ' class="n"'

# What each measure of the page means, in the order the summary shows them.
GLOSSARY = (
    ("rows, classes", "The released rows, and the groups of rows that share the same quasi-identifier labels "
                      "(equivalence classes): within a class, nobody can be told apart by those columns."),
    ("achieved k", "The size of the smallest class. A release is k-anonymous for every k up to this number."),
    ("prosecutor risk", "The chance of picking out a person's row when the adversary knows that person is in the "
                        "release: 1 / the size of their class. Max is the worst record's, avg the mean over records."),
    ("marketer risk", "The share of records an adversary who tries to re-identify everyone would get right on "
                      "average: classes / rows."),
    ("records at risk", "Records whose prosecutor risk is above the threshold (classes smaller than 1 / threshold)."),
    ("sample uniques", "Records alone in their class: the quasi-identifiers single them out in the release."),
    ("l-diversity", "How many different sensitive values each class holds (distinct l: the smallest count; "
                    "entropy and recursive l weigh how evenly they are spread). With l = 1, a class can reveal a "
                    "person's sensitive value without naming them."),
    ("t-closeness", "The largest distance between a class's sensitive values and the whole table's (0: every class "
                    "looks like the table; 1: as different as can be)."),
    ("NCP", "Information loss: how much of each quasi-identifier's range the generalized labels cover, in % "
            "(0: values published exactly; 100: every value replaced by the whole range)."),
    ("linkage", "An adversary who knows some people's exact quasi-identifiers matches them to the release: "
                "reidentified is the share they single out correctly."),
    ("Scoreboard-RH", "The attack on releases of rows (items, ratings, dates): top-1 / top-5 share are the targets "
                      "whose own record the attack ranks first / among its first five."),
    ("non-QI columns", "Every released column besides the quasi-identifiers, published as it is: an identifier "
                       "listed here was not anonymized."),
)


def number(value, digits: int = 4) -> str:
    """A measure as the page and the summary print it."""
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def table(header: list[str], rows: list[tuple], row_classes: list[str] | None = None) -> str:
    """A table in a container that scrolls sideways on its own (the page never does)."""
    def cell(value) -> str:
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        text = number(value) if isinstance(value, float) else ("NULL" if value is None else str(value))
        return f"<td{NUMERIC_CELL if numeric else ''}>{html.escape(text)}</td>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    classes = row_classes or [""] * len(rows)
    body = "".join((f'<tr class="{c}">' if c else "<tr>") + "".join(cell(v) for v in row) + "</tr>"
                   for row, c in zip(rows, classes))
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def image(png: bytes, alt: str) -> str:
    return f'<img src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}" alt="{html.escape(alt)}">'


def verdict(gates: list[tuple[str, str, str]]) -> str:
    """The banner at the top of the page: PASS (green) when every gate passed, FAIL (red) with the failed
    gates, or (grey) that no gate was given, so the page measured but did not judge."""
    if not gates:
        return ('<div class="verdict none" id="verdict">No release gates given: this report measures the release '
                'but does not judge it (add --require-k, --max-prosecutor-risk, ... to the command).</div>')
    failed = [g for g in gates if g[2] != "passed"]
    items = "".join(f"<li>{html.escape(gate)}: {html.escape(result)} ({html.escape(measured)})</li>"
                    for gate, measured, result in gates)
    if failed:
        return (f'<div class="verdict fail" id="verdict"><strong>FAIL</strong>: the release fails {len(failed)} of '
                f'{len(gates)} gate(s).<ul>{items}</ul></div>')
    return (f'<div class="verdict pass" id="verdict"><strong>PASS</strong>: the release passes all {len(gates)} '
            f'gate(s).<ul>{items}</ul></div>')


def glossary(shown: set[str] | None = None) -> str:
    """What the measures mean; `shown` (terms of GLOSSARY) limits it to those on the page."""
    entries = "".join(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>"
                      for term, text in GLOSSARY if shown is None or term in shown)
    return f'<h2>What the measures mean</h2>\n<dl class="glossary">{entries}</dl>'
