"""The cells mondrian() partitions (anon_cells, sql/10_mondrian.sql): each category's order key, checked
against pandas over small random tables, and the constant row that stands for "no hierarchies"."""
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, tied_frames

SETTINGS = settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _load(con, df):
    con.register("df_view", df)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT x::INTEGER AS x, c::VARCHAR AS c, "
                "CASE WHEN d IS NULL THEN NULL ELSE d % 2 = 0 END AS b FROM df_view ORDER BY id")
    con.unregister("df_view")


def _expected_codes(values, order):
    """Code of each value: rank of its first row ('appearance') or of its value, NULL last ('value')."""
    present = list(dict.fromkeys(None if pd.isna(v) else v for v in values))
    if order == "value":
        present = sorted(v for v in present if v is not None) + ([None] if None in present else [])
    return {v: float(i) for i, v in enumerate(present)}


@SETTINGS
@given(tied_frames(1, 30, columns="xcd"), st.sampled_from(["appearance", "value"]))
def test_category_keys_follow_the_categorical_order(con, df, order):
    _load(con, df)
    rows = con.execute("SELECT x, c, b FROM t").df()  # the table's scan order: the cells' row numbers
    cells = con.execute(f"SELECT __anon_cell AS cell, __anon_n AS n, c.k AS c_key, b.k AS b_key, c.v AS c, b.v AS b "
                        f"FROM anon_cells('t', ['x', 'c', 'b'], '{order}')").df()
    assert cells["n"].sum() == len(rows)
    assert len(cells) == len(rows.astype(str).drop_duplicates())  # one cell per distinct QI vector
    for column in ("c", "b"):
        codes = _expected_codes(rows[column].astype(object), order)
        for cell in cells.itertuples():
            first = rows[column].astype(object).iloc[cell.cell - 1]  # the cell's first row
            value = None if pd.isna(first) else first
            assert getattr(cell, f"{column}_key") == codes[value], (column, value)


@SETTINGS
@given(tied_frames(1, 30, columns="xcd"), st.sampled_from(["appearance", "value"]))
def test_keyed_cells_list_each_cells_keys_in_the_qis_order_nulls_beyond_the_range(con, df, order):
    # the qis listed out of the table's column order (x, c, b): __anon_keys follows the list
    _load(con, df)
    cells = con.execute(f"SELECT __anon_cell AS cell, x.k AS x, c.k AS c, b.k AS b, __anon_keys AS keys "
                        f"FROM anon_keyed_cells('f', 't', ['b', 'x', 'c'], '{order}', NULL, NULL)").df()
    assert sorted(cells["cell"]) == sorted(con.execute(
        f"SELECT __anon_cell FROM anon_cells('t', ['x', 'c', 'b'], '{order}')").df()["__anon_cell"])
    for d, column in enumerate(["b", "x", "c"]):
        keys = cells[column].dropna()
        # a NULL key reads one range beyond the largest key (0 when the column holds only NULLs)
        fill = keys.max() + max(keys.max() - keys.min(), 1) if len(keys) else 0.0
        expected = cells[column].fillna(fill)
        assert [k[d] for k in cells["keys"]] == list(expected), column


def test_no_hierarchies_row_has_the_types_of_built_maps(con):
    # anon_hierarchy_maps writes the no-hierarchy row as a constant; the built maps must read the same
    none = "anon_no_hierarchies()"
    constant = con.execute(f"DESCRIBE SELECT * FROM anon_hierarchy_maps('f', {none})").fetchall()
    built = con.execute(f"DESCRIBE SELECT * FROM anon_hierarchy_maps_built('f', {none}, true)").fetchall()
    assert [(r[0], r[1]) for r in constant] == [(r[0], r[1]) for r in built]
    assert con.execute(f"SELECT * FROM anon_hierarchy_maps('f', {none})").fetchall() == \
        con.execute(f"SELECT * FROM anon_hierarchy_maps_built('f', {none}, true)").fetchall() == [(None, None, None)]
