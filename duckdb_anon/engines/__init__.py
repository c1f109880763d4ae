"""Engines: what an algorithm needs from a SQL engine (DuckDB, Spark), shared by every algorithm.

``base`` holds the interface and the column kinds; ``duckdb_engine`` and ``spark_engine`` the two engines
(the Spark one imports nothing from pyspark until it is used).
"""
from duckdb_anon.engines.base import CATEGORICAL, NUMERIC, QI, TEMPORAL, Engine, Names, Udf

__all__ = ["CATEGORICAL", "NUMERIC", "QI", "TEMPORAL", "Engine", "Names", "Udf"]
