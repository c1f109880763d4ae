"""Declared column roles and table policies (the catalog tables of ``sql/70_roles.sql``), from Python.

Everything here is a thin, checked way to write what plain SQL can write too (INSERTs into
``anon_column_roles`` / ``anon_policies``), plus :func:`apply_policies`, which runs the statement the SQL
macro ``anon_compile_policies()`` returns: DuckDB binds table-function arguments from constants only, so
the declarations become constant SQL text inside the macro ``anonymized()``.

Names and values travel as query parameters; the compiled SQL is produced by the SQL macros' own escaping.
"""
from __future__ import annotations

import secrets

import duckdb

from duckdb_anon import sql_rules
from duckdb_anon.errors import check_not_reserved

ROLES = ("identifier", "quasi_identifier", "sensitive", "insensitive", "masked")


class DeclarationError(ValueError):
    """A role or policy that cannot be declared; the message names the function and the argument."""


def _name(fn: str, arg: str, value, nullable: bool = False) -> None:
    """A non-empty string (or None when nullable): checked in Python, since a wrong type would otherwise fail
    deep inside (None.lower(): AttributeError) or be stored as its text."""
    if value is None and nullable:
        return
    if not isinstance(value, str) or not value:
        raise DeclarationError(f"{fn}(): argument '{arg}' must be a non-empty string{' or None' if nullable else ''}, "
                               f"got {value!r}")


def _number(fn: str, arg: str, value, integer: bool = False, nullable: bool = False) -> None:
    """An int (a float too unless integer), never a bool or a string: set_policy(k='10') is refused rather
    than cast by DuckDB. The ranges are the catalog's CHECK constraints'."""
    if value is None and nullable:
        return
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise DeclarationError(f"{fn}(): argument '{arg}' must be {'an integer' if integer else 'a number'}"
                               f"{' or None' if nullable else ''}, got {value!r}")


def _columns(con: duckdb.DuckDBPyConnection, table: str, fn: str = "declare_role") -> list[str]:
    """The columns of `table`, read as query_table() reads it; an error naming `fn` when it cannot be read."""
    try:
        return [row[0] for row in con.execute("SELECT column_name FROM (DESCRIBE SELECT * FROM query_table(?))",
                                              [table]).fetchall()]
    except duckdb.Error as err:
        raise DeclarationError(f"{fn}(): argument 'table' names no readable table: {table} ({err})") from None


def declare_role(con: duckdb.DuckDBPyConnection, table: str, column: str, role: str, *,
                 hierarchy: str | None = None, pseudonymize: bool = False, mask: str | None = None,
                 mask_args: dict | None = None) -> None:
    """Declare `column` of `table` as one of ROLES. A column has one role: declaring the same declaration
    again does nothing (a script or notebook can run twice), declaring another is an error.

    A 'masked' column names its masking function in `mask` ('name', 'email', 'partial', 'date_shift', ...:
    docs/masking.md) and its arguments in `mask_args` (values as text or numbers; 'by' names the column
    identifying the person). The rule checking them is the SQL macro anon_mask_problem's."""
    fn = "declare_role"
    _name(fn, "table", table)
    _name(fn, "column", column)
    check_not_reserved(fn, "column", column, DeclarationError)
    if not isinstance(role, str) or role not in ROLES:
        raise DeclarationError(f"declare_role(): argument 'role' must be one of {', '.join(ROLES)}, got {role!r}")
    _name(fn, "hierarchy", hierarchy, nullable=True)
    _name(fn, "mask", mask, nullable=True)
    if not isinstance(pseudonymize, bool):
        raise DeclarationError(f"declare_role(): argument 'pseudonymize' must be True or False, got {pseudonymize!r}")
    columns = _columns(con, table)
    if column.lower() not in (c.lower() for c in columns):
        raise DeclarationError(f"declare_role(): argument 'column': table {table!r} has no column {column!r} "
                               f"(it has {', '.join(columns)})")
    if hierarchy is not None and role != "quasi_identifier":
        raise DeclarationError("declare_role(): argument 'hierarchy' is for quasi_identifier columns only")
    if pseudonymize and role != "identifier":
        raise DeclarationError("declare_role(): argument 'pseudonymize' is for identifier columns only")
    if (mask is not None or mask_args is not None) and role != "masked":
        raise DeclarationError("declare_role(): arguments 'mask' and 'mask_args' are for masked columns only")
    keys, values = _mask_args(mask_args)
    if role == "masked":
        _check_mask(con, table, column, mask, keys, values)
    existing = con.execute("SELECT column_name, role, hierarchy, pseudonymize, mask, "
                           "CASE WHEN mask_args IS NOT NULL THEN map_keys(mask_args) END, "
                           "CASE WHEN mask_args IS NOT NULL THEN map_values(mask_args) END FROM anon_column_roles "
                           "WHERE table_name = ? AND lower(column_name) = lower(?)", [table, column]).fetchall()
    if existing and tuple(existing[0][1:]) == (role, hierarchy, pseudonymize, mask, keys, values):
        return
    if existing:
        raise DeclarationError(f"declare_role(): argument 'column': {column!r} of {table!r} is already declared "
                               f"{existing[0][1]}; delete that row of anon_column_roles first")
    con.execute("INSERT INTO anon_column_roles (table_name, column_name, role, hierarchy, pseudonymize, mask, mask_args) "
                "VALUES (?, ?, ?, ?, ?, ?, CASE WHEN ?::VARCHAR[] IS NOT NULL THEN map(?::VARCHAR[], ?::VARCHAR[]) END)",
                [table, column, role, hierarchy, pseudonymize, mask, keys, keys, values])


def _mask_args(mask_args: dict | None) -> tuple[list[str] | None, list[str] | None]:
    """The keys and values of `mask_args` as text, for a MAP(VARCHAR, VARCHAR)."""
    if mask_args is None:
        return None, None
    if not isinstance(mask_args, dict) or not all(isinstance(k, str) for k in mask_args):
        raise DeclarationError("declare_role(): argument 'mask_args' must be a dict of argument names to values")
    return list(mask_args), [None if v is None else str(v) for v in mask_args.values()]


def _check_mask(con: duckdb.DuckDBPyConnection, table: str, column: str, mask: str | None,
                keys: list[str] | None, values: list[str] | None) -> None:
    """Refuse a masked declaration anon_mask_problem() objects to, at once rather than at the next apply
    (a key name stands in for the policy's, which may be set later)."""
    problem = con.execute(
        "SELECT anon_mask_problem(?, s, CASE WHEN ?::VARCHAR[] IS NOT NULL THEN map(?::VARCHAR[], ?::VARCHAR[]) END, 'key', "
        "(SELECT any_value(data_type) FROM anon_catalog_columns WHERE table_key = lower(?) AND lower(column_name) = lower(?)), "
        "EXISTS (SELECT 1 FROM anon_catalog_columns WHERE table_key = lower(?) AND lower(column_name) = lower(?))) "
        "FROM (SELECT 1) AS one LEFT JOIN anon_mask_specs s ON s.name = ?",
        [mask, keys, keys, values, table, column, table, dict(zip(keys or [], values or [])).get("by"), mask]).fetchall()[0][0]
    if problem is not None:
        known = con.execute("SELECT list_contains(anon_mask_names(), ?)", [mask]).fetchall()[0][0]
        raise DeclarationError(f"declare_role(): argument '{'mask_args' if known else 'mask'}': {problem}")


def set_policy(con: duckdb.DuckDBPyConnection, table: str, k: int, *, mode: str = "strict", l: float | None = None,
               l_kind: str = "distinct", c: float = 2, t: float | None = None, key_name: str | None = None,
               max_suppression: float = 0.0, undeclared: str = "error") -> None:
    """Create or replace `table`'s policy. The catalog's CHECK constraints reject out-of-range values.

    `undeclared`: what anonymized() does with a column that has no declared role: 'error' (refuse the
    table, the default) or 'drop' (leave the column out of the release)."""
    fn = "set_policy"
    _name(fn, "table", table)
    _number(fn, "k", k, integer=True)
    limit = con.execute("SELECT anon_limit('k')").fetchall()[0][0]  # the bound mondrian() checks
    if k > limit:
        raise DeclarationError(f"set_policy(): argument 'k' must be at most {limit} (a bound on the work it sizes), got {k!r}")
    for arg, value in (("mode", mode), ("l_kind", l_kind)):
        _name(fn, arg, value)
    _name(fn, "key_name", key_name, nullable=True)
    for arg, value, nullable in (("l", l, True), ("c", c, False), ("t", t, True), ("max_suppression", max_suppression, False)):
        _number(fn, arg, value, nullable=nullable)
    if not isinstance(undeclared, str) or undeclared not in ("error", "drop"):
        raise DeclarationError(f"set_policy(): argument 'undeclared' must be 'error' or 'drop', got {undeclared!r}")
    _columns(con, table, "set_policy")  # a policy for a table that does not exist would never apply
    try:
        con.execute("INSERT OR REPLACE INTO anon_policies (table_name, k, mode, l, l_kind, c, t, key_name, max_suppression, "
                    "undeclared) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [table, k, mode, l, l_kind, c, t, key_name, max_suppression, undeclared])
    except duckdb.ConstraintException as err:
        raise DeclarationError(f"set_policy(): {err}") from None


def apply_policies(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """(Re)create ``anonymized(table_name)`` from the current declarations.

    Returns the tables whose release will refuse to run, each with the reason (undeclared columns, an
    invalid declaration, no policy); reading ``anonymized()`` on them raises that reason."""
    statement = con.execute("SELECT anon_compile_policies()").fetchall()[0][0]
    con.execute(statement)
    return dict(con.execute("SELECT table_name, problem FROM anon_policy_problems()").fetchall())


def new_pseudonym_key() -> str:
    """A fresh pseudonym key: 256 bits from the operating system's secure generator, in the self-checking
    format the SQL macro anon_key_format() writes ('anon-key-v1-', 64 hex digits, '-', an 8-digit checksum).

    The format comes from the SQL file that checks it (one definition), run in a throwaway in-memory
    database. A random part that the sanity checks of anon_key_problem() would call not random (about one
    draw in 10^12) is drawn again, so every key returned is accepted."""
    with sql_rules.private_duckdb("anon_key_format", "anon_key_problem") as con:
        while True:
            key, problem = con.execute("SELECT key, anon_key_problem(key) FROM (SELECT anon_key_format(?) AS key)",
                                       [secrets.token_hex(32)]).fetchall()[0]
            if problem is None:
                return key


def set_pseudonym_key(con: duckdb.DuckDBPyConnection, key_name: str, key: str) -> None:
    """Put the pseudonym key in this session only (a session variable; never written to the file).

    Only keys made by :func:`new_pseudonym_key` (or ``duckdb-anon new-key``) are accepted: the rule is the
    SQL macro anon_key_problem's (the generator's format, its checksum, a random part that looks random), so
    a typed or guessed key is refused. Pseudonyms protect only while the key stays secret: anyone holding
    it can recompute the pseudonym of every candidate id."""
    if not isinstance(key_name, str) or not key_name.replace("_", "").isalnum():
        raise DeclarationError("set_pseudonym_key(): argument 'key_name' must be letters, digits and _")
    if not isinstance(key, str):
        raise DeclarationError("set_pseudonym_key(): argument 'key' must be a string, e.g. duckdb_anon.new_pseudonym_key()")
    problem = con.execute("SELECT anon_key_problem(?)", [key]).fetchall()[0][0]
    if problem is not None:
        raise DeclarationError(f"set_pseudonym_key(): argument 'key' {problem}")
    con.execute(f"SET VARIABLE duckdb_anon_key_{key_name} = ?", [key])


def create_anonymized_view(con: duckdb.DuckDBPyConnection, table: str, view: str) -> None:
    """``CREATE OR REPLACE VIEW <view> AS SELECT * FROM anonymized('<table>')``: a live view that recomputes
    the release whenever it is read; it works from any client opening the file.

    The risk you take: when the data changes, the view re-partitions, and someone who reads it before and
    after can intersect the two releases (a differencing attack; measure it with release_differencing()).
    For anything that leaves the database, publish a frozen release instead (:func:`publish_release`)."""
    _name("create_anonymized_view", "table", table)
    _name("create_anonymized_view", "view", view)
    quoted_view = '"' + view.replace('"', '""') + '"'
    literal = con.execute("SELECT anon_sql_literal(?)", [table]).fetchall()[0][0]
    con.execute(f"CREATE OR REPLACE VIEW {quoted_view} AS SELECT * FROM anonymized({literal})")
