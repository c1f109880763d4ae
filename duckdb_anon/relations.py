"""Which base tables a relation reads: a table name, a view (over views, to any depth) or a query's text.

Guards that depend on what a release reads (a release never writes to a table it reads; a view over people
has their privacy unit) must see through views as DuckDB does, or a view is a way around them. DuckDB
keeps a view's SQL text (duckdb_views().sql); sqlglot parses it, and every table it names is resolved the
way DuckDB resolves a name: case-insensitively, in the temporary catalog first, then the current database
and schema, with `schema.table` and `catalog.schema.table` qualified; CTE names are not tables. A leaf is
a (catalog, schema, table) triple in lower case.

A relation this module cannot read to the end (a table function other than query_table(), a name nothing
resolves) is reported as unresolved rather than guessed: callers fail closed on it.
"""
from __future__ import annotations

import duckdb
import sqlglot
from sqlglot import exp

MAX_DEPTH = 64  # views over views deeper than this are refused (a cycle cannot be created, but be bounded)

Leaf = tuple[str, str, str]


class Unresolved(ValueError):
    """A relation whose base tables cannot be told (what it reads, in words, is the message)."""


def _lookup(con: duckdb.DuckDBPyConnection, parts: list[str]) -> tuple[str, Leaf] | None:
    """('table' | 'view', (catalog, schema, name)) for a name of 1-3 parts, resolved as DuckDB does; None when
    nothing has that name."""
    parts = [p.lower() for p in parts]
    current_db, current_schema = con.execute("SELECT lower(current_database()), lower(current_schema())").fetchall()[0]
    if len(parts) == 1:
        candidates = [("temp", "main", parts[0]), (current_db, current_schema, parts[0]), (current_db, "main", parts[0])]
    elif len(parts) == 2:  # schema.table in the current database, else catalog.table in its default schema
        candidates = [(current_db, parts[0], parts[1]), ("temp", parts[0], parts[1]), (parts[0], "main", parts[1])]
    else:
        candidates = [tuple(parts[-3:])]
    for catalog, schema, name in candidates:
        found = con.execute(
            "SELECT 'table' FROM duckdb_tables() WHERE lower(database_name) = ? AND lower(schema_name) = ? AND lower(table_name) = ? "
            "UNION ALL SELECT 'view' FROM duckdb_views() WHERE lower(database_name) = ? AND lower(schema_name) = ? "
            "AND lower(view_name) = ? AND NOT internal", [catalog, schema, name] * 2).fetchall()
        if found:
            return found[0][0], (catalog, schema, name)
    return None


def _name_parts(relation: str) -> list[str] | None:
    """The parts of a (possibly quoted, possibly qualified) table name, or None when `relation` is not one."""
    try:
        table = exp.to_table(relation, dialect="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None
    parts = [p.name for p in table.parts]
    return parts if parts and all(parts) else None


def _tables_of_query(sql: str) -> tuple[list[list[str]], list[str]]:
    """The table names a query reads (CTE names left out) and the table functions it calls."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as error:
        raise Unresolved(f"its SQL could not be parsed ({str(error).splitlines()[0]})") from None
    if isinstance(tree, exp.Create):  # a view's text: what it reads is its query
        tree = tree.expression
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names, functions = [], []
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func) or not isinstance(table.this, exp.Identifier):
            function = table.this
            name = (function.name if isinstance(function, exp.Anonymous) else type(function).__name__).lower()
            argument = function.expressions[0] if isinstance(function, exp.Anonymous) and function.expressions else None
            if name == "query_table" and isinstance(argument, exp.Literal) and argument.is_string:
                parts = _name_parts(argument.this)
                if parts:
                    names.append(parts)
                    continue
            functions.append(name)
            continue
        parts = [p.name for p in table.parts]
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        names.append(parts)
    return names, functions


def base_tables(con: duckdb.DuckDBPyConnection, relation: str) -> set[Leaf]:
    """The base tables `relation` (a table or view name as query_table() reads it, or a SELECT's text)
    reads, each (catalog, schema, table) in lower case. Raises Unresolved when that cannot be told."""
    is_query = relation.lstrip().lstrip("(").lstrip()[:6].lower() in ("select", "with", "from", "values", "table ")
    parts = None if is_query else _name_parts(relation)
    if not is_query:
        if parts is None:
            raise Unresolved(f"{relation!r} is not a table name")
        pending = [(parts, 0)]
    else:
        names, functions = _tables_of_query(relation)
        if functions:
            raise Unresolved(f"it calls the table function {functions[0]}(), whose reads cannot be followed")
        pending = [(n, 1) for n in names]
    leaves: set[Leaf] = set()
    while pending:
        parts, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise Unresolved(f"its views nest more than {MAX_DEPTH} deep")
        found = _lookup(con, parts)
        if found is None:
            raise Unresolved(f"it reads {'.'.join(parts)!r}, which is neither a table nor a view")
        kind, leaf = found
        if kind == "table":
            leaves.add(leaf)
            continue
        sql = con.execute("SELECT sql FROM duckdb_views() WHERE lower(database_name) = ? AND lower(schema_name) = ? "
                          "AND lower(view_name) = ?", list(leaf)).fetchall()[0][0]
        names, functions = _tables_of_query(sql)
        if functions:
            raise Unresolved(f"the view {leaf[2]!r} calls the table function {functions[0]}(), whose reads cannot be followed")
        pending.extend((n, depth + 1) for n in names)
    return leaves


def resolve_target(con: duckdb.DuckDBPyConnection, name: str) -> tuple[str | None, Leaf]:
    """What `name` is now ('table', 'view' or None) and the (catalog, schema, table) a CREATE TABLE of that
    name writes, as DuckDB resolves it."""
    parts = _name_parts(name) or [name]
    found = _lookup(con, parts)
    if found is not None:
        return found
    current_db, current_schema = con.execute("SELECT lower(current_database()), lower(current_schema())").fetchall()[0]
    parts = [p.lower() for p in parts]
    if len(parts) == 1:
        return None, (current_db, current_schema, parts[0])
    if len(parts) == 2:
        return None, (current_db, parts[0], parts[1])
    return None, tuple(parts[-3:])
