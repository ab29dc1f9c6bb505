"""A source read into a backend: frames and sheets registered as they are, files read by the
backend itself (``Backend.read``), every value as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.reconcile.relation import Relation, ident, literal
from toolkit.reconcile.sources.frames import _raw_names

if TYPE_CHECKING:
    from toolkit.reconcile.backends import Backend
    from toolkit.reconcile.sources.described import Described


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
            rows = backend.read(described, wanted)
    if "_source" not in rows:
        rows = rows.mutate(_source=literal(described.name))
    texts = {
        c: f"COALESCE(CAST({ident(c)} AS VARCHAR), '')"
        for c in rows.columns
        if not c.startswith("_") and c != "source_row"
    }
    return rows.mutate(**texts)
