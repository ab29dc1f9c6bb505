"""report.xlsx: amounts as exact numbers in their currency's format, headers frozen, filters, widths,
no empty sheets; read back with openpyxl as a controller's spreadsheet would read them."""

from __future__ import annotations

import re
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from tests.reconcile.information import FX_ROWS, MISSING_RATE, with_information
from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.money import minor_digits
from toolkit.reconcile import EXCEPTION_COLUMNS, ReconciliationResult, write_report
from toolkit.reconcile.render.report import exceptions_text_table
from toolkit.reconcile.render.workbook import write_xlsx
from toolkit.reconcile.render.workbook_cells import (
    CUT_MARK,
    EXCEL_DIGITS,
    MAX_CELL_CHARS,
    MAX_COLUMN_WIDTH,
    fits_excel,
)
from toolkit.reconcile.render.workbook_exceptions import AMOUNT_COLUMNS
from toolkit.reconcile.result import FX_COLUMNS

ENVIRONMENT = "embedded sandbox (.toolkit/sandbox.sqlite)"
LAST_COLUMN = "Q"  # seventeen exception columns
DETAIL = EXCEPTION_COLUMNS.index("detail")


def report(tmp_path: Path, result: ReconciliationResult) -> dict[str, Path]:
    return write_report(result, tmp_path / "out", environment=ENVIRONMENT)


def sheet_xml(path: Path) -> str:
    with zipfile.ZipFile(path) as archive:
        return "".join(archive.read(n).decode() for n in archive.namelist() if n.startswith("xl/worksheets/"))


def test_amounts_are_numbers_equal_to_their_exact_text(tmp_path: Path) -> None:
    paths = report(tmp_path, run(PLANTED_LEDGER, PLANTED_PROCESSOR))
    expected = pd.read_csv(paths["exceptions.csv"], dtype=str, keep_default_na=False)
    workbook = openpyxl.load_workbook(paths["report.xlsx"])
    numbers = 0
    for category, rows in expected.groupby("category", sort=False):
        cells = list(workbook[str(category)].iter_rows(min_row=2, values_only=True))
        assert len(cells) == len(rows)
        for record, values in zip(rows.to_dict("records"), cells, strict=True):
            for amount, currency in AMOUNT_COLUMNS.items():
                text, value = record[amount], values[EXCEPTION_COLUMNS.index(amount)]
                if not text:
                    assert value is None
                    continue
                assert type(value) in (int, float), (amount, text, value)
                assert Decimal(repr(value)) == Decimal(text)  # the same number, exactly
                assert f"{value:.{minor_digits(record[currency])}f}" == text  # and the same text
                numbers += 1
    assert numbers == 20  # every amount of the planted exceptions (rejected rows have none)
    # In the file, a number cell's value is the exact decimal text, not a float's rendering.
    xml = sheet_xml(paths["report.xlsx"])
    assert "<v>10.00</v>" in xml and "<v>0.001</v>" in xml and "<v>1200</v>" in xml


def test_number_formats_follow_the_currency(tmp_path: Path) -> None:
    paths = report(tmp_path, run(PLANTED_LEDGER, PLANTED_PROCESSOR))
    workbook = openpyxl.load_workbook(paths["report.xlsx"])
    formats = {}
    for sheet in workbook.worksheets[1:]:
        for row in sheet.iter_rows(min_row=2):
            for amount, currency in AMOUNT_COLUMNS.items():
                cell = row[EXCEPTION_COLUMNS.index(amount)]
                if cell.value is not None:
                    formats[row[EXCEPTION_COLUMNS.index(currency)].value] = cell.number_format
    assert formats == {
        "JPY": '#,##0 "JPY"',
        "USD": '#,##0.00 "USD"',
        "KWD": '#,##0.000 "KWD"',
        "EUR": '#,##0.00 "EUR"',
    }
    # One style per currency present, in styles.xml.
    with zipfile.ZipFile(paths["report.xlsx"]) as archive:
        styles = archive.read("xl/styles.xml").decode()
    assert sorted(re.findall(r'formatCode=\'[^\']*"([A-Z]{3})"\'', styles)) == ["EUR", "JPY", "KWD", "USD"]
    # The summary's amounts are numbers in the same formats, counts with separators.
    summary = workbook["Summary"]
    rows = {(r[0].value, r[1].value): r for r in summary.iter_rows() if r[0].value == "matched"}
    assert (rows["matched", "JPY"][3].value, rows["matched", "JPY"][3].number_format) == (1200, '#,##0 "JPY"')
    assert rows["matched", "KWD"][3].number_format == '#,##0.000 "KWD"'
    assert rows["matched", "USD"][2].number_format == "#,##0"


def test_amounts_beyond_excel_precision_stay_exact_text(tmp_path: Path) -> None:
    """Up to 15 significant digits an amount is a number; from 16 on it is the exact text (Excel
    would round it), and the summary sheet says how many."""
    ledger = [
        ("kwd-15", "999999999999.999", "KWD", "success"),
        ("usd-15", "9999999999999.99", "USD", "success"),
        ("kwd-16", "1234567890123.456", "KWD", "success"),
        ("kwd-17", "12345678901234.567", "KWD", "success"),
    ]
    paths = report(tmp_path, run(ledger, []))
    workbook = openpyxl.load_workbook(paths["report.xlsx"])
    cells = {
        row[0].value: row[EXCEPTION_COLUMNS.index("ledger_amount")]
        for row in workbook["missing_in_processor"].iter_rows(min_row=2)
    }
    assert cells["kwd-15"].data_type == "n"
    assert Decimal(repr(cells["kwd-15"].value)) == Decimal("999999999999.999")
    assert Decimal(repr(cells["usd-15"].value)) == Decimal("9999999999999.99")
    assert (cells["kwd-16"].data_type, cells["kwd-16"].value) == ("s", "1234567890123.456")
    assert (cells["kwd-17"].data_type, cells["kwd-17"].value) == ("s", "12345678901234.567")
    summary = list(workbook["Summary"].iter_rows(values_only=True))
    kwd = next(r for r in summary if r[:2] == ("missing_in_processor", "KWD"))
    assert kwd[3] == "14580246791358.022"  # the sum has 17 digits: text as well
    note = next(r[0] for r in summary if r[0] and str(r[0]).startswith("Amounts are numbers"))
    assert f"at most {EXCEL_DIGITS} significant digits" in note
    assert note.endswith("3 amount(s) in this workbook are text.")


@given(minor=st.integers(-(10**18) + 1, 10**18 - 1), digits=st.sampled_from([0, 2, 3, 4]))
def test_a_number_cell_round_trips_through_a_double(minor: int, digits: int) -> None:
    """``fits_excel`` lets an amount be a number cell when it has at most 15 significant digits at
    the currency's decimals, and every such amount converts to an IEEE double and back to the same
    text at those decimals, which is why it may."""
    sign, units = ("-" if minor < 0 else ""), str(abs(minor)).rjust(digits + 1, "0")
    whole = units[:-digits] if digits else units
    text = sign + whole + (f".{units[-digits:]}" if digits else "")
    fits = fits_excel(pa.array([text]), pa.array([digits], type=pa.int32()))[0].as_py()
    assert fits == (len(whole.lstrip("0")) + digits <= EXCEL_DIGITS)
    if fits:
        assert f"{float(text):.{digits}f}" == text


def test_headers_are_frozen_filtered_and_columns_sized(tmp_path: Path) -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    paths = report(tmp_path, result)
    workbook = openpyxl.load_workbook(paths["report.xlsx"])
    for category, count in result.category_counts.items():
        sheet = workbook[category]
        assert sheet.freeze_panes == "A2"
        assert sheet.auto_filter.ref == f"A1:{LAST_COLUMN}{count + 1}"
        assert [c.value for c in sheet[1]] == list(EXCEPTION_COLUMNS)
        assert all(c.font.b for c in sheet[1])
        widths = {k: d.width for k, d in sheet.column_dimensions.items()}
        assert len(widths) == len(EXCEPTION_COLUMNS)
        assert all(len("kind") < w <= MAX_COLUMN_WIDTH for w in widths.values())
        assert widths["A"] >= len("merchantReferenceId")
    assert workbook["rejected_row"].column_dimensions["O"].width == MAX_COLUMN_WIDTH  # long details (O)
    # Excel's hidden name of each filter range.
    with zipfile.ZipFile(paths["report.xlsx"]) as archive:
        book = archive.read("xl/workbook.xml").decode()
        assert archive.namelist()[0] == "[Content_Types].xml"  # what file-type sniffers read
    assert f"'amount_mismatch'!$A$1:${LAST_COLUMN}$4" in book
    # The summary comes first; its filter covers the table of counts and amounts.
    summary = workbook["Summary"]
    assert workbook.sheetnames[0] == "Summary" and workbook.active.title == "Summary"
    first, last = summary.auto_filter.ref.split(":")
    assert [c.value for c in summary[first[1:]]][:4] == ["category", "currency", "count", "amount"]
    assert int(last[1:]) - int(first[1:]) == len(result.summary)


def test_no_sheet_for_a_category_without_exceptions(tmp_path: Path) -> None:
    one = report(tmp_path / "one", run([("only", "1.00", "USD", "success")], []))
    assert openpyxl.load_workbook(one["report.xlsx"]).sheetnames == ["Summary", "missing_in_processor"]
    same = [("a", "1.00", "USD", "success")]
    none = report(tmp_path / "none", run(same, same))
    workbook = openpyxl.load_workbook(none["report.xlsx"])
    assert workbook.sheetnames == ["Summary"]
    assert workbook["Summary"]["A1"].value == f"Data from: {ENVIRONMENT}"


def test_cells_are_cut_at_excels_limit_saying_so_and_escaped(tmp_path: Path) -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    table = exceptions_text_table(result)
    long = "x" * (MAX_CELL_CHARS + 10)
    # As many characters as a cell holds, but Excel counts each of these twice (UTF-16).
    euros = "\N{BANKNOTE WITH EURO SIGN}" * MAX_CELL_CHARS
    key = table.column("merchantReferenceId")
    detail = pc.if_else(
        pc.equal(key, "amount"),
        pa.scalar("<&> " + long),
        pc.if_else(pc.equal(key, "currency"), pa.scalar(euros), table.column("detail")),
    )
    table = table.set_column(table.column_names.index("detail"), "detail", detail)
    path = tmp_path / "report.xlsx"
    write_xlsx(result, path, title="t", environment=ENVIRONMENT, generated_at="now", table=table)
    workbook = openpyxl.load_workbook(path)

    def cell(sheet: str, key: str) -> str:
        rows = workbook[sheet].iter_rows(min_row=2, values_only=True)
        return str(next(r[DETAIL] for r in rows if r[0] == key))

    def excel_length(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    cut = cell("amount_mismatch", "amount")
    assert cut.startswith("<&> xxx") and cut.endswith(CUT_MARK)
    assert excel_length(cut) == MAX_CELL_CHARS
    cut = cell("currency_mismatch", "currency")
    assert cut.endswith(CUT_MARK) and excel_length(cut) <= MAX_CELL_CHARS
    assert set(cut.removesuffix(CUT_MARK)) == {"\N{BANKNOTE WITH EURO SIGN}"}  # whole characters only
    # A cell that fits is whole, with no mark.
    frame = result.exceptions
    whole = frame[(frame["merchantReferenceId"] == "status") & (frame["category"] == "status_mismatch")]
    assert cell("status_mismatch", "status") == whole["detail"].item()


# ---------------------------------------------------------------------------------------------
# Informational rows, cut-off, reference rates (issue 11)


def test_information_and_fx_sheets_come_after_the_exceptions(tmp_path: Path) -> None:
    result = with_information()
    workbook = openpyxl.load_workbook(report(tmp_path, result)["report.xlsx"])
    exceptions = [c for c, n in result.category_counts.items() if n]
    assert workbook.sheetnames == ["Summary", *exceptions, "in_transit", "within_tolerance", "FX"]
    sheet = workbook["in_transit"]
    assert [c.value for c in sheet[1]] == list(EXCEPTION_COLUMNS)
    rows = {
        r[0]: dict(zip(EXCEPTION_COLUMNS, r, strict=True))
        for r in sheet.iter_rows(min_row=2, values_only=True)
    }
    assert {k: (r["severity"], r["age_days"]) for k, r in rows.items()} == {
        "transit-new": ("info", 0),
        "transit-old": ("info", 2),
    }
    assert type(rows["transit-old"]["age_days"]) is int  # a number cell, not text
    tolerance = {r[0]: r for r in workbook["within_tolerance"].iter_rows(min_row=2, values_only=True)}
    assert tolerance["tol-jpy"][EXCEPTION_COLUMNS.index("age_days")] is None  # no age: empty
    assert Decimal(repr(tolerance["tol-usd-1"][EXCEPTION_COLUMNS.index("processor_amount")])) == Decimal(
        "10.02"
    )


def test_fx_sheet_holds_exact_numbers_in_their_currencies(tmp_path: Path) -> None:
    workbook = openpyxl.load_workbook(report(tmp_path, with_information())["report.xlsx"])
    sheet = workbook["FX"]
    assert [c.value for c in sheet[1]] == list(FX_COLUMNS)
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref == f"A1:J{len(FX_ROWS) + 1}"
    column = {name: i for i, name in enumerate(FX_COLUMNS)}
    for expected, row in zip(FX_ROWS, sheet.iter_rows(min_row=2), strict=True):
        assert row[0].value == expected[0] and row[1].value == str(expected[1])
        for name in ("ledger_amount", "rate", "expected_amount", "charged_amount", "variance"):
            cell = row[column[name]]
            assert cell.data_type == "n", (name, cell.value)
            assert Decimal(repr(cell.value)) == Decimal(expected[column[name]]), name
        assert row[column["ledger_amount"]].number_format == f'#,##0.00 "{expected[3]}"'
        assert row[column["variance"]].number_format == '#,##0.00 "USD"'
    variances = [Decimal(repr(r[column["variance"]])) for r in sheet.iter_rows(min_row=2, values_only=True)]
    assert sum(variances) == Decimal("-0.02")  # a controller's SUM of the column


def test_summary_sheet_states_the_settings_accounting_pairs_and_missing_rates(tmp_path: Path) -> None:
    result = with_information()
    workbook = openpyxl.load_workbook(report(tmp_path, result)["report.xlsx"])
    rows = [r for r in workbook["Summary"].iter_rows(values_only=True)]
    texts = [str(r[0]) for r in rows if r[0] is not None]
    assert (
        "Amount tolerance: differences of up to 0.5% (at least 2 minor units) count as matching" in texts[3]
    )
    assert texts[4].startswith("Cut-off: 20 November 2026, 00:00 UTC")
    assert texts[5].startswith("Settlement window: 3 days (payments dated from 17 November 2026, 00:00 UTC")
    header = next(r for r in rows if r[0] == "side")
    assert [h for h in header if h is not None] == [
        "side",
        "source",
        "rows",
        "matched",
        "in exceptions",
        "in transit",
        "rejected",
        "after cut-off",
    ]
    for side in rows[rows.index(header) + 1 : rows.index(header) + 3]:
        assert side[2] == sum(side[3:8])  # the accounting adds up, in numbers
    pair = next(r for r in rows if r[:2] == ("EUR", "USD"))
    assert pair[2] == 2 and Decimal(repr(pair[3])) == Decimal("-0.02")
    assert MISSING_RATE in texts
    # The informational summary rows sit in the summary table with the others, as numbers.
    info = {(r[0], r[1]): r[3] for r in rows if r[0] in ("in_transit", "within_tolerance")}
    assert {k: Decimal(repr(v)) for k, v in info.items()} == {
        ("in_transit", "EUR"): Decimal("40.00"),
        ("in_transit", "USD"): Decimal("25.00"),
        ("within_tolerance", "JPY"): Decimal("1"),
        ("within_tolerance", "USD"): Decimal("-0.01"),
    }


def test_no_settings_lines_nor_fx_without_them(tmp_path: Path) -> None:
    workbook = openpyxl.load_workbook(report(tmp_path, run(PLANTED_LEDGER, PLANTED_PROCESSOR))["report.xlsx"])
    assert "FX" not in workbook.sheetnames and "in_transit" not in workbook.sheetnames
    texts = [str(r[0]) for r in workbook["Summary"].iter_rows(values_only=True) if r[0] is not None]
    assert texts[3] == "Amount tolerance: amounts must match exactly"
    assert not any(t.startswith(("Cut-off", "Settlement window", "Rates missing")) for t in texts)
    header = next(r for r in workbook["Summary"].iter_rows(values_only=True) if r[0] == "side")
    assert "in transit" not in header and "after cut-off" not in header
