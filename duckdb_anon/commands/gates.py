"""Release gates: thresholds a release must meet, checked by `duckdb-anon report` (exit code 3 when one fails).

Each gate reads one number the report already measured. A gate whose number could not be measured fails,
naming why: NULL or NaN, no people in the aux table, nobody of the aux table matched to their own released
row (the ids pseudonymized in the release but raw in the aux table give a linkage share of 0, which is no
evidence of safety), no target of the Scoreboard aux table in the release. A build that cannot show a release is safe does not publish it.
"""
from __future__ import annotations

import argparse
import math
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
    unmeasured: str | None = None  # why the number, though present, measures nothing (then the gate fails)

    @property
    def why_not_measured(self) -> str | None:
        if self.unmeasured is not None:
            return self.unmeasured
        if self.measured is None or (isinstance(self.measured, float) and math.isnan(self.measured)):
            return f"no {self.measure} could be computed"
        return None

    @property
    def passed(self) -> bool:
        if self.why_not_measured is not None:
            return False
        return self.measured >= self.limit if self.at_least else self.measured <= self.limit

    def row(self) -> tuple[str, str, str]:
        why = self.why_not_measured
        measured = f"not measurable: {why}" if why is not None else f"{self.measure} = {self.measured:g}"
        return f"{self.option} {self.limit:g}", measured, "passed" if self.passed else "FAILED"


def linkage_unmeasured(linkage: dict) -> str | None:
    """Why the linkage audit measured nothing, or None. Its reidentified share averages over the people of
    the aux table, counting 0 for a person not matched to their own row: when nobody is, the share is 0
    whatever the release, as when the release's ids are pseudonyms and the aux table's are raw."""
    people, found = linkage["people"], linkage["own_class_found"]
    if not people:
        return "the --aux table holds no person"
    if found is None or math.isnan(found) or found == 0:
        return (f"no person of --aux ({people:,}) was matched to their own row of RELEASE by --id (own class found 0): "
                "the ids differ between the tables (pseudonymized in the release, raw in --aux?) or no label covers "
                "their values, so linkage was not measured")
    return None


def scoreboard_unmeasured(scoreboard: dict) -> str | None:
    """Why Scoreboard-RH measured nothing about its targets, or None: no target present in the release."""
    if not scoreboard["present_targets"]:
        return "no target of --scoreboard-aux is in RELEASE"
    return None


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
        gates.append(Gate("--max-linkage", args.max_linkage, "linkage reidentified", m.linkage["reidentified"], False,
                          linkage_unmeasured(m.linkage)))
    for option, name, measure, column in SCOREBOARD_GATES:
        if getattr(args, name) is not None:  # unique records are the release's own: they need no target
            why = None if column == "unique_record_share" else scoreboard_unmeasured(m.scoreboard)
            gates.append(Gate(option, getattr(args, name), measure, m.scoreboard[column], False, why))
    return gates


def gates_text(gates: list[Gate], m: Measures) -> str:
    """The printed gate lines, '  gate  measured  result', then the columns released besides the QIs: no gate
    reads them, so the reader sees an identifier that passed through."""
    rows = [g.row() for g in gates]
    width = max(len(r[0]) for r in rows)
    return "\n".join(["release gates:", *(f"  {gate:<{width}}  {result}: {measured}" for gate, measured, result in rows),
                      f"  non-QI columns released: {non_qi_text(m)}"])
