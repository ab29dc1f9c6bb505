"""A subscription's periods, cycles and invoice items, computed from its stored state and the clock.

Nothing is renewed by a background job: every read computes where the subscription stands at the
sandbox time, so advancing the clock (or waiting) renews it, in every process alike.

Cycles: 0 is the trial (if any); 1 is the first paid period, and so on. ``elapsedCycles`` is the
number of the current cycle (0 in trial, 1 in the first paid period). A scheduled phase with
``effectiveCycle`` N changes the price snapshot and/or quantity from cycle N on.
"""

from __future__ import annotations

import functools
import sqlite3
import uuid
from typing import Any

from toolkit.control_models import SubscriptionCreateRequest
from toolkit.money import from_minor
from toolkit.sandbox import rules, store
from toolkit.sandbox.charging import active_price, resolve_payer
from toolkit.sandbox.http import Conflict, NotFound


@functools.lru_cache(maxsize=4096)
def invoice_item_id(subscription_id: str, cycle: int) -> str:
    """Stable id of the invoice item of one cycle (the same on every read, in every process)."""
    return "ii_" + uuid.uuid5(uuid.NAMESPACE_URL, f"sandbox:{subscription_id}/{cycle}").hex


class Plan:
    """A subscription row with its base price, product name and phases, read once.

    Built from rows only, so a ``Plan`` can be kept in the store's read cache between requests
    (``Database.read_cache`` drops it when anything is committed). ``bodies`` holds the encoded
    responses already rendered from it, by (cycle, ended): see ``subscription_position``.
    """

    def __init__(self, conn: sqlite3.Connection, row: sqlite3.Row) -> None:
        self.row = row
        base = store.get_price(conn, price_id=row["price_id"])
        product = store.get_product(conn, product_id=row["product_id"])
        assert base is not None and product is not None
        self.base = base
        self.product_name = str(product["name"])
        self.phases: list[dict[str, Any]] = store.loads(row["phases"]) or []
        self.ordered_phases = sorted(self.phases, key=lambda p: (p["effectiveCycle"], p["sequence"]))
        self.metadata: dict[str, str] = store.loads(row["metadata"]) or {}
        self._prices: dict[str, sqlite3.Row] = {str(base["snapshot_id"]): base}
        for phase in self.phases:
            snapshot = phase.get("priceSnapshotId")
            if snapshot and snapshot not in self._prices:
                price = store.get_price_by_snapshot(conn, snapshot_id=snapshot)
                assert price is not None
                self._prices[snapshot] = price
        self.bodies: dict[tuple[int, bool], bytes] = {}

    def effective(self, cycle: int) -> tuple[sqlite3.Row, int]:
        """The price row and quantity in force during ``cycle``."""
        price, quantity = self.base, int(self.row["quantity"])
        for phase in self.ordered_phases:
            if phase["effectiveCycle"] <= cycle:
                if phase.get("priceSnapshotId"):
                    price = self._prices[phase["priceSnapshotId"]]
                if phase.get("quantity"):
                    quantity = int(phase["quantity"])
        return price, quantity


def subscription_view(conn: sqlite3.Connection, row: sqlite3.Row, *, now: int) -> dict[str, Any]:
    """The Subscription response data at sandbox time ``now``."""
    plan = Plan(conn, row)
    cycle, ended = subscription_position(plan, now=now)
    return render_subscription(plan, cycle=cycle, ended=ended)


def _trial_end(plan: Plan) -> int | None:
    trial_days = int(plan.base["trial_days"] or 0)
    return int(plan.row["create_time"]) + trial_days * rules.DAY_MS if trial_days else None


def subscription_position(plan: Plan, *, now: int) -> tuple[int, bool]:
    """Where the subscription stands at ``now``: its current cycle, and whether it has ended.

    The view depends on the clock through these two values only, which is why a rendered view can
    be reused for as long as they stay the same.
    """
    base, row = plan.base, plan.row
    create = int(row["create_time"])
    trial_end = _trial_end(plan)
    anchor = trial_end if trial_end is not None else create
    cancel_at = row["cancel_at"]
    ended = cancel_at is not None and cancel_at <= now
    at = max(create, int(cancel_at) - 1) if ended else now
    if trial_end is not None and at < trial_end:
        return 0, ended
    return rules.period_index(anchor, str(base["interval"]), int(base["interval_count"]), at) + 1, ended


def period_bounds(plan: Plan, cycle: int) -> tuple[int, int]:
    """Start and end (ms) of ``cycle``: the trial for cycle 0, else a paid period from the anchor."""
    create, trial_end = int(plan.row["create_time"]), _trial_end(plan)
    if cycle == 0:
        assert trial_end is not None
        return create, trial_end
    anchor = trial_end if trial_end is not None else create
    interval, count = str(plan.base["interval"]), int(plan.base["interval_count"])
    return (
        rules.period_start(anchor, interval, count, cycle - 1),
        rules.period_start(anchor, interval, count, cycle),
    )


def invoice_item(plan: Plan, cycle: int) -> dict[str, Any]:
    """The invoice item of ``cycle`` at the price and quantity in force then (nothing to pay in a trial)."""
    price, quantity = plan.effective(max(cycle, 1))
    start, end = period_bounds(plan, cycle)
    currency = str(price["currency"])
    label = "Trial period" if cycle == 0 else f"Cycle {cycle}"
    return {
        "invoiceItemId": invoice_item_id(str(plan.row["id"]), cycle),
        "amount": from_minor(0 if cycle == 0 else int(price["unit_minor"]) * quantity, currency),
        "currency": currency,
        "description": f"{label}: {quantity} x {plan.product_name}",
        "periodStart": start,
        "periodEnd": end,
        "proration": False,
        "price": {
            "productId": price["product_id"],
            "productName": plan.product_name,
            "priceId": price["id"],
            "priceSnapshotId": price["snapshot_id"],
            "unitAmount": from_minor(price["unit_minor"], currency),
            "quantity": quantity,
            "currency": currency,
            "recurring": {
                "trialPeriodDays": int(price["trial_days"] or 0),
                "intervalCount": int(price["interval_count"]),
            },
        },
    }


def subscription_status(cycle: int, *, ended: bool) -> str:
    """``canceled`` once ended, ``trialing`` in the trial, else ``active``."""
    if ended:
        return "canceled"
    return "trialing" if cycle == 0 else "active"


def render_subscription(plan: Plan, *, cycle: int, ended: bool) -> dict[str, Any]:
    """The Subscription response data in ``cycle`` (see ``subscription_position``)."""
    row = plan.row
    create, trial_end = int(row["create_time"]), _trial_end(plan)
    start, end = period_bounds(plan, cycle)
    cancel_at = row["cancel_at"]
    stops_at_end = cancel_at is not None and cancel_at <= end
    price, quantity = plan.effective(max(cycle, 1))
    return {
        "subscriptionId": row["id"],
        "status": subscription_status(cycle, ended=ended),
        "customerId": row["customer_id"],
        "productId": row["product_id"],
        "priceId": price["id"],
        "priceSnapshotId": price["snapshot_id"],
        "currency": price["currency"],
        "createTime": create,
        "quantity": quantity,
        "paymentMethodType": row["method"],
        "paymentInstrumentId": row["instrument_id"],
        "merchantReference": row["merchant_reference"],
        "trialStart": create if trial_end is not None else None,
        "trialEnd": trial_end,
        "currentPeriodStart": start,
        "currentPeriodEnd": end,
        "cancelAt": cancel_at,
        "cancelAtPeriodEnd": bool(row["cancel_at_period_end"]),
        "canceledAt": int(cancel_at) if ended else None,
        "cancelReason": row["cancel_reason"],
        "recurringInvoiceItem": invoice_item(plan, cycle),
        "upcomingInvoiceItem": None if ended or stops_at_end else invoice_item(plan, cycle + 1),
        "scheduledPhases": plan.phases,
        "elapsedCycles": cycle,
        "sessionId": row["session_id"],
        "metadata": plan.metadata,
    }


def _scheduled_phases(
    conn: sqlite3.Connection, req: SubscriptionCreateRequest, price: sqlite3.Row
) -> list[dict[str, Any]]:
    """The phases as stored; each snapshot must be a price of the same product, currency and interval."""
    phases: list[dict[str, Any]] = []
    for index, phase in enumerate(req.scheduledPhases or []):
        if phase.priceSnapshotId is not None:
            field = f"scheduledPhases.{index}.priceSnapshotId"
            other = store.get_price_by_snapshot(conn, snapshot_id=phase.priceSnapshotId)
            if other is None:
                raise NotFound(f"{field}: unknown price snapshot {phase.priceSnapshotId!r}")
            same = ("product_id", "price_type", "currency", "interval", "interval_count")
            if any(other[key] != price[key] for key in same):
                raise Conflict(field, "must be a recurring price of the same product, currency and interval")
        phases.append(
            {
                "sequence": phase.sequence if phase.sequence is not None else index + 1,
                "effectiveCycle": phase.effectiveCycle,
                "priceSnapshotId": phase.priceSnapshotId,
                "quantity": phase.quantity,
                "metadata": phase.metadata or {},
            }
        )
    return phases


def create_subscription(
    conn: sqlite3.Connection, req: SubscriptionCreateRequest, *, now: int
) -> dict[str, Any]:
    """Write a subscription on a recurring price, inside the caller's write transaction; its view.

    The price must be active and recurring, each scheduled phase's snapshot a price of the same
    product, currency and interval; the customer and instrument are found as for a payment.
    """
    price = active_price(conn, product_id=req.productId, price_id=req.priceId)
    if price["price_type"] != "recurring":
        raise Conflict("priceId", "is a one_time price; a subscription needs a recurring price")
    phases = _scheduled_phases(conn, req, price)
    customer_id, instrument_id, _ = resolve_payer(conn, req, now=now)
    subscription_id = store.new_id("sub_")
    store.insert_subscription(
        conn,
        subscription={
            "id": subscription_id,
            "customer_id": customer_id,
            "product_id": req.productId,
            "price_id": req.priceId,
            "quantity": req.quantity,
            "method": req.paymentMethodType.value,
            "instrument_id": instrument_id,
            "merchant_reference": req.merchantReference,
            "metadata": store.dumps(req.metadata),
            "phases": store.dumps(phases),
            "session_id": store.new_id("ses_"),
            "create_time": now,
            "cancel_at": None,
            "cancel_at_period_end": 0,
            "cancel_requested_at": None,
            "cancel_reason": None,
        },
    )
    row = store.get_subscription(conn, subscription_id=subscription_id)
    assert row is not None
    return subscription_view(conn, row, now=now)
