"""Sandbox-only controls: info, settlement export (CSV and JSON), resolve, expiry, reset."""

from __future__ import annotations

import csv
import io
import time
from decimal import Decimal

from tests.sandbox.conftest import Api, now_ms
from toolkit.models import EXPORT_COLUMNS

COLUMNS = [
    "orderId",
    "merchantReferenceId",
    "customerId",
    "paymentMethodType",
    "paymentInstrumentId",
    "amount",
    "currency",
    "pricingAmount",
    "pricingCurrency",
    "status",
    "createTime",
    "updateTime",
]


def test_info(api: Api) -> None:
    data = api.ok("GET", "/sandbox/info")
    assert data["sandbox"] is True and data["database"] == "sandbox.sqlite"
    assert abs(data["now"] - now_ms()) < 5_000


def test_export_csv_and_json(api: Api) -> None:
    assert list(EXPORT_COLUMNS) == COLUMNS
    card = dict(paymentMethodType="CARD", paymentInstrumentId="pi_test_default")
    api.pay(amount=12.30, currency="USD", merchantReferenceId="r-1", **card)
    api.pay(amount=1200, currency="JPY", merchantReferenceId="r-2", **card)
    api.pay(amount=Decimal("1.25"), currency="KWD", paymentCurrency="USD", merchantReferenceId="r-3", **card)
    api.pay(amount=9.02, currency="USD", merchantReferenceId="r-4", **card)
    text = api.get("/sandbox/payments", params={"format": "csv"})
    assert text.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(text.text)))
    assert list(rows[0]) == COLUMNS
    assert [(r["amount"], r["currency"], r["pricingAmount"], r["status"]) for r in rows] == [
        ("12.30", "USD", "12.30", "success"),
        ("1200", "JPY", "1200", "success"),
        ("4.07", "USD", "1.250", "success"),
        ("9.02", "USD", "9.02", "pending"),
    ]
    assert all(r["createTime"].isdigit() and r["updateTime"].isdigit() for r in rows)
    raw = api.get("/sandbox/payments", params={"format": "json"})
    assert b'"pricingAmount":1.250' in raw.content
    payments = raw.json()["data"]["payments"]
    assert [p["orderId"] for p in payments] == [r["orderId"] for r in rows]
    only = api.ok("GET", "/sandbox/payments?merchantReferenceId=r-2")["payments"]
    assert [p["merchantReferenceId"] for p in only] == ["r-2"]
    assert "format" in api.error("GET", "/sandbox/payments?format=xml", None, 400)


def test_the_clock_does_not_pass_year_9000(api: Api) -> None:
    """Periods computed from the clock stay within the calendar's year 9999."""
    msg = api.error("POST", "/sandbox/clock/advance", {"hours": 10**8}, 409)
    assert "9000" in msg
    assert api.ok("POST", "/sandbox/clock/advance", {"days": 10**6})["now"] > now_ms()


def test_a_query_parameter_given_twice_is_refused(api: Api) -> None:
    """The sandbox does not silently pick one of several values."""
    response = api.get(
        "/sandbox/payments", params=[("merchantReferenceId", "a"), ("merchantReferenceId", "b")]
    )
    assert response.status_code == 400 and "merchantReferenceId" in response.json()["msg"]
    assert api.get("/sandbox/payments", params={"merchantReferenceId": "a"}).status_code == 200


def test_resolve_and_expiry(api: Api) -> None:
    pending = api.pay(
        amount=9.02, currency="USD", paymentMethodType="CARD", paymentInstrumentId="pi_test_default"
    )
    wallet = api.pay(amount=100, currency="CNY", paymentMethodType="ALIPAY")
    other = api.pay(amount=100, currency="CNY", paymentMethodType="ALIPAY")
    done = api.ok("POST", f"/sandbox/payments/{pending['orderId']}/resolve", {"status": "success"})
    assert done["status"] == "success" and done["orderId"] == pending["orderId"]
    failed = api.ok("POST", f"/sandbox/payments/{other['orderId']}/resolve", {"status": "failure"})
    assert failed["status"] == "failure"
    msg = api.error("POST", f"/sandbox/payments/{pending['orderId']}/resolve", {"status": "failure"}, 409)
    assert "already success" in msg
    assert api.error("POST", "/sandbox/payments/ord_missing/resolve", {"status": "success"}, 404)
    assert "status" in api.error(
        "POST", f"/sandbox/payments/{wallet['orderId']}/resolve", {"status": "done"}, 400
    )
    advanced = api.ok("POST", "/sandbox/clock/advance", {"minutes": 16})
    assert advanced["expiredPayments"] == 1
    rows = {p["orderId"]: p for p in api.ok("GET", "/sandbox/payments")["payments"]}
    assert rows[wallet["orderId"]]["status"] == "failure"
    assert rows[wallet["orderId"]]["updateTime"] == rows[wallet["orderId"]]["createTime"] + 900_000
    msg = api.error("POST", f"/sandbox/payments/{wallet['orderId']}/resolve", {"status": "success"}, 409)
    assert "expired" in msg
    upi = api.pay(amount=100, currency="INR", paymentMethodType="UPI", paymentInstrumentId="pi_test_default")
    assert upi["status"] == 2
    api.ok("POST", "/sandbox/clock/advance", {"hours": 23})
    assert api.ok("GET", "/sandbox/payments")["payments"][-1]["status"] == "pending"
    api.ok("POST", "/sandbox/clock/advance", {"hours": 2})
    assert api.ok("GET", "/sandbox/payments")["payments"][-1]["status"] == "failure"
    assert "hours" in api.error("POST", "/sandbox/clock/advance", {"hours": -1}, 400)


def test_a_frozen_clock_stands_still_until_advanced_or_resumed(api: Api) -> None:
    """A scenario on a frozen clock tells the same story whenever it runs: nothing moves by itself."""
    frozen = api.ok("POST", "/sandbox/clock/freeze")
    assert frozen["clockFrozen"] is True and abs(frozen["now"] - now_ms()) < 5_000
    time.sleep(0.05)
    assert api.ok("POST", "/sandbox/clock/freeze")["now"] == frozen["now"]  # freezing again keeps it
    info = api.ok("GET", "/sandbox/info")
    assert info["now"] == frozen["now"] and info["clockFrozen"] is True
    wallet = api.pay(amount=10, currency="CNY", paymentMethodType="ALIPAY", merchantReferenceId="frozen-1")
    payment = api.ok("GET", "/sandbox/payments")["payments"][-1]
    assert payment["createTime"] == frozen["now"] and payment["status"] == "next_action"
    advanced = api.ok("POST", "/sandbox/clock/advance", {"minutes": 16})
    assert advanced == {"now": frozen["now"] + 960_000, "expiredPayments": 1}
    time.sleep(0.05)
    assert api.ok("GET", "/sandbox/info")["now"] == advanced["now"]  # still frozen, further on
    resumed = api.ok("POST", "/sandbox/clock/resume")
    assert resumed["clockFrozen"] is False and 0 <= resumed["now"] - advanced["now"] < 5_000
    time.sleep(0.05)
    assert api.ok("GET", "/sandbox/info")["now"] > resumed["now"]  # runs again, from there
    assert api.ok("POST", "/sandbox/clock/resume")["clockFrozen"] is False  # resuming a running one
    api.ok("POST", "/sandbox/clock/freeze")
    api.ok("POST", "/sandbox/reset")
    info = api.ok("GET", "/sandbox/info")
    assert info["clockFrozen"] is False and abs(info["now"] - now_ms()) < 5_000
    assert wallet["status"] == 5


def test_reset_empties_everything_but_keeps_key_and_test_instruments(api: Api) -> None:
    api.pay(amount=1, currency="USD", paymentMethodType="CARD", paymentInstrumentId="pi_test_default")
    api.ok("POST", "/sandbox/clock/advance", {"days": 3})
    api.ok("POST", "/sandbox/reset")
    assert api.ok("GET", "/sandbox/payments")["payments"] == []
    assert abs(api.ok("GET", "/sandbox/info")["now"] - now_ms()) < 5_000
    assert (
        api.pay(amount=1, currency="USD", paymentMethodType="CARD", paymentInstrumentId="pi_test_success")[
            "status"
        ]
        == 1
    )
