"""duckdb_anon/report_html.py: the page's parts (tables, the verdict banner, the glossary, images, numbers)
escape any text they are given and nest as HTML, read back with html.parser; and the page report.py
assembles from them on a release with hostile column names and values holds every section and nothing
the data wrote as markup. The report command's own tests are tests/commands/test_report*.py."""
import base64
import re

import pytest

from duckdb_anon import report
from duckdb_anon.report_html import GLOSSARY, glossary, image, number, table, verdict
from tests.independent import HtmlPage

HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "&amp; &lt;", "</td></tr></table>",
           "it's"]


def test_a_table_escapes_every_cell_and_marks_numbers():
    """Text is escaped; an integer shows as it is, a float as number() prints it, None as NULL; numbers (not
    booleans) are right-aligned; a row takes its class."""
    rows = [(HOSTILE[0], 1234567, 0.5), (HOSTILE[1], None, True), (HOSTILE[3], -2, 1 / 3)]
    page = HtmlPage(table(["name " + HOSTILE[2], HOSTILE[4], "x"], rows, ["passed", "FAILED", ""]))
    assert page.paths[:3] == ["div", "div/table", "div/table/thead"]
    assert {p for p in page.paths if p.endswith(("/td", "/th"))} == {"div/table/thead/tr/th", "div/table/tbody/tr/td"}
    assert not any(p.endswith(("script", "img")) for p in page.paths)  # no tag came from the data
    cells = [(attrs.get("class"), text) for (path, attrs), text in zip([t for t in page.tags if t[0].endswith(("/td", "/th"))], page.text)]
    assert [text for _, text in cells] == ["name " + HOSTILE[2], HOSTILE[4], "x", HOSTILE[0], "1234567", "0.5000",
                                           HOSTILE[1], "NULL", "True", HOSTILE[3], "-2", "0.3333"]
    assert [c for c, _ in cells[3:]] == [None, "n", "n", None, None, None, None, "n", "n"]  # numbers, not bool or NULL
    assert [attrs.get("class") for path, attrs in page.tags if path.endswith("tbody/tr")] == ["passed", "FAILED", None]


@pytest.mark.parametrize("value, digits, shown", [(None, 4, "n/a"), (1234567, 4, "1,234,567"), (0.123456, 4, "0.1235"),
                                                  (12345.678, 2, "12,345.68"), (0, 4, "0"), (float("nan"), 4, "nan")])
def test_numbers_read_as_the_summary_prints_them(value, digits, shown):
    assert number(value, digits) == shown


def test_the_verdict_says_none_pass_or_fail_and_escapes_the_gates():
    none = HtmlPage(verdict([]))
    assert none.tags[0] == ("div", {"class": "verdict none", "id": "verdict"}) and "No release gates" in "".join(none.text)
    gates = [("--require-k 5", "achieved k = 7", "passed"), ("--max-linkage 0.1 " + HOSTILE[0], HOSTILE[1], "passed")]
    passed = HtmlPage(verdict(gates))
    assert passed.tags[0][1]["class"] == "verdict pass" and "".join(passed.text).startswith("PASS: the release passes all 2")
    assert [p for p in passed.paths if p.endswith("li")] == ["div/ul/li"] * 2
    failed = HtmlPage(verdict(gates[:1] + [(gates[1][0], gates[1][1], "FAILED")]))
    text = "".join(failed.text)
    assert failed.tags[0][1]["class"] == "verdict fail" and text.startswith("FAIL: the release fails 1 of 2")
    assert f"{gates[1][0]}: FAILED ({HOSTILE[1]})" in text and "PASS" not in text
    assert not any(p.endswith(("script", "img")) for p in passed.paths + failed.paths)


def test_the_glossary_holds_the_shown_terms_in_order():
    everything = HtmlPage(glossary())
    terms = [text for (path, _), text in zip([t for t in everything.tags if t[0] != "h2"], everything.text[1:]) if path.endswith("dt")]
    assert terms == [term for term, _ in GLOSSARY]
    shown = {"NCP", "achieved k", "not a term"}
    some = HtmlPage(glossary(shown))
    assert [t for t in some.text if t in {term for term, _ in GLOSSARY}] == ["achieved k", "NCP"]


def test_an_image_carries_its_bytes_and_an_escaped_alt():
    data = bytes(range(256))
    page = HtmlPage(image(data, HOSTILE[1]))
    (path, attrs), = page.tags
    assert path == "img" and attrs["alt"] == HOSTILE[1]
    scheme, encoded = attrs["src"].split(",", 1)
    assert scheme == "data:image/png;base64" and base64.b64decode(encoded, validate=True) == data


def test_a_page_on_hostile_names_and_values_holds_every_section_and_no_markup_of_theirs(module_con, tmp_path):
    """A release whose QI names and labels are markup: write_html's page (plots as opaque bytes) nests,
    holds every section, and shows the data's text as text."""
    con = module_con
    qi = HOSTILE[0]
    quoted = '"' + qi.replace('"', '""') + '"'
    con.execute(f"CREATE TABLE html_release AS SELECT ['{HOSTILE[1].replace(chr(39), chr(39) * 2)}', 'b'][i % 2 + 1] AS {quoted}, "
                "i % 3 AS band, 'x' AS note FROM range(12) r(i)")
    request = report.ReportRequest("html_release", [qi, "band"], label=HOSTILE[3])
    measures = report.gather(con, request)
    path = tmp_path / "page.html"
    png = b"\x89PNG\r\n\x1a\nopaque"
    report.write_html(path, request, measures, {"class_sizes": png, "risk": png, "ncp": None},
                      [("--require-k 2", "achieved k = 2", "passed")])
    text = path.read_text(encoding="utf-8")
    page = HtmlPage(text)
    assert page.paths[0] == "html" and "html/head/title" in page.paths
    assert not any(p.endswith(("/script", "body/table")) for p in page.paths)  # every table sits in its scroller
    assert [p for p in page.paths if p.endswith("/img")] == ["html/body/img"] * 2
    headings = [t.strip() for t in re.findall(r"<h2>(.*?)</h2>", text)]
    assert headings == ["Summary", "Release gates", "Equivalence-class sizes", "Information loss (NCP per quasi-identifier)",
                        "Re-identification risk", f"The {len(measures.smallest_rows)} smallest classes", "What the measures mean"]
    visible = "".join(page.text)
    assert HOSTILE[3] in visible and qi in visible and HOSTILE[1] in visible
    assert "note" in visible  # the non-QI column is named
    assert 'class="verdict pass"' in text
