"""Reports: the four files, snapshot-tested (volatile parts stabilised), environment on top."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.test_engine import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import EXCEPTION_COLUMNS, render_html, write_report

SNAPSHOTS = Path(__file__).parent / "snapshots"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ENVIRONMENT = "embedded sandbox (.toolkit/sandbox.sqlite)"


def stable_html(text: str) -> str:
    """Charts are PNG bytes that vary with matplotlib's version: replace them by a marker."""
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,CHART", text)


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {name}: run with UPDATE_SNAPSHOTS=1 and review it"
    assert text == path.read_text(encoding="utf-8"), (
        f"snapshot {name} differs (UPDATE_SNAPSHOTS=1 to accept the new output after review)"
    )


def test_report_files_and_snapshots(tmp_path: Path) -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    paths = write_report(result, tmp_path / "out", title="Daily reconciliation",
                         environment=ENVIRONMENT, generated_at=WHEN)
    assert sorted(paths) == ["exceptions.csv", "report.html", "report.xlsx", "summary.csv"]
    exceptions = paths["exceptions.csv"].read_text(encoding="utf-8")
    assert exceptions.splitlines()[0] == ",".join(EXCEPTION_COLUMNS)
    check_snapshot("exceptions.csv", exceptions)
    check_snapshot("summary.csv", paths["summary.csv"].read_text(encoding="utf-8"))
    html = paths["report.html"].read_text(encoding="utf-8")
    check_snapshot("report.html", stable_html(html))
    # The environment is the first thing on the page.
    body = html.split("<body>", 1)[1]
    assert body.lstrip().startswith('<p class="environment"><strong>Data from: embedded sandbox')
    assert html.count("data:image/png;base64,") == 2
    assert "KWD0.001" in html.replace("\xa0", "")  # formatted money


def test_workbook_has_every_exception(tmp_path: Path) -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    paths = write_report(result, tmp_path, environment=ENVIRONMENT, generated_at=WHEN)
    workbook = openpyxl.load_workbook(paths["report.xlsx"], read_only=True)
    assert workbook.sheetnames[0] == "Summary"
    summary = list(workbook["Summary"].iter_rows(values_only=True))
    assert summary[0][0] == f"Data from: {ENVIRONMENT}"
    total = 0
    for category, count in result.category_counts.items():
        sheet = pd.read_excel(paths["report.xlsx"], sheet_name=category, dtype=str)
        assert list(sheet.columns) == list(EXCEPTION_COLUMNS)
        assert len(sheet) == count
        total += len(sheet)
    assert total == result.exception_count
    mismatch = pd.read_excel(paths["report.xlsx"], sheet_name="amount_mismatch", dtype=str)
    assert "0.001" in mismatch["ledger_amount"].tolist()  # exact text, not a float


def test_html_shows_only_first_rows(tmp_path: Path) -> None:
    ledger = [(f"k{i}", "1.00", "USD", "success") for i in range(30)]
    result = run(ledger, [])
    html = render_html(result, title="t", environment="live", generated_at=WHEN, rows=5)
    assert "First 5 of 30" in html
    assert html.count("not found at the processor") == 5


def test_workbook_survives_control_characters_and_splits_at_the_row_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key with a control character (XML cannot hold it) must not break the workbook, and a
    category longer than a sheet continues on the next sheet, so every exception is in Excel."""
    import toolkit.reconcile.report as report

    monkeypatch.setattr(report, "MAX_SHEET_ROWS", 3)
    ledger = [(f"only-ledger-{i}\x07", "1.00", "USD", "success") for i in range(5)]
    result = run(ledger, [("other", "1.00", "USD", "success")])
    paths = write_report(result, tmp_path, environment=ENVIRONMENT, generated_at=WHEN)
    workbook = openpyxl.load_workbook(paths["report.xlsx"], read_only=True)
    parts = [name for name in workbook.sheetnames if name.startswith("missing_in_processor")]
    assert parts == ["missing_in_processor", "missing_in_processor (2)", "missing_in_processor (3)"]
    keys = [row[0] for name in parts for row in workbook[name].iter_rows(min_row=2, values_only=True)]
    assert sorted(keys) == [f"only-ledger-{i}" for i in range(5)]
