"""The Spark engine gives the release mondrian() gives on DuckDB (same rows, same labels), whatever the
DataFrame's partitioning. Skipped, saying why, where Java or pyspark is missing.
Marked `spark`: the default run leaves them out, `pytest -m spark` runs them (README)."""
import contextlib
import duckdb
import re
import shutil

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckdb_anon
from tests.conftest import examples, multiset_differences, qi_sql, tied_frames
from duckdb_anon.datasets import ADULT_QIS

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("Spark tests skipped: no Java runtime on this machine (pyspark needs Java 17)", allow_module_level=True)
pyspark = pytest.importorskip("pyspark", reason="Spark tests skipped: pyspark is not installed (the 'spark' extra)")
from duckdb_anon.mondrian import spark as dspark  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("duckdb-anon-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def single_task_steps(plan: str) -> list[str]:
    """The nodes of a physical plan that bring every row to one task: an exchange to a single partition
    (except one gathering partial aggregates, a row per task), a window without PARTITION BY, a limit."""
    lines = plan.splitlines()
    found = []
    for i, line in enumerate(lines):
        child = lines[i + 1] if i + 1 < len(lines) else ""
        # partial aggregates, or a keyless aggregate left without functions by pruning: a row per task
        gathers_rows_per_task = "Aggregate(" in child and ("partial_" in child or "keys=[], functions=[]" in child)
        if "Exchange SinglePartition" in line and not gathers_rows_per_task:
            found.append(line.strip())
        elif re.search(r"\b(CollectLimit|GlobalLimit|TakeOrderedAndProject)\b", line):
            found.append(line.strip())
        elif re.search(r"\bWindow \[", line):  # Window [functions], [partition by], [order by]
            depth, start = 0, line.index("Window [") + 7
            for j in range(start, len(line)):
                depth += {"[": 1, "]": -1}.get(line[j], 0)
                if depth == 0:
                    break
            if line[j + 1:].startswith(", []"):
                found.append(line.strip())
    return found


@pytest.fixture
def plans(monkeypatch):
    """The physical plan of every query run while the test runs (each write, collect, count, toArrow)."""
    from pyspark.sql.classic.dataframe import DataFrame
    from pyspark.sql.readwriter import DataFrameWriter

    seen = []

    def watched(run, frame_of):
        def call(self, *args, **kwargs):
            out = run(self, *args, **kwargs)
            seen.append(frame_of(self)._jdf.queryExecution().executedPlan().toString())
            return out
        return call

    monkeypatch.setattr(DataFrameWriter, "parquet", watched(DataFrameWriter.parquet, lambda w: w._df))
    for method in ("collect", "count", "toArrow"):
        monkeypatch.setattr(DataFrame, method, watched(getattr(DataFrame, method), lambda f: f))
    return seen


def test_plans_are_read_for_single_task_steps(spark):
    """The detector itself, on plans Spark makes: an unpartitioned window and a sort's limit are found,
    a global count (partial aggregates gathered) and a partitioned window are not."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frame = spark.range(50).withColumn("g", F.col("id") % 3)
    plan = lambda f: f._jdf.queryExecution().executedPlan().toString()  # noqa: E731
    assert single_task_steps(plan(frame.withColumn("r", F.row_number().over(Window.orderBy("id")))))
    assert single_task_steps(plan(frame.orderBy("id").limit(3)))
    assert single_task_steps(plan(frame.groupBy().count())) == []
    assert single_task_steps(plan(frame.withColumn("r", F.row_number().over(Window.partitionBy("g").orderBy("id"))))) == []


@contextlib.contextmanager
def levels_on_spark(on_spark=True):
    """Small tables' levels run in DuckDB on the driver; on_spark: on Spark, as large tables' do."""
    from duckdb_anon.engines.spark_engine import SparkEngine

    before = SparkEngine.driver_cells
    SparkEngine.driver_cells = 0 if on_spark else before
    try:
        yield
    finally:
        SparkEngine.driver_cells = before


def same_release(con, spark_frame, sql):
    """The Spark release and mondrian()'s, compared as multisets of rows."""
    con.register("spark_release", spark_frame.toPandas())
    con.execute(f"CREATE OR REPLACE TABLE duck_release AS {sql}")
    differences = multiset_differences(con, "spark_release", "duck_release")
    con.unregister("spark_release")
    return differences == (0, 0)


@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_adult_release_is_mondrians(spark, mode, tmp_path):
    """On 200 Adult rows (the whole table takes many minutes on local[2]: bench/bench_spark.py checks it).
    The measures, read from the release's Parquet files by DuckDB, are those of mondrian()'s release."""
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    con.execute("CREATE TABLE numbered AS SELECT row_number() OVER () AS rid, * FROM adult LIMIT 200")
    frame = spark.createDataFrame(con.execute("SELECT * FROM numbered ORDER BY rid").df())
    target = str(tmp_path / "release")
    release = dspark.mondrian(spark, frame, ADULT_QIS, 10, mode=mode, row_order=["rid"], into=target)
    assert release.count() == 200
    assert same_release(con, release, f"SELECT * FROM mondrian('numbered', {qi_sql(ADULT_QIS)}, 10, mode := '{mode}')")
    con.execute("CREATE TABLE from_spark AS SELECT * FROM read_parquet(?)", [f"{target}/*.parquet"])
    qis = qi_sql(ADULT_QIS)
    for measures in (f"release_measures('{{}}', {qis}, k := 10)", f"ncp('{{}}', 'numbered', {qis}, 'rid')"):
        spark_side = con.execute(f"SELECT * FROM {measures.format('from_spark')}").fetchall()
        assert spark_side == con.execute(f"SELECT * FROM {measures.format('duck_release')}").fetchall()
    assert spark_side[0][-1] == 200  # ncp matched every row to its original
    con.close()


@st.composite
def tables(draw):
    df = draw(tied_frames(2, 30, "xcd"))
    k = draw(st.integers(1, len(df)))
    mode = draw(st.sampled_from(["strict", "relaxed"]))
    shape = draw(st.sampled_from(["text", "typed"]))
    rule = draw(st.sampled_from(["actual", "inherited"]))
    on_driver = draw(st.booleans())  # the levels in DuckDB on the driver, or on Spark
    return df, k, mode, shape, rule, on_driver


@settings(max_examples=examples(5), deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables())
def test_random_tables_give_mondrians_release_whatever_the_partitioning(spark, plans, case):
    df, k, mode, shape, rule, on_driver = case
    con = duckdb_anon.connect()
    con.register("df_view", df)
    con.execute("CREATE TABLE t AS SELECT id, x::INTEGER AS x, c::VARCHAR AS c, DATE '2000-01-01' + d::INTEGER AS d "
                "FROM df_view ORDER BY id")
    typed = con.execute("SELECT * FROM t ORDER BY id").df()
    frame = spark.createDataFrame(typed.astype({"x": "Int32"}).replace({pd.NA: None}),
                                  "id long, x int, c string, d date").repartition(3)  # rows scattered over 3 parts
    with levels_on_spark(not on_driver):
        release = dspark.mondrian(spark, frame, ["x", "c", "d"], k, mode=mode, output=shape, split_rule=rule,
                                  row_order=["id"])
    assert same_release(con, release, f"SELECT * FROM mondrian('t', ['x', 'c', 'd'], {k}, mode := '{mode}', "
                                      f"output := '{shape}', split_rule := '{rule}')")
    assert plans and [step for plan in plans for step in single_task_steps(plan)] == []
    sizes = release.groupBy("x", "c", "d").count().toPandas()["count"]
    assert sizes.min() >= k and sizes.sum() == len(df)  # recomputed on Spark: k and every row kept
    con.close()


def test_one_qi_gives_mondrians_release_with_no_single_task_step(spark, plans, mode="strict"):
    """One QI (a category, numbered by first appearance in `row_order`), the levels on Spark: mondrian()'s
    release, and no query of the run, numbering included, brings every row to one task. (Relaxed mode
    runs the same attempt step; the random tables check both modes' plans.)"""
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, chr((97 + (range * 7) % 5)::INTEGER) AS c, range % 3 AS x FROM range(30)")
    frame = spark.createDataFrame(con.execute("SELECT * FROM t ORDER BY id").df()).repartition(3)
    with levels_on_spark():
        release = dspark.mondrian(spark, frame, ["c"], 10, mode=mode, row_order=["id"])
    assert same_release(con, release, f"SELECT * FROM mondrian('t', ['c'], 10, mode := '{mode}')")
    assert len(plans) > 5 and [step for plan in plans for step in single_task_steps(plan)] == []
    con.close()


def test_category_labels_escape_their_characters_as_mondrians(spark):
    """Values holding the label's own characters (',' braces backslash) or spelled 'NULL' and '*': Spark
    writes the labels mondrian() writes, which keep the classes apart."""
    values = ["a,b", "c", "a", "b,c", "NULL", None, "*", "x\\y", "{z}"]
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, (range // 27)::INTEGER AS x, ?[range % 9 + 1] AS c FROM range(54)",
                [values])
    frame = spark.createDataFrame(con.execute("SELECT * FROM t ORDER BY id").df().replace({pd.NA: None}),
                                  "id long, x int, c string")
    for k in (6, 12):
        release = dspark.mondrian(spark, frame, ["x", "c"], k, row_order=["id"])
        assert same_release(con, release, f"SELECT * FROM mondrian('t', ['x', 'c'], {k})")
        labels = release.select("c").distinct().toPandas()["c"]
        assert labels.notna().all() and labels.str.contains("\\\\,").any()  # a comma of a value, escaped
    con.close()


def test_bad_arguments_name_the_argument(spark):
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "x int, c string")
    for kwargs, word in [({"qis": ["x"], "k": 5}, "'k'"), ({"qis": ["nope"], "k": 1}, "'qis'"),
                         ({"qis": ["x"], "k": 1, "mode": "lax"}, "'mode'"), ({"qis": [], "k": 1}, "'qis'"),
                         ({"qis": ["x"], "k": 1, "row_order": ["zz"]}, "'row_order'")]:
        with pytest.raises(ValueError) as err:
            dspark.mondrian(spark, frame, **kwargs)
        assert "spark.mondrian()" in str(err.value) and word in str(err.value)
    # the source's columns, by mondrian()'s own rule (anon_mondrian_columns) and with its messages
    odd = spark.createDataFrame([(1, "a", b"z", 3)], "x int, c string, b binary, __Anon_s int")
    con = duckdb_anon.connect()
    con.execute('CREATE TABLE "DataFrame" AS SELECT 1 AS x, \'a\' AS c, \'z\'::BLOB AS b, 3 AS "__Anon_s"')
    con.execute('CREATE TABLE plain AS SELECT x, c, b FROM "DataFrame"')
    for source, qis, kwargs in [(odd, ["x"], {}), (frame, ["x", "nope"], {}), (frame, ["x"], {"sensitive": "nope", "l": 2}),
                                (odd.drop("__Anon_s"), ["x", "b"], {})]:
        table = "DataFrame" if len(source.columns) == 4 else "plain"
        named = "".join(f", {name} := ?" for name in kwargs)
        with pytest.raises(duckdb.Error) as expected:
            con.execute(f"SELECT * FROM mondrian(?, ?, 1{named})", [table, qis, *kwargs.values()]).fetchall()
        with pytest.raises(ValueError) as err:
            dspark.mondrian(spark, source, qis, 1, **kwargs)
        message = str(expected.value).split("Error: ", 1)[-1].replace("mondrian()", "spark.mondrian()")
        assert str(err.value) == message.replace("'table_name'", "'table'").replace("'plain'", "'DataFrame'")
    con.close()
    assert [t.name for t in spark.catalog.listTables() if t.name.startswith("__anon_")] == []


def test_keep_publishes_what_mondrian_keeps(spark):
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 20 AS age, 'z' || (range % 4) AS zip, 'n' || range AS name "
                "FROM range(40)")
    frame = spark.createDataFrame(con.execute("SELECT * FROM t ORDER BY id").df())
    release = dspark.mondrian(spark, frame, ["age", "zip"], 20, keep=["ID"])  # k = 20: one cut, a short run on Spark
    assert release.columns == ["id", "age", "zip"]
    assert same_release(con, release, "SELECT * FROM mondrian('t', ['age', 'zip'], 20, keep := ['ID'])")
    for keep, words in ((["nope"], "no column 'nope'"), (["age"], "'age', a QI")):
        with pytest.raises(ValueError, match=r"spark\.mondrian\(\): argument 'keep'") as err:
            dspark.mondrian(spark, frame, ["age"], 5, keep=keep)
        assert words in str(err.value)
    con.close()


def test_privacy_models_give_mondrians_release(spark, plans):
    """Hierarchies, each l-diversity, t-closeness (categorical and ordered) and suppression on one small
    table, in two runs, their levels in DuckDB on the driver; no query Spark runs brings every row to one
    task (tests/mondrian/test_spark_models_plans.py checks a run whose levels run on Spark)."""
    con = duckdb_anon.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 7) % 23 AS age, ['a', 'b', 'c', 'd', 'e'][range % 5 + 1] AS c, "
                "(range * 3) % 4 AS s, ['x', 'y', 'y', 'z'][(range * 5) % 4 + 1] AS w FROM range(80)")
    con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('a', ['a', 'ab', '*']), ('b', ['b', 'ab', '*']), "
                "('c', ['c', 'cde', '*']), ('d', ['d', 'cde', '*']), ('e', ['e', '*'])) AS h(leaf, path)")
    frame = spark.createDataFrame(con.execute("SELECT * FROM t ORDER BY id").df())
    hierarchy = spark.createDataFrame(con.execute("SELECT * FROM h").df())
    for models in ({"sensitive": "w", "l": 2, "max_suppression": 0.1},
                   {"sensitive": "s", "l": 2, "l_kind": "recursive", "c": 2, "t": 0.4}):
        release = dspark.mondrian(spark, frame, ["age", "c"], 8, row_order=["id"], hierarchies={"c": hierarchy}, **models)
        named = "".join(f", {name} := ?" for name in models)
        con.execute(f"CREATE OR REPLACE TABLE expected AS SELECT * FROM mondrian('t', ['age', 'c'], 8, "
                    f"hierarchies := {{'c': 'h'}}{named})", list(models.values()))
        assert same_release(con, release, "SELECT * FROM expected")
        labels = set(release.select("c").distinct().toPandas()["c"])
        assert labels <= {"a", "b", "c", "d", "e", "ab", "cde", "*"} and len(labels) > 1
    assert len(plans) > 10 and [step for plan in plans for step in single_task_steps(plan)] == []
    con.close()


def test_model_rules_rendered_for_spark_are_the_macros(spark):
    """anon_model_holds, anon_diversity and each model, inlined from sql/07_models.sql and run by Spark over
    a group's rows with model_inputs' windows, against the macros on DuckDB, on random groups (one Spark query)."""
    import random

    import sqlglot
    from duckdb_anon.mondrian.models import inline_models, model_holds, model_inputs

    rng = random.Random(5)
    con = duckdb_anon.connect()
    selects = []
    for case in range(24):
        m = rng.randint(1, 6)
        w = [rng.randint(1, 5) for _ in range(m)]
        q = [x / sum(w) for x in w]
        cq = [sum(w[:i + 1]) / sum(w) for i in range(m)]
        cc = [0.0] + [sum(cq[:i + 1]) for i in range(m)]
        rows = ", ".join(f"({r}, {rng.randint(1, 9)})" for r in sorted(rng.sample(range(1, m + 1), rng.randint(1, m))))
        model = (f"{{'l': {rng.choice([1.0, 1.5, 2.0, 3.0])}::DOUBLE, 'l_kind': '{rng.choice(['distinct', 'entropy', 'recursive'])}', "
                 f"'c': {rng.choice([1.0, 2.0, 3.0])}::DOUBLE, 't': {rng.choice(['NULL', '0.2', '0.5'])}::DOUBLE, 'suppress': 0.0::DOUBLE}}")
        ordered = rng.choice(["true", "false"])
        whole = f"(SELECT {q}::DOUBLE[] AS q, {cq}::DOUBLE[] AS cq, {cc}::DOUBLE[] AS cc)"
        emd = f"anon_emd(v.n, v.r, v.m_rows, v.m_below, v.m_next, whole.q, whole.cq, whole.cc, {ordered})"
        selects.append(f"SELECT {case} AS id, {model_holds(model, 'v.n', 'v.r', 'whole', ordered)} AS holds, "
                       f"round(anon_entropy_l(v.n), 9) AS entropy, anon_recursive_l(v.m_tail, v.m_top, 2.0) AS recursive, "
                       f"round({emd}, 9) AS emd, anon_diversity({model}, v.n, v.m_tail, v.m_top) AS diversity "
                       f"FROM (SELECT r, n, {model_inputs('n', 'r')} FROM (VALUES {rows}) AS h(r, n)) AS v "
                       f"CROSS JOIN {whole} AS whole")
    duck = con.execute(" UNION ALL ".join(selects) + " ORDER BY id").fetchall()
    tree = sqlglot.parse_one(" UNION ALL ".join(selects), read="duckdb")
    spark_sql = tree.transform(lambda node: inline_models(node, "spark")).sql("spark")
    rows = sorted(tuple(r) for r in spark.sql(spark_sql).collect())
    assert [(i, h, e, int(r), t, d) for i, h, e, r, t, d in rows] == [(i, h, e, int(r), t, d) for i, h, e, r, t, d in duck]
    assert {h for _, h, *_ in duck} == {True, False}
    con.close()
