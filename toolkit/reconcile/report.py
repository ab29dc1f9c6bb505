"""Rendering a ``ReconciliationResult``: report.html, report.xlsx, exceptions.csv, summary.csv.

The result is data; this module only renders it. Amounts are written as their exact text
(``12.30``), never as floats: the CSV files and the workbook hold every exception; the HTML page is
a controller's view (``controller_view``: period, sources, totals per currency, findings in plain
words) with the first rows of each category. The environment the data came from is printed at the
top of the HTML page and the workbook, so that a sandbox report is never mistaken for the books.

The files are written to temporary names and moved into place together, so a failed run (a full
disk, a read-only folder) leaves the previous report or none, never part of one. CSV cells a
spreadsheet would execute (``=``, ``+``, ``-``, ``@``...) are neutralised; the workbook holds
inline strings, which a spreadsheet never executes, so it keeps the text as written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from jinja2 import Environment, PackageLoader, select_autoescape

from toolkit.errors import OutputError
from toolkit.outputs import atomic_path, ensure_directory, neutralise_cells
from toolkit.reconcile.controller_view import HTML_ROWS, Period, page
from toolkit.reconcile.engine import EXCEPTION_COLUMNS, SUMMARY_COLUMNS, ReconciliationResult

REPORT_FILES: tuple[str, ...] = ("report.html", "report.xlsx", "exceptions.csv", "summary.csv")


def _text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    return str(value)


def _text_array(values: pd.Series) -> pa.Array:
    """A column as exact text ('' for missing), converted in C wherever the values allow."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(str)
    if pd.api.types.is_integer_dtype(values.dtype) and not values.hasnans:
        return pc.cast(pa.array(values.to_numpy()), pa.string())
    try:
        array = pa.array(values.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # Decimals and other objects
        array = pa.array([_text(v) for v in values.tolist()], type=pa.string())
    return pc.fill_null(array, "")


def exceptions_text_table(result: ReconciliationResult) -> pa.Table:
    """The exceptions as exceptions.csv and the workbook hold them: exact text, '' for missing."""
    frame = result.exceptions
    return pa.table({column: _text_array(frame[column]) for column in EXCEPTION_COLUMNS})


def exceptions_csv_frame(result: ReconciliationResult) -> pd.DataFrame:
    """``exceptions_text_table`` as a pandas frame of strings."""
    frame: pd.DataFrame = exceptions_text_table(result).to_pandas(types_mapper=pd.ArrowDtype)
    return frame


def _csv_field(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Quote a CSV field only where needed (RFC 4180), vectorised; most columns never need it."""
    needs = pc.match_substring_regex(array, '[,"\r\n]')
    if not pc.any(needs).as_py():
        return array
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(array, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, array)


def _write_csv(table: pa.Table, path: Path) -> None:
    """Minimal quoting, like pandas (pyarrow's own writer quotes every string field).

    Every cell is neutralised first: keys, statuses and currencies come from the input files.
    """
    header = ",".join(_csv_field(pa.array(table.column_names)).to_pylist())
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(header + "\n")
        if table.num_rows:
            fields = [_csv_field(neutralise_cells(table.column(c))) for c in table.column_names]
            lines = pc.binary_join_element_wise(*fields, ",")
            handle.write("\n".join(lines.to_pylist()) + "\n")


def summary_csv_frame(result: ReconciliationResult) -> pd.DataFrame:
    """The summary as summary.csv holds it (amount as exact text, '' when not applicable)."""
    frame = result.summary.reindex(columns=list(SUMMARY_COLUMNS))
    return frame.assign(amount=[_text(a) for a in frame["amount"]])


def render_html(
    result: ReconciliationResult, *, title: str, environment: str,
    generated_at: datetime | None = None, rows: int = HTML_ROWS, period: Period = None,
) -> str:
    """The HTML page as a string (``generated_at`` fixed in tests for stable snapshots).

    A controller's view first (period, sources, totals per currency, findings in plain words with
    what to do), then the first ``rows`` exceptions of each category in one table that sorts and
    filters offline; ``controller_view`` works out what it says.
    """
    env = Environment(
        loader=PackageLoader("toolkit.reconcile", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    context = page(result, title=title, environment=environment, generated_at=when,
                   period=period, rows=rows)
    return env.get_template("report.html.j2").render(**context)


_XLSX_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.spreadsheetml.styles+xml"/>{sheets}</Types>'
    ),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>'
    ),
    "xl/styles.xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>'
        '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>'
        '<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
        '<borders count="1"><border/></borders>'
        '<cellStyleXfs count="1"><xf/></cellStyleXfs>'
        '<cellXfs count="2"><xf/><xf fontId="1" applyFont="1"/></cellXfs>'
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
        '</styleSheet>'
    ),
}
_SHEET_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
)


#: Excel's limits: rows per sheet (one is the header) and characters per cell.
MAX_SHEET_ROWS = 1_048_576
MAX_CELL_CHARS = 32_767
_XML_ILLEGAL = "[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]"


def _xml_text(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Text made safe for a cell, with pyarrow's vectorised string kernels.

    Characters XML cannot hold (control characters from a malformed input row) are dropped, text
    is cut at Excel's cell limit, then escaped; otherwise Excel would refuse the whole workbook.
    """
    array = pc.replace_substring_regex(array, _XML_ILLEGAL, "")
    array = pc.utf8_slice_codeunits(array, 0, MAX_CELL_CHARS)
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        array = pc.replace_substring(array, char, entity)
    return array


def _row_xml(data: pd.DataFrame | pa.Table, numeric: set[str]) -> pa.Array | pa.ChunkedArray:
    """One ``<row>`` of sheet XML per row, built column-wise with vectorised string kernels.

    Rows and cells carry no ``r`` reference (it is optional): the same row text can go to any
    sheet, so the exceptions are turned into XML once and then split by category.
    """
    table = data if isinstance(data, pa.Table) else pa.table(
        {str(c): _text_array(data[c]) for c in data.columns}
    )
    if table.num_rows == 0:
        return pa.array([], type=pa.string())
    cells: list[Any] = []
    for column in table.column_names:
        text = _xml_text(table.column(column))
        if column in numeric:
            filled = pc.binary_join_element_wise("<c><v>", text, "</v></c>", "")
        else:
            filled = pc.binary_join_element_wise(
                '<c t="inlineStr"><is><t>', text, "</t></is></c>", ""
            )
        cells.append(pc.if_else(pc.equal(text, ""), pa.scalar("<c/>"), filled))
    return pc.binary_join_element_wise("<row>", *cells, "</row>", "")


def _sheet_rows(data: pd.DataFrame | pa.Table, numeric: set[str]) -> str:
    return "".join(_row_xml(data, numeric).to_pylist())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _header(columns: Sequence[str]) -> str:
    cells = "".join(
        f'<c t="inlineStr" s="1"><is><t>{_escape(c)}</t></is></c>' for c in columns
    )
    return f"<row>{cells}</row>"


def write_xlsx(
    result: ReconciliationResult, path: Path, *, title: str, environment: str, generated_at: str,
    table: pa.Table | None = None,
) -> None:
    """A summary sheet and one sheet per category holding every exception.

    Written directly as Office Open XML with inline strings, built column-wise: general writers
    (xlsxwriter, openpyxl) spend a Python call per cell, tens of seconds for a million cells.
    Amounts are exact text, never floats.
    """
    import zipfile
    from xml.sax.saxutils import escape

    sheets: list[tuple[str, str]] = []
    counts = pd.DataFrame(
        [(c.side, c.source, c.rows, c.matched, c.exceptions, c.rejected, c.outside)
         for c in result.counts],
        columns=["side", "source", "rows", "matched", "in exceptions", "rejected", "outside period"],
    )
    if not counts["outside period"].any():  # the column only when a period left rows out
        counts = counts.drop(columns="outside period")
    body = (
        _header([f"Data from: {environment}"])
        + _sheet_rows(pd.DataFrame({"a": [title, f"Generated {generated_at}"]}), set())
        + "<row/>" + _header(list(counts.columns))
        + _sheet_rows(counts, {"rows", "matched", "in exceptions", "rejected", "outside period"})
        + "<row/>" + _header(list(SUMMARY_COLUMNS))
        + _sheet_rows(summary_csv_frame(result), {"count"})
    )
    sheets.append(("Summary", body))
    table = exceptions_text_table(result) if table is None else table
    rows = _row_xml(table, {"source_row"})
    categories = table.column("category").to_numpy(zero_copy_only=False)
    per_sheet = MAX_SHEET_ROWS - 1
    for category, count in result.category_counts.items():
        part = rows.filter(pa.array(categories == category)).to_pylist() if count else []
        for number, start in enumerate(range(0, max(len(part), 1), per_sheet), start=1):
            name = category[:31] if number == 1 else f"{category[:25]} ({number})"
            sheets.append((name, _header(EXCEPTION_COLUMNS) + "".join(part[start:start + per_sheet])))
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
        f'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, len(sheets) + 1)
    )
    workbook = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
        + "".join(f'<sheet name="{escape(name)}" sheetId="{i}" r:id="rId{i}"/>'
                  for i, (name, _) in enumerate(sheets, start=1))
        + "</sheets></workbook>"
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="http://schemas.openxmlformats.org/officeDocument/'
            f'2006/relationships/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(sheets) + 1)
        )
        + f'<Relationship Id="rId{len(sheets) + 1}" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml",
                         _XLSX_PARTS["[Content_Types].xml"].format(sheets=overrides))
        archive.writestr("_rels/.rels", _XLSX_PARTS["_rels/.rels"])
        archive.writestr("xl/workbook.xml", workbook)
        archive.writestr("xl/_rels/workbook.xml.rels", rels)
        archive.writestr("xl/styles.xml", _XLSX_PARTS["xl/styles.xml"])
        for i, (_, xml) in enumerate(sheets, start=1):
            archive.writestr(f"xl/worksheets/sheet{i}.xml",
                             _SHEET_HEAD + xml + "</sheetData></worksheet>")


def write_report(
    result: ReconciliationResult, output_dir: str | Path, *, title: str = "Reconciliation report",
    environment: str, generated_at: datetime | None = None, period: Period = None,
) -> dict[str, Path]:
    """Write the four report files into ``output_dir`` (created); returns them by name.

    ``period`` is said on the HTML page: ``(start, end)`` dates (either may be empty) or text;
    None says that no period was selected.

    All four are written to temporary names and moved into place only when all are written; on
    failure none is, and ``OutputError`` names the path and the reason.
    """
    directory = ensure_directory(output_dir)
    when = generated_at or datetime.now(UTC)
    paths = {name: directory / name for name in REPORT_FILES}
    table = exceptions_text_table(result)
    with contextlib.ExitStack() as stack:
        temporary = {name: stack.enter_context(atomic_path(path)) for name, path in paths.items()}
        # The workbook is mostly pyarrow kernels and zlib, which release the GIL: write it in a
        # thread while this one renders the charts and the CSV files.
        with ThreadPoolExecutor(max_workers=1) as pool:
            workbook = pool.submit(
                _written, paths["report.xlsx"], lambda: write_xlsx(
                    result, temporary["report.xlsx"], title=title, environment=environment,
                    generated_at=when.strftime("%Y-%m-%d %H:%M:%S UTC"), table=table,
                ),
            )
            html = render_html(result, title=title, environment=environment, generated_at=when,
                               period=period)
            _written(paths["report.html"],
                     lambda: temporary["report.html"].write_text(html, encoding="utf-8"))
            _written(paths["exceptions.csv"], lambda: _write_csv(table, temporary["exceptions.csv"]))
            summary = summary_csv_frame(result)
            summary_table = pa.table({c: _text_array(summary[c]) for c in SUMMARY_COLUMNS})
            _written(paths["summary.csv"],
                     lambda: _write_csv(summary_table, temporary["summary.csv"]))
            workbook.result()
    return paths


def _written(target: Path, write: Callable[[], object]) -> None:
    """Run ``write`` (of ``target``'s temporary file); a failure becomes ``OutputError`` naming
    ``target``, so the message names the file that failed whichever temporary sees it first."""
    try:
        write()
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or type(exc).__name__}") from None


def summary_text(result: ReconciliationResult, categories: Sequence[str] | None = None) -> str:
    """Plain-text summary for the terminal: row accounting, then counts and amounts."""
    lines = [
        f"{c.side}: {c.source}: {c.rows:,} rows = {c.matched:,} matched + "
        f"{c.exceptions:,} in exceptions + {c.rejected:,} rejected"
        + (f" + {c.outside:,} outside the period" if c.outside else "")
        for c in result.counts
    ]
    frame = summary_csv_frame(result)
    if categories is not None:
        frame = frame[frame["category"].isin(categories)]
    lines.append(frame.to_string(index=False) if len(frame) else "(no rows)")
    lines.append(f"{result.exception_count:,} exceptions")
    return "\n".join(lines)
