"""Notebook views: files, tables, the threshold and the banner; the period filter rejects
unreadable dates and counts the rows outside."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from pandas.io.formats.style import Styler

from tests.reconcile.files import write
from toolkit.errors import InputError, NotebookFailure
from toolkit.reconcile import LoadedInput, load_ledger, load_processor, reconcile, summary_text
from toolkit.reconcile.period import select_period
from toolkit.views import (
    check_threshold,
    count_words,
    environment_banner,
    environment_label,
    errors_table,
    exceptions_table,
    output_file,
    processor_side,
    subscription_checks,
    table,
    write_frame,
)

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
    ledger = select_period(
        load_ledger(write(tmp_path, "ledger.csv", LEDGER)), "date", "2025-01-01", "2025-01-31"
    )
    processor = select_period(
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
    assert select_period(loaded, "date", "", None) is loaded  # no bounds: the input as it is
    only_end = select_period(loaded, "date", None, "2024-12-31")
    assert only_end.frame["merchantReferenceId"].tolist() == ["OLD"]
    assert only_end.outside == 3 and len(only_end.rejected) == 2
    with pytest.raises(InputError, match="period_start/period_end must be dates"):
        select_period(loaded, "date", "someday", "")
    with pytest.raises(InputError, match="no 'when' column"):
        select_period(loaded, "when", "2025-01-01", "")


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


# ---------------------------------------------------------------------------------------------
# Files, tables, threshold, banner: what the notebooks' cells show and write


def shown_data(styler: Styler) -> pd.DataFrame:
    """The text frame a Styler renders (its ``data``, which pandas-stubs does not declare)."""
    data: pd.DataFrame = vars(styler)["data"]
    return data


def test_write_frame_neutralises_formulas_writes_dicts_as_json_and_keeps_amounts_exact(
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["=HYPERLINK(1)", "B-2"],
            "amount": [Decimal("12.30"), Decimal("-0.10")],
            "action": [{"type": "redirect", "url": "https://x"}, None],
            "note": ["@SUM(A1)", "-12.00"],
        }
    ).set_index("merchantReferenceId")
    path = write_frame(frame, tmp_path / "out", "payments.csv")
    assert path == tmp_path / "out" / "payments.csv"
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    assert rows[0] == ["merchantReferenceId", "amount", "action", "note"]
    assert rows[1] == ["'=HYPERLINK(1)", "12.30", '{"type": "redirect", "url": "https://x"}', "'@SUM(A1)"]
    assert rows[2] == ["B-2", "-0.10", "", "-12.00"]  # a number stays a number
    # No temporary left; beside the file, the record of what the toolkit wrote there.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".toolkit-written.json", "payments.csv"]


def test_nothing_is_written_without_an_output_dir(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1]})
    assert output_file("", "x.csv") is None and output_file(None, "x.csv") is None
    assert write_frame(frame, "  ", "x.csv") is None
    assert output_file(tmp_path / "new", "x.csv") == tmp_path / "new" / "x.csv"
    assert (tmp_path / "new").is_dir()


def test_table_shows_blanks_money_with_its_currency_and_the_key_as_index() -> None:
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["A-1", "A-2"],
            "ledger_amount": [Decimal("12.30"), None],
            "ledger_currency": ["USD", None],
            "detail": [None, {"reason": "late", "days": 2}],
        }
    )
    styler = table(frame, money={"ledger_amount": "ledger_currency"})
    shown = shown_data(styler)
    assert list(shown.columns) == ["ledger_amount", "detail"]
    assert shown.index.tolist() == ["A-1", "A-2"] and shown.index.name == "merchantReferenceId"
    assert list(shown.loc["A-1"]) == ["12.30 USD", ""]
    assert list(shown.loc["A-2"]) == ["", "reason: late, days: 2"]
    assert "A-1" in styler.to_html()


def test_a_frame_without_a_key_hides_its_positions() -> None:
    html = table(pd.DataFrame({"status": ["success"]})).to_html()
    assert "success" in html and ">0<" not in html


def test_errors_table_says_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert errors_table(pd.DataFrame(columns=["row", "error"])) is None
    assert capsys.readouterr().out == "no errors: every row went through\n"
    shown = errors_table(pd.DataFrame({"row": [3], "error": ["bad amount"]}))
    assert shown is not None and shown_data(shown)["error"].tolist() == ["bad amount"]


def test_exceptions_table_drops_the_category_and_pairs_both_amounts() -> None:
    exceptions = pd.DataFrame(
        {
            "merchantReferenceId": ["K"],
            "category": ["amount_mismatch"],
            "ledger_amount": [Decimal("10.00")],
            "processor_amount": [Decimal("10.01")],
            "ledger_currency": ["EUR"],
            "processor_currency": ["EUR"],
        }
    )
    shown = shown_data(exceptions_table(exceptions))
    assert shown.loc["K"].to_dict() == {"ledger_amount": "10.00 EUR", "processor_amount": "10.01 EUR"}


def test_count_words() -> None:
    assert count_words({"new": 4, "changed": 1}) == "4 new, 1 changed"
    assert count_words(pd.Series({"retry": 2})) == "2 retry"
    assert count_words({}) == "none"


def test_threshold_within_and_without(tmp_path: Path) -> None:
    result = reconcile(*sides(tmp_path))
    assert check_threshold(result, None) == "2 exceptions (2 rejected row(s)), no threshold set"
    assert check_threshold(result, -1) == "2 exceptions (2 rejected row(s)), no threshold set"
    assert check_threshold(result, 2) == "2 exceptions (2 rejected row(s)), within max_exceptions=2"


def test_banner_names_the_live_service_and_its_journal_without_starting_a_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from toolkit.sandbox import embedded

    monkeypatch.setenv("TOOLKIT_BASE_URL", "https://api.example.com/")
    monkeypatch.setenv("TOOLKIT_API_KEY", "sk_live_banner_test_key")
    monkeypatch.setenv("TOOLKIT_HOME", str(tmp_path / "home"))
    before = dict(embedded._EMBEDDED)
    banner = environment_banner()
    assert "**Environment:** service at https://api.example.com (live data)" in banner.data
    assert str(tmp_path / "home" / "journal") in banner.data
    assert "sk_live_banner_test_key" not in banner.data
    assert environment_label() == "service at https://api.example.com"
    assert before == embedded._EMBEDDED


def test_processor_side_from_a_file_and_no_subscription_checks_without_a_ledger(tmp_path: Path) -> None:
    export = write(tmp_path, "export.csv", PROCESSOR)
    assert processor_side(export) == (str(export), f"processor file {export.name}")  # not a local path
    assert subscription_checks(None) is None
    assert subscription_checks("  ") is None
