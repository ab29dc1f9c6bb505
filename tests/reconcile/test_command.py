"""``toolkit reconcile``: files written, summary printed, exit codes 0 / 1 / 2."""

from __future__ import annotations

import html
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reconcile.conftest import FillDisk
from tests.reconcile.files import SANDBOX_EXPORT
from toolkit.cli import main

LEDGER = (
    "merchantReferenceId,amount,currency,status\n"
    "m1,12.3,USD,1\nm2,1200,JPY,pending\nm3,1.25,KWD,5\nm4,9.99,USD,success\n"
)


def files(tmp_path: Path) -> tuple[Path, Path]:
    ledger, processor = tmp_path / "ledger.csv", tmp_path / "export.csv"
    ledger.write_text(LEDGER, encoding="utf-8")
    processor.write_text(SANDBOX_EXPORT, encoding="utf-8")
    return ledger, processor


def test_completes_and_writes_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, processor = files(tmp_path)
    out = tmp_path / "out"
    code = main(
        [
            "reconcile",
            "--ledger",
            str(ledger),
            "--processor",
            str(processor),
            "--output-dir",
            str(out),
            "--environment",
            "embedded sandbox",
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        ".toolkit-written.json",  # what the toolkit wrote here, with their sha256
        "exceptions.csv",
        "exceptions.parquet",
        "report.html",
        "report.xlsx",
        "summary.csv",
    ]
    printed = capsys.readouterr().out
    assert printed.startswith("Data from: embedded sandbox")
    last = printed.strip().splitlines()[-1]  # the one line a scheduler forwards
    assert (
        last.startswith("ok: ") and " exceptions" in last and last.endswith(f"report: {out / 'report.html'}")
    )
    assert "missing_in_processor" in printed and "1 exceptions" in printed


def test_default_output_dir_is_dated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, processor = files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["reconcile", "--ledger", str(ledger), "--processor", str(processor)]) == 0
    (folder,) = (tmp_path / "reports" / "reconcile").iterdir()
    assert folder.name.endswith("Z") and (folder / "report.html").exists()
    # The page is forwarded: it names the processor's file, not where it lies on this machine.
    page = (folder / "report.html").read_text()
    assert f"Data from: processor file {processor.name}<" in page and str(tmp_path) not in page


def test_too_many_exceptions_exits_1(tmp_path: Path) -> None:
    ledger, processor = files(tmp_path)
    args = [
        "reconcile",
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "o"),
    ]
    assert main([*args, "--max-exceptions", "0"]) == 1
    assert main([*args, "--max-exceptions", "1"]) == 0


def test_tolerance_and_mapping(tmp_path: Path) -> None:
    ledger = tmp_path / "books.csv"
    ledger.write_text("Ref,Total,Cur,State\nm1,12.31,USD,success\n", encoding="utf-8")
    _, processor = files(tmp_path)
    args = [
        "reconcile",
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "o"),
        "--max-exceptions",
        "2",
        "--ledger-map",
        '{"merchantReferenceId": "Ref", "amount": "Total", "currency": "Cur", "status": "State"}',
    ]
    # m2, m3 missing in the ledger; m1 off by one cent unless tolerated.
    assert main(args) == 1
    assert main([*args, "--amount-tolerance", "1"]) == 0


def test_period_selects_rows_and_is_stated_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ledger rows by ``date``, processor rows by ``createTime`` (the export's epoch ms), as the
    notebook does; the rows left out are counted, and the page says which period it covers."""
    _, processor = files(tmp_path)
    ledger = tmp_path / "ledger.csv"
    ledger.write_text(
        "merchantReferenceId,date,amount,currency,status\n"
        "m1,2023-11-14,12.3,USD,1\nm2,2023-11-14,1200,JPY,pending\n"
        "m3,2023-11-14,1.25,KWD,5\nm4,2023-12-01,9.99,USD,success\n",
        encoding="utf-8",
    )
    args = [
        "reconcile",
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(tmp_path / "o"),
        "--max-exceptions",
        "0",
    ]
    assert main(args) == 1  # m4 is not at the processor
    assert main([*args, "--period-start", "2023-11-01", "--period-end", "2023-11-30"]) == 0
    assert "+ 1 outside the period" in capsys.readouterr().out
    html = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "1 November 2023 to 30 November 2023 (UTC, both days included)" in html
    assert '<th class="num">outside period</th>' in html
    assert main([*args, "--period-start", "2023-13-01"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # A reversed period passed green with every row outside it.
    assert main([*args, "--period-start", "2023-11-30", "--period-end", "2023-11-01"]) == 2
    assert capsys.readouterr().err == (
        "error: period_start 2023-11-30 is after period_end 2023-11-01: no day is in the period\n"
    )


def test_a_period_with_payments_in_transit_says_when_it_is_final(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A nightly run of yesterday showed a payment booked late and never charged as in transit,
    and the next night's period left it out: no run ever reported it. The run now says that the
    period is not final and when to run it again; run then, the payment is an exception."""
    ledger, processor = tmp_path / "ledger.csv", tmp_path / "processor.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status,date\n"
        "n0,5.00,EUR,success,2025-05-31\nn1,10.00,EUR,success,2025-05-31\n"
    )
    processor.write_text(
        "merchantReferenceId,amount,currency,status,createTime\nn0,5.00,EUR,success,2025-05-31T09:00:00Z\n"
    )
    inputs = ["--ledger", str(ledger), "--processor", str(processor)]
    args = ["reconcile", *inputs, "--output-dir", str(tmp_path / "o")]
    night = [*args, "--period-start", "2025-05-31", "--period-end", "2025-05-31", "--max-exceptions", "0"]
    said = (
        "This period is not final: a later period's run leaves out its 1 payment in transit. "
        "Run this period again after 4 June 2025, 00:00 UTC, when each has settled or is an exception."
    )
    assert main([*night, "--as-of", "2025-06-01T02:00:00Z"]) == 0
    assert said in capsys.readouterr().out.splitlines()
    assert said in html.unescape((tmp_path / "o" / "report.html").read_text(encoding="utf-8"))
    assert main([*night, "--as-of", "2025-06-04T02:00:00Z"]) == 1  # n1 is missing at the processor
    assert "not final" not in capsys.readouterr().out
    assert main([*args, "--as-of", "2025-06-01T02:00:00Z"]) == 0  # no period: a later run sees it
    assert "not final" not in capsys.readouterr().out


def test_unusable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, processor = files(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("merchantReferenceId,amount,status\nm1,1,success\n", encoding="utf-8")
    assert main(["reconcile", "--ledger", str(bad), "--processor", str(processor)]) == 2
    assert "bad.csv: required column 'currency'" in capsys.readouterr().err
    assert main(["reconcile", "--ledger", str(tmp_path / "none.csv"), "--processor", str(processor)]) == 2
    assert "none.csv: file not found" in capsys.readouterr().err
    assert (
        main(
            ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--ledger-map", "{not json"]
        )
        == 2
    )
    assert "--ledger-map" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Outputs that cannot be written: exit 2, one line, no partial report


def run_into(tmp_path: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    ledger, processor = files(tmp_path)
    code = main(
        [
            "reconcile",
            "--ledger",
            str(ledger),
            "--processor",
            str(processor),
            "--output-dir",
            str(output),
            "--max-exceptions",
            "0",
        ]
    )
    return code, capsys.readouterr().err


def assert_one_error_line(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in lines[0]


def test_output_dir_that_is_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "taken"
    output.write_text("not a folder", encoding="utf-8")
    code, err = run_into(tmp_path, output, capsys)
    assert code == 2
    assert_one_error_line(err, str(output), "not a folder")
    assert output.read_text(encoding="utf-8") == "not a folder"


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder this process cannot create files in.

    As root, permission bits do not stop writes, so a folder of sysfs (where nobody can create a
    file) stands in; the test is skipped only where there is neither.
    """
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    folder = Path("/sys/kernel")
    try:
        handle, name = tempfile.mkstemp(dir=folder)
    except OSError:
        yield folder
        return
    os.close(handle)
    os.unlink(name)
    pytest.skip("running as root and /sys/kernel accepts files: no read-only folder to test with")


def test_read_only_output_dir_exits_2(
    tmp_path: Path, read_only_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = set(read_only_folder.iterdir())
    code, err = run_into(tmp_path, read_only_folder, capsys)
    assert code == 2
    assert_one_error_line(err, str(read_only_folder / "report"))
    assert set(read_only_folder.iterdir()) == before


def test_full_disk_exits_2_and_leaves_nothing(
    tmp_path: Path, fill_disk: FillDisk, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = fill_disk(tmp_path / "full", free=1_000)
    code, err = run_into(tmp_path, folder, capsys)
    assert code == 2
    assert_one_error_line(err, str(folder), "No space left on device")
    assert list(folder.iterdir()) == []


def test_file_size_limit_in_a_real_process_exits_2(tmp_path: Path) -> None:
    """The kernel refuses a write midway (RLIMIT_FSIZE, as a full disk would): the process prints
    one line, exits 2 and leaves no report file nor temporary."""
    ledger, processor = files(tmp_path)
    output = tmp_path / "out"
    limit = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000)); "
        "from toolkit.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            "-c",
            limit,
            "reconcile",
            "--ledger",
            str(ledger),
            "--processor",
            str(processor),
            "--output-dir",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert_one_error_line(proc.stderr, "cannot write", "File too large")
    # The engine's own working files (its kept tables) are refused first: no report is begun.
    assert not output.exists() or list(output.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Inputs as they come: inspect, reading options, the column error's map


def test_inspect_shows_what_was_detected_and_a_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "books.csv"
    text = "Books, May 2026\r\nRef;Amount;Currency;Staus;Note\r\n" + "".join(
        f"m{i};{i}.00;EUR;success;a long note that goes on and on {i}\r\n" for i in range(7)
    )
    path.write_bytes(text.encode("utf-16"))
    assert main(["reconcile", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "delimiter: semicolon ';'" in out
    assert "encoding: utf-16 (with BOM)" in out
    assert "header row: 2" in out
    assert "columns (5): Ref, Amount, Currency, Staus, Note" in out
    assert "rows: 7" in out
    assert "first 5 row(s):" in out and "m4" in out and "m5" not in out
    assert "a long note that goes o…" in out  # long values are cut
    assert "--ledger-map amount=Amount,currency=Currency,status=Staus" in out
    assert "no column found for merchantReferenceId" in out
    assert main(["reconcile", "inspect", str(path), "--side", "processor", "--delimiter", ","]) == 0
    out = capsys.readouterr().out
    assert "delimiter: comma ','" in out and "--processor-map" in out


def test_inspect_of_a_missing_file_or_a_bad_option_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reconcile", "inspect", str(tmp_path / "none.csv")]) == 2
    assert_one_error_line(capsys.readouterr().err, "none.csv: file not found")
    ledger, _ = files(tmp_path)
    assert main(["reconcile", "inspect", str(ledger), "--encoding", "nope"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--encoding: unknown encoding 'nope'")


def test_inspect_counts_the_rows_the_run_reads_and_refuses_what_it_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    processor = tmp_path / "export.csv"
    processor.write_text(SANDBOX_EXPORT, encoding="utf-8")
    books = tmp_path / "books.csv"
    # Empty rows as a spreadsheet writes them (;;;) are no rows, for inspect as for the run.
    books.write_text(
        "merchantReferenceId;amount;currency;status\na;12,50;EUR;success\n;;;\n ; ;;\nc;1,00;EUR;success\n",
        encoding="utf-8",
    )
    assert main(["reconcile", "inspect", str(books)]) == 0
    assert "rows: 2\n" in capsys.readouterr().out
    out = tmp_path / "out"
    main(["reconcile", "--ledger", str(books), "--processor", str(processor), "--output-dir", str(out)])
    assert f"{books}: 2 rows" in capsys.readouterr().out
    # A quote that is never closed would make every line after it one value: the run refuses
    # the file, and inspect says so instead of showing that value as a row.
    books.write_text(
        'merchantReferenceId;amount;currency;status\na;12,50;EUR;success\nb;"13,50;EUR;success\n'
        "c;1,00;EUR;success\n",
        encoding="utf-8",
    )
    assert (
        main(["reconcile", "--ledger", str(books), "--processor", str(processor), "--output-dir", str(out)])
        == 2
    )
    assert_one_error_line(capsys.readouterr().err, "books.csv: line 3 cannot be read")
    assert main(["reconcile", "inspect", str(books)]) == 2
    assert_one_error_line(
        capsys.readouterr().err,
        "books.csv: line 3 cannot be read",
        "no quote closes",
        "'b;\"13,50;EUR;success'",
    )
    # A quote inside a value, which the run reads, is no reason to refuse.
    books.write_text('merchantReferenceId;amount;currency;status\na;"12,5"0;EUR;success\n', encoding="utf-8")
    assert main(["reconcile", "inspect", str(books)]) == 0
    assert "rows: 1\n" in capsys.readouterr().out


def test_inspect_shows_the_first_rows_of_a_parquet_folder_whichever_files_hold_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    columns = ["merchantReferenceId", "amount", "currency", "status"]
    parts = {"part-0.parquet": [], "part-1.parquet": ["x", "y"], "part-2.parquet": ["z"]}  # the first: empty
    for name, keys in parts.items():
        table = pa.table({c: pa.array([f"{k}-{c}" for k in keys], pa.string()) for c in columns})
        pq.write_table(table, folder / name, row_group_size=1)  # a row group a row
    assert main(["reconcile", "inspect", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "rows: 3\n" in out and "first 3 row(s):" in out
    assert all(f"{k}-merchantReferenceId" in out for k in "xyz")


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--delimiter", "ab", "--delimiter: 'ab' is not one character"),
        ("--ledger-encoding", "nope", "--ledger-encoding: unknown encoding"),
        ("--processor-sheet", "0", "--processor-sheet: 0 must be a sheet name or a number from 1"),
        ("--header-row", "x", "--header-row: 'x' must be a number from 1"),
        ("--ledger-map", "amount", "--ledger-map: give required=file column pairs"),
    ],
)
def test_bad_reading_options_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, words: str
) -> None:
    ledger, processor = files(tmp_path)
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), option, value]
    assert main([*args, "--output-dir", str(tmp_path / "out")]) == 2
    assert_one_error_line(capsys.readouterr().err, words)
    assert not (tmp_path / "out").exists()


def test_an_excel_export_reconciles_with_per_side_options_and_the_printed_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, processor = files(tmp_path)
    ledger = tmp_path / "books.csv"
    ledger.write_bytes(LEDGER.replace(",", "|").replace("amount", "Total").encode("cp1252"))
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--ledger-delimiter", "|"]
    assert main([*args, "--output-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert_one_error_line(err, "the file's columns are merchantReferenceId, Total, currency, status")
    fix = err.split("; to read the file's column as the required one, ")[1].split(" (")[0].split(" ")
    assert fix == ["--ledger-map", "amount=COLUMN"]
    assert main([*args, "--ledger-map", "amount=Total", "--output-dir", str(tmp_path / "b")]) == 0
    assert "ok: " in capsys.readouterr().out


def test_reading_options_that_read_no_file_given_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--sheet`` on two CSV files, or ``--ledger-delimiter`` on a workbook, is said, not ignored."""
    ledger, processor = files(tmp_path)
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor)]
    assert main([*args, "--sheet", "2", "--output-dir", str(tmp_path / "a")]) == 2
    assert_one_error_line(capsys.readouterr().err, "--sheet: it reads Excel workbooks, and neither file")
    assert main([*args, "--ledger-sheet", "2", "--output-dir", str(tmp_path / "b")]) == 2
    assert_one_error_line(capsys.readouterr().err, "--ledger-sheet:", "ledger.csv is not one of the Excel")
    book = tmp_path / "books.xlsx"
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in LEDGER.splitlines():
        sheet.append(row.split(","))
    workbook.save(book)
    on_book = ["reconcile", "--ledger", str(book), "--processor", str(processor)]
    assert main([*on_book, "--ledger-delimiter", ";", "--output-dir", str(tmp_path / "c")]) == 2
    assert_one_error_line(capsys.readouterr().err, "--ledger-delimiter:", "books.xlsx is not one of the CSV")
    # For both: the workbook takes --sheet, the CSV export --delimiter; each reads one of them.
    assert main([*on_book, "--sheet", "1", "--delimiter", ",", "--output-dir", str(tmp_path / "d")]) == 0
    assert "ok: " in capsys.readouterr().out
    assert not any((tmp_path / name).exists() for name in "abc")


def test_inspect_says_the_decimal_mark_the_run_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No column is named like the amount (``Betrag``): the mark is not guessed (``point`` was said
    of a German export), and ``--map`` names the column it is read from, as by the run. The first
    rows looked at are the run's too, not only the five shown."""
    books = tmp_path / "buchungen.csv"
    books.write_text("Referenz;Betrag;Gebuehr;Waehrung\nm1;1.234,56;1,5;EUR\nm2;12,50;0,75;EUR\n")
    assert main(["reconcile", "inspect", str(books)]) == 0
    assert "decimal mark: not detected: no column is named like the amount" in capsys.readouterr().out
    assert main(["reconcile", "inspect", str(books), "--map", "amount=Betrag"]) == 0
    assert "decimal mark: comma ','" in capsys.readouterr().out
    rows = "".join(f'm{i},"{i},50",USD\n' for i in range(1, 6))  # five decimal commas shown
    books.write_text(f'Ref,amount,currency\n{rows}m6,"1,234.56",USD\n')  # the sixth row decides
    assert main(["reconcile", "inspect", str(books)]) == 0
    assert "decimal mark: point '.'" in capsys.readouterr().out


def test_decimal_comma_books_reconcile_with_the_mark_detected_or_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """European books against the sandbox's export: the comma is detected, and ``--ledger-decimal``
    reads a file whose first rows do not say (``1.234`` alone: a thousand, or 1.234 dinars)."""
    processor = tmp_path / "export.csv"
    processor.write_text(SANDBOX_EXPORT, encoding="utf-8")
    books = "merchantReferenceId;amount;currency;status\nm1;12,30;USD;success\nm2;1.200;JPY;pending\n"
    ledger = tmp_path / "books.csv"
    ledger.write_bytes(books.encode("cp1252"))
    assert main(["reconcile", "inspect", str(ledger)]) == 0
    assert "decimal mark: comma ','" in capsys.readouterr().out
    args = ["reconcile", "--ledger", str(ledger), "--processor", str(processor)]
    assert main([*args, "--output-dir", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "2 rows = 2 matched + 0 in exceptions + 0 rejected" in out  # 12,30 USD and 1.200 JPY
    ledger.write_bytes(books.replace("m1;12,30;USD;success\n", "").encode("cp1252"))  # only 1.200
    assert main([*args, "--output-dir", str(tmp_path / "b")]) == 2  # JPY 1.200? not one row read
    assert (
        "none of the ledger's 1 rows can be used; the first: row 2: amount '1.200'" in capsys.readouterr().err
    )
    assert main([*args, "--ledger-decimal", ",", "--output-dir", str(tmp_path / "c")]) == 0
    assert "1 rows = 1 matched + 0 in exceptions + 0 rejected" in capsys.readouterr().out
    assert main([*args, "--decimal", ";", "--output-dir", str(tmp_path / "d")]) == 2
    assert_one_error_line(capsys.readouterr().err, "--decimal: ';' is not a decimal mark")
