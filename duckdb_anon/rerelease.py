"""A re-release that cannot be differenced: publish_rerelease().

Republishing a changed table with a fresh Mondrian run moves every cut, and two releases intersected on a
person's id leave many people below k. A re-release keeps the previous release's classes instead, in the
spirit of m-invariance (Xiao & Tao, SIGMOD 2007): everyone released before keeps their class (its labels);
a new person joins the class whose region holds them, in batches; the rest wait in a held-back set until
Mondrian over them can make new classes of k; a class that deletions (or values that moved) would leave
with fewer than k people in common with any earlier release of the lineage is held back whole rather than
relabelled; and so is what remains of a cohort (the people who entered a class together) once it is
smaller than the batches people enter in, so that newcomers since any release stay a crowd. The per-row work is the SQL macro anon_rerelease_assign (sql/76_lineage.sql); this module
drives it, runs Mondrian over the pool, and publishes through the same audit as every release, against
every earlier release of the lineage.

SQL text here is built from fixed text, parameters, and names quoted by the SQL macros' own escaping.
"""
from __future__ import annotations

import json

import duckdb

from duckdb_anon import lineage, publishing
from duckdb_anon.lineage import sql_identifier as _identifier, sql_literal as _literal
from duckdb_anon.releases import _freeze, _policy_record
from duckdb_anon.roles import DeclarationError

ASSIGNED = "__anon_rerelease_assigned"  # (person, labels, status): where each source person goes
POOL = "__anon_rerelease_pool"          # the source rows of the people no class took
ROWS = "__anon_rerelease_rows"          # the published people's source rows, QIs replaced by their labels
HELD = "__anon_rerelease_held"          # (person, labels, reason) of the people held back


def _previous(con: duckdb.DuckDBPyConnection, fn: str, table: str, previous: object) -> dict:
    if previous is None:
        previous = lineage.previous_release(con, table)
        if previous is None:
            raise DeclarationError(f"{fn}(): argument 'previous': {table!r} has no release yet (publish the first one with "
                                   "publish_release or publish_mondrian)")
    if not isinstance(previous, str):
        raise DeclarationError(f"{fn}(): argument 'previous' must name a release in anon_releases, got {previous!r}")
    result = con.execute("SELECT * FROM anon_releases WHERE name = ?", [previous])
    columns = [d[0] for d in result.description]
    found = result.fetchall()
    if not found:
        raise DeclarationError(f"{fn}(): argument 'previous': no release {previous!r} in anon_releases")
    row = dict(zip(columns, found[0]))
    if row["source_table"] != table:
        raise DeclarationError(f"{fn}(): argument 'previous': {previous!r} is a release of {row['source_table']!r}, not {table!r}")
    if row["method"] not in ("policy", "mondrian"):  # its rows are not one person each, its labels not classes
        raise DeclarationError(f"{fn}(): argument 'previous': {previous!r} is a release of method {row['method']!r} (k^m, "
                               "many rows per person); a re-release keeps the classes of a 'policy' or 'mondrian' release: "
                               "publish the k^m release again with publish_km(..., allow_differencing=True)")
    if row["person_column"] is None:
        raise DeclarationError(f"{fn}(): argument 'previous': {previous!r} recorded no person column, so its people cannot "
                               "keep their classes (publish it again with id_column=...)")
    paired = con.execute("SELECT any_value(name) FROM anon_table_releases WHERE persons_table = ?", [previous]).fetchall()[0][0]
    if paired is not None:  # its person column is published as a per-release pseudonym, which a re-release cannot make
        raise DeclarationError(f"{fn}(): argument 'previous': {previous!r} is the person table of the multi-table release "
                               f"{paired!r}; publish the tables again with publish_tables")
    return row


def _model(con: duckdb.DuckDBPyConnection, fn: str, table: str, name: str, replace: bool, prior: dict) -> tuple[dict, dict]:
    """The catalog record of the re-release and the Mondrian arguments for its new classes."""
    if prior["method"] == "policy":
        record = _policy_record(con, fn, table, name, replace)
        k, mode, l, l_kind, t, max_suppression = con.execute(
            "SELECT k, mode, l, l_kind, t, max_suppression FROM anon_policies WHERE table_name = ?", [table]).fetchall()[0]
        hierarchies = con.execute("SELECT count(*) FROM anon_column_roles WHERE table_name = ? AND hierarchy IS NOT NULL",
                                  [table]).fetchall()[0][0]
        options = {"mode": mode, "sensitive": record["sensitive"] if l is not None or t is not None else None, "l": l,
                   "l_kind": l_kind, "t": t, "max_suppression": max_suppression, "hierarchies": hierarchies or None}
        if record["qis"] != list(prior["qis"]):
            raise DeclarationError(f"{fn}(): argument 'table': the quasi-identifiers of {table!r} are now {record['qis']}, "
                                   f"the previous release {prior['name']!r} used {list(prior['qis'])}: publish a new lineage")
    else:
        publishing.check_target(con, fn, name, reads=[table], replace=replace)
        arguments = json.loads(prior["arguments"])
        k = arguments["k"]
        options = {o: arguments.get(o) for o in ("mode", "sensitive", "l", "l_kind", "t", "max_suppression", "hierarchies")}
        options["mode"] = options["mode"] or "strict"
        options["l_kind"] = options["l_kind"] or "distinct"
        record = {"source_table": table, "method": "mondrian", "qis": list(prior["qis"]), "k": k,
                  "arguments": prior["arguments"], "sensitive": options["sensitive"]}
    unsupported = [what for what, used in (("hierarchies", options["hierarchies"]), ("t-closeness", options["t"]),
                                           (f"l_kind {options['l_kind']!r}", options["l"] is not None and options["l_kind"] != "distinct"),
                                           ("max_suppression", options["max_suppression"])) if used]
    if unsupported:
        raise DeclarationError(f"{fn}(): argument 'table': a re-release keeps k and distinct l only; the model of "
                               f"{table!r} also asks for {', '.join(unsupported)}")
    record["k"] = k
    return record, options


def publish_rerelease(con: duckdb.DuckDBPyConnection, table: str, name: str, *, previous: str | None = None,
                      replace: bool = False, join_batch: int | None = None) -> dict:
    """Publish release `name` of `table` after release `previous` (default: the latest release of `table`)
    so that intersecting it with any earlier release of the lineage on the people's ids finds no group
    below k. Returns the recorded anon_releases row; the people held back are in anon_release_held.

    `join_batch` (default k): how many new people must fall in an existing class's region at once (with l
    distinct sensitive values) before they join it; fewer wait for Mondrian over the held-back pool."""
    fn = "publish_rerelease"
    if not isinstance(table, str) or not table:
        raise DeclarationError(f"{fn}(): argument 'table' must be a table name, got {table!r}")
    publishing.catalog_key(con)  # the people are matched as the catalog's digests
    prior = _previous(con, fn, table, previous)
    record, options = _model(con, fn, table, name, replace, prior)
    k = record["k"]
    if join_batch is None:
        join_batch = k
    if isinstance(join_batch, bool) or not isinstance(join_batch, int) or join_batch < 1:
        raise DeclarationError(f"{fn}(): argument 'join_batch' must be an integer of at least 1, got {join_batch!r}")
    person = lineage.column_of(con, fn, table, "table", prior["person_column"])
    if not lineage.identifies(con, table, person):
        raise DeclarationError(f"{fn}(): argument 'table': {person!r} no longer identifies the rows of {table!r} "
                               "(a value repeats or is NULL)")
    qis, sensitive, l = record["qis"], options["sensitive"], options["l"]
    quoted = {q: _identifier(con, q) for q in qis}
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {ASSIGNED} AS SELECT * FROM anon_rerelease_assign("
                    f"{_literal(con, table)}, {con.execute('SELECT anon_sql_list(?)', [qis]).fetchall()[0][0]}, "
                    f"{_literal(con, person)}, {_literal(con, prior['name'])}, {int(k)}, "
                    f"{'NULL' if sensitive is None else _literal(con, sensitive)}, {'NULL' if l is None else float(l)}, "
                    f"{int(join_batch)})")
        _new_classes(con, table, person, qis, k, options)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {HELD} AS SELECT person, labels, "
                    f"CASE WHEN status = 'pool' THEN 'held: waiting for enough new people to make classes of k (and l)' ELSE status END "
                    f"AS reason FROM {ASSIGNED} WHERE status NOT IN ('kept', 'joined', 'new class')")
        replaced = ", ".join(f"a.labels[{i + 1}] AS {quoted[q]}" for i, q in enumerate(qis))
        con.execute(f"CREATE OR REPLACE TEMP TABLE {ROWS} AS SELECT s.* REPLACE ({replaced}) FROM query_table({_literal(con, table)}) s "
                    f"JOIN {ASSIGNED} a ON a.person = anon_person_digest(s.{_identifier(con, person)}::VARCHAR) "
                    f"WHERE a.status IN ('kept', 'joined', 'new class')")
        if record["method"] == "policy":
            select_sql = con.execute("SELECT anon_policy_sql(?, person_column := ?, relation := ?)", [table, person, ROWS]).fetchall()[0][0]
        else:  # exactly the columns the previous release published (mondrian()'s `keep` may have left some out)
            columns = [r[0] for r in con.execute("SELECT column_name FROM anon_catalog_columns WHERE table_key = lower(?) "
                                                 "ORDER BY column_index", [prior["name"]]).fetchall()]
            if not columns:
                raise DeclarationError(f"{fn}(): argument 'previous': the table of release {prior['name']!r} no longer exists, "
                                       "so its columns are unknown")
            select_sql = (f"SELECT {_identifier(con, person)} AS __anon_person, "
                          f"{', '.join(_identifier(con, c) for c in columns)} FROM {ROWS}")
        earlier = lineage.earlier_releases(con, table, first=prior["name"])
        return _freeze(con, fn, name, replace, select_sql, [], record, None, person=person, person_argument="table",
                       earlier=earlier, held=HELD)
    finally:
        for temporary in (ASSIGNED, POOL, ROWS, HELD):
            con.execute(f"DROP TABLE IF EXISTS {temporary}")


def _new_classes(con: duckdb.DuckDBPyConnection, table: str, person: str, qis: list[str], k: int, options: dict) -> None:
    """Mondrian over the pool (the new people no class took), when it is large and diverse enough: its
    classes of k get their labels (status 'new class'); otherwise the pool stays held back."""
    who = _identifier(con, person)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {POOL} AS SELECT s.* FROM query_table({_literal(con, table)}) s "
                f"WHERE anon_person_digest(s.{who}::VARCHAR) IN (SELECT person FROM {ASSIGNED} WHERE status = 'pool')")
    size = con.execute(f"SELECT count(*) FROM {POOL}").fetchall()[0][0]
    sensitive, l = options["sensitive"], options["l"]
    if size < k:
        return
    if l is not None and con.execute(f"SELECT count(DISTINCT {_identifier(con, sensitive)}) FROM {POOL}").fetchall()[0][0] < l:
        return
    named = "".join(f", {o} := ?" for o in ("mode", "sensitive", "l") if options[o] is not None)
    params = [POOL, qis, int(k), *[options[o] for o in ("mode", "sensitive", "l") if options[o] is not None]]
    labels = ", ".join(f"{_identifier(con, q)}::VARCHAR" for q in qis)
    con.execute(f"UPDATE {ASSIGNED} SET labels = m.labels, status = 'new class' FROM "
                f"(SELECT anon_person_digest({who}::VARCHAR) AS person, [{labels}] AS labels FROM mondrian(?, ?::VARCHAR[], ?{named})) m "
                f"WHERE {ASSIGNED}.person = m.person", params)
