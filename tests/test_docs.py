"""The documentation runs: every ```sql and ```python block of README.md and docs/*.md, in page order, on a
fresh database holding the example data, and every ```sh block made only of `duckdb-anon` commands.
README.md runs as a new user runs it: in an empty folder, and then a second time in the same folder (a tour
that leaves something behind it cannot run again must fail here).

A block that needs data a test cannot have opts out visibly, with a first line starting
`-- not run by the tests:` (SQL) or `# not run by the tests:` (Python, shell) followed by the reason.

The example data every page starts from (in a temporary folder that is also the working directory):
tables `adult` (duckdb_anon.load_adult), `patients` (duckdb_anon.load_patients), the Adult hierarchies
`h_workclass`, `h_marital_status`, ... (duckdb_anon.load_adult_hierarchies), the files
`hierarchies/adult_<qi>.txt`, `adult.csv` and `adult.parquet`, and the database file `clinic.duckdb`
holding the same tables.
"""
from __future__ import annotations

import io
import re
import shlex
import shutil
from contextlib import chdir, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import duckdb_anon
from duckdb_anon.cli import main
from duckdb_anon.datasets import ADULT_HIERARCHY_QIS, hierarchy_path, load_patients

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
OPT_OUT = ("-- not run by the tests:", "# not run by the tests:")


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line, language, code) of every fenced block of a page."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands(code: str) -> list[str]:
    """The shell lines of a block, continuation lines joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def runnable(language: str, code: str) -> bool:
    if code.lstrip().startswith(OPT_OUT):
        return False
    if language == "sh":
        lines = commands(code)
        return bool(lines) and all(line.startswith("duckdb-anon ") for line in lines)
    return language in ("sql", "python")


def example_data(folder: Path) -> None:
    """The example data of the module docstring, written into `folder`."""
    (folder / "hierarchies").mkdir()
    for qi in ADULT_HIERARCHY_QIS:
        shutil.copy(hierarchy_path(qi), folder / "hierarchies" / f"adult_{qi}.txt")
    con = duckdb_anon.connect(str(folder / "clinic.duckdb"))
    duckdb_anon.load_adult(con, "adult")
    duckdb_anon.load_adult_hierarchies(con)
    load_patients(con)
    with chdir(folder):
        con.execute("COPY adult TO 'adult.csv'")
        con.execute("COPY adult TO 'adult.parquet'")
    con.close()


@pytest.fixture(scope="module")
def example_folder(tmp_path_factory) -> Path:
    """The example data written once; every page works on its own copy."""
    folder = tmp_path_factory.mktemp("example_data")
    example_data(folder)
    return folder


def run_shell(code: str) -> None:
    """Each command run by the CLI's main() in this process, in the working directory (what is checked is
    that the documented commands succeed; the process boundary is tested in test_cli*.py)."""
    for line in commands(code):
        words = shlex.split(line, comments=True)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                returned = main(words[1:])
            except SystemExit as exit:  # argparse's --version and its errors
                returned = exit.code
        assert returned in (0, None), f"{line}\n{out.getvalue()}\n{err.getvalue()}"


def page_ids():
    return [str(page.relative_to(ROOT)) for page in PAGES]


def run_page(page: Path, folder: Path) -> None:
    """Every runnable block of `page`, in order, in `folder` (the working directory), on clinic.duckdb there."""
    found = [(line, language, code) for line, language, code in blocks(page) if runnable(language, code)]
    namespace = {"duckdb_anon": duckdb_anon, "con": None}  # connected when a SQL or Python block needs it
    try:
        for line, language, code in found:
            where = f"{page.name}, block at line {line}"
            try:
                if language in ("sql", "python") and namespace["con"] is None:
                    namespace["con"] = duckdb_anon.connect(str(folder / "clinic.duckdb"))
                if language == "sql":
                    namespace["con"].execute(code).fetchall()
                elif language == "python":
                    exec(compile(code, where, "exec"), namespace)
                else:
                    if namespace["con"] is not None:
                        namespace["con"].close()  # the commands open clinic.duckdb themselves
                        namespace["con"] = None
                    run_shell(code)
            except Exception as err:  # name the block, whatever failed in it
                raise AssertionError(f"{where} ({language}) failed: {err}\n{code}") from err
    finally:
        if namespace["con"] is not None:
            namespace["con"].close()


@pytest.mark.parametrize("page", PAGES[1:], ids=page_ids()[1:])
def test_every_block_of_the_page_runs(page, example_folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(example_folder, tmp_path, dirs_exist_ok=True)
    run_page(page, tmp_path)


def test_the_readme_runs_in_an_empty_folder_twice(tmp_path, monkeypatch):
    """A new user's first session, then the same blocks again (a notebook re-run): the README creates
    whatever it reads, and nothing it leaves behind stops a second run."""
    monkeypatch.chdir(tmp_path)
    assert PAGES[0].name == "README.md" and not any(tmp_path.iterdir())
    run_page(PAGES[0], tmp_path)
    run_page(PAGES[0], tmp_path)


def test_the_pages_have_blocks_and_links_that_resolve():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"
    assert sum(1 for page in PAGES for _, language, code in blocks(page) if runnable(language, code)) >= 15
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 220
    assert "../shared" not in "".join(page.read_text(encoding="utf-8") for page in PAGES)
