"""report.xlsx: a summary sheet, then a sheet per category with exceptions, amounts as numbers.

What the controller gets:

* ``Summary`` first: where the data came from, the row accounting, and the counts and amounts by
  category and currency (with an autofilter), then a note on how amounts are stored.
* A sheet per category that has exceptions (none for a category without), continued on numbered
  sheets past Excel's 1,048,576 rows; the header row is bold and frozen, an autofilter covers the
  table, and column widths follow the header and the longest value (capped). The exception
  categories come first (and a tracked run's ``resolved``), then the informational ones
  (``in_transit``, ``within_tolerance``), then ``FX``: the payments compared at reference rates.
* Amounts are number cells in their currency's number format (``#,##0.00 "USD"``, JPY without
  decimals, KWD with three), so they can be summed. The ``<v>`` of such a cell is the amount's
  exact decimal text (``<v>12.30</v>``): no float ever holds it. A number is written only where it
  has at most the currency's decimals (the format would otherwise round what is shown) and at
  most 15 significant digits at the currency's decimals: Excel keeps 15, and any decimal of 15
  digits or fewer converts to a double and back to the same digits. Longer amounts (from 16
  digits, e.g. ``12345678901234.567`` KWD) stay exact text, as does anything that is not a plain
  decimal; the summary sheet says how many.

Why written by hand (``benchmarks/workbook_writers.py``, the 1M-row benchmark's workbook: 100k
rows x 11 columns, best of 3, one run): this writer takes 0.31 s and 83 MB, the text-only writer it
replaced 0.49 s. Of the library writers, only those that set a format per cell can show each
currency's decimals in a column of mixed currencies (one format per column shows a KWD 0.001 as
0.00), and then they are slower: jetxl 0.77 s (a Python dict per amount), rvgsrust-xlsxwriter
(rust_xlsxwriter) 1.2-1.3 s, xlsxwriter in constant-memory mode 5.9 s. With one format per column
jetxl takes 0.35 s, rustpy-xlsxwriter 0.82 s, polars 7.6 s; DuckDB's excel extension (from the
``duckdb-extension-excel`` wheel; ``INSTALL excel`` downloads it) 1.0 s for one unformatted sheet,
its only shape. And every one of them takes amounts as floats; those fed from Arrow type a column
as a whole, so there an amount past Excel's precision could not stay text beside the numbers.

Hardening: every text that reaches the workbook (cells, the title, the environment, the sources,
headers, sheet names) is cleaned alike (``clean_text``; ``_xml_text`` for whole columns): a lone
surrogate, what Python makes of a file name or an argument that is no UTF-8, shows as U+FFFD;
characters XML 1.0 cannot hold (control characters) are dropped, since one of them makes the whole
workbook unreadable; text is cut at Excel's 32,767 characters per cell. Sheet names also lose the
characters Excel refuses there. Cells are inline strings, which a spreadsheet never executes.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.money import is_currency, minor_digits
from toolkit.outputs import cell_text
from toolkit.reconcile.controller_view import moment_text, tolerance_text
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import FX_COLUMNS, SUMMARY_COLUMNS, in_report_order, severity_of
from toolkit.reconcile.timing import duration_text

#: Excel's limits: rows per sheet (one is the header) and characters per cell, which Excel counts
#: in UTF-16 code units (a character beyond the BMP, an emoji, counts two).
MAX_SHEET_ROWS = 1_048_576
MAX_CELL_CHARS = 32_767
#: The end of a cell cut at Excel's limit: a reader sees it is not the whole text, and where that is.
CUT_MARK = " [… cut at Excel's limit of 32,767 characters; exceptions.csv has it whole]"
#: Significant digits Excel keeps in a number; longer amounts are written as text.
EXCEL_DIGITS = 15
#: Widest column, in characters (a long ``detail`` wraps past the edge instead).
MAX_COLUMN_WIDTH = 60
_XML_ILLEGAL = "[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]"
_XML_ILLEGAL_RE = re.compile(_XML_ILLEGAL)
#: A lone surrogate: only a Python str holds one (bytes that were no UTF-8, decoded with
#: ``surrogateescape``), and it cannot even be encoded to UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What Excel refuses in a sheet name.
_SHEET_NAME_ILLEGAL = re.compile(r"[\[\]:*?/\\]")
_DECIMAL = r"^-?[0-9]+(\.[0-9]+)?$"
#: Amount columns of the exceptions and the currency column each is in.
AMOUNT_COLUMNS = {"ledger_amount": "ledger_currency", "processor_amount": "processor_currency"}
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
_NOTE = (
    "Amounts are numbers in their currency's format wherever Excel holds them exactly (at most "
    f"{EXCEL_DIGITS} significant digits at the currency's decimals); longer amounts are exact text."
)

# Styles (cellXfs): 0 plain, 1 bold header, 2 counts with thousands separators, then a number
# format per currency present (numFmt ids from 164, the first free for custom formats).
_BOLD, _COUNT, _FIRST_CURRENCY = 1, 2, 3

_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_CONTENT_TYPES = (
    _XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.styles+xml"/>{sheets}</Types>'
)
_ROOT_RELS = (
    _XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)


@dataclasses.dataclass(frozen=True)
class _Sheet:
    """One worksheet: its rows as XML (a string, or the bytes of an arrow array's values)."""

    name: str
    header: str  # XML of the first row(s)
    rows: str | memoryview | IO[bytes]  # a temporary file for rows read back in batches
    widths: Sequence[float]
    table: tuple[int, int, int] | None = None  # first and last row (1-based), columns filtered
    frozen: bool = False  # the first row stays in view


def currency_format(currency: str) -> str:
    """Excel's number format for an ISO 4217 currency: ``#,##0.00 "USD"``, ``#,##0 "JPY"``."""
    digits = minor_digits(currency)
    return ("#,##0." + "0" * digits if digits else "#,##0") + f' "{currency}"'


def _xml_text(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Text made safe for a cell, with pyarrow's vectorised string kernels.

    Characters XML cannot hold (control characters from a malformed input row) are dropped, text
    is cut at Excel's cell limit, then escaped; otherwise Excel would refuse the whole workbook.
    Each step runs only when the column's bytes need it (one scan of the buffer each), since
    most columns never do.
    """
    data = _values(array)
    if _has_xml_illegal(data):
        array = pc.replace_substring_regex(array, _XML_ILLEGAL, "")
    if len(array) and (pc.max(pc.binary_length(array)).as_py() or 0) > MAX_CELL_CHARS:  # bytes >= units
        array = pa.array([_cut_for_excel(text) for text in array.to_pylist()], type=array.type)
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        if char.encode() in data:
            array = pc.replace_substring(array, char, entity)
    return array


def clean_text(text: str) -> str:
    """``text`` as the workbook holds it, wherever it goes (see the module docstring): a lone
    surrogate as U+FFFD, characters XML cannot hold dropped, cut at Excel's cell limit. The same
    cleaning as ``_xml_text`` gives a column, for the texts written one by one."""
    return _cut(_XML_ILLEGAL_RE.sub("", _SURROGATE.sub("\ufffd", text)))


def _texts(values: Iterable[object]) -> pa.Array:
    """A string array of ``values`` (from the result's frames and settings), each cleaned: a
    surrogate would stop ``pa.array`` itself."""
    return pa.array([clean_text(str(v)) for v in values], type=pa.string())


def _sheet_name(category: str, number: int) -> str:
    """The name of a category's ``number``-th sheet: cleaned, without what Excel refuses in a
    sheet name, within its 31 characters (a continuation sheet numbered)."""
    base = _SHEET_NAME_ILLEGAL.sub("_", clean_text(category)).strip("'") or "_"
    return base[:31] if number == 1 else f"{base[:25]} ({number})"


def _cut_for_excel(text: str | None) -> str | None:
    """``_cut`` of a cell (None stays None)."""
    return None if text is None else _cut(text)


def _cut(text: str) -> str:
    """``text`` as a cell holds it: whole when it fits Excel's limit (in UTF-16 code units, as
    Excel counts), else cut to fit with ``CUT_MARK`` at its end, never inside a character."""
    units = text.encode("utf-16-le")
    if len(units) <= 2 * MAX_CELL_CHARS:
        return text
    kept = units[: 2 * (MAX_CELL_CHARS - len(CUT_MARK))].decode("utf-16-le", errors="ignore")
    return kept + CUT_MARK


def _has_xml_illegal(data: bytes) -> bool:
    """Whether UTF-8 bytes hold a character of ``_XML_ILLEGAL`` (numpy: a regex scan is slower)."""
    codes = np.frombuffer(data, dtype=np.uint8)
    control = codes[codes < 0x20]
    return bool(
        np.isin(control, (0x09, 0x0A, 0x0D), invert=True).any()
        or b"\xef\xbf\xbe" in data
        or b"\xef\xbf\xbf" in data
    )  # U+FFFE, U+FFFF


def _values(array: pa.Array | pa.ChunkedArray) -> bytes:
    """The bytes of all the strings of an array, back to back (for a quick scan)."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    return b"".join(bytes(_value_bytes(c)) for c in chunks)


def _join(*parts: str | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Row-wise concatenation of arrays and constant text, in the arrays' string type."""
    kind = next(p.type for p in parts if not isinstance(p, str))
    return pc.binary_join_element_wise(
        *(pa.scalar(p, type=kind) if isinstance(p, str) else p for p in parts),
        pa.scalar("", type=kind),
    )


def _text_cells(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Inline-string cells (``<c/>`` for '')."""
    safe = _xml_text(text)
    filled = _join('<c t="inlineStr"><is><t>', safe, "</t></is></c>")
    return pc.if_else(pc.equal(text, ""), pa.scalar("<c/>", type=filled.type), filled)


def _number_cells(text: pa.Array | pa.ChunkedArray, style: int = 0) -> pa.Array | pa.ChunkedArray:
    """Number cells of integer text (row numbers, counts), ``<c/>`` for ''."""
    attribute = f' s="{style}"' if style else ""
    filled = _join(f"<c{attribute}><v>", text, "</v></c>")
    return pc.if_else(pc.equal(text, ""), pa.scalar("<c/>", type=filled.type), filled)


def _decimal_cells(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Number cells of plain decimals of at most ``EXCEL_DIGITS`` significant digits (a rate:
    Excel shows it in full and keeps it exactly); anything else stays exact text."""
    digits = pc.replace_substring_regex(pc.replace_substring(text, ".", ""), "^-?0*", "")
    fits = pc.fill_null(
        pc.and_(
            pc.match_substring_regex(text, _DECIMAL), pc.less_equal(pc.utf8_length(digits), EXCEL_DIGITS)
        ),
        False,
    )
    return pc.if_else(fits, _number_cells(text), _text_cells(text))


def fits_excel(
    amount: pa.Array | pa.ChunkedArray, digits: pa.Array | pa.ChunkedArray
) -> pa.Array | pa.ChunkedArray:
    """True where the amount text can be a number cell that shows it exactly (see the module doc):
    a plain decimal with at most ``digits`` decimals and at most ``EXCEL_DIGITS`` significant
    digits at ``digits`` decimals; False where ``digits`` is null (no known currency)."""
    point = pc.find_substring(amount, ".")
    decimals = pc.if_else(pc.less(point, 0), 0, pc.subtract(pc.subtract(pc.utf8_length(amount), point), 1))
    whole = pc.replace_substring_regex(amount, "^-?0*", "")  # integer digits that count
    whole_point = pc.find_substring(whole, ".")
    whole_digits = pc.if_else(pc.less(whole_point, 0), pc.utf8_length(whole), whole_point)
    fits = pc.and_(
        pc.match_substring_regex(amount, _DECIMAL),
        pc.and_(pc.less_equal(decimals, digits), pc.less_equal(pc.add(whole_digits, digits), EXCEL_DIGITS)),
    )
    return pc.fill_null(fits, False)


class _Currencies:
    """The currencies present, each with its number format and style."""

    def __init__(self, codes: set[str]) -> None:
        self.codes = sorted(c for c in codes if is_currency(c))
        self._value_set = pa.array(self.codes, type=pa.string())
        self._digits = pa.array([minor_digits(c) for c in self.codes], type=pa.int32())
        self._styles = pa.array([str(_FIRST_CURRENCY + i) for i in range(len(self.codes))], type=pa.string())

    def amount_cells(
        self, amount: pa.Array | pa.ChunkedArray, currency: pa.Array | pa.ChunkedArray
    ) -> tuple[pa.Array | pa.ChunkedArray, int]:
        """Cells of an amount column and how many non-empty amounts are kept as text."""
        index = pc.index_in(currency, value_set=self._value_set)
        fits = fits_excel(amount, pc.take(self._digits, index))
        number = _join('<c s="', pc.take(self._styles, index).cast(amount.type), '"><v>', amount, "</v></c>")
        cells = pc.if_else(fits, number, _text_cells(amount))
        as_text = pc.sum(pc.and_(pc.invert(fits), pc.not_equal(amount, ""))).as_py() or 0
        return cells, int(as_text)

    def styles_xml(self) -> str:
        formats = "".join(
            f'<numFmt numFmtId="{164 + i}" formatCode={quoteattr(currency_format(c))}/>'
            for i, c in enumerate(self.codes)
        )
        currency_xfs = "".join(
            f'<xf numFmtId="{164 + i}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
            for i in range(len(self.codes))
        )
        return (
            _XML
            + f"<styleSheet {_NS}>"
            + (f'<numFmts count="{len(self.codes)}">{formats}</numFmts>' if self.codes else "")
            + '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>'
            '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>'
            '<fills count="2"><fill><patternFill patternType="none"/></fill>'
            '<fill><patternFill patternType="gray125"/></fill></fills>'
            '<borders count="1"><border/></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
            "</cellStyleXfs>"
            f'<cellXfs count="{_FIRST_CURRENCY + len(self.codes)}">'
            '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
            '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
            '<xf numFmtId="3" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
            + currency_xfs
            + "</cellXfs>"
            '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            "</styleSheet>"
        )


def _rows(cells: list[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """One ``<row>`` per row (no ``r`` reference: the same rows can go to any sheet)."""
    joined = _join("<row>", *cells, "</row>")
    joined = joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined
    return joined.cast(pa.large_string())


def _value_bytes(array: pa.Array) -> memoryview:
    """The values of a string array back to back, without a copy (Arrow stores them so)."""
    if len(array) == 0:
        return memoryview(b"")
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    width = 8 if large else 4
    offsets = np.frombuffer(
        array.buffers()[1],
        dtype=np.int64 if large else np.int32,
        count=len(array) + 1,
        offset=array.offset * width,
    )
    return memoryview(array.buffers()[2])[int(offsets[0]) : int(offsets[-1])]


def _header(columns: Sequence[str]) -> str:
    return (
        "<row>"
        + "".join(
            f'<c t="inlineStr" s="{_BOLD}"><is><t>{escape(clean_text(c))}</t></is></c>' for c in columns
        )
        + "</row>"
    )


def _width(header: str, longest: int, *, amount: bool = False) -> float:
    """Characters: the header or the longest value (an amount gains separators and its code)."""
    if amount:
        longest += longest // 3 + 4
    return float(min(MAX_COLUMN_WIDTH, max(len(header), longest) + 2))


def _categories(table: pa.Table) -> dict[str, int]:
    """Exceptions per category that has any, in report order (any unknown one after, not lost)."""
    counts = {
        str(v["values"]): int(v["counts"]) for v in pc.value_counts(table.column("category")).to_pylist()
    }
    return {c: counts[c] for c in in_report_order(counts)}


def _category_sheets(
    texts: CategoryTexts, category: str, currencies: _Currencies
) -> tuple[list[_Sheet], int]:
    """The sheet(s) of one category (split at Excel's row limit) and its amounts kept as text.

    One category at a time, so that only its cells are in memory while it is written.
    """
    return _batch_sheets(texts.batches(category), category, currencies, on_disk=texts.streamed)


def _batch_sheets(
    parts: Iterable[pa.Table],
    category: str,
    currencies: _Currencies,
    amounts: dict[str, str] = AMOUNT_COLUMNS,
    *,
    on_disk: bool = False,
) -> tuple[list[_Sheet], int]:
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
                if on_disk:  # closed by ``_write_sheet``; an unnamed file, gone once closed
                    files.append(tempfile.TemporaryFile())  # noqa: SIM115
            chunk = rows.slice(start, per_sheet - counts[-1])
            if on_disk:
                files[-1].write(_value_bytes(chunk))
            else:
                sheets[-1].append(_value_bytes(chunk))
            counts[-1] += len(chunk)
            start += len(chunk)
    widths = [_width(c, n, amount=c in amounts) for c, n in zip(columns, longest, strict=True)]
    out = []
    for number, count in enumerate(counts, start=1):
        name = _sheet_name(category, number)
        held = sheets[number - 1]
        rows_xml: memoryview | IO[bytes] = (
            files[number - 1] if on_disk else held[0] if len(held) == 1 else memoryview(b"".join(held))
        )
        out.append(
            _Sheet(name, _header(columns), rows_xml, widths, table=(1, count + 1, len(columns)), frozen=True)
        )
    return out, as_text


def _row_cells(part: pa.Table, currencies: _Currencies, amounts: dict[str, str]) -> tuple[pa.Array, int]:
    """One ``<row>`` of cells per row of ``part``, and how many amounts are kept as text."""
    as_text = 0
    cells = []
    for column in part.column_names:
        if column in amounts:
            amount_cells, count = currencies.amount_cells(part.column(column), part.column(amounts[column]))
            cells.append(amount_cells)
            as_text += count
        elif column in _INTEGER_COLUMNS:
            cells.append(_number_cells(part.column(column)))
        elif column in _DECIMAL_COLUMNS:
            cells.append(_decimal_cells(part.column(column)))
        else:
            cells.append(_text_cells(part.column(column)))
    return _rows(cells), as_text


def _summary_sheet(
    result: ReconciliationResult,
    *,
    title: str,
    environment: str,
    generated_at: str,
    currencies: _Currencies,
    as_text: int,
) -> _Sheet:
    """Environment, the run's settings (tolerance, cut-off, settlement window), row accounting,
    counts and amounts by category and currency (the table under the autofilter), the variance
    per currency pair and the missing rates, then the note on amounts with the count of those
    kept as text."""
    accounting = _accounting(result)
    frame = result.summary
    summary = {
        "category": [str(c) for c in frame["category"]],
        "currency": [str(c) for c in frame["currency"]],
        "count": [str(int(c)) for c in frame["count"]],
        "amount": ["" if a is None or a != a else str(a) for a in frame["amount"]],
    }
    text = {k: _texts(v) for k, v in summary.items()}
    amounts, summary_as_text = currencies.amount_cells(text["amount"], text["currency"])
    fx_lines, fx_as_text = _fx_lines(result, currencies)
    as_text += summary_as_text + fx_as_text
    note = _NOTE + (f" {as_text:,} amount(s) in this workbook are text." if as_text else "")
    lines = [
        _header([f"Data from: {environment}"]),
        *_text_rows([title, f"Generated {generated_at}", *_settings(result)]),
        "<row/>",
        _header(list(accounting)),
        *_rows(
            [
                _text_cells(_texts(v)) if k in ("side", "source") else _number_cells(_texts(v), _COUNT)
                for k, v in accounting.items()
            ]
        ).to_pylist(),
        "<row/>",
    ]
    first = len(lines) + 1  # the summary table's header row, where the autofilter starts
    lines += [
        _header(list(SUMMARY_COLUMNS)),
        *_rows(
            [
                _text_cells(text["category"]),
                _text_cells(text["currency"]),
                _number_cells(text["count"], _COUNT),
                amounts,
            ]
        ).to_pylist(),
        "<row/>",
        *fx_lines,
        *_tracking_lines(result),
        *_text_rows([note]),
    ]
    widths = [
        max(pair)
        for pair in itertools.zip_longest(_table_widths(accounting), _table_widths(summary), fillvalue=0.0)
    ]
    return _Sheet(
        "Summary", "", "".join(lines), widths, table=(first, first + len(frame), len(SUMMARY_COLUMNS))
    )


def _text_rows(texts: list[str]) -> list[str]:
    """One row of one text cell per text."""
    rows: list[str] = _rows([_text_cells(_texts(texts))]).to_pylist()
    return rows


def _accounting(result: ReconciliationResult) -> dict[str, list[str]]:
    """The row accounting of each input, as the page shows it: the in-transit, outside-period
    and after-cut-off columns only when some row is there."""
    counts = result.counts
    accounting = {
        "side": [c.side for c in counts],
        "source": [c.source for c in counts],
        "rows": [str(c.rows) for c in counts],
        "matched": [str(c.matched) for c in counts],
        "in exceptions": [str(c.exceptions) for c in counts],
    }
    if any(c.in_transit for c in counts):
        accounting["in transit"] = [str(c.in_transit) for c in counts]
    accounting["rejected"] = [str(c.rejected) for c in counts]
    if any(c.outside for c in counts):
        accounting["outside period"] = [str(c.outside) for c in counts]
    if any(c.after_cutoff for c in counts):
        accounting["after cut-off"] = [str(c.after_cutoff) for c in counts]
    return accounting


def _settings(result: ReconciliationResult) -> list[str]:
    """The run's amount tolerance, and its cut-off and settlement window where it had them."""
    lines = [f"Amount tolerance: {tolerance_text(result.amount_tolerance)}"]
    cutoff, grace = result.cutoff, result.grace
    if cutoff is not None:
        lines.append(f"Cut-off: {moment_text(cutoff)} (rows dated after it are left for the next run)")
    if grace:
        dated = f"dated from {moment_text(cutoff - grace)} " if cutoff is not None else ""
        lines.append(
            f"Settlement window: {duration_text(grace)} (payments {dated}that have not settled yet "
            "are in transit, not breaks)"
        )
    return lines


def _fx_lines(result: ReconciliationResult, currencies: _Currencies) -> tuple[list[str], int]:
    """The total variance per currency pair (numbers in the charged currency) and the rates the
    rate file lacked (none of it without reference rates), and the variances kept as text."""
    lines: list[str] = []
    pairs = result.fx_pairs
    as_text = 0
    if len(pairs):
        charged = _texts(pairs["charged_currency"])
        variance, as_text = currencies.amount_cells(_texts(pairs["variance"]), charged)
        lines.append(_header(["booked", "charged", "payments at a reference rate", "total variance"]))
        lines += _rows(
            [
                _text_cells(_texts(pairs["ledger_currency"])),
                _text_cells(charged),
                _number_cells(pa.array([str(int(n)) for n in pairs["payments"]], type=pa.string()), _COUNT),
                variance,
            ]
        ).to_pylist()
        lines += _text_rows(
            ["Variance: charged - expected at the reference rate, in the charged currency (FX sheet)."]
        )
        lines.append("<row/>")
    if result.missing_rates:
        lines.append(
            _header(["Rates missing from the rate file: payments that needed them were not compared"])
        )
        lines += [*_text_rows(list(result.missing_rates)), "<row/>"]
    return lines, as_text


def _tracking_lines(result: ReconciliationResult) -> list[str]:
    """For a tracked run: the run, then states per category and exceptions by age (empty else)."""
    tracking = result.tracking
    if tracking is None:
        return []
    counts = tracking.state_counts()
    previous = f"previous run {tracking.previous_run}" if tracking.previous_run else "first run of the track"
    heading = (
        f"Track {tracking.track}: run {tracking.run} as of {tracking.as_of_text} ({previous}): "
        + ", ".join(f"{counts[s]} {s}" for s in ("new", "open", "acknowledged", "resolved"))
    )
    lines = [*_rows([_text_cells(_texts([heading]))]).to_pylist()]
    for frame in (tracking.states(), tracking.age_buckets()):
        lines.append(_header([str(c) for c in frame.columns]))
        cells = [
            _text_cells(_texts(frame[c])) if i == 0 else _number_cells(_texts(frame[c]), _COUNT)
            for i, c in enumerate(frame.columns)
        ]
        if len(frame):
            lines += _rows(cells).to_pylist()
        lines.append("<row/>")
    return lines


def _table_widths(columns: dict[str, list[str]]) -> list[float]:
    return [
        _width(name, max(map(len, values), default=0), amount=name == "amount")
        for name, values in columns.items()
    ]


def _column(index: int) -> str:
    """Excel's column letters of a 0-based index (0 -> A, 26 -> AA)."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def _filter_ref(sheet: _Sheet) -> str | None:
    if sheet.table is None:
        return None
    first, last, columns = sheet.table
    return f"A{first}:{_column(columns - 1)}{last}"


def _sheet_head(sheet: _Sheet, selected: bool) -> str:
    pane = (
        '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
        '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/>'
        if sheet.frozen
        else ""
    )
    cols = "".join(
        f'<col min="{i}" max="{i}" width="{w:g}" customWidth="1"/>'
        for i, w in enumerate(sheet.widths, start=1)
    )
    tab = ' tabSelected="1"' if selected else ""
    return (
        _XML + f'<worksheet {_NS} xmlns:r="{_REL}">'
        f'<sheetViews><sheetView workbookViewId="0"{tab}>{pane}</sheetView></sheetViews>'
        '<sheetFormatPr defaultRowHeight="15"/>'
        f"<cols>{cols}</cols><sheetData>{sheet.header}"
    )


def _sheet_tail(sheet: _Sheet) -> str:
    ref = _filter_ref(sheet)
    return "</sheetData>" + (f'<autoFilter ref="{ref}"/>' if ref else "") + "</worksheet>"


def _workbook_xml(sheets: list[_Sheet]) -> str:
    names = "".join(
        f'<sheet name={quoteattr(s.name)} sheetId="{i}" r:id="rId{i}"/>'
        for i, s in enumerate(sheets, start=1)
    )
    # Excel keeps each sheet's filter range in a hidden name; it repairs a workbook without one.
    defined = "".join(
        f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">'
        f"{escape(_quoted(s.name))}!{_absolute(ref)}</definedName>"
        for i, s in enumerate(sheets)
        if (ref := _filter_ref(s))
    )
    return (
        _XML + f'<workbook {_NS} xmlns:r="{_REL}">'
        '<bookViews><workbookView activeTab="0"/></bookViews>'
        f"<sheets>{names}</sheets>"
        + (f"<definedNames>{defined}</definedNames>" if defined else "")
        + "</workbook>"
    )


def _quoted(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _absolute(ref: str) -> str:
    """``A1:K9`` -> ``$A$1:$K$9``."""

    def one(cell: str) -> str:
        letters = cell.rstrip("0123456789")
        return f"${letters}${cell[len(letters) :]}"

    return ":".join(one(c) for c in ref.split(":"))


def _workbook_rels(count: int) -> str:
    return (
        _XML
        + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, count + 1)
        )
        + f'<Relationship Id="rId{count + 1}" Type="{_REL}/styles" Target="styles.xml"/>'
        "</Relationships>"
    )


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


def write_xlsx(
    result: ReconciliationResult,
    path: Path,
    *,
    title: str,
    environment: str,
    generated_at: str,
    table: pa.Table | CategoryTexts,
) -> None:
    """Write the workbook to ``path``; ``table`` holds the exceptions as exact text ('' for
    missing), as ``report.exceptions_text_table`` makes it for exceptions.csv (or reads them one
    category at a time: ``CategoryTexts``).

    Each category's sheets are written as soon as they are built, and the summary, which counts
    the amounts kept as text, after them (the order of a package's parts carries no meaning, but
    file-type sniffers look for ``[Content_Types].xml`` first).
    """
    texts = table if isinstance(table, CategoryTexts) else CategoryTexts.of(table)
    resolved, fx = _resolved_table(result), _fx_table(result)
    currencies = _Currencies(_currency_codes(result, texts, resolved, fx))
    sources = _sheet_sources(texts, resolved, fx, currencies)
    count = 1 + sum(_sheet_count(rows) for rows, _ in sources)
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, count + 1)
    )
    sheets: list[_Sheet] = []  # without their rows once written
    as_text = 0
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES.format(sheets=overrides))
        archive.writestr("_rels/.rels", _ROOT_RELS)
        archive.writestr("xl/_rels/workbook.xml.rels", _workbook_rels(count))
        for _, build in sources:
            parts, text_amounts = build()
            as_text += text_amounts
            for sheet in parts:
                _write_sheet(archive, f"xl/worksheets/sheet{len(sheets) + 2}.xml", sheet, selected=False)
                sheets.append(dataclasses.replace(sheet, rows=""))
        summary = _summary_sheet(
            result,
            title=title,
            environment=environment,
            generated_at=generated_at,
            currencies=currencies,
            as_text=as_text,
        )
        _write_sheet(archive, "xl/worksheets/sheet1.xml", summary, selected=True)
        sheets.insert(0, summary)
        assert len(sheets) == count, (len(sheets), count)
        archive.writestr("xl/styles.xml", currencies.styles_xml())
        archive.writestr("xl/workbook.xml", _workbook_xml(sheets))


#: Rows of one table, and how to build its sheets (with the count of amounts kept as text).
_Source = tuple[int, Callable[[], tuple[list[_Sheet], int]]]


def _sheet_sources(
    texts: CategoryTexts, resolved: pa.Table | None, fx: pa.Table | None, currencies: _Currencies
) -> list[_Source]:
    """The tables after the summary, in workbook order: the exception categories, a tracked run's
    resolved exceptions, the informational categories, then FX; only those with rows (no empty
    sheet). Built one at a time when written, so only one table's cells are in memory."""
    categories = texts.counts

    def category(name: str) -> _Source:
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


def _sheet_count(rows: int) -> int:
    """Sheets a table of ``rows`` rows takes (one header row on each)."""
    return -(-rows // (MAX_SHEET_ROWS - 1))


def _currency_codes(
    result: ReconciliationResult, texts: CategoryTexts, resolved: pa.Table | None, fx: pa.Table | None
) -> set[str]:
    """Every currency an amount of the workbook is in (each gets its number format)."""
    codes: set[str] = {str(c) for c in result.summary["currency"].unique() if c} | texts.currencies
    for part, columns in ((resolved, AMOUNT_COLUMNS), (fx, FX_AMOUNT_COLUMNS)):
        if part is None:
            continue
        for column in set(columns.values()):
            codes.update(str(c) for c in pc.unique(part.column(column)).to_pylist() if c)
    return codes


def _fx_table(result: ReconciliationResult) -> pa.Table | None:
    """The payments compared at reference rates as text (None when there is none)."""
    if result.fx.empty:
        return None
    frame = result.fx.reindex(columns=list(FX_COLUMNS))
    return pa.table(
        {c: pa.array([cell_text(v) for v in frame[c]], type=pa.string()) for c in FX_COLUMNS}
    ).combine_chunks()


def _resolved_table(result: ReconciliationResult) -> pa.Table | None:
    """The resolved exceptions of a tracked run as text (None for a run without a track)."""
    if result.tracking is None:
        return None
    frame = result.tracking.resolved
    return pa.table(
        {str(c): pa.array([str(v) for v in frame[c]], type=pa.string()) for c in frame.columns}
    ).combine_chunks()


def _write_sheet(archive: zipfile.ZipFile, name: str, sheet: _Sheet, *, selected: bool) -> None:
    """Stream one sheet into the archive: the rows go from the arrow buffer (or the temporary
    file they were written to), never one string."""
    head = _sheet_head(sheet, selected).encode()
    tail = _sheet_tail(sheet).encode()
    if isinstance(sheet.rows, str | memoryview):
        rows = memoryview(sheet.rows.encode() if isinstance(sheet.rows, str) else sheet.rows)
        size = len(head) + rows.nbytes + len(tail)
        with archive.open(name, "w", force_zip64=size > zipfile.ZIP64_LIMIT) as handle:
            handle.write(head)
            handle.write(rows)
            handle.write(tail)
        return
    with sheet.rows as written:
        size = len(head) + written.seek(0, io.SEEK_END) + len(tail)
        written.seek(0)
        with archive.open(name, "w", force_zip64=size > zipfile.ZIP64_LIMIT) as handle:
            handle.write(head)
            shutil.copyfileobj(written, handle, 1 << 20)
            handle.write(tail)
