"""Spark runs with privacy models: no query of a run brings every row to one task, the release is
mondrian()'s, and a run whose levels fail on the driver leaves no DuckDB connection open. A file of its
own, so that it runs beside tests/mondrian/test_spark.py. Skipped, saying why, where Java or pyspark is missing.
Marked `spark`: the default run leaves them out, `pytest -m spark` runs them (README)."""
import shutil

import duckdb
import pytest

import duckdb_anon

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("Spark tests skipped: no Java runtime on this machine (pyspark needs Java 17)", allow_module_level=True)
pytest.importorskip("pyspark", reason="Spark tests skipped: pyspark is not installed (the 'spark' extra)")
from duckdb_anon.mondrian import spark as dspark  # noqa: E402
from duckdb_anon.engines.spark_engine import SparkEngine  # noqa: E402
from tests.mondrian.test_spark import levels_on_spark, plans, same_release, single_task_steps  # noqa: E402, F401 (plans: a fixture)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("duckdb-anon-model-plans")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.adaptive.enabled", "false")
               # a few rows per query: interpreted expressions beat compiling each query's code; the
               # physical plans (what the tests read) are the same
               .config("spark.sql.codegen.wholeStage", "false").config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def table(spark):
    """24 rows: an age, a category with a hierarchy, a numeric sensitive value s and a categorical one w;
    as a DuckDB table t (hierarchy h) and as Spark DataFrames scattered over two partitions."""
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 7) % 23 AS age, ['a', 'b', 'c', 'd', 'e'][range % 5 + 1] AS c, "
                "(range * 3) % 4 AS s, ['x', 'y', 'y', 'z'][(range * 5) % 4 + 1] AS w FROM range(24)")
    con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('a', ['a', 'ab', '*']), ('b', ['b', 'ab', '*']), "
                "('c', ['c', 'cde', '*']), ('d', ['d', 'cde', '*']), ('e', ['e', '*'])) AS h(leaf, path)")
    frame = spark.createDataFrame(con.execute("SELECT * FROM t ORDER BY id").df()).repartition(2)
    yield con, frame, spark.createDataFrame(con.execute("SELECT * FROM h").df())
    con.close()


def test_levels_on_spark_with_every_model_run_no_single_task_step(spark, plans, table):
    """A hierarchy, recursive (c, l)-diversity and t-closeness of an ordered sensitive value, and
    suppression, in one run whose levels run on Spark: every query's physical plan (ranking the sensitive
    values, the table's distribution, the hierarchy check, each level's judged cuts and counted sides,
    the labels) is free of single-partition exchanges, unpartitioned windows and limits, and the release
    is mondrian()'s. (The l kinds differ only in the expression each side's histogram is judged by.)"""
    con, frame, hierarchy = table
    models = {"sensitive": "s", "l": 2, "l_kind": "recursive", "c": 3, "t": 0.5, "max_suppression": 0.1}
    with levels_on_spark():
        release = dspark.mondrian(spark, frame, ["age", "c"], 8, row_order=["id"], hierarchies={"c": hierarchy},
                                  **models)
    steps = [step for plan in plans for step in single_task_steps(plan)]
    assert len(plans) > 20 and steps == []
    named = "".join(f", {name} := ?" for name in models)
    expected = (f"SELECT * FROM mondrian('t', ['age', 'c'], 8, hierarchies := {{'c': 'h'}}{named})", list(models.values()))
    con.execute(f"CREATE TABLE expected AS {expected[0]}", expected[1])
    assert same_release(con, release, "SELECT * FROM expected")
    classes = release.groupBy("age", "c").count().toPandas()
    assert len(classes) > 1 and set(classes["c"]) <= {"a", "b", "c", "d", "e", "ab", "cde", "*"}


def test_a_failed_level_on_the_driver_closes_its_duckdb(spark, table, monkeypatch):
    """The levels of a small table run in DuckDB on the driver; when one fails (here: its input tables
    dropped under it), the error reaches the caller and the driver's connection is closed."""
    con, frame, _ = table
    opened = []
    level_engine = SparkEngine.level_engine

    def dropping_inputs(self, cells, inputs, *rest):
        loop = level_engine(self, cells, inputs, *rest)
        if loop is not self:
            opened.append(loop.con)
            for name in inputs:
                loop.con.execute(f"DROP TABLE {name}")
        return loop

    monkeypatch.setattr(SparkEngine, "level_engine", dropping_inputs)
    with pytest.raises(duckdb.CatalogException):
        dspark.mondrian(spark, frame, ["age"], 4)
    assert len(opened) == 1
    with pytest.raises(duckdb.ConnectionException):
        opened[0].execute("SELECT 1")
    assert [t.name for t in spark.catalog.listTables() if t.name.startswith("__anon_")] == []
