"""A full disk during a masked copy is reported naming the operation and the target, and leaves nothing
behind (no partial target, no temporary file, no WAL): on a real 1 MB tmpfs, not a mock."""
import errno
import os
import shutil
import subprocess
import uuid

import duckdb
import pytest

import duckdb_anon
from duckdb_anon import cli
from duckdb_anon.errors import DiskFullError, disk_full_as, is_disk_full
from duckdb_anon.roles import declare_role, set_policy


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 1 MB tmpfs (root only; skipped where mounting is impossible)."""
    folder = tmp_path_factory.mktemp("tiny")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {mounted.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture(scope="module")
def source(tmp_path_factory, installed_template):
    """A database whose copy needs more than the 1 MB (random text does not compress): a copy of the
    installed template, cheaper than installing."""
    path = tmp_path_factory.mktemp("full_source") / "big.duckdb"
    shutil.copy(installed_template, path)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE big AS SELECT i AS v, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s FROM range(40000) r(i)")
    declare_role(con, "big", "v", "insensitive")
    declare_role(con, "big", "s", "insensitive")
    set_policy(con, "big", 2)
    con.close()
    return path


def test_masked_copy_on_a_full_disk_names_operation_and_target_and_leaves_nothing(tiny, source):
    target = tiny / "copy.duckdb"
    with pytest.raises(DiskFullError) as caught:
        duckdb_anon.masked_copy(source, target)
    assert "masked_copy()" in str(caught.value) and str(target) in str(caught.value)
    assert caught.value.errno == errno.ENOSPC and is_disk_full(caught.value.__cause__)
    assert os.listdir(tiny) == []


def test_the_cli_copy_on_a_full_disk_says_so_in_one_line_and_leaves_nothing(tiny, source, capsys):
    target = tiny / "copy.duckdb"
    code = cli.main(["copy", str(source), "-o", str(target), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1, err
    assert "No space left on device" in err[0] and "masked_copy()" in err[0] and str(target) in err[0]
    assert os.listdir(tiny) == []


def test_is_disk_full_knows_duckdb_and_os_errors_and_nothing_else(tmp_path):
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(duckdb.IOException('Could not write file "x": No space left on device'))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(duckdb.CatalogException("Table with name nope does not exist!"))
    try:
        raise RuntimeError("wrapper") from OSError(errno.ENOSPC, "full")
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)
    removed = []
    with pytest.raises(ValueError):  # another error passes through unchanged, with no clean-up
        with disk_full_as("op()", str(tmp_path), cleanup=lambda: removed.append(1)):
            raise ValueError("other")
    with pytest.raises(DiskFullError, match=r"^op\(\): the disk holding"):
        with disk_full_as("op()", str(tmp_path / uuid.uuid4().hex), cleanup=lambda: removed.append(1)):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert removed == [1]
