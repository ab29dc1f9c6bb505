"""Subscription checks: the subscription ledger against subscriptions read through the API.

Keyed by ``subscriptionId``. Subscriptions are few (one API call each), so this works row by row
on exact ``Decimal`` amounts; the payments engine is the one that must be fast.

Rules where the issue leaves a choice: ``trialing`` at the processor counts as ``active``; a
subscription at the processor that the ledger does not list is ``subscription_missing`` too (with
the processor as source); the upcoming invoice amount is compared only for subscriptions expected
active; a missing upcoming invoice of an expected-active subscription is an amount mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from toolkit.errors import MoneyError
from toolkit.money import from_minor, to_minor
from toolkit.outputs import frame_records
from toolkit.reconcile.inputs import LoadedInput
from toolkit.reconcile.result import (
    LazyRows,
    ReconciliationResult,
    RowCounts,
    _sort_exceptions,
    build_summary,
    rejected_exceptions,
)
from toolkit.reconcile.schema import EXCEPTION_COLUMNS, SUBSCRIPTION_CATEGORIES

PROCESSOR_SOURCE = "<subscriptions frame>"


def _text(value: Any) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return str(value)


#: One problem of a subscription: its category, the detail, and the minor units at risk (None:
#: the ledger's amount for the period).
_Finding = tuple[str, str, int | None]
_MATCHED_COLUMNS = ["subscriptionId", "merchantReferenceId", "amountMinor", "currency", "state", "ledger_row"]


@dataclass
class _Exceptions:
    """Exception rows, with the currency and the minor units each puts at risk (for the summary)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    amounts: list[int | None] = field(default_factory=list)
    currencies: list[str] = field(default_factory=list)

    def add(self, record: dict[str, Any], currency: str, at_risk: int | None) -> None:
        """One exception row (a subscription is no movement: its ``kind`` is empty)."""
        self.records.append(
            {"kind": "", "processor_reference": None, "processor_fee": None, "processor_net": None, **record}
        )
        self.currencies.append(currency)
        self.amounts.append(at_risk)


def reconcile_subscriptions(sub_ledger: LoadedInput, subscriptions: pd.DataFrame) -> ReconciliationResult:
    """Check each expected subscription against the processor's; one exception per problem.

    ``subscriptions`` is the subscriptions frame (index ``merchantReferenceId``, columns
    ``subscriptionId``, ``priceId``, ``quantity``, ``state``, ``upcomingInvoiceAmount``,
    ``currency``). In the exceptions, ``ledger_status``/``processor_status`` hold the states.
    """
    processor = _processor_subscriptions(subscriptions)
    found = _Exceptions()
    matched: list[dict[str, Any]] = []
    flagged: set[str] = set()
    rows = frame_records(sub_ledger.frame)
    for row in rows:
        sid = str(row["subscriptionId"])
        got = processor.get(sid)
        findings, seen_there = _check_subscription(row, got[1]) if got is not None else _NOT_AT_THE_PROCESSOR
        for category, detail, at_risk in findings:
            record = _ledger_exception(row, sub_ledger.source, category, f"subscription {sid}: {detail}")
            minor = int(row["amountMinor"]) if at_risk is None else at_risk
            found.add(record | seen_there, str(row["currency"]), minor)
            flagged.add(sid)
        if sid not in flagged:
            matched.append(_matched_row(row, sid))
    listed = {str(row["subscriptionId"]) for row in rows}
    for sid, (position, theirs) in processor.items():
        if sid not in listed:
            found.add(_unlisted_exception(sid, position, theirs), _text(theirs.get("currency")) or "", None)
    return _result(sub_ledger, found, matched)


#: A subscription the processor does not have: one finding, nothing seen there.
_NOT_AT_THE_PROCESSOR: tuple[list[_Finding], dict[str, Any]] = (
    [("subscription_missing", "not found at the processor", None)],
    {},
)


def _processor_subscriptions(subscriptions: pd.DataFrame) -> dict[str, tuple[int, dict[str, Any]]]:
    """The processor's subscriptions by id, each with its position (its row number, from 0)."""
    frame = subscriptions.reset_index() if subscriptions.index.name else subscriptions
    missing = {"subscriptionId", "priceId", "quantity", "state"} - set(frame.columns)
    if missing:
        from toolkit.errors import InputError

        raise InputError(f"{PROCESSOR_SOURCE}: required column(s) {', '.join(sorted(missing))} missing")
    return {str(r["subscriptionId"]): (i, r) for i, r in enumerate(frame_records(frame))}


def _check_subscription(row: dict[str, Any], got: dict[str, Any]) -> tuple[list[_Finding], dict[str, Any]]:
    """The problems of one ledger row against the processor's subscription, and what it holds."""
    state = _text(got.get("state")) or ""
    state_norm = "active" if state in ("trialing", "active") else state
    upcoming = (
        None
        if _text(got.get("upcomingInvoiceAmount")) is None
        else Decimal(str(got["upcomingInvoiceAmount"]))
    )
    got_currency = _text(got.get("currency")) or str(row["currency"])
    findings: list[_Finding] = []
    if _text(got.get("priceId")) != row["priceId"]:
        detail = f"price {row['priceId']} in the ledger, {got.get('priceId')} at the processor"
        findings.append(("subscription_price_mismatch", detail, None))
    quantity: Any = got.get("quantity")
    if _text(quantity) is None or int(quantity) != int(row["quantity"]):
        detail = f"quantity {row['quantity']} in the ledger, {_text(quantity)} at the processor"
        findings.append(("subscription_quantity_mismatch", detail, None))
    if state_norm != row["state"]:
        detail = f"{row['state']} in the ledger, {state or 'no state'} at the processor"
        findings.append(("subscription_state_mismatch", detail, None))
    if row["state"] == "active" and state_norm == "active":
        findings.extend(_amount_findings(row, upcoming, got_currency))
    seen_there = {
        "processor_amount": upcoming,
        "processor_currency": got_currency,
        "processor_status": state or None,
    }
    return findings, seen_there


def _amount_findings(row: dict[str, Any], upcoming: Decimal | None, got_currency: str) -> list[_Finding]:
    """An expected-active subscription's amount per period against its upcoming invoice."""
    if upcoming is None:
        return [("subscription_amount_mismatch", "no upcoming invoice at the processor", None)]
    currency, minor = str(row["currency"]), int(row["amountMinor"])
    try:
        got_minor: int | None = to_minor(upcoming, got_currency)
    except MoneyError:
        got_minor = None
    if got_currency == currency and got_minor == minor:
        return []
    diff = abs(got_minor - minor) if got_minor is not None and got_currency == currency else None
    expected = from_minor(minor, currency)
    detail = f"expected {expected} {currency} per period, upcoming invoice {upcoming} {got_currency}"
    return [("subscription_amount_mismatch", detail, diff)]


def _ledger_exception(row: dict[str, Any], source: str, category: str, detail: str) -> dict[str, Any]:
    """An exception of a ledger row; what the processor holds is added by the caller."""
    currency = str(row["currency"])
    return {
        "merchantReferenceId": row["merchantReferenceId"] or None,
        "category": category,
        "ledger_amount": from_minor(int(row["amountMinor"]), currency),
        "processor_amount": None,
        "ledger_currency": currency,
        "processor_currency": None,
        "ledger_status": row["state"],
        "processor_status": None,
        "source": source,
        "source_row": int(row["source_row"]),
        "detail": detail,
    }


def _unlisted_exception(sid: str, position: int, got: dict[str, Any]) -> dict[str, Any]:
    """A subscription at the processor that the ledger does not list."""
    upcoming = _text(got.get("upcomingInvoiceAmount"))
    return {
        "merchantReferenceId": _text(got.get("merchantReferenceId")),
        "category": "subscription_missing",
        "ledger_amount": None,
        "processor_amount": None if upcoming is None else Decimal(str(got["upcomingInvoiceAmount"])),
        "ledger_currency": None,
        "processor_currency": _text(got.get("currency")),
        "ledger_status": None,
        "processor_status": _text(got.get("state")),
        "source": PROCESSOR_SOURCE,
        "source_row": position + 1,
        "detail": f"subscription {sid}: not found in the subscription ledger",
    }


def _matched_row(row: dict[str, Any], sid: str) -> dict[str, Any]:
    """A ledger row the processor agrees with."""
    return {
        "subscriptionId": sid,
        "merchantReferenceId": row["merchantReferenceId"],
        "amountMinor": int(row["amountMinor"]),
        "currency": str(row["currency"]),
        "state": row["state"],
        "ledger_row": int(row["source_row"]),
    }


def _result(
    sub_ledger: LoadedInput, found: _Exceptions, matched: list[dict[str, Any]]
) -> ReconciliationResult:
    """The exceptions with the rejected rows after them, the summary and the row accounting."""
    rejected_exc, rejected_frame = rejected_exceptions(sub_ledger.rejected, sub_ledger.side)
    rejected_exc["category"] = "rejected_row"
    exceptions = pd.DataFrame(found.records, columns=list(EXCEPTION_COLUMNS))
    if len(rejected_exc):
        exceptions = pd.concat([exceptions, rejected_exc], ignore_index=True)
    exceptions["source_row"] = exceptions["source_row"].astype(np.int64)
    exceptions["severity"] = "exception"
    exceptions["age_days"] = pd.array([None] * len(exceptions), dtype="Int64")
    exceptions = _sort_exceptions(exceptions)
    cats = [str(r["category"]) for r in found.records] + ["rejected_row"] * len(rejected_exc)
    summary = build_summary(
        cats, found.currencies + [""] * len(rejected_exc), found.amounts + [None] * len(rejected_exc)
    )
    counts = (
        RowCounts(
            side=sub_ledger.side,
            source=sub_ledger.source,
            rows=sub_ledger.row_count,
            matched=len(matched),
            exceptions=len(sub_ledger.frame) - len(matched),
            rejected=len(sub_ledger.rejected),
        ),
    )
    assert set(cats) <= {*SUBSCRIPTION_CATEGORIES, "rejected_row"}
    return ReconciliationResult(
        summary=summary,
        exceptions=exceptions,
        matched_rows=LazyRows.of(pd.DataFrame(matched, columns=_MATCHED_COLUMNS)),
        rejected=rejected_frame,
        counts=counts,
        sources=(sub_ledger.source, PROCESSOR_SOURCE),
    )
