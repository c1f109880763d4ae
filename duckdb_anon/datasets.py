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


STAGED = "__anon_example_staged"


def _create(con: duckdb.DuckDBPyConnection, fn: str, argument: str, name: object, select_sql: str, params=None) -> str:
    """Create table `name` from `select_sql`. An existing table of that name is kept when it holds exactly the
    same rows (a notebook re-run) and refused otherwise: loading an example never replaces a user's table."""
    if not isinstance(name, str) or not name or '"' in name:
        raise ValueError(f"{fn}(): argument {argument!r} must be a table name without double quotes, got {name!r}")
    quoted = '"' + name + '"'
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND "
                         "schema_name = current_schema() AND lower(table_name) = lower(?)", [name]).fetchall()[0][0]
    if not exists:
        con.execute(f"CREATE TABLE {quoted} AS {select_sql}", params)
        return name
    con.execute(f"CREATE OR REPLACE TEMP TABLE {STAGED} AS {select_sql}", params)
    try:
        same = con.execute(f"SELECT (SELECT count(*) FROM {STAGED}) = (SELECT count(*) FROM {quoted}) AND NOT EXISTS "
                           f"(SELECT * FROM {STAGED} EXCEPT ALL SELECT * FROM {quoted})").fetchall()[0][0]
    except duckdb.Error:  # other columns: not the example
        same = False
    finally:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{STAGED}")
    if not same:
        raise ValueError(f"{fn}(): argument {argument!r}: table {name!r} exists and holds other data; an example is never "
                         "loaded over a table of yours: pass another name, or drop the table first")
    return name


def adult_path() -> Path:
    return Path(str(resources.files("duckdb_anon") / "data" / "adult.parquet"))


def load_adult(con: duckdb.DuckDBPyConnection, name: str = "adult") -> str:
    """Create table `name` holding cleaned Adult with a row id `rid` (0-based, file order); a table of that
    name holding the same rows is kept, one holding other data is refused (never replaced)."""
    return _create(con, "load_adult", "name", name, "SELECT * FROM read_parquet(?) ORDER BY rid", [str(adult_path())])


#: Adult's categorical QIs that have a generalization hierarchy (from qiyuangong/Basic_Mondrian, MIT),
#: shipped as ``data/hierarchies/adult_<qi>.txt`` in the ``leaf;parent;...;*`` text format.
ADULT_HIERARCHY_QIS = ["workclass", "marital_status", "occupation", "race", "sex", "native_country"]


def hierarchy_path(qi: str) -> Path:
    return Path(str(resources.files("duckdb_anon") / "data" / "hierarchies" / f"adult_{qi}.txt"))


def load_adult_hierarchies(con: duckdb.DuckDBPyConnection, prefix: str = "h_") -> dict[str, str]:
    """Create one hierarchy table per categorical Adult QI, named prefix + QI, by the SQL loader
    ``hierarchy_from_text`` (kept or refused as load_adult does). Returns {qi: table name}, ready for
    ``mondrian(..., hierarchies := ...)``."""
    if not isinstance(prefix, str):
        raise ValueError(f"load_adult_hierarchies(): argument 'prefix' must be text, got {prefix!r}")
    return {qi: _create(con, "load_adult_hierarchies", "prefix", prefix + qi, "SELECT * FROM hierarchy_from_text(?)",
                        [str(hierarchy_path(qi))]) for qi in ADULT_HIERARCHY_QIS}


def load_patients(con: duckdb.DuckDBPyConnection, name: str = "patients", rows: int = 2000, seed: int = 1) -> str:
    """Create table `name`: `rows` synthetic patients, the same for the same `seed`, for examples and the
    documentation (kept or refused as load_adult does). Nobody in it is real. Columns: patient_id, name, birth_date, age, zip,
    sex, diagnosis, visits. Ages skew to the middle, a few ZIP codes hold most patients, and the diagnosis
    depends a little on age."""
    return _create(con, "load_patients", "name", name, """
        WITH draws AS (
            SELECT range + 1 AS n, hash(range, $seed, 1) % 1000000 / 1000000.0 AS u1,
                   hash(range, $seed, 2) % 1000000 / 1000000.0 AS u2, hash(range, $seed, 3) AS h
            FROM range($rows)),
        shaped AS (
            SELECT n, h, least(95, greatest(18, round(48 + 17 * sqrt(-2 * ln(greatest(u1, 1e-9))) * cos(2 * pi() * u2))))::INTEGER AS age
            FROM draws)
        SELECT 'P' || lpad(n::VARCHAR, 5, '0') AS patient_id,
               ['Ada', 'Ben', 'Chen', 'Dana', 'Eli', 'Fay', 'Gus', 'Hana'][(h % 8)::INTEGER + 1] || ' '
                   || ['Smith', 'Okafor', 'Garcia', 'Kim', 'Novak', 'Rossi'][(h // 8 % 6)::INTEGER + 1] AS name,
               (DATE '2026-01-01' - INTERVAL (age * 365 + h // 48 % 365) DAY)::DATE AS birth_date, age,
               ['02138', '02139', '02140', '02141', '02142', '02143', '01002', '01003'][
                   CASE WHEN h // 17520 % 100 < 30 THEN 1 WHEN h // 17520 % 100 < 55 THEN 2 WHEN h // 17520 % 100 < 70 THEN 3
                        WHEN h // 17520 % 100 < 80 THEN 4 WHEN h // 17520 % 100 < 88 THEN 5 WHEN h // 17520 % 100 < 94 THEN 6
                        WHEN h // 17520 % 100 < 98 THEN 7 ELSE 8 END] AS zip,
               ['F', 'M'][(h // 1752000 % 2)::INTEGER + 1] AS sex,
               CASE WHEN age > 60 AND h // 3504000 % 3 = 0 THEN 'hypertension'
                    ELSE ['asthma', 'diabetes', 'flu', 'hypertension', 'migraine', 'none'][(h // 3504000 % 6)::INTEGER + 1] END AS diagnosis,
               (h // 21024000 % 12)::INTEGER AS visits
        FROM shaped ORDER BY n""", {"seed": seed, "rows": rows})
