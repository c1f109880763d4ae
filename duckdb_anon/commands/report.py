"""`duckdb-anon report`: the HTML report on a release (duckdb_anon.report) and its release gates (gates)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import duckdb

from duckdb_anon import connect
from duckdb_anon import report as anon_report
from duckdb_anon.commands import gates as release_gates
from duckdb_anon.commands import help_of
from duckdb_anon.commands.errors import EXIT_GATE_FAILED, BadArgument, argument_error
from duckdb_anon.commands.files import (attach_database, checked_output, column_list, columns_of, data_file,
                                        existing_file, file_relation, hierarchy_files, load_hierarchies, match_columns,
                                        written_atomically)
from duckdb_anon.commands.progress import Progress

# the macros' arguments -> the options that set them
OPTIONS = {"release_table": "RELEASE", "table_name": "RELEASE", "original_table": "--original",
           "aux_table": "--aux", "qis": "--qi", "id_column": "--id", "hierarchies": "--hierarchy",
           "sensitive": "--sensitive"}
# deanonymize_evaluate's arguments -> the options that set them
SCOREBOARD_OPTIONS = {"published_table": "RELEASE", "aux_table": "--scoreboard-aux", "truth_table": "--scoreboard-truth"}


def check_arguments(args: argparse.Namespace) -> None:
    """What can be checked before opening anything: options that go together, numbers in range."""
    if args.original is not None and args.id is None:
        raise BadArgument("--id", "--original and --id go together: NCP matches released and original rows on the id")
    if args.aux is not None and args.id is None:
        raise BadArgument("--id", "--aux needs --id: the linkage audit checks whether a person's own row, by id, "
                                  "is among the rows consistent with them")
    if args.scoreboard_truth is not None and args.scoreboard_aux is None:
        raise BadArgument("--scoreboard-truth", "goes with --scoreboard-aux: it says which record each target is")
    if args.id is not None and args.original is None and args.aux is None:
        raise BadArgument("--id", "is used with --original (NCP) or --aux (linkage)")
    if args.perturbed:
        if args.original is None:
            raise BadArgument("--perturbed", "needs --original ORIGINAL --id ID_COLUMN: the audits compare with the original")
        gate_given = [g for g, v in (("--require-k", args.require_k), ("--require-l", args.require_l),
                                     ("--max-prosecutor-risk", args.max_prosecutor_risk), ("--max-linkage", args.max_linkage),
                                     *((o, getattr(args, n)) for o, n, _, _ in release_gates.SCOREBOARD_GATES))
                      if v is not None]
        if gate_given:
            raise BadArgument(gate_given[0], "is a gate on generalized releases; it does not apply with --perturbed")
        if args.scoreboard_aux is not None:
            raise BadArgument("--scoreboard-aux", "attacks generalized releases of rows (record_id, item, value, ts); "
                                                  "it does not apply with --perturbed")
    if not 0 < args.threshold <= 1:
        raise BadArgument("--threshold", f"must be in (0, 1], got {args.threshold}")
    release_gates.check_gate_arguments(args)


def _inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files the run reads: -o may be none of them."""
    if args.db is not None:
        files = [("--db", existing_file("--db", args.db))]
    else:
        files = [("RELEASE", data_file("RELEASE", args.release))]
        files += [(option, data_file(option, value)) for option, value in
                  (("--original", args.original), ("--aux", args.aux), ("--scoreboard-aux", args.scoreboard_aux),
                   ("--scoreboard-truth", args.scoreboard_truth)) if value is not None]
    return files + [("--hierarchy", path) for path in hierarchy_files(args.hierarchy)]


def _request(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> anon_report.ReportRequest:
    """Open the release and the other tables, check every name the user gave, and spell the names as the
    tables do (DuckDB matches names case-insensitively, and so do we)."""
    if args.db is not None:
        attach_database(con, args.db)
        release, original, aux = args.release, args.original, args.aux
        scoreboard_aux, scoreboard_truth = args.scoreboard_aux, args.scoreboard_truth
    else:
        release = file_relation(con, "RELEASE", args.release, "anon_release")
        original = None if args.original is None else file_relation(con, "--original", args.original, "anon_original")
        aux = None if args.aux is None else file_relation(con, "--aux", args.aux, "anon_aux")
        scoreboard_aux, scoreboard_truth = (
            None if value is None else file_relation(con, option, value, name)
            for option, value, name in (("--scoreboard-aux", args.scoreboard_aux, "anon_scoreboard_aux"),
                                        ("--scoreboard-truth", args.scoreboard_truth, "anon_scoreboard_truth")))
    columns = columns_of(con, release, "RELEASE", args.release, args.db)
    where = f"RELEASE {args.release}"
    qis = match_columns(columns, column_list("--qi", args.qi), "--qi", where)
    sensitive = match_columns(columns, [args.sensitive], "--sensitive", where)[0] if args.sensitive else None
    id_column = match_columns(columns, [args.id], "--id", where)[0] if args.id else None
    for option, relation, label in (("--original", original, args.original), ("--aux", aux, args.aux)):
        if relation is not None:
            other = columns_of(con, relation, option, label, args.db)
            match_columns(other, [args.id], "--id", f"{option} {label}")
            match_columns(other, qis, "--qi", f"{option} {label}")
    for option, relation, label in (("--scoreboard-aux", scoreboard_aux, args.scoreboard_aux),
                                    ("--scoreboard-truth", scoreboard_truth, args.scoreboard_truth)):
        if relation is not None:  # it exists; deanonymize_evaluate checks its columns
            columns_of(con, relation, option, label, args.db)
    hierarchies, _ = load_hierarchies(con, args.hierarchy, qis)
    return anon_report.ReportRequest(
        release=release, qis=qis, label=args.release, sensitive=sensitive, original=original, id_column=id_column,
        original_label=args.original or "", database=args.db, threshold=args.threshold, aux=aux,
        aux_label=args.aux or "", hierarchies=hierarchies, scoreboard_aux=scoreboard_aux,
        scoreboard_truth=scoreboard_truth, scoreboard_label=args.scoreboard_aux or "")


def _json(request: anon_report.ReportRequest, measures, gates: list, target: Path | None) -> str:
    """The --json document: every measure as the SQL macros returned it, the gates, the verdict."""
    document = {"release": request.label, "qis": list(request.qis), "output": None if target is None else str(target)}
    if isinstance(measures, anon_report.PerturbedMeasures):
        document["perturbed"] = {name: value for name, value in anon_report.perturbed_summary(measures)}
    else:
        document["measures"] = {name: getattr(measures, name) for name in
                                ("release", "risk", "privacy", "ncp", "linkage", "scoreboard", "non_qi_columns")}
    document["gates"] = [{"gate": g.option, "limit": g.limit, "measure": g.measure, "measured": g.measured,
                          "passed": g.passed} for g in gates]
    document["passed"] = all(g.passed for g in gates)
    return json.dumps(document, indent=2, default=str)


def report(args: argparse.Namespace) -> int:
    check_arguments(args)
    target = None
    if args.output is not None:
        target, _ = checked_output("-o", args.output, {".html": "html", ".htm": "html"}, force=args.force,
                                   inputs=_inputs(args))
        anon_report.require_matplotlib()
    elif args.force:
        raise BadArgument("--force", "replaces -o; without -o no file is written")
    con = connect()
    try:
        started = time.perf_counter()
        with Progress(con, "report", quiet=args.quiet) as progress:
            progress.step(f"reading {args.release}")
            request = _request(con, args)
            if args.perturbed:
                return _perturbed(con, args, request, target, progress, started)
            progress.step("measuring the release")
            try:
                measures = anon_report.gather(con, request)
            except duckdb.Error as exc:
                raise argument_error(exc, OPTIONS) or exc
            if request.scoreboard_aux is not None:
                progress.step("attacking the release (Scoreboard-RH)")
                try:
                    measures.scoreboard = anon_report.gather_scoreboard(con, request)
                except duckdb.Error as exc:
                    raise argument_error(exc, SCOREBOARD_OPTIONS) or exc
            gates = release_gates.evaluate(args, measures)
            if target is not None:
                progress.step(f"writing {target}")
                with written_atomically(target, "-o", force=args.force) as temporary:
                    anon_report.write_html(temporary, request, measures, anon_report.render_plots(request, measures),
                                           [g.row() for g in gates])
        if args.json:
            print(_json(request, measures, gates, target))
        else:
            print(anon_report.summary_text(request, measures))
            if gates:
                print(release_gates.gates_text(gates, measures))
            if target is not None:
                print(f"wrote {target} in {time.perf_counter() - started:.2f} s")
        failed = [g for g in gates if not g.passed]
        if failed:
            listed = "; ".join(f"{gate} ({measured})" for gate, measured, _ in (g.row() for g in failed))
            print(f"duckdb-anon report: the release fails {len(failed)} of {len(gates)} gate(s): {listed}",
                  file=sys.stderr)
            return EXIT_GATE_FAILED
        return 0
    finally:
        con.close()


def _perturbed(con: duckdb.DuckDBPyConnection, args: argparse.Namespace, request: anon_report.ReportRequest,
               target: Path | None, progress: Progress, started: float) -> int:
    """--perturbed: distortion and the re-linkage audits of a perturbed release, instead of class measures."""
    progress.step("auditing the perturbed release")
    try:
        measures = anon_report.gather_perturbed(con, request)
    except duckdb.Error as exc:
        raise argument_error(exc, OPTIONS) or exc
    if target is not None:
        with written_atomically(target, "-o", force=args.force) as temporary:
            anon_report.write_perturbed_html(temporary, request, measures)
    if args.json:
        print(_json(request, measures, [], target))
        return 0
    print(anon_report.perturbed_summary_text(request, measures))
    if target is not None:
        print(f"wrote {target} in {time.perf_counter() - started:.2f} s")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("report", help=help_of("report"),
                       description="Write an HTML report on RELEASE and print its summary. With gates "
                                   "(--require-k, --require-l, --max-prosecutor-risk, --max-linkage, --max-top1, "
                                   "--max-top5, --max-unique-records) the command "
                                   "exits with code 3 when the release fails one, after writing the report.")
    p.add_argument("release", metavar="RELEASE", help="the release: a .csv or .parquet file, or with --db a table")
    p.add_argument("--qi", required=True, help="comma-separated quasi-identifier columns")
    p.add_argument("--sensitive", metavar="COL", help="sensitive column: l-diversity and t-closeness")
    p.add_argument("--original", metavar="ORIGINAL", help="the original data (file, or table with --db), for NCP")
    p.add_argument("--aux", metavar="AUX", help="people the adversary knows (file, or table with --db): exact QI "
                                                "values and the id, for the linkage audit (linkage_classes)")
    p.add_argument("--scoreboard-aux", metavar="AUX",
                   help="what an adversary knows of people's rows (file, or table with --db; columns target_id, item, "
                        "value, ts), for the Scoreboard-RH attack on a release of rows (record_id, item, value, ts)")
    p.add_argument("--scoreboard-truth", metavar="TRUTH",
                   help="which record each target is (target_id, record_id; NULL: absent); default: the record "
                        "whose record_id is the target_id, if the release has one")
    p.add_argument("--id", metavar="ID_COLUMN", help="the row id present in RELEASE and in ORIGINAL / AUX")
    p.add_argument("--hierarchy", action="append", metavar="QI=FILE",
                   help="the hierarchy QI was generalized with, for NCP and the linkage audit (repeatable)")
    p.add_argument("--db", metavar="FILE.duckdb",
                   help="read RELEASE, ORIGINAL, AUX and the --scoreboard-* tables as tables of this DuckDB file")
    p.add_argument("--threshold", type=float, default=0.2,
                   help="prosecutor risk above which a record counts as at risk (default 0.2)")
    p.add_argument("--perturbed", action="store_true",
                   help="a perturbed release (random_walk(), noise): distortion and re-linkage by nearest values, "
                        "rank and segment pattern, against --original (numeric --qi columns)")
    gates = p.add_argument_group("release gates (exit code 3 when one fails)")
    gates.add_argument("--require-k", type=int, metavar="N", help="achieved k must be at least N")
    gates.add_argument("--require-l", type=int, metavar="N", help="distinct l of --sensitive must be at least N")
    gates.add_argument("--max-prosecutor-risk", type=float, metavar="P",
                       help="the largest prosecutor risk (1 / smallest class) must not exceed P")
    gates.add_argument("--max-linkage", type=float, metavar="R",
                       help="linkage_classes' reidentified share (with --aux, --id) must not exceed R")
    for option, _, measure, _ in release_gates.SCOREBOARD_GATES:
        gates.add_argument(option, type=float, metavar="R",
                           help=f"the {measure} (deanonymize_evaluate, with --scoreboard-aux) must not exceed R")
    p.add_argument("-o", "--output", help="the .html file to write; without it, the measures and gates only "
                                            "(no file, no matplotlib needed)")
    p.add_argument("--json", action="store_true", help="print the measures and gates as one JSON object (for pipelines)")
    p.add_argument("--force", action="store_true", help="replace -o if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=report)
