"""A bad file is refused with one line naming the file and the place, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import InputError
from toolkit.reconcile.bank import read_statements

DATA = Path(__file__).parent / "data"


def _broken(tmp_path: Path, sample: str, name: str, old: str, new: str, count: int = 1) -> Path:
    text = (DATA / sample).read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, count))
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(InputError) as raised:
        read_statements(path)
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_camt_amount_without_currency(tmp_path: Path) -> None:
    path = _broken(
        tmp_path, "camt053_day1.xml", "statement.xml", '<Amt Ccy="EUR">1405.31</Amt>', "<Amt>1405.31</Amt>"
    )
    line = path.read_text().splitlines().index("                <Amt>1405.31</Amt>") + 1
    assert _refusal(path) == f"statement.xml: line {line}: <Amt> has no Ccy attribute"


def test_camt_amount_with_more_decimals_than_the_currency_is_refused_not_rounded(tmp_path: Path) -> None:
    path = _broken(tmp_path, "camt053_day1.xml", "s.xml", ">754.25<", ">754.255<")
    assert _refusal(path) == "s.xml: line 34: amount '754.255': 754.255 has more decimals than EUR allows (2)"


def test_camt_unknown_credit_debit_indicator(tmp_path: Path) -> None:
    path = _broken(
        tmp_path, "camt053_day2.xml", "s.xml", "<CdtDbtInd>DBIT</CdtDbtInd>", "<CdtDbtInd>DR</CdtDbtInd>"
    )
    assert _refusal(path).endswith("<CdtDbtInd> is 'DR', not CRDT or DBIT")


def test_camt_not_well_formed(tmp_path: Path) -> None:
    path = _broken(tmp_path, "camt053_day3.xml", "s.xml", "</Ntry>", "</Ntr>")
    assert _refusal(path).startswith("s.xml: line 41: not well-formed XML: Opening and ending tag mismatch")


def test_camt_with_a_doctype_is_refused(tmp_path: Path) -> None:
    path = _broken(
        tmp_path,
        "camt053_day3.xml",
        "s.xml",
        "<Document",
        '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<Document',
    )
    assert _refusal(path) == "s.xml: line 1: a DOCTYPE is not accepted in a bank statement"


def test_camt_052_is_not_a_statement(tmp_path: Path) -> None:
    path = _broken(tmp_path, "camt053_day3.xml", "report.xml", "xsd:camt.053.001.08", "xsd:camt.052.001.08")
    assert _refusal(path) == "report.xml: a camt.052 message, not a camt.053 statement"


def test_mt940_amount_too_fine_names_its_line(tmp_path: Path) -> None:
    path = _broken(tmp_path, "mt940_two_days.sta", "s.sta", "D8,45NCHG", "D8,455NCHG")
    assert _refusal(path).startswith("s.sta: line 19: amount '8.455'")


def test_mt940_without_closing_balance(tmp_path: Path) -> None:
    path = _broken(tmp_path, "mt940_two_days.sta", "s.sta", ":62F:C250304EUR1500,00\n", "")
    assert (
        _refusal(path)
        == "s.sta: line 13: the statement has no :60F:/:60M: opening or :62F:/:62M: closing balance"
    )


def test_mt940_unreadable_tag_names_the_statement(tmp_path: Path) -> None:
    path = _broken(
        tmp_path, "mt940_two_days.sta", "s.sta", ":60F:C250303EUR4508,45", ":60F:X250303EUR4508,45"
    )
    assert _refusal(path).startswith("s.sta: line 13: the statement cannot be read")


def test_bai2_wrong_control_total_names_a_line(tmp_path: Path) -> None:
    path = _broken(tmp_path, "bai2_two_days.bai2", "s.bai2", "49,72196950,3/", "49,72196951,3/")
    assert _refusal(path).startswith(
        "s.bai2: line 13: not a readable BAI2 file: Invalid account control total"
    )


def test_bai2_amount_that_is_not_a_number(tmp_path: Path) -> None:
    path = _broken(tmp_path, "bai2_two_days.bai2", "s.bai2", "16,475,24500,", "16,475,245.00,")
    assert _refusal(path).startswith("s.bai2: line 6: not a readable BAI2 file")


def test_ofx_without_currency(tmp_path: Path) -> None:
    path = _broken(tmp_path, "ofx1_checking.ofx", "s.ofx", "<CURDEF>USD\n", "<CURDEF>XYZ\n")
    assert _refusal(path).startswith("s.ofx: STMTRS[1]/CURDEF: currency 'XYZ' is not a three-letter ISO 4217")


def test_ofx_bad_amount(tmp_path: Path) -> None:
    path = _broken(tmp_path, "ofx1_checking.ofx", "s.ofx", "<TRNAMT>-300.00", "<TRNAMT>-300.001")
    assert _refusal(path).startswith("s.ofx: STMTRS[1]/BANKTRANLIST/STMTTRN[2]/TRNAMT: amount '300.001'")


def test_ofx_broken_header(tmp_path: Path) -> None:
    path = _broken(tmp_path, "ofx1_checking.ofx", "s.ofx", "DATA:OFXSGML", "DATA:NOPE")
    assert _refusal(path).startswith("s.ofx: OFX: not a readable OFX file")


def test_a_file_of_no_known_format(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("date,amount\n2025-03-03,12.00\n")
    assert (
        _refusal(path)
        == "notes.txt: not a bank statement in CAMT.053, MT940, BAI2 or OFX (read from its content)"
    )
