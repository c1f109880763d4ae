"""dbt-duckdb plugin: every connection dbt opens gets duckdb-anon installed.

In ``profiles.yml``::

    my_project:
      target: dev
      outputs:
        dev:
          type: duckdb
          path: clinic.duckdb
          plugins:
            - module: duckdb_anon.dbt

dbt-duckdb imports this module and calls :meth:`Plugin.configure_connection` whenever it opens its DuckDB
connection, before any SQL runs on it: once per dbt command in practice, and again if it closed the
connection in between (with a database file it may, when no node holds a handle). Each time,
:func:`duckdb_anon.install` runs in full. That is safe and cheap (every statement is ``CREATE OR REPLACE``;
its cost is in docs/performance.md), and it is needed: the macros persist in the database file, but ``random_walk()``'s numpy
kernel is a Python UDF that lives only as long as the connection. dbt runs its SQL through cursors of that
connection; cursors see the persistent macros (TEMP macros would be invisible to them) and its UDFs.

A database that already holds the functions, from an older (or newer) duckdb-anon: the plugin installs the
running package's version over them, macro by macro, in place. Views and tables built on them stay; the
version the file holds is the package's afterwards (``SELECT duckdb_anon_version()`` from any client,
``duckdb_anon.installed_version(con)`` from Python), and a change of version is logged by dbt. A macro that
an older version had and this one dropped is left in the file, unused.

The dbt package with the ``anonymize()`` macro and the generic tests ``k_anonymous``, ``l_diverse`` and
``localities_preserved`` ships inside this Python package: :func:`package_path` tells where, for a
``local:`` entry in ``packages.yml``.
"""
from __future__ import annotations

from pathlib import Path

import duckdb_anon

try:
    from dbt.adapters.duckdb.plugins import BasePlugin
    from dbt.adapters.events.logging import AdapterLogger
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("duckdb_anon.dbt is a dbt-duckdb plugin and needs dbt-duckdb: "
                      "pip install 'duckdb-anon[dbt]'") from err

logger = AdapterLogger("duckdb_anon")


def package_path() -> Path:
    """The directory of the dbt package shipped with duckdb-anon (for ``packages.yml``: ``- local: <it>``)."""
    return Path(__file__).resolve().parent / "dbt_package"


class Plugin(BasePlugin):
    """Installs (or upgrades) duckdb-anon on every connection dbt-duckdb opens. Takes no configuration."""

    def configure_connection(self, conn) -> None:
        """Run :func:`duckdb_anon.install` on `conn`, the DuckDB connection dbt-duckdb just opened.

        `conn` is the ``duckdb.DuckDBPyConnection`` that dbt-duckdb opened (dbt's cursors come from it later);
        install needs its ``execute``, ``create_function`` and ``remove_function``. dbt-duckdb may have run
        statements on it already (``CREATE SECRET`` for the profile's secrets returns a row); install() runs
        such a pending result to its end first, since DuckDB refuses ``create_function`` while one is open."""
        before = duckdb_anon.installed_version(conn)
        duckdb_anon.install(conn, reuse=True)
        if before is None:
            logger.debug(f"installed duckdb-anon version {duckdb_anon.__version__}")
        elif before != duckdb_anon.__version__:
            logger.info(f"replaced duckdb-anon version {before} in the database by {duckdb_anon.__version__}")

