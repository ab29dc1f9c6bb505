"""A query of the engine built a select at a time, with the names of its columns.

The checks (``inputs/checks.py``) are chains of 30 to 70 stages, each a select of its own over the one
before, so that a value later stages read several times (the place of an amount's point) is
computed once per row. Each stage keeps every column it does not replace; a column a stage
gives that exists already replaces it where it stands. The text is DuckDB's dialect (sqlglot
writes it in Spark's for Spark: ``backends.spark_sql``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
class Relation:
    """A query, the names of its columns, and the kept tables it reads (held as long as it is)."""

    sql: str
    columns: tuple[str, ...]
    needs: tuple[Kept, ...] = ()

    def __str__(self) -> str:
        return self.sql

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def _stage(self, columns: list[str], names: tuple[str, ...], where: str = "") -> Relation:
        sql = f"SELECT {', '.join(columns)} FROM ({self.sql}) AS _s" + (f" WHERE {where}" if where else "")
        return replace(self, sql=sql, columns=names)

    def mutate(self, **values: str) -> Relation:
        """A stage: every column, with ``values`` (SQL expressions over this stage's columns)
        replacing those of their names and adding the others."""
        kept = [f"{values[c]} AS {ident(c)}" if c in values else ident(c) for c in self.columns]
        added = [name for name in values if name not in self.columns]
        return self._stage(
            kept + [f"{values[name]} AS {ident(name)}" for name in added], (*self.columns, *added)
        )

    def select(self, *names: str, **values: str) -> Relation:
        """A stage of the columns ``names`` then ``values``, only."""
        columns = [ident(n) for n in names] + [f"{v} AS {ident(n)}" for n, v in values.items()]
        return self._stage(columns, (*names, *values))

    def drop(self, *names: str) -> Relation:
        """A stage without the columns ``names`` (those it has)."""
        return self.select(*(c for c in self.columns if c not in names))

    def rename(self, renamed: dict[str, str]) -> Relation:
        """A stage with the columns ``renamed`` (new name: old name) under their new names."""
        old = {o: n for n, o in renamed.items()}
        columns = [f"{ident(c)} AS {ident(old[c])}" if c in old else ident(c) for c in self.columns]
        return self._stage(columns, tuple(old.get(c, c) for c in self.columns))

    def filter(self, condition: str) -> Relation:
        """The rows ``condition`` holds for."""
        return self._stage([ident(c) for c in self.columns], self.columns, condition)

    def left_join(self, other: str | Kept, on: str, **take: str) -> Relation:
        """Every row with the columns ``take`` of ``other``'s matching row (``_j``; this one is
        ``_s``), null where there is none: ``on`` reads both."""
        columns = [f"_s.{ident(c)}" for c in self.columns] + [f"{v} AS {ident(n)}" for n, v in take.items()]
        sql = f"SELECT {', '.join(columns)} FROM ({self.sql}) AS _s LEFT JOIN {other} AS _j ON {on}"
        needs = self.needs if isinstance(other, str) else (*self.needs, other)
        return Relation(sql, (*self.columns, *take), needs)
