"""Each format read with exact amounts, signs, dates, references and remittance text.

The samples are in ``data/`` (``data/README.md`` says where each layout comes from).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from toolkit.reconcile.bank import read_statements

DATA = Path(__file__).parent / "data"
D = dt.date


def _rows(path: Path) -> list[dict[str, Any]]:
    return list(read_statements(path).entries.to_pylist())


def _pick(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(row[c] for c in columns) for row in rows]


def test_camt053_v02_debit_reversal_credit_and_no_pending_entry() -> None:
    rows = _rows(DATA / "camt053_day1.xml")
    assert _pick(rows, "amount_minor", "amount", "currency", "reversal", "booking_date", "value_date") == [
        (-75425, "-754.25", "EUR", False, D(2025, 3, 3), D(2025, 3, 3)),
        (-59405, "-594.05", "EUR", True, D(2025, 3, 3), D(2025, 3, 1)),
        (140531, "1405.31", "EUR", False, D(2025, 3, 3), D(2025, 3, 4)),
    ]
    assert _pick(rows, "entry_reference", "counterparty", "remittance", "source_place") == [
        (
            "ABNA20250303000001",
            "INSURANCE COMPANY TESTX",
            "Insurance policy 857239 PERIOD 01.01.2025 - 31.12.2025",
            "line 33",
        ),
        ("ABNA20250303000002", "Test Customer", "Direct Debit S14 0410", "line 58"),
        ("ABNA20250303000003", "3rd party Media", "RF18539007547034", "line 78"),
    ]
    assert {row["account"] for row in rows} == {"NL77ABNA0574908765"}
    assert {row["source"] for row in rows} == {"camt053_day1.xml"}


def test_camt053_v08_reads_the_choices_of_later_versions_and_a_date_time() -> None:
    result = read_statements(DATA / "camt053_day2.xml")
    rows = result.entries.to_pylist()
    assert _pick(rows, "amount_minor", "counterparty", "remittance", "booking_date") == [
        (250000, "STRIPE PAYMENTS EUROPE LTD", "STRIPE PAYOUT po_1QxA2bC3dE4fG5hI", D(2025, 3, 4)),
        (-1250, "", "Account fee March", D(2025, 3, 4)),
    ]
    (statement,) = result.statements.to_pylist()
    assert statement["format"] == "camt.053.001.08"
    assert (statement["opening_minor"], statement["closing_minor"]) == (1562528, 1811278)
    assert statement["opening_derived"] is False


def test_mt940_marks_sign_the_amounts_and_the_reversals() -> None:
    result = read_statements(DATA / "mt940_two_days.sta")
    rows = result.entries.to_pylist()
    assert _pick(rows, "amount_minor", "amount", "reversal", "entry_reference", "source_place") == [
        (-80000, "-800.00", False, "55555", "line 5"),
        (300000, "3000.00", False, "55556", "line 7"),
        (12050, "120.50", True, "55557", "line 9"),  # RD: a debit reversed, money back in
        (-300000, "-3000.00", True, "55558", "line 17"),  # RC: a credit reversed, money out
        (-845, "-8.45", False, "", "line 19"),  # NONREF and no bank reference: none
    ]
    assert _pick(rows, "booking_date", "value_date")[2] == (D(2025, 3, 4), D(2025, 3, 3))
    assert rows[1]["counterparty"] == "STRIPE PAYMENTS EUROPE"
    assert rows[1]["remittance"] == "STRIPE PAYOUT po_1QxA2bC3dE4fG5hI"
    statements = result.statements.to_pylist()
    assert _pick(statements, "statement_id", "account", "opening_minor", "closing_minor", "closing_date") == [
        ("STARTUMSE/5/1", "10020030/1234567", 218795, 450845, D(2025, 3, 3)),
        ("STARTUMSE/6/1", "10020030/1234567", 450845, 150000, D(2025, 3, 4)),
    ]
    assert result.gaps.num_rows == 0


def test_bai2_type_codes_sign_the_amounts_and_the_currency_places_the_point() -> None:
    result = read_statements(DATA / "bai2_two_days.bai2")
    rows = result.entries.to_pylist()
    assert _pick(
        rows, "amount_minor", "amount", "entry_reference", "booking_date", "value_date", "source_place"
    ) == [
        (490196, "4901.96", "900000001", D(2025, 3, 3), D(2025, 3, 3), "line 4"),
        (-24500, "-245.00", "900000002", D(2025, 3, 3), D(2025, 3, 3), "line 6"),
        (905800, "9058.00", "900000003", D(2025, 3, 4), D(2025, 3, 5), "line 12"),
    ]
    assert rows[0]["remittance"] == "STRIPE PAYOUT ACH OFFSET po_1QxA2bC3"
    statements = result.statements.to_pylist()
    assert _pick(statements, "account", "currency", "opening_minor", "closing_minor") == [
        ("1234567890", "USD", 34726979, 35192675),
        ("1234567890", "USD", 35192675, 36098475),
    ]
    assert result.gaps.num_rows == 0


def test_ofx1_sgml_signed_amounts_fitid_and_a_derived_opening_balance() -> None:
    result = read_statements(DATA / "ofx1_checking.ofx")
    rows = result.entries.to_pylist()
    assert _pick(rows, "amount_minor", "entry_reference", "booking_date", "value_date") == [
        (-20000, "00002", D(2005, 10, 4), D(2005, 10, 4)),
        (-30000, "00003", D(2005, 10, 20), D(2005, 10, 20)),
        (125045, "00004", D(2005, 10, 21), D(2005, 10, 24)),
    ]
    assert _pick(rows, "counterparty", "remittance")[2] == ("STRIPE PAYMENTS", "STRIPE PAYOUT po_1QxA2bC3")
    (statement,) = result.statements.to_pylist()
    assert (statement["closing_minor"], statement["closing_date"]) == (95074, D(2005, 10, 29))
    assert (statement["opening_minor"], statement["opening_derived"]) == (95074 - 125045 + 50000, True)


def test_ofx2_xml_card_statement_with_a_decimal_comma() -> None:
    result = read_statements(DATA / "ofx2_card.qfx")
    rows = result.entries.to_pylist()
    assert _pick(rows, "account", "currency", "amount_minor", "entry_reference", "booking_date") == [
        ("4111XXXXXXXX1111", "EUR", -16290, "2024032300001", D(2024, 3, 23)),
        ("4111XXXXXXXX1111", "EUR", 1300, "2024032500002", D(2024, 3, 25)),
    ]
    assert rows[1]["source_place"] == "CCSTMTRS[1]/BANKTRANLIST/STMTTRN[2]"


def test_the_columns_and_their_types() -> None:
    entries = read_statements(DATA / "camt053_day1.xml").entries
    assert entries.column_names == [
        "statement_id", "account", "currency", "amount_minor", "amount", "booking_date", "value_date",
        "entry_reference", "counterparty", "remittance", "reversal", "source", "source_place",
    ]  # fmt: skip
    assert str(entries.schema.field("amount_minor").type) == "int64"
    assert str(entries.schema.field("booking_date").type) == "date32[day]"
