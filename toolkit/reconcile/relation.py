"""A query of the engine built a select at a time, with the names of its columns.

The checks (``inputs/checks.py``) are chains of 30 to 70 stages, each a select of its own over the one
before, so that a value later stages read several times (the place of an amount's point) is
computed once per row. Each stage keeps every column it does not replace; a column a stage
gives that exists already replaces it where it stands. The text is DuckDB's dialect (sqlglot
writes it in Spark's for Spark: ``backends.spark_sql``).

A stage that reads no column the select before it computes is written into that select
(``_Select``) rather than around it: the same rows and columns in a query a few times shallower,
which DuckDB and Spark plan in less time (planning, not running, is most of a small file's time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolkit.reconcile.backends import Kept


def ident(name: str) -> str:
    """A column's name as SQL reads it, whatever it holds (a user's column: spaces, quotes)."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A string as an SQL literal."""
    return "'" + text.replace("'", "''") + "'"


def count_if(condition: str) -> str:
    """How many rows ``condition`` holds for (an aggregate; null counts as false)."""
    return f"CAST(COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0) AS BIGINT)"


@dataclass(frozen=True)
class _Select:
    """A query's last select, open to more stages: the query it reads, and each column's
    expression over that query's columns (a column it passes through: its name)."""

    source: str
    items: tuple[tuple[str, str], ...]
    where: str = ""

    def sql(self) -> str:
        columns = ", ".join(e if e == ident(n) else f"{e} AS {ident(n)}" for n, e in self.items)
        return f"SELECT {columns} FROM ({self.source}) AS _s" + (f" WHERE {self.where}" if self.where else "")

    def takes(self, expressions: Iterable[str], where: str) -> bool:
        """Whether a stage of ``expressions`` (and filter ``where``) can be written into this
        select: none reads a column it computes (its name anywhere in the text: a false alarm
        only costs a select of its own), and a filter comes into a select without one, and
        without a window, whose rows it would change."""
        computed = [re.escape(name) for name, expr in self.items if expr != ident(name)]
        named = re.compile(rf"(?<![A-Za-z0-9_])(?:{'|'.join(computed)})(?![A-Za-z0-9_])")
        if computed and named.search(" ".join([*expressions, where])):
            return False
        return not where or not (self.where or any(_WINDOW.search(expr) for _, expr in self.items))


#: A window function: computed over the rows a select's filter leaves.
_WINDOW = re.compile(r"\bOVER\s*\(", re.IGNORECASE)


@dataclass(frozen=True)
class Relation:
    """A query, the names of its columns, and the kept tables it reads (held as long as it is)."""

    sql: str
    columns: tuple[str, ...]
    needs: tuple[Kept, ...] = ()
    #: Its last select, when a further stage may be written into it (``_Select``).
    _last: _Select | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.sql

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def _stage(self, items: dict[str, str], where: str = "") -> Relation:
        """A select of ``items`` (each column's expression over this query's columns), written
        into the last select when it can take it (``_Select.takes``)."""
        last = self._last
        passed = {ident(c): c for c in self.columns}
        fresh = [expr for expr in items.values() if expr not in passed]
        if last is not None and last.takes(fresh, where):
            before = dict(last.items)
            # A column passed through is the last select's expression of it; any other reads
            # only columns that select passes through, which its own query has by those names.
            merged = {n: before[passed[e]] if e in passed else e for n, e in items.items()}
            stage = _Select(last.source, tuple(merged.items()), where or last.where)
        else:
            stage = _Select(self.sql, tuple(items.items()), where)
        return replace(self, sql=stage.sql(), columns=tuple(items), _last=stage)

    def mutate(self, **values: str) -> Relation:
        """A stage: every column, with ``values`` (SQL expressions over this stage's columns)
        replacing those of their names and adding the others."""
        items = {c: ident(c) for c in self.columns}
        items.update(values)
        return self._stage(items)

    def select(self, *names: str, **values: str) -> Relation:
        """A stage of the columns ``names`` then ``values``, only."""
        return self._stage({**{n: ident(n) for n in names}, **values})

    def drop(self, *names: str) -> Relation:
        """A stage without the columns ``names`` (those it has)."""
        return self.select(*(c for c in self.columns if c not in names))

    def rename(self, renamed: dict[str, str]) -> Relation:
        """A stage with the columns ``renamed`` (new name: old name) under their new names."""
        old = {o: n for n, o in renamed.items()}
        return self._stage({old.get(c, c): ident(c) for c in self.columns})

    def filter(self, condition: str) -> Relation:
        """The rows ``condition`` holds for."""
        return self._stage({c: ident(c) for c in self.columns}, condition)

    def left_join(self, other: str | Kept, on: str, **take: str) -> Relation:
        """Every row with the columns ``take`` of ``other``'s matching row (``_j``; this one is
        ``_s``), null where there is none: ``on`` reads both."""
        columns = [f"_s.{ident(c)}" for c in self.columns] + [f"{v} AS {ident(n)}" for n, v in take.items()]
        sql = f"SELECT {', '.join(columns)} FROM ({self.sql}) AS _s LEFT JOIN {other} AS _j ON {on}"
        needs = self.needs if isinstance(other, str) else (*self.needs, other)
        return Relation(sql, (*self.columns, *take), needs)
