"""The client against the real sandbox over HTTP on 127.0.0.1: every call, validation before
sending, authentication, envelope errors, Decimal round trips, configuration."""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import exported_payments
from toolkit import (
    APIError,
    AsyncClient,
    AuthenticationError,
    Client,
    ConfigurationError,
    NotFoundError,
    PaymentRequest,
    PaymentStatus,
    Product,
    RequestValidationError,
    SandboxControls,
)
from toolkit.sandbox.embedded import RunningSandbox


def payment(unique: str, **changes: Any) -> dict[str, Any]:
    return {
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "returnUrl": "https://shop/r",
        "customerEmail": f"{unique}@example.com",
        "amount": "12.30",
        "currency": "USD",
        "merchantReferenceId": f"ref-{unique}",
        **changes,
    }


def product(**changes: Any) -> dict[str, Any]:
    return {
        "name": "Cookbook",
        "localizedNames": {"de": "Kochbuch", "ja": "料理本"},
        "taxCategory": "ebook",
        "priceList": [
            {
                "currency": "USD",
                "unitAmount": "9.99",
                "isDefaultPrice": True,
                "currencyOptions": {"JPY": "1500"},
            },
            {
                "currency": "USD",
                "unitAmount": "29.97",
                "priceType": "recurring",
                "recurringDetails": {
                    "interval": "quarter",
                    "intervalCount": 1,
                    "trialPeriodDays": 14,
                    "pricingModel": "flat_rate",
                },
            },
        ],
        **changes,
    }


def test_create_payment_returns_the_typed_result(client: Client, unique: str) -> None:
    result = client.create_payment(**payment(unique))
    assert result.status is PaymentStatus.SUCCESS
    assert result.amount == Decimal("12.30") and result.currency == "USD"
    assert result.orderId and result.sessionId and result.paymentInstrumentId == "pi_test_success"


def test_create_payment_accepts_a_model(client: Client, unique: str) -> None:
    request = PaymentRequest.build(payment(unique))
    assert client.create_payment(request).status is PaymentStatus.SUCCESS


def test_wallet_payment_creates_an_instrument_and_asks_for_an_action(client: Client, unique: str) -> None:
    result = client.create_payment(
        **payment(unique, paymentMethodType="WECHAT", paymentInstrumentId=None, currency="CNY")
    )
    assert result.status is PaymentStatus.NEXT_ACTION
    assert result.paymentInstrumentId and result.paymentInstrumentId.startswith("pi_")
    assert result.action is not None and result.action.walletHandleRedirectOrDisplayQrCode is not None
    assert result.action.walletHandleRedirectOrDisplayQrCode.imageUrlPng


def test_big_amounts_round_trip_exactly(client: Client, unique: str) -> None:
    result = client.create_payment(**payment(unique, amount=Decimal("123456789012.34")))
    assert result.amount == Decimal("123456789012.34")


def test_priced_payment_in_another_currency(client: Client, unique: str) -> None:
    created = client.create_product(**product())
    assert created.priceList is not None
    one_time = created.priceList[0]
    result = client.create_payment(
        **payment(
            unique,
            amount=None,
            currency=None,
            priceId=one_time.priceId,
            productId=created.productId,
            paymentCurrency="JPY",
        )
    )
    assert (result.amount, result.currency) == (Decimal("1500"), "JPY")


def test_create_product_returns_the_product(client: Client) -> None:
    created = client.create_product(**product())
    assert isinstance(created, Product) and created.productId
    assert created.localizedNames == {"de": "Kochbuch", "ja": "料理本"}
    assert created.priceList is not None and len(created.priceList) == 2
    assert created.defaultPrice == created.priceList[0].priceId
    assert created.priceList[0].unitAmount == Decimal("9.99")
    assert created.priceList[1].recurring is not None and created.priceList[1].recurring.trialPeriodDays == 14


def test_unknown_subscription_is_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError) as raised:
        client.get_subscription("sub_does_not_exist")
    assert raised.value.http_status == 404 and raised.value.code == 404


def test_invalid_requests_are_refused_before_sending(
    client: Client, sandbox: RunningSandbox, unique: str
) -> None:
    before = len(exported_payments(sandbox))
    for bad in (
        {"paymentMethodType": "card"},
        {"customerEmail": None},
        {"amount": "1.001"},
        {"metadata": {"a": 1}},
        {"paymentInstrumentId": None},
    ):
        with pytest.raises(RequestValidationError):
            client.create_payment(**{k: v for k, v in payment(unique, **bad).items() if v is not None})
    with pytest.raises(RequestValidationError, match="id: must be a non-empty string"):
        client.get_subscription(" ")
    # What the sandbox refused after the client had sent it (the docs promise it never sends that).
    created = client.create_product(**product())
    assert created.priceList is not None
    priced = {"priceId": created.priceList[0].priceId, "productId": created.productId}
    with pytest.raises(RequestValidationError, match="amount: not allowed together with priceId"):
        client.create_payment(**payment(unique, **priced))
    with pytest.raises(RequestValidationError, match="priceId"):  # "": no price, and no absent one
        client.create_payment(**payment(unique, priceId="", productId=created.productId))
    # A body over 1 MiB was sent and refused with 413.
    with pytest.raises(RequestValidationError, match=r"body: .* larger than 1048576 bytes"):
        client.create_payment(**payment(unique, metadata={"note": "x" * 1_100_000}))
    assert len(exported_payments(sandbox)) == before
    assert 413 not in set(SandboxControls(client).requests(limit=50)["status"])


def test_service_refusals_raise_api_error_with_code_and_msg(client: Client, unique: str) -> None:
    with pytest.raises(APIError) as raised:
        client.create_payment(**payment(unique, paymentCurrency="CHF"))
    assert raised.value.http_status == 400 and raised.value.code == 400
    assert raised.value.msg and "paymentCurrency" in raised.value.msg
    with pytest.raises(NotFoundError) as missing:
        client.create_payment(**payment(unique, paymentInstrumentId="pi_nobody_has_this"))
    assert missing.value.http_status == 404 and missing.value.code == 404
    assert missing.value.msg and "paymentInstrumentId" in missing.value.msg


def test_wrong_key_is_an_authentication_error(sandbox: RunningSandbox, unique: str) -> None:
    with (
        Client(base_url=sandbox.base_url, api_key="sk_wrong") as wrong,
        pytest.raises(AuthenticationError) as raised,
    ):
        wrong.create_payment(**payment(unique))
    assert raised.value.http_status == 401 and raised.value.body
    assert "sk_wrong" not in str(raised.value)


def test_headers_carry_the_key_and_a_fresh_millisecond_timestamp(client: Client) -> None:
    request = client._request("GET", "/subscription/x", None, None)
    assert request.headers["X-API-KEY"] == client._api_key.get_secret_value()
    assert abs(int(request.headers["X-Timestamp"]) - time.time() * 1000) < 5_000


async def test_async_client_makes_the_same_calls(aclient: AsyncClient, unique: str) -> None:
    result = await aclient.create_payment(**payment(unique))
    assert result.status is PaymentStatus.SUCCESS and result.amount == Decimal("12.30")
    created = await aclient.create_product(**product())
    assert created.productId
    with pytest.raises(NotFoundError):
        await aclient.get_subscription("sub_missing")


def test_configuration_from_the_environment(
    sandbox: RunningSandbox, monkeypatch: pytest.MonkeyPatch, unique: str
) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", sandbox.base_url + "/")
    monkeypatch.setenv("TOOLKIT_API_KEY", sandbox.api_key.get_secret_value())
    monkeypatch.setenv("TOOLKIT_MAX_RETRIES", "4")
    with Client() as configured:
        assert configured.base_url == sandbox.base_url and configured.max_retries == 4
        assert configured.environment.kind == "service"
        assert configured.create_payment(**payment(unique)).status is PaymentStatus.SUCCESS


def test_a_live_url_without_a_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", "https://payments.example.com")
    with pytest.raises(ConfigurationError, match="TOOLKIT_API_KEY"):
        Client()
    with pytest.raises(ConfigurationError, match="http"):
        Client(base_url="ftp://x", api_key="k")


def test_without_a_base_url_the_embedded_sandbox_is_used_and_announced_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, unique: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolkit"), Client() as first, Client() as second:
        assert first.environment.is_sandbox and first.base_url == second.base_url
        assert first.create_payment(**payment(unique)).status is PaymentStatus.SUCCESS
    notices = [r for r in caplog.records if "embedded sandbox" in r.getMessage()]
    assert len(notices) == 1
    assert str(tmp_path / "toolkit-home") in notices[0].getMessage()


def test_with_options_returns_a_copy_sharing_connections(client: Client, unique: str) -> None:
    quick = client.with_options(timeout=2.5, max_retries=0)
    assert (quick.timeout, quick.max_retries) == (2.5, 0)
    assert (client.timeout, client.max_retries) == (30.0, 2)
    assert quick.create_payment(**payment(unique)).status is PaymentStatus.SUCCESS
    quick.close()
    assert client.create_payment(**payment(unique + "b")).status is PaymentStatus.SUCCESS


def test_context_manager_closes_connections(sandbox: RunningSandbox) -> None:
    with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as c:
        pass
    with pytest.raises(RuntimeError):
        c._http.send(httpx.Request("GET", sandbox.base_url))
