"""Issue 34: inputs that are not what they say are refused at once, in one line, exit 2.

A workbook declaring ``XFD1048576`` (4.9 KB on disk, 6.6 GB read), a named pipe or ``/dev/zero``
as an input, a rate that overflows an amount, a cut-off in the year 1, a file named like a glob,
a CSV header of 100,000 columns: each once ran out of memory, hung, or ended in a traceback.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import openpyxl
import pytest

from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import fx, sources
from toolkit.reconcile.fx import load_rates
from toolkit.reconcile.inputs import load_ledger
from toolkit.reconcile.sources import sheets

HEADER = ["merchantReferenceId", "amount", "currency", "status"]
LEDGER = "merchantReferenceId,amount,currency,status\nm1,12.30,USD,success\n"
PROCESSOR = "merchantReferenceId,amount,currency,status\nm1,12.30,USD,success\n"


def reconcile(tmp_path: Path, ledger: Path | str, processor: Path | str, *options: str) -> int:
    """The command as a scheduler runs it, into a report folder of the test's own."""
    return main(
        [
            "reconcile",
            "--ledger",
            str(ledger),
            "--processor",
            str(processor),
            "--output-dir",
            str(tmp_path / "out"),
            *options,
        ]
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_one_error_line(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in lines[0], lines[0]


# ---------------------------------------------------------------------------------------------
# Workbooks: read a row at a time, never at their declared size


def workbook(path: Path, rows: Sequence[Sequence[object]], cells: dict[str, object] | None = None) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    for where, value in (cells or {}).items():
        sheet[where] = value
    book.save(path)
    return path


def rewritten(path: Path, target: Path, old: bytes, new: bytes) -> Path:
    """``path`` with ``old`` replaced by ``new`` in its first sheet's XML (what a writer other
    than openpyxl may put there)."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as copy:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                assert old in data
                data = data.replace(old, new)
            copy.writestr(item, data)
    return target


@pytest.mark.timeout(60)
@pytest.mark.parametrize("action", ["run", "inspect"])
def test_a_workbook_with_one_cell_at_xfd1048576_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    """One cell at Excel's last column and row: read by pandas, padded to 16,384 columns on
    1,048,576 rows (6.6 GB; 3.6 GB for inspect), whatever --memory-limit said."""
    hostile = workbook(tmp_path / "hostile.xlsx", [], {"XFD1048576": "x"})
    assert hostile.stat().st_size < 10_000
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    started = time.monotonic()
    if action == "run":
        code = reconcile(tmp_path, hostile, processor, "--memory-limit", "1GB")
    else:
        code = main(["reconcile", "inspect", str(hostile)])
    assert code == 2
    assert time.monotonic() - started < 30
    assert_one_error_line(
        capsys.readouterr().err,
        "hostile.xlsx: sheet 'Sheet'",
        "cell XFD1048576 (column 16,384)",
        f"at most {sources.MAX_COLUMNS:,} columns",
        "declares the range XFD1048576:XFD1048576",
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.timeout(60)
def test_a_sheet_that_declares_less_than_it_holds_is_refused_by_what_it_holds(tmp_path: Path) -> None:
    """The declared range (``<dimension>``) is only what the writer said: the cells decide."""
    saved = workbook(tmp_path / "saved.xlsx", [HEADER, ["m1", "1.00", "USD", "success"]], {"XFD9": "x"})
    lying = rewritten(saved, tmp_path / "lying.xlsx", b'ref="A1:XFD9"', b'ref="A1:D2"')
    with pytest.raises(InputError, match=r"lying\.xlsx: sheet 'Sheet' has a value in cell XFD9 .*A1:D2"):
        load_ledger(lying)


@pytest.mark.timeout(60)
def test_a_sheet_with_rows_past_excels_last_is_refused(tmp_path: Path) -> None:
    saved = workbook(tmp_path / "saved.xlsx", [HEADER, ["m1", "1.00", "USD", "success"]])
    beyond = rewritten(saved, tmp_path / "beyond.xlsx", b'<row r="2"', b'<row r="2000000"')
    with pytest.raises(
        InputError, match=r"beyond\.xlsx: sheet 'Sheet' has rows beyond Excel's last \(1,048,576\)"
    ):
        load_ledger(beyond)


def test_a_sheet_of_more_cells_than_a_workbook_is_read_with_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sheets, "MAX_CELLS", 10)
    rows: list[Sequence[object]] = [HEADER, *([f"m{i}", "1.00", "USD", "success"] for i in range(5))]
    path = workbook(tmp_path / "books.xlsx", rows)
    with pytest.raises(InputError, match=r"has more than 10 cells \(by row 3\).*save the sheet as CSV"):
        load_ledger(path)


def test_a_normal_workbook_still_reconciles_with_its_rows_numbered_as_on_the_sheet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[Sequence[object]] = [
        ["Books, May 2026"],
        [],
        [*HEADER, None, "note", "note"],
        ["m1", 12.3, "USD", "success", None, "first", "again"],
        [],
        ["m2", "x", "USD", "success", "unnamed", None, None],
    ]
    path = workbook(tmp_path / "books.xlsx", rows)
    loaded = load_ledger(path)
    assert loaded.described.columns == (*HEADER, "note", "note.1")  # a name twice, as pandas named it
    assert loaded.frame["amountMinor"].tolist() == [1230]
    assert loaded.rejected["source_row"].tolist() == [6]
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, path, processor, "--max-exceptions", "0") == 1  # m2 is rejected
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("findings: 1 exceptions (1 rejected")
    with pytest.raises(InputError, match=r"--header-row 9: sheet 'Sheet' has only 6 row\(s\)"):
        load_ledger(path, header_row=9)


# ---------------------------------------------------------------------------------------------
# What is not a regular file: refused, never waited on or read without end


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


@pytest.mark.timeout(60)
def test_a_named_pipe_as_rate_file_is_refused_not_waited_on(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger, processor = write(tmp_path, "ledger.csv", LEDGER), write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor, "--fx-rates", str(fifo)) == 2
    assert_one_error_line(
        capsys.readouterr().err, f"{fifo}: cannot be read", "is not a regular file", "named pipe"
    )


@pytest.mark.timeout(60)
def test_dev_zero_as_rate_file_is_refused_not_read_until_memory_runs_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger, processor = write(tmp_path, "ledger.csv", LEDGER), write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor, "--fx-rates", "/dev/zero") == 2
    assert_one_error_line(capsys.readouterr().err, "/dev/zero: cannot be read", "is not a regular file")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("side", ["--ledger", "--processor", "inspect"])
@pytest.mark.parametrize("which", ["fifo", "/dev/zero"])
def test_a_pipe_or_device_as_an_input_is_not_a_regular_file_rather_than_not_found(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str], side: str, which: str
) -> None:
    given = str(fifo) if which == "fifo" else which
    ledger, processor = write(tmp_path, "ledger.csv", LEDGER), write(tmp_path, "processor.csv", PROCESSOR)
    if side == "inspect":
        code = main(["reconcile", "inspect", given])
    else:
        code = reconcile(
            tmp_path, given if side == "--ledger" else ledger, given if side != "--ledger" else processor
        )
    assert code == 2
    err = capsys.readouterr().err
    assert_one_error_line(err, f"{given}: cannot be read", "is not a regular file")
    assert "not found" not in err


def test_a_rate_file_larger_than_the_cap_is_refused_saying_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fx.MAX_RATE_FILE == 64 << 20
    path = write(tmp_path, "rates.csv", "date,base,quote,rate\n" + "2026-11-18,USD,EUR,0.92\n" * 10)
    assert len(load_rates(path)) == 1
    monkeypatch.setattr(fx, "MAX_RATE_FILE", 100)
    with pytest.raises(
        InputError, match=r"rates\.csv: cannot be read \(larger than 100 bytes, the most a rate file"
    ):
        load_rates(path)


def test_the_cap_is_said_as_people_write_it() -> None:
    assert [sources.size_text(n) for n in (64 << 20, 4096, 100, 1536)] == [
        "64 MiB",
        "4 KiB",
        "100 bytes",
        "1,536 bytes",
    ]


# ---------------------------------------------------------------------------------------------
# Amounts at a rate, and cut-offs, beyond what the run can hold


FX_LEDGER = "merchantReferenceId,amount,currency,status,date\nm1,{amount},USD,success,2026-11-18\n"
FX_PROCESSOR = (
    "merchantReferenceId,amount,currency,status,createTime\nm1,5.00,IDR,success,2026-11-18T10:00:00Z\n"
)


@pytest.mark.parametrize(
    ("amount", "rate", "digits"),
    [
        ("1000000000000000.00", "16000", 22),  # OverflowError into Arrow's int64
        ("1000000000000000.00", "999999999999999999", 35),  # decimal.InvalidOperation
        ("10.00", "999999999999999999", 21),
    ],
)
def test_an_amount_too_large_at_its_rate_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], amount: str, rate: str, digits: int
) -> None:
    ledger = write(tmp_path, "ledger.csv", FX_LEDGER.format(amount=amount))
    processor = write(tmp_path, "processor.csv", FX_PROCESSOR)
    rates = write(tmp_path, "rates.csv", f"date,base,quote,rate\n2026-11-18,USD,IDR,{rate}\n")
    assert reconcile(tmp_path, ledger, processor, "--fx-rates", str(rates), "--as-of", "2026-11-20") == 2
    assert_one_error_line(
        capsys.readouterr().err,
        f"rates.csv: {amount} USD at 1 USD = {rate} IDR on 2026-11-18",
        f"{digits} digits in IDR minor units, more than the 18",
    )
    assert not (tmp_path / "out").exists()


def test_the_largest_amount_that_fits_is_converted_exactly(tmp_path: Path) -> None:
    rates = load_rates(write(tmp_path, "rates.csv", "date,base,quote,rate\n2026-11-18,USD,IDR,16000\n"))
    day = date(2026, 11, 18)
    largest = 10**18 // 16000 - 1  # USD minor units whose IDR minor units have 18 digits
    converted = rates.convert(largest, "USD", "IDR", day)
    assert converted is not None and converted.expected_minor == largest * 16000
    with pytest.raises(InputError, match="more than the 18"):
        rates.convert(largest + 1, "USD", "IDR", day)
    inverse = rates.convert(-(10**18) + 1, "IDR", "USD", day)  # 1/16000, exact: no overflow that way
    assert inverse is not None and inverse.expected_minor == -62_500_000_000_000


@pytest.mark.parametrize(
    ("as_of", "words"),
    [
        ("0001-01-01", "--as-of 0001-01-01 23:59:59 UTC: the settlement window of 3 days"),
        ("0001-01-01T00:00:00+01:00", "--as-of 0001-01-01T00:00:00+01:00: that time in UTC is outside"),
        ("9999-12-31T23:00:00-05:00", "that time in UTC is outside years 1 to 9999"),
    ],
)
def test_a_cut_off_at_the_edge_of_the_calendar_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_of: str, words: str
) -> None:
    ledger, processor = write(tmp_path, "ledger.csv", LEDGER), write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor, "--as-of", as_of) == 2
    assert_one_error_line(capsys.readouterr().err, words)


def test_a_cut_off_whose_window_fits_still_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, processor = write(tmp_path, "ledger.csv", LEDGER), write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor, "--as-of", "0001-01-04") == 0
    assert reconcile(tmp_path, ledger, processor, "--as-of", "0001-01-02", "--grace", "1d") == 0
    assert reconcile(tmp_path, ledger, processor, "--as-of", "9999-12-31") == 0
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# A file named like a glob is that file


@pytest.mark.parametrize("name", ["settlement[1].csv", "books*.csv", "what?.csv"])
def test_an_existing_file_named_like_a_glob_is_read_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    ledger = write(tmp_path, name, LEDGER)
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor) == 0, capsys.readouterr().err
    assert load_ledger(ledger).described.kind == "csv"


def test_a_glob_of_parquet_files_is_still_a_glob_and_a_missing_name_says_both_readings(
    tmp_path: Path,
) -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {"merchantReferenceId": ["m1"], "amount": ["1.00"], "currency": ["USD"], "status": ["s"]}
    )
    frame.to_parquet(tmp_path / "part-1.parquet")
    assert load_ledger(str(tmp_path / "part-*.parquet")).described.kind == "parquet"
    with pytest.raises(
        InputError, match=r"settlement\[1\]\.csv: file not found, and no Parquet file matches"
    ):
        load_ledger(tmp_path / "settlement[1].csv")


# ---------------------------------------------------------------------------------------------
# CSV: absurd widths refused at once, for what they are; wide files still read


def wide_csv(tmp_path: Path, columns: int, name_width: int = 1) -> Path:
    names = [*HEADER, *(f"c{i:0{name_width}d}" for i in range(columns - len(HEADER)))]
    row = ["m1", "12.30", "USD", "success", *([""] * (columns - len(HEADER)))]
    return write(tmp_path, "wide.csv", ",".join(names) + "\n" + ",".join(row) + "\n")


@pytest.mark.timeout(120)
def test_a_wide_header_over_128_kib_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """6,000 columns of 24 characters: a first line of 150 KB, which delimiter detection refused
    ("field larger than field limit (131072)") when it tried ';' on it."""
    ledger = wide_csv(tmp_path, 6_000, name_width=23)
    assert len(ledger.read_text().splitlines()[0]) > 128 * 1024
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor) == 0, capsys.readouterr().err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("columns", [sources.MAX_COLUMNS + 1, 100_000])
def test_a_header_of_too_many_columns_is_refused_at_once_for_that_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], columns: int
) -> None:
    """100,000 columns ran 45 s, then advised raising a memory limit that was never the cause."""
    ledger = wide_csv(tmp_path, columns)
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    started = time.monotonic()
    for options in ([], ["--delimiter", ","]):
        assert reconcile(tmp_path, ledger, processor, *options) == 2
        assert_one_error_line(
            capsys.readouterr().err,
            f"wide.csv: the header (line 1) has {columns:,} columns",
            f"at most {sources.MAX_COLUMNS:,} are read",
        )
    assert time.monotonic() - started < 30


@pytest.mark.timeout(60)
def test_a_file_without_line_breaks_is_refused_without_reading_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = write(tmp_path, "ledger.csv", LEDGER + "m2," + "9" * (sources.MAX_LINE + 10))
    processor = write(tmp_path, "processor.csv", PROCESSOR)
    assert reconcile(tmp_path, ledger, processor) == 2
    assert_one_error_line(capsys.readouterr().err, "ledger.csv: line 3 is longer than 2,000,000 characters")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("x" * 200_000 + "\n" + LEDGER, 1),  # above the header, taken for a title
        ("merchantReferenceId,amount,currency,status," + "x" * 200_000 + "\nm1,1,USD,success\n", 1),
        ("Books\n" + LEDGER.replace("status", "status," + "x" * 200_000), 2),
    ],
)
def test_a_header_value_past_the_csv_modules_limit_is_named_with_its_line(
    tmp_path: Path, text: str, line: int
) -> None:
    """Refused for what it is (no column name is 128 KiB long), not with the csv module's words,
    nor by taking a data row for the header."""
    ledger = write(tmp_path, "ledger.csv", text)
    with pytest.raises(InputError) as caught:
        load_ledger(ledger)
    message = str(caught.value)
    assert f"ledger.csv: line {line} cannot be read with the delimiter ','" in message
    assert "field larger than field limit" in message and "\n" not in message


def test_a_long_note_among_the_first_rows_still_reads(tmp_path: Path) -> None:
    """A value past the csv module's 128 KiB in a data row: the backends read it (up to their
    line limit), so only the decimal-mark detection passes over it."""
    ledger = write(
        tmp_path,
        "ledger.csv",
        "merchantReferenceId,amount,currency,status,note\n" + "m1,1.00,USD,success," + "n" * 200_000 + "\n",
    )
    assert load_ledger(ledger).frame["amountMinor"].tolist() == [100]
