"""Nothing lost, nothing silent: the CLI never overwrites its input or an existing file without --force,
writes through a temporary file renamed into place (a failed or interrupted run leaves nothing), and every
bad argument exits 2 with a message naming it, never a traceback."""
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from duckdb_anon.cli import main
from duckdb_anon.commands.errors import BadArgument
from duckdb_anon.commands.files import written_atomically


def run(*args):
    return subprocess.run([sys.executable, "-m", "duckdb_anon.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def folder(tmp_path):
    """A small input with a sensitive column and a categorical QI, and two hierarchy files."""
    duckdb.connect().execute(
        "COPY (SELECT range AS id, range % 50 AS age, 'z' || (range % 7) AS zip, ['a', 'b', 'c'][range % 3 + 1] AS wc, "
        "range % 4 AS dis FROM range(500)) TO '" + str(tmp_path / "in.csv") + "'")
    (tmp_path / "wc.txt").write_text("a;ab;*\nb;ab;*\nc;cc;*\n")
    (tmp_path / "wc.csv").write_text("a;ab;*\nb;ab;*\nc;cc;*\n")  # a hierarchy file named like an output
    (tmp_path / "wc_partial.txt").write_text("a;ab;*\nb;ab;*\n")
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "unclosed.csv").write_text('age,zip\n1,2\n"3,4\n5,6\n')  # a quote that never closes
    deep = ["age,zip", *(f"{i},{i % 7}" for i in range(30000)), '"3,4', "5,6"]  # past DuckDB's sample
    (tmp_path / "unclosed_deep.csv").write_text("\n".join(deep) + "\n")
    return tmp_path


def snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


BAD_MONDRIAN = [
    (["--qi", "age,nope"], ["--qi", "'nope'", "its columns: id, age"]),
    (["--qi", " , "], ["--qi", "at least one"]),
    (["--qi", "age,AGE"], ["--qi", "twice"]),
    (["-k", "0"], ["-k", "at least 1"]),
    (["-o", "{f}/out.txt"], ["-o", ".csv or .parquet"]),
    (["-o", "{f}/missing/out.csv"], ["-o", "does not exist"]),
    (["-o", "{f}/in.csv", "--force"], ["-o", "INPUT", "never overwrites"]),
    (["-o", "{f}/./sub/../in.csv", "--force"], ["-o", "INPUT"]),
    (["-o", "{f}/wc.txt.csv", "--hierarchy", "wc={f}/wc.txt"], []),  # a distinct file: accepted
    (["--hierarchy", "wc"], ["--hierarchy", "QI=FILE"]),
    (["--hierarchy", "dis={f}/wc.txt"], ["--hierarchy", "'dis' is not one of the quasi-identifiers"]),
    (["--hierarchy", "wc={f}/nope.txt"], ["--hierarchy", "nope.txt", "does not exist"]),
    (["--hierarchy", "wc={f}/empty.txt"], ["--hierarchy", "no hierarchy"]),
    (["--hierarchy", "wc={f}/wc_partial.txt"], ["--hierarchy", "no leaf 'c'"]),
    (["--hierarchy", "wc={f}/wc.csv", "-o", "{f}/wc.csv", "--force"], ["-o", "--hierarchy", "never overwrites"]),
    (["--sensitive", "nope", "--l", "2"], ["--sensitive", "'nope'"]),
    (["--sensitive", "dis"], ["--sensitive", "without l or t"]),
    (["--l", "2"], ["--l", "needs a sensitive column"]),
    (["--sensitive", "dis", "--l", "0"], ["--l", "at least 1"]),
    (["--sensitive", "dis", "--t", "2"], ["--t", "(0, 1]"]),
    (["--max-suppression", "1.5"], ["--max-suppression", "[0, 1)"]),
    (["--max-suppression", "0.1", "--mode", "relaxed"], ["--max-suppression", "strict"]),
    (["--output-shape", "typed"], ["--output-shape", "parquet"]),
    (["--delimiter", ";;"], ["--delimiter", "one character"]),
    (["--keep", "age"], ["--keep", "'age', a QI"]),
    (["--keep", "nope"], ["--keep", "'nope'", "its columns: id, age"]),
    (["--keep", "dis,DIS"], ["--keep", "twice"]),
    (["--drop", "zip"], ["--drop", "'zip' is a QI"]),
    (["--drop", "nope"], ["--drop", "'nope'"]),
]


@pytest.mark.parametrize("extra, names", BAD_MONDRIAN)
def test_bad_mondrian_arguments_exit_2_naming_them(folder, capsys, extra, names):
    defaults = [(option, value) for option, value in (("--qi", "age,zip,wc"), ("-k", "5"), ("-o", "{f}/out.csv"),
                                                      ("--keep", "dis")) if option not in extra and not (option == "--keep" and "--drop" in extra)]
    args = [a.format(f=folder) for a in [*sum(defaults, ()), *extra]]
    before = snapshot(folder)
    code = main(["mondrian", str(folder / "in.csv"), *args])
    err = capsys.readouterr().err
    if not names:
        assert code == 0, err
        return
    assert code == 2, err
    assert all(name in err for name in names), err
    messages = [line for line in err.splitlines() if not line.endswith(" s)")]  # progress lines end '(N s)'
    assert len(messages) == 1 and " Error: " not in err, err  # one line, no raw DuckDB error or traceback
    assert snapshot(folder) == before  # no output, no temporary file, the inputs untouched


@pytest.mark.parametrize("source, names", [
    ("{f}/missing.csv", ["INPUT", "does not exist"]),
    ("{f}/wc.txt", ["INPUT", ".csv or .parquet"]),
    ("{f}/broken.parquet", ["INPUT", "cannot read"]),
    # strict CSV: read leniently, these were taken as the value '"3' (and the release written)
    ("{f}/unclosed.csv", ["INPUT", "unclosed.csv", "not well-formed CSV", "never closes"]),
    ("{f}/unclosed_deep.csv", ["INPUT", "unclosed_deep.csv", "line 30002", "unterminated quote"]),
])
def test_bad_input_files_exit_2(folder, capsys, source, names):
    before = snapshot(folder)
    code = main(["mondrian", source.format(f=folder), "--qi", "age", "-k", "2", "-o", str(folder / "out.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and all(name in err for name in names), err
    assert snapshot(folder) == before


def test_argparse_errors_exit_2_too(folder):
    out = run("mondrian", folder / "in.csv", "--qi", "age", "-k", "ten", "-o", folder / "out.csv")
    assert out.returncode == 2 and "-k" in out.stderr and "Traceback" not in out.stderr


def test_an_existing_output_is_kept_unless_force(folder, capsys):
    target = folder / "out.parquet"
    target.write_bytes(b"precious")
    code = main(["mondrian", str(folder / "in.csv"), "--qi", "age,zip", "-k", "10", "--drop", "id", "-o", str(target), "--quiet"])
    assert code == 2 and "--force" in capsys.readouterr().err and target.read_bytes() == b"precious"
    code = main(["mondrian", str(folder / "in.csv"), "--qi", "age,zip", "-k", "10", "--drop", "id", "-o", str(target), "--quiet", "--force"])
    assert code == 0
    smallest, rows = duckdb.connect().execute(
        "SELECT min(c), sum(c) FROM (SELECT count(*) c FROM read_parquet(?) GROUP BY age, zip)", [str(target)]).fetchall()[0]
    assert smallest >= 10 and rows == 500
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) == []


def test_the_input_is_never_overwritten_through_a_link(folder, capsys):
    link = folder / "link.csv"
    link.symlink_to(folder / "in.csv")
    before = (folder / "in.csv").read_bytes()
    code = main(["mondrian", str(link), "--qi", "age", "-k", "10", "-o", str(folder / "in.csv"), "--force"])
    assert code == 2 and "INPUT" in capsys.readouterr().err
    assert (folder / "in.csv").read_bytes() == before


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_leaves_neither_output_nor_temporary_file(tmp_path, sig, code):
    """Interrupted while DuckDB writes the temporary file: the run stops, and the folder is as before."""
    source = tmp_path / "big.parquet"
    duckdb.connect().execute(
        "COPY (SELECT range AS id, (range * 7919) % 90 AS age, 'z' || ((range * 104729) % 997) AS zip, "
        "(range * 31) % 13 AS edu FROM range(300000)) TO '" + str(source) + "'")
    before = snapshot(tmp_path)
    child = subprocess.Popen([sys.executable, "-m", "duckdb_anon.cli", "mondrian", str(source), "--qi", "age,zip,edu",
                              "-k", "10", "--drop", "id", "-o", str(tmp_path / "out.parquet")], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, "the run ended before writing"
        time.sleep(0.02)
    assert child.poll() is None, "the run ended before it could be interrupted"
    child.send_signal(sig)
    _, err = child.communicate(timeout=120)
    assert child.returncode == code and "interrupted" in err and "Traceback" not in err, err
    assert snapshot(tmp_path) == before


def test_written_atomically_removes_the_temporary_file_when_duckdb_fails(tmp_path):
    target = tmp_path / "out.parquet"
    con = duckdb.connect()
    with pytest.raises(duckdb.Error):
        with written_atomically(target, "-o", force=False) as temporary:
            con.sql("SELECT range AS x FROM range(1000)").write_parquet(str(temporary))
            assert temporary.is_file() and temporary.parent == tmp_path  # written beside the target
            con.execute("SELECT error('the run fails after writing')").fetchall()
    assert list(tmp_path.iterdir()) == []


def test_written_atomically_keeps_a_file_that_appeared_meanwhile(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(BadArgument, match="appeared"):
        with written_atomically(target, "-o", force=False) as temporary:
            duckdb.connect().sql("SELECT 1 AS x").write_csv(str(temporary))
            target.write_text("someone else's")
    assert target.read_text() == "someone else's" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with written_atomically(target, "-o", force=True) as temporary:
        duckdb.connect().sql("SELECT 1 AS x").write_csv(str(temporary))
    assert target.read_text().splitlines() == ["x", "1"] and [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def _ended_pid():
    """The id of a process that has just ended (ids are handed out in turn, so it is not reused at once)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_removes_the_temporary_files_of_killed_runs_only(folder, capsys):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead, alive = _ended_pid(), sleeper.pid
        stale = folder / f".out.csv.{dead}-0badc0de.tmp"
        kept = {f".out.csv.{alive}-0123abcd.tmp",  # a run still going
                f".out.csv.{dead}-0badc0de.tmp.bak", f".out.csv.{dead}-xyz.tmp", f"out.csv.{dead}-0badc0de.tmp",
                f".other.csv.{dead}-0badc0de.tmp"}  # not our name for this target
        stale.write_text("")
        for name in kept:
            (folder / name).write_text("")
        (folder / f".out.csv.{dead}-fedcba98.tmp").mkdir()  # a folder, even with our name, is not ours
        kept.add(f".out.csv.{dead}-fedcba98.tmp")
        assert main(["mondrian", str(folder / "in.csv"), "--qi", "age", "-k", "10", "--keep-all", "-o", str(folder / "out.csv")]) == 0
        left = {p.name for p in folder.iterdir()}
        assert not stale.exists() and kept <= left and "out.csv" in left
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kill_9_leaves_a_temporary_file_that_the_next_run_removes(tmp_path):
    source = tmp_path / "big.parquet"
    duckdb.connect().execute(
        "COPY (SELECT range AS id, (range * 7919) % 90 AS age, 'z' || ((range * 104729) % 997) AS zip "
        "FROM range(300000)) TO '" + str(source) + "'")
    target = tmp_path / "out.parquet"
    child = subprocess.Popen([sys.executable, "-m", "duckdb_anon.cli", "mondrian", str(source), "--qi", "age,zip",
                              "-k", "10", "--drop", "id", "-o", str(target)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, "the run ended before writing"
        time.sleep(0.02)
    child.kill()  # SIGKILL: nothing in the process runs any more
    child.wait()
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert left and all(f".{child.pid}-" in name for name in left)
    done = run("mondrian", source, "--qi", "age,zip", "-k", "10", "--drop", "id", "-o", target)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet", "out.parquet"]


def test_a_locked_database_exits_4_not_2(tmp_path):
    """Another process holds the file's write lock: nothing is wrong with the command (2 would say so); the
    caller can retry later."""
    path = tmp_path / "busy.duckdb"
    holder = duckdb.connect(str(path))  # this process holds the lock; the command runs in another one
    try:
        out = subprocess.run([sys.executable, "-m", "duckdb_anon.cli", "sql", str(path), "SELECT 1"],
                             capture_output=True, text=True, timeout=120)
    finally:
        holder.close()
    assert out.returncode == 4, out.stderr
    assert "DATABASE" in out.stderr and "locked by another process" in out.stderr and "Traceback" not in out.stderr


HELP_ONLY = """
import sys
from duckdb_anon.cli import main
for argv in (["--version"], ["--help"]):
    try:
        main(argv)
    except SystemExit:
        pass
print(sorted(m for m in ("duckdb", "sqlglot", "pandas", "pyarrow", "numpy", "duckdb_anon.commands.report") if m in sys.modules))
"""


def test_version_and_help_import_no_heavy_module():
    """--version and --help answer without importing duckdb, sqlglot, numpy, pandas, pyarrow or a
    subcommand's module (about a second on this machine; under 0.3 s without them)."""
    out = subprocess.run([sys.executable, "-c", HELP_ONLY], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
    assert "dp-publish" in out.stdout and "suggest-roles" in out.stdout and "locked by another process" in out.stdout


def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback(monkeypatch, capsys):
    """Ctrl-C in the first second lands while the subcommand's module is imported."""
    from duckdb_anon import cli

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "import_module", interrupted)
    assert cli.main(["report", "x.csv", "--qi", "a"]) == 130
    assert "interrupted" in capsys.readouterr().err
