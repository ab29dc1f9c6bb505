"""The sandbox pays out: its fee rule, its payout schedule, and the processor's payout report.

Pure functions and tables over the store's orders, no I/O: payouts are not stored, they are
derived from the successful payments each time they are asked for, as of the sandbox clock.

- **Fees** (``FEES``): per payment method, a percentage of the charged amount plus a fixed part in
  minor units of the payment currency. The percentage is computed exactly on minor units and
  rounded once, half-even, to a whole minor unit (``round_to_currency``'s rule); the fee is never
  more than the charge (net is never negative).
- **Schedule**: each successful payment is paid out two business days (Monday to Friday, no
  holidays) after the UTC day it succeeded on (its ``update_time``), one payout per currency and
  payout day, net of fees (the service has no refunds). Its id is ``po_<YYYYMMDD>_<CUR>``; a payout
  whose day is on or before the sandbox's today is ``paid``, a later one ``pending``.
- **Report** (``report_csv``): Stripe's itemized payout reconciliation report
  (``payout_reconciliation.itemized``, the layout of ``toolkit/reconcile/exports/
  stripe_balance_itemized.toml``) of the paid payouts: a ``charge`` row per payment, with its
  ``fee``, ``net``, ``automatic_payout_id`` and the order's ``merchantReferenceId`` in
  ``payment_metadata[merchantReferenceId]``, and a ``payout`` row per payout (its own id in
  ``source_id``, gross and net negative: the money leaving the balance).
"""

from __future__ import annotations

import csv
import io
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from toolkit.models import PaymentMethodType as M
from toolkit.money import from_minor
from toolkit.outputs import neutralise_cell
from toolkit.sandbox import rules


@dataclass(frozen=True)
class Fee:
    """A method's fee: ``percent`` of the charged amount plus ``fixed_minor`` minor units."""

    percent: Decimal
    fixed_minor: int


#: The fee rule per payment method (docs/sandbox.md, "Payouts and the bank", shows this table).
FEES: dict[M, Fee] = {
    M.ALIPAY: Fee(Decimal("2.20"), 0),
    M.CARD: Fee(Decimal("2.90"), 30),
    M.CASHAPP: Fee(Decimal("2.75"), 15),
    M.GCASH: Fee(Decimal("2.50"), 0),
    M.KAKAO: Fee(Decimal("2.50"), 0),
    M.PIX: Fee(Decimal("0.99"), 0),
    M.PROMPTPAY: Fee(Decimal("1.65"), 0),
    M.QRIS: Fee(Decimal("0.70"), 0),
    M.TNG: Fee(Decimal("2.00"), 0),
    M.UPI: Fee(Decimal("0.50"), 0),
    M.WECHAT: Fee(Decimal("2.20"), 0),
}

#: Business days from the day a payment succeeded to the day it is paid out.
PAYOUT_DELAY_DAYS = 2
#: Who the payouts come from, as the bank's statement names them.
PROCESSOR_NAME = "SANDBOX PAYMENTS"


def fee_minor(method: str, amount_minor: int) -> int:
    """The fee of a charge of ``amount_minor`` by ``method``, in minor units: the percentage
    rounded half-even to a whole minor unit, plus the fixed part, at most the charge itself."""
    fee = FEES[M(method)]
    variable = (Decimal(amount_minor) * fee.percent / 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    return min(amount_minor, int(variable) + fee.fixed_minor)


def business_days_after(day: date, days: int) -> date:
    """The day ``days`` business days (Monday to Friday) after ``day``."""
    current, left = day, days
    while left > 0:
        current += timedelta(days=1)
        if current.weekday() < 5:
            left -= 1
    return current


def payout_id(day: date, currency: str) -> str:
    """The payout of ``currency`` paid out on ``day``: ``po_20250602_EUR``."""
    return f"po_{day:%Y%m%d}_{currency}"


def utc_day(epoch_ms: int) -> date:
    """The UTC day of an instant in ms since the epoch."""
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).date()


@dataclass(frozen=True)
class Charge:
    """A successful payment as it is paid out: what was charged, the fee, and when."""

    order_id: str
    merchant_reference_id: str | None
    method: str
    currency: str
    amount_minor: int
    fee_minor: int
    charged_ms: int

    @property
    def net_minor(self) -> int:
        """What the charge adds to its payout."""
        return self.amount_minor - self.fee_minor


@dataclass(frozen=True)
class Payout:
    """One payout: its day, currency and charges (in the order they succeeded)."""

    day: date
    currency: str
    charges: tuple[Charge, ...]

    @property
    def id(self) -> str:
        """``po_<YYYYMMDD>_<CUR>``."""
        return payout_id(self.day, self.currency)

    @property
    def gross_minor(self) -> int:
        """What its payments charged."""
        return sum(c.amount_minor for c in self.charges)

    @property
    def fee_minor(self) -> int:
        """Their fees."""
        return sum(c.fee_minor for c in self.charges)

    @property
    def net_minor(self) -> int:
        """What it pays out: gross less fees."""
        return self.gross_minor - self.fee_minor

    @property
    def descriptor(self) -> str:
        """The statement descriptor the bank's line carries: who paid, and the payout's id."""
        return f"{PROCESSOR_NAME} PAYOUT {self.id}"

    def status(self, today: date) -> str:
        """``paid`` on or after its day, ``pending`` before."""
        return "paid" if self.day <= today else "pending"


def charge(row: sqlite3.Row) -> Charge:
    """A successful order (a row of ``orders``) as a charge, its fee computed."""
    amount = int(row["amount_minor"])
    return Charge(
        order_id=str(row["id"]),
        merchant_reference_id=row["merchant_reference_id"],
        method=str(row["method"]),
        currency=str(row["currency"]),
        amount_minor=amount,
        fee_minor=fee_minor(str(row["method"]), amount),
        charged_ms=int(row["update_time"]),
    )


def payouts(orders: Iterable[sqlite3.Row]) -> list[Payout]:
    """Every payout of the successful ``orders``, by day then currency."""
    grouped: dict[tuple[date, str], list[Charge]] = {}
    for row in orders:
        if int(row["status"]) != rules.SUCCESS:
            continue
        item = charge(row)
        day = business_days_after(utc_day(item.charged_ms), PAYOUT_DELAY_DAYS)
        grouped.setdefault((day, item.currency), []).append(item)
    return [
        Payout(day, currency, tuple(sorted(items, key=lambda c: (c.charged_ms, c.order_id))))
        for (day, currency), items in sorted(grouped.items())
    ]


def payout_record(payout: Payout, today: date) -> dict[str, object]:
    """A payout as GET /sandbox/payouts lists it (amounts exact, in major units)."""
    money = {
        name: from_minor(minor, payout.currency)
        for name, minor in (
            ("gross", payout.gross_minor),
            ("fee", payout.fee_minor),
            ("net", payout.net_minor),
        )
    }
    return {
        "payoutId": payout.id,
        "currency": payout.currency,
        "payoutDate": payout.day.isoformat(),
        "status": payout.status(today),
        "payments": len(payout.charges),
        **money,
        "statementDescriptor": payout.descriptor,
    }


#: The report's columns: Stripe's itemized payout reconciliation report's names, in its order.
REPORT_COLUMNS: tuple[str, ...] = (
    "automatic_payout_id",
    "automatic_payout_effective_at_utc",
    "balance_transaction_id",
    "created_utc",
    "available_on_utc",
    "currency",
    "gross",
    "fee",
    "net",
    "reporting_category",
    "source_id",
    "description",
    "customer_facing_amount",
    "customer_facing_currency",
    "charge_id",
    "payment_method_type",
    "payment_metadata[merchantReferenceId]",
)


def report_csv(paid: Sequence[Payout]) -> str:
    """Stripe's itemized payout reconciliation report of ``paid`` payouts (see the docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(REPORT_COLUMNS)
    for payout in paid:
        for item in payout.charges:
            writer.writerow(_charge_row(payout, item))
        writer.writerow(_payout_row(payout))
    return buffer.getvalue()


def _time(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _midnight(day: date) -> str:
    return f"{day.isoformat()} 00:00:00"


def _charge_row(payout: Payout, item: Charge) -> list[str]:
    money = {
        name: str(from_minor(minor, item.currency))
        for name, minor in (("gross", item.amount_minor), ("fee", item.fee_minor), ("net", item.net_minor))
    }
    reference = neutralise_cell(item.merchant_reference_id or "")
    return [
        payout.id,
        _midnight(payout.day),
        f"txn_{item.order_id}",
        _time(item.charged_ms),
        _midnight(payout.day),
        item.currency.lower(),
        money["gross"],
        money["fee"],
        money["net"],
        "charge",
        item.order_id,
        f"Payment {item.method}",
        money["gross"],
        item.currency.lower(),
        item.order_id,
        item.method.lower(),
        reference,
    ]


def _payout_row(payout: Payout) -> list[str]:
    paid = str(from_minor(-payout.net_minor, payout.currency))
    day = _midnight(payout.day)
    zero = str(from_minor(0, payout.currency))
    # A payout is in no payout: its own id is its source (as Stripe's balance reports write it).
    head = ["", day, f"txn_{payout.id}", day, day, payout.currency.lower(), paid, zero, paid, "payout"]
    return [*head, payout.id, payout.descriptor, "", "", "", "", ""]
