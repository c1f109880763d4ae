"""Deprecated name of :mod:`duckdb_anon.mondrian.spark`: ``duckdb_anon.spark.mondrian`` keeps working,
with a DeprecationWarning naming the new import."""
import warnings

from duckdb_anon.mondrian.spark import mondrian

__all__ = ["mondrian"]  # the public name, kept

warnings.warn("duckdb_anon.spark is deprecated: import duckdb_anon.mondrian.spark instead "
              "(from duckdb_anon.mondrian import spark)", DeprecationWarning, stacklevel=2)
