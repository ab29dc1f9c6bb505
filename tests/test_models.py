"""Every request rule of the spec is checked before sending, with a message naming the field;
responses are read tolerantly; amounts never pass through float."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from toolkit.errors import RequestValidationError
from toolkit.models import (
    Envelope,
    PaymentRequest,
    PaymentResult,
    PaymentStatus,
    ProductRequest,
    Subscription,
    parse_json,
)

BASE: dict[str, Any] = {
    "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_test_success",
    "returnUrl": "https://shop/return",
    "customerId": "cus_1",
    "amount": "12.30",
    "currency": "USD",
}


def build(**changes: Any) -> PaymentRequest:
    fields = {**BASE, **changes}
    return PaymentRequest.build({k: v for k, v in fields.items() if v is not None})


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"paymentMethodType": None}, "paymentMethodType", "required"),
        ({"returnUrl": None}, "returnUrl", "required"),
        ({"paymentMethodType": "card"}, "paymentMethodType", "must be uppercase: 'CARD'"),
        ({"paymentMethodType": "BITCOIN"}, "paymentMethodType", "Input should be"),
        ({"customerId": None}, "", "customerId, customerEmail or referenceCustomerId: at least one"),
        ({"priceId": "price_1", "amount": None, "currency": None}, "productId", "required when priceId"),
        ({"amount": None}, "amount", "required when priceId is absent"),
        ({"currency": None}, "currency", "required when priceId is absent"),
        ({"paymentInstrumentId": None}, "paymentInstrumentId", "required for CARD"),
        (
            {"priceDataList": [{"name": "x", "quantity": 0, "unitAmount": "1"}]},
            "priceDataList.0.quantity",
            "greater than or equal to 1",
        ),
        (
            {"priceDataList": [{"name": "x", "unitAmount": "0"}]},
            "priceDataList.0.unitAmount",
            "greater than 0",
        ),
        ({"metadata": {"n": 5}}, "metadata.n", "valid string"),
        ({"platformType": "APP"}, "platformType", "'WEB' or 'WAP'"),
        ({"deviceType": "android"}, "deviceType", "'Android' or 'iOS'"),
        ({"currency": "usd"}, "currency", "must be uppercase"),
        ({"currency": "ABC"}, "currency", "ISO 4217"),
        ({"paymentCurrency": "EURO"}, "paymentCurrency", "ISO 4217"),
        ({"amount": "12.345"}, "amount", "12.345 has more decimals than USD allows"),
        (  # an item without a currency is in the payment's: 1.555 USD was accepted and charged
            {"priceDataList": [{"name": "a", "quantity": 1, "unitAmount": "1.555"}]},
            "priceDataList.0.unitAmount",
            "1.555 has more decimals than USD allows",
        ),
        ({"amount": "-1"}, "amount", "greater than 0"),
        ({"amount": "1000000000000"}, "amount", "must be less than 1,000,000,000,000"),  # the sandbox's 400
        ({"merchantReferenceID": "typo"}, "merchantReferenceID", "unknown field"),
    ],
)
def test_payment_request_rules(changes: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(RequestValidationError) as raised:
        build(**changes)
    assert any(f == field and message in m for f, m in raised.value.errors), raised.value.errors
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "method", ["CASHAPP", "GCASH", "TNG", "WECHAT", "KAKAO", "ALIPAY", "QRIS", "PROMPTPAY"]
)
def test_auto_instrument_methods_need_no_instrument(method: str) -> None:
    assert build(paymentMethodType=method, paymentInstrumentId=None).paymentInstrumentId is None


@pytest.mark.parametrize("method", ["CARD", "PIX", "UPI"])
def test_other_methods_need_an_instrument(method: str) -> None:
    with pytest.raises(RequestValidationError, match=f"paymentInstrumentId: required for {method}"):
        build(paymentMethodType=method, paymentInstrumentId=None)


def test_price_id_form_needs_no_amount() -> None:
    request = build(priceId="price_1", productId="prod_1", amount=None, currency=None)
    assert request.amount is None


def test_wire_body_writes_exact_json_numbers() -> None:
    body = build(amount=Decimal("123456789012.34")).to_json()
    assert b'"amount":123456789012.34' in body
    assert b'"paymentInstrumentId"' in body and b"null" not in body


def test_product_request_rules() -> None:
    with pytest.raises(
        RequestValidationError, match="recurringDetails: required when priceType is recurring"
    ):
        ProductRequest.build(
            {"name": "p", "priceList": [{"currency": "USD", "unitAmount": "1", "priceType": "recurring"}]}
        )
    with pytest.raises(RequestValidationError, match="at most one price may have isDefaultPrice"):
        ProductRequest.build(
            {
                "name": "p",
                "priceList": [
                    {"currency": "USD", "unitAmount": "1", "isDefaultPrice": True},
                    {"currency": "EUR", "unitAmount": "1", "isDefaultPrice": True},
                ],
            }
        )
    with pytest.raises(RequestValidationError, match="taxCategory"):
        ProductRequest.build({"name": "p", "taxCategory": "food"})


def test_responses_keep_unknown_fields_and_parse_amounts_without_float() -> None:
    raw = b'{"code":200,"msg":"success","data":{"amount":12345678901234567890.12,"status":5,"newField":1}}'
    envelope = Envelope[PaymentResult].model_validate(parse_json(raw))
    assert envelope.data is not None
    assert envelope.data.amount == Decimal("12345678901234567890.12")
    assert envelope.data.status is PaymentStatus.NEXT_ACTION
    assert envelope.data.model_extra == {"newField": 1}
    assert envelope.data.orderId is None


def test_unknown_status_values_are_kept() -> None:
    assert PaymentResult.model_validate({"status": 7}).status == 7


def test_subscription_tolerates_missing_fields() -> None:
    subscription = Subscription.model_validate({"subscriptionId": "sub_1"})
    assert subscription.upcomingInvoiceItem is None and subscription.scheduledPhases is None


def test_a_status_prints_its_name_and_stays_a_number_on_the_wire() -> None:
    from toolkit.models import PaymentResult, PaymentStatus, to_json_bytes

    result = PaymentResult.model_validate({"orderId": "o", "status": 5})
    assert str(result.status) == "next_action (5)" and f"{result.status}" == "next_action (5)"
    assert result.status == PaymentStatus.NEXT_ACTION and int(PaymentStatus.NEXT_ACTION) == 5
    assert to_json_bytes({"status": result.status}) == b'{"status":5}'
