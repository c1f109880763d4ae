"""Reading the commands' inputs and writing their outputs, so that nothing is lost.

Inputs: a CSV or Parquet file becomes a temporary relation, a DuckDB file is attached read-only, a
hierarchy file becomes a temporary table. Paths reach DuckDB as query parameters (or as the value of a
session variable, for a view), never as SQL text; the relation names are this module's own constants.

Outputs: :func:`checked_output` refuses a path that is one of the run's inputs (compared as resolved
paths), an existing file unless --force, and a folder that does not exist; :func:`written_atomically`
has the command write a temporary file in the target's folder and renames it into place only when the
whole run succeeded, so a failed or interrupted run leaves neither a partial output nor the temporary file
(a killed one's is removed by the next run writing the same target).
"""
from __future__ import annotations

import os
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb

from duckdb_anon.commands.errors import BadArgument, first_line, open_error

CSV_SUFFIXES = (".csv", ".tsv")
PARQUET_SUFFIXES = (".parquet", ".pq")
SOURCE_CATALOG = "anon_source"  # where --db is attached, read-only


@dataclass(frozen=True)
class CsvOptions:
    """How CSV files are read and written: the field delimiter and whether the first line names the columns."""
    delimiter: str | None = None  # None: DuckDB sniffs it when reading, ',' when writing
    header: bool = True


def existing_file(argument: str, path_text: str) -> Path:
    path = Path(path_text)
    if not path.is_file():
        raise BadArgument(argument, f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    return path


def data_file(argument: str, path_text: str) -> Path:
    """A CSV or Parquet file that exists."""
    path = Path(path_text)
    if path.suffix.lower() not in CSV_SUFFIXES + PARQUET_SUFFIXES:
        raise BadArgument(argument, f"{path} must end in .csv or .parquet")
    return existing_file(argument, path_text)


def csv_problem(exc: Exception, delimiter: str) -> str:
    """What is wrong with a CSV file, from DuckDB's error: the line and the reason when DuckDB names them."""
    text = str(exc)
    if "Error when sniffing file" in text:
        return (f"it is not well-formed CSV with the delimiter {delimiter!r} and '\"' quotes: a quoted field that "
                f"never closes (such as \"3,4) or lines with different numbers of fields (give --delimiter if the "
                f"file uses another one)")
    lines = text.splitlines()
    where = next((line.split("CSV Error on ", 1)[1] for line in lines if "CSV Error on " in line), None)
    if where is None:
        return first_line(exc)
    after = lines[next(i for i, line in enumerate(lines) if "CSV Error on " in line) + 1:]
    blank = next((i for i, line in enumerate(after) if not line.strip()), len(after))
    reason = next((line.strip() for line in after[blank:] if line.strip()), "")
    return f"{where.lower().replace(':', '')}: {reason}".rstrip(": ")


def file_relation(con: duckdb.DuckDBPyConnection, argument: str, path_text: str, name: str,
                  csv: CsvOptions = CsvOptions()) -> str:
    """A temporary relation `name` (a plain name: letters, digits, _) over a CSV (parsed once, into a table)
    or Parquet file (a view). Returns `name`."""
    path = data_file(argument, path_text)
    suffix = path.suffix.lower()
    try:
        if suffix in CSV_SUFFIXES:  # strict RFC 4180: a malformed line is an error, never a silently odd value
            delimiter = csv.delimiter or ("\t" if suffix == ".tsv" else ",")
            try:
                con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT * FROM read_csv(?, delim := ?, header := ?, '
                            "quote := '\"', escape := '\"', strict_mode := true)", [str(path), delimiter, csv.header])
            except duckdb.Error as exc:
                raise BadArgument(argument, f"cannot read {path} as CSV: {csv_problem(exc, delimiter)}") from None
        else:
            con.execute(f"SET VARIABLE {name}_path = ?", [str(path)])
            con.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS SELECT * FROM read_parquet(getvariable(\'{name}_path\'))')
            con.execute(f'SELECT * FROM "{name}" LIMIT 0').fetchall()  # a broken file fails here, naming the argument
    except duckdb.Error as exc:
        raise BadArgument(argument, f"cannot read {path}: {first_line(exc)}") from None
    return name


def attach_database(con: duckdb.DuckDBPyConnection, path_text: str, argument: str = "--db") -> Path:
    """Attach a DuckDB file read-only and resolve unqualified names in it first, then among our macros."""
    path = existing_file(argument, path_text)
    try:
        con.execute(f"ATTACH ? AS {SOURCE_CATALOG} (READ_ONLY)", [str(path)])
    except duckdb.Error as exc:
        raise open_error(argument, path, exc) from None
    # our macros live in the connection's own in-memory catalog; its name is DuckDB's, not user input
    home = con.execute("SELECT current_database()").fetchall()[0][0]
    con.execute(f"SET search_path = '{SOURCE_CATALOG}.main,{home}.main'")
    return path


def columns_of(con: duckdb.DuckDBPyConnection, relation: str, argument: str, label: str,
               database: str | None = None) -> list[str]:
    """The column names of a table or view (`relation` as query_table() reads it)."""
    try:
        described = con.execute("DESCRIBE SELECT * FROM query_table(?)", [relation]).fetchall()
    except duckdb.CatalogException:
        where = f" in {database}" if database else ""
        raise BadArgument(argument, f"no table or view named {label!r}{where}") from None
    except duckdb.Error as exc:
        raise BadArgument(argument, f"cannot read {label!r}: {first_line(exc)}") from None
    return [row[0] for row in described]


def match_columns(columns: list[str], wanted: list[str], argument: str, where: str) -> list[str]:
    """`wanted` spelled as the table spells them (DuckDB matches names case-insensitively, and so do we);
    a name the table lacks is an error naming `argument` and listing the table's columns."""
    spelled = {c.lower(): c for c in columns}
    missing = [w for w in wanted if w.lower() not in spelled]
    if missing:
        raise BadArgument(argument, f"no column {', '.join(map(repr, missing))} in {where} "
                                    f"(its columns: {', '.join(columns)})")
    return [spelled[w.lower()] for w in wanted]


def column_list(argument: str, text: str | None) -> list[str]:
    """A comma-separated list of column names: at least one, none twice."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    if not names:
        raise BadArgument(argument, "give at least one column name")
    lowered = [name.lower() for name in names]
    if len(set(lowered)) != len(lowered):
        raise BadArgument(argument, "lists a column twice")
    return names


def hierarchy_files(specs: list[str] | None, argument: str = "--hierarchy") -> list[Path]:
    """The files named by `QI=FILE` specs, each checked to exist (the specs are loaded by load_hierarchies)."""
    return [existing_file(argument, spec.partition("=")[2].strip()) for spec in specs or [] if "=" in spec]


def load_hierarchies(con: duckdb.DuckDBPyConnection, specs: list[str] | None, qis: list[str],
                     argument: str = "--hierarchy") -> tuple[dict[str, str] | None, list[Path]]:
    """Each `QI=FILE` (FILE in hierarchy_from_text's format: one leaf a line, `leaf;parent;...;root`) as a
    temporary table. Returns the `hierarchies :=` argument (QI -> table name; None without hierarchies)
    and the files read."""
    if not specs:
        return None, []
    tables: dict[str, str] = {}
    paths = []
    for number, spec in enumerate(specs, 1):
        qi, sep, file_text = spec.partition("=")
        if not sep or not qi.strip() or not file_text.strip():
            raise BadArgument(argument, f"{spec!r} must read QI=FILE, e.g. workclass=workclass.txt")
        matches = [q for q in qis if q.lower() == qi.strip().lower()]
        if not matches:
            raise BadArgument(argument, f"{qi.strip()!r} is not one of the quasi-identifiers ({', '.join(qis)})")
        if matches[0] in tables:
            raise BadArgument(argument, f"gives {qi.strip()!r} two hierarchies")
        path = existing_file(argument, file_text.strip())
        table = f"anon_hierarchy_{number}"
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM hierarchy_from_text(?)", [str(path)])
        except duckdb.Error as exc:
            raise BadArgument(argument, f"cannot read {path}: {first_line(exc)}") from None
        tables[matches[0]] = table
        paths.append(path)
    return tables, paths


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def checked_output(argument: str, path_text: str, suffixes: dict[str, str], *, force: bool,
                   inputs: list[tuple[str, Path]] = ()) -> tuple[Path, str]:
    """The output path and its kind (`suffixes` maps a suffix to a kind), checked before any work."""
    target = Path(path_text)
    kind = suffixes.get(target.suffix.lower())
    if kind is None:
        raise BadArgument(argument, f"{target} must end in {' or '.join(sorted(set(suffixes)))}")
    for name, source in inputs:
        if _same_file(target, source):
            raise BadArgument(argument, f"{target} is the {name} file: the command never overwrites its input")
    if not target.parent.is_dir():
        raise BadArgument(argument, f"folder {target.parent} does not exist")
    if target.is_dir():
        raise BadArgument(argument, f"{target} is a folder")
    if target.exists() and not force:
        raise BadArgument(argument, f"{target} exists (add --force to replace it)")
    return target, kind


def _temporary_name(target: Path, pid: int, tag: str) -> str:
    """The hidden name of a run's temporary file for `target`: the run's process id and a random tag
    (8 hexadecimal digits). _temporary_pattern matches these names and no other."""
    return f".{target.name}.{pid}-{tag}.tmp"


def _temporary_pattern(target: Path) -> re.Pattern:
    """The names _temporary_name gives, for `target`; group 1 is the process id."""
    return re.compile(re.escape(f".{target.name}.") + r"([0-9]+)-[0-9a-f]{8}\.tmp\Z")


def _alive(pid: int) -> bool:
    """Whether a process `pid` exists (one of another user counts: it cannot be signalled, but it runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # not a process id at all: not ours to judge
        return True
    return True


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove the temporary files that runs killed outright (SIGKILL, a power cut) left for `target`: files
    named exactly as written_atomically names them, whose process has ended. A file of a running process,
    this one included, is kept, and so is anything else in the folder. Returns the files removed.

    On a system without POSIX process signals nothing is removed: there, os.kill would end the process."""
    if os.name != "posix":
        return []
    pattern = _temporary_pattern(target)
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        found = pattern.match(entry.name)
        if not found or not entry.is_file(follow_symlinks=False):
            continue
        pid = int(found.group(1))
        if pid == os.getpid() or pid <= 0 or _alive(pid):
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:  # another run removed it first
            continue
        removed.append(Path(entry.path))
    return removed


@contextmanager
def written_atomically(target: Path, argument: str, *, force: bool) -> Iterator[Path]:
    """Yields a temporary path in `target`'s folder to write to; renames it to `target` when the block
    succeeds, removes it whatever happens (an error, Ctrl-C, the SIGTERM that cli.main turns into one).
    A kill -9 cannot be caught: the temporary files such runs left are removed by the next run writing the
    same target (remove_stale_temporaries)."""
    remove_stale_temporaries(target)
    temporary = target.with_name(_temporary_name(target, os.getpid(), secrets.token_hex(4)))
    try:
        yield temporary
        if not temporary.is_file():
            raise RuntimeError(f"nothing was written to {target}")
        if force:
            os.replace(temporary, target)
        else:  # a hard link never replaces: a file created at `target` meanwhile is kept
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise BadArgument(argument, f"{target} appeared while the command ran (add --force to replace it)") from None
            except OSError:  # a file system without hard links
                if target.exists():
                    raise BadArgument(argument, f"{target} appeared while the command ran (add --force to replace it)") from None
                os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
