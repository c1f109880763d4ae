"""The UDF behind the SQL entry ``km_anonymity()`` (sql/85_km.sql): the Python driver, run from SQL.

The algorithm loops over SQL it generates, so a table macro cannot run it alone. The UDF, named
``km_anonymity_needs_the_duckdb_anon_python_package`` so that a plain client's error says what is missing, is
folded when the query is bound: it runs :func:`duckdb_anon.km.km_anonymize` on a cursor of the database
(which sees committed data), into a temporary table of that cursor, copies the release to a Parquet file
in this process's temporary directory and returns the file's path, which the macro reads. The files are
removed when the process exits.
"""
from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import uuid
from pathlib import Path

import duckdb

from duckdb_anon.engines.duckdb_engine import create_function

_folder: Path | None = None


def _staging() -> Path:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="duckdb_anon_km_"))
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _release(con: duckdb.DuckDBPyConnection):
    def release(table_name, items, k, m, person, hierarchies, keep, seed, person_output, key_name, release_name, key):
        from duckdb_anon.km import km_anonymize

        name = f"__anon_km_{uuid.uuid4().hex[:12]}"
        path = _staging() / f"{name}.parquet"
        if release_name is None:  # the call names the release: same call, same pseudonyms; another call, others
            release_name = "km_anonymity:" + json.dumps([table_name, items, k, m, person, hierarchies, keep, seed])
        cursor = con.cursor()
        try:
            if key is not None and isinstance(key_name, str) and key_name.replace("_", "a").isalnum() and key_name.isascii():
                cursor.execute(f"SET VARIABLE duckdb_anon_key_{key_name} = ?", [key])  # the caller's key, on this cursor
            km_anonymize(cursor, table_name, person=person, items=items, k=k, m=m,
                         hierarchies=None if hierarchies is None else json.loads(hierarchies),
                         into=f"temp.main.{name}", seed=seed, keep=keep, person_output=person_output,
                         key_name=key_name, release_name=release_name, _fn="km_anonymity")
            quoted = str(path).replace("'", "''")  # our own temporary path, quoted all the same
            cursor.execute(f"COPY temp.main.{name} TO '{quoted}' (FORMAT parquet)")
        finally:
            cursor.close()
        return str(path)
    return release


NAME = "km_anonymity_needs_the_duckdb_anon_python_package"


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register the UDF on `con`."""
    create_function(con, NAME, _release(con),
                    ["VARCHAR", "VARCHAR[]", "BIGINT", "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR[]", "BIGINT",
                     "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR"],
                    "VARCHAR", null_handling="special", side_effects=False)
