"""The cells of report.xlsx: text cleaned so that Excel opens the workbook whatever reaches it,
amounts as numbers in their currency's format (the styles), and rows of cells as XML, built a
column at a time with pyarrow's string kernels. The sheets (``workbook_exceptions``,
``workbook_summary``) are made of these; ``workbook`` writes them into the package.

Hardening: every text that reaches the workbook (cells, the title, the environment, the sources,
headers, sheet names) is cleaned alike (``clean_text``; ``_xml_text`` for whole columns): a lone
surrogate, what Python makes of a file name or an argument that is no UTF-8, shows as U+FFFD;
characters XML 1.0 cannot hold (control characters) are dropped, since one of them makes the whole
workbook unreadable; text is cut at Excel's 32,767 characters per cell. Sheet names also lose the
characters Excel refuses there. Cells are inline strings, which a spreadsheet never executes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import IO
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.money import is_currency, minor_digits

#: Excel's limit of characters per cell, which Excel counts in UTF-16 code units (a character
#: beyond the BMP, an emoji, counts two).
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

# Styles (cellXfs): 0 plain, 1 bold header, 2 counts with thousands separators, then a number
# format per currency present (numFmt ids from 164, the first free for custom formats).
_BOLD, COUNT_STYLE, _FIRST_CURRENCY = 1, 2, 3

#: The spreadsheet namespace and the XML declaration every part of the package starts with.
MAIN_NAMESPACE = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'


@dataclasses.dataclass(frozen=True)
class Sheet:
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


def clean_texts(values: Iterable[object]) -> pa.Array:
    """A string array of ``values`` (from the result's frames and settings), each cleaned: a
    surrogate would stop ``pa.array`` itself."""
    return pa.array([clean_text(str(v)) for v in values], type=pa.string())


def sheet_name(category: str, number: int) -> str:
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
    return b"".join(bytes(value_bytes(c)) for c in chunks)


def _join(*parts: str | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Row-wise concatenation of arrays and constant text, in the arrays' string type."""
    kind = next(p.type for p in parts if not isinstance(p, str))
    return pc.binary_join_element_wise(
        *(pa.scalar(p, type=kind) if isinstance(p, str) else p for p in parts),
        pa.scalar("", type=kind),
    )


def text_cells(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Inline-string cells (``<c/>`` for '')."""
    safe = _xml_text(text)
    filled = _join('<c t="inlineStr"><is><t>', safe, "</t></is></c>")
    return pc.if_else(pc.equal(text, ""), pa.scalar("<c/>", type=filled.type), filled)


def number_cells(text: pa.Array | pa.ChunkedArray, style: int = 0) -> pa.Array | pa.ChunkedArray:
    """Number cells of integer text (row numbers, counts), ``<c/>`` for ''."""
    attribute = f' s="{style}"' if style else ""
    filled = _join(f"<c{attribute}><v>", text, "</v></c>")
    return pc.if_else(pc.equal(text, ""), pa.scalar("<c/>", type=filled.type), filled)


def decimal_cells(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Number cells of plain decimals of at most ``EXCEL_DIGITS`` significant digits (a rate:
    Excel shows it in full and keeps it exactly); anything else stays exact text."""
    digits = pc.replace_substring_regex(pc.replace_substring(text, ".", ""), "^-?0*", "")
    fits = pc.fill_null(
        pc.and_(
            pc.match_substring_regex(text, _DECIMAL), pc.less_equal(pc.utf8_length(digits), EXCEL_DIGITS)
        ),
        False,
    )
    return pc.if_else(fits, number_cells(text), text_cells(text))


def fits_excel(
    amount: pa.Array | pa.ChunkedArray, digits: pa.Array | pa.ChunkedArray
) -> pa.Array | pa.ChunkedArray:
    """True where the amount text can be a number cell that shows it exactly (see ``workbook``):
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


class Currencies:
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
        cells = pc.if_else(fits, number, text_cells(amount))
        as_text = pc.sum(pc.and_(pc.invert(fits), pc.not_equal(amount, ""))).as_py() or 0
        return cells, int(as_text)

    def styles_xml(self) -> str:
        """xl/styles.xml: the plain, bold and count styles, then a number format per currency."""
        formats = "".join(
            f'<numFmt numFmtId="{164 + i}" formatCode={quoteattr(currency_format(c))}/>'
            for i, c in enumerate(self.codes)
        )
        currency_xfs = "".join(
            f'<xf numFmtId="{164 + i}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
            for i in range(len(self.codes))
        )
        return (
            XML_DECLARATION
            + f"<styleSheet {MAIN_NAMESPACE}>"
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


def row_xml(cells: list[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """One ``<row>`` per row (no ``r`` reference: the same rows can go to any sheet)."""
    joined = _join("<row>", *cells, "</row>")
    joined = joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined
    return joined.cast(pa.large_string())


def value_bytes(array: pa.Array) -> memoryview:
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


def header_row(columns: Sequence[str]) -> str:
    """A row of bold text cells (a table's header)."""
    return (
        "<row>"
        + "".join(
            f'<c t="inlineStr" s="{_BOLD}"><is><t>{escape(clean_text(c))}</t></is></c>' for c in columns
        )
        + "</row>"
    )


def column_width(header: str, longest: int, *, amount: bool = False) -> float:
    """Characters: the header or the longest value (an amount gains separators and its code)."""
    if amount:
        longest += longest // 3 + 4
    return float(min(MAX_COLUMN_WIDTH, max(len(header), longest) + 2))
