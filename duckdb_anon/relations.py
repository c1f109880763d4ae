"""What a relation reads: the base tables behind a table name, a view (views over views too) or a query,
and which base columns one of its columns copies unchanged.

Rules that follow where rows come from (whose people a view shows, whether a table of "public" values was
made from private rows) need this, and a view's name says nothing of it. DuckDB keeps each view's SQL in
duckdb_views(); sqlglot parses it. Names resolve as DuckDB resolves them: case-insensitively, temporary
objects first, then the current schema, the search path and the system catalog; ``a.b`` is schema a or
database a (both: ambiguous, as DuckDB says); CTEs are not tables. What cannot be seen through (a table
macro, a name that is no table or view, SQL sqlglot cannot parse) raises RelationError rather than being
taken to read nothing: callers use the answer to refuse, so not knowing must not look like "reads no table".

The work is split so that it can also run inside a query: the SQL macro ``anon_relation_catalog()``
(sql/01_relation_catalog.sql) reads the catalog as one JSON text, and :class:`Catalog` answers from that text alone (a Python UDF gets it as an argument).
"""
from __future__ import annotations

import json

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

Key = tuple[str, str, str]  # (catalog, schema, table), lower-cased



class RelationError(ValueError):
    """A relation whose base tables cannot be told: refuse what reads it."""


class Catalog:
    """The objects of one database connection, from the JSON of ``anon_relation_catalog()``."""

    def __init__(self, text: str):
        data = json.loads(text)
        self.database, self.schema = data["database"].lower(), data["schema"].lower()
        self.tables = {tuple(p.lower() for p in row) for row in data["tables"]}
        self.views = {tuple(p.lower() for p in row[:3]): row[3] for row in data["views"]}
        self.columns: dict[Key, list[str]] = {}
        for *key, column in data["columns"]:
            self.columns.setdefault(tuple(p.lower() for p in key), []).append(column.lower())
        self.macros = set(data["macros"])
        self.databases = {d.lower() for d in data["databases"]}
        path = [p.strip().strip('"').lower() for p in (data["search_path"] or "").split(",") if p.strip()]
        self.path = [("temp", "main"), (self.database, self.schema)]
        self.path += [tuple(p.split(".", 1)) if "." in p else (self.database, p) for p in path]
        self.path += [("system", "main"), ("system", "pg_catalog")]
        self._parsed: dict[Key, tuple[exp.Expression, list[str] | None]] = {}

    def exists(self, key: Key) -> bool:
        return key in self.tables or key in self.views

    def resolve(self, parts: list[str]) -> Key:
        """The object a (possibly qualified) name means, as DuckDB binds it."""
        parts = [p.lower() for p in parts]
        if len(parts) == 3:
            candidates = [tuple(parts)]
        elif len(parts) == 2:
            schema_hits = [(c, parts[0], parts[1]) for c, _ in dict.fromkeys(self.path)]
            schemas = {(k[0], k[1]) for k in self.tables | set(self.views)}
            if parts[0] in self.databases and any((c, s) in schemas for c, s, _ in schema_hits):
                raise RelationError(f"the name {'.'.join(parts)!r} is ambiguous: {parts[0]!r} is a database and a schema")
            candidates = [(parts[0], "main", parts[1])] if parts[0] in self.databases else schema_hits
        else:
            candidates = [(c, s, parts[0]) for c, s in self.path]
        for key in candidates:
            if self.exists(key):
                return key
        raise RelationError(f"no table or view named {'.'.join(parts)!r}")

    def view(self, key: Key) -> tuple[exp.Expression, list[str] | None]:
        """A view's query and its column names when the view renames them (``CREATE VIEW v(a, b) AS``)."""
        if key not in self._parsed:
            text = self.views[key]
            try:
                create = sqlglot.parse_one(text, read="duckdb")
            except sqlglot.errors.ParseError as err:
                raise RelationError(f"cannot read the SQL of view {'.'.join(key)!r}: {err}") from None
            if not isinstance(create, exp.Create) or not isinstance(create.expression, exp.Query):
                raise RelationError(f"cannot read the SQL of view {'.'.join(key)!r}")
            names = [e.name.lower() for e in create.this.expressions] if isinstance(create.this, exp.Schema) else None
            self._parsed[key] = (create.expression, names)
        query, names = self._parsed[key]
        return query.copy(), names


def parse_relation(relation: str) -> exp.Expression:
    """`relation` as sqlglot reads it: a Query, or a Table for a (qualified) name."""
    if not isinstance(relation, str) or not relation.strip():
        raise RelationError(f"a relation is a table name or a query, got {relation!r}")
    try:
        tree = sqlglot.parse_one(relation, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        raise RelationError(f"cannot read {relation!r}: {err}") from None
    while isinstance(tree, exp.Subquery) and not tree.alias:
        tree = tree.this
    if isinstance(tree, exp.Query):
        return tree
    if isinstance(tree, exp.Column):
        return exp.to_table(relation, dialect="duckdb")
    raise RelationError(f"{relation!r} is neither a table name nor a query")


def _is_cte(table: exp.Table) -> bool:
    """Whether `table` names a CTE in scope: one of an enclosing WITH, not the CTE being defined (unless
    the WITH is recursive)."""
    name, node, child = table.name.lower(), table.parent, table
    while node is not None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if with_ is not None:
            for cte in with_.expressions:
                if cte.alias.lower() == name and (cte is not child or with_.args.get("recursive")):
                    return True
        child, node = node, node.parent
    return False


def _function_name(call: exp.Expression) -> str:
    return (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()


def _literal(call: exp.Expression, fn: str) -> str:
    args = call.expressions if isinstance(call, exp.Anonymous) else [call.this]
    if not args or not isinstance(args[0], exp.Literal) or not args[0].is_string:
        raise RelationError(f"{fn}() with an argument other than a string literal: cannot tell what it reads")
    return args[0].this


def _expand(catalog: Catalog, tree: exp.Expression) -> exp.Expression:
    """`tree` with every table reference rewritten to its fully qualified object, query_table('t') to t and
    query('...') to its query; a file read through a replacement scan reads no table and is left as it is."""
    for table in list(tree.find_all(exp.Table)):
        if isinstance(table.this, exp.Identifier):
            if _is_cte(table) and not table.db:
                continue
            try:
                key = catalog.resolve([p.name for p in table.parts])
            except RelationError:
                if table.this.quoted and not table.db and ("." in table.name or "/" in table.name):
                    continue  # FROM 'file.csv': a replacement scan of a file
                raise
            table.set("this", exp.to_identifier(key[2], quoted=True))
            table.set("db", exp.to_identifier(key[1], quoted=True))
            table.set("catalog", exp.to_identifier(key[0], quoted=True))
            continue
        name = _function_name(table.this)
        if name == "query_table":
            inner = parse_relation(_literal(table.this, name))
        elif name == "query":
            inner = parse_relation(_literal(table.this, name))
        elif name in catalog.macros:
            raise RelationError(f"reads the table macro {name}(): cannot tell which tables it reads")
        else:
            continue  # a built-in table function: files, series, metadata, none of the database's tables
        inner = _expand(catalog, inner)
        table.replace(inner.subquery(table.alias or None) if isinstance(inner, exp.Query)
                      else exp.alias_(inner, table.alias, table=True) if table.alias else inner)
    return tree


def _objects(tree: exp.Expression) -> list[Key]:
    return [tuple(p.name for p in t.parts) for t in tree.find_all(exp.Table)
            if isinstance(t.this, exp.Identifier) and t.catalog]


def base_tables_of(catalog: Catalog, relation: str) -> list[Key]:
    """:func:`base_tables` over a catalog already read."""
    seen: set[Key] = set()
    found: list[Key] = []
    pending = _objects(_expand(catalog, parse_relation(relation)))
    while pending:
        key = pending.pop(0)
        if key in seen:
            continue
        seen.add(key)
        if key in catalog.tables:
            found.append(key)
        elif catalog.views.get(key) is not None:  # DuckDB's own views (sql NULL) read only its metadata
            pending += _objects(_expand(catalog, catalog.view(key)[0]))
    return sorted(found)


def base_tables(con, relation: str) -> list[Key]:
    """The base tables `relation` (a table or view name, qualified or not, or a query) reads, through views
    over views, as (catalog, schema, table), lower-cased. Raises RelationError when it cannot tell."""
    return base_tables_of(Catalog(con.execute("SELECT anon_relation_catalog()").fetchall()[0][0]), relation)


def _schema(catalog: Catalog, tree: exp.Expression) -> dict:
    schema: dict = {}
    for key in _objects(tree):
        schema.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = {c: "VARCHAR" for c in catalog.columns.get(key, [])}
    return schema


def _from_items(node: exp.Expression) -> list[exp.Expression]:
    """The relations a SELECT joins: its FROM and JOINs, through DuckDB's parenthesized ``(a JOIN b)``."""
    items = []
    for item in ([node.args["from_"].this] if node.args.get("from_") else []) + [j.this for j in node.args.get("joins") or []]:
        if isinstance(item, exp.Subquery) and not item.alias and not isinstance(item.this, exp.Query):
            items += _from_items(exp.Select(from_=exp.From(this=item.this), joins=item.this.args.get("joins")))
        else:
            items.append(item)
            items += [j.this for j in item.args.get("joins") or []] if isinstance(item, exp.Table) else []
    return items


def _trace(catalog: Catalog, query: exp.Expression, column: str | int, ctes: dict, depth: int) -> set | None:
    """The base (catalog, schema, table, column)s that `column` (a name or a position) of `query` copies, or
    None when any step computes it (an expression, an aggregate, a window: not a copy)."""
    if depth > 64:
        raise RelationError("views nest too deeply")
    if isinstance(query, exp.Subquery):
        return _trace(catalog, query.this, column, ctes, depth + 1)
    ctes = dict(ctes)
    if query.args.get("with_") is not None:
        for cte in query.args["with_"].expressions:
            ctes[cte.alias.lower()] = cte.this
    if isinstance(query, exp.SetOperation):
        if isinstance(column, str):
            names = [e.alias_or_name.lower() for e in query.selects]
            if column not in names:
                return None
            column = names.index(column)
        branches = [query.this, query.expression] if isinstance(query, exp.Union) else [query.this]
        found: set = set()
        for branch in branches:
            part = _trace(catalog, branch, column, ctes, depth + 1)
            if part is None:
                return None
            found |= part
        return found
    if not isinstance(query, exp.Select):
        return None
    selects = query.expressions
    if isinstance(column, int):
        picked = selects[column] if column < len(selects) else None
    else:
        hits = [e for e in selects if e.alias_or_name.lower() == column]
        picked = hits[0] if len(hits) == 1 else None
    if picked is None:
        return None
    expression = picked.unalias()
    refs = expression.expressions if isinstance(expression, exp.Coalesce) else []  # USING (id): coalesce of copies
    refs = [expression.this, *refs] if isinstance(expression, exp.Coalesce) else [expression]
    if not all(isinstance(r, exp.Column) and r.table for r in refs):
        return None
    sources = {source.alias_or_name.lower(): source for source in _from_items(query)}
    found = set()
    for ref in refs:
        source = sources.get(ref.table.lower())
        if isinstance(source, exp.Subquery):
            part = _trace(catalog, source.this, ref.name.lower(), ctes, depth + 1)
        elif isinstance(source, exp.Table) and not source.catalog and source.name.lower() in ctes:
            part = _trace(catalog, ctes[source.name.lower()], ref.name.lower(), ctes, depth + 1)
        elif isinstance(source, exp.Table) and source.catalog:
            part = _object_sources(catalog, tuple(p.name for p in source.parts), ref.name.lower(), depth + 1)
        else:
            return None
        if part is None:
            return None
        found |= part
    return found


def _object_sources(catalog: Catalog, key: Key, column: str, depth: int) -> set | None:
    if key in catalog.tables:
        return {(*key, column)} if column in catalog.columns.get(key, []) else None
    if catalog.views.get(key) is None:
        return None
    query, names = catalog.view(key)
    return _sources(catalog, query, names.index(column) if names and column in names else column, depth)


def _sources(catalog: Catalog, query: exp.Expression, column: str | int, depth: int = 0) -> set | None:
    tree = _expand(catalog, query)
    try:
        tree = qualify(tree, schema=_schema(catalog, tree), dialect="duckdb", validate_qualify_columns=False)
    except sqlglot.errors.SqlglotError as err:
        raise RelationError(f"cannot follow the columns of {query.sql('duckdb')!r}: {err}") from None
    return _trace(catalog, tree, column, {}, depth)


def column_sources_of(catalog: Catalog, relation: str, column: str) -> set | None:
    """The base columns (catalog, schema, table, column) that `column` of `relation` copies unchanged
    (several through a UNION or a join's USING), or None when the relation computes it."""
    tree = parse_relation(relation)
    if isinstance(tree, exp.Table):
        return _object_sources(catalog, catalog.resolve([p.name for p in tree.parts]), column.lower(), 0)
    return _sources(catalog, tree, column.lower())


def columns_of(catalog: Catalog, relation: str) -> list[str]:
    """The column names of a table or view (lower-cased); [] for a query (its columns are not catalogued)."""
    tree = parse_relation(relation)
    return catalog.columns.get(catalog.resolve([p.name for p in tree.parts]), []) if isinstance(tree, exp.Table) else []
