"""duckdb_anon/commands/gates.py in-process: the gates the report options ask for, evaluated on real measures
of a tiny release (class sizes recomputed in pandas), a gate that cannot measure fails naming why, the
thresholds checked before any work, the printed lines. tests/commands/test_report.py runs the command
end to end (exit code 3, the page's banner)."""
import pandas as pd
import pytest

from duckdb_anon import report
from duckdb_anon.cli import build_parser
from duckdb_anon.commands.errors import BadArgument
from duckdb_anon.commands.gates import Gate, check_gate_arguments, evaluate, gates_text, linkage_unmeasured

PARSER = build_parser(("report",))


def options(*extra) -> object:
    """The report command's arguments, as its own parser reads them."""
    return PARSER.parse_args(["report", "release.parquet", "--qi", "age,zip", *map(str, extra)])


@pytest.fixture(scope="module")
def measured(module_con):
    """A release of 20 rows in classes of 3 to 5 (age, zip), an id, a sensitive column; aux tables of the
    people with their raw ids (matched) and with ids the release lacks (nobody matched)."""
    con = module_con
    sizes = [3, 4, 4, 5, 4]
    rows = [(f"{20 + 5 * c}-{24 + 5 * c}", f"z{c % 2}", f"id{c}_{n}", ["flu", "cold"][n % 2 if c else 0])
            for c, size in enumerate(sizes) for n in range(size)]
    frame = pd.DataFrame(rows, columns=["age", "zip", "rid", "diagnosis"])  # noqa: F841
    con.execute("CREATE TABLE gate_release AS SELECT * FROM frame")
    con.execute("CREATE TABLE gate_aux AS SELECT rid, 20 + 5 * (hash(rid) % 5) AS age, zip FROM gate_release LIMIT 6")
    con.execute("CREATE TABLE gate_aux_other AS SELECT 'other_' || rid AS rid, age, zip FROM gate_aux")
    request = report.ReportRequest("gate_release", ["age", "zip"], label="release", sensitive="diagnosis")
    measures = report.gather(con, request)
    classes = frame.groupby(["age", "zip"])
    return con, measures, classes.size().min(), classes["diagnosis"].nunique().min()


def test_gates_compare_with_what_the_release_measures(measured):
    """k and l as pandas counts them, at the limit and one beyond; a risk cap at and below 1/k."""
    _, measures, k, l = measured
    assert (k, l) == (3, 1)
    gates = evaluate(options("--require-k", k, "--require-l", l, "--max-prosecutor-risk", 1 / k, "--sensitive", "diagnosis"),
                     measures)
    assert [(g.option, g.measured, g.passed) for g in gates] == [
        ("--require-k", k, True), ("--require-l", l, True), ("--max-prosecutor-risk", pytest.approx(1 / k), True)]
    beyond = evaluate(options("--require-k", k + 1, "--require-l", l + 1, "--max-prosecutor-risk", 0.9 / k,
                              "--sensitive", "diagnosis"), measures)
    assert [g.passed for g in beyond] == [False, False, False]
    assert [g.row()[2] for g in beyond] == ["FAILED"] * 3
    assert beyond[0].row() == (f"--require-k {k + 1}", f"achieved k = {k}", "FAILED")
    assert evaluate(options(), measures) == []  # no option, no gate


@pytest.mark.parametrize("value", [None, float("nan")])
def test_a_gate_on_a_missing_or_nan_number_fails(value):
    for at_least in (True, False):  # NaN compares false both ways; neither direction may let it through
        gate = Gate("--require-k", 1, "achieved k", value, at_least)
        assert not gate.passed and gate.row()[1].startswith("not measurable") and gate.row()[2] == "FAILED"


def test_a_linkage_gate_that_matched_nobody_fails_naming_why(measured):
    """The aux people found in the release: measured. Their ids absent from it (pseudonyms, say): a share
    of 0 that is no evidence, so the gate fails however low its limit is met; an empty aux table likewise."""
    con, measures, _, _ = measured
    linkage = "SELECT * FROM linkage_classes('gate_release', ?, ['age', 'zip'], 'rid')"

    def linkage_of(aux):
        result = con.execute(linkage, [aux])
        return dict(zip([d[0] for d in result.description], result.fetchone()))

    matched, unmatched = linkage_of("gate_aux"), linkage_of("gate_aux_other")
    assert matched["own_class_found"] > 0 and linkage_unmeasured(matched) is None
    assert unmatched["reidentified"] in (0, None) and "no person of --aux (6) was matched" in linkage_unmeasured(unmatched)
    con.execute("CREATE OR REPLACE TABLE gate_aux_empty AS SELECT * FROM gate_aux LIMIT 0")
    assert linkage_unmeasured(linkage_of("gate_aux_empty")) == "the --aux table holds no person"
    args = options("--max-linkage", 1, "--aux", "aux.parquet", "--id", "rid")
    for linkage_measures, passes in ((matched, True), (unmatched, False)):
        measures.linkage = linkage_measures
        gate, = evaluate(args, measures)
        assert gate.passed is passes
        assert gate.row()[1].startswith("not measurable: no person") is not passes
    measures.linkage = None


def test_scoreboard_gates_need_a_target_in_the_release_but_unique_records_do_not(measured):
    _, measures, _, _ = measured
    measures.scoreboard = {"top1_share": 0.0, "top5_share": 0.0, "unique_record_share": 0.2, "present_targets": 0}
    args = options("--max-top1", 0.5, "--max-unique-records", 0.5, "--scoreboard-aux", "aux.parquet")
    top1, unique = evaluate(args, measures)
    assert not top1.passed and top1.why_not_measured == "no target of --scoreboard-aux is in RELEASE"
    assert unique.passed and unique.why_not_measured is None
    measures.scoreboard = None


@pytest.mark.parametrize("extra, option", [(["--require-k", 0], "--require-k"), (["--require-l", 2], "--require-l"),
                                           (["--max-prosecutor-risk", 1.5], "--max-prosecutor-risk"),
                                           (["--max-linkage", 0.1], "--max-linkage"), (["--max-top5", 0.1], "--max-top5"),
                                           (["--max-linkage", -0.1, "--aux", "a", "--id", "i"], "--max-linkage")])
def test_bad_thresholds_are_refused_before_any_work_naming_the_option(extra, option):
    with pytest.raises(BadArgument) as err:
        check_gate_arguments(options(*extra))
    assert err.value.argument == option and str(err.value).startswith(option + ": ")


def test_the_printed_lines_name_each_gate_and_the_non_qi_columns(measured):
    _, measures, k, _ = measured
    text = gates_text(evaluate(options("--require-k", k, "--max-prosecutor-risk", 0.01), measures), measures)
    width = len("--max-prosecutor-risk 0.01")  # the gates' column is as wide as the longest gate
    assert text.splitlines() == ["release gates:",
                                 f"  {'--require-k ' + str(k):<{width}}  passed: achieved k = {k}",
                                 f"  --max-prosecutor-risk 0.01  FAILED: max prosecutor risk = {1 / k:g}",
                                 "  non-QI columns released: rid, diagnosis"]
