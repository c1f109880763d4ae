"""duckdb-anon: k-anonymity and friends, computed inside DuckDB from SQL.

Everything that runs in the database is a SQL macro in the package's ``sql/*.sql`` files; this package
only installs them (:func:`install`) and offers conveniences around them (:func:`connect`, the CLI, the
shipped Adult data). Once installed into a database file, the macros work from any DuckDB connection that
opens the file, with or without this package.
"""
from duckdb_anon._install import connect, install, installed_version, sql_files
from duckdb_anon.dp.ledger import publish_dp, set_dp_budget
from duckdb_anon.datasets import load_adult, load_adult_hierarchies, load_patients
from duckdb_anon.privacy_units import apply_privacy_units, declare_privacy_unit
from duckdb_anon.multitable import publish_tables
from duckdb_anon.pattern import preserve_patterns
from duckdb_anon.km import km_anonymize
from duckdb_anon.releases import publish_km, publish_mondrian, publish_release
from duckdb_anon.rerelease import publish_rerelease
from duckdb_anon.roles import (apply_policies, create_anonymized_view, declare_role, new_pseudonym_key, set_policy,
                               set_pseudonym_key)

__version__ = "0.1.0"

__all__ = ["apply_policies", "apply_privacy_units", "connect", "create_anonymized_view", "declare_privacy_unit",
           "declare_role", "install", "installed_version", "km_anonymize", "load_adult", "load_adult_hierarchies", "load_patients",
           "new_pseudonym_key", "preserve_patterns", "publish_dp", "publish_km", "publish_mondrian", "publish_release", "publish_rerelease",
           "publish_tables", "set_dp_budget",
           "set_policy", "set_pseudonym_key", "sql_files", "__version__"]
