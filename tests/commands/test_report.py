"""duckdb-anon report, run as a real subprocess on a Mondrian release of the shipped Adult data (the checks of
its arguments by the CLI's main() in this process). The numbers it prints are checked against pandas
recomputations over the release file alone."""
import base64
import json
import re
import subprocess
import sys

import duckdb
import pandas as pd
import pytest

import duckdb_anon
from duckdb_anon.datasets import ADULT_NUMERIC, ADULT_QIS
from tests.conftest import cli_in_process
from tests.independent import HtmlPage, class_sizes, ncp_percent, row_keys

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
QI_ARG = ",".join(ADULT_QIS)
# The CLI in a child process where `import matplotlib` fails, as when the [report] extra is not installed.
WITHOUT_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None
from duckdb_anon.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run(*args, code=None):
    command = [sys.executable, "-m", "duckdb_anon.cli"] if code is None else [sys.executable, "-c", code]
    return subprocess.run([*command, *map(str, args)], capture_output=True, encoding="utf-8", errors="replace",
                          timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A strict k = 10 release of Adult and the original, as Parquet files (names with a quote and a space,
    which only parameters survive) and as tables of a DuckDB file."""
    folder = tmp_path_factory.mktemp("report")
    paths = {"release": folder / "k10 'release'.parquet", "original": folder / "adult's original.parquet",
             "db": folder / "adult.duckdb"}
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('adult', ?, 10)", [ADULT_QIS])
    con.sql("SELECT * FROM rel").write_parquet(str(paths["release"]))
    con.sql("SELECT * FROM adult").write_parquet(str(paths["original"]))
    con.close()
    plain = duckdb.connect(str(paths["db"]))
    plain.execute("""CREATE TABLE "k10 release" AS SELECT * FROM read_parquet(?)""", [str(paths["release"])])
    plain.close()
    return paths


@pytest.fixture(scope="module")
def full_report(files):
    target = files["release"].parent / "full.html"
    out = run("report", files["release"], "--qi", QI_ARG, "--sensitive", "class", "--original", files["original"],
              "--id", "rid", "-o", target, "--quiet")
    assert out.returncode == 0, out.stderr
    return out.stdout, target


def summary_values(stdout: str) -> dict[str, str]:
    """The printed summary: two-space indented lines '  measure  value'."""
    return dict(re.findall(r"^  (\S.*?)  +(\S.*)$", stdout, flags=re.M))


def number(text: str) -> float:
    return float(re.match(r"[\d,.]+", text).group().replace(",", ""))


def parse(path) -> HtmlPage:
    return HtmlPage(path.read_text(encoding="utf-8"))


def test_the_page_is_self_contained_html_with_three_png_plots(full_report):
    _, target = full_report
    page = parse(target)
    assert page.paths[0] == "html" and "html/head/title" in page.paths and "html/body" in page.paths
    assert [p for p in page.paths if p.endswith("/img")] == ["html/body/img"] * 3
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1], validate=True).startswith(PNG_SIGNATURE)
    assert all(link.startswith("data:") for link in page.links)  # nothing to fetch from elsewhere


def test_the_summary_matches_pandas_on_the_release_file(full_report, files):
    stdout, _ = full_report
    values = summary_values(stdout)
    release, original = pd.read_parquet(files["release"]), pd.read_parquet(files["original"])
    sizes = class_sizes(release, ADULT_QIS)
    assert number(values["rows"]) == len(release)
    assert number(values["classes"]) == len(sizes)
    assert number(values["achieved k"]) == sizes.min()
    assert number(values["prosecutor risk"].removeprefix("max ")) == pytest.approx(1 / sizes.min(), abs=1e-4)
    assert number(values["sample uniques"]) == (sizes == 1).sum()
    distinct_l = release.groupby(ADULT_QIS)["class"].nunique().min()
    assert number(values["l-diversity of class"].removeprefix("distinct ")) == distinct_l
    expected_ncp = ncp_percent(release, original, ADULT_QIS, ADULT_NUMERIC)
    assert number(values["NCP"]) == pytest.approx(expected_ncp, abs=1e-4)


def test_a_table_of_a_database_file_with_unique_records(files, tmp_path):
    """fnlwgt, never generalized, as one more QI: most records become unique, so the risk counts are not 0."""
    qis = [*ADULT_QIS, "fnlwgt"]
    target = tmp_path / "risky.html"
    out = run("report", '"k10 release"', "--db", files["db"], "--qi", ",".join(qis), "-o", target, "--quiet")
    assert out.returncode == 0, out.stderr
    values = summary_values(out.stdout)
    sizes = class_sizes(pd.read_parquet(files["release"]), qis)
    assert number(values["classes"]) == len(sizes)
    assert number(values["achieved k"]) == sizes.min() == 1
    assert number(values["sample uniques"]) == (sizes == 1).sum() > 0
    assert number(values["records at risk"]) == sizes[1 / sizes > 0.2].sum()  # the default threshold
    assert number(values["marketer risk"]) == pytest.approx(len(sizes) / sizes.sum(), abs=1e-4)
    page = parse(target)
    assert len(page.images) == 2  # no NCP without the original
    assert "--original ORIGINAL --id ID_COLUMN" in "".join(page.text)


def test_text_from_the_data_is_escaped(tmp_path):
    """Values, column names and the table name reach the page as text, never as markup or SQL."""
    db, table, column = tmp_path / "odd.duckdb", "x'); DROP TABLE t; --", "a<b>"
    plain = duckdb.connect(str(db))
    plain.execute("CREATE TABLE t AS SELECT range AS id, CASE WHEN range < 3 THEN '<script>alert(1)</script>' "
                  "ELSE 'v' || (range % 4) END AS " + '"a<b>"' + " FROM range(40)")
    plain.execute(f"""CREATE TABLE "{table.replace('"', '""')}" AS SELECT * FROM t""")
    plain.close()
    out = run("report", table, "--db", db, "--qi", column, "-o", tmp_path / "odd.html", "--quiet")
    assert out.returncode == 0, out.stderr
    page = parse(tmp_path / "odd.html")
    tags = {p.rsplit("/", 1)[-1] for p in page.paths}
    assert tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "small",
                    "table", "thead", "tbody", "tr", "th", "td", "img", "div", "dl", "dt", "dd"}, tags  # no <script>, no <b>
    text = "".join(page.text)
    assert "<script>alert(1)</script>" in text and column in text and table in text
    assert number(summary_values(out.stdout)["classes"]) == 5  # the script value and v0..v3
    assert duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM t").fetchone()[0] == 40


@pytest.mark.parametrize("args, names", [
    (["{release}", "--qi", "age,nope"], ["--qi", "nope"]),
    (["{folder}/missing.parquet", "--qi", "age"], ["RELEASE", "missing.parquet", "does not exist"]),
    (["{folder}/release.txt", "--qi", "age"], ["RELEASE", ".csv or .parquet"]),
    (["nope", "--db", "{db}", "--qi", "age"], ["RELEASE", "'nope'", "adult.duckdb"]),
    (['"k10 release"', "--db", "{folder}/missing.duckdb", "--qi", "age"], ["--db", "missing.duckdb"]),
    (['"k10 release"', "--db", "{db}", "--qi", "age", "--original", "nope", "--id", "rid"], ["--original", "'nope'"]),
    (["{release}", "--qi", "age", "--sensitive", "nope"], ["--sensitive", "nope"]),
    (["{release}", "--qi", "age", "--original", "{original}", "--id", "nope"], ["--id", "nope"]),
    (["{release}", "--qi", "age", "--original", "{original}"], ["--id", "--original"]),
    (["{release}", "--qi", "age,AGE"], ["--qi", "twice"]),
    (["{release}", "--qi", "age", "--require-k", "0"], ["--require-k", "at least 1"]),
    (["{release}", "--qi", "age", "--require-l", "2"], ["--require-l", "--sensitive"]),
    (["{release}", "--qi", "age", "--max-prosecutor-risk", "1.5"], ["--max-prosecutor-risk", "[0, 1]"]),
    (["{release}", "--qi", "age", "--max-linkage", "0.1"], ["--max-linkage", "--aux"]),
    (["{release}", "--qi", "age", "--aux", "{original}"], ["--id", "--aux"]),
    (["{release}", "--qi", "age", "--aux", "{original}", "--id", "nope"], ["--id", "nope"]),
    (["{release}", "--qi", "age", "--aux", "{folder}/missing.parquet", "--id", "rid"], ["--aux", "does not exist"]),
    (["{release}", "--qi", "age", "--hierarchy", "sex={folder}/missing.txt"], ["--hierarchy", "missing.txt"]),
    (["{release}", "--qi", "age", "-o", "{folder}/report.parquet"], ["-o", ".html"]),
])
def test_bad_input_exits_2_naming_the_argument(files, tmp_path, args, names):
    fill = {"release": files["release"], "original": files["original"], "db": files["db"], "folder": tmp_path}
    target = tmp_path / "bad.html"
    out = cli_in_process("report", *[a.format(**fill) for a in args], *([] if "-o" in args else ["-o", target]))
    assert out.returncode == 2, out.stdout + out.stderr
    assert all(name in out.stderr for name in names), out.stderr
    assert "Traceback" not in out.stderr and not target.exists()


def test_without_matplotlib_report_says_how_to_install_it(files, tmp_path):
    target = tmp_path / "r.html"
    out = run("report", files["release"], "--qi", "age", "-o", target, code=WITHOUT_MATPLOTLIB)
    assert out.returncode == 1 and "duckdb-anon[report]" in out.stderr and "matplotlib" in out.stderr
    assert "Traceback" not in out.stderr and not target.exists()


def gate_lines(stdout: str) -> dict[str, str]:
    """The printed gates: '  --gate LIMIT  passed|FAILED: measure = value'."""
    return dict(re.findall(r"^  (--\S+ \S+)  +(\S.*)$", stdout, flags=re.M))


def test_gates_that_hold_exit_0(files, tmp_path):
    aux = tmp_path / "known people.parquet"  # a tenth of the people, with their exact values and id
    duckdb.connect().execute("COPY (SELECT * FROM read_parquet(?) WHERE rid % 10 = 0) TO '" + str(aux) + "'",
                             [str(files["original"])])
    target = tmp_path / "gated.html"
    out = run("report", files["release"], "--qi", QI_ARG, "--sensitive", "class", "--aux", aux, "--id", "rid",
              "--require-k", "10", "--require-l", "1", "--max-prosecutor-risk", "0.1", "--max-linkage", "0.1",
              "-o", target, "--quiet")
    assert out.returncode == 0, out.stderr
    gates = gate_lines(out.stdout)
    assert set(gates) == {"--require-k 10", "--require-l 1", "--max-prosecutor-risk 0.1", "--max-linkage 0.1"}
    assert all(v.startswith("passed: ") for v in gates.values()) and out.stderr == ""
    assert "Release gates" in "".join(parse(target).text)
    assert re.search(r'<div class="verdict pass" id="verdict"><strong>PASS</strong>: the release passes all 4 gate',
                     target.read_text(encoding="utf-8"))


def test_failing_gates_exit_3_name_each_with_its_value_and_still_write_the_report(files, tmp_path):
    aux = tmp_path / "aux.parquet"
    duckdb.connect().execute("COPY (SELECT * FROM read_parquet(?) WHERE rid % 20 = 0) TO '" + str(aux) + "'",
                             [str(files["original"])])
    release = pd.read_parquet(files["release"])
    sizes = class_sizes(release, ADULT_QIS)
    key = row_keys(release, ADULT_QIS)
    size_of = key.map(sizes)
    known = release["rid"] % 20 == 0
    # strict Mondrian's classes are disjoint boxes, so a known person is consistent with their own class only
    linkage = (1 / size_of[known]).mean()
    distinct_l = release.groupby(ADULT_QIS)["class"].nunique().min()
    target = tmp_path / "failed.html"
    out = run("report", files["release"], "--qi", QI_ARG, "--sensitive", "class", "--aux", aux, "--id", "rid",
              "--require-k", str(sizes.min() + 1), "--require-l", "2", "--max-prosecutor-risk", "0.05",
              "--max-linkage", f"{linkage * 0.9:.6f}", "-o", target, "--quiet")
    assert out.returncode == 3, out.stderr
    gates = gate_lines(out.stdout)
    assert gates[f"--require-k {sizes.min() + 1}"] == f"FAILED: achieved k = {sizes.min()}"
    assert gates["--require-l 2"] == f"FAILED: distinct l = {distinct_l}" and distinct_l == 1
    assert number(gates["--max-prosecutor-risk 0.05"].split("= ")[1]) == pytest.approx(1 / sizes.min())
    measured = gates[next(g for g in gates if g.startswith("--max-linkage"))]
    assert measured.startswith("FAILED: linkage reidentified = ")
    assert float(measured.split("= ")[1]) == pytest.approx(linkage, rel=1e-5)
    assert "fails 4 of 4 gate(s)" in out.stderr and "--require-k" in out.stderr and "achieved k = " in out.stderr
    assert target.is_file() and "FAILED" in "".join(parse(target).text)
    page = target.read_text(encoding="utf-8")
    banner = re.search(r'<div class="verdict fail" id="verdict">(.*?)</div>', page).group(1)
    assert "fails 4 of 4 gate(s)" in banner and banner.count("<li>") == 4 and "PASS" not in banner
    assert number(summary_values(out.stdout)["linkage"].removeprefix("reidentified ")) == pytest.approx(linkage, abs=1e-4)


def test_an_existing_report_is_kept_unless_force(files, tmp_path):
    target = tmp_path / "r.html"
    target.write_text("keep me")
    out = run("report", files["release"], "--qi", "age", "-o", target, "--quiet")
    assert out.returncode == 2 and "--force" in out.stderr and target.read_text() == "keep me"
    out = run("report", files["release"], "--qi", "age", "-o", target, "--quiet", "--force")
    assert out.returncode == 0 and parse(target).images and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_gate_that_cannot_be_measured_fails(files, tmp_path):
    """No people in the aux file: the linkage share is not measurable, and the gate fails closed."""
    aux = tmp_path / "nobody.parquet"
    duckdb.connect().execute("COPY (SELECT * FROM read_parquet(?) WHERE false) TO '" + str(aux) + "'",
                             [str(files["original"])])
    out = run("report", files["release"], "--qi", "age,sex", "--aux", aux, "--id", "rid", "--max-linkage", "1",
              "-o", tmp_path / "r.html", "--quiet")
    assert out.returncode == 3, out.stderr
    assert gate_lines(out.stdout) == {"--max-linkage 1": "FAILED: not measurable: the --aux table holds no person"}
    assert (tmp_path / "r.html").is_file()


def test_linkage_gate_fails_when_the_release_ids_are_pseudonyms_and_the_aux_ids_raw(files, tmp_path, capsys):
    """Before: nobody of the aux table could be matched to their own row (own class found 0), so the
    reidentified share was 0 and `--max-linkage 0.1` passed, with a green PASS on the page."""
    release, aux = tmp_path / "pseudonymized.parquet", tmp_path / "raw ids.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * REPLACE ('p' || md5(rid::VARCHAR) AS rid) FROM read_parquet(?) WHERE rid < 3000) "
                f"TO '{release}'", [str(files["release"])])  # a slice of the release keeps the run short
    con.execute(f"COPY (SELECT * REPLACE (rid::VARCHAR AS rid) FROM read_parquet(?) WHERE rid < 3000 AND rid % 20 = 0) "
                f"TO '{aux}'", [str(files["original"])])
    raw = set(con.execute("SELECT rid::VARCHAR FROM read_parquet(?)", [str(aux)]).fetchall())
    assert not raw & set(con.execute("SELECT rid FROM read_parquet(?)", [str(release)]).fetchall())  # no id in common
    target = tmp_path / "r.html"
    from duckdb_anon.cli import main  # in this process: a subprocess costs seconds of start-up
    code = main(["report", str(release), "--qi", "age,sex", "--aux", str(aux), "--id", "rid", "--require-k", "1",
                 "--max-linkage", "0.1", "-o", str(target), "--quiet"])
    out = capsys.readouterr()
    assert code == 3, out.err
    gates = gate_lines(out.out)
    assert gates["--require-k 1"].startswith("passed: ")
    assert gates["--max-linkage 0.1"].startswith(f"FAILED: not measurable: no person of --aux ({len(raw):,}) was matched")
    assert "WARNING: nobody matched" in summary_values(out.out)["linkage"]
    banner = re.search(r'<div class="verdict (\w+)" id="verdict">(.*?)</div>', target.read_text(encoding="utf-8"))
    assert banner.group(1) == "fail" and "FAIL" in banner.group(2) and "PASS" not in banner.group(2)
    assert "not measurable" in banner.group(2)


def test_the_page_fits_a_laptop_screen_and_explains_its_measures(full_report):
    """No gates: a grey banner that says the page does not judge. Every table sits in a container that
    scrolls sideways on its own (the page never does: at 1280 px a table of long class labels ran off the
    right edge; bench/check_report_layout.py measures it in Chromium), long cells may wrap, and the page
    says what each measure it shows means."""
    _, target = full_report
    text = target.read_text(encoding="utf-8")
    page = parse(target)
    tables = [path for path in page.paths if path.endswith("/table")]
    assert len(tables) >= 3 and all(path.endswith("/div/table") for path in tables)
    assert text.count('<div class="scroll"><table>') == len(tables)
    style = re.search(r"<style>(.*?)</style>", text, re.S).group(1).replace("\n", "")
    assert ".scroll{overflow-x:auto;max-width:100%}" in style and "overflow-wrap:anywhere" in style
    assert '<div class="verdict none" id="verdict">No release gates given' in text
    terms = re.findall(r"<dt>(.*?)</dt>", text)
    assert {"achieved k", "prosecutor risk", "marketer risk", "sample uniques", "l-diversity", "NCP"} <= set(terms)
    assert "linkage" not in terms and "Scoreboard-RH" not in terms  # only what the page shows


def test_gates_only_without_o_print_json_for_pipelines(files, tmp_path, monkeypatch):
    """No -o: nothing is written (no matplotlib needed), the measures and the gates go to stdout as JSON, and
    the exit code still says whether the release passed."""
    monkeypatch.chdir(tmp_path)
    release = pd.read_parquet(files["release"])
    sizes = class_sizes(release, ADULT_QIS)
    out = run("report", files["release"], "--qi", QI_ARG, "--require-k", str(sizes.min()),
              "--max-prosecutor-risk", "0.01", "--json", code=WITHOUT_MATPLOTLIB)
    assert out.returncode == 3, out.stderr
    document = json.loads(out.stdout)
    assert document["output"] is None and list(tmp_path.iterdir()) == []
    assert document["measures"]["release"]["rows"] == len(release)
    assert document["measures"]["release"]["achieved_k"] == sizes.min()
    assert document["measures"]["risk"]["marketer"] == pytest.approx(len(sizes) / len(release))
    assert [(g["gate"], g["passed"]) for g in document["gates"]] == [("--require-k", True), ("--max-prosecutor-risk", False)]
    assert document["passed"] is False and "fails 1 of 2 gate(s)" in out.stderr
