"""The one reader of ``sql/``: the files, their macros, and the rules they state, for every other module.

The SQL files are the source of every rule a plain DuckDB client can call (argument checks, cells, labels,
the privacy models, pseudonym keys...). Nothing else in the package opens a SQL file or picks one by its
name: a module that needs a rule asks for it here by the *macro's* name, so renumbering or splitting a
file changes nothing outside this module.

- :func:`sql_files` / :func:`statements`: the install's text, in dependency order (the file names sort so).
- :func:`macro`: a scalar macro as (parameters, parsed body), for generated SQL that must inline a rule
  where the macro cannot be called (another engine).
- :func:`inline`: a call of such a macro replaced by its body, and DuckDB's list functions as Spark writes
  them.
- :func:`definitions` / :func:`private_duckdb`: an in-memory DuckDB holding just the statements that define the named macros and
  what they call, for checking arguments with the SQL's own checks where there is no installed database
  (Spark, the key generator).

A leaf: it imports nothing of the package, so anything may import it.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

_DEFINES = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?(?:MACRO|TABLE|VIEW|SEQUENCE)\s+"
                      r"(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I | re.M)
_SCALAR_MACRO = re.compile(r"^\s*CREATE\s+OR\s+REPLACE\s+MACRO\s+(\w+)\s*\((.*?)\)\s+AS\s+(?!TABLE\b)(.*)$",
                           re.I | re.S)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def sql_files() -> list[Path]:
    """The SQL files to run, in order (their names sort in dependency order)."""
    packaged = resources.files("duckdb_anon") / "sql"
    folder = Path(str(packaged))
    if not folder.is_dir():  # a source checkout: the files live at the repository's top level
        folder = Path(__file__).resolve().parent.parent / "sql"
    files = sorted(folder.glob("*.sql"))
    if not files:
        raise FileNotFoundError(f"duckdb_anon: no SQL files found in {folder}")
    return files


@lru_cache(maxsize=1)
def file_texts() -> tuple[str, ...]:
    """Each SQL file's text, in install order (one DuckDB statement list each)."""
    return tuple(path.read_text(encoding="utf-8") for path in sql_files())


def _without_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


@lru_cache(maxsize=1)
def statements() -> tuple[str, ...]:
    """Every statement of the files, in install order, split by DuckDB's own parser (comments dropped)."""
    found = []
    for text in file_texts():
        found += [_without_comments(s.query).strip() for s in duckdb.extract_statements(text)]
    return tuple(found)


@lru_cache(maxsize=1)
def _defined() -> tuple[dict[str, int], list[set[int]]]:
    """Which statement defines each name (the last one), and the other statements each statement uses. A
    name counts wherever it is written, a string included: a macro may name a later one in the text it
    hands to query()."""
    where: dict[str, int] = {}
    for i, statement in enumerate(statements()):
        for name in _DEFINES.findall(statement):
            where[name.lower()] = i
    uses = [{where[w] for w in {w.lower() for w in _WORD.findall(statement)} if w in where and where[w] != i}
            for i, statement in enumerate(statements())]
    return where, uses


def _params(text: str) -> list[str]:
    """A macro's parameter names (defaults such as ``x := NULL`` dropped)."""
    return [p.split(":=")[0].strip().lower() for p in text.split(",") if p.strip()]


@lru_cache(maxsize=1)
def _macro_texts() -> dict[str, tuple[str, str]]:
    found = {}
    for statement in statements():
        match = _SCALAR_MACRO.match(statement)
        if match:
            found[match.group(1).lower()] = (match.group(2), match.group(3))
    return found


@lru_cache(maxsize=None)
def macro(name: str) -> tuple[list[str], exp.Expression]:
    """The scalar macro `name` of the files: (parameter names, body parsed as DuckDB SQL)."""
    params, body = _macro_texts()[name.lower()]
    return _params(params), sqlglot.parse_one(body, read="duckdb")


def _bottom_up(node: exp.Expression, fn) -> exp.Expression:
    """`fn` applied to every node, children first (sqlglot's transform does not enter what it replaced)."""
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _bottom_up(value, fn))
        elif isinstance(value, list):
            node.set(key, [_bottom_up(v, fn) if isinstance(v, exp.Expression) else v for v in value])
    return fn(node)


def _expand(node: exp.Expression, names: frozenset[str]) -> exp.Expression:
    """A call of one of the macros `names` replaced by its body (recursively), the arguments put in."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() in names):
        return node
    params, body = macro(node.name)
    args = dict(zip(params, (_bottom_up(a, lambda n: _expand(n, names)) for a in node.expressions)))

    def put(n):
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in args:
            arg = args[n.name.lower()].copy()  # an operation keeps its precedence where the parameter stood
            return exp.paren(arg) if isinstance(arg, (exp.Binary, exp.Unary)) and not isinstance(arg, exp.Paren) else arg
        return n

    return _bottom_up(_bottom_up(body.copy(), put), lambda n: _expand(n, names))


def _spark_lists(node: exp.Expression) -> exp.Expression:
    """DuckDB's list functions as Spark writes them."""
    if isinstance(node, exp.Bracket):  # sqlglot keeps a literal index 0-based, an expression as written (1-based)
        index = node.expressions[0]
        one_based = exp.Literal.number(int(index.this) + 1) if isinstance(index, exp.Literal) else index
        return exp.Anonymous(this="element_at", expressions=[node.this, one_based])
    if isinstance(node, exp.Length):
        return exp.Anonymous(this="size", expressions=[node.this])
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_sum":
        total, item = exp.to_identifier("__anon_total"), exp.to_identifier("__anon_item")
        add = exp.Lambda(this=exp.Add(this=exp.column(total), expression=exp.column(item)), expressions=[total, item])
        return exp.Anonymous(this="aggregate", expressions=[node.expressions[0], exp.cast(exp.Literal.number(0), "DOUBLE"), add])
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_reduce" and len(node.expressions) == 3:
        items, merge, start = node.expressions
        return exp.Anonymous(this="aggregate", expressions=[items, start, merge])
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_slice":
        items, start, end = node.expressions
        count = exp.Add(this=exp.Sub(this=end.copy(), expression=start.copy()), expression=exp.Literal.number(1))
        return exp.Anonymous(this="slice", expressions=[items, start, exp.paren(count)])
    return node


def inline(node: exp.Expression, dialect: str, names) -> exp.Expression:
    """For a dialect other than DuckDB, a call of one of the macros `names` as the macros' expression (the
    macros it calls inlined too), in that dialect's list functions. DuckDB calls the macro itself."""
    if dialect == "duckdb" or not isinstance(node, exp.Anonymous):
        return node
    names = frozenset(n.lower() for n in names)
    if node.name.lower() not in names:
        return node
    return _bottom_up(_expand(node, names), _spark_lists)


@lru_cache(maxsize=None)
def callees(*names: str) -> frozenset[str]:
    """The macros `names` and every macro their statements use, transitively (lower-case)."""
    where, _ = _defined()
    by_statement = {i: n for n, i in where.items()}
    needed = _closure(names)
    return frozenset(by_statement[i] for i in needed if i in by_statement)


def _closure(names) -> set[int]:
    where, uses = _defined()
    missing = [n for n in names if n.lower() not in where]
    if missing:
        raise KeyError(f"duckdb_anon.sql_rules: no SQL file defines {', '.join(missing)}")
    needed, todo = set(), [where[n.lower()] for n in names]
    while todo:
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo += uses[i]
    return needed


def definitions(*names: str) -> list[str]:
    """The statements that define the macros `names` and everything they use, in install order: DuckDB SQL
    for a fresh DuckDB that must call them."""
    return [statements()[i] for i in sorted(_closure(names))]


_private: dict[frozenset[str], duckdb.DuckDBPyConnection] = {}
_private_lock = threading.Lock()


def private_duckdb(*names: str) -> duckdb.DuckDBPyConnection:
    """A cursor on an in-memory DuckDB holding the statements that define the macros `names` and everything
    they use (made once per process and set of names). For running the SQL's own argument checks where no
    installed database is at hand; the caller closes the cursor."""
    key = frozenset(n.lower() for n in names)
    with _private_lock:
        if key not in _private:
            con = duckdb.connect()
            for statement in definitions(*names):
                con.execute(statement)
            _private[key] = con
        return _private[key].cursor()
