"""The OpenAPI document tells the truth: what it calls valid is not refused as malformed, what it
calls invalid is refused; a 405 names the allowed methods; the links lead where they say."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import httpx
import pytest
from jsonschema_rs import Draft202012Validator

from tests.sandbox.conftest import Api
from toolkit.sandbox import openapi
from toolkit.sandbox.db import TEST_INSTRUMENTS

_METHODS = ("get", "put", "post", "delete", "patch", "trace")
_RETURN = "https://shop.example/return"


@pytest.fixture
def document(api: Api) -> dict[str, Any]:
    response = api.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def _validator(document: dict[str, Any], component: str) -> Draft202012Validator:
    """The component as schemathesis validates it (jsonschema-rs, JSON Schema 2020-12)."""
    return Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    )


def _pay(**fields: Any) -> dict[str, Any]:
    body = {
        "customerEmail": "buyer@example.com",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "amount": 12,
        "currency": "USD",
        "returnUrl": _RETURN,
    }
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


def _price(**fields: Any) -> dict[str, Any]:
    return {"currency": "USD", "unitAmount": 10, **fields}


def _monthly(count: int) -> dict[str, Any]:
    return _price(priceType="recurring", recurringDetails={"interval": "month", "intervalCount": count})


# (component, path, body, valid by the document, the sandbox's status)
AGREEMENT: list[tuple[str, str, dict[str, Any], bool, int]] = [
    ("PaymentRequest", "/payment", _pay(), True, 200),
    # the four requests of the issue: the document said valid, the sandbox refused them
    (
        "PaymentRequest",
        "/payment",
        {"paymentMethodType": "PIX", "returnUrl": "0", "productId": "p"},
        False,
        400,
    ),
    ("ProductRequest", "/product", {"name": "n", "defaultPrice": "price_x", "priceList": []}, False, 400),
    ("SubscriptionCreateRequest", "/sandbox/subscriptions", {"priceId": "0", "productId": "0"}, False, 400),
    (
        "ClockAdvanceRequest",
        "/sandbox/clock/advance",
        {"milliseconds": 238288032.0, "hours": 1424.0},
        True,
        200,
    ),
    # the spec's cross-field rules
    ("PaymentRequest", "/payment", _pay(customerEmail=None), False, 400),
    ("PaymentRequest", "/payment", _pay(customerEmail="", referenceCustomerId="ref-1"), True, 200),
    ("PaymentRequest", "/payment", _pay(amount=None, currency=None, priceId="price_x"), False, 400),
    ("PaymentRequest", "/payment", _pay(amount=None, productId="prod_x", priceId="price_x"), True, 404),
    ("PaymentRequest", "/payment", _pay(productId="prod_x", priceId="price_x"), False, 400),
    ("PaymentRequest", "/payment", _pay(currency=None), False, 400),
    ("PaymentRequest", "/payment", _pay(paymentInstrumentId=None), False, 400),
    ("PaymentRequest", "/payment", _pay(paymentMethodType="ALIPAY", paymentInstrumentId=None), True, 200),
    # money: limits, decimals per currency, what each method charges, what converts
    ("PaymentRequest", "/payment", _pay(amount=1.234), False, 400),
    ("PaymentRequest", "/payment", _pay(amount=1.234, currency="KWD"), True, 200),
    ("PaymentRequest", "/payment", _pay(amount=1.5, currency="JPY"), False, 400),
    ("PaymentRequest", "/payment", _pay(amount=10**12), False, 400),
    ("PaymentRequest", "/payment", _pay(amount=0), False, 400),
    ("PaymentRequest", "/payment", _pay(paymentMethodType="GCASH", paymentInstrumentId=None), False, 400),
    ("PaymentRequest", "/payment", _pay(paymentMethodType="GCASH", paymentCurrency="PHP"), True, 200),
    ("PaymentRequest", "/payment", _pay(currency="SEK", paymentCurrency="USD"), False, 400),
    ("PaymentRequest", "/payment", _pay(currency="SEK"), False, 400),
    ("PaymentRequest", "/payment", _pay(paymentCurrency="CHF"), False, 400),
    # converts to 0.00 USD at the sandbox's rates: the rates decide, not the request
    ("PaymentRequest", "/payment", _pay(amount=1, currency="KRW", paymentCurrency="USD"), True, 409),
    ("PaymentRequest", "/payment", _pay(customerId="cus_nobody"), True, 404),
    ("PaymentRequest", "/payment", _pay(customerId=""), False, 404),
    ("PaymentRequest", "/payment", _pay(paymentInstrumentId="pi_nobody"), True, 404),
    (
        "PaymentRequest",
        "/payment",
        _pay(priceDataList=[{"name": "x", "unitAmount": 1, "quantity": 2.0}]),
        True,
        200,
    ),
    (
        "PaymentRequest",
        "/payment",
        _pay(priceDataList=[{"name": "x", "unitAmount": 1, "quantity": 0}]),
        False,
        400,
    ),
    # a line item without a currency is in the payment's (schemathesis drew 26.2579 for KWD)
    ("PaymentRequest", "/payment", _pay(priceDataList=[{"name": "x", "unitAmount": 1.555}]), False, 400),
    ("PaymentRequest", "/payment", _pay(priceDataList=[{"name": "x", "unitAmount": 1.55}]), True, 200),
    (
        "PaymentRequest",
        "/payment",
        _pay(currency="KWD", priceDataList=[{"name": "x", "unitAmount": 1.555, "currency": None}]),
        True,
        200,
    ),
    (
        "PaymentRequest",
        "/payment",
        _pay(priceDataList=[{"name": "x", "unitAmount": 1.555, "currency": "KWD"}]),
        True,
        200,
    ),
    (
        "PaymentRequest",
        "/payment",
        _pay(priceDataList=[{"name": "x", "unitAmount": 1, "quantity": 1.5}]),
        False,
        400,
    ),
    (
        "PaymentRequest",
        "/payment",
        _pay(priceDataList=[{"name": "x", "unitAmount": 0.5, "currency": "JPY"}]),
        False,
        400,
    ),
    ("PaymentRequest", "/payment", _pay(priceDataList=[{"name": "x", "unitAmount": 10**13}]), True, 200),
    # products
    ("ProductRequest", "/product", {"name": "n", "priceList": [_price(isDefaultPrice=True)]}, True, 200),
    ("ProductRequest", "/product", {"name": "n", "priceList": [_price(isDefaultPrice=True)] * 2}, False, 400),
    (
        "ProductRequest",
        "/product",
        {"name": "n", "priceList": [_price(unitAmount=0.5, currency="JPY")]},
        False,
        400,
    ),
    (
        "ProductRequest",
        "/product",
        {"name": "n", "priceList": [_price(currencyOptions={"USD": 9})]},
        False,
        400,
    ),
    (
        "ProductRequest",
        "/product",
        {"name": "n", "priceList": [_price(currencyOptions={"JPY": 1.5})]},
        False,
        400,
    ),
    (
        "ProductRequest",
        "/product",
        {"name": "n", "priceList": [_price(currencyOptions={"EUR": 9.5})]},
        True,
        200,
    ),
    ("ProductRequest", "/product", {"name": "n", "priceList": [_price(currencyOptions=None)]}, True, 200),
    ("ProductRequest", "/product", {"name": "n", "priceList": [_price(priceType="recurring")]}, False, 400),
    ("ProductRequest", "/product", {"name": "n", "priceList": [_monthly(1200)]}, True, 200),
    ("ProductRequest", "/product", {"name": "n", "priceList": [_monthly(1201)]}, False, 400),
    # controls
    ("ClockAdvanceRequest", "/sandbox/clock/advance", {"days": 2.0}, True, 200),
    ("ClockAdvanceRequest", "/sandbox/clock/advance", {"days": 2.5}, False, 400),
    ("ClockAdvanceRequest", "/sandbox/clock/advance", {"days": 1e30}, False, 400),
    ("ClockAdvanceRequest", "/sandbox/clock/advance", {"hours": 10**8}, True, 409),
    (
        "SubscriptionCreateRequest",
        "/sandbox/subscriptions",
        {"customerEmail": "x@example.com", "productId": "p", "priceId": "q"},
        False,
        400,
    ),
    (
        "SubscriptionCreateRequest",
        "/sandbox/subscriptions",
        {"customerEmail": "x@example.com", "productId": "p", "priceId": "q", "paymentMethodType": "ALIPAY"},
        True,
        404,
    ),
]


@pytest.mark.parametrize(("component", "path", "body", "valid", "status"), AGREEMENT)
def test_the_document_and_the_sandbox_agree(
    api: Api,
    document: dict[str, Any],
    component: str,
    path: str,
    body: dict[str, Any],
    valid: bool,
    status: int,
) -> None:
    """Valid by the document: never a 400 (404 and 409 depend on the store). Invalid: refused."""
    assert _validator(document, component).is_valid(body) is valid
    response = api.post(path, body)
    assert response.status_code == status, response.text


def test_the_examples_are_valid_and_accepted(api: Api, document: dict[str, Any]) -> None:
    for name, path in (("PaymentRequest", "/payment"), ("ProductRequest", "/product")):
        schema = document["components"]["schemas"][name]
        assert schema["examples"]
        for example in schema["examples"]:
            _validator(document, name).validate(example)
            api.ok("POST", path, example)


def test_every_amount_a_currency_has_is_a_multiple_of_its_step(document: dict[str, Any]) -> None:
    """The document's decimals per currency are the sandbox's: 0.001 KWD is fine, 0.001 USD is not."""
    validator = _validator(document, "PaymentRequest")
    for currency, digits in (("JPY", 0), ("USD", 2), ("KWD", 3)):
        smallest = Decimal(1).scaleb(-digits)
        assert validator.is_valid(_pay(currency=currency, paymentCurrency="USD", amount=float(smallest)))
        assert not validator.is_valid(
            _pay(currency=currency, paymentCurrency="USD", amount=float(smallest / 10))
        )


def test_the_spec_endpoints_are_described(document: dict[str, Any]) -> None:
    paths = document["paths"]
    for path, method in (("/payment", "post"), ("/product", "post"), ("/subscription/{id}", "get")):
        operation = paths[path][method]
        assert {"200", "400", "401"} <= set(operation["responses"])
        assert operation["security"] == [{"ApiKey": [], "Timestamp": []}]
    assert {"404", "409"} <= set(paths["/payment"]["post"]["responses"])
    assert "404" in paths["/subscription/{id}"]["get"]["responses"]
    body = paths["/payment"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PaymentRequest"}
    amount = document["components"]["schemas"]["PaymentRequest"]["properties"]["amount"]
    assert "string" not in str(amount)
    quantity = document["components"]["schemas"]["PriceData"]["properties"]["quantity"]["anyOf"][0]
    assert (quantity["minimum"], quantity["maximum"]) == (1, 2**31 - 1)  # pydantic wrote ge/le here
    assert "lone surrogate" in document["info"]["description"]


def _methods(item: dict[str, Any]) -> set[str]:
    return {method.upper() for method in item if method in _METHODS}


def test_an_undeclared_method_is_405_with_allow(api: Api, document: dict[str, Any]) -> None:
    """RFC 9110 §15.5.6: a 405 lists the methods the resource supports, all of them."""
    for template, item in document["paths"].items():
        path = re.sub(r"{[^}]+}", "x", template)
        declared = _methods(item)
        for method in {m.upper() for m in _METHODS} - declared:
            response = api.http.request(method, path)
            assert response.status_code == 405, (method, path)
            assert set(response.headers["Allow"].split(", ")) == declared, (method, path)
    assert api.http.request("DELETE", "/openapi.json").headers["Allow"] == "GET, HEAD"


def _evaluate(expression: str, response: httpx.Response) -> Any:
    """A ``$response.body#/json/pointer`` runtime expression of an OpenAPI link."""
    prefix = "$response.body#"
    assert expression.startswith(prefix), expression
    value: Any = response.json()
    for part in expression[len(prefix) :].split("/")[1:]:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _follow(
    api: Api,
    document: dict[str, Any],
    source: tuple[str, str],
    name: str,
    response: httpx.Response,
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    """Send the request a link of ``source``'s 200 response describes (``body`` adds the rest)."""
    method, path = source
    link = document["paths"][path][method]["responses"]["200"]["links"][name]
    target = link["operationRef"].removeprefix("#/paths/")
    target_path, target_method = target.rsplit("/", 1)
    target_path = target_path.replace("~1", "/").replace("~0", "~")
    assert target_method in document["paths"][target_path]
    for parameter, expression in link.get("parameters", {}).items():
        location, field = parameter.split(".")
        assert location == "path"
        target_path = target_path.replace("{" + field + "}", _evaluate(expression, response))
    linked = {field: _evaluate(expr, response) for field, expr in link.get("requestBody", {}).items()}
    return api.http.request(
        target_method.upper(),
        target_path,
        json={**(body or {}), **linked} if target_method == "post" else None,
    )


def test_links_lead_from_a_product_to_subscriptions_payments_and_controls(
    api: Api, document: dict[str, Any]
) -> None:
    plan, ebook = document["components"]["schemas"]["ProductRequest"]["examples"]
    customer = {"customerEmail": "buyer@example.com", "paymentInstrumentId": "pi_test_pending"}
    created = api.post("/product", plan)
    subscribed = _follow(api, document, ("post", "/product"), "SubscribeToFirstPrice", created, customer)
    assert subscribed.status_code == 200, subscribed.text
    read = _follow(api, document, ("post", "/sandbox/subscriptions"), "GetSubscription", subscribed)
    assert read.json()["data"]["status"] == "trialing"
    canceled = _follow(api, document, ("get", "/subscription/{id}"), "CancelSubscription", read)
    assert canceled.json()["data"]["cancelAtPeriodEnd"] is True
    again = _follow(
        api, document, ("post", "/sandbox/subscriptions/{id}/cancel"), "GetSubscription", canceled
    )
    assert again.json()["data"]["subscriptionId"] == subscribed.json()["data"]["subscriptionId"]
    assert (
        _follow(
            api, document, ("post", "/sandbox/subscriptions"), "CancelSubscription", subscribed
        ).status_code
        == 200
    )

    created = api.post("/product", ebook)
    paid = _follow(
        api,
        document,
        ("post", "/product"),
        "PayForFirstPrice",
        created,
        {**customer, "paymentMethodType": "CARD", "returnUrl": _RETURN},
    )
    assert paid.json()["data"]["status"] == TEST_INSTRUMENTS["pi_test_pending"]
    resolved = _follow(api, document, ("post", "/payment"), "ResolvePayment", paid, {"status": "success"})
    assert resolved.json()["data"]["status"] == "success"
    deactivated = _follow(api, document, ("post", "/product"), "DeactivateFirstPrice", created)
    assert deactivated.json()["data"]["active"] is False
    assert set(openapi.LINKS) <= {(m, p) for p, item in document["paths"].items() for m in item}
