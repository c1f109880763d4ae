"""Data sets shipped with the package, so the demo and the tests need no download.

``adult.parquet`` is the UCI Adult census extract (CC BY 4.0) cleaned as every published Mondrian result
on it is: the 2,399 records with a '?' field dropped, 30,162 left, in file order. It is made from the
original ``adult.data`` by ``bench/make_adult_parquet.py``.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
                 "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week",
                 "native_country", "class"]
#: The eight quasi-identifiers of the published Mondrian experiments, in their order.
ADULT_QIS = ["age", "workclass", "education_num", "marital_status", "occupation", "race", "sex", "native_country"]
ADULT_NUMERIC = ["age", "education_num"]


def adult_path() -> Path:
    return Path(str(resources.files("duckdb_anon") / "data" / "adult.parquet"))


def load_adult(con: duckdb.DuckDBPyConnection, name: str = "adult") -> str:
    """Create (or replace) table `name` holding cleaned Adult with a row id `rid` (0-based, file order)."""
    quoted = '"' + name.replace('"', '""') + '"'
    con.execute(f"CREATE OR REPLACE TABLE {quoted} AS SELECT * FROM read_parquet(?) ORDER BY rid",
                [str(adult_path())])
    return name


#: Adult's categorical QIs that have a generalization hierarchy (from qiyuangong/Basic_Mondrian, MIT),
#: shipped as ``data/hierarchies/adult_<qi>.txt`` in the ``leaf;parent;...;*`` text format.
ADULT_HIERARCHY_QIS = ["workclass", "marital_status", "occupation", "race", "sex", "native_country"]


def hierarchy_path(qi: str) -> Path:
    return Path(str(resources.files("duckdb_anon") / "data" / "hierarchies" / f"adult_{qi}.txt"))


def load_adult_hierarchies(con: duckdb.DuckDBPyConnection, prefix: str = "h_") -> dict[str, str]:
    """Create (or replace) one hierarchy table per categorical Adult QI, named prefix + QI, by the SQL
    loader ``hierarchy_from_text``. Returns {qi: table name}, ready for ``mondrian(..., hierarchies := ...)``."""
    tables = {}
    for qi in ADULT_HIERARCHY_QIS:
        name = prefix + qi
        quoted = '"' + name.replace('"', '""') + '"'
        con.execute(f"CREATE OR REPLACE TABLE {quoted} AS SELECT * FROM hierarchy_from_text(?)", [str(hierarchy_path(qi))])
        tables[qi] = name
    return tables
