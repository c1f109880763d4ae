"""What a k^m release's person column holds: a per-release pseudonym (the default), nothing, or the raw id.

Fail closed: a raw person id (a patient number, an account id) links the release back to every table keyed
by it, so it goes out only when the caller says so. The pseudonym is the one publish_tables() writes,
anon_release_pseudonym (sql/68_pseudonym_keys.sql): the keyed digest of the person under a key derived from
the release name, so the person keeps one pseudonym across their rows, and two releases with different
names give unrelated pseudonyms (they cannot be joined on it).

SQL text here is built from fixed text and a column name quoted by sqlglot; the key name and the release
name go as parameters.
"""
from __future__ import annotations

from typing import NamedTuple

import duckdb
from sqlglot import exp

from duckdb_anon.roles import DeclarationError

OUTPUTS = ("pseudonym", "drop", "raw")


class PersonOutput(NamedTuple):
    mode: str
    key_name: str | None
    release_name: str | None


def check_key(con: duckdb.DuckDBPyConnection, fn: str, key_name: object, argument: str = "key_name") -> str:
    """The key's name, once the key it names is set and passes the key rule (anon_key_problem)."""
    if not isinstance(key_name, str) or not key_name.replace("_", "a").isalnum() or not key_name.isascii():
        raise DeclarationError(f"{fn}(): argument {argument!r} must be a key name (letters, digits, _), got {key_name!r}")
    problem = con.execute("SELECT anon_key_problem(getvariable('duckdb_anon_key_' || ?)::VARCHAR)", [key_name]).fetchall()[0][0]
    if problem is not None:
        raise DeclarationError(f"{fn}(): argument {argument!r}: the pseudonym key duckdb_anon_key_{key_name} {problem} "
                         "(duckdb_anon.set_pseudonym_key(con, key_name, duckdb_anon.new_pseudonym_key()))")
    return key_name


def check_person_output(con: duckdb.DuckDBPyConnection, fn: str, person_output: object, key_name: object,
                        release_name: object) -> PersonOutput:
    """The checked choice, before any work: a pseudonym needs a set key and a release name."""
    if person_output not in OUTPUTS:
        raise ValueError(f"{fn}(): argument 'person_output' must be 'pseudonym', 'drop' or 'raw', got {person_output!r}")
    if person_output != "pseudonym":
        return PersonOutput(person_output, None, None)
    if key_name is None:
        raise ValueError(f"{fn}(): argument 'key_name' is None: the person column is published as a per-release "
                         "pseudonym, which needs a pseudonym key. Set one with duckdb_anon.set_pseudonym_key(con, "
                         "'my_key', duckdb_anon.new_pseudonym_key()) and pass key_name='my_key' (from SQL: "
                         "SET VARIABLE duckdb_anon_key_my_key = '<a key from duckdb-anon new-key>', key_name := "
                         "'my_key'); or person_output='drop' (no person column), or 'raw' (the ids as they are: "
                         "anyone holding another table keyed by them links the release back)")
    key_name = check_key(con, fn, key_name)
    if not isinstance(release_name, str) or not release_name.strip():
        raise ValueError(f"{fn}(): argument 'release_name' must be a non-empty name (the pseudonyms derive from it), "
                         f"got {release_name!r}")
    return PersonOutput("pseudonym", key_name, release_name)


def person_output_sql(person: str, output: PersonOutput, release_sql: str) -> tuple[str, list]:
    """The SELECT (and its parameters) publishing `release_sql` (whose person column `person` is raw) as
    `output` says. Pseudonymized or dropped, the rows are ordered by all their columns: the release's own
    order follows the raw ids, which would tell the ids' order."""
    if output.mode == "raw":
        return release_sql, []
    column = exp.to_identifier(person, quoted=True).sql("duckdb")
    if output.mode == "drop":
        return f"SELECT * EXCLUDE ({column}) FROM ({release_sql}) ORDER BY ALL NULLS FIRST", []
    return (f"SELECT * REPLACE (anon_release_pseudonym({column}, ?, ?) AS {column}) FROM ({release_sql}) "
            "ORDER BY ALL NULLS FIRST", [output.key_name, output.release_name])
