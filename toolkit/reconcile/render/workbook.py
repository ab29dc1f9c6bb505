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

Hardening: every text that reaches the workbook is cleaned (``workbook_cells``), so that Excel
opens it whatever reached it. The summary sheet is ``workbook_summary``, the sheets of exceptions
``workbook_exceptions``; this module writes them into the package.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pyarrow as pa

from toolkit.reconcile.render.workbook_cells import MAIN_NAMESPACE, XML_DECLARATION, Currencies, Sheet
from toolkit.reconcile.render.workbook_exceptions import (
    CategoryTexts,
    currency_codes,
    fx_table,
    resolved_table,
    sheet_count,
    sheet_sources,
)
from toolkit.reconcile.render.workbook_summary import summary_sheet
from toolkit.reconcile.result import ReconciliationResult

_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_CONTENT_TYPES = (
    XML_DECLARATION + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.spreadsheetml.styles+xml"/>{sheets}</Types>'
)
_ROOT_RELS = (
    XML_DECLARATION + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>"
)


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
    resolved, fx = resolved_table(result), fx_table(result)
    currencies = Currencies(currency_codes(result, texts, resolved, fx))
    sources = sheet_sources(texts, resolved, fx, currencies)
    count = 1 + sum(sheet_count(rows) for rows, _ in sources)
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, count + 1)
    )
    sheets: list[Sheet] = []  # without their rows once written
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
        summary = summary_sheet(
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


def _write_sheet(archive: zipfile.ZipFile, name: str, sheet: Sheet, *, selected: bool) -> None:
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


def _sheet_head(sheet: Sheet, selected: bool) -> str:
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
        XML_DECLARATION + f'<worksheet {MAIN_NAMESPACE} xmlns:r="{_REL}">'
        f'<sheetViews><sheetView workbookViewId="0"{tab}>{pane}</sheetView></sheetViews>'
        '<sheetFormatPr defaultRowHeight="15"/>'
        f"<cols>{cols}</cols><sheetData>{sheet.header}"
    )


def _sheet_tail(sheet: Sheet) -> str:
    ref = _filter_ref(sheet)
    return "</sheetData>" + (f'<autoFilter ref="{ref}"/>' if ref else "") + "</worksheet>"


def _filter_ref(sheet: Sheet) -> str | None:
    if sheet.table is None:
        return None
    first, last, columns = sheet.table
    return f"A{first}:{_column(columns - 1)}{last}"


def _column(index: int) -> str:
    """Excel's column letters of a 0-based index (0 -> A, 26 -> AA)."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def _workbook_xml(sheets: list[Sheet]) -> str:
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
        XML_DECLARATION + f'<workbook {MAIN_NAMESPACE} xmlns:r="{_REL}">'
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
        XML_DECLARATION
        + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, count + 1)
        )
        + f'<Relationship Id="rId{count + 1}" Type="{_REL}/styles" Target="styles.xml"/>'
        "</Relationships>"
    )
