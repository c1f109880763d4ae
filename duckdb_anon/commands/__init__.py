"""The subcommands of the ``duckdb-anon`` command line (the entry point and parser are in ``duckdb_anon.cli``).

Each module adds its subcommands to the parser (``add_commands``) and implements them; ``files`` and
``progress`` hold what they share: reading inputs, writing outputs safely, and showing progress.
"""

# Every subcommand: the module of this package that implements it (its add_commands adds it to the parser)
# and its one-line help. Kept here, away from the modules (which import duckdb and the rest), so that
# `duckdb-anon --help` and `--version` import none of them; `duckdb-anon CMD ...` imports CMD's module only.
SUBCOMMANDS = {
    "demo": ("mondrian", "strict Mondrian on the shipped Adult data"),
    "mondrian": ("mondrian", "k-anonymize a CSV or Parquet file"),
    "report": ("report", "an HTML report on a release: class sizes, risk, l/t, NCP, linkage; gates"),
    "new-key": ("roles", "print a new 256-bit pseudonym key (anon-key-v1-..., self-checking)"),
    "suggest-roles": ("roles", "suggest a role for every column of a file or table"),
    "publish": ("roles", "freeze the declared policy's release of a table into a table of its own"),
    "sql": ("database", "run SQL on a database file with the functions installed"),
    "install": ("database", "install or upgrade the functions in a database file and apply its policies"),
    "dp-budget": ("dp", "set the total privacy budget of the people of a table"),
    "dp-publish": ("dp", "write DP aggregates of a table into a table, debiting its budget"),
    "copy": ("copy", "write a masked copy of a whole database: every table with its declarations applied"),
}


def help_of(command: str) -> str:
    """The one-line help of a subcommand, for its module's add_parser."""
    return SUBCOMMANDS[command][1]
