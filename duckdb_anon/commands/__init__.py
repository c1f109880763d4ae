"""The subcommands of the ``duckdb-anon`` command line (the entry point and parser are in ``duckdb_anon.cli``).

Each module adds its subcommands to the parser (``add_commands``) and implements them; ``files`` and
``progress`` hold what they share: reading inputs, writing outputs safely, and showing progress.
"""
