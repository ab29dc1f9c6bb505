"""Frames of subscriptions as the client returned them: the subscriptions, their invoice items
and their scheduled phases, keyed by the subscription's ``merchantReference``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from toolkit.frames import columns as col
from toolkit.frames.schemas import (
    SUBSCRIPTION_STATES,
    InvoiceItemsSchema,
    PhasesSchema,
    SubscriptionsSchema,
)
from toolkit.models import InvoicePrice, InvoiceRecurring, Subscription


def _state(subscription: Subscription) -> str:
    """The service's state when it sends one (the sandbox does); else canceled or active."""
    sent = (subscription.model_extra or {}).get("status")
    if sent in SUBSCRIPTION_STATES:
        return str(sent)
    return "canceled" if subscription.canceledAt is not None else "active"


def _currency(subscription: Subscription) -> str | None:
    extra = subscription.model_extra or {}
    if extra.get("currency"):
        return str(extra["currency"])
    for item in (subscription.upcomingInvoiceItem, subscription.recurringInvoiceItem):
        if item is not None and (item.model_extra or {}).get("currency"):
            return str((item.model_extra or {})["currency"])
    return None


_SUBSCRIPTION_FIELDS = (
    "merchantReference",
    "subscriptionId",
    "customerId",
    "productId",
    "priceId",
    "priceSnapshotId",
    "quantity",
    "paymentMethodType",
    "paymentInstrumentId",
    "createTime",
    "trialStart",
    "trialEnd",
    "currentPeriodStart",
    "currentPeriodEnd",
    "cancelAt",
    "canceledAt",
    "cancelAtPeriodEnd",
    "cancelReason",
    "elapsedCycles",
    "sessionId",
    "metadata",
    "upcomingInvoiceItem",
    "recurringInvoiceItem",
)


def subscriptions_frame(subscriptions: Sequence[Subscription], *, environment: str = "") -> pd.DataFrame:
    """Subscriptions as the client returned them; cancelAt and canceledAt are read as milliseconds."""
    subs = list(subscriptions)
    field = col.fields(subs, _SUBSCRIPTION_FIELDS)
    keys = field["merchantReference"]
    currencies = [_currency(s) for s in subs]
    upcoming = [i.amount if i else None for i in field["upcomingInvoiceItem"]]
    recurring = [i.amount if i else None for i in field["recurringInvoiceItem"]]
    ids = [i or "" for i in field["subscriptionId"]]
    columns = {
        "subscriptionId": col.strings(field["subscriptionId"]),
        "customerId": col.strings(field["customerId"]),
        "productId": col.strings(field["productId"]),
        "priceId": col.strings(field["priceId"]),
        "priceSnapshotId": col.strings(field["priceSnapshotId"]),
        "quantity": col.ints(field["quantity"]),
        "paymentMethodType": col.strings(field["paymentMethodType"]),
        "paymentInstrumentId": col.strings(field["paymentInstrumentId"]),
        "state": pd.Categorical([_state(s) for s in subs], categories=SUBSCRIPTION_STATES),
        "currency": col.strings(currencies),
        "upcomingInvoiceAmount": col.objects(upcoming),
        "upcomingInvoiceAmountMinor": col.minor_units(upcoming, currencies, ids),
        "recurringInvoiceAmount": col.objects(recurring),
        "recurringInvoiceAmountMinor": col.minor_units(recurring, currencies, ids),
        **{
            name: col.times(field[name])
            for name in (
                "createTime",
                "trialStart",
                "trialEnd",
                "currentPeriodStart",
                "currentPeriodEnd",
                "cancelAt",
                "canceledAt",
            )
        },
        "cancelAtPeriodEnd": col.bools(field["cancelAtPeriodEnd"]),
        "cancelReason": col.strings(field["cancelReason"]),
        "elapsedCycles": col.ints(field["elapsedCycles"]),
        "sessionId": col.strings(field["sessionId"]),
        "metadata": col.objects(field["metadata"]),
        "environment": col.strings([environment] * len(subs)),
    }
    return SubscriptionsSchema.validate(col.keyed(columns, keys))


_NO_PRICE = InvoicePrice()


_NO_RECURRING = InvoiceRecurring()


# Long: the frame's columns, declared one by one in the order the frame has them.
def invoice_items_frame(subscriptions: Sequence[Subscription]) -> pd.DataFrame:
    """Both invoice items of each subscription (``item`` says which), keyed like the subscription."""
    subs = list(subscriptions)
    sub = col.fields(
        subs, ("merchantReference", "subscriptionId", "recurringInvoiceItem", "upcomingInvoiceItem")
    )
    owners: list[Subscription] = []
    keys: list[str | None] = []
    ids: list[str | None] = []
    kinds: list[str] = []
    items: list[Any] = []
    for s, key, sid, recurring_item, upcoming_item in zip(
        subs,
        sub["merchantReference"],
        sub["subscriptionId"],
        sub["recurringInvoiceItem"],
        sub["upcomingInvoiceItem"],
        strict=True,
    ):
        for kind, found in (("recurring", recurring_item), ("upcoming", upcoming_item)):
            if found is not None:
                owners.append(s)
                keys.append(key)
                ids.append(sid)
                kinds.append(kind)
                items.append(found)
    item = col.fields(
        items,
        (
            "invoiceItemId",
            "amount",
            "description",
            "periodStart",
            "periodEnd",
            "proration",
            "price",
            "model_extra",
        ),
    )
    currencies = [
        (extra or {}).get("currency") or _currency(s)
        for extra, s in zip(item["model_extra"], owners, strict=True)
    ]
    prices = [_NO_PRICE if p is None else p for p in item["price"]]
    price = col.fields(
        prices,
        ("productId", "productName", "priceId", "priceSnapshotId", "unitAmount", "quantity", "recurring"),
    )
    recur = col.fields(
        [_NO_RECURRING if r is None else r for r in price["recurring"]], ("trialPeriodDays", "intervalCount")
    )
    amounts = item["amount"]
    columns = {
        "subscriptionId": col.strings(ids),
        "item": col.strings(kinds),
        "invoiceItemId": col.strings(item["invoiceItemId"]),
        "amount": col.objects(amounts),
        "amountMinor": col.minor_units(amounts, currencies, [i or "" for i in item["invoiceItemId"]]),
        "currency": col.strings(currencies),
        "description": col.strings(item["description"]),
        "periodStart": col.times(item["periodStart"]),
        "periodEnd": col.times(item["periodEnd"]),
        "proration": col.bools(item["proration"]),
        "productId": col.strings(price["productId"]),
        "productName": col.strings(price["productName"]),
        "priceId": col.strings(price["priceId"]),
        "priceSnapshotId": col.strings(price["priceSnapshotId"]),
        "unitAmount": col.objects(price["unitAmount"]),
        "quantity": col.ints(price["quantity"]),
        "trialPeriodDays": col.ints(recur["trialPeriodDays"]),
        "intervalCount": col.ints(recur["intervalCount"]),
    }
    return InvoiceItemsSchema.validate(col.keyed(columns, keys))


def phases_frame(subscriptions: Sequence[Subscription]) -> pd.DataFrame:
    """The scheduled phases of each subscription, one row each."""
    subs = list(subscriptions)
    sub = col.fields(subs, ("merchantReference", "subscriptionId", "scheduledPhases"))
    keys: list[str | None] = []
    ids: list[str | None] = []
    phases: list[Any] = []
    for key, sid, scheduled in zip(
        sub["merchantReference"], sub["subscriptionId"], sub["scheduledPhases"], strict=True
    ):
        if scheduled:
            keys.extend([key] * len(scheduled))
            ids.extend([sid] * len(scheduled))
            phases.extend(scheduled)
    phase = col.fields(phases, ("sequence", "effectiveCycle", "priceSnapshotId", "quantity", "metadata"))
    columns = {
        "subscriptionId": col.strings(ids),
        "sequence": col.ints(phase["sequence"]),
        "effectiveCycle": col.ints(phase["effectiveCycle"]),
        "priceSnapshotId": col.strings(phase["priceSnapshotId"]),
        "quantity": col.ints(phase["quantity"]),
        "metadata": col.objects(phase["metadata"]),
    }
    return PhasesSchema.validate(col.keyed(columns, keys))
