"""The dbt integration, run for real: `dbt deps` and `dbt build` on a copy of examples/dbt, through the
dbt-duckdb plugin duckdb_anon.dbt and the shipped dbt package, then the results read back with plain
duckdb and checked by independent GROUP BY queries.

dbt runs in this process through its programmatic entry point (dbtRunner), offline: usage statistics are
off by environment, flag and project setting, and the only package is a local one. Every run works in a
temporary copy, so nothing dbt generates (target/, dbt_packages/, logs/, the .duckdb file) lands in the
repository.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("dbt.adapters.duckdb", reason="dbt-duckdb is not installed (pip install 'duckdb-anon[dbt]')")

import duckdb_anon  # noqa: E402
from duckdb_anon.dbt import package_path  # noqa: E402
from tests.conftest import in_process  # noqa: E402
from tests.independent import scoreboard_shares  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dbt"
PACKAGE_ENTRY = "local: ../../duckdb_anon/dbt_package"  # as examples/dbt/packages.yml has it
DATABASE = "example.duckdb"  # profiles.yml's path
GENERATED = ("target", "dbt_packages", "logs", "*.duckdb", "*.wal", "package-lock.yml", "__pycache__")


def run_dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    """`dbt ARGS` on `project`, run by dbt's own programmatic entry point (dbtRunner) in this process, as
    the `dbt` command runs it: its exit code (0, 1 when a model or test failed, 2 when dbt stopped on an
    error) and output. (A child process per run spent most of each run starting dbt.)"""
    from dbt.cli.main import dbtRunner

    argv = [*args, "--project-dir", str(project), "--profiles-dir", str(project), "--no-send-anonymous-usage-stats",
            "--no-use-colors"]

    def invoke() -> int:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager

        try:
            result = dbtRunner().invoke(argv)
        finally:  # dbt-duckdb keeps the database open for the process's next run; a `dbt` process would end
            DuckDBConnectionManager.close_all_connections()
        if result.exception is not None:
            print(f"{type(result.exception).__name__}: {result.exception}", file=sys.stderr)
            return 2
        return 0 if result.success else 1

    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"}
    return in_process(["dbt", *argv], invoke, env=env, cwd=project)


def copy_example(dest: Path) -> Path:
    """examples/dbt copied to `dest`, its packages.yml pointing at the dbt package of the duckdb_anon that
    this interpreter imports (the relative path only resolves from inside the repository)."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(*GENERATED))
    packages = dest / "packages.yml"
    text = packages.read_text(encoding="utf-8")
    assert PACKAGE_ENTRY in text
    packages.write_text(text.replace(PACKAGE_ENTRY, f"local: {json.dumps(str(package_path()))}"), encoding="utf-8")
    return dest


def copy_built(built: Path, dest: Path) -> Path:
    """A copy of an already set-up project, without its database and logs. dbt_packages/ is a symlink (kept as
    one); target/ keeps the parsed manifest, so dbt parses only what changed."""
    return Path(shutil.copytree(built, dest, symlinks=True, ignore=shutil.ignore_patterns(DATABASE, "*.wal", "logs")))


def seed_rows() -> list[dict]:
    with (EXAMPLE / "seeds" / "patients.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def small_classes(con, table: str, k: int) -> int:
    """Classes (groups of identical QI values) with fewer than k rows, by a plain GROUP BY."""
    return con.execute(f"SELECT count(*) FROM (SELECT count(*) AS n FROM {table} GROUP BY age, zip, sex) "
                       f"WHERE n < {k}").fetchall()[0][0]


def failures_reported(output: str, test_prefix: str) -> int:
    """The failure count dbt prints for the test whose name starts with `test_prefix`."""
    found = re.search(rf"Failure in test {re.escape(test_prefix)}\S*[^\n]*\n[^\n]*?Got (\d+) results?", output)
    assert found, f"no failure reported for {test_prefix}:\n{output[-3000:]}"
    return int(found.group(1))


def add_k2_release(project: Path) -> None:
    """A model patients_k2: the patients released with k = 2 (for tests that expect a gate to fail)."""
    (project / "models" / "patients_k2.sql").write_text(
        "{{ config(materialized='view') }}\n{{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 2, keep=['diagnosis']) }}\n",
        encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """examples/dbt in a temporary directory after `dbt deps` and a successful `dbt build`."""
    project = copy_example(tmp_path_factory.mktemp("dbt") / "example")
    deps = run_dbt(project, "deps")
    assert deps.returncode == 0, deps.stdout + deps.stderr
    build = run_dbt(project, "build")
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr
    return project, build.stdout


def test_example_package_path_resolves_to_the_shipped_package():
    """The example's relative path finds the dbt package in the repository, and the installed duckdb_anon
    (editable or from a wheel) holds the same files."""
    assert PACKAGE_ENTRY in (EXAMPLE / "packages.yml").read_text(encoding="utf-8")
    in_repository = (EXAMPLE / PACKAGE_ENTRY.removeprefix("local: ")).resolve()

    def files(folder: Path) -> dict[str, bytes]:
        return {str(f.relative_to(folder)): f.read_bytes() for f in folder.rglob("*") if f.is_file()}

    shipped = files(package_path())
    assert "dbt_project.yml" in shipped and any(name.startswith("macros") for name in shipped)
    assert files(in_repository) == shipped


def test_plugin_installs_on_each_configuration_for_cursors(tmp_path):
    """The plugin as dbt-duckdb loads it, configuring one connection twice, the first time with a result still
    pending on it: afterwards a cursor (what dbt runs SQL through) sees the macros and random_walk's kernel."""
    from dbt.adapters.duckdb.plugins import BasePlugin

    plugin = BasePlugin.create("duckdb_anon.dbt")
    con = duckdb.connect(str(tmp_path / "plugin.duckdb"))
    try:
        con.execute("SELECT 42")  # pending, as a statement dbt-duckdb ran before the plugins may leave it
        plugin.configure_connection(con)
        plugin.configure_connection(con)
        cursor = con.cursor()
        cursor.execute("CREATE TABLE t AS SELECT range AS id, (range * 7 % 31)::DOUBLE AS v FROM range(60)")
        cursor.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 20)")
        cursor.execute("CREATE TABLE walked AS SELECT * FROM random_walk('t', 'v', 'locs', iterations := 50, segment_size := 20)")
        original = cursor.execute("SELECT v FROM t").fetchall()
        walked = cursor.execute("SELECT v FROM walked").fetchall()
        assert len(walked) == 60 and walked != original
        assert cursor.execute("SELECT count(*) FROM check_localities('walked', 'v', 'locs')").fetchall() == [(0,)]
        assert cursor.execute("SELECT duckdb_anon_version()").fetchall() == [(duckdb_anon.__version__,)]
        cursor.close()
    finally:
        con.close()


def test_example_builds_a_k_anonymous_release(built):
    project, output = built
    assert "PASS=12" in output and "ERROR=0" in output
    seed = seed_rows()
    con = duckdb.connect(str(project / DATABASE), read_only=True)  # plain duckdb: the package is not involved
    try:
        assert con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = 'patients_k10'"
                           ).fetchall() == [("BASE TABLE",)]  # a frozen release
        assert con.execute("SELECT duckdb_anon_version()").fetchall() == [(duckdb_anon.__version__,)]
        # fail closed: the QIs and the listed columns only, never patient_id
        assert [d[0] for d in con.execute("SELECT * FROM patients_k10 LIMIT 0").description] == ["age", "zip", "sex", "diagnosis"]
        assert [d[0] for d in con.execute("SELECT * FROM patients_k5_l3 LIMIT 0").description] == ["age", "zip", "sex", "diagnosis"]
        classes = con.execute("SELECT count(*) AS n, count(DISTINCT diagnosis) AS l "
                              "FROM patients_k10 GROUP BY age, zip, sex").fetchall()
        assert sum(n for n, _ in classes) == len(seed)
        assert min(n for n, _ in classes) >= 10 and small_classes(con, "patients_k10", 10) == 0
        assert min(distinct for _, distinct in classes) >= 2
        assert len(classes) > 1  # generalized, not suppressed into one class
        diverse = con.execute("SELECT count(*), count(DISTINCT diagnosis) FROM patients_k5_l3 GROUP BY age, zip, sex").fetchall()
        assert sum(n for n, _ in diverse) == len(seed) and min(n for n, _ in diverse) >= 5
        assert min(distinct for _, distinct in diverse) >= 3 and len(diverse) > 1
        # the sensitive column passes through untouched
        released = Counter(d for (d,) in con.execute("SELECT diagnosis FROM patients_k10").fetchall())
        assert released == Counter(row["diagnosis"] for row in seed)
        # the age ranges can cover the real ages: at every age t, at least as many ranges start at or below t,
        # and at most as many end at or below t, as there are patients aged t or less
        ages = [int(row["age"]) for row in seed]
        ranges = [(int(label.split("-")[0]), int(label.split("-")[-1]))
                  for (label,) in con.execute("SELECT age FROM patients_k10").fetchall()]
        for t in set(ages):
            at_most_t = sum(age <= t for age in ages)
            assert sum(hi <= t for _, hi in ranges) <= at_most_t <= sum(lo <= t for lo, _ in ranges)
    finally:
        con.close()


def test_example_random_walk_keeps_row_order_and_moves_ages(built):
    """The localities_preserved test passed on patients_age_walk; check it was not trivially so: the ages moved,
    and the table kept the source's row order (which check_localities() relies on)."""
    project, _ = built
    seed = seed_rows()
    con = duckdb.connect(str(project / DATABASE), read_only=True)
    try:
        walked = con.execute("SELECT age, zip, sex, diagnosis FROM patients_age_walk").fetchall()
        assert con.execute("SELECT count(*) FROM patients_age_localities").fetchall()[0][0] > 0
    finally:
        con.close()
    assert [(z, s, d) for _, z, s, d in walked] == [(r["zip"], r["sex"], r["diagnosis"]) for r in seed]
    moved = sum(abs(age - int(r["age"])) > 1e-9 for (age, *_), r in zip(walked, seed))
    assert moved > len(seed) // 2


def test_older_functions_in_the_database_are_upgraded(built, tmp_path):
    """A database holding an "old" duckdb-anon (a mondrian() that publishes the raw rows, an old version
    marker): dbt's connection upgrades it in place, so the view is k-anonymous and the file says so."""
    project = copy_built(built[0], tmp_path / "upgrade")
    con = duckdb_anon.connect(str(project / DATABASE))
    con.execute("CREATE OR REPLACE MACRO mondrian(table_name, qis, k, mode := 'strict', output := 'text', "
                "categorical_order := 'appearance', split_rule := 'actual') AS TABLE SELECT * FROM query_table(table_name)")
    con.execute("CREATE OR REPLACE MACRO duckdb_anon_version() AS '0.0.1'")
    con.close()

    build = run_dbt(project, "build", "--select", "+patients_k10", "patients_known")  # linkage_below reads both
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr
    log = (project / "logs" / "dbt.log").read_text(encoding="utf-8")
    assert f"replaced duckdb-anon version 0.0.1 in the database by {duckdb_anon.__version__}" in log

    fresh = duckdb_anon.connect()
    expected = fresh.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name = 'mondrian'").fetchall()
    fresh.close()
    con = duckdb.connect(str(project / DATABASE), read_only=True)
    try:
        assert con.execute("SELECT duckdb_anon_version()").fetchall() == [(duckdb_anon.__version__,)]
        assert con.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name = 'mondrian'"
                           ).fetchall() == expected
        assert small_classes(con, "patients_k10", 10) == 0
    finally:
        con.close()


@pytest.fixture(scope="module")
def broken(built, tmp_path_factory):
    """One `dbt build` of the example with tests that must fail: a release made with k = 2 but tested for
    k = 10 (and for l = 2), ages that break their localities (reversed), and linkage_below pointed at the raw
    seed (ids kept) and at the 2-anonymous release. Returns the project and the build's output."""
    project = copy_built(built[0], tmp_path_factory.mktemp("dbt_broken") / "broken")
    add_k2_release(project)
    (project / "models" / "patients_age_reversed.sql").write_text(
        "{{ config(materialized='table') }}\nSELECT patient_id, 100 - age AS age FROM {{ ref('patients') }}\n",
        encoding="utf-8")
    (project / "models" / "broken.yml").write_text("""version: 2
models:
  - name: patients_age_reversed
    columns:
      - name: age
        data_tests:
          - duckdb_anon.localities_preserved:
              arguments: {locality_table: ref('patients_age_localities')}
  - name: patients_k2
    data_tests:
      - duckdb_anon.k_anonymous:
          arguments: {qis: ["age", "zip", "sex"], k: 10}
      - duckdb_anon.l_diverse:
          arguments: {qis: ["age", "zip", "sex"], sensitive: diagnosis, l: 2}
      - duckdb_anon.linkage_below:
          arguments: {aux: ref('patients_known'), qis: ["age", "zip", "sex"], max_rate: 0.1}
seeds:
  - name: patients
    data_tests:
      - duckdb_anon.linkage_below:
          arguments: {aux: ref('patients_known'), qis: ["age", "zip", "sex"], id: patient_id, max_rate: 0.1}
""", encoding="utf-8")  # one file: dbt refuses two entries for one model
    build = run_dbt(project, "build", "--select", "patients", "+patients_k2", "+patients_age_reversed",
                    "patients_age_localities", "patients_known",
                    "--indirect-selection", "cautious")  # only tests whose parents are all selected
    return project, build


def test_broken_models_fail_the_generic_tests(broken):
    """The broken models: dbt build fails, names the failing tests, and reports as many failing classes as a
    GROUP BY finds."""
    project, build = broken
    output = build.stdout + build.stderr
    assert build.returncode != 0

    con = duckdb.connect(str(project / DATABASE), read_only=True)
    try:
        too_small = small_classes(con, "patients_k2", 10)
        assert small_classes(con, "patients_k2", 2) == 0  # the release itself is 2-anonymous
        not_diverse = con.execute("SELECT count(*) FROM (SELECT count(DISTINCT diagnosis) AS l FROM patients_k2 "
                                  "GROUP BY age, zip, sex) WHERE l < 2").fetchall()[0][0]
    finally:
        con.close()
    assert too_small > 0 and not_diverse > 0  # the seed makes both tests fail: a precondition of this test
    assert failures_reported(output, "duckdb_anon_k_anonymous_patients_k2") == too_small
    assert failures_reported(output, "duckdb_anon_l_diverse_patients_k2") == not_diverse
    assert failures_reported(output, "duckdb_anon_localities_preserved_patients_age_reversed") > 0


def test_anonymize_escapes_names(built, tmp_path):
    """Relation and column names with quotes reach mondrian() as literals, not as SQL: `dbt show` runs the
    macro on a table named  odd 'name  with columns  a'ge  and  z"ip."""
    project = copy_built(built[0], tmp_path / "escape")
    con = duckdb.connect(str(project / DATABASE))
    con.execute("""CREATE TABLE "odd 'name" AS SELECT range AS id, range % 17 AS "a'ge", range % 3 AS "z""ip" FROM range(40)""")
    con.close()
    variables = json.dumps({"rel": "\"odd 'name\"", "qis": ["a'ge", 'z"ip']})
    show = run_dbt(project, "show", "--inline", "{{ duckdb_anon.anonymize(var('rel'), var('qis'), 5, keep=['id']) }}",
                   "--vars", variables, "--limit", "100", "--output", "json", "--log-format", "json")
    assert show.returncode == 0, show.stdout[-5000:] + show.stderr
    previews = [json.loads(line)["data"]["preview"] for line in show.stdout.splitlines()
                if line.startswith("{") and "preview" in json.loads(line).get("data", {})]
    rows = json.loads(previews[0])
    assert sorted(r["id"] for r in rows) == list(range(40))
    assert min(Counter((r["a'ge"], r['z"ip']) for r in rows).values()) >= 5
    for r in rows:  # each label covers the row's own value
        lo, _, hi = r["a'ge"].partition("-")
        assert int(lo) <= r["id"] % 17 <= int(hi or lo)


def test_anonymize_rejects_a_bare_string_of_qis(built, tmp_path):
    """['age'] is one column; 'age' is a mistake, caught when dbt compiles, naming the macro and argument."""
    project = copy_built(built[0], tmp_path / "bad_args")
    compiled = run_dbt(project, "compile", "--inline", "{{ duckdb_anon.anonymize(ref('patients'), 'age', 10) }}")
    assert compiled.returncode != 0
    assert "anonymize(): argument 'qis' must be a non-empty list of column names, got age" in compiled.stdout + compiled.stderr


def test_linkage_below_passes_on_the_release_and_fails_on_raw_data(built, broken, tmp_path):
    """The example's linkage_below test passes on patients_k10 (dbt build succeeded) with the share that
    linkage_classes() gives; pointed at the raw seed (ids kept) and at a 2-anonymous release it fails with
    one row, and a max_rate outside [0, 1] is a compile error naming the argument."""
    project, output = built
    assert re.search(r"PASS duckdb_anon_linkage_below_patients_k10", output), output[-3000:]
    con = duckdb.connect(str(project / DATABASE), read_only=True)
    try:
        # recomputed by hand: each known patient's consistent rows are those whose labels cover them; with
        # k = 10 every known patient has at least 10
        rate = con.execute("SELECT reidentified FROM linkage_classes('patients_k10', 'patients_known', "
                           "['age', 'zip', 'sex'], NULL)").fetchall()[0][0]
        known = con.execute("SELECT count(*) FROM patients_known").fetchall()[0][0]
    finally:
        con.close()
    assert known == 60 and 0 < rate <= 0.1

    broken_project, build = broken
    out = build.stdout + build.stderr
    assert build.returncode != 0
    assert failures_reported(out, "duckdb_anon_linkage_below_patients_") == 1
    assert out.count("Failure in test duckdb_anon_linkage_below_patients") == 2, out[-3000:]

    # the broken project with its database (patients_k2 built), without the other failing tests
    bad_rate = Path(shutil.copytree(broken_project, tmp_path / "linkage", symlinks=True,
                                    ignore=shutil.ignore_patterns("logs")))
    (bad_rate / "models" / "broken.yml").unlink()
    (bad_rate / "models" / "linkage.yml").write_text("""version: 2
models:
  - name: patients_k2
    data_tests:
      - duckdb_anon.linkage_below:
          arguments: {aux: ref('patients_known'), qis: ["age", "zip", "sex"], max_rate: 1.5}
""", encoding="utf-8")
    build = run_dbt(bad_rate, "build", "--select", "patients_k2")
    assert build.returncode != 0
    assert "linkage_below(): argument 'max_rate'" in build.stdout + build.stderr


def test_scoreboard_below_fails_a_release_whose_top_candidate_is_usually_right(built, tmp_path):
    """A k = 25 Mondrian release of ratings (record_id kept): no match stands out (the gated share ~0), yet
    the best-scored record is the target's own far above 1/k. scoreboard_below with max_top1 = 1/k fails
    with one row; with a limit above the share it passes."""
    project = copy_built(built[0], tmp_path / "scoreboard")
    models = project / "models"
    (models / "ratings.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "SELECT * FROM synthetic_ratings(300, items := 300, ratings_per_user := 20, seed := 2)\n", encoding="utf-8")
    (models / "ratings_k25.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "{{ duckdb_anon.anonymize(ref('ratings'), ['item', 'value', 'ts'], 25, keep=['record_id']) }}\n", encoding="utf-8")
    (models / "ratings_known.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "SELECT * FROM synthetic_aux({{ duckdb_anon.sql_literal(ref('ratings')) }}, 100, known_items := 8, seed := 3)\n",
        encoding="utf-8")
    (models / "ratings_truth.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "SELECT DISTINCT target_id, target_id AS record_id FROM {{ ref('ratings_known') }}\n", encoding="utf-8")
    (models / "ratings.yml").write_text("""version: 2
models:
  - name: ratings_k25
    data_tests:
      - duckdb_anon.scoreboard_below:
          arguments: {aux: ref('ratings_known'), truth: ref('ratings_truth'), max_top1: 0.04}
      - duckdb_anon.scoreboard_below:
          arguments: {aux: ref('ratings_known'), truth: ref('ratings_truth'), max_top1: 0.99, max_top5: 1}
""", encoding="utf-8")
    build = run_dbt(project, "build", "--select", "+ratings_k25", "+ratings_truth")
    out = build.stdout + build.stderr
    assert build.returncode != 0
    assert failures_reported(out, "duckdb_anon_scoreboard_below_ratings_k25") == 1
    assert out.count("Failure in test duckdb_anon_scoreboard_below_ratings_k25") == 1, out[-3000:]
    assert len(re.findall(r"PASS duckdb_anon_scoreboard_below_ratings_k25", out)) == 1, out[-3000:]

    con = duckdb_anon.connect(str(project / DATABASE))
    try:  # recomputed from the scores of every record, outside the package's SQL
        con.execute("CREATE TABLE rel_typed AS SELECT * FROM mondrian('ratings', ['item', 'value', 'ts'], 25, output := 'typed')")
        top1, _, _ = scoreboard_shares(con, "rel_typed", "ratings_known", typed=True)
        gated = con.execute("SELECT reidentified FROM deanonymize_evaluate('ratings_k25', 'ratings_known', "
                            "'ratings_truth')").fetchall()[0][0]
    finally:
        con.close()
    assert 0.04 < top1 < 0.99 and gated <= 0.02


def test_linkage_below_renders_hierarchies_as_literals(built, tmp_path):
    """A hierarchy table name built to break out of its literal (and out of a Python repr of a dict: it
    names the table `h` by chr(104) and then drops `victim`) stays one name: the compiled test, run against
    a database holding `h` and `victim`, fails reading that name as a table name, and the victim survives."""
    project = copy_built(built[0], tmp_path / "linkage_names")
    hostile = "\"'[3:2] || chr(104)}); DROP TABLE victim; SELECT * FROM (SELECT 1 AS reidentified) --"
    inline = ("{{ duckdb_anon.test_linkage_below(model='released', aux='known', qis=['sex'], max_rate=0.1, "
              "hierarchies=var('h')) }}")
    compiled = run_dbt(project, "compile", "--inline", inline, "--vars", json.dumps({"h": {"sex": hostile}}), "--quiet")
    assert compiled.returncode == 0, compiled.stdout[-3000:] + compiled.stderr
    sql = compiled.stdout.strip()
    assert "linkage_classes(" in sql, sql
    con = duckdb_anon.connect()
    try:
        con.execute("CREATE TABLE victim AS SELECT 1 AS x")
        con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('M', ['M', '*']), ('F', ['F', '*'])) v(leaf, path)")
        con.execute("CREATE TABLE known AS SELECT range AS id, ['M', 'F'][range % 2 + 1] AS sex FROM range(20)")
        con.execute("CREATE TABLE released AS SELECT * FROM mondrian('known', ['sex'], 5)")
        # read as one table name, which DuckDB cannot read: refused, nothing run
        with pytest.raises(duckdb.Error, match="argument 'hierarchies' is not a table name DuckDB can read: '\"'\\[3:2\\]"):
            con.execute(sql).fetchall()
        assert con.execute("SELECT x FROM victim").fetchall() == [(1,)]
    finally:
        con.close()
