"""Subscriptions: create (control), GET /subscription/{id}, periods, trial, cycles, phases, cancel."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from tests.sandbox.conftest import Api, recurring
from toolkit.sandbox.rules import DAY_MS


def _plan(api: Api, *prices: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = api.ok("POST", "/product", {"name": "Plan", "priceList": list(prices)})
    return data


def _subscribe(api: Api, plan: dict[str, Any], index: int = 0, **fields: Any) -> dict[str, Any]:
    body = {
        "customerEmail": "s@example.com",
        "productId": plan["productId"],
        "priceId": plan["priceList"][index]["priceId"],
        "paymentInstrumentId": "pi_test_success",
    }
    body.update(fields)
    data: dict[str, Any] = api.ok("POST", "/sandbox/subscriptions", body)
    return data


def _advance(api: Api, **parts: int) -> None:
    api.ok("POST", "/sandbox/clock/advance", parts)


def test_subscription_has_every_field_and_trial(api: Api) -> None:
    plan = _plan(api, recurring("month", 1, trial=7, amount=Decimal("12.50")))
    sub = _subscribe(api, plan, quantity=3, merchantReference="m-sub-1", metadata={"k": "v"})
    got = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
    assert got == sub
    spec_fields = {
        "subscriptionId",
        "customerId",
        "productId",
        "priceId",
        "priceSnapshotId",
        "createTime",
        "quantity",
        "paymentMethodType",
        "paymentInstrumentId",
        "merchantReference",
        "trialStart",
        "trialEnd",
        "currentPeriodStart",
        "currentPeriodEnd",
        "cancelAt",
        "cancelAtPeriodEnd",
        "canceledAt",
        "cancelReason",
        "recurringInvoiceItem",
        "upcomingInvoiceItem",
        "scheduledPhases",
        "elapsedCycles",
        "sessionId",
        "metadata",
    }
    assert spec_fields <= set(got)
    assert got["subscriptionId"].startswith("sub_") and got["sessionId"].startswith("ses_")
    assert got["status"] == "trialing" and got["elapsedCycles"] == 0 and got["currency"] == "USD"
    assert got["trialEnd"] - got["trialStart"] == 7 * DAY_MS
    assert (got["currentPeriodStart"], got["currentPeriodEnd"]) == (got["trialStart"], got["trialEnd"])
    assert got["merchantReference"] == "m-sub-1" and got["metadata"] == {"k": "v"}
    upcoming = got["upcomingInvoiceItem"]
    assert Decimal(str(upcoming["amount"])) == Decimal("37.50") and upcoming["periodStart"] == got["trialEnd"]
    assert upcoming["price"]["quantity"] == 3 and upcoming["price"]["productName"] == "Plan"
    assert upcoming["invoiceItemId"].startswith("ii_") and upcoming["proration"] is False
    assert Decimal(str(got["recurringInvoiceItem"]["amount"])) == 0
    _advance(api, days=8)
    after = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
    assert after["status"] == "active" and after["elapsedCycles"] == 1
    assert after["currentPeriodStart"] == got["trialEnd"]
    assert after["recurringInvoiceItem"]["invoiceItemId"] == upcoming["invoiceItemId"]


def test_monthly_periods_clamp_to_month_end(api: Api) -> None:
    plan = _plan(api, recurring("month", 1))
    sub = _subscribe(api, plan)
    start = datetime.fromtimestamp(sub["createTime"] / 1000, tz=UTC)
    end = datetime.fromtimestamp(sub["currentPeriodEnd"] / 1000, tz=UTC)
    assert (end.year * 12 + end.month) - (start.year * 12 + start.month) == 1
    assert end.day == start.day or end.day < start.day
    assert sub["elapsedCycles"] == 1 and sub["trialStart"] is None


@pytest.mark.parametrize(
    ("interval", "count", "days", "cycles"),
    [("day", 1, 10, 11), ("week", 2, 30, 3), ("quarter", 1, 200, 3), ("year", 1, 400, 2)],
)
def test_clock_advance_renews(api: Api, interval: str, count: int, days: int, cycles: int) -> None:
    sub = _subscribe(api, _plan(api, recurring(interval, count)))
    _advance(api, days=days)
    got = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
    assert got["elapsedCycles"] == cycles
    assert got["currentPeriodStart"] <= sub["createTime"] + days * DAY_MS < got["currentPeriodEnd"]
    assert got["upcomingInvoiceItem"]["periodStart"] == got["currentPeriodEnd"]


def test_scheduled_phases_change_quantity_and_price(api: Api) -> None:
    plan = _plan(api, recurring("month", 1, amount=10), recurring("month", 1, amount=25))
    upgrade = plan["priceList"][1]["priceSnapshotId"]
    sub = _subscribe(
        api,
        plan,
        quantity=1,
        scheduledPhases=[
            {"effectiveCycle": 2, "quantity": 4},
            {"effectiveCycle": 3, "priceSnapshotId": upgrade, "metadata": {"tier": "gold"}},
        ],
    )
    assert [p["sequence"] for p in sub["scheduledPhases"]] == [1, 2]
    assert Decimal(str(sub["upcomingInvoiceItem"]["amount"])) == Decimal("40.00")
    _advance(api, days=32)
    got = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
    assert got["elapsedCycles"] == 2 and got["quantity"] == 4
    assert Decimal(str(got["upcomingInvoiceItem"]["amount"])) == Decimal("100.00")
    assert got["upcomingInvoiceItem"]["price"]["priceSnapshotId"] == upgrade


def test_cancel_at_period_end_and_now(api: Api) -> None:
    plan = _plan(api, recurring("month", 1))
    sub = _subscribe(api, plan)
    path = f"/sandbox/subscriptions/{sub['subscriptionId']}/cancel"
    got = api.ok("POST", path, {"atPeriodEnd": True, "reason": "too expensive"})
    assert got["cancelAtPeriodEnd"] is True and got["cancelAt"] == sub["currentPeriodEnd"]
    assert got["status"] == "active" and got["canceledAt"] is None and got["upcomingInvoiceItem"] is None
    assert got["cancelReason"] == "too expensive"
    _advance(api, days=40)
    ended = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
    assert ended["status"] == "canceled" and ended["canceledAt"] == sub["currentPeriodEnd"]
    assert ended["elapsedCycles"] == 1
    assert "already canceled" in api.error("POST", path, {"atPeriodEnd": False}, 409)
    other = _subscribe(api, plan)
    now = api.ok("POST", f"/sandbox/subscriptions/{other['subscriptionId']}/cancel", {"atPeriodEnd": False})
    assert now["status"] == "canceled" and now["canceledAt"] == now["cancelAt"]
    assert now["cancelAtPeriodEnd"] is False


def test_subscription_errors(api: Api) -> None:
    plan = _plan(api, recurring(), {"currency": "USD", "unitAmount": 5})
    assert "unknown subscription" in api.error("GET", "/subscription/sub_missing", None, 404)
    assert api.error("POST", "/sandbox/subscriptions/sub_missing/cancel", {}, 404)
    msg = api.error(
        "POST",
        "/sandbox/subscriptions",
        {
            "customerEmail": "x@example.com",
            "productId": plan["productId"],
            "priceId": plan["priceList"][1]["priceId"],
            "paymentInstrumentId": "pi_test_success",
        },
        409,
    )
    assert "priceId" in msg and "recurring" in msg
    msg = api.error(
        "POST",
        "/sandbox/subscriptions",
        {
            "productId": plan["productId"],
            "priceId": plan["priceList"][0]["priceId"],
            "paymentInstrumentId": "pi_test_success",
        },
        400,
    )
    assert "customerEmail" in msg
    msg = api.error(
        "POST",
        "/sandbox/subscriptions",
        {
            "customerEmail": "x@example.com",
            "productId": plan["productId"],
            "priceId": plan["priceList"][0]["priceId"],
            "paymentInstrumentId": "pi_test_success",
            "scheduledPhases": [
                {"effectiveCycle": 2, "priceSnapshotId": plan["priceList"][1]["priceSnapshotId"]}
            ],
        },
        409,
    )
    assert "scheduledPhases.0.priceSnapshotId" in msg
