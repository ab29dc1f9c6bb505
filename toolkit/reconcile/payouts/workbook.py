"""The payout reconciliation's report.xlsx: ``Summary``, then ``Payouts`` and ``Exceptions``, in the
spirit of the payment reconciliation's workbook (``toolkit.reconcile.render.workbook``).

* ``Summary`` first: where the data came from ("Data from: ..."), the title, when it was
  generated, the cut-off and the window, the verdict, the books compared or not, the files read,
  then summary.csv's table (per category and currency, under an autofilter) and a note on how
  amounts are stored.
* ``Payouts`` (payouts.csv's columns) and ``Exceptions`` (exceptions.csv's): a bold frozen header,
  an autofilter over the table, columns sized to the header and the longest value (capped).
* Amounts are number cells in their currency's number format (``workbook_cells.currency_format``),
  so a controller can sum them, wherever Excel holds them exactly: at most the currency's
  decimals and at most ``EXCEL_DIGITS`` significant digits at them (``workbook_cells.fits_excel``,
  the payment workbook's rule). openpyxl writes a number through a float with 16 digits: any
  decimal of 15 digits or fewer comes back from it as the same number, a longer one does not
  (``12345678901234.567`` became ``12345678901234.57``), so those, and anything that is not a
  plain decimal of a known currency, stay exact text; the summary says how many.
* Every text is a text cell (``data_type`` ``s``, an inline string), never a formula, whatever it
  starts with (a bank's remittance text can be ``=HYPERLINK(...)``), and is cleaned as the
  payment workbook cleans it (``workbook_cells.clean_text``: characters XML cannot hold dropped,
  cut at Excel's limit).

The payout tables are small (a payout a day and currency), so openpyxl writes them (write-only
mode) rather than the payment workbook's hand-written XML for millions of rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from toolkit.money import is_currency, minor_digits
from toolkit.reconcile.render.workbook_cells import (
    EXCEL_DIGITS,
    clean_text,
    column_width,
    currency_format,
    fits_excel,
)

#: The sheets, in their order.
SHEETS: tuple[str, ...] = ("Summary", "Payouts", "Exceptions")
#: A count's format (thousands separated), and a whole number's that is an identifier (a row).
COUNT_FORMAT = "#,##0"
PLAIN_FORMAT = "0"
_WHOLE = re.compile(r"-?[0-9]{1,15}")
_NOTE = (
    "Amounts are numbers in their currency's format wherever Excel holds them exactly (at most "
    f"{EXCEL_DIGITS} significant digits at the currency's decimals); longer amounts are exact text."
)


@dataclass(frozen=True)
class TextTable:
    """A table as the CSV files hold it (text, '' for nothing): its columns and rows; ``amounts``:
    each amount column and the column of its currency; ``numbers``: each column of whole numbers
    and its number format."""

    columns: tuple[str, ...]
    rows: Sequence[Mapping[str, str]]
    amounts: Mapping[str, str] = field(default_factory=dict)
    numbers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Cell:
    """What one cell holds: text (always a text cell), a whole number, an exact amount or nothing."""

    value: str | int | Decimal | None
    number_format: str | None = None
    bold: bool = False


@dataclass(frozen=True)
class _Sheet:
    rows: list[list[_Cell]]
    widths: list[float]
    as_text: int  # amounts kept as text


def write_payout_workbook(
    path: Path,
    *,
    heading: Sequence[str],
    summary: TextTable,
    payouts: TextTable,
    exceptions: TextTable,
) -> None:
    """Write the workbook to ``path``: ``heading`` (the Summary's lines above its table, the first
    "Data from: ..." in bold), ``summary`` (summary.csv), ``payouts`` (payouts.csv) and
    ``exceptions`` (exceptions.csv)."""
    from openpyxl import Workbook

    tables = {"Payouts": _table_sheet(payouts), "Exceptions": _table_sheet(exceptions)}
    counted = _table_sheet(summary)
    as_text = counted.as_text + sum(sheet.as_text for sheet in tables.values())
    note = _NOTE + (f" {as_text:,} amount(s) in this workbook are text." if as_text else "")
    lines = [[_Cell(clean_text(heading[0]), bold=True)], *[[_text(line)] for line in heading[1:]], []]
    first = len(lines) + 1  # the summary table's header row, where its autofilter starts
    book = Workbook(write_only=True)
    _write(
        book,
        "Summary",
        _Sheet([*lines, *counted.rows, [], [_text(note)]], counted.widths, counted.as_text),
        filtered=(first, first + len(summary.rows), len(summary.columns)),
        frozen=False,
    )
    for name, sheet in tables.items():
        _write(book, name, sheet, filtered=(1, len(sheet.rows), len(sheet.widths)), frozen=True)
    book.save(path)


def _table_sheet(table: TextTable) -> _Sheet:
    """A table's cells (the header bold), its column widths and the amounts kept as text."""
    columns: list[list[_Cell]] = []
    widths = []
    as_text = 0
    for name in table.columns:
        texts = [clean_text(row.get(name, "")) for row in table.rows]
        if name in table.amounts:
            currencies = [row.get(table.amounts[name], "") for row in table.rows]
            cells, texts_kept = _amount_cells(texts, currencies)
            as_text += texts_kept
        elif name in table.numbers:
            cells = [_number(text, table.numbers[name]) for text in texts]
        else:
            cells = [_text(text) for text in texts]
        columns.append(cells)
        longest = max(map(len, texts), default=0)
        widths.append(column_width(name, longest, amount=name in table.amounts))
    header = [_Cell(clean_text(name), bold=True) for name in table.columns]
    rows = [list(row) for row in zip(*columns, strict=True)] if table.rows else []
    return _Sheet([header, *rows], widths, as_text)


def _amount_cells(amounts: list[str], currencies: list[str]) -> tuple[list[_Cell], int]:
    """Amounts as numbers in their currency's format where Excel holds them exactly (the payment
    workbook's ``fits_excel``), else as exact text; and how many non-empty ones are text."""
    digits = pa.array([minor_digits(c) if is_currency(c) else None for c in currencies], pa.int32())
    fits = fits_excel(pa.array(amounts, pa.string()), digits).to_pylist()
    cells = []
    as_text = 0
    for amount, currency, fit in zip(amounts, currencies, fits, strict=True):
        if fit:
            cells.append(_Cell(Decimal(amount), currency_format(currency)))
        else:
            cells.append(_text(amount))
            as_text += bool(amount)
    return cells, as_text


def _number(text: str, number_format: str) -> _Cell:
    """A whole number (a count, a row of the books) as a number cell; anything else as text."""
    return _Cell(int(text), number_format) if _WHOLE.fullmatch(text) else _text(text)


def _text(text: str) -> _Cell:
    return _Cell(clean_text(text) or None)


def _write(book: Any, name: str, sheet: _Sheet, *, filtered: tuple[int, int, int], frozen: bool) -> None:
    """One sheet of the write-only workbook: widths and panes first (openpyxl writes them ahead of
    the rows), then the rows; the autofilter over rows ``filtered`` (first, last, columns)."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    worksheet = book.create_sheet(name)
    for i, width in enumerate(sheet.widths, start=1):
        worksheet.column_dimensions[get_column_letter(i)].width = width
    if frozen:
        worksheet.freeze_panes = "A2"
    first, last, columns = filtered
    worksheet.auto_filter.ref = f"A{first}:{get_column_letter(max(columns, 1))}{last}"
    bold = Font(bold=True)
    for row in sheet.rows:
        cells = []
        for cell in row:
            written = WriteOnlyCell(worksheet, value=cell.value)
            if isinstance(cell.value, str):
                written.data_type = "s"  # text, never a formula (openpyxl reads "=..." as one)
            if cell.number_format is not None:
                written.number_format = cell.number_format
            if cell.bold:
                written.font = bold
            cells.append(written)
        worksheet.append(cells)
