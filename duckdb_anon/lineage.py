"""Who each released row is, and the differencing audit run when a release is published.

Two releases of the same source can be intersected: a reader who can tell a person's rows apart in both
(a pseudonym, or any column that stays the same) finds the people whose labels are equal to theirs in both,
which can be far fewer than k. Publishing refuses that unless the caller takes the risk explicitly, and the
audit must know which person each release row is even when the release leaves identifiers out, so every
publish records it in ``anon_release_people``, as keyed digests (see sql/76_lineage.sql). The audit itself is the
SQL macro ``release_differencing()``, run over that catalog table.

SQL text here is built from fixed text, parameters, and names quoted by the SQL macros' own escaping.
"""
from __future__ import annotations

import duckdb

from duckdb_anon.roles import DeclarationError

STAGED = "__anon_publish_staged"  # the release with its person column in front, while publishing
PEOPLE = "__anon_publish_people"  # (person, labels) of the release being published
TEMPORARY = (STAGED, PEOPLE)


def sql_literal(con: duckdb.DuckDBPyConnection, value: str) -> str:
    """`value` as a SQL string literal, by the SQL macro anon_sql_literal (one quoting rule)."""
    return con.execute("SELECT anon_sql_literal(?)", [value]).fetchall()[0][0]


def sql_identifier(con: duckdb.DuckDBPyConnection, value: str) -> str:
    """`value` as a quoted SQL identifier, by the SQL macro anon_sql_identifier."""
    return con.execute("SELECT anon_sql_identifier(?)", [value]).fetchall()[0][0]


def column_of(con: duckdb.DuckDBPyConnection, fn: str, table: str, argument: str, column: object) -> str:
    """`column` in the table's own spelling, or an error naming the argument."""
    if not isinstance(column, str) or not column:
        raise DeclarationError(f"{fn}(): argument '{argument}' must name a column of {table!r}, got {column!r}")
    # the table's binding, as query_table() reads the name (a quoted name too), not the catalog's plain names
    found = con.execute("SELECT any_value(column_name) FROM (DESCRIBE SELECT * FROM query_table(?)) "
                        "WHERE lower(column_name) = lower(?)", [table, column]).fetchall()[0][0]
    if found is None:
        raise DeclarationError(f"{fn}(): argument '{argument}': {table!r} has no column {column!r}")
    return found


def identifies(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Is every value of the column present and different?"""
    return con.execute(f"SELECT count(c) = count(*) AND count(DISTINCT c) = count(*) FROM (SELECT {sql_identifier(con, column)} AS c "
                       f"FROM query_table({sql_literal(con, table)}))").fetchall()[0][0]


def person_column(con: duckdb.DuckDBPyConnection, fn: str, table: str, id_column: object) -> str | None:
    """The column that says which person a row is: `id_column`, else the first declared identifier
    (pseudonymized ones first, then by name) whose values identify the rows; None when there is none."""
    if id_column is not None:
        column = column_of(con, fn, table, "id_column", id_column)
        if not identifies(con, table, column):
            raise DeclarationError(f"{fn}(): argument 'id_column': {column!r} does not identify the rows of {table!r} "
                                   "(a value repeats or is NULL)")
        return column
    declared = con.execute("SELECT column_name FROM anon_column_roles WHERE table_name = ? AND role = 'identifier' "
                           "ORDER BY pseudonymize DESC, column_name", [table]).fetchall()
    for (column,) in declared:
        spelled = column_of(con, fn, table, "table", column)
        if identifies(con, table, spelled):
            return spelled
    return None


def stage_people(con: duckdb.DuckDBPyConnection, fn: str, qis: list[str], argument: str) -> None:
    """(person, labels) of the staged release, in a temporary table; a person twice is an error."""
    labels = ", ".join(f"{sql_identifier(con, q)}::VARCHAR" for q in qis)
    # the person as the catalog's keyed digest (sql/76_lineage.sql): the catalog never holds a raw identifier
    con.execute(f"CREATE OR REPLACE TEMP TABLE {PEOPLE} AS SELECT anon_person_digest(__anon_person::VARCHAR) AS person, "
                f"[{labels}] AS labels FROM {STAGED}")
    repeated = con.execute(f"SELECT count(person) < count(*) OR count(DISTINCT person) < count(*) FROM {PEOPLE}").fetchall()[0][0]
    if repeated:
        raise DeclarationError(f"{fn}(): argument '{argument}' does not identify the rows of the release (a value repeats or is NULL)")


def previous_release(con: duckdb.DuckDBPyConnection, source: str) -> str | None:
    """The latest release of `source` in anon_releases, or None."""
    found = earlier_releases(con, source)
    return found[0] if found else None


def earlier_releases(con: duckdb.DuckDBPyConnection, source: str, first: str | None = None) -> list[str]:
    """Every release of `source` in anon_releases, `first` first, then the latest first: a new release is
    audited against each, since readers may hold any of them."""
    names = [r[0] for r in con.execute("SELECT name FROM anon_releases WHERE source_table = ? ORDER BY created_at DESC, name DESC",
                                       [source]).fetchall()]
    return ([first] if first else []) + [n for n in names if n != first]


def _figures(con: duckdb.DuckDBPyConnection, earlier: str, k: int | None) -> tuple[int, int, int]:
    """release_differencing() between the recorded people of `earlier` and the release being published."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW __anon_diff_earlier AS SELECT person, labels FROM anon_release_people "
                f"WHERE release_name = {sql_literal(con, earlier)}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW __anon_diff_new AS SELECT person, labels FROM {PEOPLE}")
    try:
        return con.execute("SELECT people_in_both, people_below_k, people_singled_out FROM release_differencing("
                           f"'__anon_diff_earlier', '__anon_diff_new', ['labels'], 'person', "
                           f"k := {'NULL' if k is None else int(k)})").fetchall()[0]
    finally:
        con.execute("DROP VIEW IF EXISTS __anon_diff_earlier")
        con.execute("DROP VIEW IF EXISTS __anon_diff_new")


def audit(con: duckdb.DuckDBPyConnection, fn: str, name: str, source: str, earlier: list[str], k: int | None,
          person: str | None, allow_differencing: bool, unmatched: str | None = None) -> dict:
    """Audit the release being published against each release in `earlier` (the latest first): refuse a
    finding (anyone below k or singled out) or an audit that cannot run, unless `allow_differencing`; then
    the catalog records the finding as the warning. Returns the anon_releases columns to record.
    `unmatched`: why this release has no person to match, said in the refusal when `person` is None (the
    default asks for the id_column argument, which only publish_release and publish_mondrian take)."""
    record = {"previous_release": earlier[0] if earlier else None, "differencing_below_k": None,
              "differencing_singled_out": None, "differencing_warning": None}
    if not earlier:
        return record
    take = ("publish a re-release instead (duckdb_anon.publish_rerelease(con, table, name, previous=...)), "
            "or pass allow_differencing=True to publish anyway")
    worst = None
    for release in earlier:
        recorded = con.execute("SELECT person_column FROM anon_releases WHERE name = ?", [release]).fetchall()
        theirs = recorded[0][0] if recorded else None
        if person is None or theirs is None or theirs.lower() != person.lower():
            why = (f"the earlier release {release!r} of {source!r} cannot be audited for differencing: "
                   + ((unmatched or "no column identifies the people of this release (pass id_column=..., a column whose "
                       "values identify each person, or declare such an identifier)") if person is None else
                      f"{release!r} was published without a column identifying its people (id_column), so its rows cannot "
                      "be matched" if theirs is None else
                      f"{release!r} identified people by {theirs!r}, this release by {person!r} (pass id_column={theirs!r})"))
            if not allow_differencing:
                raise DeclarationError(f"{fn}(): {why}; or pass allow_differencing=True to publish without the audit")
            record["differencing_warning"] = f"published without a differencing audit: {why}"
            return record
        in_both, below, singled = _figures(con, release, k)
        if worst is None or (below, singled) > worst[1:3]:
            worst = (release, below, singled, in_both)
    release, below, singled, in_both = worst
    record.update(differencing_below_k=below, differencing_singled_out=singled)
    if below or singled:
        finding = (f"intersected with the earlier release {release!r} of {source!r}, release {name!r} leaves {below} of the "
                   f"{in_both} people in both below k = {k} and singles out {singled}")
        if not allow_differencing:
            raise DeclarationError(f"{fn}(): {finding}; {take}")
        record["differencing_warning"] = f"published with allow_differencing: {finding}"
    return record
