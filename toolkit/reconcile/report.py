"""Rendering a ``ReconciliationResult``: report.html, report.xlsx, exceptions.csv, summary.csv.

The result is data; this module only renders it. Amounts are written as their exact text
(``12.30``), never as floats: the CSV files and the workbook hold every exception, the HTML page
holds the summary, two charts and the first rows of each category. The environment the data came
from is printed at the top of the HTML page and the workbook, so that a sandbox report is never
mistaken for the books.

The files are written to temporary names and moved into place together, so a failed run (a full
disk, a read-only folder) leaves the previous report or none, never part of one. CSV cells a
spreadsheet would execute (``=``, ``+``, ``-``, ``@``...) are neutralised; the workbook holds
inline strings, which a spreadsheet never executes, so it keeps the text as written.
"""

from __future__ import annotations

import base64
import contextlib
import io
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from jinja2 import Environment, PackageLoader, select_autoescape

from toolkit.errors import OutputError
from toolkit.money import format_money, is_currency
from toolkit.outputs import atomic_path, ensure_directory, neutralise_cells
from toolkit.reconcile.engine import EXCEPTION_COLUMNS, SUMMARY_COLUMNS, ReconciliationResult
from toolkit.reconcile.workbook import write_xlsx

#: Rows of each category shown in the HTML page (the files hold them all).
HTML_ROWS = 20
REPORT_FILES: tuple[str, ...] = ("report.html", "report.xlsx", "exceptions.csv", "summary.csv")


def _money(amount: Any, currency: Any) -> str:
    """Formatted money (``$12.30``) when the currency is known, else the exact text or ''."""
    if amount is None or amount is pd.NA:
        return ""
    if isinstance(currency, str) and is_currency(currency):
        return format_money(Decimal(amount), currency)
    return str(amount)


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


@dataclass(frozen=True)
class _Chart:
    title: str
    png: str


def _png(figure: Any, *, left: float = 0.3, right: float = 0.95) -> str:
    buffer = io.BytesIO()
    # Fixed margins instead of bbox_inches="tight", which draws the figure twice.
    figure.subplots_adjust(left=left, right=right, bottom=0.2, top=0.95)
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _charts(result: ReconciliationResult) -> list[_Chart]:
    """Exceptions by category, and amounts at risk by currency (each in its own unit)."""
    # A bare Figure renders with Agg without touching pyplot's global backend (notebooks keep theirs).
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    counts = {k: v for k, v in result.category_counts.items() if v}
    charts: list[_Chart] = []
    figure = Figure(figsize=(7, 0.4 * max(len(counts), 1) + 1))
    axes = figure.subplots()
    axes.barh(list(counts)[::-1], list(counts.values())[::-1], color="#b36b00")
    axes.set_xlabel("exceptions")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.25 ticks
    charts.append(_Chart("Exceptions by category", _png(figure)))

    # Currencies cannot share one axis of amounts, so each bar is the share of that currency's
    # volume (matched + at risk) that is at risk; the label carries the exact amount.
    summary = result.summary
    known = summary[summary["amount"].notna()]
    at_risk: dict[str, Decimal] = {}
    matched: dict[str, Decimal] = {}
    for category, currency, amount in zip(known["category"], known["currency"], known["amount"],
                                          strict=True):
        bucket = matched if category == "matched" else at_risk
        bucket[str(currency)] = bucket.get(str(currency), Decimal(0)) + abs(Decimal(amount))
    names = sorted(at_risk, reverse=True)
    shares = [
        float(100 * at_risk[n] / (at_risk[n] + matched.get(n, Decimal(0))))
        if at_risk[n] else 0.0
        for n in names
    ]
    figure = Figure(figsize=(8, 0.4 * max(len(names), 1) + 1))
    axes = figure.subplots()
    bars = axes.barh(names, shares, color="#4a6fa5")
    axes.bar_label(bars, labels=[_money(at_risk[n], n) for n in names], padding=3)
    axes.set_xlim(0, max([*shares, 1.0]) * 1.05)
    axes.set_xlabel("amount at risk, % of the currency's volume (label: exact amount)")
    charts.append(_Chart("Amounts at risk by currency", _png(figure, left=0.1, right=0.7)))
    return charts


def _sections(result: ReconciliationResult, rows: int) -> list[dict[str, Any]]:
    exceptions = result.exceptions
    sections = []
    for category, count in result.category_counts.items():
        if not count:
            continue
        part = exceptions[exceptions["category"] == category].head(rows)
        body = []
        for record in part.itertuples(index=False):
            values = dict(zip(EXCEPTION_COLUMNS, record, strict=True))
            values["ledger_amount"] = _money(values["ledger_amount"], values["ledger_currency"])
            values["processor_amount"] = _money(
                values["processor_amount"], values["processor_currency"]
            )
            body.append([_text(values[c]) for c in EXCEPTION_COLUMNS])
        sections.append({"category": category, "count": count, "rows": body})
    return sections


def render_html(
    result: ReconciliationResult, *, title: str, environment: str,
    generated_at: datetime | None = None, rows: int = HTML_ROWS,
) -> str:
    """The HTML page as a string (``generated_at`` fixed in tests for stable snapshots)."""
    env = Environment(
        loader=PackageLoader("toolkit.reconcile", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    outside = any(c.outside for c in result.counts)  # the column only when a period left rows out
    summary = [
        {"category": r.category, "currency": r.currency, "count": f"{r.count:,}",
         "amount": _money(r.amount, r.currency)}
        for r in result.summary.itertuples(index=False)
    ]
    return env.get_template("report.html.j2").render(
        title=title, environment=environment, generated_at=when,
        tolerance=result.amount_tolerance, exception_count=f"{result.exception_count:,}",
        matched_count=f"{len(result.matched):,}", counts=result.counts, outside=outside,
        summary=summary,
        charts=_charts(result), sections=_sections(result, rows), columns=EXCEPTION_COLUMNS,
    )


def write_report(
    result: ReconciliationResult, output_dir: str | Path, *, title: str = "Reconciliation report",
    environment: str, generated_at: datetime | None = None,
) -> dict[str, Path]:
    """Write the four report files into ``output_dir`` (created); returns them by name.

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
            html = render_html(result, title=title, environment=environment, generated_at=when)
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
