"""Inputs as they come from spreadsheet exports: encodings, delimiters, titles, sheets, options."""

from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path

import openpyxl
import pytest

from tests.reconcile.files import EXCEL_ROWS
from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import load_ledger, load_processor, load_subscription_ledger, sources
from toolkit.reconcile.sources import POINT_UNDECIDED, ReadOptions, describe


def excel_file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def check_excel_ledger(path: Path) -> None:
    loaded = load_ledger(path)
    assert loaded.frame["merchantReferenceId"].tolist() == ["m1", "m2"]
    assert loaded.frame["amountMinor"].tolist() == [1230, 1200]
    assert loaded.rejected["source_row"].tolist() == [4]  # the line an editor shows


def test_semicolon_utf8_with_bom(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", b"\xef\xbb\xbf" + EXCEL_ROWS.encode())
    described = describe(path, "ledger", frozenset())
    assert (described.delimiter, described.encoding, described.bom) == (";", "utf-8-sig", True)
    assert described.columns[0] == "merchantReferenceId"  # no BOM in the first name
    check_excel_ledger(path)


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_from_excel(tmp_path: Path, codec: str) -> None:
    """Excel's "Unicode text": UTF-16 with a BOM, CRLF; and BOM-less UTF-16 of either order."""
    data = EXCEL_ROWS.replace("\n", "\r\n").encode(codec)
    path = excel_file(tmp_path, "books.csv", data)
    described = describe(path, "ledger", frozenset())
    assert described.delimiter == ";" and described.encoding == codec
    assert described.columns[-1] == "Bemerkung é"
    check_excel_ledger(path)


def test_cp1252_with_accents(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", EXCEL_ROWS.replace(";", ",").encode("cp1252"))
    described = describe(path, "ledger", frozenset())
    assert (described.delimiter, described.encoding) == (",", "cp1252")
    assert "Bemerkung é" in described.columns
    check_excel_ledger(path)
    carried = load_ledger(path).frame
    assert carried["Bemerkung é"].tolist() == ["café", ""]


def test_tab_separated_and_comma_amounts_keep_the_header_delimiter(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.txt", EXCEL_ROWS.replace(";", "\t").encode())
    assert describe(path, "ledger", frozenset()).delimiter == "\t"
    check_excel_ledger(path)


def test_a_title_above_the_csv_header_is_found_and_rows_keep_their_lines(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", ("Books, May 2026\n\n" + EXCEL_ROWS).encode("cp1252"))
    described = describe(path, "ledger", frozenset())
    assert described.header_line == 3 and described.delimiter == ";"
    loaded = load_ledger(path)
    assert loaded.rejected["source_row"].tolist() == [6]
    given = load_ledger(path, header_row=3, delimiter=";", encoding="cp1252")
    assert given.rejected["source_row"].tolist() == [6]


def test_a_title_excel_pads_with_delimiters_is_passed_over(tmp_path: Path) -> None:
    """Excel writes a title row to CSV as wide as the table: it was taken for the header
    ("column '' appears twice")."""
    title = "Buchungsjournal Mai 2026;;;;\r\n;;;;\r\n"
    path = excel_file(tmp_path, "books.csv", (title + EXCEL_ROWS).encode("cp1252"))
    described = describe(path, "ledger", frozenset())
    assert described.header_line == 3 and described.columns[0] == "merchantReferenceId"
    assert load_ledger(path).rejected["source_row"].tolist() == [6]


def test_options_where_detection_is_not_enough(tmp_path: Path) -> None:
    # A pipe inside the header's quotes would not decide; the option does.
    path = excel_file(tmp_path, "books.csv", EXCEL_ROWS.replace(";", "|").encode())
    assert load_ledger(path, delimiter="|").frame["amountMinor"].tolist() == [1230, 1200]
    latin = excel_file(tmp_path, "latin.csv", EXCEL_ROWS.encode("latin-1"))
    assert load_ledger(latin, encoding="latin-1").frame["Bemerkung é"].tolist() == ["café", ""]
    with pytest.raises(InputError, match=r"cannot be decoded as utf-8.*--encoding"):
        load_ledger(latin, encoding="utf-8")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delimiter": ";;"}, "delimiter: ';;' is not one character"),
        ({"encoding": "klingon"}, "encoding: unknown encoding 'klingon'"),
        ({"sheet": 0}, "sheet: 0 must be"),
        ({"header_row": 0}, "header-row: 0 must be"),
        ({"header_row": "two"}, "header-row: 'two' must be"),
        ({"decimal": ";"}, "decimal: ';' is not a decimal mark"),
    ],
)
def test_bad_option_values_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        ReadOptions(**options)  # type: ignore[arg-type]


def workbook(tmp_path: Path) -> Path:
    """A cover sheet, then the data under a title and a blank row on the second sheet."""
    book = openpyxl.Workbook()
    cover = book.active
    assert cover is not None
    cover.title = "Cover"
    data = book.create_sheet("Data")
    data.append(["Books, May 2026"])
    data.append([])
    data.append(["merchantReferenceId", "Amount", "currency", "status"])
    data.append(["m1", "12.30", "USD", "success"])
    data.append(["m9", "x", "USD", "success"])
    path = tmp_path / "books.xlsx"
    book.save(path)
    return path


def test_xlsx_with_a_title_row_and_data_on_the_second_sheet(tmp_path: Path) -> None:
    path = workbook(tmp_path)
    described = describe(path, "ledger", frozenset())
    assert (described.sheet, described.header_line) == ("Data", 3)
    loaded = load_ledger(path)  # Amount is taken for amount
    assert loaded.frame["amountMinor"].tolist() == [1230]
    assert loaded.rejected["source_row"].tolist() == [5]
    for sheet in ("Data", 2, "2"):
        given = load_ledger(path, sheet=sheet, header_row=3)
        assert given.rejected["source_row"].tolist() == [5]
    with pytest.raises(InputError, match="no sheet 'Nope'; sheets are Cover, Data"):
        load_ledger(path, sheet="Nope")
    with pytest.raises(InputError, match="--sheet 3: the workbook has 2 sheet"):
        load_ledger(path, sheet=3)


def test_a_cover_sheet_with_text_is_passed_over_for_the_sheet_with_the_amounts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workbook's first sheet is often a cover (a title, who prepared it, a small table of
    totals under "Amount"), or an old sheet hidden: the sheet read is the first visible one whose
    header names the amount (as mapped) among a payment's columns."""
    path = workbook(tmp_path)
    book = openpyxl.load_workbook(path)
    cover = book["Cover"]
    for row in (
        ["Books, May 2026"],
        [],
        ["Prepared by", "Finance"],
        ["Currency", "Amount"],
        ["USD", "12.30"],
    ):
        cover.append(row)
    old = book.create_sheet("Old", 0)  # hidden, with every column: last month's data
    old.append(["merchantReferenceId", "amount", "currency", "status"])
    old.append(["m0", "99.00", "USD", "success"])
    old.sheet_state = "hidden"
    german = book.create_sheet("Buchungen", 2)  # Old, Cover, Buchungen, Data
    german.append(["Referenz", "Betrag", "Waehrung", "Status"])
    german.append(["m2", "7.00", "EUR", "success"])
    book.save(path)
    assert describe(path, "ledger", frozenset()).sheet == "Data"  # its Amount
    assert load_ledger(path).frame["amountMinor"].tolist() == [1230]
    mapping = {
        "merchantReferenceId": "Referenz",
        "amount": "Betrag",
        "currency": "Waehrung",
        "status": "Status",
    }
    assert load_ledger(path, mapping=mapping).frame["merchantReferenceId"].tolist() == ["m2"]
    assert main(["reconcile", "inspect", str(path)]) == 0
    assert "sheet: Data (others: Old, Cover, Buchungen; --sheet NAME)" in capsys.readouterr().out


def test_column_error_lists_the_file_suggests_and_shows_the_map(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", b"Ref,Total,Currency,Staus\nm1,1.00,USD,success\n")
    with pytest.raises(InputError) as caught:
        load_processor(path)  # a ledger needs no status column: the processor does
    message = str(caught.value)
    assert "\n" not in message
    assert "the file's columns are Ref, Total, Currency, Staus" in message
    assert "closest: 'Staus' for 'status'" in message
    assert "--processor-map merchantReferenceId=COLUMN,amount=COLUMN,status=Staus" in message
    assert "required name = the file's column name" in message
    with pytest.raises(InputError, match="--ledger-map merchantReferenceId=COLUMN,amount=COLUMN "):
        load_ledger(path)
    fixed = load_ledger(path, mapping={"merchantReferenceId": "Ref", "amount": "Total", "status": "Staus"})
    assert fixed.frame["amountMinor"].tolist() == [100]  # Currency was taken for currency
    with pytest.raises(
        InputError, match=r"column 'total' \(mapped to 'amount'\) not found \(did you mean 'Total'"
    ):
        load_ledger(path, mapping={"amount": "total"})


def test_a_mistyped_key_of_a_map_is_named_with_the_name_it_stands_for(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", b"Ref,amount,currency,status\nm1,1.00,USD,success\n")
    with pytest.raises(InputError) as caught:
        load_ledger(path, mapping={"merchantRefId": "Ref"})
    assert str(caught.value).endswith(
        "the map's 'merchantRefId' is not a name the toolkit reads: did you mean 'merchantReferenceId'?"
    )


def test_ambiguous_case_is_not_guessed(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", b"merchantReferenceId,Amount,AMOUNT,currency,status\n")
    with pytest.raises(InputError, match="'amount' matches several columns but for case"):
        load_ledger(path)


def test_float_amounts_are_refused_under_any_case(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {"merchantReferenceId": ["m1"], "Amount": [1.1], "currency": ["USD"], "status": ["success"]}
    )
    with pytest.raises(InputError, match="column 'Amount' holds floats"):
        load_ledger(frame)


def test_xlsx_header_on_the_first_row_stays_there_beside_an_unnamed_column(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["merchantReferenceId", "amount", "currency", "status"])
    sheet.append(["m1", "12.30", "USD", "success", "a note"])
    sheet.append(["m9", "x", "USD", "success", "a note"])
    path = tmp_path / "books.xlsx"
    book.save(path)
    described = describe(path, "ledger", frozenset())
    assert (described.header_line, described.columns) == (
        1,
        ("merchantReferenceId", "amount", "currency", "status"),
    )
    assert load_ledger(path).rejected["source_row"].tolist() == [3]


@pytest.mark.parametrize("block", [1 << 24, 5, 1])  # the file read in blocks: the line counts across them
def test_a_utf8_file_but_for_one_line_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """One cp1252 byte among UTF-8 made the whole file cp1252: Müller-1 became MÃ¼ller-1, missing
    on one side, and Müller-1 of the processor missing on the other."""
    for module in (sources.formats, sources.rows):  # detecting the encoding; the UTF-8 copy and its lines
        monkeypatch.setattr(module, "_BLOCK", block)
    path = tmp_path / "books.csv"
    path.write_bytes(
        "merchantReferenceId,amount,currency,status,note\nM\u00fcller-1,10.00,EUR,success,\u00e0 la carte\n".encode()
        + b"B-2,5.00,EUR,success,caf\xe9\nC-3,1.00,EUR,success,\n"
    )
    with pytest.raises(InputError, match=r"books.csv: UTF-8 but for line 3 \(byte 0xE9 is not UTF-8"):
        load_ledger(path)
    assert load_ledger(path, encoding="cp1252").frame["merchantReferenceId"].tolist()[0] == "MÃ¼ller-1"
    path.write_bytes(b"merchantReferenceId,amount,currency,status\nM\xfcller-1,10.00,EUR,success\n")
    assert load_ledger(path).frame["merchantReferenceId"].tolist() == ["Müller-1"]  # all cp1252


def test_a_number_cell_is_read_as_excel_shows_it_with_the_sheets_decimal_mark(tmp_path: Path) -> None:
    """``=0.1+0.2`` is stored 0.30000000000000004 and shown 0.3: it was refused as having too many
    decimals. With ``--decimal ,`` a number cell (12.5) was refused as no decimal-comma amount,
    so a German sheet mixing number and text cells could be read neither way."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["merchantReferenceId", "amount", "currency", "status", "date"])
    cells: list[object] = ["1.234,56", 12.5, 0.25, 3, 1234567.89, 1e15, -0.07]
    for i, amount in enumerate(cells):
        sheet.append([f"m{i}", amount, "EUR", "success", datetime(2025, 5, 2, 10, 30)])
    saved = tmp_path / "saved.xlsx"
    book.save(saved)
    path = tmp_path / "buchungen.xlsx"
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():  # 0.25 as Excel stores =0.1+0.2 (openpyxl writes 0.3)
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<v>0.25</v>", b"<v>0.30000000000000004</v>")
            target.writestr(item, data)
    with_comma = load_ledger(path, decimal=",")
    assert with_comma.rejected.empty, with_comma.rejected["detail"].tolist()
    assert with_comma.frame["amountMinor"].tolist() == [123456, 1250, 30, 300, 123456789, 10**17, -7]
    with_point = load_ledger(path)
    assert with_point.frame["amountMinor"].tolist() == [1250, 30, 300, 123456789, 10**17, -7]
    assert with_point.rejected["source_row"].tolist() == [2]  # the text 1.234,56 read with a point
    assert with_point.frame["amount"].tolist()[:2] == ["12.5", "0.3"]
    described = describe(path, "ledger", frozenset())
    assert described.table is not None
    assert described.table.column("date").to_pylist()[0] == "2025-05-02 10:30:00"  # as before


# European Excel's own amounts: a decimal comma, thousands grouped by a point or a space.
COMMA_ROWS = (
    "merchantReferenceId;amount;currency;status\n"
    "m1;1.234,56;EUR;success\n"
    "m2;12,5;EUR;success\n"
    "m3;1200;JPY;pending\n"
    "m4;-0,07;EUR;failure\n"
    "m5;1\u00a0000,00;EUR;success\n"
    "m9;12,345;EUR;success\n"
)


def test_decimal_commas_are_detected_and_read_exactly(tmp_path: Path) -> None:
    path = excel_file(tmp_path, "books.csv", COMMA_ROWS.encode("cp1252"))
    assert describe(path, "ledger", frozenset({"amount"})).decimal == ","
    loaded = load_ledger(path)
    assert loaded.frame["amountMinor"].tolist() == [123456, 1250, 1200, -7, 100000]
    assert loaded.frame["amount"].tolist()[0] == "1.234,56"  # as written
    assert loaded.rejected["source_row"].tolist() == [7]
    assert "more decimals than EUR allows" in loaded.rejected["detail"].iloc[0]


def test_the_decimal_mark_by_option_where_the_sample_does_not_say(tmp_path: Path) -> None:
    """``1.234`` alone is a thousand, or 1.234 dinars: the point is kept unless the option says."""
    rows = "merchantReferenceId;amount;currency;status\nm1;1.234;EUR;success\nm2;12.50;EUR;success\n"
    path = excel_file(tmp_path, "books.csv", rows.encode())
    assert load_ledger(path).frame["amountMinor"].tolist() == [1250]  # 1.234 EUR: too many decimals
    read = load_ledger(path, decimal=",")
    assert read.frame["amountMinor"].tolist() == [123400]
    assert read.rejected["detail"].tolist() == [
        "amount '12.50' is not a number with a decimal comma (e.g. 1.234,56)"
    ]


def test_a_thousand_grouped_with_a_point_is_refused_where_no_amount_decides_the_mark(
    tmp_path: Path,
) -> None:
    """A German export of whole thousands (1.500 for 1500 EUR, 2.000 JPY) was read with the point:
    1.50 EUR and 2 JPY, matched against a processor's same text, with no exception at all."""
    rows = (
        "merchantReferenceId;amount;currency;status\n"
        "m1;1.500;EUR;success\nm2;2.000;JPY;success\nm3;0.500;EUR;success\nm4;1.500.000;EUR;success\n"
        "m5;12;EUR;success\nm6;1.234;KWD;success\n"
    )
    path = excel_file(tmp_path, "books.csv", rows.encode())
    assert describe(path, "ledger", frozenset({"amount"})).decimal == POINT_UNDECIDED
    loaded = load_ledger(path)
    assert loaded.frame["amountMinor"].tolist() == [50, 1200]  # 0.500 EUR and 12 EUR: no thousand
    assert loaded.rejected["source_row"].tolist() == [2, 3, 5, 7]
    details = loaded.rejected["detail"].tolist()
    assert details[0] == (
        "amount '1.500' may be 1500 or 1.500 EUR: no amount of the file's first rows says which "
        "decimal mark it uses (--decimal , or --decimal .)"
    )
    assert details[1].startswith("amount '2.000' may be 2000 or 2.000 JPY")
    assert details[3].startswith("amount '1.234' may be 1234 or 1.234 KWD")
    assert load_ledger(path, decimal=",").frame["amountMinor"].tolist() == [
        150000,
        2000,
        150000000,
        1200,
        1234000,
    ]
    assert load_ledger(path, decimal=".").frame["amountMinor"].tolist() == [
        150,
        2,
        50,
        1200,
        1234,
    ]
    with_a_point = rows + "m7;12.50;EUR;success\n"  # one amount decides: the point
    decided = load_ledger(excel_file(tmp_path, "decided.csv", with_a_point.encode()))
    assert decided.frame["amountMinor"].tolist() == [150, 2, 50, 1200, 1234, 1250]


def test_a_comma_amount_in_a_point_file_says_how_to_read_it(tmp_path: Path) -> None:
    rows = 'merchantReferenceId,amount,currency,status\nm1,12.30,USD,success\nm2,"12,50",USD,success\n'
    loaded = load_ledger(excel_file(tmp_path, "books.csv", rows.encode()))
    assert loaded.rejected["source_row"].tolist() == [3]
    assert (
        "(a decimal comma? read the file with the decimal mark ',': --decimal ,)"
        in loaded.rejected["detail"].iloc[0]
    )


# English and Swiss Excel's own amounts: a decimal point, thousands grouped.
GROUPED_ROWS = (
    "merchantReferenceId,amount,currency,status\n"
    'm1,"1,234.56",USD,success\n'
    'm2,"1,200",JPY,pending\n'
    'm3,"-12,345,678.9",USD,failure\n'
    "m4,1\u00a0234.50,EUR,success\n"
    "m5,1'000.05,CHF,success\n"
    'm6,"0,500",EUR,success\n'
    'm7,"1,234 567.8",USD,success\n'
    'm8,"1,23.4",USD,success\n'
    'm9,"1,234",KWD,success\n'
)


def test_thousands_grouped_in_a_point_file_are_read_exactly(tmp_path: Path) -> None:
    """Grouping is checked (groups of three, one mark throughout, no group of ``0,500``: a
    decimal comma, never a thousand) and dropped; ``1,234`` of a currency of three decimals may
    be 1.234 with a decimal comma, so it is refused, saying both readings."""
    path = excel_file(tmp_path, "books.csv", GROUPED_ROWS.encode())
    assert describe(path, "ledger", frozenset({"amount"})).decimal == "."  # 1,234.56: a point
    loaded = load_ledger(path)
    assert loaded.frame["amountMinor"].tolist() == [123456, 1200, -1234567890, 123450, 100005]
    assert loaded.rejected["source_row"].tolist() == [7, 8, 9, 10]
    assert loaded.rejected["detail"].tolist() == [
        "amount '0,500' is not a number (a decimal comma? read the file with the decimal mark ',': --decimal ,)",
        "amount '1,234 567.8' is not a number",
        "amount '1,23.4' is not a number",
        "amount '1,234' is not a number (1234 or 1.234 KWD? write 1234 or 1.234)",
    ]


def test_whole_amounts_grouped_by_commas_decide_no_decimal_comma(tmp_path: Path) -> None:
    """``1,200``, ``15,000``: thousands, or decimals with a comma? Like ``1.234`` they decide
    nothing, so the file keeps the point (it read 1.20, 2.50 and 15.00 USD, silently); a
    decimal comma that cannot be a thousand (``0,500``, ``12,50``) still says the comma."""
    rows = 'merchantReferenceId,amount,currency,status\nA1,"1,200",USD,success\nA2,"2,500",USD,success\n'
    path = excel_file(tmp_path, "books.csv", (rows + 'A3,"15,000",JPY,success\n').encode())
    assert describe(path, "ledger", frozenset({"amount"})).decimal == POINT_UNDECIDED  # read with '.'
    assert load_ledger(path).frame["amountMinor"].tolist() == [120000, 250000, 15000]
    for comma in ("0,500", "12,50", "1234,500"):
        path.write_text(rows + f'A3,"{comma}",EUR,success\n')
        assert describe(path, "ledger", frozenset({"amount"})).decimal == ",", comma


def test_a_decimal_comma_file_refuses_a_point_decimal_read_as_grouping(tmp_path: Path) -> None:
    """``0.500`` and ``1.234 567`` in a decimal-comma file are no thousands: refused, not 500."""
    rows = "merchantReferenceId;amount;currency;status\nm1;12,50;EUR;success\nm2;0.500;EUR;success\n"
    path = excel_file(tmp_path, "books.csv", (rows + "m3;1.234 567,5;EUR;success\n").encode())
    loaded = load_ledger(path)
    assert loaded.frame["amountMinor"].tolist() == [1250]
    assert loaded.rejected["source_row"].tolist() == [3, 4]


def test_a_subscription_ledger_takes_the_same_reading_options(tmp_path: Path) -> None:
    rows = (
        "Subscriptions, May 2026\r\n\r\n"
        "subscriptionId;merchantReferenceId;priceId;quantity;amount;currency;state\r\n"
        "s1;m1;p1;2;1.234,50;EUR;active\r\n"
    )
    path = excel_file(tmp_path, "subscriptions.csv", rows.encode("utf-16"))
    detected = load_subscription_ledger(path)
    given = load_subscription_ledger(path, delimiter=";", encoding="utf-16", header_row=3, decimal=",")
    for loaded in (detected, given):
        assert loaded.frame["amountMinor"].tolist() == [123450]
        assert loaded.frame["quantity"].tolist() == [2]


def test_an_empty_row_of_a_sheet_is_not_a_row(tmp_path: Path) -> None:
    """A row left empty between payments (or cells holding only spaces) is not a rejected row,
    and the rows below it keep their numbers on the sheet."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["merchantReferenceId", "amount", "currency", "status", "note"])
    sheet.append(["m1", "12.30", "USD", "success", "a note"])
    sheet.append([])
    sheet.append([" ", None, "", " ", None])
    sheet.append(["m9", "x", "USD", "success", None])
    path = tmp_path / "books.xlsx"
    book.save(path)
    for carry in (True, False):
        loaded = load_ledger(path, carry=carry)
        assert loaded.frame["source_row"].tolist() == [2]
        assert loaded.rejected["source_row"].tolist() == [5]
        assert loaded.row_count == 2


def test_a_row_a_field_too_wide_is_found_among_quoted_delimiters(tmp_path: Path) -> None:
    """A file with more delimiters than its rows hold (quoted ``"1,234.56"``, a value spanning
    lines) is split by Arrow's parser; only a record wider than the header refuses the file,
    by its line, whether the header has a BOM, the lines end in CRLF or the delimiter is ``;``."""
    rows = [
        "merchantReferenceId;amount;currency;status",
        'm1;"1;5";EUR;success',
        'm2;"2,00";EUR;"succ\r\ness"',
        "m3;3,00;EUR;success",
    ]
    path = tmp_path / "books.csv"
    path.write_bytes(("\ufeff" + "\r\n".join(rows) + "\r\n").encode())
    assert load_ledger(path).row_count == 3
    rows.insert(3, "m4;4,00;EUR;success;")  # a trailing delimiter: a fifth field, empty
    path.write_bytes(("\ufeff" + "\r\n".join(rows) + "\r\n").encode())
    with pytest.raises(InputError, match=r"line 5 cannot be read \(5 fields where the header has 4"):
        _ = load_ledger(path).row_count
