"""Release gates: thresholds a release must meet, checked by `duckdb-anon report` (exit code 3 when one fails).

Each gate reads one number the report already measured. A gate whose number could not be measured (no
rows, no people in the aux table) fails: a build that cannot show a release is safe does not publish it.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from duckdb_anon.commands.errors import BadArgument
from duckdb_anon.report import Measures, non_qi_text

# the gates on Scoreboard-RH: option, the argparse attribute, the measure as the summary names it, its column
SCOREBOARD_GATES = (("--max-top1", "max_top1", "Scoreboard-RH top-1 share", "top1_share"),
                    ("--max-top5", "max_top5", "Scoreboard-RH top-5 share", "top5_share"),
                    ("--max-unique-records", "max_unique_records", "unique record share", "unique_record_share"))


@dataclass(frozen=True)
class Gate:
    option: str  # the command-line option that set it, e.g. '--require-k'
    limit: float
    measure: str  # what is compared, as the summary names it
    measured: float | None
    at_least: bool  # True: the measure must reach the limit; False: it must not exceed it

    @property
    def passed(self) -> bool:
        if self.measured is None:
            return False
        return self.measured >= self.limit if self.at_least else self.measured <= self.limit

    def row(self) -> tuple[str, str, str]:
        measured = "not measurable" if self.measured is None else f"{self.measure} = {self.measured:g}"
        return f"{self.option} {self.limit:g}", measured, "passed" if self.passed else "FAILED"


def check_gate_arguments(args: argparse.Namespace) -> None:
    """The thresholds are in range and have what they measure, before any work."""
    if args.require_k is not None and args.require_k < 1:
        raise BadArgument("--require-k", f"must be at least 1, got {args.require_k}")
    if args.require_l is not None:
        if args.sensitive is None:
            raise BadArgument("--require-l", "needs --sensitive COL: l counts the distinct values of a sensitive column")
        if args.require_l < 1:
            raise BadArgument("--require-l", f"must be at least 1, got {args.require_l}")
    shares = [("--max-prosecutor-risk", args.max_prosecutor_risk), ("--max-linkage", args.max_linkage),
              *((option, getattr(args, name)) for option, name, _, _ in SCOREBOARD_GATES)]
    for option, value in shares:
        if value is not None and not 0 <= value <= 1:
            raise BadArgument(option, f"must lie in [0, 1], got {value:g}")
    if args.max_linkage is not None and args.aux is None:
        raise BadArgument("--max-linkage", "needs --aux AUX --id ID_COLUMN: the people the adversary knows")
    for option, name, _, _ in SCOREBOARD_GATES:
        if getattr(args, name) is not None and args.scoreboard_aux is None:
            raise BadArgument(option, "needs --scoreboard-aux AUX: what the adversary knows of people's rows "
                                      "(target_id, item, value, ts)")


def evaluate(args: argparse.Namespace, m: Measures) -> list[Gate]:
    """The gates the user asked for, in a fixed order, with what the report measured."""
    gates = []
    if args.require_k is not None:
        gates.append(Gate("--require-k", args.require_k, "achieved k", m.release["achieved_k"], True))
    if args.require_l is not None:
        gates.append(Gate("--require-l", args.require_l, "distinct l", m.privacy["distinct_l"], True))
    if args.max_prosecutor_risk is not None:
        gates.append(Gate("--max-prosecutor-risk", args.max_prosecutor_risk, "max prosecutor risk",
                          m.risk["prosecutor_max"], False))
    if args.max_linkage is not None:
        gates.append(Gate("--max-linkage", args.max_linkage, "linkage reidentified", m.linkage["reidentified"], False))
    for option, name, measure, column in SCOREBOARD_GATES:
        if getattr(args, name) is not None:
            gates.append(Gate(option, getattr(args, name), measure, m.scoreboard[column], False))
    return gates


def gates_text(gates: list[Gate], m: Measures) -> str:
    """The printed gate lines, '  gate  measured  result', then the columns released besides the QIs: no gate
    reads them, so the reader sees an identifier that passed through."""
    rows = [g.row() for g in gates]
    width = max(len(r[0]) for r in rows)
    return "\n".join(["release gates:", *(f"  {gate:<{width}}  {result}: {measured}" for gate, measured, result in rows),
                      f"  non-QI columns released: {non_qi_text(m)}"])
