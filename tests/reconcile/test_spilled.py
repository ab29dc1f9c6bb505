"""Exceptions too many to hold: the engine keeps them, the result holds the first of each
category, and the reports read them back a batch at a time into the very same files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from toolkit.errors import InputError, TrackError
from toolkit.reconcile import (
    ReconciliationResult,
    load_ledger,
    load_processor,
    reconcile,
    write_report,
)
from toolkit.reconcile._engine import exceptions as exceptions_step
from toolkit.reconcile._engine import held as held_step
from toolkit.reconcile.render import workbook_exceptions as workbook
from toolkit.reconcile.render.report import exceptions_text_table
from toolkit.reconcile.schema import HELD_ROWS
from toolkit.reconcile.tracking import track_result

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
OLD, OLD_DAY = "2026-11-10T10:00:00Z", "2026-11-10"
LEDGER_COLUMNS = ["merchantReferenceId", "amount", "currency", "status", "date"]
PROCESSOR_COLUMNS = ["merchantReferenceId", "amount", "currency", "status", "createTime"]


def books() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three payments of every category (two rows a side for a duplicate), and three matched."""
    ledger: list[tuple[str, ...]] = []
    processor: list[tuple[str, ...]] = []
    for i in range(3):
        ledger += [
            (f"ok-{i}", "10.00", "USD", "success", OLD_DAY),
            (f"mp-{i}", "5.00", "EUR", "success", OLD_DAY),
            (f"am-{i}", "10.00", "USD", "success", OLD_DAY),
            (f"cm-{i}", "100", "JPY", "success", OLD_DAY),
            (f"sm-{i}", "7.00", "USD", "success", OLD_DAY),
            (f"dl-{i}", "3.00", "USD", "success", OLD_DAY),
            (f"dl-{i}", "3.00", "USD", "success", OLD_DAY),
            (f"dp-{i}", "4.00", "USD", "success", OLD_DAY),
            (f"un-{i}", "9.99", "USD", "success", OLD_DAY),
            (f"tr-{i}", "25.00", "USD", "success", f"2026-11-{18 + i}"),  # in the window, aged 2, 1, 0
            (f"wt-{i}", "10.00", "USD", "success", OLD_DAY),
            (f"bad-{i}", "abc", "USD", "success", OLD_DAY),
        ]
        processor += [
            (f"ok-{i}", "10.00", "USD", "success", OLD),
            (f"ml-{i}", "6.00", "EUR", "success", OLD),
            (f"am-{i}", "10.50", "USD", "success", OLD),
            (f"cm-{i}", "100.00", "USD", "success", OLD),
            (f"sm-{i}", "7.00", "USD", "failure", OLD),
            (f"dl-{i}", "3.00", "USD", "success", OLD),
            (f"dp-{i}", "4.00", "USD", "success", OLD),
            (f"dp-{i}", "4.00", "USD", "success", OLD),
            (f"un-{i}", "9.99", "USD", "unknown", OLD),
            (f"wt-{i}", "10.01", "USD", "success", OLD),
        ]
    return pd.DataFrame(ledger, columns=LEDGER_COLUMNS), pd.DataFrame(processor, columns=PROCESSOR_COLUMNS)


def run(backend: str = "duckdb", held_rows: int = HELD_ROWS, preview_rows: int = 2) -> ReconciliationResult:
    ledger, processor = books()
    return reconcile(
        load_ledger(ledger),
        load_processor(processor),
        amount_tolerance=1,
        as_of="2026-11-20",
        backend=backend,
        held_rows=held_rows,
        preview_rows=preview_rows,
    )


def texts(result: ReconciliationResult, frame: pd.DataFrame | None = None) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = exceptions_text_table(result, frame).to_pylist()
    return rows


def every_row(result: ReconciliationResult) -> pd.DataFrame:
    return pd.concat(list(result.exception_frames()), ignore_index=True)


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of two rows: a category is read back in several, and a batch never spans two."""
    monkeypatch.setattr(held_step, "BATCH_ROWS", 2)


@pytest.mark.usefixtures("small_batches")
def test_a_result_too_large_to_hold_keeps_the_first_rows_and_reads_every_row_back() -> None:
    held, spilled = run(), run(held_rows=0, preview_rows=2)
    assert held.spilled is None
    assert spilled.spilled is not None
    categories = held.exceptions["category"].astype(str)
    assert categories.value_counts().to_dict() == {c: 3 for c in set(categories)}
    assert len(set(categories)) == 11  # every payment category, both informational ones
    # Held: at most two rows of each category; an informational category's oldest.
    shown = spilled.exceptions["category"].astype(str).value_counts().to_dict()
    assert shown == {c: 2 for c in set(categories)}
    transit = spilled.exceptions[spilled.exceptions["category"] == "in_transit"]
    assert sorted(transit["merchantReferenceId"]) == ["tr-0", "tr-1"]
    # Counted and read back in full, in report order, exactly as held.
    for name in ("exception_count", "info_count", "info_counts", "category_counts"):
        assert getattr(spilled, name) == getattr(held, name), name
    pd.testing.assert_frame_equal(spilled.summary, held.summary)
    assert spilled.counts == held.counts
    assert texts(spilled, every_row(spilled)) == texts(held)
    # Load more: any page of a category, as the held frame has it.
    for category in set(categories):
        for start, count in ((0, 1), (1, 2), (2, 5), (3, 1)):
            page = spilled.exceptions_page(category, start, count)
            part = held.exceptions[held.exceptions["category"] == category]
            assert texts(spilled, page) == texts(held, part.iloc[start : start + count]), (category, start)


def test_a_result_holds_every_row_up_to_held_rows_and_not_one_more() -> None:
    """Thirty-three rows (ten categories of three from the engine, three rejected rows): held
    whole at ``held_rows`` 33, kept in the engine at 32, the same rows either way. The rejected
    rows count: they were left out, so that a result held more than ``held_rows``."""
    exact, fewer = run(held_rows=33), run(held_rows=32, preview_rows=3)
    assert exact.spilled is None
    assert len(exact.exceptions) == 33
    assert fewer.spilled is not None
    assert sum(fewer.spilled.counts.values()) == 33
    assert texts(fewer, every_row(fewer)) == texts(exact)


def test_more_rejected_rows_than_a_run_lists_stop_it_quoting_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A whole file misread (3M rows with decimal commas) held every rejected row in memory with
    its reasons: 8.7 GB under a 500 MB limit. Beyond ``REJECTED_ROWS`` the run stops with the
    first reasons instead."""
    monkeypatch.setattr(exceptions_step, "REJECTED_ROWS", 2)
    with pytest.raises(InputError) as raised:
        run()
    assert str(raised.value) == (
        "<ledger frame>: 3 rows cannot be used, more than a run lists (2); the first: "
        "row 12: amount 'abc' is not a number; row 24: amount 'abc' is not a number; row 36: amount "
        "'abc' is not a number. Is the file read as it should be (--decimal, a column map)?"
    )
    monkeypatch.setattr(exceptions_step, "REJECTED_ROWS", 3)
    assert run().rejected["merchantReferenceId"].tolist() == ["bad-0", "bad-1", "bad-2"]


@pytest.mark.usefixtures("small_batches")
@pytest.mark.parametrize("sheet_rows", [workbook.MAX_SHEET_ROWS, 3])
def test_a_report_of_rows_read_back_is_the_report_of_rows_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sheet_rows: int
) -> None:
    """The same files; with Excel's limit at two rows a sheet, a category's batches are split
    across sheets as the rows held are."""
    monkeypatch.setattr(workbook, "MAX_SHEET_ROWS", sheet_rows)
    held, spilled = run(), run(held_rows=0, preview_rows=1)
    written = write_report(held, tmp_path / "held", environment="tests", generated_at=WHEN)
    streamed = write_report(spilled, tmp_path / "spilled", environment="tests", generated_at=WHEN)
    for name in ("exceptions.csv", "summary.csv"):
        assert streamed[name].read_bytes() == written[name].read_bytes(), name
    parquet = pq.read_table(streamed["exceptions.parquet"])
    assert parquet.equals(pq.read_table(written["exceptions.parquet"]))
    assert parquet.num_rows == len(held.exceptions) == 33
    books_held = openpyxl.load_workbook(written["report.xlsx"], read_only=True)
    books_streamed = openpyxl.load_workbook(streamed["report.xlsx"], read_only=True)
    assert books_streamed.sheetnames == books_held.sheetnames
    assert ("amount_mismatch (2)" in books_held.sheetnames) == (sheet_rows == 3)
    for name in books_held.sheetnames[1:]:  # the summary sheet says when it was made
        rows_held = [[(c.value, c.number_format) for c in row] for row in books_held[name].iter_rows()]
        rows_streamed = [
            [(c.value, c.number_format) for c in row] for row in books_streamed[name].iter_rows()
        ]
        assert rows_streamed == rows_held, name


@pytest.mark.usefixtures("small_batches")
def test_results_merged_read_back_in_the_order_of_results_held() -> None:
    """A report of payments and subscriptions together merges two results (``merged``)."""
    held = run().merged(run())
    spilled = run(held_rows=0, preview_rows=1).merged(run())
    assert spilled.spilled is not None
    assert texts(spilled, every_row(spilled)) == texts(held)
    assert spilled.category_counts == held.category_counts
    part = held.exceptions[held.exceptions["category"] == "status_mismatch"]
    assert texts(spilled, spilled.exceptions_page("status_mismatch", 2, 3)) == texts(held, part.iloc[2:5])


@pytest.mark.usefixtures("small_batches")
def test_the_notebook_view_shows_the_first_rows_of_each_category_held_or_read_back() -> None:
    """Typing the result in a cell shows each category's first rows, however few it holds, and
    the call that loads the rest; an informational category's oldest, as the report does; a
    result held and one read back show the same cell."""
    held, spilled = run(), run(held_rows=0, preview_rows=2)
    view = spilled._repr_html_()
    for key in ("am-0", "am-1", "am-2", "bad-2"):  # the third row of each: read back
        assert f'<td style="text-align: left; overflow-wrap: anywhere">{key}</td>' in view
    assert "<h4>Amounts differ <code>amount_mismatch</code>: 3 exceptions</h4>" in view
    assert "loads more" not in view  # three rows a category: all shown
    cut = spilled.view(rows=2)._repr_html_()
    assert cut == held.view(rows=2)._repr_html_()
    assert "am-1" in cut and "am-2" not in cut
    assert "The first 2 of 3; this result's <code>exceptions_page('amount_mismatch', 2, 1000)</code>" in cut
    assert list(spilled.exceptions_page("amount_mismatch", 2, 1000)["merchantReferenceId"]) == ["am-2"]
    transit = cut[cut.index("<code>in_transit</code>: 3 for information") :]
    assert transit.index(">tr-0<") < transit.index(">tr-1<") and ">tr-2<" not in transit  # aged 2, 1
    assert "The 2 oldest of 3; this result's <code>exceptions_page('in_transit', 0, 1000)</code>" in transit
    counts_only = spilled.view(rows=0)._repr_html_()  # for a notebook that lists the rows below
    assert "am-0" not in counts_only and "<h4>" not in counts_only
    assert counts_only.startswith(view[: view.index("<h4>")])


def test_a_tracked_result_shows_states_and_its_informational_rows_in_a_cell(tmp_path: Path) -> None:
    """A tracked run's exceptions have a state; its rows in transit or within tolerance have none
    (they are not exceptions), and the cell shows them without one, where it raised."""
    tracked = track_result(run(), "cell", as_of="2026-11-20", home=tmp_path)
    view = tracked._repr_html_()
    assert "<th>state</th>" in view and "<code>in_transit</code>: 3 for information" in view
    assert "<code>within_tolerance</code>: 3 for information" in view
    assert ">new<" in view


def test_the_parquet_file_holds_the_csv_file_typed(tmp_path: Path) -> None:
    result = run()
    paths = write_report(result, tmp_path, environment="tests", generated_at=WHEN)
    table = pq.read_table(paths["exceptions.parquet"])
    csv_rows = pd.read_csv(paths["exceptions.csv"], dtype=str, keep_default_na=False)
    assert table.column_names == list(csv_rows.columns)
    assert str(table.schema.field("source_row").type) == "int64"
    assert str(table.schema.field("ledger_amount").type) == "string"  # exact text, as in the CSV
    for name in table.column_names:  # null where the CSV file has ''
        assert pc.fill_null(table.column(name).cast(pa.string()), "").to_pylist() == list(csv_rows[name])


def test_a_tracked_run_refuses_rows_it_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(TrackError, match=r"33 exception rows, more than a tracked run holds \(250,000\)"):
        track_result(run(held_rows=0), "month", as_of="2026-11-20", home=tmp_path)


@pytest.mark.slow
@pytest.mark.usefixtures("small_batches")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_rows_read_back_from_spark_are_the_rows_held() -> None:
    held, spilled = run(), run("pyspark", held_rows=0, preview_rows=2)
    assert spilled.spilled is not None
    assert texts(spilled, every_row(spilled)) == texts(held)
    assert spilled.category_counts == held.category_counts
    assert texts(spilled, spilled.exceptions_page("amount_mismatch", 1, 2)) == texts(
        held, held.exceptions[held.exceptions["category"] == "amount_mismatch"].iloc[1:3]
    )
