"""Whose people a DP release reads, found from what the relation reads rather than from its name.

Differential privacy and its budget belong to people. A view (or a query) over declared tables shows those
tables' people: it inherits their privacy unit and spends their budget, and its person column must be a
copy of theirs (sqlglot follows the column through the view's SQL, views over views included; a computed
column is no copy). A relation reading two units' people is refused: one release spends one budget, and
which person a joined row belongs to is not known. `public_groups` must not read the private data: groups
listed from the people's own rows are released whatever the noise says (a group held by one person
appears in every run), so a table of groups that reads the relation's tables, or any table whose privacy
unit is declared, is refused.

The rule runs in Python (duckdb_anon.relations does the reading) and is called from SQL through the UDF
``anon_dp_lineage_json`` (the SQL macro ``anon_dp_lineage`` in sql/81_dp_arguments.sql hands it the catalog
and the declarations as JSON), so dp_aggregate() from plain SQL and publish_dp() decide alike. What it cannot
resolve it refuses.
"""
from __future__ import annotations

import json

import duckdb

from duckdb_anon import relations
from duckdb_anon.engines.duckdb_engine import create_function
from duckdb_anon.relations import Catalog, RelationError


class LineageError(ValueError):
    """A relation whose people cannot be told, or told to conflict with the arguments."""


def _table_arg(fn: str) -> str:
    return "table" if fn in ("publish_dp", "dp_release") else "table_name"


def _shown(key) -> str:
    return ".".join(key[1:]) if key[0] in ("memory", "temp") and key[1] == "main" else ".".join(key)


class _Units:
    """The declarations (rows of anon_privacy_units with their unit_table), keyed by the object they name."""

    def __init__(self, catalog: Catalog, rows: list):
        self.rows = {r[0]: r for r in rows}  # table_name -> [table_name, unit_column, via_table, via_key, unit_table]
        self.by_key = {}
        for row in rows:
            try:
                self.by_key.setdefault(catalog.resolve([p.name for p in relations.parse_relation(row[0]).parts]), row)
            except (RelationError, AttributeError):  # a declaration of a table dropped since: it names nothing
                pass

    def person_column(self, row) -> str | None:
        """The column of a declared table holding the person's identifier itself (through a key: when the key
        is the other table's person column), or None."""
        via = self.rows.get(row[2]) if row[2] is not None else None
        if row[2] is None or (via is not None and via[2] is None and via[1].lower() == row[3].lower()):
            return row[1].lower()
        return None

    def people(self, unit_table: str) -> set:
        """Every (catalog, schema, table, column) holding the identifier of unit_table's people."""
        return {(*key, self.person_column(row)) for key, row in self.by_key.items()
                if row[4] == unit_table and self.person_column(row) is not None}


def resolve(catalog: Catalog, rows: list, fn: str, relation, puc, public_groups=None) -> dict:
    """{'unit_table', 'person_column', 'declared'} of `relation` (declared: privacy_unit_rows() knows it by
    this name), or LineageError naming fn and the argument at fault."""
    table_arg = _table_arg(fn)

    def fail(arg: str, message: str):
        raise LineageError(f"{fn}(): argument '{arg}' {message}")

    if not isinstance(relation, str) or not relation:
        fail(table_arg, f"must be a table name, got {relation!r}")
    units = _Units(catalog, rows)
    try:
        tree = relations.parse_relation(relation)
        key = catalog.resolve([p.name for p in tree.parts]) if isinstance(tree, relations.exp.Table) else None
        bases = relations.base_tables_of(catalog, relation)
    except RelationError as err:
        fail(table_arg, f"({relation!r}): {err}; a DP release must know whose rows it reads")
    row = units.rows.get(relation) or (units.by_key.get(key) if key else None)
    if row is not None:  # a declared table: its declaration decides
        column = units.person_column(row)
        if puc is not None and (column is None or puc.lower() != column):
            fail("privacy_unit_column", f"contradicts the privacy unit declared for {relation!r} in anon_privacy_units: "
                                        "leave it NULL to use the declaration")
        result = {"unit_table": row[4], "person_column": puc or column, "declared": relation in units.rows}
        if not result["declared"] and result["person_column"] is None:
            fail(table_arg, f"is declared as {row[0]!r}: use that name")
    elif key is not None and key in catalog.tables:  # an undeclared table: its own unit, by the column given
        if puc is None:
            fail("privacy_unit_column", f"is needed: no privacy unit declared for {relation!r} "
                                        "(declare_privacy_unit(), or pass privacy_unit_column)")
        result = {"unit_table": relation, "person_column": puc, "declared": False}
    else:  # a view or a query: the people of the tables it reads
        found = sorted({units.by_key[b][4] for b in bases if b in units.by_key})
        if len(found) > 1:
            fail(table_arg, f"({relation!r}) reads the people of {' and of '.join(map(repr, found))}: one release "
                            "spends one budget, so it must read one privacy unit's people")
        if not found:
            fail("privacy_unit_column", f"cannot be inherited: {relation!r} reads no table whose privacy unit is declared"
                                        f" ({', '.join(map(_shown, bases)) or 'no table'}); declare the privacy unit"
                                        " of the tables it reads (a view is not a unit of its own)")
        people = units.people(found[0])
        shown = ", ".join(sorted(f"{_shown(p[:3])}.{p[3]}" for p in people)) or "none"
        candidates = [puc.lower()] if puc is not None else relations.columns_of(catalog, relation)
        column = None
        for candidate in candidates:
            try:
                sources = relations.column_sources_of(catalog, relation, candidate)
            except RelationError:
                sources = None
            if sources and sources <= people:
                column = candidate
                break
        if column is None:
            fail("privacy_unit_column", (f"contradicts the people of {found[0]!r} that {relation!r} reads: it must be "
                                         f"an unchanged copy of their person column ({shown}), got {puc!r}")
                 if puc is not None else
                 f"is needed: {relation!r} reads the people of {found[0]!r} but shows no unchanged copy of their "
                 f"person column ({shown}); add it to the view, or pass privacy_unit_column")
        result = {"unit_table": found[0], "person_column": column, "declared": False}
    if public_groups is not None:
        try:
            listed = relations.base_tables_of(catalog, public_groups)
        except RelationError as err:
            fail("public_groups", f"({public_groups!r}): {err}; the public groups must be seen not to come from the people")
        private = sorted(set(listed) & (set(bases) | set(units.by_key)))
        if private:
            fail("public_groups", f"({public_groups!r}) reads {', '.join(map(_shown, private))}, the people's data: "
                                  "groups listed from private rows are released whatever the noise says (a group held "
                                  "by one person appears in every run); list the possible groups in a table made from "
                                  "public knowledge (a catalogue), or leave public_groups NULL (delta > 0)")
    return result


def budget_refusal(catalog: Catalog, rows: list, unit_table: str) -> str | None:
    """Why set_dp_budget() must not hold a budget under the name `unit_table` (a view, or a table whose
    people's budget is another table's), naming the unit table to use; None when it may."""
    units = _Units(catalog, rows)
    try:
        tree = relations.parse_relation(unit_table)
    except RelationError:
        return None  # not a name at all: the caller's own check says so
    key = None
    if isinstance(tree, relations.exp.Table):
        try:
            key = catalog.resolve([p.name for p in tree.parts])
        except RelationError:  # no such table yet: its budget may be set first
            pass
    row = units.rows.get(unit_table) or units.by_key.get(key)
    if row is not None and row[4] != unit_table:
        return f"{unit_table!r} holds the people of {row[4]!r}: set the budget of {row[4]!r}"
    if row is not None or (isinstance(tree, relations.exp.Table) and (key is None or key in catalog.tables)):
        return None
    try:
        bases = relations.base_tables_of(catalog, unit_table)
    except RelationError as err:
        return f"{unit_table!r} is no table: {err}"
    found = sorted({units.by_key[b][4] for b in bases if b in units.by_key})
    return (f"{unit_table!r} is a view, not a table of people: its people are those of "
            + (" and ".join(map(repr, found)) + f": set the budget of {found[0]!r}" if found
               else "the tables it reads (" + (", ".join(map(_shown, bases)) or "none") + "): declare their privacy unit"))


def _udf(fn, relation, puc, public_groups, catalog, rows) -> str:
    try:
        return json.dumps(resolve(Catalog(catalog), json.loads(rows), fn, relation, puc, public_groups))
    except LineageError as err:
        return json.dumps({"error": str(err)})


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register ``anon_dp_lineage_json`` on `con` (see noise.register: a second connection to the same
    database may find it registered)."""
    create_function(con, "anon_dp_lineage_json", _udf, ["VARCHAR"] * 6, "VARCHAR", null_handling="special")


def lineage(con: duckdb.DuckDBPyConnection, fn: str, relation, puc, public_groups=None) -> dict:
    """resolve() on the connection's catalog, through the SQL macro the DP aggregates call (one rule)."""
    return json.loads(con.execute("SELECT anon_dp_lineage(?, ?, ?, ?)::VARCHAR",
                                  [fn, relation, puc, public_groups]).fetchall()[0][0])
