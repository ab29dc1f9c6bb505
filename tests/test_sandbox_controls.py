"""SandboxControls: typed scenario scripting, and refusal to run against anything but a sandbox."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.faults import Mode, fault_server
from toolkit import AuthenticationError, Client, PaymentStatus, SandboxError
from toolkit.sandbox.controls import SandboxControls
from toolkit.sandbox.embedded import RunningSandbox


def test_scenario_subscription_clock_resolve_export(client: Client, unique: str) -> None:
    controls = SandboxControls(client)
    product = client.create_product(name="Plan", priceList=[{
        "currency": "USD", "unitAmount": "10.00", "priceType": "recurring",
        "recurringDetails": {"interval": "month", "intervalCount": 1, "trialPeriodDays": 7}}])
    assert product.priceList is not None
    sub = controls.create_subscription(customerEmail=f"{unique}@x.io", productId=product.productId,
                                       priceId=product.priceList[0].priceId, quantity=2,
                                       merchantReference=f"sub-{unique}", paymentInstrumentId="pi_test_success")
    assert sub.upcomingInvoiceItem is not None and sub.upcomingInvoiceItem.amount == Decimal("20.00")
    canceled = controls.cancel_subscription(sub.subscriptionId or "", at_period_end=True, reason="too pricey")
    assert canceled.cancelAtPeriodEnd is True and canceled.cancelReason == "too pricey"

    pending = client.create_payment(paymentMethodType="CARD", paymentInstrumentId="pi_test_pending",
                                    returnUrl="https://r", customerEmail=f"{unique}@x.io", amount="5.00",
                                    currency="USD", merchantReferenceId=f"pend-{unique}")
    assert pending.status is PaymentStatus.PENDING
    settled = controls.resolve_payment(pending.orderId or "", "success")
    assert settled["status"] == "success"
    before = controls.now()
    controls.advance_clock(days=40)
    assert (controls.now() - before).days >= 40
    after = client.get_subscription(sub.subscriptionId or "")
    assert after.canceledAt is not None

    export = controls.export_payments(f"pend-{unique}")
    assert list(export.index) == [f"pend-{unique}"] and export["amount"].iloc[0] == Decimal("5.00")
    assert str(export["createTime"].dtype).endswith("UTC]")
    assert controls.export_csv().startswith(b"orderId,merchantReferenceId,")


def test_refuses_a_service_that_is_not_a_sandbox() -> None:
    with fault_server(Mode.OK) as server, \
            Client(base_url=f"http://127.0.0.1:{server.port}", api_key="k") as not_a_sandbox, \
            pytest.raises(SandboxError):
        SandboxControls(not_a_sandbox)


def test_a_refused_key_is_an_authentication_error_not_a_verdict_on_the_service(sandbox: RunningSandbox) -> None:
    with Client(base_url=sandbox.base_url, api_key="sk_wrong") as wrong, pytest.raises(AuthenticationError):
        SandboxControls(wrong)
