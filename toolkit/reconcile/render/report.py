"""Rendering a ``ReconciliationResult``: report.html, report.xlsx, exceptions.csv (and the same
rows typed in exceptions.parquet), summary.csv, payouts.csv where the processor's export names
its payouts, and fx.csv when payments were compared at
reference rates. Exceptions too many to hold (``result.spilled``) are read back from the engine
a batch (a category, for the workbook) at a time.

The result is data; this module only renders it. Amounts are written as their exact text
(``12.30``), never as floats: the CSV files and the workbook hold every exception; the HTML page is
a controller's view (``page``: period, sources, totals per currency, findings in plain words) with
the first rows of each category. The environment the data came from is printed at the
top of the HTML page and the workbook, so that a sandbox report is never mistaken for the books.

The files are written to temporary names and moved into place together, so a failed run (a full
disk, a read-only folder) leaves the previous report or none, never part of one. CSV cells a
spreadsheet would execute (``=``, ``+``, ``-``, ``@``...) are neutralised; the workbook holds
inline strings, which a spreadsheet never executes, so it keeps the text as written.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit.errors import OutputError
from toolkit.output_record import claim
from toolkit.outputs import atomic_path, cell_text, ensure_directory, neutralise_cells
from toolkit.reconcile.movements import KINDS
from toolkit.reconcile.render.figures import movement_sums
from toolkit.reconcile.render.page import render_html
from toolkit.reconcile.render.words import Period
from toolkit.reconcile.render.workbook import write_xlsx
from toolkit.reconcile.render.workbook_exceptions import CategoryTexts
from toolkit.reconcile.result import ReconciliationResult, RowCounts
from toolkit.reconcile.schema import (
    EXCEPTION_COLUMNS,
    FX_COLUMNS,
    INFO_CATEGORIES,
    PAYOUT_TOTAL_COLUMNS,
    SUMMARY_COLUMNS,
    TRACKING_COLUMNS,
    in_report_order,
)

#: Written by every run.
REPORT_FILES: tuple[str, ...] = (
    "report.html",
    "report.xlsx",
    "exceptions.csv",
    "exceptions.parquet",
    "summary.csv",
)
#: Written besides when ``result.fx`` has rows: each payment compared at a reference rate.
FX_FILE = "fx.csv"
#: Written besides when the processor's export says which payout paid each row: per payout and
#: currency, its items' net and what it paid out (``result.payouts``).
PAYOUTS_FILE = "payouts.csv"
#: Written besides for a tracked run: states per category, exceptions by age, the resolved ones.
TRACKED_FILES: tuple[str, ...] = ("states.csv", "ages.csv", "resolved.csv")


def _text_array(values: pd.Series) -> pa.Array:
    """A column as exact text ('' for missing), converted in C wherever the values allow."""
    if isinstance(values.dtype, pd.CategoricalDtype):  # missing stays missing, never "nan"
        values = values.astype(object).where(values.notna(), None)
    if pd.api.types.is_integer_dtype(values.dtype):  # numpy or nullable: '' for a missing one
        return pc.fill_null(pc.cast(pa.array(values), pa.string()), "")
    try:
        array = pa.array(values.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # Decimals and other objects
        array = pa.array([cell_text(v) for v in values.tolist()], type=pa.string())
    return pc.fill_null(array, "")


#: Whole-number columns of exceptions.csv: written as integers or '', never ``3.0``, ``nan`` or
#: ``<NA>``, whatever dtype a concatenation left them in.
INTEGER_COLUMNS: tuple[str, ...] = ("source_row", "age_days", "ageDays")


def _integers(values: pd.Series) -> pd.Series:
    """A whole-number column as nullable integers (a fractional value raises: it is no count)."""
    if pd.api.types.is_integer_dtype(values.dtype):
        return values
    return pd.to_numeric(values.astype(object).where(values.notna(), None)).astype("Int64")


def exception_columns(result: ReconciliationResult) -> tuple[str, ...]:
    """The columns of exceptions.csv: ``EXCEPTION_COLUMNS``, then for a tracked run the state,
    ``firstSeen`` and age of each exception (``TRACKING_COLUMNS``)."""
    return EXCEPTION_COLUMNS + (TRACKING_COLUMNS if result.tracking is not None else ())


def exceptions_text_table(result: ReconciliationResult, frame: pd.DataFrame | None = None) -> pa.Table:
    """The exceptions (or ``frame``, some of them) as exceptions.csv and the workbook hold them:
    exact text, '' for missing."""
    frame = result.exceptions if frame is None else frame
    return pa.table(
        {
            column: _text_array(_integers(frame[column]) if column in INTEGER_COLUMNS else frame[column])
            for column in exception_columns(result)
        }
    )


def exception_texts(result: ReconciliationResult) -> CategoryTexts:
    """Every exception as text, one category at a time: from the result's frame when it holds
    them all, else read back from the engine (``result.spilled``) a category at a time."""
    if result.spilled is None:
        return CategoryTexts.of(exceptions_text_table(result))

    def batches(category: str) -> Iterator[pa.Table]:
        for frame in result.exception_frames(category):
            yield exceptions_text_table(result, frame).combine_chunks()

    # The currencies of every row a category can hold: the usable rows' (totals) and those of
    # the rows held (the first of each category, the rows that could not be read).
    codes = {total.currency for total in result.totals}
    for column in ("ledger_currency", "processor_currency"):
        codes.update(str(c) for c in result.exceptions[column].dropna().unique() if c)

    def every() -> Iterator[pa.Table]:
        for frame in result.exception_frames():
            yield exceptions_text_table(result, frame)

    counts = result.row_counts()
    ordered = {c: counts[c] for c in in_report_order(counts)}
    return CategoryTexts(ordered, batches, codes, every, streamed=True)


def fx_text_table(result: ReconciliationResult) -> pa.Table:
    """``result.fx`` as fx.csv holds it: amounts, rates and variances as exact text."""
    frame = result.fx.reindex(columns=list(FX_COLUMNS))
    return pa.table({column: _text_array(frame[column]) for column in FX_COLUMNS})


def _frame_table(frame: pd.DataFrame) -> pa.Table:
    return pa.table({str(c): _text_array(frame[c]) for c in frame.columns})


def _csv_field(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Quote a CSV field only where needed (RFC 4180), vectorised; most columns never need it."""
    needs = pc.match_substring_regex(array, '[,"\r\n]')
    if not pc.any(needs).as_py():
        return array
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(array, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, array)


def write_csv_table(table: pa.Table, path: Path) -> None:
    """Minimal quoting, like pandas (pyarrow's own writer quotes every string field).

    Every cell is neutralised first: keys, statuses and currencies come from the input files.
    """
    with path.open("w", encoding="utf-8", newline="") as handle:
        _write_csv_header(handle, table.column_names)
        _write_csv_rows(handle, table)


def _write_csv_header(handle: TextIO, columns: Sequence[str]) -> None:
    handle.write(",".join(_csv_field(pa.array(list(columns), pa.string())).to_pylist()) + "\n")


def _write_csv_rows(handle: TextIO, table: pa.Table) -> None:
    if table.num_rows:
        fields = [_csv_field(neutralise_cells(t, row_start=i == 0)) for i, t in enumerate(table.columns)]
        lines = pc.binary_join_element_wise(*fields, ",")
        handle.write("\n".join(lines.to_pylist()) + "\n")


def _parquet_table(table: pa.Table) -> pa.Table:
    """exceptions.parquet's form of a text table: the amounts exact text as in the CSV file,
    whole numbers as integers, and null where the CSV file has ''."""
    columns = {}
    for name in table.column_names:
        text = table.column(name)
        empty = pc.equal(text, "")
        if name in INTEGER_COLUMNS:
            columns[name] = pc.if_else(empty, None, text).cast(pa.int64())
        else:
            columns[name] = pc.if_else(empty, pa.scalar(None, pa.string()), text)
    return pa.table(columns)


def write_exceptions(
    result: ReconciliationResult, texts: CategoryTexts, csv_path: Path, parquet_path: Path
) -> None:
    """exceptions.csv and exceptions.parquet in one pass over the exceptions (``texts``), a
    batch at a time (read back from the engine when the result does not hold them all)."""
    columns = exception_columns(result)
    schema = _parquet_table(pa.table({c: pa.array([], pa.string()) for c in columns})).schema
    with (
        csv_path.open("w", encoding="utf-8", newline="") as handle,
        pq.ParquetWriter(parquet_path, schema) as parquet,
    ):
        _write_csv_header(handle, columns)
        for table in texts.every():
            _write_csv_rows(handle, table)
            parquet.write_table(_parquet_table(table), row_group_size=1 << 17)


def summary_csv_frame(result: ReconciliationResult) -> pd.DataFrame:
    """The summary as summary.csv holds it (amount as exact text, '' when not applicable)."""
    frame = result.summary.reindex(columns=list(SUMMARY_COLUMNS))
    frame = frame.assign(amount=[cell_text(a) for a in frame["amount"]])
    sums = movement_sums(result)
    if not sums:
        return frame
    # Each side's movements per kind, and their net, after the categories: ``<side>_<kind>``
    # (``processor_refund``) and ``<side>_net`` per currency, with their rows and signed total.
    kinds = [*KINDS, "net"]
    ordered = sorted(sums.items(), key=lambda item: (item[0][0], kinds.index(item[0][1]), item[0][2]))
    moves = [
        (f"{side}_{kind}", currency, rows, cell_text(amount))
        for (side, kind, currency), (rows, amount) in ordered
    ]
    return pd.concat([frame, pd.DataFrame(moves, columns=list(SUMMARY_COLUMNS))], ignore_index=True)


def write_report(
    result: ReconciliationResult,
    output_dir: str | Path,
    *,
    title: str = "Reconciliation report",
    environment: str,
    generated_at: datetime | None = None,
    period: Period = None,
    inputs: Sequence[str | Path | None] = (),
) -> dict[str, Path]:
    """Write the report files (``REPORT_FILES``) into ``output_dir`` (created); returns them by
    name. A tracked result (``result.tracking``) adds its columns to exceptions.csv and the
    workbook, a section to the page, and ``TRACKED_FILES``; a result with payments compared at
    reference rates (``result.fx``) adds ``FX_FILE``.

    ``period`` is said on the HTML page: ``(start, end)`` dates (either may be empty) or text;
    None says that no period was selected.

    All are written to temporary names and moved into place only when all are written; on
    failure none is, and ``OutputError`` names the path and the reason. Optional files an earlier
    report left in ``output_dir`` that this one does not write are removed.

    The folder's record (``toolkit.output_record``) is checked first: a file to write or remove
    that is one of the run's inputs (``result.sources`` and ``inputs``: a rates file), that the
    toolkit did not write, or that changed since, stops the run before anything is written.
    """
    directory = ensure_directory(output_dir)
    when = generated_at or datetime.now(UTC)
    names = _report_names(result)
    paths = {name: directory / name for name in names}
    # A report of another run in the same folder (``--output-dir`` reused) loses the files this
    # one does not write: an fx.csv or states.csv beside it would read as this run's.
    stale = [name for name in (*TRACKED_FILES, FX_FILE, PAYOUTS_FILE) if name not in paths]
    record = claim(directory, names, inputs=(*result.sources, *inputs), remove=stale)
    logging.getLogger("toolkit.reconcile").info("writing the report in %s", directory)
    _write_files(result, paths, title=title, environment=environment, when=when, period=period)
    removed = record.remove(stale)
    record.updated(names, removed)
    return paths


def _write_files(
    result: ReconciliationResult,
    paths: dict[str, Path],
    *,
    title: str,
    environment: str,
    when: datetime,
    period: Period,
) -> None:
    """Every file of ``paths`` written to a temporary name and moved into place only once all are
    written (the workbook in a thread of its own, the rest in this one); none on failure."""
    texts = exception_texts(result)
    with contextlib.ExitStack() as stack:
        temporary = {name: stack.enter_context(atomic_path(path)) for name, path in paths.items()}
        # The workbook is mostly pyarrow kernels and zlib, which release the GIL: write it in a
        # thread while this one renders the charts and the CSV files.
        with ThreadPoolExecutor(max_workers=1) as pool:
            workbook = pool.submit(
                _written,
                paths["report.xlsx"],
                lambda: write_xlsx(
                    result,
                    temporary["report.xlsx"],
                    title=title,
                    environment=environment,
                    generated_at=when.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    table=texts,
                ),
            )
            html = render_html(result, title=title, environment=environment, generated_at=when, period=period)
            _written(
                paths["report.html"], lambda: temporary["report.html"].write_text(html, encoding="utf-8")
            )
            _write_tables(result, texts, paths, temporary)
            workbook.result()


def _report_names(result: ReconciliationResult) -> tuple[str, ...]:
    """The files ``result``'s report is made of: ``REPORT_FILES``, then ``TRACKED_FILES`` for a
    tracked run, ``FX_FILE`` when payments were compared at reference rates and ``PAYOUTS_FILE``
    when the processor's export names its payouts."""
    tracked = TRACKED_FILES if result.tracking is not None else ()
    payouts = (PAYOUTS_FILE,) if result.payouts else ()
    return REPORT_FILES + tracked + ((FX_FILE,) if not result.fx.empty else ()) + payouts


def _write_tables(
    result: ReconciliationResult, texts: CategoryTexts, paths: dict[str, Path], temporary: dict[str, Path]
) -> None:
    """The CSV files (and exceptions.parquet) into their temporary names, in the report's order:
    the exceptions, the summary, then fx.csv and a tracked run's files where the report has them."""
    _written(
        paths["exceptions.csv"],
        lambda: write_exceptions(result, texts, temporary["exceptions.csv"], temporary["exceptions.parquet"]),
    )
    summary = summary_csv_frame(result)
    summary_table = pa.table({c: _text_array(summary[c]) for c in SUMMARY_COLUMNS})
    _written(paths["summary.csv"], lambda: write_csv_table(summary_table, temporary["summary.csv"]))
    if FX_FILE in paths:
        fx = fx_text_table(result)
        _written(paths[FX_FILE], lambda: write_csv_table(fx, temporary[FX_FILE]))
    if PAYOUTS_FILE in paths:
        payouts = payouts_table(result)
        _written(paths[PAYOUTS_FILE], lambda: write_csv_table(payouts, temporary[PAYOUTS_FILE]))
    tracking = result.tracking
    if tracking is not None:
        for name, frame in (
            ("states.csv", tracking.states()),
            ("ages.csv", tracking.age_buckets()),
            ("resolved.csv", tracking.resolved),
        ):
            _written(paths[name], functools.partial(write_csv_table, _frame_table(frame), temporary[name]))


def payouts_table(result: ReconciliationResult) -> pa.Table:
    """``PAYOUTS_FILE``'s rows: each payout and currency, amounts as exact text ('' where none)."""
    rows = [
        (
            p.payout,
            p.currency,
            str(p.items),
            str(p.items_net),
            "" if p.paid_out is None else str(p.paid_out),
            "" if p.difference is None else str(p.difference),
            p.state,
        )
        for p in result.payouts
    ]
    columns = {name: [row[i] for row in rows] for i, name in enumerate(PAYOUT_TOTAL_COLUMNS)}
    return pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})


def _written(target: Path, write: Callable[[], object]) -> None:
    """Run ``write`` (of ``target``'s temporary file); a failure becomes ``OutputError`` naming
    ``target``, so the message names the file that failed whichever temporary sees it first."""
    try:
        write()
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or type(exc).__name__}") from None


def summary_text(result: ReconciliationResult, categories: Sequence[str] | None = None) -> str:
    """Plain-text summary for the terminal: row accounting, then counts and amounts, then the
    exceptions and, apart, what is only for information (in transit, within tolerance)."""
    lines = [_accounting_line(c) for c in result.counts]
    frame = summary_csv_frame(result)
    if categories is not None:
        frame = frame[frame["category"].isin(categories)]
    lines.append(frame.to_string(index=False) if len(frame) else "(no rows)")
    lines.append(f"{result.exception_count:,} exceptions" + _information_text(result))
    return "\n".join(lines)


def _accounting_line(counts: RowCounts) -> str:
    """``ledger: file: rows = matched + in exceptions + ...``, each optional part when non-zero."""
    optional = (
        (counts.in_transit, "in transit"),
        (counts.outside, "outside the period"),
        (counts.after_cutoff, "after the cut-off"),
        (counts.movements, "fees, payouts and adjustments"),
    )
    return (
        f"{counts.side}: {counts.source}: {counts.rows:,} rows = {counts.matched:,} matched + "
        f"{counts.exceptions:,} in exceptions + {counts.rejected:,} rejected"
        + "".join(f" + {n:,} {words}" for n, words in optional if n)
    )


def _information_text(result: ReconciliationResult) -> str:
    """``; for information: 2 in transit, 3 within tolerance`` ('' when there is none)."""
    counts = result.info_counts
    parts = [f"{counts[c]:,} {c.replace('_', ' ')}" for c in INFO_CATEGORIES if counts[c]]
    return f"; for information, not exceptions: {', '.join(parts)}" if parts else ""
