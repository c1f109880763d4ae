"""The duckdb-anon command: the demo, --version, and `mondrian` with every option of the SQL macro. Each
release is checked independently (pandas over the written file) and against the SQL macro on the same data."""
import subprocess
import sys

import duckdb
import pandas as pd
import pytest

import duckdb_anon
from duckdb_anon.cli import main
from duckdb_anon.datasets import hierarchy_path

QIS = ["age", "workclass", "education_num", "marital_status", "sex"]


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    """Every tenth row of the shipped Adult data as Parquet, and the same rows as a ';'-separated CSV without
    a header."""
    folder = tmp_path_factory.mktemp("cli")
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE sample AS SELECT * FROM adult WHERE rid % 10 = 0")
    con.sql("SELECT * FROM sample").write_parquet(str(folder / "adult.parquet"))
    con.sql("SELECT * FROM sample").write_csv(str(folder / "adult.csv"), sep=";", header=False)
    con.close()
    return folder


def released(path) -> pd.DataFrame:
    return pd.read_parquet(path).sort_values("rid").reset_index(drop=True)


def by_sql(adult, qis, k, **options) -> pd.DataFrame:
    """The SQL macro's release of the same file with the same arguments."""
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(adult / "adult.parquet")])
    for qi, file in options.pop("hierarchy_files", {}).items():
        con.execute(f"CREATE TABLE h_{qi} AS SELECT * FROM hierarchy_from_text(?)", [str(file)])
        options.setdefault("hierarchies", {})[qi] = f"h_{qi}"
    named = "".join(f", {name} := ?" for name in options)
    frame = con.execute(f"SELECT * FROM mondrian('t', ?, ?{named})", [qis, k, *options.values()]).df()
    con.close()
    return frame.sort_values("rid").reset_index(drop=True)


def class_sizes(frame: pd.DataFrame, qis) -> pd.Series:
    return frame.groupby(qis, dropna=False).size()


def test_demo_prints_the_measures():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    assert "30,162 rows" in out.stdout and "achieved k = 10" in out.stdout and "NCP = 11.0840 %" in out.stdout


def test_version():
    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"duckdb-anon {duckdb_anon.__version__} (DuckDB {duckdb.__version__})"


def test_mondrian_over_csv_and_parquet(tmp_path):
    src = tmp_path / "in.csv"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT range AS id, range % 50 AS age, 'z' || (range % 7) AS zip FROM range(500)) TO '{src}'")
    for suffix in ("csv", "parquet"):
        target = tmp_path / f"out.{suffix}"
        out = run("mondrian", src, "--qi", "AGE,zip", "-k", "10", "--mode", "relaxed", "--drop", "id", "-o", target)
        assert out.returncode == 0 and out.stdout.startswith(f"wrote {target}"), out.stderr
        # nothing on stderr but progress lines (a loaded machine can take over a second, when they start)
        assert all(line.startswith("duckdb-anon mondrian: ") for line in out.stderr.splitlines()), out.stderr
        smallest, total = con.execute(
            f"SELECT min(c), sum(c) FROM (SELECT count(*) c FROM '{target}' GROUP BY age, zip)").fetchone()
        assert smallest >= 10 and total == 500


def test_hierarchy_and_l_diversity(adult, capsys):
    target = adult / "hl.parquet"
    code = main(["mondrian", str(adult / "adult.parquet"), "--qi", ",".join(QIS), "-k", "5", "--keep-all",
                 "--hierarchy", f"workclass={hierarchy_path('workclass')}",
                 "--hierarchy", f"Marital_Status={hierarchy_path('marital_status')}",
                 "--sensitive", "class", "--l", "2", "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    release = released(target)
    assert class_sizes(release, QIS).min() >= 5
    assert release.groupby(QIS)["class"].nunique().min() >= 2
    for qi in ("workclass", "marital_status"):  # labels are nodes of the hierarchy file
        nodes = {name for line in hierarchy_path(qi).read_text().splitlines() for name in line.split(";")}
        assert set(release[qi]) <= nodes and len(set(release[qi]) - {line.split(";")[0] for line in
                                                                    hierarchy_path(qi).read_text().splitlines()}) > 0
    expected = by_sql(adult, QIS, 5, sensitive="class", l=2.0, hierarchy_files={
        "workclass": hierarchy_path("workclass"), "marital_status": hierarchy_path("marital_status")})
    pd.testing.assert_frame_equal(release, expected)


def test_suppression_t_closeness_and_the_options_of_the_partition(adult, capsys):
    target = adult / "st.parquet"
    code = main(["mondrian", str(adult / "adult.parquet"), "--qi", ",".join(QIS), "-k", "20", "--keep-all", "--max-suppression", "0.05",
                 "--sensitive", "class", "--t", "0.3", "--categorical-order", "value", "--split-rule", "inherited",
                 "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    release = released(target)
    suppressed = release["age"] == "*"
    assert 0 < suppressed.sum() <= 0.05 * len(release) and (release[suppressed][QIS] == "*").all().all()
    kept = release[~suppressed]
    assert class_sizes(kept, QIS).min() >= 20
    overall = release["class"].value_counts(normalize=True)
    for _, group in kept.groupby(QIS):  # two values: the EMD is the largest difference of a share
        share = group["class"].value_counts(normalize=True).reindex(overall.index, fill_value=0)
        assert (share - overall).abs().max() <= 0.3 + 1e-9
    expected = by_sql(adult, QIS, 20, max_suppression=0.05, sensitive="class", t=0.3, categorical_order="value",
                      split_rule="inherited")
    pd.testing.assert_frame_equal(release, expected)


def test_relaxed_typed_release(adult, capsys):
    target = adult / "typed.parquet"
    code = main(["mondrian", str(adult / "adult.parquet"), "--qi", "age,education_num,sex", "-k", "10", "--keep-all", "--mode", "relaxed",
                 "--output-shape", "typed", "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    schema = duckdb.connect().execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(target)]).fetchall()
    types = {name: kind for name, kind, *_ in schema}
    assert types["age"].startswith("STRUCT(lo BIGINT, hi BIGINT, mean") and types["sex"].startswith("STRUCT(")
    release = released(target)
    original = pd.read_parquet(adult / "adult.parquet").sort_values("rid").reset_index(drop=True)
    assert (release["age"].str["lo"] <= original["age"]).all() and (original["age"] <= release["age"].str["hi"]).all()
    keys = release[["age", "education_num", "sex"]].map(str)
    assert keys.groupby(list(keys.columns)).size().min() >= 10
    pd.testing.assert_frame_equal(release, by_sql(adult, ["age", "education_num", "sex"], 10, mode="relaxed",
                                                  output="typed"))


def test_csv_delimiter_and_no_header_are_read_and_written(adult, capsys):
    target = adult / "out.csv"
    # without a header DuckDB names the columns column00, column01, ...: Adult's rid, age, workclass, ...
    code = main(["mondrian", str(adult / "adult.csv"), "--qi", "column01,column02", "-k", "10", "--keep-all", "--delimiter", ";",
                 "--no-header", "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    lines = target.read_text().splitlines()
    source = (adult / "adult.csv").read_text().splitlines()
    assert len(lines) == len(source) and {line.count(";") for line in lines} == {source[0].count(";")}
    frame = pd.read_csv(target, sep=";", header=None, dtype=str)
    assert sorted(frame[0]) == sorted(line.split(";")[0] for line in source)  # every rid once, no header line
    assert frame.groupby([1, 2]).size().min() >= 10 and frame[1].str.contains("-").any()


def test_engine_levels_writes_mondrians_release(adult, capsys):
    target = adult / "levels.parquet"
    code = main(["mondrian", str(adult / "adult.parquet"), "--qi", "age,education_num,sex,race", "-k", "10", "--keep-all",
                 "--mode", "relaxed", "--engine", "levels", "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    release = released(target)
    assert len(release) == len(pd.read_parquet(adult / "adult.parquet")) and class_sizes(release, ["age", "education_num", "sex", "race"]).min() >= 10
    pd.testing.assert_frame_equal(release, by_sql(adult, ["age", "education_num", "sex", "race"], 10, mode="relaxed"))


def test_engine_levels_runs_the_privacy_models(adult, capsys):
    """--engine levels takes hierarchies, l-diversity and suppression, and writes the SQL macro's release."""
    target = adult / "levels_models.parquet"
    qis = ["age", "sex", "race"]
    code = main(["mondrian", str(adult / "adult.parquet"), "--qi", ",".join(qis), "-k", "10", "--keep-all",
                 "--hierarchy", f"race={hierarchy_path('race')}", "--sensitive", "class", "--l", "2",
                 "--max-suppression", "0.02", "--engine", "levels", "-o", str(target), "--quiet"])
    assert code == 0, capsys.readouterr().err
    release = released(target)
    suppressed = release["age"] == "*"  # every QI of a suppressed row reads '*' (race's root is '*' too)
    kept = release[~suppressed]
    assert class_sizes(kept, qis).min() >= 10 and (kept.groupby(qis)["class"].nunique() >= 2).all()
    assert suppressed.sum() <= 0.02 * len(release) and (release.loc[suppressed, qis] == "*").all().all()
    pd.testing.assert_frame_equal(release, by_sql(adult, qis, 10, hierarchy_files={"race": hierarchy_path("race")},
                                                  sensitive="class", l=2, max_suppression=0.02))
