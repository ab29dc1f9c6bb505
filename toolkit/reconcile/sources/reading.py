"""A source read into a backend: frames and sheets registered as they are, files read by the
backend itself (``Backend.read``), every value as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.errors import InputError
from toolkit.reconcile.relation import Relation, ident, literal
from toolkit.reconcile.sources.frames import _raw_names

if TYPE_CHECKING:
    from toolkit.reconcile.backends import Backend
    from toolkit.reconcile.sources.described import Described


#: The modules whose errors are the engines' own (DuckDB's, Spark's and its bridge's).
_ENGINES = ("duckdb", "_duckdb", "pyspark", "py4j")


def read(backend: Backend, described: Described, only: frozenset[str] | None = None) -> Relation:
    """The source as a table of text in ``backend``, with ``_ord``, ``source_row``, ``_source``.

    ``only`` limits the columns read (trimmed names); the others are not read at all.
    """
    wanted = [c for c in described.columns if only is None or c in only]
    with backend.failures():
        if described.table is not None:
            table = described.table.select([*_raw_names(described.table, wanted), "_ord", "source_row"])
            kept = backend.register(table.rename_columns([*wanted, "_ord", "source_row"]), stem="frame")
            rows = Relation(f"SELECT * FROM {kept}", (*wanted, "_ord", "source_row"), (kept,))
        else:  # a file, or a table of the backend's catalog, read by the backend itself
            try:
                rows = backend.read(described, wanted)
            except Exception as exc:
                if not type(exc).__module__.startswith(_ENGINES):
                    raise
                # The engine's own words for a file it cannot read: one line naming the file.
                words = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise InputError(f"{described.name}: cannot be read: {words}") from exc
    if "_source" not in rows:
        rows = rows.mutate(_source=literal(described.name))
    texts = {
        c: f"COALESCE(CAST({ident(c)} AS VARCHAR), '')"
        for c in rows.columns
        if not c.startswith("_") and c != "source_row"
    }
    return rows.mutate(**texts)
