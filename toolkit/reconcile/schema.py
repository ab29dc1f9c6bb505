"""Names the whole reconciliation package shares, in a leaf that imports nothing of it: the
categories, the columns of each result table, and the limits of what a result holds. The command
line builds its options from them, and the views and the audit log read them, without loading the
engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

BackendName = Literal["duckdb", "pyspark"]
#: The engines that run a reconciliation (``backends/`` has a class for each).
BACKENDS: tuple[BackendName, ...] = ("duckdb", "pyspark")

#: Payment categories, in report order.
PAYMENT_CATEGORIES: tuple[str, ...] = (
    "missing_in_processor",
    "missing_in_ledger",
    "amount_mismatch",
    "currency_mismatch",
    "status_mismatch",
    "duplicate_in_processor",
    "duplicate_in_ledger",
    "unknown_outcome",
    "rejected_row",
)
#: Subscription categories, in report order.
SUBSCRIPTION_CATEGORIES: tuple[str, ...] = (
    "subscription_missing",
    "subscription_price_mismatch",
    "subscription_quantity_mismatch",
    "subscription_amount_mismatch",
    "subscription_state_mismatch",
)
#: Informational categories (``severity`` ``info``): shown, never counted as exceptions.
#: ``in_transit``: not a break yet, inside the settlement window before the cut-off;
#: ``within_tolerance``: matched, with a variance the amount tolerance allows.
INFO_CATEGORIES: tuple[str, ...] = ("in_transit", "within_tolerance")
CATEGORIES: tuple[str, ...] = PAYMENT_CATEGORIES + SUBSCRIPTION_CATEGORIES + INFO_CATEGORIES


def in_report_order(categories: Iterable[str]) -> list[str]:
    """``categories`` in report order (an unknown one after the known ones, not lost)."""
    order = {name: i for i, name in enumerate(CATEGORIES)}
    return sorted(categories, key=lambda c: (order.get(c, len(order)), c))


def severity_of(category: str) -> str:
    """``info`` for the informational categories, else ``exception``."""
    return "info" if category in INFO_CATEGORIES else "exception"


#: Columns of ``ReconciliationResult.exceptions`` and of exceptions.csv, in order.
EXCEPTION_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "category",
    "kind",  # the movement (``movements.KINDS``): payment, refund, chargeback, ...; empty for a row unread
    "ledger_amount",
    "processor_amount",
    "processor_fee",  # the fee the processor took on the row shown, in its currency, where its export says
    "processor_net",  # processor_amount less processor_fee
    "ledger_currency",
    "processor_currency",
    "ledger_status",
    "processor_status",
    "processor_reference",  # the processor's own references (PSP reference, batch), of an export it documents
    "source",
    "source_row",
    "detail",
    "severity",
    "age_days",
)
#: Columns of ``ReconciliationResult.summary``.
SUMMARY_COLUMNS: tuple[str, ...] = ("category", "currency", "count", "amount")

#: Columns of ``ReconciliationResult.matched``: the ledger's amount, and what the processor
#: charged (``charged_*``) and priced (``pricing_*``, null where the processor gave no price).
MATCHED_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "amountMinor",
    "currency",
    "status",
    "ledger_row",
    "processor_row",
    "charged_amountMinor",
    "charged_currency",
    "pricing_amountMinor",
    "pricing_currency",
)
#: Columns of ``ReconciliationResult.fx``: one row per payment compared at a reference rate
#: (``--fx-rates``): the ledger's amount, the rate of the payment's day as it was used
#: (``1 USD = 0.92 EUR``; an inverse as ``1/rate``), the amount expected at that rate, what was
#: charged, and ``variance`` = charged - expected, in the processor's currency; ``category`` is
#: the payment's outcome (``within_tolerance``, ``amount_mismatch``, or ``matched``; for a
#: payment matched through its price, the price's outcome).
FX_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "date",
    "ledger_amount",
    "ledger_currency",
    "rate",
    "expected_amount",
    "charged_amount",
    "charged_currency",
    "variance",
    "category",
)

#: payouts.csv of a payment reconciliation: per payout and currency of the processor's export, its
#: items' net and what it paid out (``ReconciliationResult.payouts``).
PAYOUT_TOTAL_COLUMNS: tuple[str, ...] = (
    "payout",
    "currency",
    "items",
    "items_net",
    "paid_out",
    "difference",
    "state",
)

#: Columns a tracked run adds to ``ReconciliationResult.exceptions`` (``tracking/``).
TRACKING_COLUMNS: tuple[str, ...] = ("exceptionId", "state", "firstSeen", "ageDays", "stateReason")

#: Exception rows a result holds in memory (as Python objects: about 1 KB each); beyond, the
#: engine keeps them and the result holds the first ``PREVIEW_ROWS`` of each category.
HELD_ROWS = 250_000
PREVIEW_ROWS = 1_000


#: Columns every payments input must have (after the mapping is applied).
REQUIRED_COLUMNS: tuple[str, ...] = ("merchantReferenceId", "amount", "currency", "status")


#: Columns of a subscription ledger.
SUBSCRIPTION_COLUMNS: tuple[str, ...] = (
    "subscriptionId",
    "merchantReferenceId",
    "priceId",
    "quantity",
    "amount",
    "currency",
    "state",
)


#: Expected states in a subscription ledger.
SUBSCRIPTION_STATES: tuple[str, ...] = ("active", "canceled")


#: Columns of ``LoadedInput.rejected``: the raw text of the row, where it was and why it was refused.
REJECTED_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "amount",
    "currency",
    "status",
    "source_row",
    "detail",
    "source",  # the file, of a folder or glob of files
)


#: int64 holds 18 full decimal digits: integer digits + minor digits may not exceed that.
MAX_DIGITS = 18


#: Optional processor columns: what the payment was priced at, when it was charged in another
#: currency (the sandbox's export and the journal's payments frame carry them).
PRICING_COLUMNS: tuple[str, ...] = ("pricingAmount", "pricingCurrency")
