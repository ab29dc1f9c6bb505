"""The sheets after report.xlsx's summary: a category's exceptions (continued on numbered sheets
past Excel's row limit), a tracked run's resolved exceptions, and the payments compared at
reference rates (``FX``); each built when written, so that only one table's cells are in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc

from toolkit.outputs import cell_text
from toolkit.reconcile.render.workbook_cells import (
    Currencies,
    Sheet,
    column_width,
    decimal_cells,
    header_row,
    number_cells,
    row_xml,
    sheet_name,
    text_cells,
    value_bytes,
)
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import FX_COLUMNS, in_report_order, severity_of

#: Excel's limit of rows per sheet (one is the header).
MAX_SHEET_ROWS = 1_048_576
#: Amount columns of the exceptions and the currency column each is in.
AMOUNT_COLUMNS = {
    "ledger_amount": "ledger_currency",
    "processor_amount": "processor_currency",
    "processor_fee": "processor_currency",
    "processor_net": "processor_currency",
}
#: Amount columns of the FX sheet: the ledger's amount in its currency, the rest in the charged one.
FX_AMOUNT_COLUMNS = {
    "ledger_amount": "ledger_currency",
    "expected_amount": "charged_currency",
    "charged_amount": "charged_currency",
    "variance": "charged_currency",
}
_INTEGER_COLUMNS = frozenset({"source_row", "ageDays", "age_days"})
#: Decimal columns that are no amount (a rate): numbers where Excel holds them exactly.
_DECIMAL_COLUMNS = frozenset({"rate"})


@dataclasses.dataclass(frozen=True)
class CategoryTexts:
    """The exceptions as exact text ('' for missing), as ``report.exceptions_text_table`` makes
    them for exceptions.csv, one category at a time: rows per category in report order, each
    category's rows, and every currency their amounts are in."""

    counts: dict[str, int]
    batches: Callable[[str], Iterator[pa.Table]]
    currencies: set[str]
    #: Every row, in the order of exceptions.csv, a batch at a time.
    every: Callable[[], Iterator[pa.Table]]
    #: Read back a batch at a time (too many to hold): each sheet's rows go to a temporary file.
    streamed: bool = False

    @classmethod
    def of(cls, table: pa.Table) -> CategoryTexts:
        """Every exception in one table (all held in memory)."""
        table = table.combine_chunks()  # filters then give arrays, whose buffers are the sheet XML
        codes: set[str] = set()
        for column in set(AMOUNT_COLUMNS.values()):
            codes.update(str(c) for c in pc.unique(table.column(column)).to_pylist() if c)
        return cls(_categories(table), functools.partial(_category_rows, table), codes, lambda: iter([table]))


def _category_rows(table: pa.Table, category: str) -> Iterator[pa.Table]:
    yield table.filter(pc.equal(table.column("category"), category))


def _categories(table: pa.Table) -> dict[str, int]:
    """Exceptions per category that has any, in report order (any unknown one after, not lost)."""
    counts = {
        str(v["values"]): int(v["counts"]) for v in pc.value_counts(table.column("category")).to_pylist()
    }
    return {c: counts[c] for c in in_report_order(counts)}


def _category_sheets(texts: CategoryTexts, category: str, currencies: Currencies) -> tuple[list[Sheet], int]:
    """The sheet(s) of one category (split at Excel's row limit) and its amounts kept as text.

    One category at a time, so that only its cells are in memory while it is written.
    """
    return _batch_sheets(texts.batches(category), category, currencies, on_disk=texts.streamed)


def _batch_sheets(
    parts: Iterable[pa.Table],
    category: str,
    currencies: Currencies,
    amounts: dict[str, str] = AMOUNT_COLUMNS,
    *,
    on_disk: bool = False,
) -> tuple[list[Sheet], int]:
    """The sheet(s) named ``category`` holding the rows of ``parts`` (text tables, in order),
    split at Excel's row limit, and how many amounts are kept as text. With ``on_disk``, each
    batch's rows go to a temporary file as soon as they are made: only one batch is in memory."""
    per_sheet = MAX_SHEET_ROWS - 1
    as_text = 0
    columns: tuple[str, ...] = ()
    longest: list[int] = []
    sheets: list[list[memoryview]] = []  # per sheet, its rows' XML in order
    files: list[IO[bytes]] = []
    counts: list[int] = []
    for part in parts:
        columns = tuple(part.column_names)
        # Large strings (64-bit offsets): the rows of a full sheet may pass 2 GiB of XML.
        part = part.cast(pa.schema([(c, pa.large_string()) for c in part.column_names]))
        rows, text_amounts = _row_cells(part, currencies, amounts)
        as_text += text_amounts
        lengths = [pc.max(pc.utf8_length(part.column(c))).as_py() or 0 for c in columns]
        longest = [max(a, b) for a, b in zip(longest or lengths, lengths, strict=True)]
        start = 0
        while start < len(rows):
            if not counts or counts[-1] == per_sheet:
                counts.append(0)
                sheets.append([])
                if on_disk:  # closed by ``workbook._write_sheet``; an unnamed file, gone once closed
                    files.append(tempfile.TemporaryFile())  # noqa: SIM115
            chunk = rows.slice(start, per_sheet - counts[-1])
            if on_disk:
                files[-1].write(value_bytes(chunk))
            else:
                sheets[-1].append(value_bytes(chunk))
            counts[-1] += len(chunk)
            start += len(chunk)
    widths = [column_width(c, n, amount=c in amounts) for c, n in zip(columns, longest, strict=True)]
    out = []
    for number, count in enumerate(counts, start=1):
        name = sheet_name(category, number)
        held = sheets[number - 1]
        rows_xml: memoryview | IO[bytes] = (
            files[number - 1] if on_disk else held[0] if len(held) == 1 else memoryview(b"".join(held))
        )
        out.append(
            Sheet(
                name, header_row(columns), rows_xml, widths, table=(1, count + 1, len(columns)), frozen=True
            )
        )
    return out, as_text


def _row_cells(part: pa.Table, currencies: Currencies, amounts: dict[str, str]) -> tuple[pa.Array, int]:
    """One ``<row>`` of cells per row of ``part``, and how many amounts are kept as text."""
    as_text = 0
    cells = []
    for column in part.column_names:
        if column in amounts:
            amount_cells, count = currencies.amount_cells(part.column(column), part.column(amounts[column]))
            cells.append(amount_cells)
            as_text += count
        elif column in _INTEGER_COLUMNS:
            cells.append(number_cells(part.column(column)))
        elif column in _DECIMAL_COLUMNS:
            cells.append(decimal_cells(part.column(column)))
        else:
            cells.append(text_cells(part.column(column)))
    return row_xml(cells), as_text


#: Rows of one table, and how to build its sheets (with the count of amounts kept as text).
Source = tuple[int, Callable[[], tuple[list[Sheet], int]]]


def sheet_sources(
    texts: CategoryTexts, resolved: pa.Table | None, fx: pa.Table | None, currencies: Currencies
) -> list[Source]:
    """The tables after the summary, in workbook order: the exception categories, a tracked run's
    resolved exceptions, the informational categories, then FX; only those with rows (no empty
    sheet). Built one at a time when written, so only one table's cells are in memory."""
    categories = texts.counts

    def category(name: str) -> Source:
        return categories[name], functools.partial(_category_sheets, texts, name, currencies)

    sources = [category(c) for c in categories if severity_of(c) == "exception"]
    if resolved is not None and resolved.num_rows:
        sources.append(
            (resolved.num_rows, functools.partial(_batch_sheets, [resolved], "resolved", currencies))
        )
    sources += [category(c) for c in categories if severity_of(c) == "info"]
    if fx is not None:
        build = functools.partial(_batch_sheets, [fx], "FX", currencies, FX_AMOUNT_COLUMNS)
        sources.append((fx.num_rows, build))
    return sources


def sheet_count(rows: int) -> int:
    """Sheets a table of ``rows`` rows takes (one header row on each)."""
    return -(-rows // (MAX_SHEET_ROWS - 1))


def currency_codes(
    result: ReconciliationResult, texts: CategoryTexts, resolved: pa.Table | None, fx: pa.Table | None
) -> set[str]:
    """Every currency an amount of the workbook is in (each gets its number format)."""
    codes: set[str] = {str(c) for c in result.summary["currency"].unique() if c} | texts.currencies
    codes |= {p.currency for p in result.payouts}
    for part, columns in ((resolved, AMOUNT_COLUMNS), (fx, FX_AMOUNT_COLUMNS)):
        if part is None:
            continue
        for column in set(columns.values()):
            codes.update(str(c) for c in pc.unique(part.column(column)).to_pylist() if c)
    return codes


def fx_table(result: ReconciliationResult) -> pa.Table | None:
    """The payments compared at reference rates as text (None when there is none)."""
    if result.fx.empty:
        return None
    frame = result.fx.reindex(columns=list(FX_COLUMNS))
    return pa.table(
        {c: pa.array([cell_text(v) for v in frame[c]], type=pa.string()) for c in FX_COLUMNS}
    ).combine_chunks()


def resolved_table(result: ReconciliationResult) -> pa.Table | None:
    """The resolved exceptions of a tracked run as text (None for a run without a track)."""
    if result.tracking is None:
        return None
    frame = result.tracking.resolved
    return pa.table(
        {str(c): pa.array([str(v) for v in frame[c]], type=pa.string()) for c in frame.columns}
    ).combine_chunks()
