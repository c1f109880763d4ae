"""The ``duckdb-anon`` command: the parser, and the exit codes (the subcommands are in ``duckdb_anon.commands``).

Exit codes: 0 done; 1 the work failed (or an optional dependency is missing); 2 an argument is wrong (the
message names it; argparse uses 2 for its own checks too); 3 `report` found that the release fails a gate
(the report is still written); 128 + the signal number when interrupted (130 for Ctrl-C, 143 for
SIGTERM), leaving no partial output behind.
Never a traceback: a DuckDB error that is not about an argument is printed on one line.
"""
from __future__ import annotations

import argparse
import signal
import sys

import duckdb

from duckdb_anon import __version__
from duckdb_anon.commands import database, dp, mondrian, report, roles
from duckdb_anon.commands.errors import EXIT_BAD_ARGUMENT, EXIT_FAILED, BadArgument, first_line



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duckdb-anon", description="Anonymize data inside DuckDB.",
                                     epilog="exit codes: 0 done, 1 failed, 2 bad argument, 3 a report gate failed")
    parser.add_argument("--version", action="version",
                        version=f"duckdb-anon {__version__} (DuckDB {duckdb.__version__})")
    sub = parser.add_subparsers(dest="command", required=True)
    mondrian.add_commands(sub)
    report.add_commands(sub)
    roles.add_commands(sub)
    database.add_commands(sub)
    dp.add_commands(sub)
    from duckdb_anon.commands import copy as copy_command  # imports its work inside the command
    copy_command.add_commands(sub)
    return parser


class _Signals:
    """Ctrl-C and SIGTERM interrupt the command: DuckDB stops the query (it reports that as an error of its
    own), the commands' clean-up runs (temporary files), and the exit code is 128 + the signal number."""

    def __init__(self):
        self.received: int | None = None
        self.previous = {}

    def __enter__(self):
        for number in (signal.SIGINT, signal.SIGTERM):
            self.previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, number, frame):
        self.received = number
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with _Signals() as signals:
        try:
            return args.func(args)
        except (Exception, KeyboardInterrupt) as exc:
            if signals.received is None and not isinstance(exc, KeyboardInterrupt):
                return _failed(args.command, exc)
            print(f"duckdb-anon {args.command}: interrupted; no output was written", file=sys.stderr)
            return 128 + (signals.received or signal.SIGINT)


def _failed(command: str, exc: Exception) -> int:
    """Print the error on one line (never a traceback) and return the exit code."""
    if isinstance(exc, BadArgument):
        code, text = EXIT_BAD_ARGUMENT, str(exc)
    elif isinstance(exc, duckdb.Error):
        code, text = EXIT_FAILED, f"{type(exc).__name__}: {first_line(exc)}"
    else:  # MissingExtra and the rest
        code, text = EXIT_FAILED, str(exc)
    print(f"duckdb-anon {command}: {text}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
