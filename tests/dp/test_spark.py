"""The DP aggregate on Spark: the plan rendered for Spark keeps the same rows as on DuckDB (the bounded,
noise-free figures are equal on both engines), the noise is calibrated alike, and bad arguments get the
DuckDB checks' messages. Skipped, saying why, where Java or pyspark is missing.
Marked `spark`: the default run leaves them out, `pytest -m spark` runs them (README)."""
import math
import os
import shutil
import sys

import pandas as pd
import pytest

import duckdb_anon
from tests.conftest import multiset_differences
from duckdb_anon import dp
from duckdb_anon.dp import plan
from tests.independent import expected_released

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("Spark tests skipped: no Java runtime on this machine (pyspark needs Java 17)", allow_module_level=True)
pyspark = pytest.importorskip("pyspark", reason="Spark tests skipped: pyspark is not installed (the 'spark' extra)")
from duckdb_anon.dp import spark as dspark  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the noise UDF runs in workers that must import duckdb_anon
    session = (SparkSession.builder.master("local[2]").appName("duckdb-anon-dp-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def messy_table(con, seed):
    """People with ties, NULL values, a NULL group value, text groups and one heavy contributor."""
    con.execute(f"""CREATE OR REPLACE TABLE messy AS
        SELECT (CASE WHEN r % 5 = 0 THEN 0 ELSE hash(r, {seed}) % 40 END)::BIGINT AS person,
               CASE WHEN r % 97 = 0 THEN NULL ELSE ['red', 'green', 'blue', 'grey'][(hash(r, {seed}, 'g') % 4)::INTEGER + 1] END AS colour,
               (hash(r, {seed}, 's') % 3)::INTEGER AS size,
               CASE WHEN r % 13 = 0 THEN NULL ELSE (hash(r, {seed}, 'v') % 9)::DOUBLE - 2 END AS x
        FROM range(600) t(r)""")


@pytest.mark.parametrize("seed, m, r", [(1, 1, 1), (3, 5, 4)])
def test_bounded_aggregates_are_equal_on_both_engines(spark, seed, m, r):
    con = duckdb_anon.connect()
    messy_table(con, seed)
    arguments = dict(value="x", max_groups_contributed=m, max_rows_per_group=r, min_value=0, max_value=4,
                     privacy_unit_column="person", key=f"key {seed}")
    duck = dp.bounded_aggregates(con, "messy", ["colour", "size"], **arguments)
    frame = spark.createDataFrame(con.execute("FROM messy").df())
    on_spark = dspark.bounded_aggregates(spark, frame, ["colour", "size"], portable=True, **arguments).toPandas()
    assert len(duck) > 5 and (duck["persons"] <= m * 40).all()
    con.register("duck_side", duck)
    con.register("spark_side", on_spark.astype({"persons": "int64", "rows": "int64"}))
    assert multiset_differences(con, "duck_side", "spark_side") == (0, 0)
    # the heavy contributor (person 0, in every group) is cut to m groups on both
    assert duck["persons"].sum() == con.execute(f"SELECT sum(least(n, {m})) FROM (SELECT count(DISTINCT (colour, size)) AS n "
                                                "FROM messy WHERE x IS NOT NULL GROUP BY person)").fetchall()[0][0]
    con.close()


def test_noisy_release_on_spark_states_the_same_scale_and_releases_every_public_group(spark):
    people = pd.DataFrame({"person": range(300), "grp": [i % 6 for i in range(300)]})
    groups = pd.DataFrame({"grp": range(8)})  # groups 6 and 7 have no rows
    released = dspark.dp_aggregate(spark, spark.createDataFrame(people), ["grp"], privacy_unit_column="person", epsilon=0.5,
                                   delta=0, max_groups_contributed=2, public_groups=spark.createDataFrame(groups))
    frame = released.toPandas().sort_values("grp").reset_index(drop=True)
    # the noise was drawn once: a second action reads the same figures (a lazy query would draw anew)
    assert released.toPandas().sort_values("grp").reset_index(drop=True).equals(frame)
    assert sorted(frame["grp"]) == list(range(8))
    assert (frame["count_ci_high"] - frame["count"]).round(6).unique().tolist() == [round(2 / 0.5 * math.log(20), 6)]
    assert (frame["count"] - 50).abs()[frame["grp"] < 6].max() < 4 / 0.5 * 10  # Laplace(4) beyond 40: p < 5e-5 each


def test_bad_arguments_get_the_duckdb_messages(spark):
    frame = spark.createDataFrame(pd.DataFrame({"person": [1], "grp": [1]}))
    with pytest.raises(Exception, match=r"spark.dp_aggregate\(\): argument 'epsilon' must be a number > 0"):
        dspark.dp_aggregate(spark, frame, ["grp"], privacy_unit_column="person", epsilon=0, delta=1e-6, max_groups_contributed=1)
    with pytest.raises(ValueError, match=r"argument 'frame' lacks the column\(s\) 'shelf'"):
        dspark.dp_aggregate(spark, frame, ["shelf"], privacy_unit_column="person", epsilon=1, delta=1e-6, max_groups_contributed=1)


def test_the_median_on_spark_is_within_its_stated_rank_error(spark):
    # 20 groups of 200 people, values 0..100: the released point against each group's own values
    rows = pd.DataFrame([(g, g * 1000 + p, float((g * 7 + p * 13) % 101)) for g in range(20) for p in range(200)],
                        columns=["grp", "person", "x"])
    frame = dspark.dp_aggregate(spark, spark.createDataFrame(rows), ["grp"], privacy_unit_column="person", epsilon=2, delta=0,
                                value="x", aggregates=("count", "median"), max_groups_contributed=1, min_value=0,
                                max_value=100, public_groups=spark.createDataFrame(pd.DataFrame({"grp": range(20)}))).toPandas()
    t = 2 * 1 * 1 / (2 / 2) * (math.log(64) + math.log(20))  # 2 max_rows max_groups / epsilon_share (ln points + ln 1/alpha)
    assert sorted(frame["grp"]) == list(range(20)) and frame["median_rank_error"].round(9).unique().tolist() == [round(t, 9)]
    values = rows.merge(frame[["grp", "median"]], on="grp")
    below = values.assign(lt=values["x"] < values["median"], le=values["x"] <= values["median"]).groupby("grp")[["lt", "le"]].sum()
    assert ((below["lt"] <= 100 + t) & (below["le"] >= 100 - t)).sum() >= 17  # 95 % each: fewer than 17 of 20, p < 0.02


def test_bounds_chosen_on_spark_follow_the_rule(spark):
    # 600 groups of 50 people, one group each, values 1..5: the largest m expected to release nearly the most
    # groups (recomputed in numpy) is 2, by a margin far above the noise; the range lands on 1 and 5
    rows = pd.DataFrame([(g, g * 1000 + p, float(1 + (g + p) % 5)) for g in range(600) for p in range(50)],
                        columns=["grp", "person", "x"])
    kept = rows.groupby("grp")["person"].nunique().to_numpy()
    # count only, which reads no value: it pays for max_groups and the range out of epsilon 1
    eps_each = 1 - plan.PEOPLE_SHARE - plan.M_SHARE - plan.RANGE_SHARE  # 30,000 people: the caps bind
    released = {m: expected_released(kept, m, eps_each, 1e-6) for m in plan.M_GRID}
    best = max(released.values())
    slack = min(plan.M_SLACK * math.sqrt(best + 1), plan.M_NOISE * eps_each / plan.M_SHARE)
    expected = max(m for m, e in released.items() if e >= max(plan.M_RELEASED * best, best - slack))
    frame = dspark.dp_aggregate(spark, spark.createDataFrame(rows), ["grp"], privacy_unit_column="person", epsilon=1,
                                delta=1e-6, value="x").toPandas()
    chosen = frame[["max_groups_contributed", "min_value", "max_value"]].drop_duplicates().values.tolist()
    assert expected == 2 and chosen == [[2, 1.0, 5.0]] and len(frame) >= 0.9 * max(released.values())


def test_no_view_outlives_a_call_and_odd_column_names_read_whole(spark):
    # names with a backquote, a dot and a space go through the engine's quoting; the views the query read are
    # dropped as the call returns, and the DataFrame it returned still reads its rows
    people = pd.DataFrame({"person id": range(40), "a`b.c": [i % 3 for i in range(40)], "x y": [float(i % 7) - 1 for i in range(40)]})
    out = dspark.bounded_aggregates(spark, spark.createDataFrame(people), ["a`b.c"], privacy_unit_column="person id",
                                    value="x y", max_groups_contributed=1, min_value=0, max_value=4, key="k")
    left = [t.name for t in spark.catalog.listTables() if t.isTemporary and t.name.startswith(("__anon_", "__dp_"))]
    assert left == []
    got = out.toPandas().sort_values("a`b.c").reset_index(drop=True)
    expected = people.assign(c=people["x y"].clip(0, 4) - 2).groupby("a`b.c", as_index=False).agg(
        persons=("person id", "nunique"), rows=("person id", "size"), centered_sum=("c", "sum"))
    assert got["a`b.c"].tolist() == [0, 1, 2] and got["persons"].tolist() == expected["persons"].tolist()
    assert got["rows"].tolist() == expected["rows"].tolist() and (got["centered_sum"] - expected["centered_sum"]).abs().max() < 1e-9
