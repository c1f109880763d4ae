"""Build duckdb_anon/data/adult.parquet from the published adult.data (run once; the result is committed).

    python bench/make_adult_parquet.py ../shared/datasets/adult.data
"""
import sys
from pathlib import Path

import duckdb

from duckdb_anon.datasets import ADULT_COLUMNS

NUMERIC = {"age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"}


def main(source: str) -> None:
    target = Path(__file__).resolve().parent.parent / "duckdb_anon" / "data" / "adult.parquet"
    con = duckdb.connect()
    columns = {c: ("BIGINT" if c in NUMERIC else "VARCHAR") for c in ADULT_COLUMNS}
    # Fields are separated by ", "; read raw lines so the split is exact, and keep file order.
    con.execute("""
        CREATE TABLE raw AS
        SELECT row_number() OVER () AS line, string_split(column0, ', ') AS f
        FROM read_csv(?, columns = {'column0': 'VARCHAR'}, delim = '\t', header = false, quote = '', escape = '')
    """, [source])
    select = ", ".join(f"f[{i + 1}]::{t} AS {c}" for i, (c, t) in enumerate(columns.items()))
    con.execute(f"""
        CREATE TABLE adult AS
        SELECT (row_number() OVER (ORDER BY line) - 1)::BIGINT AS rid, {select}
        FROM raw WHERE len(f) = 15 AND NOT list_contains(list_transform(f, lambda x: x = '?'), true)
        ORDER BY line
    """)
    n = con.execute("SELECT count(*) FROM adult").fetchone()[0]
    assert n == 30162, n
    con.execute("COPY (SELECT * FROM adult ORDER BY rid) TO ? (FORMAT parquet, COMPRESSION zstd)", [str(target)])
    print(f"wrote {n} rows to {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
