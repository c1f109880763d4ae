"""Does the report page fit a 1280 px wide screen? Renders it in headless Chromium and measures.

Makes a release of Adult with long class labels (eight QIs, sets of categories such as
{Married-civ-spouse,Divorced,...}), writes its report with `duckdb-anon report`, and loads the page in
headless Chromium (Debian's chromium: /usr/bin/chromium, run with --headless --no-sandbox --disable-gpu)
at 1280 x 900 with a script added that measures, after layout: the page's scroll width (wider than the
window means the reader scrolls sideways), and every element whose right edge lies beyond the window
without a scrolling or clipping container around it. Prints a table, one row per package tried.

    python bench/check_report_layout.py                      # this checkout
    python bench/check_report_layout.py --package OTHER_DIR  # another checkout, e.g. to compare

Exit code 1 when an element overflows the window.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QIS = ["age", "sex", "education_num", "marital_status", "race", "workclass", "native_country", "occupation"]
WIDTH = 1280

# Runs in the page once it has loaded: writes what it measured into <pre id="layout-check">.
PROBE = """<script>
window.addEventListener('load', () => {
  const width = window.innerWidth, out = [];
  const clipped = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; }
    return false; };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.right > width + 0.5 && !clipped(el)) out.push(el.tagName.toLowerCase() + ':' + Math.round(r.right));
  }
  const pre = document.createElement('pre'); pre.id = 'layout-check';
  pre.textContent = 'scroll_width=' + document.documentElement.scrollWidth + ' window=' + width
                    + ' overflowing=' + out.length + ' ' + out.slice(0, 5).join(',');
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        sys.exit("no chromium on PATH (Debian: apt-get install -y chromium)")
    return found


def make_inputs(folder: Path, package: Path) -> None:
    code = ("import duckdb_anon; con = duckdb_anon.connect(); con.execute(\"SET enable_progress_bar = false\"); "
            "duckdb_anon.load_adult(con); "
            f"con.execute(\"COPY (SELECT * FROM mondrian('adult', {QIS!r}, 10)) TO 'release.csv'\")")
    subprocess.run([sys.executable, "-c", code], cwd=folder, check=True, env={**os.environ, "PYTHONPATH": str(package)})


def measure(package: Path, folder: Path) -> str:
    page = folder / f"report-{abs(hash(str(package)))}.html"
    subprocess.run([sys.executable, "-m", "duckdb_anon.cli", "report", "release.csv", "--qi", ",".join(QIS),
                    "--require-k", "10", "-o", page.name, "--quiet", "--force"], cwd=folder, check=False,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(package)})
    probed = folder / ("probed-" + page.name)
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={WIDTH},900",
                          "--virtual-time-budget=3000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="layout-check">([^<]*)</pre>', dom)
    return found.group(1) if found else "no measurement (the page did not load)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", type=Path, help="a checkout to try (default: this one)")
    args = parser.parse_args()
    packages = args.package or [ROOT]
    failed = False
    with tempfile.TemporaryDirectory(prefix="report-layout-") as name:
        folder = Path(name)
        make_inputs(folder, packages[0])
        print(f"| package | at {WIDTH} px |\n|---|---|")
        for package in packages:
            result = measure(package, folder)
            failed |= not result.startswith("scroll_width=") or " overflowing=0" not in result
            print(f"| {package} | {result} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
