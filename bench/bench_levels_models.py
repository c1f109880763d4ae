"""Adult with its hierarchies and l-diversity on every engine, one run side by side (run from the project root):

    python bench/bench_levels_models.py [--rows N] [--spark]

k = 10, the 8 Adult QIs, the six shipped hierarchies, distinct 2-diversity of `class` and 1 % suppression.
Runs mondrian() (the recursive SQL macro), the level driver on DuckDB and, with --spark, the level driver on
Apache Spark (local[2]) twice: its levels in DuckDB on the driver (the default for up to 200,000 distinct QI
vectors; run first, so it also pays the JVM's warm-up), then every level on Spark; prints the wall time of each, its classes and suppressed rows, and whether its
release equals mondrian()'s (multiset of rows). Writes the table to bench/results/levels_models.md (with
--rows: levels_models_<rows>[_spark].md), with the
machine's load average at the start and the end (the machine may be shared: compare the ratios).
"""
import argparse
import os
import time
from pathlib import Path

import duckdb_anon
from duckdb_anon import mondrian
from duckdb_anon.datasets import ADULT_QIS

MODELS = {"sensitive": "class", "l": 2, "max_suppression": 0.01}


def measured(con, table):
    qis = ", ".join(ADULT_QIS)
    return con.execute(f"SELECT count(DISTINCT ({qis})) FILTER (WHERE age <> '*'), count(*) FILTER (WHERE age = '*') "
                       f"FROM {table}").fetchall()[0]


def same(con, a, b):
    return con.execute(f"SELECT (SELECT count(*) FROM (FROM {a} EXCEPT ALL FROM {b})) + "
                       f"(SELECT count(*) FROM (FROM {b} EXCEPT ALL FROM {a}))").fetchall()[0][0] == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=None, help="every n-th row so that about this many remain")
    parser.add_argument("--spark", action="store_true", help="also run on Apache Spark (local[2])")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    con = duckdb_anon.connect()
    con.execute("SET enable_progress_bar = false")
    duckdb_anon.load_adult(con, "adult_all")
    step = max(1, con.execute("SELECT count(*) FROM adult_all").fetchall()[0][0] // args.rows) if args.rows else 1
    con.execute("CREATE TABLE adult AS SELECT * FROM adult_all WHERE rid % ? = 0", [step])
    rows = con.execute("SELECT count(*) FROM adult").fetchall()[0][0]
    hierarchies = duckdb_anon.load_adult_hierarchies(con)
    models = {"hierarchies": hierarchies, **MODELS}
    named = "".join(f", {name} := ?" for name in models)
    runs = []
    started = time.perf_counter()
    con.execute(f"CREATE TABLE sql_release AS SELECT * FROM mondrian('adult', ?, 10{named})", [ADULT_QIS, *models.values()])
    runs.append(("mondrian() (SQL macro)", time.perf_counter() - started, "sql_release"))
    started = time.perf_counter()
    levels.mondrian(con, "adult", ADULT_QIS, 10, into="levels_release", **models)
    runs.append(("levels.mondrian() on DuckDB", time.perf_counter() - started, "levels_release"))
    if args.spark:
        from pyspark.sql import SparkSession

        from duckdb_anon.mondrian import spark as anon_spark
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.sql.adaptive.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        from duckdb_anon.engines.spark_engine import SparkEngine

        frame = spark.createDataFrame(con.execute("SELECT * FROM adult ORDER BY rid").df())
        spark_hierarchies = {q: spark.createDataFrame(con.execute(f"SELECT * FROM {t}").df()) for q, t in hierarchies.items()}
        default = SparkEngine.driver_cells
        for where, driver_cells in (("levels on the driver", default), ("levels on Spark", 0)):
            SparkEngine.driver_cells = driver_cells
            started = time.perf_counter()
            release = anon_spark.mondrian(spark, frame, ADULT_QIS, 10, row_order=["rid"],
                                          **{**models, "hierarchies": spark_hierarchies})
            con.register(f"spark_{driver_cells}", release.toPandas())
            runs.append((f"spark.mondrian() on Spark local[2], {where}", time.perf_counter() - started,
                         f"spark_{driver_cells}"))
        SparkEngine.driver_cells = default
        spark.stop()
    lines = [f"Adult, {rows:,} rows, k = 10, 8 QIs, 6 hierarchies, distinct 2-diversity of class, 1 % suppression; "
             f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores).", "",
             "| engine | wall time (s) | × mondrian() | classes | suppressed rows | same release as mondrian() |",
             "|---|---:|---:|---:|---:|---|"]
    for name, took, table in runs:
        classes, suppressed = measured(con, table)
        lines.append(f"| {name} | {took:.2f} | {took / runs[0][1]:.2f} | {classes:,} | {suppressed:,} | "
                     f"{'yes' if same(con, table, 'sql_release') else 'NO'} |")
        print(lines[-1], flush=True)
    con.close()
    table = "\n".join(lines) + "\n"
    name = "levels_models.md" if args.rows is None else f"levels_models_{args.rows}{'_spark' if args.spark else ''}.md"
    (Path(__file__).parent / "results" / name).write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
