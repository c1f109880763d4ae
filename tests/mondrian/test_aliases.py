"""The deprecated import names keep working, each with a DeprecationWarning that names the new import."""
import importlib
import sys

import pytest

import duckdb_anon.mondrian
import duckdb_anon.mondrian.spark


@pytest.mark.parametrize("old, new, target", [
    ("duckdb_anon.levels", "duckdb_anon.mondrian", duckdb_anon.mondrian.mondrian),
    ("duckdb_anon.spark", "duckdb_anon.mondrian.spark", duckdb_anon.mondrian.spark.mondrian),
])
def test_an_old_name_warns_naming_the_new_one_and_gives_the_same_function(old, new, target):
    sys.modules.pop(old, None)  # the warning comes at import
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module.mondrian is target
