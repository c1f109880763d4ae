"""What a subcommand raises, and the exit code ``duckdb_anon.cli.main`` turns it into."""
from __future__ import annotations

import re

ARGUMENT_ERROR = re.compile(r"(\w+)\(\): argument '([^']+)'")

EXIT_FAILED = 1  # the work itself failed (or an optional dependency is missing)
EXIT_BAD_ARGUMENT = 2  # the user's input, as argparse does for its own checks
EXIT_GATE_FAILED = 3  # `report`: the release fails one of the gates (the report is still written)
EXIT_LOCKED = 4  # the database file is open in another process: nothing is wrong with the command; retry later


class BadArgument(ValueError):
    """Input the user got wrong. The CLI prints it, naming `argument`, and exits with code 2."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"{argument}: {message}")
        self.argument = argument


class DatabaseLocked(RuntimeError):
    """The database file is locked by another process (DuckDB allows one writer). The CLI exits with code 4,
    so that a script can tell "try again later" from a wrong argument (2)."""


def open_error(argument: str, path: object, exc: Exception) -> Exception:
    """What opening `path` (given as `argument`) failed with: DatabaseLocked when another process holds the
    file's lock, else a BadArgument naming the argument."""
    text = first_line(exc)
    if "Could not set lock on file" in text or "Conflicting lock" in text:
        return DatabaseLocked(f"{argument}: {path} is locked by another process (DuckDB lets one process write a "
                              f"database file at a time); close it there or retry later ({text.split(' See also')[0]})")
    return BadArgument(argument, f"cannot open {path} as a DuckDB database: {text}")


class MissingExtra(RuntimeError):
    """An optional dependency (matplotlib, for `report`) is not installed."""


def first_line(exc: BaseException) -> str:
    """DuckDB's message without its 'LINE 1: ...' context and its class prefix ('Binder Error: ')."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("Invalid Input Error: ", "Binder Error: ", "Catalog Error: ", "Parser Error: ",
                   "Conversion Error: ", "IO Error: "):
        text = text.removeprefix(prefix)
    return text


def argument_error(exc: Exception, options: dict[str, str]) -> BadArgument | None:
    """A macro's error that names one of its arguments (``fn(): argument 'x' ...``, the project's form), as a
    BadArgument naming the command-line option that set x; None for any other error. `options` maps
    argument -> option (an argument not in it is named as it is)."""
    text = first_line(exc)
    found = ARGUMENT_ERROR.search(text)
    if found is None:
        return None
    return BadArgument(options.get(found.group(2), found.group(2)), text[found.start():])


def publish_error(exc: Exception, options: dict[str, str], declaration_error: type) -> Exception:
    """What a publishing command reports for `exc`: an error naming an argument as the option that set it
    (see argument_error), a refused declaration as a bad TABLE, "pass replace=True" as "add --replace";
    anything else as it is."""
    bad = argument_error(exc, options)
    if bad is None and isinstance(exc, declaration_error):
        bad = BadArgument("TABLE", first_line(exc))
    if bad is not None and "replace=True" in str(bad):
        bad = BadArgument(bad.argument, str(bad).split(": ", 1)[1].replace("pass replace=True", "add --replace"))
    return bad or exc
