"""The sandbox pays out (issue 38): its fee rule per method, the payout schedule across a
weekend, payouts net of fees, the payout report and the bank's camt.053 statements read back by
the toolkit's own readers, and every bank outcome a control plants found by
``reconcile_payouts`` and ``toolkit reconcile payouts`` in its category. Over real HTTP against
a sandbox on 127.0.0.1, its clock frozen and moved to known weekdays."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.sandbox.conftest import Api
from toolkit.cli import main
from toolkit.client import Client
from toolkit.controls import SandboxControls
from toolkit.models import PaymentMethodType
from toolkit.reconcile.bank import read_statements
from toolkit.reconcile.inputs import load_processor
from toolkit.reconcile.payouts import reconcile_payouts
from toolkit.sandbox.embedded import RunningSandbox
from toolkit.sandbox.payouts import FEES, fee_minor

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

#: (method, currency, amount charged, fee expected): written out by hand from the fee table of
#: docs/sandbox.md, rounding half-even (TNG's 20.5 minor units -> 20, UPI's 1.5 -> 2).
FEE_CASES = [
    ("ALIPAY", "CNY", "100.00", "2.20"),
    ("CARD", "USD", "10.00", "0.59"),
    ("CASHAPP", "USD", "20.00", "0.70"),
    ("GCASH", "PHP", "100.10", "2.50"),
    ("KAKAO", "KRW", "12345", "309"),
    ("PIX", "BRL", "50.50", "0.50"),
    ("PROMPTPAY", "THB", "100.00", "1.65"),
    ("QRIS", "IDR", "10000.00", "70.00"),
    ("TNG", "MYR", "10.25", "0.20"),
    ("UPI", "INR", "3.00", "0.02"),
    ("WECHAT", "CNY", "0.25", "0.01"),
]


@pytest.fixture
def controls(api: Api, sandbox: RunningSandbox) -> Iterator[SandboxControls]:
    """SandboxControls on the emptied sandbox, its clock frozen on a Monday at 09:00 UTC."""
    with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
        sandbox_controls = SandboxControls(client)
        now = sandbox_controls.freeze_clock()
        monday = now.date() + timedelta(days=7 - now.weekday())
        target = datetime(monday.year, monday.month, monday.day, 9, tzinfo=UTC)
        sandbox_controls.advance_clock(milliseconds=(target - now) // timedelta(milliseconds=1))
        assert sandbox_controls.now() == target
        yield sandbox_controls


def _pay(api: Api, amount: str, currency: str = "EUR", method: str = "CARD", reference: str = "") -> None:
    fields = {"amount": Decimal(amount), "currency": currency, "paymentMethodType": method}
    result = api.pay(paymentInstrumentId="pi_test_success", merchantReferenceId=reference or None, **fields)
    assert result["status"] == 1, result


def _report(controls: SandboxControls) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(controls.payout_report_csv().decode())))


def test_the_fee_rule_by_hand() -> None:
    """The rule alone: half-even on exact minor units, the fixed part, never more than the charge."""
    assert set(FEES) == set(PaymentMethodType)
    assert [fee_minor("UPI", n) for n in (100, 300, 500, 700)] == [0, 2, 2, 4]  # 0.5, 1.5, 2.5, 3.5
    assert fee_minor("CARD", 10) == 10 and fee_minor("CARD", 0) == 0  # 0.29 + 30 capped at the charge
    assert fee_minor("CARD", 10**16) == 29 * 10**13 + 30  # exact far beyond a float's 53 bits


def test_the_documented_fee_table_is_the_rule() -> None:
    """docs/sandbox.md's table, row by row, against ``FEES`` (so the two never drift)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "sandbox.md").read_text()
    rows = re.findall(r"^\| ([A-Z]+) \| ([0-9.]+) % \| ([0-9]+) \|", text, re.MULTILINE)
    documented = {method: (Decimal(percent), int(fixed)) for method, percent, fixed in rows}
    assert documented == {method.value: (fee.percent, fee.fixed_minor) for method, fee in FEES.items()}


def test_each_method_pays_its_fee_exactly(api: Api, controls: SandboxControls) -> None:
    for n, (method, currency, amount, _) in enumerate(FEE_CASES):
        _pay(api, amount, currency, method, reference=f"FEE-{n}")
    controls.advance_clock(days=2)  # Monday's payments are paid out on Wednesday
    rows = {row["payment_metadata[merchantReferenceId]"]: row for row in _report(controls)}
    for n, (method, currency, amount, fee) in enumerate(FEE_CASES):
        row = rows[f"FEE-{n}"]
        assert (row["payment_method_type"], row["currency"]) == (method.lower(), currency.lower())
        assert (row["gross"], row["fee"]) == (amount, fee), method
        assert Decimal(row["net"]) == Decimal(amount) - Decimal(fee)


def test_the_schedule_skips_the_weekend(api: Api, controls: SandboxControls) -> None:
    """Friday's and Saturday's payments are paid out on Tuesday, Monday's on Wednesday; a payout is
    pending until its day, net of its fees."""
    monday = controls.now().date()
    controls.advance_clock(days=4)
    _pay(api, "10.00", reference="FRI")
    controls.advance_clock(days=1)
    _pay(api, "20.00", reference="SAT")
    controls.advance_clock(days=2)
    _pay(api, "30.00", reference="MON")
    tuesday, wednesday = monday + timedelta(days=8), monday + timedelta(days=9)
    payouts = controls.payouts()
    assert list(payouts.index) == [f"po_{tuesday:%Y%m%d}_EUR", f"po_{wednesday:%Y%m%d}_EUR"]
    first = payouts.iloc[0]
    assert (first["payoutDate"], first["status"], first["payments"]) == (tuesday, "pending", 2)
    assert (first["gross"], first["fee"], first["net"]) == (
        Decimal("30.00"),
        Decimal("1.47"),
        Decimal("28.53"),
    )
    assert first["statementDescriptor"] == f"SANDBOX PAYMENTS PAYOUT po_{tuesday:%Y%m%d}_EUR"
    assert _report(controls) == []  # nothing paid out yet
    controls.advance_clock(days=1)
    assert list(controls.payouts()["status"]) == ["paid", "pending"]
    rows = _report(controls)
    assert [r["reporting_category"] for r in rows] == ["charge", "charge", "payout"]
    assert rows[-1]["source_id"] == first.name and rows[-1]["net"] == "-28.53"
    assert {r["automatic_payout_id"] for r in rows[:2]} == {first.name}


def _week_of_payouts(api: Api, controls: SandboxControls) -> list[str]:
    """A payment a day from Monday to Friday (10.00 to 50.00 EUR), so five payouts, Wednesday to
    the next Tuesday; the clock left on the Friday after (day 11)."""
    for n in range(5):
        _pay(api, f"{10 * (n + 1)}.00", reference=f"ORD-{n}")
        controls.advance_clock(days=1)
    controls.advance_clock(days=6)
    return list(controls.payouts().index)


def test_the_exports_are_read_back_by_the_toolkit(
    api: Api, controls: SandboxControls, tmp_path: Path
) -> None:
    monday = controls.now().date()
    payout_ids = _week_of_payouts(api, controls)
    report = tmp_path / "payout_reconciliation.csv"
    report.write_bytes(controls.payout_report_csv())
    loaded = load_processor(report, carry=False)
    assert loaded.layout is not None and loaded.layout.payout is not None
    folder = tmp_path / "bank"
    controls.write_bank_statements(folder, "EUR", monday, controls.now().date())
    statements = read_statements(folder)
    assert statements.gaps.num_rows == 0 and statements.statements.num_rows == 12
    closing = statements.statements.column("closing_minor").to_pylist()
    assert closing[-1] == sum(1000 * (n + 1) - (29 * (n + 1) + 30) for n in range(5))
    entries = statements.entries.to_pylist()
    assert [e["remittance"] for e in entries] == [f"SANDBOX PAYMENTS PAYOUT {p}" for p in payout_ids]
    assert {e["counterparty"] for e in entries} == {"SANDBOX PAYMENTS"}
    result = reconcile_payouts(loaded, statements, as_of=controls.now())
    assert [(line.payout, line.outcome, line.matched_by) for line in result.payouts] == [
        (p, "matched", "reference") for p in payout_ids
    ]
    assert {line.items_state for line in result.payouts} == {"adds up"}
    assert result.exception_count == 0 and result.bank_entries == 5


def test_every_planted_bank_outcome_is_found(api: Api, controls: SandboxControls, tmp_path: Path) -> None:
    """Lost: missing past its window; delayed inside it: matched on the later day; delayed past
    today: in transit; changed: amount mismatch; a deposit from the processor: unexplained."""
    monday = controls.now().date()
    wed, thu, fri, mon, tue = _week_of_payouts(api, controls)
    controls.lose_payout(thu)
    assert controls.delay_payout(fri, 2) == {"payoutId": fri, "lost": False, "delayDays": 2, "amount": None}
    controls.delay_payout(tue, 5)
    assert controls.change_payout(mon, "39.00")["amount"] == Decimal("39.00")
    deposit = controls.add_bank_deposit("EUR", "123.45", day=monday + timedelta(days=9))
    assert deposit["reference"] == "BNK-DEP-000001" and deposit["counterparty"] == "SANDBOX PAYMENTS"
    today = controls.now().date()
    report = tmp_path / "report.csv"
    report.write_bytes(controls.payout_report_csv())
    folder = tmp_path / "bank"
    controls.write_bank_statements(folder, "EUR", monday, today)
    result = reconcile_payouts(report, folder, as_of=today, counterparties=["SANDBOX PAYMENTS"])
    assert {line.payout: line.outcome for line in result.payouts} == {
        wed: "matched",
        thu: "payout_missing_in_bank",
        fri: "matched",
        mon: "payout_amount_mismatch",
        tue: "in_transit",
    }
    late = next(line for line in result.payouts if line.payout == fri)
    assert late.bank_booking_date == monday + timedelta(days=8)  # Friday + 2 business days
    assert [u["amount_minor"] for u in result.unexplained] == [12345]
    assert result.exception_count == 3 and result.gaps == ()
    bank_args = ["--bank", str(folder), "--as-of", today.isoformat(), "--counterparty", "SANDBOX PAYMENTS"]
    code = main(
        [
            "reconcile",
            "payouts",
            "--processor",
            str(report),
            *bank_args,
            "--output-dir",
            str(tmp_path / "out"),
            "--max-exceptions",
            "2",
        ]
    )
    assert code == 1
    exceptions = (tmp_path / "out" / "exceptions.csv").read_text()
    for category in ("payout_missing_in_bank", "payout_amount_mismatch", "bank_deposit_unexplained"):
        assert category in exceptions
    controls.reset()
    assert controls.bank_controls() == {"payouts": [], "deposits": []}


def test_clearing_the_bank_controls_lets_every_payout_arrive(api: Api, controls: SandboxControls) -> None:
    payout_ids = _week_of_payouts(api, controls)
    controls.lose_payout(payout_ids[0])
    controls.add_bank_deposit("EUR", "1.00")
    assert len(controls.bank_controls()["payouts"]) == 1
    assert controls.clear_bank_controls() == 2
    body = controls.bank_statement(controls.now().date() - timedelta(days=9), "EUR")
    assert payout_ids[0].encode() in body


@pytest.mark.parametrize(
    ("path", "params", "status", "words"),
    [
        ("/sandbox/bank/statement", {"currency": "EUR"}, 400, "day: Field required"),
        (
            "/sandbox/bank/statement",
            {"currency": "EUR", "day": "2025-13-01"},
            400,
            "day: '2025-13-01' is not",
        ),
        ("/sandbox/bank/statement", {"currency": "EUR", "day": "1 June"}, 400, "day: String should match"),
        ("/sandbox/bank/statement", {"currency": "XYZ", "day": "2025-06-02"}, 400, "currency: 'XYZ'"),
        (
            "/sandbox/bank/statement",
            {"currency": "EUR", "day": "9999-01-01"},
            409,
            "after the sandbox's today",
        ),
    ],
)
def test_bad_statement_queries_are_refused(
    api: Api, path: str, params: dict[str, str], status: int, words: str
) -> None:
    response = api.get(path, params=params)
    assert response.status_code == status, response.text
    assert words in response.json()["msg"]


def test_a_statement_query_given_twice_is_refused(api: Api) -> None:
    response = api.get("/sandbox/bank/statement?currency=EUR&day=2025-06-02&day=2025-06-03")
    assert response.status_code == 400 and response.json()["msg"] == "day: given more than once"


def test_bad_bank_controls_are_refused(api: Api, controls: SandboxControls) -> None:
    _pay(api, "10.00")
    (payout,) = controls.payouts().index
    delay = f"/sandbox/bank/payouts/{payout}/delay"
    change = f"/sandbox/bank/payouts/{payout}/change"
    assert "days: Input should be greater than or equal to 1" in api.error("POST", delay, {"days": 0}, 400)
    assert "days: must be a JSON integer" in api.error("POST", delay, {"days": "2"}, 400)
    assert "amount: Input should be greater than 0" in api.error("POST", change, {"amount": -1}, 400)
    assert "more decimals than the payout's currency EUR" in api.error(
        "POST", change, {"amount": Decimal("1.001")}, 409
    )
    assert "unknown payout 'po_nothing'" in api.error(
        "POST", "/sandbox/bank/payouts/po_nothing/lose", None, 404
    )
    deposits = "/sandbox/bank/deposits"
    assert "currency: String should match" in api.error(
        "POST", deposits, {"currency": "eur", "amount": 1}, 400
    )
    assert "amount: more decimals than JPY" in api.error(
        "POST", deposits, {"currency": "JPY", "amount": Decimal("1.5")}, 400
    )
    assert "day: not a date" in api.error(
        "POST", deposits, {"currency": "EUR", "amount": 1, "day": "2025-02-30"}, 400
    )
    assert "no account" in api.error("POST", deposits, {"currency": "CHF", "amount": 1}, 400)
    assert controls.bank_controls() == {"payouts": [], "deposits": []}
