"""Refunds, chargebacks, fees and payouts as movements (issue 37): the money returned on an order
is reconciled as its own total per key, never as a double charge; fees and payouts are totalled,
never rejected rows; every row is counted once. On each backend."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from tests.reconcile.files import write
from toolkit.reconcile import load_ledger, load_processor, reconcile, write_report
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.tracking.states import exception_ids

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves its gateway's sockets to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

#: A processor's export with a movement type column and no status column (a settlement report
#: lists money that moved): a charge with two partial refunds, a charge and its chargeback with
#: the dispute fee, a refund the books lack, a payout and a processing fee without an order key.
PROCESSOR = (
    "merchantReferenceId,type,amount,currency\n"
    "A,charge,50.00,EUR\n"
    "A,refund,10.00,EUR\n"  # a refund written unsigned: its type says it is money out
    "A,refund,-20.00,EUR\n"
    "B,charge,75.00,EUR\n"
    "B,chargeback,-75.00,EUR\n"
    "B,fee,-15.00,EUR\n"  # the dispute fee, on the order's key: a fee, not a payment
    "C,charge,20.00,EUR\n"
    "C,refund,-5.00,EUR\n"
    "D,charge,10.00,EUR\n"
    ",fee,-2.35,EUR\n"
    ",payout,-100.00,EUR\n"
)

#: The books: no status, credit notes as negative amounts on the order's key.
LEDGER = (
    "merchantReferenceId,amount,currency\n"
    "A,50.00,EUR\n"
    "A,-30.00,EUR\n"  # one credit note for both partial refunds
    "B,75.00,EUR\n"
    "B,-75.00,EUR\n"
    "C,20.00,EUR\n"  # C's refund of 5.00 is not booked
    "D,10.00,EUR\n"
    "D,-10.00,EUR\n"  # a credit note the processor never refunded
)


def _run(
    tmp_path: Path, backend: Backend, ledger: str = LEDGER, processor: str = PROCESSOR
) -> ReconciliationResult:
    return reconcile(
        load_ledger(write(tmp_path, "ledger.csv", ledger)),
        load_processor(write(tmp_path, "processor.csv", processor)),
        backend=backend,
    )


def _found(result: ReconciliationResult) -> set[tuple[str, str, str]]:
    frame = result.exceptions
    return set(zip(frame["merchantReferenceId"], frame["category"].astype(str), frame["kind"], strict=True))


def test_refunds_and_chargebacks_are_reconciled_as_money_returned(tmp_path: Path, backend: Backend) -> None:
    """Two partial refunds match one credit note, a chargeback matches its booking; a refund the
    books lack and a credit note the processor never made are exceptions that say so, and no
    refund is ever a double charge."""
    result = _run(tmp_path, backend)
    assert _found(result) == {("C", "missing_in_ledger", "refund"), ("D", "missing_in_processor", "returned")}
    details = dict(zip(result.exceptions["merchantReferenceId"], result.exceptions["detail"], strict=True))
    assert details["C"].startswith("a refund at the processor the books do not show: book the refund")
    assert details["D"].startswith("a refund or credit note in the books the processor never made")
    amounts = result.exceptions.set_index("merchantReferenceId")
    assert amounts.loc["C", "processor_amount"] == Decimal("-5.00")
    assert amounts.loc["D", "ledger_amount"] == Decimal("-10.00")


def test_fees_and_payouts_are_totalled_never_rejected(tmp_path: Path, backend: Backend) -> None:
    """Lines without an order key are movements of their kind: counted, totalled per kind, and
    every row of each side accounted for once."""
    result = _run(tmp_path, backend)
    ledger, processor = result.counts
    assert (processor.rows, processor.rejected, processor.movements) == (11, 0, 3)
    assert (processor.matched, processor.exceptions) == (7, 1)
    assert (ledger.rows, ledger.matched, ledger.exceptions, ledger.movements) == (7, 6, 1, 0)
    assert ledger.adds_up and processor.adds_up
    totals = {(m.side, m.kind): (m.rows, m.amount) for m in result.movements}
    assert totals == {
        ("ledger", "payment"): (4, Decimal("155.00")),
        ("ledger", "returned"): (3, Decimal("-115.00")),
        ("processor", "payment"): (4, Decimal("155.00")),
        ("processor", "refund"): (3, Decimal("-35.00")),
        ("processor", "chargeback"): (1, Decimal("-75.00")),
        ("processor", "fee"): (2, Decimal("-17.35")),
        ("processor", "payout"): (1, Decimal("-100.00")),
    }


def test_a_refund_without_a_type_column_is_known_by_its_sign(tmp_path: Path, backend: Backend) -> None:
    """Regression: a refund of ``-30.00`` on the order's key was ``duplicate_in_processor``,
    "charged more than once", and at risk. Now it is money returned, which the credit note
    matches, and unbooked it is a refund missing from the books."""
    processor = "merchantReferenceId,amount,currency,status\nA,50.00,EUR,success\nA,-30.00,EUR,success\n"
    booked = "merchantReferenceId,amount,currency\nA,50.00,EUR\nA,-30.00,EUR\n"
    assert _found(_run(tmp_path, backend, booked, processor)) == set()
    unbooked = "merchantReferenceId,amount,currency\nA,50.00,EUR\n"
    assert _found(_run(tmp_path, backend, unbooked, processor)) == {("A", "missing_in_ledger", "returned")}


def test_a_refund_for_another_amount_is_an_amount_mismatch_of_the_refund(
    tmp_path: Path, backend: Backend
) -> None:
    processor = "merchantReferenceId,type,amount,currency\nA,charge,50.00,EUR\nA,refund,30.00,EUR\n"
    ledger = "merchantReferenceId,amount,currency\nA,50.00,EUR\nA,-25.00,EUR\n"
    result = _run(tmp_path, backend, ledger, processor)
    assert _found(result) == {("A", "amount_mismatch", "refund")}
    assert result.summary.set_index("category").loc["amount_mismatch", "amount"] == Decimal("5.00")


def test_an_unknown_movement_type_is_refused_with_its_reason(tmp_path: Path, backend: Backend) -> None:
    processor = "merchantReferenceId,type,amount,currency\nA,charge,50.00,EUR\nB,voucher,5.00,EUR\n"
    ledger = "merchantReferenceId,amount,currency\nA,50.00,EUR\n"
    result = _run(tmp_path, backend, ledger, processor)
    assert list(result.rejected["source_row"]) == [3]
    assert "type 'voucher' is not a kind of movement the toolkit knows" in result.rejected["detail"][0]


def test_a_refunds_exception_has_an_id_of_its_own(tmp_path: Path) -> None:
    """An acknowledgement of a key's charge never covers its refund: the ids differ by kind,
    and a payment's id is what it was before movements had kinds."""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": ["A", "A"],
            "category": ["missing_in_ledger", "missing_in_ledger"],
            "kind": ["payment", "refund"],
            "source": ["p.csv", "p.csv"],
            "source_row": [2, 3],
        }
    )
    ids = exception_ids("track", frame, {})
    assert ids[0] != ids[1]
    assert ids[0] == exception_ids("track", frame.drop(columns="kind").head(1), {})[0]


def test_the_report_gives_each_kind_on_each_side(tmp_path: Path) -> None:
    """summary.csv gives each side's movements per kind and their net; report.html a table of them."""
    result = _run(tmp_path, "duckdb")  # type: ignore[arg-type]
    paths = write_report(result, tmp_path / "report", environment="test")
    summary = pd.read_csv(paths["summary.csv"], dtype=str).set_index("category")
    assert (summary.loc["processor_refund", "count"], summary.loc["processor_refund", "amount"]) == (
        "3",
        "-35.00",
    )
    assert (summary.loc["processor_fee", "count"], summary.loc["processor_fee", "amount"]) == ("2", "-17.35")
    assert summary.loc["processor_net", "amount"] == "-72.35"
    assert summary.loc["ledger_net", "amount"] == "40.00"
    page = paths["report.html"].read_text(encoding="utf-8")
    assert "Movements by kind" in page and "chargebacks" in page
    exceptions = pd.read_csv(paths["exceptions.csv"], dtype=str)
    assert list(exceptions.columns[:3]) == ["merchantReferenceId", "category", "kind"]
