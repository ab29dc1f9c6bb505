"""Subscription checks: the subscription ledger against subscriptions read through the API.

Keyed by ``subscriptionId``. Subscriptions are few (one API call each), so this works row by row
on exact ``Decimal`` amounts; the payments engine is the one that must be fast.

Rules where the issue leaves a choice: ``trialing`` at the processor counts as ``active``; a
subscription at the processor that the ledger does not list is ``subscription_missing`` too (with
the processor as source); the upcoming invoice amount is compared only for subscriptions expected
active; a missing upcoming invoice of an expected-active subscription is an amount mismatch.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from toolkit.errors import MoneyError
from toolkit.money import from_minor, to_minor
from toolkit.reconcile.inputs import LoadedInput
from toolkit.reconcile.result import (
    EXCEPTION_COLUMNS,
    SUBSCRIPTION_CATEGORIES,
    LazyRows,
    ReconciliationResult,
    RowCounts,
    _sort_exceptions,
    build_summary,
    rejected_exceptions,
)

PROCESSOR_SOURCE = "<subscriptions frame>"


def _text(value: Any) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return str(value)


def reconcile_subscriptions(sub_ledger: LoadedInput, subscriptions: pd.DataFrame) -> ReconciliationResult:
    """Check each expected subscription against the processor's; one exception per problem.

    ``subscriptions`` is the subscriptions frame (index ``merchantReferenceId``, columns
    ``subscriptionId``, ``priceId``, ``quantity``, ``state``, ``upcomingInvoiceAmount``,
    ``currency``). In the exceptions, ``ledger_status``/``processor_status`` hold the states.
    """
    frame = subscriptions.reset_index() if subscriptions.index.name else subscriptions
    missing = {"subscriptionId", "priceId", "quantity", "state"} - set(frame.columns)
    if missing:
        from toolkit.errors import InputError

        raise InputError(f"{PROCESSOR_SOURCE}: required column(s) {', '.join(sorted(missing))} missing")
    processor = {str(r["subscriptionId"]): (i, r) for i, r in enumerate(frame.to_dict("records"))}
    records: list[dict[str, Any]] = []
    amounts: list[int | None] = []
    currencies: list[str] = []
    matched: list[dict[str, Any]] = []
    seen: set[str] = set()
    exception_ids: set[str] = set()

    for row in sub_ledger.frame.to_dict("records"):
        sid = str(row["subscriptionId"])
        currency = str(row["currency"])
        expected = from_minor(int(row["amountMinor"]), currency)
        seen.add(sid)
        base = {
            "merchantReferenceId": row["merchantReferenceId"] or None,
            "ledger_amount": expected,
            "ledger_currency": currency,
            "ledger_status": row["state"],
            "source": sub_ledger.source,
            "source_row": int(row["source_row"]),
        }

        def add(
            category: str,
            detail: str,
            processor_amount: Decimal | None = None,
            processor_currency: str | None = None,
            processor_state: str | None = None,
            at_risk: int | None = None,
            _sid: str = sid,
            _base: dict[str, Any] = base,
            _currency: str = currency,
            _minor: int = int(row["amountMinor"]),
        ) -> None:
            records.append(
                _base
                | {
                    "category": category,
                    "processor_amount": processor_amount,
                    "processor_currency": processor_currency,
                    "processor_status": processor_state,
                    "detail": f"subscription {_sid}: {detail}",
                }
            )
            amounts.append(_minor if at_risk is None else at_risk)
            currencies.append(_currency)
            exception_ids.add(_sid)

        if sid not in processor:
            add("subscription_missing", "not found at the processor")
            continue
        _, got = processor[sid]
        state = _text(got.get("state")) or ""
        state_norm = "active" if state in ("trialing", "active") else state
        upcoming = got.get("upcomingInvoiceAmount")
        upcoming = None if _text(upcoming) is None else Decimal(str(upcoming))
        got_currency = _text(got.get("currency")) or currency
        extra: dict[str, Any] = {
            "processor_amount": upcoming,
            "processor_currency": got_currency,
            "processor_state": state or None,
        }
        if _text(got.get("priceId")) != row["priceId"]:
            add(
                "subscription_price_mismatch",
                f"price {row['priceId']} in the ledger, {got.get('priceId')} at the processor",
                **extra,
            )
        quantity: Any = got.get("quantity")
        if _text(quantity) is None or int(quantity) != int(row["quantity"]):
            add(
                "subscription_quantity_mismatch",
                f"quantity {row['quantity']} in the ledger, {_text(quantity)} at the processor",
                **extra,
            )
        if state_norm != row["state"]:
            add(
                "subscription_state_mismatch",
                f"{row['state']} in the ledger, {state or 'no state'} at the processor",
                **extra,
            )
        if row["state"] == "active" and state_norm == "active":
            if upcoming is None:
                add("subscription_amount_mismatch", "no upcoming invoice at the processor", **extra)
            else:
                try:
                    got_minor = to_minor(upcoming, got_currency)
                except MoneyError:
                    got_minor = None
                if got_currency != currency or got_minor != int(row["amountMinor"]):
                    diff = (
                        abs(got_minor - int(row["amountMinor"]))
                        if got_minor is not None and got_currency == currency
                        else None
                    )
                    add(
                        "subscription_amount_mismatch",
                        f"expected {expected} {currency} per period, upcoming invoice "
                        f"{upcoming} {got_currency}",
                        at_risk=diff,
                        **extra,
                    )
        if sid not in exception_ids:
            matched.append(
                {
                    "subscriptionId": sid,
                    "merchantReferenceId": row["merchantReferenceId"],
                    "amountMinor": int(row["amountMinor"]),
                    "currency": currency,
                    "state": row["state"],
                    "ledger_row": int(row["source_row"]),
                }
            )

    for sid, (position, got) in processor.items():
        if sid in seen:
            continue
        records.append(
            {
                "merchantReferenceId": _text(got.get("merchantReferenceId")),
                "category": "subscription_missing",
                "ledger_amount": None,
                "processor_amount": None
                if _text(got.get("upcomingInvoiceAmount")) is None
                else Decimal(str(got["upcomingInvoiceAmount"])),
                "ledger_currency": None,
                "processor_currency": _text(got.get("currency")),
                "ledger_status": None,
                "processor_status": _text(got.get("state")),
                "source": PROCESSOR_SOURCE,
                "source_row": position + 1,
                "detail": f"subscription {sid}: not found in the subscription ledger",
            }
        )
        amounts.append(None)
        currencies.append(_text(got.get("currency")) or "")

    rejected_exc, rejected_frame = rejected_exceptions(
        sub_ledger.rejected, sub_ledger.side, sub_ledger.source
    )
    rejected_exc["category"] = "rejected_row"
    exceptions = pd.DataFrame(records, columns=list(EXCEPTION_COLUMNS))
    if len(rejected_exc):
        exceptions = pd.concat([exceptions, rejected_exc], ignore_index=True)
    exceptions["source_row"] = exceptions["source_row"].astype(np.int64)
    exceptions = _sort_exceptions(exceptions)
    cats = [str(r["category"]) for r in records] + ["rejected_row"] * len(rejected_exc)
    summary = build_summary(cats, currencies + [""] * len(rejected_exc), amounts + [None] * len(rejected_exc))
    flagged_rows = len(sub_ledger.frame) - len(matched)
    counts = (
        RowCounts(
            side=sub_ledger.side,
            source=sub_ledger.source,
            rows=sub_ledger.row_count,
            matched=len(matched),
            exceptions=flagged_rows,
            rejected=len(sub_ledger.rejected),
        ),
    )
    assert set(cats) <= {*SUBSCRIPTION_CATEGORIES, "rejected_row"}
    return ReconciliationResult(
        summary=summary,
        exceptions=exceptions,
        matched_rows=LazyRows.of(
            pd.DataFrame(
                matched,
                columns=[
                    "subscriptionId",
                    "merchantReferenceId",
                    "amountMinor",
                    "currency",
                    "state",
                    "ledger_row",
                ],
            )
        ),
        rejected=rejected_frame,
        counts=counts,
        sources=(sub_ledger.source, PROCESSOR_SOURCE),
    )
