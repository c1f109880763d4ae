"""Mondrian on Apache Spark (local[2]): time, jobs, stages and shuffle bytes per level, and the release
checked against mondrian() on DuckDB (run from the project root; needs the 'spark' extra and Java 17):

    python bench/bench_spark.py                 # Adult, strict and relaxed, k = 10, 8 QIs
    python bench/bench_spark.py --rows 10000000 --modes strict --driver-memory 12g
    python bench/bench_spark.py --rows 6366 --driver-cells 0 200000   # levels on Spark, then on the driver

--rows scales Adult as bench/bench_mondrian.py does (rows sampled with replacement, two numeric QIs
jittered). The release is checked against DuckDB's: mondrian() on Adult, the level driver on scaled
tables (the same release, held to mondrian()'s by the tests, and about twice as fast at 10M rows).
Spark's REST API (UI on port 4040+) is read after each run for the stages of each step (the driver labels
its jobs 'duckdb-anon level N'), with each step's wall time from its first job's submission to its last
job's completion. Everything is written under a scratch folder, deleted at the end. Prints Markdown tables.
"""
import argparse
import collections
import json
import shutil
import tempfile
import time
import urllib.request
from datetime import datetime

import duckdb_anon
from bench_mondrian import build  # the scaled Adult tables of the DuckDB benchmark
from duckdb_anon import mondrian as level_driver
from duckdb_anon.mondrian import spark as anon_spark
from duckdb_anon.datasets import ADULT_QIS
from duckdb_anon.engines.spark_engine import SparkEngine


def _instant(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%Z").timestamp()


def stages(spark):
    """Per job group: stages, shuffle bytes (read + written) and wall seconds, from the REST API."""
    base = spark.sparkContext.uiWebUrl + "/api/v1/applications/" + spark.sparkContext.applicationId
    jobs = json.load(urllib.request.urlopen(base + "/jobs"))
    group_of = {s: job.get("jobGroup", "") for job in jobs for s in job["stageIds"]}
    out = collections.defaultdict(lambda: [0, 0, 0.0])
    for stage in json.load(urllib.request.urlopen(base + "/stages")):
        group = group_of.get(stage["stageId"], "")
        out[group][0] += 1
        out[group][1] += stage.get("shuffleReadBytes", 0) + stage.get("shuffleWriteBytes", 0)
    spans = collections.defaultdict(list)
    for job in jobs:
        if "completionTime" in job:
            spans[job.get("jobGroup", "")] += [_instant(job["submissionTime"]), _instant(job["completionTime"])]
    for group, instants in spans.items():
        out[group][2] = max(instants) - min(instants)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=0, help="sample Adult to this many rows (0: Adult as it is)")
    parser.add_argument("--modes", nargs="*", default=["strict", "relaxed"])
    parser.add_argument("--driver-memory", default="4g", help="Spark driver heap (local mode runs the tasks there)")
    parser.add_argument("--driver-cells", type=int, nargs="*", default=[None],
                        help="run the levels in DuckDB on the driver up to this many distinct QI vectors "
                             "(default: the engine's; 0: every level on Spark); several: one run each")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="duckdb-anon-bench-spark-")
    try:  # at 10M rows the database, the Parquet files and the releases take ~1 GB
        run(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(args, scratch):
    from pyspark.sql import SparkSession

    con = duckdb_anon.connect(f"{scratch}/bench.duckdb")
    con.execute("SET temp_directory = ?", [f"{scratch}/spill"])
    source = build(con, args.rows or 30162)
    con.execute(f"CREATE TABLE numbered AS SELECT row_number() OVER () AS rid, * EXCLUDE (rid) FROM {source}")
    path = f"{scratch}/source.parquet"
    con.execute("COPY (SELECT * FROM numbered ORDER BY rid) TO ?", [path])
    default_cells = SparkEngine.driver_cells
    for mode, driver_cells in [(m, c) for m in args.modes for c in args.driver_cells]:
        SparkEngine.driver_cells = default_cells if driver_cells is None else driver_cells
        spark = (SparkSession.builder.master("local[2]").appName("bench").config("spark.sql.shuffle.partitions", "4")
                 .config("spark.driver.memory", args.driver_memory).config("spark.local.dir", f"{scratch}/spark")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.read.parquet(path)
        started = time.perf_counter()
        target = f"{scratch}/release_{mode}_{SparkEngine.driver_cells}"
        anon_spark.mondrian(spark, frame, ADULT_QIS, 10, mode=mode, row_order=["rid"], into=target)
        took = time.perf_counter() - started
        con.execute("CREATE OR REPLACE TABLE spark_release AS SELECT * FROM read_parquet(?)", [f"{target}/*.parquet"])
        if source == "adult":
            con.execute(f"CREATE OR REPLACE TABLE duck AS SELECT * FROM mondrian('numbered', {ADULT_QIS}, 10, mode := '{mode}')")
        else:
            con.execute("DROP TABLE IF EXISTS duck")
            level_driver.mondrian(con, "numbered", ADULT_QIS, 10, into="duck", mode=mode)
        diff = con.execute("SELECT (SELECT count(*) FROM (FROM spark_release EXCEPT ALL FROM duck)) + "
                           "(SELECT count(*) FROM (FROM duck EXCEPT ALL FROM spark_release))").fetchall()[0][0]
        per = stages(spark)
        levels = [g for g in per if g.startswith("duckdb-anon level")]
        print(f"\n{mode}, levels on the driver up to {SparkEngine.driver_cells:,} cells: "
              f"{con.execute('SELECT count(*) FROM numbered').fetchall()[0][0]:,} rows, {took:.1f} s, "
              f"{len(levels)} levels on Spark, release {'identical to' if diff == 0 else 'DIFFERENT from'} DuckDB's "
              f"{'mondrian()' if source == 'adult' else 'level driver'} ({diff} rows differ)\n")
        print("| step | wall time (s) | stages | shuffle bytes (read + written) |\n|---|---:|---:|---:|")
        for group in sorted(per, key=lambda g: (len(g), g)):
            count, shuffled, seconds = per[group]
            spent = f"{seconds:.1f}" if group else "--"  # ungrouped jobs come before and after the call
            print(f"| {group.replace('duckdb-anon ', '') or '(reading, checking)'} | {spent} | {count} | {shuffled:,} |")
        spark.stop()
    con.close()


if __name__ == "__main__":
    main()
