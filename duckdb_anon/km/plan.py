"""The SQL of k^m-anonymity, written once and generated for each engine's dialect by sqlglot.

A person's record is the set of their rows' items; an item is the tuple of the item columns' values as
text (a NULL value is a leaf of its own, directly under the root). Each item column has a hierarchy: a
path per leaf from the leaf to the root (a column without one has the path [value, root '*']).

Every query is SQL text over internal names only, parsed as DuckDB SQL and written in the engine's dialect.
User input never enters the text: the person column appears as ``__person``, item column c as
``__item_<c>``, published columns as ``__col_<i>`` and the source as ``__anon_source``, all replaced in the
parsed tree by quoted identifiers; k, m, levels and the seed are validated integers.

The rules (the driver runs them in this order):

- generalization (itemsets of size 1): composite leaves climb a ladder of level vectors, one column one
  level at a time, the last item column first; at each rung the leaves still pending are labelled, and a
  label is released for them when at least k people hold it among the pending rows. A label with every
  column at its root tells nothing, so leaves still pending there are suppressed. Only the pending rows
  count, so a released label is held by k people who are released with exactly that label, and one rare
  leaf climbs alone instead of dragging its siblings up;
- suppression (itemsets of size 1..m, level-wise as Apriori): the people's label sets are counted per
  itemset with GROUP BY; every itemset held by fewer than k people loses, in the records of the people
  holding it, its member held by the fewest people (ties: the smaller hash of label id and seed). Removing
  can make other itemsets rare, so the sizes 1..m are repeated until a pass removes nothing.
"""
from __future__ import annotations

from sqlglot import exp

from duckdb_anon.engines.base import render


class Plan:
    """The queries of one k^m run over `items` item columns, in one dialect."""

    def __init__(self, items: int, k: int, dialect: str, seed: int = 0, hierarchical: tuple[bool, ...] = ()):
        self.c, self.k, self.dialect, self.seed = int(items), int(k), dialect, int(seed)
        # per item column: whether a hierarchy relation holds its paths (else: [value, '*'])
        self.hierarchical = tuple(hierarchical) or (False,) * self.c

    # ---- rendering -------------------------------------------------------------------------------------
    def sql(self, text: str, source: exp.Expression | None = None, person: str | None = None,
            items: list[str] | None = None, columns: list[str] | None = None, **tables: str) -> str:
        """Parse DuckDB-dialect `text`, put the user's columns and the tables in, write the engine's dialect."""
        def column(name):
            if name == "__person":
                return person
            if name.startswith("__item_") and items is not None:
                return items[int(name[7:])]
            if name.startswith("__col_") and columns is not None:
                return columns[int(name[6:])]
            return None

        return render(text, self.dialect, column, source, **tables)

    def _each(self, template: str, sep: str = ", ", count: int | None = None) -> str:
        return sep.join(template.format(c=c) for c in range(self.c if count is None else count))

    def _same(self, a: str, b: str, prefix: str = "v") -> str:
        return self._each(f"{a}.{prefix}{{c}} IS NOT DISTINCT FROM {b}.{prefix}{{c}}", " AND ")

    # ---- the records ---------------------------------------------------------------------------------
    def _rows(self) -> str:
        return (f"SELECT __person AS p, {self._each('CAST(__item_{c} AS VARCHAR) AS v{c}')} "
                f"FROM __anon_source WHERE __person IS NOT NULL")

    def leaves(self, source: exp.Expression, person: str, items: list[str]) -> str:
        """The distinct composite items (v<c>: the values as text), numbered `lid` in value order."""
        values = self._each("v{c}")
        return self.sql(f"SELECT {values}, row_number() OVER (ORDER BY {self._each('v{c} NULLS FIRST')}) AS lid "
                        f"FROM (SELECT DISTINCT {values} FROM ({self._rows()}))", source=source, person=person, items=items)

    def holders(self, source: exp.Expression, person: str, items: list[str], leaves: str) -> str:
        """One row per (person p, composite item lid) the source holds."""
        return self.sql(f"SELECT DISTINCT r.p, l.lid FROM ({self._rows()}) r JOIN leaves l ON {self._same('r', 'l')}",
                        source=source, person=person, items=items, leaves=leaves)

    def paths(self, leaves: str, hierarchy: str | None) -> str:
        """Per composite item, each column's path from its value to the root (path<c>; NULL: the value is
        missing from the column's hierarchy). `hierarchy`: rows (col, leaf, path) of the hierarchical columns
        (col: the position in the item columns); a column without one has the path [value, '*']."""
        joins = " ".join(f"LEFT JOIN hierarchy h{c} ON h{c}.col = {c} AND h{c}.leaf IS NOT DISTINCT FROM l.v{c}"
                         for c in range(self.c) if self.hierarchical[c])
        path = ", ".join(f"h{c}.path AS path{c}" if self.hierarchical[c] else f"[l.v{c}, '*'] AS path{c}" for c in range(self.c))
        return self.sql(f"SELECT l.lid, {self._each('l.v{c}')}, {path} FROM leaves l {joins}",
                        leaves=leaves, **({"hierarchy": hierarchy} if hierarchy else {}))

    def missing(self, paths: str) -> str:
        """[column position, value] of the first item value its column's hierarchy lacks, or NULL."""
        cases = " UNION ALL ".join(f"SELECT {c} AS col, v{c} AS v FROM paths WHERE path{c} IS NULL" for c in range(self.c))
        return self.sql(f"SELECT (SELECT [CAST(col AS VARCHAR), v] FROM ({cases}) ORDER BY col, v LIMIT 1)", paths=paths)

    def heights(self, paths: str) -> str:
        """Per item column, the levels above its deepest leaf."""
        return self.sql("SELECT [" + self._each("coalesce(max(len(path{c})) - 1, 1)") + "] FROM paths", paths=paths)

    # ---- generalization ----------------------------------------------------------------------------------
    def _label(self, c: int) -> str:
        return f"path{c}[least(step.l{c}, len(path{c}) - 1) + 1]"

    def step(self, levels: tuple[int, ...], rung: int, round_: int, threshold: int) -> str:
        """The one-row relation a rung reads (its levels l<c>, its number, the round, the holders a label
        needs): the rung's query stays the same text, generated once."""
        return self.sql(", ".join([*(f"{int(lv)} AS l{c}" for c, lv in enumerate(levels)), f"{int(rung)} AS rung",
                                   f"{int(round_)} AS round", f"{int(threshold)} AS threshold"]).join(["SELECT ", ""]))

    def rung(self, paths: str, holders: str, gen: str, floors: str, step: str) -> str:
        """The pending composite items that the rung `step` releases: their labels g<c>, when at least k
        people hold the label among the pending items, and not every column is at its root. An item whose
        label was taken back in an earlier round waits for the rung above the one that released it (`floors`)."""
        labels = ", ".join(f"{self._label(c)} AS g{c}" for c in range(self.c))
        at_root = " AND ".join(f"step.l{c} >= len(path{c}) - 1" for c in range(self.c))
        groups = self._each("g{c}")
        return self.sql(f"""
            WITH lab AS (SELECT lid, {labels}, {at_root} AS at_root FROM paths CROSS JOIN step
                         LEFT JOIN (SELECT lid, max(floor) AS floor FROM floors GROUP BY lid) f USING (lid)
                         WHERE lid NOT IN (SELECT lid FROM gen) AND coalesce(f.floor, 0) <= step.rung),
            support AS (SELECT {groups}, count(DISTINCT h.p) AS n FROM lab JOIN holders h USING (lid)
                        WHERE NOT at_root GROUP BY {groups}
                        HAVING count(DISTINCT h.p) >= greatest({self.k}, (SELECT threshold FROM step)))
            SELECT lab.lid, {self._each('lab.g{c}')}, step.rung, step.round
            FROM lab JOIN support s ON {self._same('lab', 's', 'g')} CROSS JOIN step""",
                        paths=paths, holders=holders, gen=gen, floors=floors, step=step)

    def none(self, what: str) -> str:
        """An empty relation of the shape of gen, floors or labels (appended to later)."""
        shapes = {"gen": f"0::BIGINT AS lid, {self._each('NULL::VARCHAR AS g{c}')}, 0 AS rung, 0 AS round",
                  "floors": "0::BIGINT AS lid, 0 AS floor",
                  "labels": f"{self._each('NULL::VARCHAR AS g{c}')}, 0::BIGINT AS gid"}
        return self.sql(f"SELECT {shapes[what]} WHERE false")

    def new_labels(self, labels: str, gen: str) -> str:
        """The labels of gen that `labels` lacks, numbered after its largest id (ids never change)."""
        return self.sql(f"""
            SELECT {self._each('g{c}')}, (SELECT coalesce(max(gid), 0) FROM labels)
                   + row_number() OVER (ORDER BY {self._each('g{c} NULLS FIRST')}) AS gid
            FROM (SELECT DISTINCT {self._each('g{c}')} FROM gen) n
            WHERE NOT EXISTS (SELECT 1 FROM labels l WHERE {self._same('l', 'n', 'g')})""", labels=labels, gen=gen)

    def numbered(self, gen: str, labels: str) -> str:
        """gen with each item's label id gid."""
        return self.sql(f"SELECT g.*, l.gid FROM gen g JOIN labels l ON {self._same('g', 'l', 'g')}", gen=gen, labels=labels)

    def records(self, holders: str, gen: str) -> str:
        """The released records: one row per (person p, label gid)."""
        return self.sql("SELECT DISTINCT h.p, g.gid FROM holders h JOIN gen g USING (lid)", holders=holders, gen=gen)

    def changed(self, numbered: str, taken: str, step: str) -> str:
        """The labels whose items changed in the round of `step`: taken back, or given to items."""
        return self.sql("SELECT gid FROM taken UNION SELECT gid FROM numbered WHERE round = (SELECT round FROM step)",
                        numbered=numbered, taken=taken, step=step)

    # ---- itemsets --------------------------------------------------------------------------------------
    def _itemsets(self, size: int, changed: bool) -> str:
        """Every itemset of `size` labels a record holds: p, a1 < a2 < ... (label ids). `changed`: only the
        itemsets with a member in the relation `changed`, from the records holding one."""
        joins = " ".join(f"JOIN recs r{j} ON r{j}.p = r1.p AND r{j}.gid > r{j - 1}.gid" for j in range(2, size + 1))
        members = ", ".join(f"r{j}.gid AS a{j}" for j in range(1, size + 1))
        if not changed:
            return f"WITH recs AS (SELECT * FROM rec) SELECT r1.p, {members} FROM recs r1 {joins}"
        touched = " OR ".join(f"r{j}.gid IN (SELECT gid FROM changed)" for j in range(1, size + 1))
        return (f"WITH recs AS (SELECT * FROM rec WHERE p IN (SELECT p FROM rec WHERE gid IN (SELECT gid FROM changed))) "
                f"SELECT r1.p, {members} FROM recs r1 {joins} WHERE {touched}")

    def rare(self, rec: str, size: int, changed: str | None = None) -> str:
        """The itemsets of `size` labels held by fewer than k people (`changed`: among those with a member
        there; the others kept their holders)."""
        members = ", ".join(f"a{j}" for j in range(1, size + 1))
        return self.sql(f"SELECT {members} FROM ({self._itemsets(size, changed is not None)}) "
                        f"GROUP BY {members} HAVING count(*) < {self.k}",
                        rec=rec, **({"changed": changed} if changed else {}))

    def _weakest(self, size: int) -> str:
        """The member of itemset a1..a<size> held by the fewest people (n<j>: its holders), ties broken by
        the hash of label id and seed (hashed again: DuckDB's hash of several values mixes the last one too
        little, so another seed barely changed the order), then the id."""
        key = [f"(n{j}, hash(hash(a{j}, {self.seed})), a{j})" for j in range(1, size + 1)]
        cases = " ".join(f"WHEN {' AND '.join(f'{key[j]} <= {key[o]}' for o in range(j + 1, size))} THEN a{j + 1}"
                         for j in range(size - 1))
        return f"CASE {cases} ELSE a{size} END" if size > 1 else "a1"

    @staticmethod
    def _supported(size: int, table: str) -> tuple[str, str]:
        """Joins giving each member a<j> of `table`'s itemsets its holders n<j> (from `support`)."""
        joins = " ".join(f"JOIN support u{j} ON u{j}.gid = {table}.a{j}" for j in range(1, size + 1))
        counts = ", ".join(f"u{j}.n AS n{j}" for j in range(1, size + 1))
        return joins, counts

    def weakest(self, rec: str, rares: tuple[tuple[int, str], ...]) -> str:
        """The labels to take back: of every rare itemset in `rares` ((size, relation) pairs), its weakest member."""
        parts = []
        for size, _ in rares:
            joins, counts = self._supported(size, "b")
            parts.append(f"SELECT {self._weakest(size)} AS gid FROM (SELECT b.*, {counts} FROM rare{size} b {joins})")
        return self.sql(f"WITH support AS (SELECT gid, count(*) AS n FROM rec GROUP BY gid) {' UNION '.join(parts)}",
                        rec=rec, **{f"rare{size}": name for size, name in rares})

    def take_back(self, numbered: str, taken: str) -> str:
        """The floors of the items whose label is taken back: the rung above the one that released them."""
        return self.sql("SELECT lid, rung + 1 AS floor FROM numbered WHERE gid IN (SELECT gid FROM taken)",
                        numbered=numbered, taken=taken)

    def kept_items(self, numbered: str, taken: str) -> str:
        """gen without the items whose label is taken back."""
        return self.sql("SELECT * EXCLUDE (gid) FROM numbered WHERE gid NOT IN (SELECT gid FROM taken)",
                        numbered=numbered, taken=taken)

    def victims(self, rec: str, rare: str, size: int) -> str:
        """(p, gid): in each record holding a rare itemset, the itemset's weakest member."""
        match = " AND ".join(f"s.a{j} = b.a{j}" for j in range(1, size + 1))
        joins, counts = self._supported(size, "s")
        return self.sql(f"""
            WITH support AS (SELECT gid, count(*) AS n FROM rec GROUP BY gid),
            held AS (SELECT s.* FROM ({self._itemsets(size, False)}) s JOIN rare b ON {match})
            SELECT DISTINCT p, {self._weakest(size)} AS gid FROM (SELECT s.*, {counts} FROM held s {joins})""",
                        rec=rec, rare=rare)

    def without(self, rec: str, victims: str) -> str:
        return self.sql("SELECT * FROM rec r WHERE NOT EXISTS (SELECT 1 FROM victims v WHERE v.p = r.p AND v.gid = r.gid)",
                        rec=rec, victims=victims)

    # ---- the release ---------------------------------------------------------------------------------
    def kept(self, holders: str, gen: str, rec: str, leaves: str) -> str:
        """(p, v<c>, g<c>): each held composite item that is released, with its labels."""
        return self.sql(f"""
            SELECT h.p, {self._each('l.v{c}')}, {self._each('g.g{c}')} FROM holders h JOIN gen g USING (lid)
            JOIN rec r ON r.p = h.p AND r.gid = g.gid JOIN leaves l ON l.lid = h.lid""",
                        holders=holders, gen=gen, rec=rec, leaves=leaves)

    def release(self, source: exp.Expression, person: str, items: list[str], columns: list[str], kept: str) -> str:
        """The published columns of every released source row, in the source's order, each item column
        replaced by its label; rows in person and item order."""
        positions = {name.lower(): c for c, name in enumerate(items)}
        out = [f"k.g{positions[name.lower()]} AS __col_{i}" if name.lower() in positions else f"s.__col_{i}"
               for i, name in enumerate(columns)]
        values = self._each("CAST(__item_{c} AS VARCHAR) AS __anon_v{c}")
        match = self._each("s.__anon_v{c} IS NOT DISTINCT FROM k.v{c}", " AND ")
        order = self._each("k.v{c} NULLS FIRST")
        return self.sql(f"SELECT {', '.join(out)} FROM (SELECT *, {values} FROM __anon_source) s "
                        f"JOIN kept k ON s.__person = k.p AND {match} ORDER BY k.p, {order}",
                        source=source, person=person, items=items, columns=columns, kept=kept)
