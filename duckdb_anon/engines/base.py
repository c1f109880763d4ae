"""What an algorithm needs from a SQL engine: the ground floor shared by every multi-step algorithm.

An algorithm (Mondrian's level loop, DP aggregates, k^m-anonymity) writes its SQL once over internal names;
:func:`render` writes it in the engine's dialect, and an :class:`Engine` runs it, keeps the intermediate
relations and registers the Python functions (:class:`Udf`) the SQL calls. :class:`Names` gives one run's
relations unique names so concurrent runs never collide, and :class:`QI` says how a column's values are
ordered (the column kinds every engine maps its types to). The DP aggregates (duckdb_anon.dp) render their
plan here, and on Spark run it through SparkEngine (its UDFs, views and result); on DuckDB the plan becomes
macros at install time, and dp.bounded_aggregates() runs it through DuckDBEngine.
"""
from __future__ import annotations

import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

NUMERIC, TEMPORAL, CATEGORICAL = "numeric", "temporal", "categorical"


@dataclass(frozen=True)
class QI:
    """One quasi-identifier: the column's real name and how its values are ordered."""
    name: str
    kind: str  # NUMERIC, TEMPORAL or CATEGORICAL
    key: str = ""  # TEMPORAL: the value {x} as microseconds since the epoch (DuckDB SQL the engine's dialect reads)
    type: str = ""  # the column's type under DuckDB's name (Spark's types mapped), for the SQL rules that read it


@dataclass(frozen=True)
class Udf:
    """A Python function an algorithm's SQL calls by `name`, for any engine to register (the engine owns how).

    `params` and `returns` are DuckDB type names. A `batch` function is called once per batch of rows with
    one NumPy float array per DOUBLE parameter (NaN for NULL) and one list per other parameter, and returns a
    NumPy float array (NaN for NULL); any other is called per row with Python values (a struct as a dict).
    `fresh`: the result must be computed anew on every call (noise), never folded, cached or deduplicated."""
    name: str
    fn: Callable
    params: tuple[str, ...]
    returns: str
    batch: bool = False
    fresh: bool = False


class Engine(ABC):
    """What the level loop needs from a SQL engine."""

    dialect: str  # sqlglot dialect name
    numbered: bool  # the source carries its row number as __anon_row
    # materialize each step of a level's decision (Spark: its CTEs are inlined at every reference, and
    # the strict fallback reads them many times); DuckDB decides a level in one statement
    stepwise: bool = False
    # the engine reads quantile_disc(x, p) as an aggregate (DuckDB; Spark only knows WITHIN GROUP)
    quantiles: bool = False

    @abstractmethod
    def source(self) -> exp.Expression:
        """The source relation, as a sqlglot table expression."""

    @abstractmethod
    def columns(self) -> list[QI | None]:
        """The source's columns in order, as QIs (the name, how values order, a temporal key), or a QI
        of kind None for a column Mondrian cannot generalize."""

    @abstractmethod
    def create(self, name: str, sql: str) -> None:
        """Materialize a query under `name`."""

    @abstractmethod
    def append(self, name: str, sql: str) -> None:
        """Add a query's rows to the relation `name` (created on first use)."""

    @abstractmethod
    def count(self, name: str) -> int:
        """Rows of relation `name`."""

    @abstractmethod
    def value(self, sql: str):
        """The single value a query returns."""

    def rows(self, sql: str) -> list[tuple]:
        """The rows a (small) query returns (the level driver's hierarchy check needs it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot return rows")

    def number(self, name: str, sql: str, order: str) -> None:
        """Materialize a query under `name` with __anon_row: each row's place, from 1, in ascending order
        of its column `order` (NULLs last; the column's values are distinct). This default numbers them
        with a window over every row; engines that would run it in one task (Spark) override it."""
        self.create(name, f"SELECT *, row_number() OVER (ORDER BY {order} NULLS LAST) AS __anon_row FROM ({sql}) AS q")

    @abstractmethod
    def drop(self, name: str) -> None:
        """Forget relation `name` (no error when it does not exist)."""

    def level_engine(self, cells: int, inputs: dict[str, str], macros: tuple[str, ...] = ()) -> "Engine":
        """The engine the level loop runs on, given the table's `cells` (distinct QI vectors, which bound
        every level's rows) and what the loop reads (relation name -> query over this engine): this
        engine, or a DuckDB one it copied `inputs` to under the same names, holding the SQL macros `macros`
        (names; duckdb_anon.sql_rules gives their definitions) that the loop's queries call. take_back() ends it, or, when the run fails,
        the engine's own cleanup."""
        return self

    def take_back(self, loop: "Engine", name: str) -> None:
        """Copy relation `name` of `loop` (level_engine()'s, not this engine) here, and close `loop`."""
        raise NotImplementedError

    def begin(self, step: str) -> None:
        """The driver starts a step ('cells', 'level 3', 'labels'): engines may label their work by it."""

    def register_udfs(self, udfs: tuple[Udf, ...]) -> None:
        """Make `udfs` callable by name in this engine's SQL."""
        raise NotImplementedError(f"{type(self).__name__} cannot register functions")

    def result(self, sql: str):
        """What a query returns, as the engine's table: a pandas DataFrame (DuckDB), a DataFrame (Spark)."""
        raise NotImplementedError(f"{type(self).__name__} cannot return a table")


RUN = "__anon_lv_run_"  # the prefix of intermediate relations in cached SQL; each run puts its own in


class Names:
    """Unique names for one run's intermediate relations, remembered so they can all be dropped."""

    def __init__(self):
        self.prefix = f"__anon_lv_{uuid.uuid4().hex[:12]}_"
        self.made: list[str] = []

    def __call__(self, what: str) -> str:
        self.made.append(self.prefix + what)
        return RUN + what

    def real(self, sql: str) -> str:
        """SQL over this run's relations (the prefix is ours, never user input)."""
        return sql.replace(RUN, self.prefix)


def render(text: str, dialect: str, column: Callable[[str], str | None] | None = None,
           source: exp.Expression | None = None,
           rewrite: Callable[[exp.Expression, str], exp.Expression] | None = None,
           parameters: dict[str, exp.Expression] | None = None, **tables: str | exp.Expression) -> str:
    """The one renderer: parse DuckDB-dialect `text` over placeholders and write it in `dialect`.

    - an identifier that `column` maps to a name becomes that name, quoted (user input enters the tree
      only so);
    - a column ``__p_<name>`` becomes ``parameters[name]``, an expression (values enter as literals built
      by sqlglot, never as text);
    - the table ``__anon_source`` becomes `source`; a table named as a key of `tables` becomes that
      relation (a name, or an expression), keeping the placeholder's name as its alias, so ``cells.x``
      still reads;
    - any other node goes through `rewrite(node, dialect)` when given (an algorithm's own placeholders,
      such as inlined macros or the engine's keyed hash)."""
    tree = sqlglot.parse_one(text, read="duckdb")

    def substitute(node):
        if isinstance(node, exp.Identifier) and column is not None:
            name = column(node.name)
            if name is not None:
                return exp.to_identifier(name, quoted=True)
        if parameters is not None and isinstance(node, exp.Column) and not node.table \
                and node.name.startswith("__p_"):
            return parameters[node.name[4:]].copy()
        if isinstance(node, exp.Table) and node.name == "__anon_source" and source is not None:
            return exp.alias_(source.copy(), node.alias, table=True) if node.alias else source.copy()
        if isinstance(node, exp.Table) and node.name in tables and not node.db:
            relation = tables[node.name]
            relation = exp.to_table(relation) if isinstance(relation, str) else relation.copy()
            return exp.alias_(relation, node.alias or node.name, table=True)
        return rewrite(node, dialect) if rewrite is not None else node

    return tree.transform(substitute).sql(dialect)


def literal(value) -> exp.Expression:
    """A Python value (None, bool, number, string, or a list of them) as a SQL literal expression."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, float) and not math.isfinite(value):  # a bare inf or nan would read as a column name
        return exp.cast(exp.Literal.string("NaN" if math.isnan(value) else f"{'-' if value < 0 else ''}Infinity"), "DOUBLE")
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    return exp.Literal.string(str(value))
