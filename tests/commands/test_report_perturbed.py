"""`duckdb-anon report --perturbed`: distortion and the three re-linkage audits of a perturbed release."""
import re

import duckdb
import numpy as np

import duckdb_anon
from duckdb_anon.cli import main


def _database(tmp_path):
    path = tmp_path / "walk.duckdb"
    con = duckdb_anon.connect(str(path))
    con.execute("""CREATE TABLE source AS SELECT range AS id, (20 + hash(range, 1) % 50)::DOUBLE AS age,
                   (hash(range, 2) % 100000)::DOUBLE AS income FROM range(2000)""")
    duckdb_anon.preserve_patterns(con, "source", ["age", "income"], "walked", iterations=200)
    con.close()
    return path


def test_perturbed_report_prints_distortion_and_linkage(tmp_path, capsys):
    path = _database(tmp_path)
    out = tmp_path / "r.html"
    code = main(["report", "walked", "--db", str(path), "--qi", "age,income", "--original", "source", "--id", "id",
                 "--perturbed", "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and out.is_file()
    page = out.read_text()
    for words in ("Dst age", "re-linked by nearest values", "re-linked by rank *", "re-linked by segment pattern income"):
        assert words in printed and words in page
    con = duckdb.connect(str(path), read_only=True)
    pairs = con.execute("SELECT o.age, r.age FROM source o JOIN walked r USING (id)").fetchnumpy()
    con.close()
    dst = np.mean(np.abs(pairs["age_1"] - pairs["age"]) / np.abs(pairs["age"]))  # recomputed independently
    shown = float(re.search(r"Dst age\s+([0-9.]+)", printed).group(1))
    assert abs(shown - dst) < 1e-4


def test_perturbed_needs_the_original(tmp_path, capsys):
    path = _database(tmp_path)
    code = main(["report", "walked", "--db", str(path), "--qi", "age", "--perturbed", "-o", str(tmp_path / "r.html")])
    assert code == 2 and "--perturbed" in capsys.readouterr().err
