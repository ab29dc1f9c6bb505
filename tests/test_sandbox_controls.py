"""SandboxControls: typed scenario scripting, faults and the request log, and refusal to run against
anything but a sandbox."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from tests.faults import Mode, fault_server
from toolkit import AuthenticationError, Client, PaymentStatus, SandboxError, create_payment, payments_frame
from toolkit.controls import SandboxControls
from toolkit.errors import NotFoundError, OutcomeUnknownError, RequestValidationError
from toolkit.journal import Journal
from toolkit.sandbox.embedded import RunningSandbox


def test_scenario_subscription_clock_resolve_export(client: Client, unique: str) -> None:
    controls = SandboxControls(client)
    product = client.create_product(
        name="Plan",
        priceList=[
            {
                "currency": "USD",
                "unitAmount": "10.00",
                "priceType": "recurring",
                "recurringDetails": {"interval": "month", "intervalCount": 1, "trialPeriodDays": 7},
            }
        ],
    )
    assert product.priceList is not None
    sub = controls.create_subscription(
        customerEmail=f"{unique}@x.io",
        productId=product.productId,
        priceId=product.priceList[0].priceId,
        quantity=2,
        merchantReference=f"sub-{unique}",
        paymentInstrumentId="pi_test_success",
    )
    assert sub.upcomingInvoiceItem is not None and sub.upcomingInvoiceItem.amount == Decimal("20.00")
    canceled = controls.cancel_subscription(sub.subscriptionId or "", at_period_end=True, reason="too pricey")
    assert canceled.cancelAtPeriodEnd is True and canceled.cancelReason == "too pricey"

    pending = client.create_payment(
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_pending",
        returnUrl="https://r",
        customerEmail=f"{unique}@x.io",
        amount="5.00",
        currency="USD",
        merchantReferenceId=f"pend-{unique}",
    )
    assert pending.status is PaymentStatus.PENDING
    settled = controls.resolve_payment(pending.orderId or "", "success")
    assert settled.status is PaymentStatus.SUCCESS and str(settled.status) == "success (1)"
    assert settled.amount == Decimal("5.00") and settled.merchantReferenceId == f"pend-{unique}"
    assert settled.updateTime is not None and settled.createTime is not None
    before = controls.now()
    controls.advance_clock(days=40)
    assert (controls.now() - before).days >= 40
    after = client.get_subscription(sub.subscriptionId or "")
    assert after.canceledAt is not None

    export = controls.export_payments(f"pend-{unique}")
    assert list(export.index) == [f"pend-{unique}"] and export["amount"].iloc[0] == Decimal("5.00")
    assert str(export["createTime"].dtype).endswith("UTC]")
    assert controls.export_csv().startswith(b"orderId,merchantReferenceId,")


def test_freeze_and_resume_the_clock(client: Client) -> None:
    controls = SandboxControls(client)
    frozen = controls.freeze_clock()
    try:
        time.sleep(0.02)
        assert controls.now() == frozen and controls.freeze_clock() == frozen
        controls.advance_clock(hours=1)
        assert controls.now() == frozen + timedelta(hours=1)
    finally:  # the sandbox is shared by the session's tests
        resumed = controls.resume_clock()
    assert resumed >= frozen + timedelta(hours=1)
    time.sleep(0.02)
    assert controls.now() > resumed


def test_an_id_names_no_other_control(client: Client) -> None:
    """``cancel_subscription("../clock/resume?")`` resumed a frozen clock and returned a blank
    Subscription: the id went into the path unescaped."""
    controls = SandboxControls(client)
    frozen = controls.freeze_clock()
    try:
        with pytest.raises(NotFoundError):
            controls.cancel_subscription("../clock/resume?")
        with pytest.raises(NotFoundError):
            controls.resolve_payment("../../clock/resume?", "success")
        assert controls.now() == frozen  # still frozen
        with pytest.raises(RequestValidationError, match="order id"):
            controls.resolve_payment(" ", "success")
    finally:
        controls.resume_clock()


def test_a_payment_resolved_at_the_sandbox_shows_its_settled_status(
    client: Client, unique: str, tmp_path: Path
) -> None:
    """payments_frame shows how a journaled payment settled, beside the status it was answered."""
    controls = SandboxControls(client)
    card = {
        "paymentMethodType": "CARD",
        "currency": "USD",
        "customerEmail": f"{unique}@x.io",
        "returnUrl": "https://r",
    }
    made = {
        name: create_payment(
            card,
            client=client,
            amount="5.00",
            paymentInstrumentId=f"pi_test_{name}",
            merchantReferenceId=f"{name}-{unique}",
        )
        for name in ("pending", "success")
    }
    explicit = Journal(tmp_path / "own.sqlite", environment="test")
    other = create_payment(
        card,
        client=client,
        journal=explicit,
        amount="6.00",
        paymentInstrumentId="pi_test_pending",
        merchantReferenceId=f"own-{unique}",
    )
    pending_order = (made["pending"].response or {})["orderId"]
    settled = controls.resolve_payment(pending_order, "failure")  # recorded in the default journal
    controls.resolve_payment((other.response or {})["orderId"], "success", journal=explicit)
    with Journal.open(client.environment) as journal:
        frame = payments_frame(journal)
    row = frame.loc[f"pending-{unique}"]
    assert (row["status"], row["answeredStatus"]) == ("failure", "pending")
    assert settled.updateTime is not None
    assert row["settledTime"] == pd.Timestamp(settled.updateTime, unit="ms", tz="UTC")
    untouched = frame.loc[f"success-{unique}"]
    assert (untouched["status"], untouched["answeredStatus"]) == ("success", "success")
    assert pd.isna(untouched["settledTime"])
    own = payments_frame(explicit).loc[f"own-{unique}"]
    assert (own["status"], own["answeredStatus"]) == ("success", "pending")
    explicit.close()


def test_refuses_a_service_that_is_not_a_sandbox() -> None:
    with (
        fault_server(Mode.OK) as server,
        Client(base_url=f"http://127.0.0.1:{server.port}", api_key="k") as not_a_sandbox,
        pytest.raises(SandboxError),
    ):
        SandboxControls(not_a_sandbox)


def test_a_refused_key_is_an_authentication_error_not_a_verdict_on_the_service(
    sandbox: RunningSandbox,
) -> None:
    with Client(base_url=sandbox.base_url, api_key="sk_wrong") as wrong, pytest.raises(AuthenticationError):
        SandboxControls(wrong)


def test_faults_and_the_request_log_from_python(sandbox: RunningSandbox, unique: str) -> None:
    with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
        controls = SandboxControls(client)
        controls.clear_faults()
        try:
            check_faults_and_log(client, controls, unique)
        finally:
            controls.clear_faults()


def check_faults_and_log(client: Client, controls: SandboxControls, unique: str) -> None:
    rule = controls.add_fault(route="POST /payment", mode="drop_after_commit", count=1)
    assert rule.id.startswith("flt_") and rule.remaining == 1 and rule.fired == 0
    seeded = controls.add_fault(
        {"route": "GET /subscription", "mode": "delay", "delayMs": 1, "probability": 0.25, "seed": 9}
    )
    assert seeded.probability == Decimal("0.25") and seeded.count is None
    with pytest.raises(RequestValidationError, match="delayMs: not taken by mode error"):
        controls.add_fault(route="*", mode="error", delayMs=5)  # refused before it is sent

    with pytest.raises(OutcomeUnknownError):
        client.create_payment(
            paymentMethodType="CARD",
            paymentInstrumentId="pi_test_success",
            returnUrl="https://r",
            customerEmail=f"{unique}@x.io",
            amount="7.00",
            currency="USD",
            merchantReferenceId=f"drop-{unique}",
        )
    rules = controls.faults()
    assert list(rules.index) == [rule.id, seeded.id]
    assert rules.loc[rule.id, "fired"] == 1 and rules.loc[rule.id, "remaining"] == 0
    assert str(rules["fired"].dtype) == "Int64" and str(rules["createTime"].dtype).endswith("UTC]")

    found = controls.find_payment(f"drop-{unique}")
    assert found.status is PaymentStatus.SUCCESS and found.amount == Decimal("7.00")
    with pytest.raises(SandboxError, match="not exactly one"):
        controls.find_payment(f"nothing-{unique}")

    log = controls.requests(limit=20)
    assert list(log.columns) == [
        "time",
        "method",
        "path",
        "status",
        "latencyMs",
        "merchantReferenceId",
        "fault",
        "faultId",
    ]
    dropped = log[log["merchantReferenceId"] == f"drop-{unique}"]
    assert dropped["fault"].tolist() == ["drop_after_commit"] and dropped["faultId"].tolist() == [rule.id]
    assert pd.isna(dropped["status"].iloc[0]) and str(log["time"].dtype).endswith("UTC]")
    assert not log["path"].str.contains("requests").any()
    assert controls.clear_faults() == 2 and controls.faults().empty


def test_the_export_gives_every_amount_as_a_decimal_whole_yen_too(client: Client, unique: str) -> None:
    """1000 JPY came back as an int beside the Decimals of other rows, one column of both."""
    controls = SandboxControls(client)
    for currency, amount in (("JPY", "1000"), ("USD", "12.30")):
        client.create_payment(
            paymentMethodType="CARD",
            paymentInstrumentId="pi_test_success",
            returnUrl="https://shop.example/return",
            customerEmail="bo@example.com",
            amount=amount,
            currency=currency,
            merchantReferenceId=f"{currency}-{unique}",
        )
    export = controls.export_payments()
    mine = export.loc[[f"JPY-{unique}", f"USD-{unique}"]]
    assert [type(v) for v in mine["amount"]] == [Decimal, Decimal]
    assert list(mine["amount"]) == [Decimal("1000"), Decimal("12.30")]
    assert {type(v) for v in export["amount"]} == {Decimal}
