"""Mondrian on Apache Spark (local[2]): time, jobs, stages and shuffle bytes per level, and the release
checked against mondrian() on DuckDB (run from the project root; needs the 'spark' extra and Java 17):

    python bench/bench_spark.py                 # Adult, strict and relaxed, k = 10, 8 QIs
    python bench/bench_spark.py --rows 1000000  # Adult sampled with replacement to that many rows

Spark's REST API (UI on port 4040+) is read after each run for the stages of each step (the driver labels
its jobs 'duckdb-anon level N'). Prints Markdown tables.
"""
import argparse
import collections
import json
import time
import urllib.request

import duckdb_anon
from duckdb_anon import spark as anon_spark
from duckdb_anon.datasets import ADULT_QIS


def stages(spark):
    """Per job group: stages and shuffle bytes (read + written), from the REST API."""
    base = spark.sparkContext.uiWebUrl + "/api/v1/applications/" + spark.sparkContext.applicationId
    jobs = json.load(urllib.request.urlopen(base + "/jobs"))
    group_of = {s: job.get("jobGroup", "") for job in jobs for s in job["stageIds"]}
    out = collections.defaultdict(lambda: [0, 0])
    for stage in json.load(urllib.request.urlopen(base + "/stages")):
        group = group_of.get(stage["stageId"], "")
        out[group][0] += 1
        out[group][1] += stage.get("shuffleReadBytes", 0) + stage.get("shuffleWriteBytes", 0)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=0, help="sample Adult to this many rows (0: Adult as it is)")
    parser.add_argument("--modes", nargs="*", default=["strict", "relaxed"])
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    source = "adult" if not args.rows else f"(SELECT * FROM adult USING SAMPLE {args.rows} ROWS (reservoir, 7))"
    con.execute(f"CREATE TABLE numbered AS SELECT row_number() OVER () AS rid, * FROM {source}")
    path = "/tmp/duckdb_anon_bench_spark_source.parquet"
    con.execute(f"COPY (SELECT * FROM numbered ORDER BY rid) TO '{path}'")
    for mode in args.modes:
        spark = (SparkSession.builder.master("local[2]").appName("bench").config("spark.sql.shuffle.partitions", "4")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.read.parquet(path)
        started = time.perf_counter()
        release = anon_spark.mondrian(spark, frame, ADULT_QIS, 10, mode=mode, row_order=["rid"])
        took = time.perf_counter() - started
        con.register("spark_release", release.toPandas())
        con.execute(f"CREATE OR REPLACE TABLE duck AS SELECT * FROM mondrian('numbered', {ADULT_QIS}, 10, mode := '{mode}')")
        diff = con.execute("SELECT (SELECT count(*) FROM (FROM spark_release EXCEPT ALL FROM duck)) + "
                           "(SELECT count(*) FROM (FROM duck EXCEPT ALL FROM spark_release))").fetchall()[0][0]
        per = stages(spark)
        levels = [g for g in per if g.startswith("duckdb-anon level")]
        print(f"\n{mode}: {con.execute('SELECT count(*) FROM numbered').fetchall()[0][0]:,} rows, {took:.1f} s, "
              f"{len(levels)} levels, release {'identical to' if diff == 0 else 'DIFFERENT from'} mondrian() "
              f"({diff} rows differ)\n")
        print("| step | stages | shuffle bytes (read + written) |\n|---|---:|---:|")
        for group in sorted(per, key=lambda g: (len(g), g)):
            print(f"| {group.replace('duckdb-anon ', '') or '(reading, checking)'} | {per[group][0]} | {per[group][1]:,} |")
        spark.stop()


if __name__ == "__main__":
    main()
