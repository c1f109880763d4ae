"""duckdb-anon: k-anonymity and friends, computed inside DuckDB from SQL.

What runs in the database is SQL macros, written by :func:`install` (or :func:`connect`) from two sources:
the package's ``sql/*.sql`` files (read only through ``sql_rules``), and the macros generated in Python
from plans: the DP aggregates (``dp/plan.py``) and both recursions of ``mondrian()``, plain and checked
(``mondrian/plan.py``, ``mondrian/checked.py``), rendered by sqlglot; the same plans run on Spark.
Once installed into a database file, the macros work from any DuckDB connection that opens the file,
with or without this package, except those whose kernel is a Python function registered on the
connection (``random_walk()``'s walk, the DP noise, ``km_anonymity()``): those are called from Python.
Around them the package offers the publishers (``publish_*``), the level driver, the CLI and the shipped
example data.
"""
# Each public name and the module that defines it, imported when the name is first read (PEP 562), so that
# importing the package, as the command line does, costs nothing until a function is used.
_PUBLIC = {
    "connect": "_install", "install": "_install", "installed_version": "_install", "sql_files": "sql_rules",
    "publish_dp": "dp.ledger", "set_dp_budget": "dp.ledger",
    "load_adult": "datasets", "load_adult_hierarchies": "datasets", "load_patients": "datasets",
    "apply_privacy_units": "privacy_units", "declare_privacy_unit": "privacy_units",
    "preserve_patterns": "pattern", "publish_km": "releases", "publish_mondrian": "releases", "publish_release": "releases",
    "publish_rerelease": "rerelease",
    "apply_policies": "roles", "create_anonymized_view": "roles", "declare_role": "roles", "new_pseudonym_key": "roles",
    "set_policy": "roles", "set_pseudonym_key": "roles",
    "km_anonymize": "km", "publish_tables": "multitable", "masked_copy": "database_copy", "load_fake_values": "masking",
}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'duckdb_anon' has no attribute {name!r}")
    from importlib import import_module
    value = getattr(import_module(f"duckdb_anon.{_PUBLIC[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_PUBLIC])


__version__ = "0.1.0"

__all__ = ["apply_policies", "apply_privacy_units", "connect", "create_anonymized_view", "declare_privacy_unit",
           "declare_role", "install", "installed_version", "km_anonymize", "load_adult", "load_adult_hierarchies",
           "load_fake_values", "load_patients", "masked_copy", "new_pseudonym_key", "preserve_patterns", "publish_dp",
           "publish_km", "publish_mondrian", "publish_release", "publish_rerelease", "publish_tables",
           "set_dp_budget",
           "set_policy", "set_pseudonym_key", "sql_files", "__version__"]
