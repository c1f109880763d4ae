"""The shipped Adult copy equals the published file, cleaned (compared when ../shared is present)."""
import duckdb
import pytest

import duckdb_anon
from tests.conftest import SHARED
from duckdb_anon.datasets import ADULT_COLUMNS, adult_path


def test_shipped_adult_shape():
    con = duckdb.connect()
    n, ids = con.execute("SELECT count(*), count(DISTINCT rid) FROM read_parquet(?)", [str(adult_path())]).fetchone()
    assert n == ids == 30162
    assert con.execute("SELECT count(*) FROM read_parquet(?) WHERE workclass = '?' OR occupation = '?'",
                       [str(adult_path())]).fetchone()[0] == 0


@pytest.mark.skipif(not (SHARED / "datasets" / "adult.data").exists(), reason="../shared is not beside the checkout")
def test_shipped_adult_equals_the_published_file():
    import pandas as pd
    raw = pd.read_csv(SHARED / "datasets" / "adult.data", header=None, names=ADULT_COLUMNS, sep=", ",
                      engine="python", dtype=str).dropna()
    raw = raw[~(raw == "?").any(axis=1)].reset_index(drop=True)
    shipped = duckdb.connect().execute("SELECT * FROM read_parquet(?) ORDER BY rid", [str(adult_path())]).df()
    assert len(raw) == len(shipped) == 30162
    for col in ADULT_COLUMNS:
        assert (raw[col].astype(str).values == shipped[col].astype(str).values).all(), col


def test_loading_an_example_never_replaces_a_table_of_yours(con):
    """The same example again keeps the table (a notebook re-run); a table of that name holding anything else
    is refused naming the loader and the argument, and left as it was."""
    duckdb_anon.load_patients(con)
    before = con.execute("SELECT count(*), sum(hash(COLUMNS(*))) FROM patients").fetchall()
    duckdb_anon.load_patients(con)
    assert con.execute("SELECT count(*), sum(hash(COLUMNS(*))) FROM patients").fetchall() == before
    con.execute("CREATE TABLE adult AS SELECT 'mine' AS owner")
    con.execute("UPDATE patients SET visits = visits + 1 WHERE patient_id = 'P00001'")
    for load, table in ((duckdb_anon.load_adult, "adult"), (duckdb_anon.load_patients, "patients")):
        with pytest.raises(ValueError, match=rf"{load.__name__}\(\): argument 'name': table '{table}' exists and holds other data"):
            load(con)
    assert con.execute("SELECT * FROM adult").fetchall() == [("mine",)]
    assert con.execute("SELECT visits FROM patients WHERE patient_id = 'P00001'").fetchall() != []
