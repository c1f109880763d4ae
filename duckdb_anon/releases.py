"""Frozen releases: a release computed once into a table of its own, recorded in ``anon_releases``.

A live view over ``anonymized()`` or ``mondrian()`` re-partitions whenever its source changes, and two reads
of it can be intersected (see the SQL macro ``release_differencing``). A frozen release does not move under
its readers. Publishing is all or nothing: the table and its catalog row are written in one transaction,
so a failure leaves neither behind. A release of a source that has earlier releases is audited against
them for differencing first (duckdb_anon.lineage), and refused unless the caller allows the risk.

SQL text here is built from fixed text, parameters, and names quoted by the SQL macros' own escaping.
"""
from __future__ import annotations

import json
from typing import Callable

import duckdb

from duckdb_anon import lineage, publishing
from duckdb_anon.lineage import sql_identifier as _identifier, sql_literal as _literal
from duckdb_anon.roles import DeclarationError


def _measure(con: duckdb.DuckDBPyConnection, name: str, qis: list[str], sensitive: str | None) -> tuple:
    """rows, achieved k and, with one sensitive column, distinct l and t of the frozen table."""
    table = _literal(con, name)
    qi_list = con.execute("SELECT anon_sql_list(?)", [qis]).fetchall()[0][0]
    if sensitive is None:
        rows, k = con.execute(f"SELECT rows, achieved_k FROM release_measures({table}, {qi_list})").fetchall()[0]
        return rows, k, None, None
    rows, k, l, t = con.execute(f"SELECT rows, k, distinct_l, t FROM privacy_measures({table}, {qi_list}, "
                                f"sensitive := {_literal(con, sensitive)})").fetchall()[0]
    return rows, k, l, t


def _freeze(con: duckdb.DuckDBPyConnection, fn: str, name: str, replace: bool, select_sql: str, params: list,
            record: dict, ncp_sql: str | None, *, person: str | None = None, person_argument: str = "id_column",
            allow_differencing: bool = False, earlier: list[str] | None = None, held: str | None = None,
            measure=_measure, also: Callable[[], list | None] | None = None, unmatched: str | None = None,
            reads: list[str | None] | None = None, log_name: str | None = None) -> dict:
    """CREATE the table from `select_sql`, measure it, audit it against the earlier releases of its source
    (lineage.audit: every one; the latest, or `earlier`[0], is recorded as previous_release), record it: one
    transaction. With `person`, `select_sql` puts the person column first as __anon_person, and the
    release's people go to anon_release_people.
    `held`: a temporary table (person, labels, reason) of the people a re-release held back.
    `measure(con, name, qis, sensitive)`: rows, achieved k, l and t of the frozen table (a model's own).
    `also`: more statements of the same transaction (a multi-table release writes its other table and
    catalog row), returning the other tables it wrote. `unmatched`: why the release has no person column, for
    the audit's refusal. `reads`: every relation the release reads (default: the source table), which the
    target may not be; `log_name`: the release's name in the publish log (default `name`).
    The target, the storage order, the log and the transaction are duckdb_anon.publishing's."""
    target = _identifier(con, name)
    publishing.catalog_key(con)
    leaf = publishing.check_target(con, fn, name, reads=reads or [record["source_table"]], replace=replace)
    if earlier is None:
        earlier = lineage.earlier_releases(con, record["source_table"])
    try:
        with publishing.transaction(con, fn, f"writing release {name!r}"):
            if person is None:
                con.execute(f"CREATE OR REPLACE TABLE {target} AS {publishing.ordered_sql(select_sql)}", params)
            else:
                con.execute(f"CREATE OR REPLACE TEMP TABLE {lineage.STAGED} AS {select_sql}", params)
                con.execute(f"CREATE OR REPLACE TABLE {target} AS "
                            f"{publishing.ordered_sql(f'SELECT * EXCLUDE (__anon_person) FROM {lineage.STAGED}')}")
                lineage.stage_people(con, fn, record["qis"], person_argument)
            rows, achieved_k, achieved_l, achieved_t = measure(con, name, record["qis"], record.get("sensitive"))
            ncp = con.execute(ncp_sql.replace("{release}", _literal(con, name))).fetchall()[0][0] if ncp_sql else None
            found = lineage.audit(con, fn, name, record["source_table"], earlier, record.get("k"), person, allow_differencing,
                                  unmatched)
            if found["previous_release"] == name:  # a replaced release: the lineage goes on from what it followed
                found["previous_release"] = con.execute("SELECT previous_release FROM anon_releases WHERE name = ?",
                                                        [name]).fetchall()[0][0]
            con.execute("DELETE FROM anon_releases WHERE name = ?", [name])  # the current record; the log keeps every one
            row = [name, record["source_table"], record["method"], record.get("fingerprint"), record.get("arguments"),
                   rows, record["qis"], record.get("k"), achieved_k, record.get("sensitive"), achieved_l, achieved_t, ncp,
                   person, found["previous_release"], found["differencing_below_k"], found["differencing_singled_out"],
                   found["differencing_warning"]]
            con.execute("INSERT INTO anon_releases (name, source_table, method, fingerprint, arguments, created_at, rows, qis, "
                        "k, achieved_k, sensitive, achieved_l, achieved_t, ncp_percent, person_column, previous_release, "
                        "differencing_below_k, differencing_singled_out, differencing_warning) "
                        "VALUES (?, ?, ?, ?, ?, current_timestamp::TIMESTAMP, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            con.execute("DELETE FROM anon_release_people WHERE release_name = ?", [name])
            con.execute("DELETE FROM anon_release_held WHERE release_name = ?", [name])
            if person is not None:
                con.execute(f"INSERT INTO anon_release_people SELECT ?, person, labels FROM {lineage.PEOPLE}", [name])
            if held is not None:
                con.execute(f"INSERT INTO anon_release_held SELECT ?, person, labels, reason FROM {held}", [name])
            written = [leaf]
            if also is not None:
                written += also() or []
            columns = ["name", "source_table", "method", "fingerprint", "arguments", "rows", "qis", "k", "achieved_k",
                       "sensitive", "achieved_l", "achieved_t", "ncp_percent", "person_column", "previous_release",
                       "differencing_below_k", "differencing_singled_out", "differencing_warning"]
            publishing.log(con, fn, log_name or name, tables=written, reads=reads or [record["source_table"]],
                           record=dict(zip(columns, row)))
    finally:
        for temporary in lineage.TEMPORARY:
            con.execute(f"DROP TABLE IF EXISTS {temporary}")
    result = con.execute("SELECT * FROM anon_releases WHERE name = ?", [name])
    columns = [d[0] for d in result.description]
    return dict(zip(columns, result.fetchall()[0]))


def _policy_record(con: duckdb.DuckDBPyConnection, fn: str, table: object, name: object, replace: bool) -> dict:
    """The catalog record of release `name` of `table` under its declared policy, or an error naming the argument."""
    if not isinstance(table, str) or not table:
        raise DeclarationError(f"{fn}(): argument 'table' must be a table name, got {table!r}")
    publishing.check_target(con, fn, name, reads=[table], replace=replace)
    problem = con.execute("SELECT problem FROM anon_policy_problems() WHERE table_name = ?", [table]).fetchall()
    if problem:
        raise DeclarationError(f"{fn}(): argument 'table': {problem[0][0]}")
    declared = con.execute("SELECT count(*) FROM anon_policies WHERE table_name = ?", [table]).fetchall()[0][0]
    if not declared:
        raise DeclarationError(f"{fn}(): argument 'table': {table!r} has no policy in anon_policies (declare its roles first)")
    # the release is built from anon_policy_sql(), so it refuses what anonymized() refuses: declarations changed
    # since they were applied (anonymized()'s branch for the table carries the fingerprint it was made from)
    current = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'anonymized' "
                          "AND contains(macro_definition, anon_policy_fingerprint(?))", [table]).fetchall()[0][0]
    if not current:
        raise DeclarationError(f"{fn}(): argument 'table': the declarations of {table!r} changed since they were applied: run "
                               "duckdb_anon.apply_policies(con) (or execute the text of SELECT anon_compile_policies())")
    qis = [r[0] for r in con.execute("SELECT column_name FROM anon_column_roles WHERE table_name = ? AND role = 'quasi_identifier' "
                                     "ORDER BY column_name", [table]).fetchall()]
    sensitive = [r[0] for r in con.execute("SELECT column_name FROM anon_column_roles WHERE table_name = ? AND role = 'sensitive'",
                                           [table]).fetchall()]
    k = con.execute("SELECT k FROM anon_policies WHERE table_name = ?", [table]).fetchall()[0][0]
    return {"source_table": table, "method": "policy", "qis": qis, "k": k,
            "fingerprint": con.execute("SELECT anon_policy_fingerprint(?)", [table]).fetchall()[0][0],
            "sensitive": sensitive[0] if len(sensitive) == 1 else None}


def publish_release(con: duckdb.DuckDBPyConnection, table: str, name: str, *, replace: bool = False,
                    id_column: str | None = None, allow_differencing: bool = False) -> dict:
    """Freeze ``anonymized(table)`` (the declared policy's release) into table `name` and record it in
    ``anon_releases``; returns the recorded row. NCP is measured when the policy pseudonymizes an
    identifier (rows are matched on it); otherwise ncp_percent is NULL.

    Which person each row is (`id_column`, else a declared identifier whose values identify the rows) is
    recorded in ``anon_release_people``. When `table` has an earlier release, the two are audited for
    differencing and publishing is refused if the intersection leaves anyone below k or singles anyone out,
    or if it cannot be audited; ``allow_differencing=True`` publishes anyway and records the warning."""
    fn = "publish_release"
    record = _policy_record(con, fn, table, name, replace)
    qis = record["qis"]
    key_name = con.execute("SELECT key_name FROM anon_policies WHERE table_name = ?", [table]).fetchall()[0][0]
    person = lineage.person_column(con, fn, table, id_column)
    ids = [r[0] for r in con.execute("SELECT column_name FROM anon_column_roles WHERE table_name = ? AND role = 'identifier' "
                                     "AND pseudonymize ORDER BY column_name", [table]).fetchall()]
    ncp_sql = None
    if ids:  # the original, seen through the same pseudonyms, matches the release row for row
        source = con.execute("SELECT anon_sql_identifier(?)", [table]).fetchall()[0][0] if "." not in table else None
        if source is not None:
            con.execute(f"CREATE OR REPLACE TEMP VIEW __anon_publish_original AS SELECT * REPLACE (anon_pseudonym("
                        f"{_identifier(con, ids[0])}, {_literal(con, key_name)}) AS {_identifier(con, ids[0])}) FROM {source}")
            hierarchies = con.execute("SELECT map_from_entries(list((column_name, hierarchy))) FROM anon_column_roles "
                                      "WHERE table_name = ? AND hierarchy IS NOT NULL", [table]).fetchall()[0][0]
            hierarchy_arg = ""
            if hierarchies:
                entries = ", ".join(f"{_literal(con, q)}: {_literal(con, h)}" for q, h in hierarchies.items())
                hierarchy_arg = f", hierarchies := MAP {{{entries}}}"
            qi_list = con.execute("SELECT anon_sql_list(?)", [qis]).fetchall()[0][0]
            ncp_sql = (f"SELECT ncp_percent FROM ncp({{release}}, '__anon_publish_original', {qi_list}, "
                       f"{_literal(con, ids[0])}{hierarchy_arg})")
    select_sql, params = "SELECT * FROM anonymized(?)", [table]
    if person is not None:  # the same release, with the person column in front (anon_policy_sql's own text)
        select_sql, params = con.execute("SELECT anon_policy_sql(?, person_column := ?)", [table, person]).fetchall()[0][0], []
    try:
        return _freeze(con, fn, name, replace, select_sql, params, record, ncp_sql, person=person,
                       allow_differencing=allow_differencing)
    finally:
        con.execute("DROP VIEW IF EXISTS __anon_publish_original")


def check_not_a_release_view(con: duckdb.DuckDBPyConnection, fn: str, argument: str, table: str) -> None:
    """Refuse a view over mondrian() (or a macro expanding the same ones, anon_view_release_macro): DuckDB
    cannot expand mondrian() inside itself and says only "infinite recursion detected"."""
    found = con.execute("SELECT anon_view_release_macro(?)", [table]).fetchall()[0][0]
    if found is not None:
        raise DeclarationError(f"{fn}(): argument {argument!r}: {table!r} is a view over {found}(), which DuckDB cannot "
                               f"expand inside mondrian() (it reports infinite recursion); materialize it first: "
                               f"CREATE TABLE ... AS SELECT * FROM {table}")


def publish_mondrian(con: duckdb.DuckDBPyConnection, table: str, name: str, qis: list[str], k: int, *,
                     replace: bool = False, id_column: str | None = None, keep: list[str] | None = None,
                     allow_differencing: bool = False, **options) -> dict:
    """Freeze ``mondrian(table, qis, k, keep := keep, **options)`` into table `name` and record it in
    ``anon_releases``; returns the recorded row. `keep` lists the non-QI columns to publish (mondrian()'s
    rule); without it every column passes through, identifiers included. With `id_column` (which `keep`
    must then list), NCP is measured and the people are recorded; an earlier release of `table` is audited
    as :func:`publish_release` does."""
    fn = "publish_mondrian"
    if keep is not None:
        if id_column is not None and isinstance(keep, (list, tuple)) and id_column.lower() not in {str(c).lower() for c in keep}:
            raise DeclarationError(f"{fn}(): argument 'id_column': {id_column!r} is not published; NCP matches rows "
                                   "on it, so list it in keep")
        options["keep"] = list(keep) if isinstance(keep, (list, tuple)) else keep
    if not isinstance(table, str) or not table:
        raise DeclarationError(f"{fn}(): argument 'table' must be a table name, got {table!r}")
    if not isinstance(qis, (list, tuple)) or not qis or not all(isinstance(q, str) for q in qis):
        raise DeclarationError(f"{fn}(): argument 'qis' must be a non-empty list of column names, got {qis!r}")
    check_not_a_release_view(con, fn, "table", table)
    publishing.check_target(con, fn, name, reads=publishing.reads_of(table, options.get("hierarchies")), replace=replace)
    names = sorted(options)
    named = "".join(f", {option} := ?" for option in names)  # option names are checked by mondrian() itself
    for option in names:
        if not option.isidentifier():
            raise DeclarationError(f"{fn}(): argument {option!r} is not a mondrian() argument")
    select_sql = f"SELECT * FROM mondrian(?, ?::VARCHAR[], ?{named})"
    params = [table, list(qis), k, *[options[o] for o in names]]
    arguments = json.dumps({"table_name": table, "qis": list(qis), "k": k, **options}, default=str)
    ncp_sql = None
    if id_column is not None:
        qi_list = con.execute("SELECT anon_sql_list(?::VARCHAR[])", [list(qis)]).fetchall()[0][0]
        ncp_sql = f"SELECT ncp_percent FROM ncp({{release}}, {_literal(con, table)}, {qi_list}, {_literal(con, id_column)})"
    record = {"source_table": table, "method": "mondrian", "qis": list(qis), "k": k, "arguments": arguments,
              "sensitive": options.get("sensitive")}
    person = None if id_column is None else lineage.column_of(con, fn, table, "id_column", id_column)
    if person is not None:
        select_sql = f"SELECT {_identifier(con, person)} AS __anon_person, * FROM mondrian(?, ?::VARCHAR[], ?{named})"
    return _freeze(con, fn, name, replace, select_sql, params, record, ncp_sql, person=person,
                   allow_differencing=allow_differencing)


KM_UNMATCHED = "a k^m release holds many rows per person, which the audit (one row per person) cannot match"


def publish_km(con: duckdb.DuckDBPyConnection, table: str, name: str, *, items: list[str], k: int, m: int,
               person: str | None = None, hierarchies: dict[str, str] | None = None, keep: list[str] | None = None,
               seed: int = 0, replace: bool = False, allow_differencing: bool = False, person_output: str = "pseudonym",
               key_name: str | None = None) -> dict:
    """Freeze the k^m-anonymous release ``duckdb_anon.km.km_anonymize(con, table, ...)`` into table `name` and
    record it in ``anon_releases`` (method 'km', the call in `arguments`); returns the recorded row.

    achieved_k is the fewest people holding an itemset of up to m released items (km_check; NULL for m > 3),
    ncp_percent the information loss of km_measures in percent. A person holds many rows, which the
    differencing audit cannot match (it needs one row per person): a source with an earlier release is
    refused unless ``allow_differencing=True``, and the catalog records that the audit did not run.

    `person_output` and `key_name` as km_anonymize takes them: by default the person column is the
    per-release pseudonym of release `name` under the pseudonym key `key_name`; 'raw' publishes the ids as
    they are (a risk you take: they link the release to every table keyed by them)."""
    from duckdb_anon.km import km_anonymize
    from duckdb_anon.km.output import check_person_output, person_output_sql

    fn = "publish_km"
    publishing.check_target(con, fn, name, reads=publishing.reads_of(table, hierarchies), replace=replace)
    output = check_person_output(con, fn, person_output, key_name, name)
    staged = "__anon_km_publish"
    con.execute(f"DROP TABLE IF EXISTS temp.main.{staged}")
    stats: dict = {}
    km_anonymize(con, table, person=person, items=items, k=k, m=m, hierarchies=hierarchies, into=f"temp.main.{staged}",
                 seed=seed, keep=keep, stats=stats, person_output="raw", _fn=fn)  # staged raw, published as `output` says
    arguments = json.dumps({"table_name": table, "person": stats["person"], "items": list(items), "k": k, "m": m,
                            "hierarchies": hierarchies, "keep": keep, "seed": seed, "person_output": output.mode,
                            "key_name": output.key_name})
    item_list = con.execute("SELECT anon_sql_list(?::VARCHAR[])", [list(items)]).fetchall()[0][0]
    # measured on the staged rows: the pseudonym maps people one to one, and a dropped column leaves none to count by
    achieved = None if m > 3 else con.execute(
        f"SELECT min_support FROM km_check('temp.main.{staged}', {_literal(con, stats['person'])}, {item_list}, ?, ?)",
        [k, m]).fetchall()[0][0]

    def measure(con, release, qis, sensitive):
        rows = con.execute(f"SELECT count(*) FROM {_identifier(con, release)}").fetchall()[0][0]
        return rows, achieved, None, None

    hierarchy_arg = ""
    if hierarchies:
        entries = ", ".join(f"{_literal(con, q)}: {_literal(con, h)}" for q, h in hierarchies.items())
        hierarchy_arg = f", hierarchies := MAP {{{entries}}}"
    ncp_sql = f"SELECT 100 * information_loss FROM km_measures({_literal(con, table)}, {{release}}, {item_list}{hierarchy_arg})"
    record = {"source_table": table, "method": "km", "qis": list(items), "k": k, "arguments": arguments}
    try:
        select_sql, params = person_output_sql(stats["person"], output, f"SELECT * FROM temp.main.{staged}")
        return _freeze(con, fn, name, replace, select_sql, params, record, ncp_sql,
                       allow_differencing=allow_differencing, measure=measure, unmatched=KM_UNMATCHED)
    finally:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{staged}")
