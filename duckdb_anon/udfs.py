"""The Python UDFs a connection needs before the macros that call them (they live only as long as the
connection, unlike the macros)."""
from __future__ import annotations

import duckdb


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """The Python UDFs of a connection (they live only as long as it, unlike the macros): the random walk's
    kernel, the DP noise functions and the k^m driver behind km_anonymity()."""
    from duckdb_anon.dp import lineage, noise
    from duckdb_anon.km import udf as km_udf
    from duckdb_anon.walk import register

    register(con)
    noise.register(con)
    lineage.register(con)
    km_udf.register(con)
