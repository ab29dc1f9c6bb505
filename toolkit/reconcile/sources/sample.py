"""A look at a file for people (``toolkit reconcile inspect``): its first rows and how many it
has, read as the run reads them, without a backend."""

from __future__ import annotations

import csv
import io
from typing import Any

from toolkit.errors import InputError
from toolkit.reconcile.sources.described import Described
from toolkit.reconcile.sources.formats import _SAMPLE, WHITESPACE
from toolkit.reconcile.sources.frames import _raw_names, _text_of


def _refuse_unclosed_quote(described: Described, text: str) -> None:
    """Refuse, as the run does, a file (``text``: all of it after the header) in which a quoted
    value opens and no quote closes it: every line after it would be read as that one value."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=described.delimiter, strict=True)
    start = 1
    while True:
        try:
            next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # strict also refuses what the run reads (``"12,5"0``): only this
            if "unexpected end of data" in str(exc):
                opened = io.StringIO(text, newline="").readlines()[start - 1].rstrip("\r\n")
                raise InputError(
                    f"{described.name}: line {described.header_line + start} cannot be read (a quote "
                    f"opens a value that no quote closes; the line: {opened!r}); fix the row or "
                    "export the file again"
                ) from None
        start = reader.line_num + 1


def sample(described: Described, rows: int = 5) -> tuple[list[list[str]], int, bool]:
    """The first ``rows`` data rows as text, and the number of rows (exact, or estimated from
    the size of a large CSV file: the third value says which)."""
    if described.table is not None:
        raw = _raw_names(described.table, list(described.columns))
        head = described.table.select(raw).slice(0, rows).to_pylist()
        return [[str(r[c]) for c in raw] for r in head], described.table.num_rows, True
    if described.kind == "parquet":
        import pyarrow.parquet as pq

        first: list[dict[str, Any]] = []
        total = 0
        for path in described.paths:  # the first rows, whichever files (or groups) hold them
            with pq.ParquetFile(path) as file:
                total += file.metadata.num_rows
                for group in range(file.num_row_groups):
                    if len(first) < rows:
                        first += file.read_row_group(group).slice(0, rows - len(first)).to_pylist()
        return [[_text_of(r.get(c)) for c in described.columns] for r in first], total, True
    if described.kind != "csv":
        return [], 0, False
    path = described.paths[0]
    with path.open(encoding=described.encoding, newline="") as handle:
        for _ in range(described.header_line):
            handle.readline()
        start = handle.tell() if described.encoding in ("utf-8", "utf-8-sig") else None
        text = handle.read(_SAMPLE)
        whole = not handle.read(1)
    width = len(described.columns)
    if whole:
        _refuse_unclosed_quote(described, text)
    records = [  # the rows the run reads: a blank line or row (``;;;``) is none
        r
        for r in csv.reader(io.StringIO(text, newline=""), delimiter=described.delimiter)
        if any(v.strip(WHITESPACE) for v in r[:width])
    ]
    found = [[*r[:width], *[""] * (width - len(r))] for r in records[:rows]]
    if whole:
        return found, len(records), True
    # The last record of the sample may be cut: estimate from the whole ones.
    size = path.stat().st_size - (start or 0)
    used = len(text.encode(described.encoding.replace("-sig", "")))
    return found, round(size / used * max(len(records) - 1, 1)) if used else 0, False
