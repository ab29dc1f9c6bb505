"""What a source is, as ``describe`` found it (``Described``): its kind, its columns, and how the
backends read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError

#: A source: a file path (CSV, XLSX, Parquet file, folder or glob), a pandas frame, or
#: ``table:NAME`` for a table of the backend's catalog (Spark).
Source = str | Path | pd.DataFrame
_Kind = Literal["csv", "xlsx", "parquet", "frame", "table"]


@dataclass(frozen=True)
class ParquetPart:
    """Parquet files with the same schema: their columns (as written) are read as they are; the
    parts of a set are brought together as text, since a backend widening one file's type to
    another's can round amounts (DuckDB makes ``DECIMAL(38,10)`` and ``DECIMAL(38,2)`` the
    latter) or make them floats."""

    paths: tuple[Path, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Described:
    """What a source is: its kind, its name for people, its columns, and how to read it."""

    name: str
    kind: _Kind
    columns: tuple[str, ...]  # as in the source, trimmed
    paths: tuple[Path, ...] = ()
    table: pa.Table | None = field(default=None, compare=False)  # frames and sheets, as text
    table_name: str = ""
    # CSV: how the file is written, and the line its header is on (1-based).
    delimiter: str = ","
    encoding: str = "utf-8"
    bom: bool = False
    header_line: int = 1
    titled: bool = False  # the header was given below the first lines (a title above it)
    sheet: str = ""  # Excel: the sheet read
    sheets: tuple[str, ...] = ()  # Excel: the workbook's sheets, in order
    decimal: str = "."  # the amounts' decimal mark (``,``: ``1.234,56``), or ``POINT_UNDECIDED``
    parts: tuple[ParquetPart, ...] = ()  # Parquet: the files, grouped by their schema
    # How the dates are written (a strftime-style format, given or decided from the rows), the
    # zone of a time written without one, and the currency of a file without a currency column.
    date_format: str | None = None
    timezone: str | None = None
    currency: str | None = None
    # CSV: a line shorter than the header is read with its missing cells empty (a report's own
    # lines: QuickBooks' and Xero's account headings), not refused.
    ragged: bool = False

    @property
    def size(self) -> int | None:
        """Its bytes, as stored (files) or held (frames, sheets); None for a table by name."""
        if self.table is not None:
            return int(self.table.nbytes)
        if self.paths:
            return sum(path.stat().st_size for path in self.paths)
        return None


def named_cells(names: Sequence[object]) -> list[str]:
    """A header's cells, an empty one named by its place (``column 1``): an accounting export
    leaves the header of its first column, the account or row labels, empty (QuickBooks), and an
    empty name can be neither mapped nor read by the engine."""
    return [str(n) if str(n).strip() else f"column {i}" for i, n in enumerate(names, 1)]


def _columns_of(names: Sequence[object], name: str) -> tuple[str, ...]:
    trimmed = tuple(n.strip() for n in named_cells(names))
    seen: set[str] = set()
    for column in trimmed:
        if column in seen:
            raise InputError(f"{name}: column {column!r} appears twice")
        seen.add(column)
    return trimmed


def _columns(table: pa.Table, name: str) -> tuple[str, ...]:
    return _columns_of([c for c in table.column_names if c not in ("_ord", "source_row")], name)
