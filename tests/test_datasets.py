"""The shipped Adult copy equals the published file, cleaned (compared when ../shared is present)."""
import duckdb
import pytest

from conftest import SHARED
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
