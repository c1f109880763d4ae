"""The Spark engine: runs an algorithm's generated SQL as Spark SQL (needs the ``spark`` extra): Mondrian's
levels, and the DP aggregates' query over DataFrames held as temporary views for it (:meth:`SparkEngine.views`)
with their UDFs (:meth:`SparkEngine.register_udfs`). Spark identifiers are quoted here only (spark_name)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlglot import exp

from duckdb_anon.engines.base import QI, TEMPORAL, Engine, Names, Udf

# Spark's types under DuckDB's names, for the SQL rule of the column kinds (anon_qi_kind); a type not
# listed keeps its Spark name, which the rule does not know (it cannot be generalized)
_DUCKDB_TYPES = {"ByteType": "TINYINT", "ShortType": "SMALLINT", "IntegerType": "INTEGER", "LongType": "BIGINT",
                 "FloatType": "FLOAT", "DoubleType": "DOUBLE", "DecimalType": "DECIMAL", "StringType": "VARCHAR",
                 "VarcharType": "VARCHAR", "CharType": "VARCHAR", "BooleanType": "BOOLEAN", "DateType": "DATE",
                 "TimestampType": "TIMESTAMP WITH TIME ZONE", "TimestampNTZType": "TIMESTAMP",
                 "BinaryType": "BLOB"}
# a temporal column's key in Spark SQL: microseconds since the epoch, as DuckDB's anon_numeric_key
_TIME_KEYS = {"DateType": "unix_date({x}) * 86400000000",  # days since the epoch
              "TimestampType": "unix_micros({x})",  # an instant
              "TimestampNTZType": "unix_micros(to_utc_timestamp({x}, 'UTC'))"}  # wall-clock time read as UTC, as DuckDB


def spark_name(name: str) -> str:
    """A column or view name as a Spark SQL identifier (backquoted, backquotes doubled)."""
    return exp.to_identifier(name, quoted=True).sql("spark")


def _plain(value):
    """A Spark UDF argument as DuckDB hands it to the same function: a struct as a dict, lists of them."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value.asDict(recursive=True) if hasattr(value, "asDict") else value


def _spark_udf(udf: Udf):
    """`udf` as a Spark UDF: a batch one as a pandas UDF (one call per Arrow batch), any other per row."""
    import pandas as pd
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.functions import udf as row_udf
    from pyspark.sql.types import DoubleType, LongType

    returns = {"DOUBLE": DoubleType(), "BIGINT": LongType()}[udf.returns]
    if udf.batch:
        def batch(*columns):
            out = udf.fn(*(c.astype("float64").to_numpy() if kind == "DOUBLE" else c.tolist()
                           for c, kind in zip(columns, udf.params)))
            return pd.Series(out).where(~pd.isna(out), None)
        batch.__annotations__ = {"columns": pd.Series, "return": pd.Series}  # a scalar pandas UDF
        made = pandas_udf(batch, returns)
    else:
        made = row_udf(lambda *args: udf.fn(*map(_plain, args)), returns)
    return made.asNondeterministic() if udf.fresh else made


def spark_columns(fields) -> list[QI]:
    """How Mondrian orders Spark columns (StructFields): each a QI of the kind anon_qi_kind gives its type
    (None: it cannot generalize it)."""
    from duckdb_anon.engines.duckdb_engine import duckdb_columns

    spark_types = [type(field.dataType).__name__ for field in fields]
    kinds = duckdb_columns([(field.name, _DUCKDB_TYPES.get(t, t)) for field, t in zip(fields, spark_types)])
    return [QI(qi.name, qi.kind, _TIME_KEYS[t] if qi.kind == TEMPORAL else "", qi.type) for qi, t in zip(kinds, spark_types)]


class SparkEngine(Engine):
    """Runs the levels as Spark SQL, writing each relation as Parquet under a work folder and reading it
    back. That cuts the lineage (each level's plan would otherwise hold every level before it, shared
    subplans copied) and gives Spark true sizes for choosing joins: checkpointed or cached relations
    carry estimates that compound level after level until Spark ran out of heap computing them."""

    dialect = "spark"
    numbered = True
    stepwise = True
    # up to this many distinct QI vectors the levels run in DuckDB on the driver: each level costs Spark
    # jobs (seconds each) whatever its size, while DuckDB decides a level of this size in milliseconds
    driver_cells = 200_000

    def __init__(self, spark, frame=None, view: str | None = None, work_dir: str | None = None):
        """`frame`: the source; number_source() makes it the view `view`. Without them (the DP aggregates)
        the engine only runs queries over views()."""
        self.spark, self.view, self.work_dir = spark, view, (work_dir or "").rstrip("/")
        self.frame = frame
        self._columns = spark_columns(frame.schema.fields) if frame is not None else []
        self.versions: dict[str, int] = {}
        self._driver_con = None  # the DuckDB connection of level_engine(), while it is open

    def number_source(self, order: list[str] | None) -> None:
        """The source as the view, its rows numbered in __anon_row: by their columns `order` (ascending,
        NULLs last), or, when None, by any unique number (the release does not read the order)."""
        from pyspark.sql import functions as F

        if order is None:
            self.frame.withColumn("__anon_row", F.monotonically_increasing_id() + 1).createOrReplaceTempView(self.view)
        else:
            self._number(self.view, self.frame, order)

    def number(self, name, sql, order):
        self._number(name, self.spark.sql(sql), [order])

    def _number(self, name, frame, order):
        """`frame` with __anon_row, its place from 1 in `order`, as the view `name`, without the single task
        that row_number() over an unordered window runs. The rows are range-partitioned by `order` and
        sorted within their partition, so partition i holds places before partition i + 1's; each row's
        monotonically_increasing_id (its partition in the top bits, its place within it below) is written
        once with it, the rows per partition counted from what was written, and a row's number is the
        rows of the partitions before its own plus its place in its own. Ties in `order` take any order,
        as they do under row_number()."""
        from pyspark.sql import functions as F

        by = [F.col(spark_name(c)).asc_nulls_last() for c in order]
        placed = frame.repartitionByRange(*by).sortWithinPartitions(*by) \
            .withColumn("__anon_place", F.monotonically_increasing_id())
        path = self._path(name)
        placed.write.mode("overwrite").parquet(path)
        written = self.spark.read.schema(placed.schema).parquet(path)
        part = F.shiftright("__anon_place", 33)
        counts = dict(written.groupBy(part.alias("p")).count().collect())
        before, offsets = 0, []
        for p in range(max(counts, default=0) + 1):
            offsets.append(before)
            before += counts.get(p, 0)
        first = F.element_at(F.array(*[F.lit(o) for o in offsets]), (part + 1).cast("int"))
        written.withColumn("__anon_row", first + (F.col("__anon_place") - F.shiftleft(part, 33)) + 1) \
            .drop("__anon_place").createOrReplaceTempView(name)

    def source(self) -> exp.Expression:
        return exp.to_table(self.view)

    def columns(self):
        return self._columns

    def _path(self, name, mode="overwrite"):
        """The folder of `name`'s next version (or its current one, to append to)."""
        version = self.versions.get(name, 0) + (mode == "overwrite")
        self.versions[name] = version
        return f"{self.work_dir}/{name}_{version}"

    def _write(self, name, frame, mode="overwrite"):
        path = self._path(name, mode)
        version = self.versions[name]
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

    def level_engine(self, cells, inputs, macros=()):
        if cells > self.driver_cells:
            return self
        import duckdb

        from duckdb_anon import sql_rules
        from duckdb_anon.engines.duckdb_engine import DuckDBEngine

        self._driver_con = con = duckdb.connect()  # closed by take_back(), or by clean() when the run fails
        for statement in sql_rules.definitions(*macros) if macros else ():
            con.execute(statement)
        for name, sql in inputs.items():  # names are ours (Names), the rows come as Arrow
            con.register("__anon_input", self.spark.sql(sql).toArrow())
            con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM __anon_input")
            con.unregister("__anon_input")
        return DuckDBEngine(con, name)

    def take_back(self, loop, name):
        rows = loop.con.sql(f"SELECT * FROM {name}").to_arrow_table()
        self._close_driver()
        self._write(name, self.spark.createDataFrame(rows))

    def _close_driver(self):
        if self._driver_con is not None:
            self._driver_con.close()
            self._driver_con = None

    def drop(self, name):
        self.spark.catalog.dropTempView(name)

    def register_udfs(self, udfs):
        for udf in udfs:
            self.spark.udf.register(udf.name, _spark_udf(udf))

    def result(self, sql):
        return self.spark.sql(sql)

    @contextmanager
    def views(self, **frames) -> Iterator[dict[str, exp.Expression]]:
        """The DataFrames `frames` as temporary views named for this run (Names), as table expressions by the
        same keys (for render()), dropped on leaving. A result() taken inside outlives them: Spark resolves
        a view into the query's plan as spark.sql() analyzes it (pyspark's own spark.sql(text, df=frame) drops
        its views as it returns, likewise). The engine needs a classic session (Spark Connect has no
        SparkContext, and analyzes later)."""
        names = Names()
        try:
            held = {}
            for what, frame in frames.items():
                name = names.real(names(what))  # the prefix is ours, never user input
                frame.createOrReplaceTempView(name)
                held[what] = exp.Table(this=exp.to_identifier(name))
            yield held
        finally:
            for name in names.made:
                self.drop(name)

    def begin(self, step):
        # Spark's UI and REST API show each job under its step (bench/bench_spark.py reads them)
        self.spark.sparkContext.setJobGroup(f"duckdb-anon {step}", f"duckdb-anon mondrian: {step}")

    def _delete(self, path):
        jvm = self.spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        hadoop_path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()).delete(hadoop_path, True)

    def clean(self):
        """Close the driver's DuckDB if a failed run left it open, and delete the work folder."""
        self._close_driver()
        self._delete(self.work_dir)
