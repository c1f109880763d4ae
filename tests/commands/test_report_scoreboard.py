"""`duckdb-anon report` with --scoreboard-aux: the Scoreboard-RH figures in the summary and their gates, on a
Mondrian release of ratings whose eccentricity-gated share reads ~0 while the adversary's top candidate is
usually right; and the non-QI columns a release carries, named in the summary and the gates section."""
import re

import duckdb
import pytest

import duckdb_anon
from tests.independent import scoreboard_shares
from tests.commands.test_report import gate_lines, parse, run, summary_values
from tests.conftest import cli_in_process


@pytest.fixture(scope="module")
def ratings_db(tmp_path_factory):
    """A DuckDB file: 300 users' ratings, their Mondrian release (k = 25, text and typed), and what an
    adversary knows of 100 of them (8 exact ratings, dates +-14 days)."""
    path = tmp_path_factory.mktemp("scoreboard") / "ratings.duckdb"
    con = duckdb_anon.connect(str(path))
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(300, items := 300, ratings_per_user := 20, seed := 2)")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], 25)")
    con.execute("CREATE TABLE rel_typed AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], 25, output := 'typed')")
    con.execute("CREATE TABLE known AS SELECT * FROM synthetic_aux('ratings', 100, known_items := 8, seed := 3)")
    con.execute("CREATE TABLE known_no_ts AS SELECT target_id, item, value FROM known")
    top1, top5, unique = scoreboard_shares(con, "rel_typed", "known", typed=True)
    con.close()
    return path, top1, top5, unique


def report(db, *args, table="rel", runner=run):
    return runner("report", table, "--db", db, "--qi", "item,value,ts", *args, "--quiet")


def share(text: str) -> float:
    return float(re.match(r"[\d.]+", text).group())


def test_a_release_with_no_standing_out_match_fails_the_top1_gate(ratings_db, tmp_path):
    """k = 25 holds and no match stands out, yet the best-scored record is the target's own for most of them:
    the summary says so next to the gated share, and --max-top1 1/k fails the release."""
    db, top1, top5, unique = ratings_db
    target = tmp_path / "r.html"
    out = report(db, "--scoreboard-aux", "known", "--require-k", "25", "--max-top1", "0.04", "--max-top5", "1",
                 "--max-unique-records", "0.5", "-o", target)
    assert out.returncode == 3, out.stdout + out.stderr
    values = summary_values(out.stdout)
    assert share(values["Scoreboard-RH matched"]) <= 0.02
    assert share(values["Scoreboard-RH top-1"]) == pytest.approx(top1, abs=1e-4) and top1 > 10 / 25
    assert share(values["Scoreboard-RH top-5"]) == pytest.approx(top5, abs=1e-4)
    assert share(values["unique records"]) == pytest.approx(unique, abs=1e-4)
    gates = gate_lines(out.stdout)
    assert gates["--require-k 25"].startswith("passed")
    assert gates["--max-top1 0.04"].startswith("FAILED: Scoreboard-RH top-1 share = ")
    assert float(gates["--max-top1 0.04"].split("= ")[1]) == pytest.approx(top1, rel=1e-5)
    assert gates["--max-top5 1"].startswith("passed")
    assert gates["--max-unique-records 0.5"].startswith("FAILED")
    assert "fails 2 of 4 gate(s)" in out.stderr and target.is_file()
    assert "Scoreboard-RH top-1" in "".join(parse(target).text)


def test_without_a_truth_table_targets_are_the_records_with_their_id(ratings_db, tmp_path):
    """The default truth (a target is the record of its id) and an explicit one give the same figures; an
    explicit truth that marks every target absent leaves no share to gate on, and the gate fails closed."""
    db, top1, _, _ = ratings_db
    con = duckdb.connect(str(db))
    con.execute("CREATE OR REPLACE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM known")
    con.execute("CREATE OR REPLACE TABLE nobody AS SELECT DISTINCT target_id, NULL::BIGINT AS record_id FROM known")
    con.close()
    default = report(db, "--scoreboard-aux", "known", "--max-top1", "1", "-o", tmp_path / "a.html")
    given = report(db, "--scoreboard-aux", "known", "--scoreboard-truth", "truth", "--max-top1", "1",
                   "-o", tmp_path / "b.html")
    assert default.returncode == given.returncode == 0, default.stderr + given.stderr
    assert summary_values(default.stdout) == summary_values(given.stdout)
    absent = report(db, "--scoreboard-aux", "known", "--scoreboard-truth", "nobody", "--max-top1", "1",
                    "-o", tmp_path / "c.html")
    assert absent.returncode == 3 and gate_lines(absent.stdout) == {
        "--max-top1 1": "FAILED: not measurable: no target of --scoreboard-aux is in RELEASE"}


def test_the_non_qi_columns_of_a_release_are_named(ratings_db, tmp_path):
    """A release that carries an identifier besides its QIs: the summary and the gates say which columns."""
    db, *_ = ratings_db
    con = duckdb.connect(str(db))
    con.execute("CREATE OR REPLACE TABLE rel_named AS SELECT *, 'user ' || record_id AS user_name FROM rel")
    con.execute("CREATE OR REPLACE TABLE rel_bare AS SELECT item, value, ts FROM rel")
    carried = [c for (c,) in con.execute("SELECT column_name FROM (DESCRIBE rel_named)").fetchall()
               if c not in ("item", "value", "ts")]
    con.close()
    assert carried == ["record_id", "user_name"]
    target = tmp_path / "named.html"
    out = report(db, "--require-k", "25", "-o", target, table="rel_named")
    assert out.returncode == 0, out.stderr
    assert summary_values(out.stdout)["non-QI columns"] == ", ".join(carried)
    assert "  non-QI columns released: record_id, user_name" in out.stdout.splitlines()
    text = "".join(parse(target).text)
    assert "Columns released besides the quasi-identifiers: record_id, user_name" in text
    bare = report(db, "--require-k", "1", "-o", tmp_path / "bare.html", table="rel_bare")
    assert bare.returncode == 0 and summary_values(bare.stdout)["non-QI columns"] == "none"


def test_files_give_the_figures_of_the_database_tables(ratings_db, tmp_path):
    """The release, the aux table and the truth as Parquet files read as the --db tables are."""
    db, *_ = ratings_db
    con = duckdb.connect(str(db), read_only=True)
    for table in ("rel", "known"):
        con.execute(f"COPY {table} TO '{tmp_path / table}.parquet'")
    con.execute(f"COPY (SELECT DISTINCT target_id, target_id AS record_id FROM known) TO '{tmp_path / 'truth'}.parquet'")
    con.close()
    from_db = report(db, "--scoreboard-aux", "known", "-o", tmp_path / "db.html")
    from_files = run("report", tmp_path / "rel.parquet", "--qi", "item,value,ts", "--scoreboard-aux",
                     tmp_path / "known.parquet", "--scoreboard-truth", tmp_path / "truth.parquet",
                     "-o", tmp_path / "files.html", "--quiet")
    assert from_db.returncode == from_files.returncode == 0, from_db.stderr + from_files.stderr
    files = {name: value.replace(str(tmp_path / "known.parquet"), "known")  # the aux is named as it was given
             for name, value in summary_values(from_files.stdout).items()}
    assert files == summary_values(from_db.stdout)


@pytest.mark.parametrize("args, names", [
    (["--max-top1", "0.1"], ["--max-top1", "--scoreboard-aux"]),
    (["--scoreboard-aux", "known", "--max-top5", "1.5"], ["--max-top5", "[0, 1]"]),
    (["--max-unique-records", "0.5"], ["--max-unique-records", "--scoreboard-aux"]),
    (["--scoreboard-truth", "known"], ["--scoreboard-truth", "--scoreboard-aux"]),
    (["--scoreboard-aux", "known_no_ts"], ["--scoreboard-aux", "'ts'"]),
    (["--scoreboard-aux", "nope"], ["--scoreboard-aux", "no table or view named 'nope'"]),
    (["--scoreboard-aux", "known", "--perturbed", "--original", "ratings", "--id", "record_id"],
     ["--scoreboard-aux", "--perturbed"]),
    (["--max-top1", "0.1", "--perturbed", "--original", "ratings", "--id", "record_id"], ["--max-top1", "--perturbed"]),
])
def test_bad_scoreboard_options_exit_2_naming_the_option(ratings_db, tmp_path, args, names):
    target = tmp_path / "bad.html"
    out = report(ratings_db[0], *args, "-o", target, runner=cli_in_process)
    assert out.returncode == 2, out.stdout + out.stderr
    assert all(name in out.stderr for name in names), out.stderr
    assert "Traceback" not in out.stderr and not target.exists()
