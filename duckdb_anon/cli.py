"""The ``duckdb-anon`` command: the parser, and the exit codes (the subcommands are in ``duckdb_anon.commands``).

Exit codes: 0 done; 1 the work failed (or an optional dependency is missing); 2 an argument is wrong (the
message names it; argparse uses 2 for its own checks too); 3 `report` found that the release fails a gate
(the report is still written); 4 the database file is locked by another process (retry later); 128 + the signal number when interrupted (130 for Ctrl-C, 143 for
SIGTERM), leaving no partial output behind.
Never a traceback: a DuckDB error that is not about an argument is printed on one line.
"""
from __future__ import annotations

import argparse
import signal
import sys

from importlib import import_module

from duckdb_anon import __version__
from duckdb_anon.commands import SUBCOMMANDS
from duckdb_anon.commands.errors import (EXIT_BAD_ARGUMENT, EXIT_FAILED, EXIT_LOCKED, BadArgument, DatabaseLocked,
                                         first_line)



def build_parser(only: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The parser. Given `only` (subcommand names), only their modules are imported (a module imports duckdb
    and the rest, about a second): the other subcommands are listed by name and help alone, which is all
    --help and --version need. Without it, every subcommand is complete."""
    parser = argparse.ArgumentParser(prog="duckdb-anon", description="Anonymize data inside DuckDB.",
                                     epilog="exit codes: 0 done, 1 failed, 2 bad argument, 3 a report gate failed, "
                                            "4 the database is locked by another process, 130 interrupted")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the versions of duckdb-anon and DuckDB and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = {module for name, (module, _) in SUBCOMMANDS.items() if only is None or name in only}
    for module in dict.fromkeys(module for module, _ in SUBCOMMANDS.values()):
        if module in wanted:
            import_module(f"duckdb_anon.commands.{module}").add_commands(sub)
    for name, (module, text) in SUBCOMMANDS.items():
        if module not in wanted:
            sub.add_parser(name, help=text)
    return parser


class _Version(argparse.Action):
    """--version. DuckDB's version is read from the name of its installed package's metadata folder
    (duckdb-2.0.1.dist-info): importing duckdb to ask takes about a second, importlib.metadata a third of one."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"duckdb-anon {__version__} (DuckDB {_duckdb_version()})")
        parser.exit()


def _duckdb_version() -> str:
    from importlib.util import find_spec
    from pathlib import Path
    spec = find_spec("duckdb")
    folders = sorted(Path(spec.origin).parent.parent.glob("duckdb-*.dist-info")) if spec and spec.origin else []
    if len(folders) == 1:
        return folders[0].name.removeprefix("duckdb-").removesuffix(".dist-info")
    from importlib.metadata import version
    return version("duckdb")


def _command_of(argv: list[str]) -> tuple[str, ...]:
    """The subcommand named in argv (its first word that is not an option), if it is one."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return (first,) if first in SUBCOMMANDS else ()


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
    argv = sys.argv[1:] if argv is None else argv
    try:  # importing the subcommand's module takes a moment: Ctrl-C then is an interruption too, not a traceback
        args = build_parser(_command_of(argv)).parse_args(argv)
    except KeyboardInterrupt:
        print("duckdb-anon: interrupted; nothing was done", file=sys.stderr)
        return 128 + signal.SIGINT
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
    elif isinstance(exc, DatabaseLocked):
        code, text = EXIT_LOCKED, str(exc)
    elif type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb"):  # not duckdb_anon's own errors
        code, text = EXIT_FAILED, f"{type(exc).__name__}: {first_line(exc)}"
    else:  # MissingExtra and the rest
        code, text = EXIT_FAILED, str(exc)
    print(f"duckdb-anon {command}: {text}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
