"""Payouts reconciled three ways' first two questions (issue 38): each payout adds up to its
items, and arrives in the bank; every processor deposit in the bank is explained. The month's
exports of ``exports.py`` (Stripe's balance report, Adyen's settlement details) against camt.053
statements written by the sandbox's bank (``toolkit.sandbox.statements``, which the readers'
tests check against the format's published examples); every outcome planted, on each backend."""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.exports import PAID_OUT, STRIPE_HEADER, write_month
from toolkit.cli import main
from toolkit.errors import InputError, OutputError
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import load_ledger
from toolkit.reconcile.payouts import payout_table, reconcile_payouts
from toolkit.reconcile.payouts.matching import business_days_after
from toolkit.reconcile.payouts.report import exception_rows, write_payout_report
from toolkit.sandbox.statements import StatementEntry, camt053

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

IBAN = "DE89370400440532013000"
MONDAY = date(2025, 6, 2)  # the month's payouts are paid out on Friday, May 30th
PAID_MINOR = int(Decimal(PAID_OUT) * 100)


def _statement(folder: Path, day: date, *entries: StatementEntry, opening: int = 0, name: str = "") -> Path:
    path = folder / (name or f"camt053_{day:%Y%m%d}.xml")
    path.write_bytes(camt053(iban=IBAN, currency="EUR", day=day, opening_minor=opening, entries=entries))
    return path


def _entry(
    minor: int, day: date, reference: str, text: str, who: str = "STRIPE PAYMENTS EUROPE LTD"
) -> StatementEntry:
    return StatementEntry(minor, day, day, reference, who, text)


def _outcomes(result: object) -> dict[str, str]:
    return {line.payout: line.outcome for line in result.payouts}  # type: ignore[attr-defined]


def test_a_payout_is_found_by_its_reference_and_an_unknown_deposit_is_shown(
    tmp_path: Path, backend: Backend
) -> None:
    paths = write_month(tmp_path)
    bank = _statement(
        tmp_path,
        MONDAY,
        _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"),
        _entry(-1250, MONDAY, "B2", "Account fee", who=""),
        _entry(50000, MONDAY, "B3", "STRIPE PAYOUT po_9999"),
        _entry(9900, MONDAY, "B4", "Invoice 17", who="A CUSTOMER GMBH"),
    )
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10", backend=backend)
    (line,) = result.payouts
    assert (line.payout, line.outcome, line.matched_by, line.bank_reference) == (
        "po_0001",
        "matched",
        "reference",
        "B1",
    )
    assert (line.items_state, line.paid_on, line.bank_booking_date) == ("adds up", date(2025, 5, 30), MONDAY)
    assert [u["entry_reference"] for u in result.unexplained] == ["B3"]
    assert result.other_entries == 2 and result.exception_count == 1


def test_a_payout_without_a_reference_is_found_by_amount_and_date(tmp_path: Path) -> None:
    """Adyen's batch 7, credited without the batch in its text, on the first business day after."""
    paths = write_month(tmp_path)
    bank = _statement(
        tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "ADYEN N.V. SETTLEMENT", who="ADYEN")
    )
    result = reconcile_payouts(paths["adyen"], bank, as_of="2025-06-10")
    (line,) = result.payouts
    assert (line.payout, line.outcome, line.matched_by) == ("7", "matched", "amount and date")
    named = _statement(
        tmp_path,
        MONDAY,
        _entry(PAID_MINOR - 1, MONDAY, "B9", "ADYEN SETTLEMENT BATCH 7 ACME", who="ADYEN"),
        name="named.xml",
    )
    (line,) = reconcile_payouts(paths["adyen"], named, as_of="2025-06-10").payouts
    assert (line.outcome, line.matched_by, line.bank_amount) == (
        "payout_amount_mismatch",
        "reference",
        Decimal(PAID_OUT) - Decimal("0.01"),
    )


def test_a_payout_not_in_the_bank_is_in_transit_then_missing(tmp_path: Path) -> None:
    """Paid out on Friday May 30th; three business days: Monday to Wednesday June 4th. A bank
    holiday on Monday moves the window to Thursday."""
    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY, _entry(-1250, MONDAY, "B2", "Account fee", who=""))
    assert _outcomes(reconcile_payouts(paths["stripe"], bank, as_of="2025-06-04")) == {
        "po_0001": "in_transit"
    }
    assert _outcomes(reconcile_payouts(paths["stripe"], bank, as_of="2025-06-05")) == {
        "po_0001": "payout_missing_in_bank"
    }
    assert _outcomes(reconcile_payouts(paths["stripe"], bank, as_of="2025-06-05", holidays=[MONDAY])) == {
        "po_0001": "in_transit"
    }
    late = _statement(
        tmp_path, date(2025, 6, 5), _entry(PAID_MINOR, date(2025, 6, 5), "B1", "Stripe transfer")
    )
    assert _outcomes(reconcile_payouts(paths["stripe"], late, as_of="2025-06-10", window="3d")) == {
        "po_0001": "payout_missing_in_bank"
    }
    assert _outcomes(reconcile_payouts(paths["stripe"], late, as_of="2025-06-10", window="4d")) == {
        "po_0001": "matched"
    }
    assert business_days_after(date(2025, 5, 30), 3, frozenset()) == date(2025, 6, 4)


def _stripe_payouts(folder: Path, rows: list[tuple[str, str, str, str, str]]) -> Path:
    """A Stripe balance report of payout rows only: (category, gross, created, source_id,
    automatic_payout_id), plus one charge per payout that it pays out."""
    out = io.StringIO()
    writer = csv.DictWriter(out, STRIPE_HEADER, lineterminator="\n", restval="")
    writer.writeheader()
    for i, (category, gross, created, source, payout) in enumerate(rows, start=1):
        writer.writerow(
            {
                "balance_transaction_id": f"txn_{i}",
                "created_utc": created,
                "created": created,
                "currency": "eur",
                "gross": gross,
                "fee": "0.00",
                "net": gross,
                "reporting_category": category,
                "source_id": source,
                "automatic_payout_id": payout,
                "payment_metadata[order_id]": f"ORD-{i}" if category == "charge" else "",
            }
        )
    path = folder / "payouts.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_equal_payouts_are_never_paired_at_random(tmp_path: Path) -> None:
    """Two payouts of 100.00 on the same day and two credits of 100.00 without references: shown
    as payouts that cannot be told apart. A third, of 100.00 two days later, is the nearest to its
    own credit and is matched."""
    export = _stripe_payouts(
        tmp_path,
        [
            ("charge", "100.00", "2025-06-02 09:00:00", "ch_1", "po_A"),
            ("payout", "-100.00", "2025-06-02 10:00:00", "po_A", ""),
            ("charge", "100.00", "2025-06-02 09:00:00", "ch_2", "po_B"),
            ("payout", "-100.00", "2025-06-02 10:00:00", "po_B", ""),
            ("charge", "100.00", "2025-06-06 09:00:00", "ch_3", "po_C"),
            ("payout", "-100.00", "2025-06-06 10:00:00", "po_C", ""),
        ],
    )
    bank = _statement(
        tmp_path,
        date(2025, 6, 9),
        _entry(10000, date(2025, 6, 3), "B1", "STRIPE TRANSFER"),
        _entry(10000, date(2025, 6, 3), "B2", "STRIPE TRANSFER"),
        _entry(10000, date(2025, 6, 9), "B3", "STRIPE TRANSFER"),
    )
    result = reconcile_payouts(export, bank, as_of="2025-06-20")
    assert _outcomes(result) == {"po_A": "payout_ambiguous", "po_B": "payout_ambiguous", "po_C": "matched"}
    assert {line.payout: line.bank_reference for line in result.payouts}["po_C"] == "B3"
    assert [u["entry_reference"] for u in result.unexplained] == ["B1", "B2"]


def test_a_negative_payout_is_a_debit_and_a_returned_payout_expects_nothing(tmp_path: Path) -> None:
    """A payout that took money from the bank (Stripe's balance was negative) is found as a bank
    debit; a payout that failed (``payout_reversal`` of the same payout) is expected nowhere."""
    export = _stripe_payouts(
        tmp_path,
        [
            ("refund", "-40.00", "2025-06-02 09:00:00", "re_1", "po_N"),
            ("payout", "40.00", "2025-06-02 10:00:00", "po_N", ""),
            ("charge", "70.00", "2025-06-02 09:00:00", "ch_2", "po_F"),
            ("payout", "-70.00", "2025-06-02 10:00:00", "po_F", ""),
            ("payout_reversal", "70.00", "2025-06-04 10:00:00", "po_F", ""),
        ],
    )
    bank = _statement(tmp_path, date(2025, 6, 3), _entry(-4000, date(2025, 6, 3), "D1", "STRIPE po_N"))
    result = reconcile_payouts(export, bank, as_of="2025-06-20")
    assert _outcomes(result) == {"po_N": "matched", "po_F": "failed"}
    negative = next(line for line in result.payouts if line.payout == "po_N")
    assert (negative.paid_out, negative.bank_amount, negative.items_state) == (
        Decimal("-40.00"),
        Decimal("-40.00"),
        "adds up",
    )
    assert result.exception_count == 0


def test_a_payout_that_does_not_add_up_and_a_missing_statement_are_exceptions(tmp_path: Path) -> None:
    paths = write_month(tmp_path)
    changed = tmp_path / "changed.csv"
    changed.write_text(paths["stripe"].read_text(encoding="utf-8").replace(PAID_OUT, "1578.00"), "utf-8")
    day1 = _statement(tmp_path, MONDAY, _entry(157800, MONDAY, "B1", "STRIPE PAYOUT po_0001"), opening=1000)
    # June 3rd's statement is missing: June 4th opens at another balance than June 2nd closed.
    day3 = _statement(
        tmp_path, date(2025, 6, 4), _entry(-500, date(2025, 6, 4), "B7", "fee", who=""), opening=170000
    )
    result = reconcile_payouts(changed, [day1, day3], as_of="2025-06-10")
    (line,) = result.payouts
    assert (line.outcome, line.items_state, line.items_net - line.paid_out) == (
        "matched",
        "does not add up",
        Decimal("0.04"),
    )
    assert len(result.gaps) == 1 and result.exception_count == 2
    written = write_payout_report(result, tmp_path / "out", environment="test")
    exceptions = pd.read_csv(written["exceptions.csv"], dtype=str, keep_default_na=False)
    assert list(exceptions["category"]) == ["payout_items_do_not_add_up", "statement_gap"]
    gap = exceptions.loc[1]
    assert (gap["currency"], gap["amount"]) == ("EUR", "112.00")  # opened at 1,700.00, closed at 1,588.00
    assert "between statement 20250602-1 (camt053_20250602.xml) and 20250604-1" in gap["detail"]
    assert (
        exceptions.loc[0, "amount"] == "0.04"
        and exceptions.loc[0, "exception_id"] == "payout:po_0001:EUR:items"
    )
    page = written["report.html"].read_text(encoding="utf-8")
    assert "2 exception(s) to look at; 1 of 1 payout(s) in the bank" in page and "does not add up" in page


def test_the_command_reconciles_payouts_with_exit_codes_of_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    out = tmp_path / "out"
    argv = [
        "reconcile",
        "payouts",
        "--processor",
        str(paths["stripe"]),
        "--bank",
        str(bank),
        "--as-of",
        "2025-06-10",
    ]
    assert main([*argv, "--output-dir", str(out)]) == 0
    said = capsys.readouterr().out.strip().splitlines()[-1]
    assert (
        said == f"ok: 0 exceptions; 1 of 1 payout(s) in the bank, 0 in transit; report: {out / 'report.html'}"
    )
    payouts = pd.read_csv(out / "payouts.csv", dtype=str, keep_default_na=False)
    first = payouts.to_dict("records")[0]
    assert [first[c] for c in ("payout", "outcome", "bank_reference", "bank_booking_date")] == [
        "po_0001",
        "matched",
        "B1",
        "2025-06-02",
    ]
    empty = _statement(tmp_path, MONDAY, name="empty.xml")
    code = main(
        [
            "reconcile",
            "payouts",
            "--processor",
            str(paths["stripe"]),
            "--bank",
            str(empty),
            "--as-of",
            "2025-06-10",
            "--output-dir",
            str(tmp_path / "o2"),
            "--max-exceptions",
            "0",
        ]
    )
    assert code == 1 and "findings: 1 exceptions" in capsys.readouterr().err
    code = main(["reconcile", "payouts", "--processor", str(paths["stripe_payments"]), "--bank", str(bank)])
    err = capsys.readouterr().err
    assert (
        code == 2 and "does not say which payout paid each row" in err and len(err.strip().splitlines()) == 1
    )
    assert main([*argv, "--window", "soon"]) == 2
    assert "--window: 'soon' is not a number of business days" in capsys.readouterr().err


def test_an_export_without_payouts_is_refused(tmp_path: Path) -> None:
    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY)
    with pytest.raises(InputError, match="does not say which payout paid each row"):
        reconcile_payouts(paths["stripe_payments"], bank)


@pytest.mark.parametrize("books", ["quickbooks", "xero"])
def test_a_payout_is_found_in_the_books_as_in_the_bank(tmp_path: Path, backend: Backend, books: str) -> None:
    """The third way: the clearing account's transfer to the bank (QuickBooks' Transfer, Xero's
    Bank Transfer of 1578.04 on May 30th) is the payout's booking; the bank and the books agree."""
    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    ledger = load_ledger(paths[books], currency="EUR")
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10", backend=backend, ledger=ledger)
    (line,) = result.payouts
    assert (line.outcome, line.books_outcome, line.books_date) == ("matched", "booked", date(2025, 5, 30))
    assert line.books_amount == Decimal(PAID_OUT) and line.books_row is not None
    assert (result.books, result.books_payouts, result.exception_count) == (str(paths[books]), 1, 0)
    page = write_payout_report(result, tmp_path / "report", environment="test")["report.html"]
    assert "payout booking(s) compared" in page.read_text(encoding="utf-8")


def test_a_payout_booked_for_another_amount_is_missing_and_the_booking_unexplained(tmp_path: Path) -> None:
    paths = write_month(tmp_path)
    changed = tmp_path / "changed.csv"
    changed.write_text(
        paths["quickbooks"].read_text(encoding="utf-8").replace("-1578.04", "-1578.00"), "utf-8"
    )
    bank = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    ledger = load_ledger(changed, currency="EUR")
    early = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-02", ledger=ledger)
    assert early.payouts[0].books_outcome == "not booked yet"  # its window is open
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10", ledger=ledger)
    assert result.payouts[0].books_outcome == "not booked"
    assert [(b["currency"], str(b["amount"])) for b in result.books_unexplained] == [("EUR", "1578.00")]
    counts = result.counts()
    assert counts["payout_missing_in_books"] == counts["books_payout_unexplained"] == 1
    assert result.exception_count == 2
    written = write_payout_report(result, tmp_path / "report", environment="test")
    exceptions = pd.read_csv(written["exceptions.csv"], dtype=str, keep_default_na=False)
    assert list(exceptions["category"]) == ["payout_missing_in_books", "books_payout_unexplained"]
    assert "book the transfer" in exceptions["detail"][0]


def test_without_books_the_report_says_they_were_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10")
    assert result.books is None and result.payouts[0].books_outcome is None
    page = write_payout_report(result, tmp_path / "report", environment="test")["report.html"]
    assert "The books were not compared for payouts" in page.read_text(encoding="utf-8")
    argv = ["reconcile", "payouts", "--processor", str(paths["stripe"]), "--bank", str(bank)]
    books = ["--ledger", str(paths["xero"]), "--ledger-currency", "EUR", "--as-of", "2025-06-10"]
    assert main([*argv, *books, "--output-dir", str(tmp_path / "out")]) == 0
    assert "1 of 1 payout(s) in the bank" in capsys.readouterr().out
    payouts = pd.read_csv(tmp_path / "out" / "payouts.csv", dtype=str, keep_default_na=False)
    assert list(payouts["books_outcome"]) == ["booked"]


def _tracked(tmp_path: Path, processor: Path, bank: Path, as_of: str, *more: str) -> int:
    folder = tmp_path / f"run-{as_of}"
    argv = ["reconcile", "payouts", "--processor", str(processor), "--bank", str(bank), "--as-of", as_of]
    return main([*argv, "--track", "payouts", "--output-dir", str(folder), *more])


def test_a_tracked_payout_run_keeps_states_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A payout missing in the bank is new, then acknowledged (not counted by the threshold
    while its amount stays), then resolved once it arrives; a payment track takes no payout run."""
    paths = write_month(tmp_path)
    empty = _statement(tmp_path, MONDAY, name="empty.xml")
    assert _tracked(tmp_path, paths["stripe"], empty, "2025-06-10") == 0
    assert (
        "1 exceptions (1 new, 0 open, 0 acknowledged; 0 resolved), track payouts run 1"
        in capsys.readouterr().out
    )
    written = pd.read_csv(tmp_path / "run-2025-06-10" / "exceptions.csv", dtype=str, keep_default_na=False)
    (row,) = written.to_dict("records")
    assert (row["category"], row["state"]) == ("payout_missing_in_bank", "new")
    assert row["exceptionId"].startswith("E") and len(row["exceptionId"]) == 17
    assert (
        main(["reconcile", "ack", "--track", "payouts", "--note", "asked the bank", row["exceptionId"]]) == 0
    )
    capsys.readouterr()
    assert _tracked(tmp_path, paths["stripe"], empty, "2025-06-11", "--max-exceptions", "0") == 0
    again = pd.read_csv(tmp_path / "run-2025-06-11" / "exceptions.csv", dtype=str, keep_default_na=False)
    assert list(again["state"]) == ["acknowledged"] and list(again["exceptionId"]) == [row["exceptionId"]]
    book = openpyxl.load_workbook(tmp_path / "run-2025-06-11" / "report.xlsx")
    cells = dict(zip([c.value for c in book["Exceptions"][1]], book["Exceptions"][2], strict=True))
    assert (cells["exceptionId"].value, cells["state"].value) == (row["exceptionId"], "acknowledged")
    assert cells["ageDays"].value == int(again["ageDays"][0]) and cells["ageDays"].data_type == "n"
    assert any(str(line).startswith("track payouts: run 2 as of") for (line, *_) in _rows(book["Summary"]))
    arrived = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    assert _tracked(tmp_path, paths["stripe"], arrived, "2025-06-12") == 0
    assert "(0 new, 0 open, 0 acknowledged; 1 resolved), track payouts run 3" in capsys.readouterr().out
    assert main(["reconcile", "verify", "--track", "payouts"]) == 0
    capsys.readouterr()
    # A track holds one kind of run.
    ledger, processor = paths["ledger"], paths["stripe"]
    payments = ["reconcile", "--ledger", str(ledger), "--processor", str(processor), "--track", "month"]
    assert main([*payments, "--as-of", "2025-05-31", "--output-dir", str(tmp_path / "pay")]) in (0, 1)
    capsys.readouterr()
    assert main(["reconcile", "payouts", "--processor", str(processor), "--bank", str(arrived), "--track", "month",
                 "--as-of", "2025-06-12", "--output-dir", str(tmp_path / "po")]) == 2  # fmt: skip
    assert "track month: its runs reconcile payments, not payouts" in capsys.readouterr().err


def _mt940(minor: int) -> str:
    """A day's MT940 (the layout of tests/bank/data/mt940_two_days.sta): the payout, a deposit no
    payout explains, and an account fee."""
    amount = f"{minor // 100},{minor % 100:02d}"
    closing = minor + 50000 - 1250
    return (
        ":20:STARTUMSE\n:25:10020030/1234567\n:28C:1/1\n:60F:C250530EUR0,00\n"
        f":61:2506020602C{amount}NTRFNONREF//B1\n"
        ":86:051?00UEBERWEISUNG?20STRIPE PAYOUT po_0001?32STRIPE PAYMENTS EUROPE\n"
        ":61:2506020602C500,00NTRFNONREF//B3\n"
        ":86:051?00UEBERWEISUNG?20STRIPE PAYOUT po_9999?32STRIPE PAYMENTS EUROPE\n"
        ":61:2506020602D12,50NCHGNONREF//B2\n:86:805?00ENTGELT?20Kontofuehrung\n"
        f":62F:C250602EUR{closing // 100},{closing % 100:02d}\n-\n"
    )


def _bai2(minor: int) -> str:
    """The same day as BAI2 (the layout of tests/bank/data/bai2_two_days.bai2), in EUR: control
    totals are the sums of the amounts, record counts the records."""
    closing = minor + 50000 - 1250
    account = [
        f"03,1234567890,EUR,010,0,,,015,{closing},,/",
        f"16,195,{minor},Z,B1,,INCOMING WIRE STRIPE PAYMENTS EUROPE",
        "88,STRIPE PAYOUT po_0001",
        "16,195,50000,Z,B3,,INCOMING WIRE STRIPE PAYMENTS EUROPE",
        "88,STRIPE PAYOUT po_9999",
        "16,698,1250,Z,B2,,ACCOUNT FEE",
    ]
    total = closing + minor + 50000 + 1250
    lines = [
        "01,121140399,9999999999,250602,0200,1,,,2/",
        "02,9999999999,121140399,1,250602,,EUR,2/",
        *account,
        f"49,{total},{len(account) + 1}/",
        f"98,{total},1,{len(account) + 3}/",
        f"99,{total},1,{len(account) + 5}/",
    ]
    return "\n".join(lines) + "\n"


def _ofx(minor: int) -> str:
    """The same day as OFX 1.x SGML (the layout of tests/bank/data/ofx1_checking.ofx)."""
    sample = (Path(__file__).parents[1] / "bank" / "data" / "ofx1_checking.ofx").read_text(encoding="utf-8")
    head, rest = sample.split("<BANKTRANLIST>", 1)
    tail = rest.split("</BANKTRANLIST>", 1)[1]
    entries = [
        (str(Decimal(minor) / 100), "B1", "STRIPE PAYOUT po_0001", "CREDIT"),
        ("500.00", "B3", "STRIPE PAYOUT po_9999", "CREDIT"),
        ("-12.50", "B2", "ACCOUNT FEE", "FEE"),
    ]
    listed = "".join(
        f"<STMTTRN>\n<TRNTYPE>{kind}\n<DTPOSTED>20250602\n<TRNAMT>{amount}\n<FITID>{fitid}\n"
        f"<NAME>STRIPE PAYMENTS\n<MEMO>{memo}\n</STMTTRN>\n"
        for amount, fitid, memo, kind in entries
    )
    days = "<BANKTRANLIST>\n<DTSTART>20250602\n<DTEND>20250602\n"
    return head.replace("<CURDEF>USD", "<CURDEF>EUR") + days + listed + "</BANKTRANLIST>" + tail


@pytest.mark.parametrize("written", ["camt053", "mt940", "bai2", "ofx"])
@pytest.mark.parametrize("minor", [PAID_MINOR, PAID_MINOR - 4])
def test_each_bank_format_gives_the_same_outcomes(tmp_path: Path, written: str, minor: int) -> None:
    """The payout credited by its reference (for its amount, or 0.04 short), a processor's deposit
    no payout explains, and a fee left alone, in each format a bank sends."""
    paths = write_month(tmp_path)
    if written == "camt053":
        entries = (
            _entry(minor, MONDAY, "B1", "STRIPE PAYOUT po_0001"),
            _entry(50000, MONDAY, "B3", "STRIPE PAYOUT po_9999"),
            _entry(-1250, MONDAY, "B2", "Account fee", who=""),
        )
        bank = _statement(tmp_path, MONDAY, *entries)
    else:
        text = {"mt940": _mt940, "bai2": _bai2, "ofx": _ofx}[written](minor)
        bank = tmp_path / f"statement.{written}"
        bank.write_text(text, encoding="utf-8")
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10")
    (line,) = result.payouts
    expected = "matched" if minor == PAID_MINOR else "payout_amount_mismatch"
    assert (line.outcome, line.matched_by, line.bank_amount) == (expected, "reference", Decimal(minor) / 100)
    assert [str(u["amount"]) for u in result.unexplained] == ["500.00"]
    assert result.other_entries == 1 and not result.gaps


# ---------------------------------------------------------------------------------------------
# report.xlsx


def _csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _rows(sheet: Any) -> list[list[Any]]:
    return [[cell.value for cell in row] for row in sheet.iter_rows()]


def test_the_workbook_holds_the_report_s_tables_with_amounts_as_numbers(tmp_path: Path) -> None:
    """Summary first (where the data came from, the verdict, the books, summary.csv's table under
    an autofilter), then Payouts and Exceptions as the CSV files have them: a bold frozen header,
    an autofilter, amounts as numbers in the currency's format equal to the CSV's decimals, and a
    bank's text that looks like a formula kept as text."""
    paths = write_month(tmp_path)
    bank = _statement(
        tmp_path,
        MONDAY,
        _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"),
        _entry(50000, MONDAY, "=cmd", '=HYPERLINK("http://x.example","click")'),
    )
    ledger = load_ledger(paths["quickbooks"], currency="EUR")
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10", ledger=ledger)
    written = write_payout_report(result, tmp_path / "out", environment="test")
    assert set(written) == {"report.html", "report.xlsx", "payouts.csv", "exceptions.csv", "summary.csv"}
    book = openpyxl.load_workbook(written["report.xlsx"])
    assert book.sheetnames == ["Summary", "Payouts", "Exceptions"]

    summary = book["Summary"]
    lines = [row[0] for row in _rows(summary)]
    assert lines[0] == "Data from: test" and summary["A1"].font.b
    assert "1 exception(s) to look at; 1 of 1 payout(s) in the bank, 1 booked, 0 on its way." in lines
    assert (
        f"Books: {paths['quickbooks']}, 1 payout booking(s) compared by the same rules and window." in lines
    )
    first, last = (int(cell[1:]) for cell in summary.auto_filter.ref.split(":"))
    table = _rows(summary)[first - 1 : last]
    expected = _csv(written["summary.csv"])
    assert table[0] == list(expected.columns) == ["category", "currency", "count", "amount"]
    assert [(c, cur, str(n), Decimal(str(a))) for c, cur, n, a in table[1:]] == [
        (c, cur, n, Decimal(a)) for c, cur, n, a in expected.itertuples(index=False)
    ]

    # The CSV files' rows; their text as the report has it (the CSV files neutralise a start
    # like a formula with an apostrophe, the workbook's text cells need not).
    raw = {"Payouts": payout_table(result).to_pylist(), "Exceptions": exception_rows(result)}
    for name, csv_file in (("Payouts", "payouts.csv"), ("Exceptions", "exceptions.csv")):
        sheet, rows = book[name], _csv(written[csv_file])
        header = [cell.value for cell in sheet[1]]
        assert header == list(rows.columns) and len(rows) == len(raw[name])
        assert all(cell.font.b for cell in sheet[1])
        assert sheet.freeze_panes == "A2"
        assert sheet.auto_filter.ref == f"A1:{sheet.cell(1, len(header)).column_letter}{len(rows) + 1}"
        assert sheet.column_dimensions["A"].width >= len(header[0])
        for i, (row, text_row) in enumerate(zip(rows.to_dict("records"), raw[name], strict=True), start=2):
            for j, column in enumerate(header, start=1):
                cell, text = sheet.cell(i, j), row[column]
                if column in ("paid_out", "items_net", "bank_amount", "books_amount", "amount") and text:
                    assert cell.data_type == "n" and not isinstance(cell.value, str), (column, cell.value)
                    assert Decimal(str(cell.value)) == Decimal(text)
                    assert cell.number_format == '#,##0.00 "EUR"'
                elif column in ("items", "books_row") and text:
                    assert cell.value == int(text)
                else:
                    assert cell.value == (text_row[column] or None)
                    assert not text or cell.data_type == "s"
    deposit = exception_rows(result)[0]
    assert deposit["bank_reference"] == "=cmd" and "=HYPERLINK(" in deposit["detail"]
    assert _csv(written["exceptions.csv"]).loc[0, "bank_reference"] == "'=cmd"
    assert book["Exceptions"]["F2"].value == "=cmd" and book["Exceptions"]["F2"].data_type == "s"
    with zipfile.ZipFile(written["report.xlsx"]) as archive:
        sheets = [archive.read(n) for n in archive.namelist() if n.startswith("xl/worksheets/")]
    assert sheets and not any(b"<f>" in xml or b"<f " in xml for xml in sheets)


def test_an_amount_excel_cannot_hold_stays_exact_text_and_is_counted(tmp_path: Path) -> None:
    """12345678901234.56 EUR has 16 significant digits: openpyxl would write it through a float
    (12345678901234.6); it stays text, as in the CSV files, and the summary counts it. A payout of
    100.00 beside it is a number."""
    huge = "12345678901234.56"
    export = _stripe_payouts(
        tmp_path,
        [
            ("charge", huge, "2025-06-02 09:00:00", "ch_1", "po_H"),
            ("payout", f"-{huge}", "2025-06-02 10:00:00", "po_H", ""),
            ("charge", "100.00", "2025-06-02 09:00:00", "ch_2", "po_S"),
            ("payout", "-100.00", "2025-06-02 10:00:00", "po_S", ""),
        ],
    )
    bank = _statement(tmp_path, date(2025, 6, 3), _entry(10000, date(2025, 6, 3), "B1", "STRIPE po_S"))
    result = reconcile_payouts(export, bank, as_of="2025-06-20")
    assert _outcomes(result) == {"po_H": "payout_missing_in_bank", "po_S": "matched"}
    written = write_payout_report(result, tmp_path / "out", environment="test")
    book = openpyxl.load_workbook(written["report.xlsx"])
    payouts = {row[0]: row for row in _rows(book["Payouts"])[1:]}
    assert payouts["po_H"][2] == payouts["po_H"][5] == huge and book["Payouts"]["C2"].data_type == "s"
    assert payouts["po_S"][2] == 100
    assert _rows(book["Exceptions"])[1][4] == huge
    amounts = {
        row[0]: row[3] for row in _rows(book["Summary"]) if row[0] in ("matched", "payout_missing_in_bank")
    }
    assert amounts == {"matched": 100, "payout_missing_in_bank": huge}
    # paid_out and items_net of po_H, its exception, its line of the summary
    note = _rows(book["Summary"])[-1][0]
    assert note.endswith("4 amount(s) in this workbook are text.")
    assert _csv(written["payouts.csv"]).loc[0, "paid_out"] == huge


def test_a_failure_to_write_the_workbook_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workbook is written with the other files, to temporary names moved into place only when
    all are written: a failure leaves no report file in a new folder, and the last report whole in
    a folder written before."""
    import toolkit.reconcile.payouts.report as report

    paths = write_month(tmp_path)
    bank = _statement(tmp_path, MONDAY, _entry(PAID_MINOR, MONDAY, "B1", "STRIPE PAYOUT po_0001"))
    result = reconcile_payouts(paths["stripe"], bank, as_of="2025-06-10")
    before = write_payout_report(result, tmp_path / "old", environment="test")
    kept = {name: path.read_bytes() for name, path in before.items()}

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "write_payout_workbook", broken)
    for folder in (tmp_path / "new", tmp_path / "old"):
        with pytest.raises(OutputError, match="No space left on device"):
            write_payout_report(result, folder, environment="test")
    assert list((tmp_path / "new").iterdir()) == []
    assert {p.name for p in (tmp_path / "old").iterdir()} == {*kept, ".toolkit-written.json"}
    assert {name: path.read_bytes() for name, path in before.items()} == kept
