"""Multi-table releases: people and their events, published together and joinable only inside the release.

A person table (one row per person: age, zip, ...) is k-anonymized by Mondrian on its quasi-identifiers; an
event table (many rows per person: purchases, ratings, diagnoses) by k^m-anonymity on its items
(duckdb_anon.km). Readers need to join them, so the person key cannot simply be dropped; a plain keyed
pseudonym would join them but would also join this release to every other release made with the same key,
and to any table pseudonymized with it. So the key is replaced by a per-release pseudonym (SQL macro
anon_release_pseudonym): the keyed digest of the person under a release key, itself the keyed digest of the
release name under the checked pseudonym key. Same release, same pseudonym; another release name, unrelated
pseudonyms.

Order matters for the guarantees. Mondrian runs first, and k^m-anonymity runs on the events of the people
Mondrian released only: removing rows after k^m-anonymity could drop an itemset's support below k, removing
person rows from a class after Mondrian could shrink it below k. Mondrian's suppressed rows (every QI '*')
form no class: they are left out, and with them their events. A released person whose events k^m-anonymity
suppressed keeps their person row, with a pseudonym no event row carries. Every event row's pseudonym is a
person row's (checked before committing).

SQL text here is built from fixed text, parameters, and names quoted by the SQL macros' own escaping.
"""
from __future__ import annotations

import json

import duckdb

from duckdb_anon import lineage, publishing
from duckdb_anon.km import km_anonymize
from duckdb_anon.km.output import check_key
from duckdb_anon.lineage import sql_identifier as _identifier, sql_literal as _literal
from duckdb_anon.releases import _freeze, check_not_a_release_view
from duckdb_anon.roles import DeclarationError

FN = "publish_tables"
PERSONS = "__anon_tables_persons"      # Mondrian's release of the persons, raw person column kept
EVENTS_IN = "__anon_tables_events_in"  # the events of the released persons: what k^m-anonymity reads
EVENTS_OUT = "__anon_tables_events_km"  # km_anonymize's release of them, raw person column kept
SCRATCH = (PERSONS, EVENTS_IN, EVENTS_OUT)


def _columns(fn: str, argument: str, value: object, *, empty: bool = False) -> list[str]:
    if value is None and empty:
        return []
    if not isinstance(value, (list, tuple)) or (not value and not empty) or not all(isinstance(c, str) and c for c in value):
        raise DeclarationError(f"{fn}(): argument {argument!r} must be a {'' if empty else 'non-empty '}list of column names, "
                               f"got {value!r}")
    return list(value)


def _positive_int(fn: str, argument: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(f"{fn}(): argument {argument!r} must be an integer of at least 1, got {value!r}")
    return value


def _table(con: duckdb.DuckDBPyConnection, fn: str, argument: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DeclarationError(f"{fn}(): argument {argument!r} must be a table name, got {value!r}")
    try:
        con.execute("SELECT * FROM query_table(?) LIMIT 0", [value]).fetchall()
    except duckdb.Error as error:
        raise DeclarationError(f"{fn}(): argument {argument!r}: cannot read table {value!r} ({error})") from None
    return value


def publish_tables(con: duckdb.DuckDBPyConnection, name: str, *, persons: str, events: str, person: str, qis: list[str],
                   k: int, items: list[str], m: int, key_name: str, events_person: str | None = None,
                   km_k: int | None = None, item_hierarchies: dict | None = None, keep: list[str] | None = None,
                   events_keep: list[str] | None = None, persons_into: str | None = None, events_into: str | None = None,
                   seed: int = 0, replace: bool = False, allow_differencing: bool = False, **mondrian_options) -> dict:
    """Publish `persons` and `events` as release `name`: tables `persons_into` (default ``<name>_persons``) and
    `events_into` (default ``<name>_events``), recorded in ``anon_table_releases`` (and the persons table in
    ``anon_releases``), all in one transaction. Returns the catalog row.

    persons: ``mondrian(persons, qis, k, **mondrian_options)``, publishing the QIs, `keep` and the person
    column as the release's pseudonym. events: ``km_anonymize`` over the events of the released persons
    (person column `events_person`, default `person`; `items`, k = `km_k` (default `k`), `m`,
    `item_hierarchies`, `seed`), publishing the person column as the same pseudonym, the items and
    `events_keep`. The pseudonym key `key_name` must be set in the session. The person table is audited for
    differencing against earlier releases of `persons` as :func:`duckdb_anon.publish_mondrian` does."""
    fn = FN
    if not isinstance(name, str) or not name.strip():
        raise DeclarationError(f"{fn}(): argument 'name' must be a release name, got {name!r}")
    if not replace and con.execute("SELECT count(*) FROM anon_table_releases WHERE name = ?", [name]).fetchall()[0][0]:
        raise DeclarationError(f"{fn}(): argument 'name': release {name!r} exists (pass replace=True to replace it)")
    persons_into = f"{name}_persons" if persons_into is None else persons_into
    events_into = f"{name}_events" if events_into is None else events_into
    reads = [persons, *publishing.reads_of(events, item_hierarchies)]
    publishing.check_target(con, fn, persons_into, reads=reads, replace=replace, argument="persons_into")
    events_leaf = publishing.check_target(con, fn, events_into, reads=reads, replace=replace, argument="events_into")
    if persons_into.lower() == events_into.lower():
        raise DeclarationError(f"{fn}(): argument 'events_into' must differ from persons_into ({persons_into!r})")
    check_not_a_release_view(con, fn, "persons", persons)
    persons, events = _table(con, fn, "persons", persons), _table(con, fn, "events", events)
    qis, items = _columns(fn, "qis", qis), _columns(fn, "items", items)
    keep, events_keep = _columns(fn, "keep", keep, empty=True), _columns(fn, "events_keep", events_keep, empty=True)
    k, m = _positive_int(fn, "k", k), _positive_int(fn, "m", m)
    km_k = k if km_k is None else _positive_int(fn, "km_k", km_k)
    person = lineage.column_of(con, fn, persons, "person", person)
    events_person = lineage.column_of(con, fn, events, "events_person", person if events_person is None else events_person)
    if not lineage.identifies(con, persons, person):
        raise DeclarationError(f"{fn}(): argument 'person': {person!r} does not identify the rows of {persons!r} "
                               "(a value repeats or is NULL)")
    key_name = check_key(con, fn, key_name)
    for option in mondrian_options:
        if not option.isidentifier() or option in ("keep", "output"):
            raise DeclarationError(f"{fn}(): argument {option!r} is not a mondrian() argument publish_tables passes on")
    arguments = json.dumps({"name": name, "persons": persons, "events": events, "person": person, "events_person": events_person,
                            "qis": qis, "k": k, "items": items, "m": m, "km_k": km_k, "item_hierarchies": item_hierarchies,
                            "keep": keep, "events_keep": events_keep, "seed": seed, **mondrian_options}, default=str)
    p, ep = _identifier(con, person), _identifier(con, events_person)
    try:
        suppressed = _stage(con, persons, events, person, events_person, qis, k, keep, mondrian_options)
        km_anonymize(con, EVENTS_IN, person=events_person, items=items, k=km_k, m=m, hierarchies=item_hierarchies,
                     into=EVENTS_OUT, seed=seed, person_output="raw",  # raw in scratch: pseudonymized below
                     **({"keep": events_keep} if events_keep else {}))
        counts = con.execute(f"SELECT (SELECT count(*) FROM query_table({_literal(con, events)})) - (SELECT count(*) FROM {EVENTS_IN}), "
                             f"(SELECT count(*) FROM {EVENTS_IN}) - (SELECT count(*) FROM {EVENTS_OUT})").fetchall()[0]
        record = {"source_table": persons, "method": "mondrian", "qis": qis, "k": k, "arguments": arguments,
                  "sensitive": mondrian_options.get("sensitive")}
        select_sql = (f"SELECT {p} AS __anon_person, * REPLACE (anon_release_pseudonym({p}, ?, ?) AS {p}) FROM {PERSONS}")
        ncp_sql = (f"SELECT ncp_percent FROM ncp({_literal(con, PERSONS)}, {_literal(con, persons)}, "
                   f"{con.execute('SELECT anon_sql_list(?::VARCHAR[])', [qis]).fetchall()[0][0]}, {_literal(con, person)})")

        def write_events() -> list:
            target = _identifier(con, events_into)  # stored in the order of its published rows (pseudonyms first)
            con.execute(f"CREATE OR REPLACE TABLE {target} AS " + publishing.ordered_sql(
                f"SELECT * REPLACE (anon_release_pseudonym({ep}, ?, ?) AS {ep}) FROM {EVENTS_OUT}"), [key_name, name])
            dangling, without, joined = con.execute("SELECT * FROM table_release_join_check(?, ?, ?, ?)",
                                                    [persons_into, events_into, person, events_person]).fetchall()[0]
            if dangling:  # cannot happen by construction (events are read through the released persons): fail closed
                raise DeclarationError(f"{fn}(): {dangling} event rows have no person row; nothing was published")
            persons_rows = con.execute(f"SELECT count(*) FROM {_identifier(con, persons_into)}").fetchall()[0][0]
            con.execute("DELETE FROM anon_table_releases WHERE name = ?", [name])
            con.execute("INSERT INTO anon_table_releases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, current_timestamp::TIMESTAMP, ?, ?, ?, ?, ?, ?)",
                        [name, persons_into, events_into, persons, events, person, events_person, key_name, arguments,
                         persons_rows, suppressed, without, joined, counts[0], counts[1]])
            return [events_leaf]

        _freeze(con, fn, persons_into, replace, select_sql, [key_name, name], record, ncp_sql, person=person,
                person_argument="person", allow_differencing=allow_differencing, also=write_events, reads=reads,
                log_name=name)
    finally:
        for scratch in SCRATCH:
            con.execute(f"DROP TABLE IF EXISTS {scratch}")
    result = con.execute("SELECT * FROM anon_table_releases WHERE name = ?", [name])
    return dict(zip([d[0] for d in result.description], result.fetchall()[0]))


def _stage(con: duckdb.DuckDBPyConnection, persons: str, events: str, person: str, events_person: str, qis: list[str],
           k: int, keep: list[str], options: dict) -> int:
    """Mondrian's release of the persons (with the raw person column) less the rows it suppressed, and the
    events of the people it released. Returns how many persons Mondrian suppressed."""
    published = [person] + [c for c in keep if c.lower() != person.lower()]
    names = sorted(options)
    named = "".join(f", {option} := ?" for option in names)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {PERSONS} AS SELECT * FROM mondrian(?, ?::VARCHAR[], ?, keep := ?::VARCHAR[]{named})",
                [persons, qis, k, published, *[options[o] for o in names]])
    suppressed = " AND ".join(f"{_identifier(con, q)}::VARCHAR = '*'" for q in qis)
    dropped = con.execute(f"DELETE FROM {PERSONS} WHERE {suppressed}").fetchall()[0][0]  # Mondrian's suppressed rows: every QI '*'
    p, ep = _identifier(con, person), _identifier(con, events_person)
    # matched as text, the text the pseudonym is computed from: equal text, equal pseudonym
    con.execute(f"CREATE OR REPLACE TEMP TABLE {EVENTS_IN} AS SELECT * FROM query_table({_literal(con, events)}) "
                f"WHERE {ep}::VARCHAR IN (SELECT {p}::VARCHAR FROM {PERSONS})")
    return dropped
