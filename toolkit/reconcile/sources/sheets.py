"""An Excel sheet, read a row at a time into a table of text as pandas read it, within Excel's
bounds (``MAX_CELLS``): the sheet that holds the payments, its header row, its cells as Excel
shows them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.reconcile.sources.described import Described, _columns, named_cells
from toolkit.reconcile.sources.formats import MAX_COLUMNS, WHITESPACE
from toolkit.reconcile.sources.frames import _text_of
from toolkit.reconcile.sources.options import ReadOptions

if TYPE_CHECKING:
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet


#: Excel's last row: a sheet that says it goes further was not written by Excel.
_EXCEL_ROWS = 1_048_576
#: The cells with a value a sheet may have: 50 million is Excel's every row 47 columns wide (a
#: workbook is read into memory, at about 20 bytes a cell); a larger table belongs in CSV or Parquet.
MAX_CELLS = 50_000_000


def _describe_xlsx(path: Path, options: ReadOptions, amount_columns: frozenset[str]) -> Described:
    """A sheet: the one named or numbered, else the first visible one whose header names the
    amount (``amount_columns``, as mapped: a cover sheet before the data is passed over, even one
    that says "Amount" below its title), else the first visible one with data, else the first with
    data. Its header row the one given, else ``_header_row``. The sheet is read a row at a time
    (``_sheet_table``): its declared range (``A1:XFD1048576``, 4.9 KB on disk) is never allocated."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True, keep_links=False)
    try:
        names = list(book.sheetnames)
        declared = {name: _declared_range(book[name]) for name in names}
        for name in names:  # rows as long as their cells, whatever range the sheet declares
            book[name].reset_dimensions()
        if isinstance(options.sheet, int):
            if options.sheet > len(names):
                raise InputError(
                    f"{path}: --sheet {options.sheet}: the workbook has {len(names)} sheet(s): "
                    + ", ".join(names)
                )
            sheet = names[options.sheet - 1]
            top = _top_rows(book[sheet])
        elif isinstance(options.sheet, str):
            if options.sheet not in names:
                raise InputError(f"{path}: no sheet {options.sheet!r}; sheets are {', '.join(names)}")
            sheet = options.sheet
            top = _top_rows(book[sheet])
        else:
            sheet, top = _data_sheet(book, names, amount_columns or frozenset({"amount"}), options.header_row)
        header_row = options.header_row if options.header_row is not None else _header_row(top)
        where = _Sheet(path, sheet, declared[sheet])
        table = _sheet_table(where, book[sheet], header_row, options.decimal or ".")
        table = table.rename_columns(named_cells(table.column_names))
    finally:
        book.close()
    return Described(
        str(path),
        "xlsx",
        _columns(table, str(path)),
        paths=(path,),
        table=table,
        header_line=header_row,
        sheet=sheet,
        sheets=tuple(names),
    )


@dataclass(frozen=True)
class _Sheet:
    """The sheet read, for messages: its workbook, its name and the range it declares."""

    path: Path
    name: str
    declared: str

    def refuse(self, what: str) -> InputError:
        """``what`` is wrong with the sheet: one line naming the file, the sheet and its range."""
        declares = f" (it declares the range {self.declared})" if self.declared else ""
        return InputError(
            f"{self.path}: sheet {self.name!r} {what}{declares}; a workbook is read into memory: "
            "clear the cells beyond the data, or save the sheet as CSV"
        )


def _declared_range(worksheet: ReadOnlyWorksheet) -> str:
    """The range the sheet says it spans (its ``dimension``, ``A1:D20``), or "" if it says none."""
    from openpyxl.utils import get_column_letter

    bounds = (worksheet.min_column, worksheet.min_row, worksheet.max_column, worksheet.max_row)
    if not all(isinstance(b, int) and b > 0 for b in bounds):
        return ""
    first_column, first_row, last_column, last_row = bounds
    return f"{get_column_letter(first_column)}{first_row}:{get_column_letter(last_column)}{last_row}"


#: Rows of a sheet turned into Arrow arrays at a time: Python strings cost about 60 bytes each.
_SHEET_CHUNK = 1 << 16


def _sheet_table(sheet: _Sheet, worksheet: ReadOnlyWorksheet, header_row: int, mark: str) -> pa.Table:
    """The rows below ``header_row`` as text under the header's names, numbered as on the sheet
    (``source_row``, ``_ord``), blank rows left out. Read a row at a time; kept are only the
    columns with a name, as Arrow strings. Cells are read as pandas read them (``_cell_value``,
    ``_header_names``).

    Refused at the first row that shows it: a value beyond ``MAX_COLUMNS`` columns, a row past
    Excel's last (``_EXCEL_ROWS``), more than ``MAX_CELLS`` cells."""
    from openpyxl.cell.read_only import EMPTY_CELL
    from openpyxl.utils import get_column_letter

    kept: list[int] = []
    names: list[str] = []
    texts: list[list[str]] = []
    numbers: list[int] = []
    chunks: list[list[pa.Array]] = []
    cells = last = 0  # the cells read; the last row with a value
    for number, row in enumerate(worksheet.iter_rows(), 1):
        if number > _EXCEL_ROWS:
            raise sheet.refuse(f"has rows beyond Excel's last ({_EXCEL_ROWS:,})")
        cells += len(row)
        if cells > MAX_CELLS:
            raise sheet.refuse(f"has more than {MAX_CELLS:,} cells (by row {number:,})")
        if number != header_row and all(cell is EMPTY_CELL for cell in row):
            continue  # openpyxl gives such a row for each row the sheet skips: a million past a stray cell
        values = [_cell_value(cell) for cell in row]
        width = next((i + 1 for i in range(len(values) - 1, -1, -1) if values[i] != ""), 0)
        if width > MAX_COLUMNS:
            raise sheet.refuse(
                f"has a value in cell {get_column_letter(width)}{number} (column {width:,}); "
                f"at most {MAX_COLUMNS:,} columns are read"
            )
        last = number if width else last
        if number == header_row:
            names, kept = _header_names(values)
            texts = [[] for _ in kept]
        elif number > header_row and kept:
            row_texts = [_cell_text(values[i], mark) if i < len(values) else "" for i in kept]
            if any(text.strip(WHITESPACE) for text in row_texts):  # a blank row is no row
                numbers.append(number)
                for column, text in zip(texts, row_texts, strict=True):
                    column.append(text)
            if len(texts[0]) >= _SHEET_CHUNK:
                chunks.append([pa.array(column, type=pa.string()) for column in texts])
                texts = [[] for _ in kept]
    if 0 < last < header_row:  # an empty sheet is an empty table, whatever its header row
        raise InputError(
            f"{sheet.path}: --header-row {header_row}: sheet {sheet.name!r} has only {last} row(s)"
        )
    chunks.append([pa.array(column, type=pa.string()) for column in texts])
    ords = pa.array(np.array(numbers, dtype=np.int64))
    columns = {name: pa.chunked_array([c[i] for c in chunks], pa.string()) for i, name in enumerate(names)}
    return pa.table({**columns, "_ord": ords, "source_row": ords})


def _cell_value(cell: Any) -> Any:
    """A cell as pandas' reader gave it (the toolkit read workbooks with it): empty and error
    cells "", a whole number as an int (``12.0`` is ``12``), else the value."""
    value = cell.value
    if value is None or cell.data_type == "e":
        return ""
    if cell.data_type == "n" and not isinstance(value, bool):
        whole = int(value)
        return whole if whole == value else value
    return value


def _header_names(values: list[Any]) -> tuple[list[str], list[int]]:
    """The header's names and the columns they are in, as pandas named them: a cell without a
    name leaves its column out; a name given again is ``name.1``, ``name.2``, skipping a name the
    header has (``x``, ``x``, ``x.1`` are ``x``, ``x.2``, ``x.1``)."""
    kept = [i for i, value in enumerate(values) if value != ""]
    names = [str(values[i]) for i in kept]
    given = set(names)
    counts: dict[str, int] = {}
    for i, name in enumerate(names):
        count = counts.get(name, 0)
        label = name
        while count > 0:
            counts[name] = count + 1
            label = f"{name}.{count}"
            count = count + 1 if label in given else counts.get(label, 0)
        names[i] = label
        counts[label] = count + 1
    return names, kept


#: The fewest columns a sheet of payments has (merchantReferenceId, amount, currency, status): a
#: cover's small table of totals under "Amount" has fewer.
_FEWEST_COLUMNS = 4


def _data_sheet(
    book: Any, names: list[str], amounts: frozenset[str], header_row: int | None
) -> tuple[str, list[tuple[int, list[Any]]]]:
    """The sheet ``_describe_xlsx`` reads when none is given, and its top rows (each sheet's are
    read once, here)."""
    tops = {name: _top_rows(book[name]) for name in names}
    visible = [name for name in names if book[name].sheet_state == "visible"]

    def header(name: str) -> list[Any]:
        row = header_row if header_row is not None else _header_row(tops[name])
        return next((cells for number, cells in tops[name] if number == row), [])

    named = (
        n
        for n in visible
        if len(header(n)) >= _FEWEST_COLUMNS and any(str(c).strip().lower() in amounts for c in header(n))
    )
    with_data = (n for n in (*visible, *names) if tops[n])
    sheet = next(named, None) or next(with_data, names[0])
    return sheet, tops[sheet]


def _header_row(top: list[tuple[int, list[Any]]]) -> int:
    """The first of the top rows that fills about as many cells as the widest of them (one fewer
    allows a data column without a name; a title above the header fills fewer)."""
    widest = max((len(cells) for _, cells in top), default=0)
    return next((row for row, cells in top if len(cells) >= max(widest - 1, 2)), 1)


def _top_rows(worksheet: ReadOnlyWorksheet) -> list[tuple[int, list[Any]]]:
    """The first 30 rows of a sheet: (row number, its non-empty cells)."""
    rows = []
    for number, values in enumerate(worksheet.iter_rows(min_row=1, max_row=30, values_only=True), 1):
        cells = [v for v in values if v is not None and str(v).strip()]
        if cells:
            rows.append((number, cells))
    return rows


def _cell_text(value: Any, mark: str) -> str:
    """A workbook cell as Excel shows it: a number at Excel's 15 significant digits (``=0.1+0.2``
    is stored as 0.30000000000000004 and shown 0.3; read as stored, it was refused as having too
    many decimals), written with the decimal mark the sheet is read with (a number cell has none
    of its own: with ``--decimal ,`` its 12.5 was refused as no decimal-comma amount)."""
    if isinstance(value, float) and math.isfinite(value):
        text = format(Decimal(format(value, ".15g")), "f")
        return text.replace(".", ",") if mark == "," else text
    return _text_of(value)
