"""The Spark engine: runs an algorithm's generated SQL as Spark SQL (needs the ``spark`` extra)."""
from __future__ import annotations

from sqlglot import exp

from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, QI, TEMPORAL, Engine

_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")
_CATEGORICAL = ("StringType", "BooleanType", "VarcharType", "CharType")


def spark_column(field) -> QI:
    """How Mondrian orders a Spark column (kind None: it cannot generalize it)."""
    kind = type(field.dataType).__name__
    if kind in _NUMERIC:
        return QI(field.name, NUMERIC)
    if kind == "DateType":  # days since the epoch, as DuckDB's epoch_us(date) / 86,400,000,000
        return QI(field.name, TEMPORAL, "unix_date({x}) * 86400000000")
    if kind == "TimestampType":  # an instant: microseconds since the epoch
        return QI(field.name, TEMPORAL, "unix_micros({x})")
    if kind == "TimestampNTZType":  # wall-clock time read as UTC, as DuckDB reads TIMESTAMP
        return QI(field.name, TEMPORAL, "unix_micros(to_utc_timestamp({x}, 'UTC'))")
    return QI(field.name, CATEGORICAL if kind in _CATEGORICAL else None)


class SparkEngine(Engine):
    """Runs the levels as Spark SQL, writing each relation as Parquet under a work folder and reading it
    back. That cuts the lineage (each level's plan would otherwise hold every level before it, shared
    subplans copied) and gives Spark true sizes for choosing joins: checkpointed or cached relations
    carry estimates that compound level after level until Spark ran out of heap computing them."""

    dialect = "spark"
    numbered = True
    stepwise = True

    def __init__(self, spark, frame, view: str, work_dir: str):
        self.spark, self.view, self.work_dir = spark, view, work_dir.rstrip("/")
        self._columns = [spark_column(f) for f in frame.schema.fields if f.name != "__anon_row"]
        frame.createOrReplaceTempView(view)
        self.versions: dict[str, int] = {}

    def source(self) -> exp.Expression:
        return exp.to_table(self.view)

    def columns(self):
        return self._columns

    def _write(self, name, frame, mode="overwrite"):
        version = self.versions.get(name, 0) + (mode == "overwrite")
        self.versions[name] = version
        path = f"{self.work_dir}/{name}_{version}"
        frame.write.mode(mode).parquet(path)
        # the schema is known: reading it from the files would cost a job per step
        self.spark.read.schema(frame.schema).parquet(path).createOrReplaceTempView(name)
        if mode == "overwrite" and version > 1:  # the previous version was read into this one
            self._delete(f"{self.work_dir}/{name}_{version - 1}")

    def create(self, name, sql):
        self._write(name, self.spark.sql(sql))

    def append(self, name, sql):
        self._write(name, self.spark.sql(sql), "append" if name in self.versions else "overwrite")

    def count(self, name):
        return self.spark.table(name).count()

    def value(self, sql):
        return self.spark.sql(sql).collect()[0][0]

    def rows(self, sql):
        return [tuple(row) for row in self.spark.sql(sql).collect()]

    def drop(self, name):
        self.spark.catalog.dropTempView(name)

    def begin(self, step):
        # Spark's UI and REST API show each job under its step (bench/bench_spark.py reads them)
        self.spark.sparkContext.setJobGroup(f"duckdb-anon {step}", f"duckdb-anon mondrian: {step}")

    def _delete(self, path):
        jvm = self.spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        hadoop_path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()).delete(hadoop_path, True)

    def clean(self):
        """Delete the work folder."""
        self._delete(self.work_dir)
