"""Deprecated name of :mod:`duckdb_anon.mondrian`: ``duckdb_anon.levels.mondrian`` keeps working, with a
DeprecationWarning naming the new import."""
import warnings

from duckdb_anon.mondrian import mondrian

__all__ = ["mondrian"]  # the public name, kept

warnings.warn("duckdb_anon.levels is deprecated: import duckdb_anon.mondrian instead "
              "(from duckdb_anon.mondrian import mondrian)", DeprecationWarning, stacklevel=2)
