"""A column the table lacks, in a DP aggregate's call (sql/81_dp_arguments.sql): the error names the argument
that names it (group_by, value or privacy_unit_column), not another; a valid call still runs."""
import duckdb
import pytest

CALLS = {"dp_aggregate": "epsilon := 1, delta := 1e-6, max_groups_contributed := 1, min_value := 0, max_value := 10",
         "dp_bounded_aggregates": "max_groups_contributed := 1, min_value := 0, max_value := 10"}


@pytest.fixture(scope="module")
def dcon(module_con):
    module_con.execute("CREATE TABLE dn AS SELECT i % 20 AS person, i % 3 AS g, i * 1.0 AS v, 'x' AS s FROM range(100) r(i)")
    return module_con


@pytest.mark.parametrize("fn", sorted(CALLS))
@pytest.mark.parametrize("group_by, named, argument, words", [
    ("['g']", "value := 'nope', privacy_unit_column := 'person'", "value", "'nope'"),
    ("['g']", "value := 's', privacy_unit_column := 'person'", "value", "not a number"),
    ("['g']", "value := 'v', privacy_unit_column := 'nope'", "privacy_unit_column", "'nope'"),
    ("['g', 'nope']", "value := 'v', privacy_unit_column := 'person'", "group_by", "'nope'"),
])
def test_a_missing_column_is_reported_under_its_own_argument(dcon, fn, group_by, named, argument, words):
    aggregates = ", aggregates := ['sum']" if fn == "dp_aggregate" else ""
    with pytest.raises(duckdb.Error) as err:
        dcon.execute(f"SELECT * FROM {fn}('dn', {group_by}, {named}{aggregates}, {CALLS[fn]})").fetchall()
    message = str(err.value).split("\n")[0]
    assert f"{fn}(): argument '{argument}'" in message and words in message, message


def test_a_valid_call_still_runs(dcon):
    rows = dcon.execute("SELECT g, count FROM dp_aggregate('dn', ['g'], privacy_unit_column := 'person', epsilon := 1, "
                        "delta := 1e-6, max_groups_contributed := 1, public_groups := NULL) ORDER BY g").fetchall()
    assert {g for g, _ in rows} <= {0, 1, 2}
