"""Notebook views: the period filter rejects unreadable dates and counts the rows outside."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reconcile.test_inputs import write
from toolkit.errors import InputError
from toolkit.notebooks import NotebookFailure
from toolkit.reconcile import LoadedInput, load_ledger, load_processor, reconcile, summary_text
from toolkit.views import check_threshold, restrict_period

LEDGER = (
    "merchantReferenceId,date,amount,currency,status\n"
    "IN-1,2025-01-15,10.00,USD,success\n"
    "IN-2,2025-01-31T23:59:59Z,20.00,USD,success\n"
    "BLANK,,300.00,USD,success\n"  # no date: cannot be placed in the period
    "UNREADABLE,31/02/2025,25.00,USD,success\n"  # no such day
    "OLD,2024-12-31,7.00,USD,success\n"  # outside the period
    "LATER,1738454400000,8.00,USD,success\n"  # 2025-02-02 in epoch milliseconds: outside
)
PROCESSOR = (
    "merchantReferenceId,amount,currency,status,createTime\n"
    "IN-1,10.00,USD,success,1736899200000\n"
    "IN-2,20.00,USD,success,1738367999000\n"
)


def sides(tmp_path: Path) -> tuple[LoadedInput, LoadedInput]:
    ledger = restrict_period(
        load_ledger(write(tmp_path, "ledger.csv", LEDGER)), "date", "2025-01-01", "2025-01-31"
    )
    processor = restrict_period(
        load_processor(write(tmp_path, "export.csv", PROCESSOR)), "createTime", "2025-01-01", "2025-01-31"
    )
    return ledger, processor


def test_unreadable_dates_are_rejected_rows_not_left_out(tmp_path: Path) -> None:
    """The issue's run: 325.00 USD on rows without a readable date passed max_exceptions 0."""
    ledger, processor = sides(tmp_path)
    result = reconcile(ledger, processor)
    rejected = result.exceptions[result.exceptions["category"] == "rejected_row"]
    assert sorted(zip(rejected["merchantReferenceId"], rejected["source_row"], strict=True)) == [
        ("BLANK", 4),
        ("UNREADABLE", 5),
    ]
    details = dict(zip(rejected["merchantReferenceId"], rejected["detail"], strict=True))
    assert details["BLANK"] == "date is empty"
    assert details["UNREADABLE"].startswith("date '31/02/2025' is not a date")
    with pytest.raises(
        NotebookFailure, match=r"2 exceptions \(2 rejected row\(s\)\), more than max_exceptions=0"
    ):
        check_threshold(result, 0)


def test_rows_outside_the_period_are_counted_and_add_up(tmp_path: Path) -> None:
    ledger, processor = sides(tmp_path)
    result = reconcile(ledger, processor)
    led, pro = result.counts
    assert (led.rows, led.matched, led.exceptions, led.rejected, led.outside) == (6, 2, 0, 2, 2)
    assert (pro.rows, pro.matched, pro.outside) == (2, 2, 0)
    assert led.adds_up and pro.adds_up
    assert "<th>outside period</th>" in result._repr_html_()
    assert "+ 2 outside the period" in summary_text(result)


def test_period_bounds_and_no_period(tmp_path: Path) -> None:
    loaded = load_ledger(write(tmp_path, "ledger.csv", LEDGER))
    assert restrict_period(loaded, "date", "", None) is loaded  # no bounds: the input as it is
    only_end = restrict_period(loaded, "date", None, "2024-12-31")
    assert only_end.frame["merchantReferenceId"].tolist() == ["OLD"]
    assert only_end.outside == 3 and len(only_end.rejected) == 2
    with pytest.raises(InputError, match="period_start/period_end must be dates"):
        restrict_period(loaded, "date", "someday", "")
    with pytest.raises(InputError, match="no 'when' column"):
        restrict_period(loaded, "when", "2025-01-01", "")


@pytest.mark.slow
def test_notebook_with_a_period_fails_on_unreadable_dates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's run end to end: ``toolkit run reconciliation_report`` with a period and
    ``max_exceptions 0`` exits 1 (it exited 0), and shows the rows outside the period."""
    import nbformat

    from toolkit.cli import main

    ledger = write(tmp_path, "ledger.csv", LEDGER)
    processor = write(tmp_path, "export.csv", PROCESSOR)
    out = tmp_path / "rec"
    code = main(
        [
            "run",
            "reconciliation_report",
            "--output-dir",
            str(out),
            "-p",
            "ledger_path",
            str(ledger),
            "-p",
            "processor_path",
            str(processor),
            "-p",
            "period_start",
            "2025-01-01",
            "-p",
            "period_end",
            "2025-01-31",
            "-p",
            "max_exceptions",
            "0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1, err
    assert "2 exceptions (2 rejected row(s)), more than max_exceptions=0" in err
    book = nbformat.read(str(out / "reconciliation_report.ipynb"), as_version=4)  # type: ignore[no-untyped-call]
    text = "".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/html", ""))
        for cell in book.cells
        for o in cell.get("outputs", [])
    )
    assert "ledger: 2 row(s) outside 2025-01-01 to 2025-01-31" in text
    assert "ledger: 2 row(s) rejected" in text
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<th>outside period</th>" in text and "outside period" in report
    assert "1 January 2025 to 31 January 2025 (UTC, both days included)" in report  # stated
    exceptions = (out / "exceptions.csv").read_text(encoding="utf-8")
    assert "BLANK,rejected_row" in exceptions and "UNREADABLE,rejected_row" in exceptions
