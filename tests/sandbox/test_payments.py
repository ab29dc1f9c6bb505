"""POST /payment over real HTTP: every validation rule, customers, instruments, currencies, outcomes."""

from __future__ import annotations

import base64
import io
import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any

import httpx
import pytest
import segno
from PIL import Image

from tests.sandbox.conftest import Api, now_ms, product_body, recurring
from tests.sandbox.qr_decode import Decoded, decode_png, decode_svg
from toolkit.models import PaymentResult
from toolkit.sandbox.qr import BORDER, MASK, SCALE

WALLETS = ["ALIPAY", "WECHAT", "GCASH", "TNG", "KAKAO", "QRIS", "PROMPTPAY", "CASHAPP", "PIX"]
CURRENCY_OF = {
    "ALIPAY": "CNY",
    "WECHAT": "CNY",
    "GCASH": "PHP",
    "TNG": "MYR",
    "KAKAO": "KRW",
    "QRIS": "IDR",
    "PROMPTPAY": "THB",
    "CASHAPP": "USD",
    "PIX": "BRL",
    "UPI": "INR",
    "CARD": "USD",
}
NEEDS_INSTRUMENT = {"PIX", "UPI", "CARD"}


def base(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "customerEmail": "a@example.com",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_default",
        "amount": 12.30,
        "currency": "USD",
        "returnUrl": "https://shop.example/return",
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        (base(customerEmail=None), "customerId, customerEmail or referenceCustomerId", "required"),
        (base(priceId="price_x"), "productId", "required when priceId"),
        (base(currency=None), "currency", "required when priceId is absent"),
        (base(amount=None), "amount", "required when priceId is absent"),
        (base(paymentMethodType="card"), "paymentMethodType", "uppercase"),
        (base(paymentMethodType="BITCOIN"), "paymentMethodType", "Input should be"),
        (base(paymentInstrumentId=None), "paymentInstrumentId", "required for CARD"),
        (
            base(paymentMethodType="UPI", paymentInstrumentId=None, currency="INR"),
            "paymentInstrumentId",
            "required for UPI",
        ),
        (
            base(priceDataList=[{"name": "x", "quantity": 0, "unitAmount": 1}]),
            "priceDataList.0.quantity",
            "greater than or equal to 1",
        ),
        (
            base(priceDataList=[{"name": "x", "quantity": 1, "unitAmount": 0}]),
            "priceDataList.0.unitAmount",
            "greater than 0",
        ),
        (
            base(priceDataList=[{"name": "x", "unitAmount": -1}]),
            "priceDataList.0.unitAmount",
            "greater than 0",
        ),
        (base(metadata={"k": 1}), "metadata.k", "string"),
        (
            base(paymentMethodType="GCASH", currency="USD", paymentInstrumentId=None),
            "currency",
            "USD is not supported by GCASH",
        ),
        (
            base(paymentCurrency="PHP", paymentMethodType="ALIPAY"),
            "paymentCurrency",
            "PHP is not supported by ALIPAY",
        ),
        (base(amount="12.30"), "amount", "must be a JSON number"),
        (base(amount=True), "amount", "must be a JSON number"),
        (base(returnUrl=5), "returnUrl", "string"),
        (base(currency="usd"), "currency", "uppercase"),
        (base(currency="XYZ"), "currency", "ISO 4217"),
        (base(amount=1.234), "amount", "more decimals than USD"),
        (base(amount=10**13), "amount", "must be less than"),
        (base(unknownField=1), "unknownField", "unknown field"),
        (base(platformType="DESKTOP"), "platformType", "Input should be"),
        (base(paymentCurrency="CHF"), "paymentCurrency", "CHF is not supported by CARD"),
    ],
)
def test_invalid_payment_is_400_naming_field_and_rule(
    api: Api, body: dict[str, Any], field: str, rule: str
) -> None:
    msg = api.error("POST", "/payment", body, 400)
    assert field in msg and rule in msg, msg


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        (base(paymentInstrumentId="pi_nope"), "paymentInstrumentId", "unknown payment instrument"),
        (base(customerEmail=None, customerId="cus_nope"), "customerId", "unknown customer"),
    ],
)
def test_an_unknown_customer_or_instrument_is_404(
    api: Api, body: dict[str, Any], field: str, rule: str
) -> None:
    """The body is well formed (the OpenAPI document accepts it); what it names does not exist."""
    msg = api.error("POST", "/payment", body, 404)
    assert field in msg and rule in msg, msg


@pytest.mark.parametrize("raw", [b"{", b"[1, 2]", b"null", b'"text"', b"", b"\xff\xfe"])
def test_malformed_bodies_are_400(api: Api, raw: bytes) -> None:
    response = api.http.post("/payment", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["msg"].startswith("body:")


def test_body_over_1_mib_is_413(api: Api) -> None:
    body = base(metadata={"big": "x" * (1024 * 1024)})
    response = api.post("/payment", body)
    assert response.status_code == 413
    assert response.json()["code"] == 413


def test_metadata_keys_named_like_fields_are_the_merchants_own(api: Api) -> None:
    """Found by schemathesis: ``metadata.atPeriodEnd`` was refused as the cancel flag's boolean."""
    metadata = {"atPeriodEnd": "soon", "amount": "12", "quantity": "many", "isDefaultPrice": "no"}
    response = api.post("/payment", base(metadata=metadata))
    assert response.status_code == 200, response.text
    assert api.post("/payment", base(metadata={"amount": 12})).json()["msg"].startswith("metadata.amount:")


def test_card_success_returns_every_field(api: Api) -> None:
    data = api.pay(
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
        amount=12.30,
        currency="USD",
        merchantReferenceId="m-1",
    )
    assert data["orderId"].startswith("ord_") and data["sessionId"].startswith("ses_")
    assert data["paymentInstrumentId"] == "pi_test_default"
    assert data["status"] == 1 and "action" not in data
    assert data["currency"] == "USD"
    response = api.post("/payment", base(amount=Decimal("12.30")) | {"amount": 12.3})
    assert b'"amount":12.30' in response.content  # exact, with the currency's two digits


def test_customer_resolution(api: Api) -> None:
    first = api.pay(
        customerEmail="c@example.com",
        referenceCustomerId="ref-1",
        amount=1,
        currency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    again = api.pay(
        customerEmail=None,
        referenceCustomerId="ref-1",
        amount=1,
        currency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    by_email = api.pay(
        customerEmail="c@example.com",
        amount=1,
        currency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    rows = {r["orderId"]: r for r in api.ok("GET", "/sandbox/payments?format=json")["payments"]}
    customers = {rows[d["orderId"]]["customerId"] for d in (first, again, by_email)}
    assert len(customers) == 1
    customer = customers.pop()
    assert customer.startswith("cus_")
    by_id = api.pay(
        customerEmail=None,
        customerId=customer,
        amount=1,
        currency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert api.ok("GET", "/sandbox/payments")["payments"][-1]["orderId"] == by_id["orderId"]
    # The customer is bound to ref-1: another reference with its id was dropped unsaid (ref-2 then
    # made a second customer).
    rebind = {
        "customerId": customer,
        "referenceCustomerId": "ref-2",
        "amount": 1,
        "currency": "USD",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_default",
        "returnUrl": "https://r",
    }
    msg = api.error("POST", "/payment", rebind, 409)
    assert "referenceCustomerId" in msg and "bound to another referenceCustomerId" in msg
    assert api.ok("GET", "/sandbox/payments")["payments"][-1]["orderId"] == by_id["orderId"]
    other = api.pay(
        customerEmail="other@example.com",
        amount=1,
        currency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert api.ok("GET", "/sandbox/payments")["payments"][-1]["customerId"] != customer
    assert other["status"] == 1


@pytest.mark.parametrize(
    "method", sorted({"CASHAPP", "GCASH", "TNG", "WECHAT", "KAKAO", "ALIPAY", "QRIS", "PROMPTPAY"})
)
def test_instrument_created_automatically(api: Api, method: str) -> None:
    currency = CURRENCY_OF[method]
    data = api.pay(paymentMethodType=method, amount=100, currency=currency)
    instrument = data["paymentInstrumentId"]
    assert instrument.startswith("pi_") and not instrument.startswith("pi_test_")
    # the created instrument is reusable by the same customer and method, refused for another method
    again = api.pay(paymentMethodType=method, amount=100, currency=currency, paymentInstrumentId=instrument)
    assert again["paymentInstrumentId"] == instrument
    other = "GCASH" if method != "GCASH" else "TNG"
    msg = api.error(
        "POST",
        "/payment",
        base(
            paymentMethodType=other,
            paymentInstrumentId=instrument,
            customerEmail="buyer@example.com",
            amount=100,
            currency=CURRENCY_OF[other],
        ),
        409,
    )
    assert "paymentInstrumentId" in msg and "instrument" in msg
    msg = api.error(
        "POST",
        "/payment",
        base(
            customerEmail="stranger@example.com",
            amount=100,
            currency=currency,
            paymentMethodType=method,
            paymentInstrumentId=instrument,
        ),
        409,
    )
    assert "another customer" in msg


@pytest.mark.parametrize(
    ("instrument", "status"),
    [("pi_test_success", 1), ("pi_test_pending", 2), ("pi_test_failure", 3), ("pi_test_3ds", 5)],
)
@pytest.mark.parametrize("method", sorted(CURRENCY_OF))
def test_test_instruments_force_status_for_every_method(
    api: Api, method: str, instrument: str, status: int
) -> None:
    # 9.03 would be a failure by amount: the instrument takes precedence
    amount = 903 if CURRENCY_OF[method] in {"KRW", "IDR"} else 9.03
    data = api.pay(
        paymentMethodType=method, paymentInstrumentId=instrument, amount=amount, currency=CURRENCY_OF[method]
    )
    assert data["status"] == status
    if status == 5:
        action = data["action"]
        assert action["method"] == "POST" and action["postData"]["MD"] == data["orderId"]
        assert action["postData"]["TermUrl"] == "https://shop.example/r"
        assert action["type"] == method and action["redirectUrl"].startswith("https://")
    else:
        assert "action" not in data


@pytest.mark.parametrize(("minor", "status"), [(901, 1), (902, 2), (903, 3), (905, 5), (1902, 2)])
@pytest.mark.parametrize("method", sorted(CURRENCY_OF))
def test_test_amounts_force_status_for_every_method(api: Api, method: str, minor: int, status: int) -> None:
    currency = CURRENCY_OF[method]
    digits = {"KRW": 0, "IDR": 2}.get(currency, 2)
    amount = Decimal(minor).scaleb(-digits)
    instrument = "pi_test_default" if method in NEEDS_INSTRUMENT else None
    body = {"paymentMethodType": method, "amount": amount, "currency": currency}
    if instrument:
        body["paymentInstrumentId"] = instrument
    response = api.http.post("/payment", content=_json(base(**body)))
    data = response.json()["data"]
    assert data["status"] == status, data
    if status == 5:
        expected = "POST" if method == "CARD" else "GET"
        assert data["action"]["method"] == expected


def _json(body: dict[str, Any]) -> bytes:
    from toolkit.models import to_json_bytes

    return to_json_bytes(body)


@pytest.mark.parametrize(("method", "status"), [("CARD", 1), ("UPI", 2)] + [(m, 5) for m in WALLETS])
def test_method_defaults(api: Api, method: str, status: int) -> None:
    body: dict[str, Any] = {"paymentMethodType": method, "amount": 100, "currency": CURRENCY_OF[method]}
    if method in NEEDS_INSTRUMENT:
        body["paymentInstrumentId"] = "pi_test_default"
    data = api.pay(**body)
    assert data["status"] == status


def _png_matrix(png: bytes, size: int) -> list[list[bool]]:
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == ((size + 2 * BORDER) * SCALE,) * 2

    def dark(x: int, y: int) -> bool:
        value = image.getpixel(((BORDER + x) * SCALE + SCALE // 2, (BORDER + y) * SCALE + SCALE // 2))
        assert isinstance(value, int)
        return value < 128

    return [[dark(x, y) for x in range(size)] for y in range(size)]


def _data_url_bytes(value: str, media_type: str) -> bytes:
    prefix = f"data:{media_type};base64,"
    assert value.startswith(prefix)
    return base64.b64decode(value[len(prefix) :], validate=True)


@pytest.mark.parametrize("method", WALLETS)
def test_wallet_next_action_has_a_real_qr_code(api: Api, method: str) -> None:
    before = now_ms() // 1000
    body: dict[str, Any] = {"paymentMethodType": method, "amount": 100, "currency": CURRENCY_OF[method]}
    if method in NEEDS_INSTRUMENT:
        body["paymentInstrumentId"] = "pi_test_default"
    data = api.pay(**body)
    assert PaymentResult.model_validate(data).action is not None  # what the client reads
    action = data["action"]
    assert action["method"] == "GET" and action["type"] == method
    assert action["paymentMethodType"] == method
    assert action["redirectUrl"] == f"https://checkout.sandbox.invalid/pay/{data['orderId']}"
    wallet = action["walletHandleRedirectOrDisplayQrCode"]
    assert wallet["expiresSecond"] == 900
    assert before + 890 <= wallet["expiresAt"] <= before + 910
    assert wallet["fallbackUrl"].startswith("https://") and wallet["mobileAuthUrl"]
    assert ("packageName" in wallet) == (method in {"ALIPAY", "WECHAT", "GCASH", "TNG", "KAKAO", "CASHAPP"})
    # imageDataUrl: a PNG holding exactly the modules of segno's QR code of the redirect URL (mask
    # fixed), which an independent decoder reads back without needing any error correction
    png = _data_url_bytes(wallet["imageDataUrl"], "image/png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    expected = segno.make_qr(action["redirectUrl"], error="m", mask=MASK)
    size = int(expected.symbol_size(scale=1, border=0)[0])
    assert _png_matrix(png, size) == [[bool(cell) for cell in row] for row in expected.matrix]
    assert decode_png(png) == Decoded(action["redirectUrl"], int(expected.version), "M", MASK)
    # the image URLs: absolute, on this sandbox, public, and the same code
    base = f"{api.sandbox.base_url}/sandbox/qr/{data['orderId']}"
    assert (wallet["imageUrlPng"], wallet["imageUrlSvg"]) == (f"{base}.png", f"{base}.svg")
    served = httpx.get(wallet["imageUrlPng"])
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    assert served.content == png
    svg_response = httpx.get(wallet["imageUrlSvg"])
    assert svg_response.status_code == 200 and svg_response.headers["content-type"] == "image/svg+xml"
    svg = ET.fromstring(svg_response.content)  # noqa: S314 - our own server's output
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert int(float(svg.attrib["width"])) == (size + 2 * BORDER) * SCALE
    assert decode_svg(svg_response.content).text == action["redirectUrl"]


def test_qr_images_are_404_unless_a_wallet_payment_has_them(api: Api) -> None:
    card = api.pay(paymentMethodType="CARD", paymentInstrumentId="pi_test_default", amount=1, currency="USD")
    wallet = api.pay(paymentMethodType="GCASH", amount=100, currency="PHP")
    for order_id in (card["orderId"], "ord_" + "0" * 32, "nope", "..", "%F0%9F%92%B3"):
        for kind in ("png", "svg"):
            response = api.http.get(f"/sandbox/qr/{order_id}.{kind}")
            assert response.status_code == 404, order_id
            assert response.json() == {"code": 404, "msg": response.json()["msg"], "data": None}
            assert "orderId" in response.json()["msg"]
    assert api.http.get(f"/sandbox/qr/{wallet['orderId']}.gif").status_code == 404
    api.ok("POST", "/sandbox/reset")
    assert (
        httpx.get(wallet["action"]["walletHandleRedirectOrDisplayQrCode"]["imageUrlPng"]).status_code == 404
    )


def test_image_urls_follow_the_host_the_client_used(api: Api) -> None:
    response = api.http.post(
        "/payment",
        content=_json(base(paymentMethodType="QRIS", paymentInstrumentId=None, amount=10000, currency="IDR")),
        headers={"Host": "sandbox.test:8080"},
    )
    wallet = response.json()["data"]["action"]["walletHandleRedirectOrDisplayQrCode"]
    assert wallet["imageUrlPng"].startswith("http://sandbox.test:8080/sandbox/qr/ord_")
    again = api.pay(paymentMethodType="QRIS", amount=10000, currency="IDR")
    assert again["action"]["walletHandleRedirectOrDisplayQrCode"]["imageUrlSvg"].startswith(
        f"{api.sandbox.base_url}/sandbox/qr/ord_"
    )


def test_qr_images_need_no_key_and_may_be_cached(api: Api) -> None:
    data = api.pay(paymentMethodType="WECHAT", amount=1, currency="CNY")
    for url in data["action"]["walletHandleRedirectOrDisplayQrCode"].values():
        if isinstance(url, str) and url.startswith(api.sandbox.base_url):
            response = httpx.get(url)  # no X-API-KEY, no X-Timestamp: a customer's browser
            assert response.status_code == 200
            assert response.headers["cache-control"] == "public, max-age=86400, immutable"
            assert httpx.get(url).content == response.content


def _product(api: Api, **price: Any) -> tuple[str, str]:
    data = api.ok("POST", "/product", product_body(**price))
    return data["productId"], data["priceList"][0]["priceId"]


def test_price_payment_and_currency_rules(api: Api) -> None:
    product, price = _product(api, unitAmount=10, currency="USD", currencyOptions={"EUR": 9.50})
    data = api.pay(
        productId=product, priceId=price, paymentMethodType="CARD", paymentInstrumentId="pi_test_default"
    )
    assert (data["currency"], Decimal(str(data["amount"]))) == ("USD", Decimal("10.00"))
    fixed = api.pay(
        productId=product,
        priceId=price,
        paymentCurrency="EUR",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert (fixed["currency"], Decimal(str(fixed["amount"]))) == ("EUR", Decimal("9.50"))
    converted = api.pay(
        productId=product,
        priceId=price,
        paymentCurrency="JPY",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert (converted["currency"], converted["amount"]) == ("JPY", 1500)
    kwd = api.http.post(
        "/payment",
        content=_json(
            base(productId=product, priceId=price, amount=None, currency=None, paymentCurrency="KWD")
        ),
    )
    assert b'"amount":3.070' in kwd.content
    rows = api.ok("GET", "/sandbox/payments")["payments"]
    assert [(r["pricingCurrency"], r["currency"]) for r in rows] == [
        ("USD", "USD"),
        ("USD", "EUR"),
        ("USD", "JPY"),
        ("USD", "KWD"),
    ]


def test_conversion_rounds_half_even(api: Api) -> None:
    # 0.05 USD * 7.2 = 0.36 CNY exact; 1.25 JPY... use JPY -> USD: 75 JPY / 150 = 0.50 USD,
    # 1 JPY -> 0.00666.. USD rounds to 0.01; 3 JPY = 0.02 USD exactly
    data = api.pay(
        amount=1,
        currency="JPY",
        paymentCurrency="USD",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert Decimal(str(data["amount"])) == Decimal("0.01")
    # 12.5 KRW... KRW -> JPY: 1350 KRW = 150 JPY; 9 KRW = 1 JPY; 4.5 KRW = 0.5 JPY -> half-even
    data = api.pay(
        amount=1,
        currency="USD",
        paymentCurrency="JPY",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert data["amount"] == 150
    # 0.01 EUR -> JPY: 0.01 * 150 / 0.92 = 1.630... -> 2
    data = api.pay(
        amount=0.01,
        currency="EUR",
        paymentCurrency="JPY",
        paymentMethodType="CARD",
        paymentInstrumentId="pi_test_default",
    )
    assert data["amount"] == 2


def test_price_rules(api: Api) -> None:
    """Malformed is 400; an unknown product or price 404; a price that refuses the request 409."""
    product, price = _product(api)
    other, other_price = _product(api)
    rec = api.ok("POST", "/product", {"name": "Plan", "priceList": [recurring()]})
    cases = [
        (base(amount=None, currency=None, productId="prod_nope", priceId=price), 404, "productId", "unknown"),
        (
            base(amount=None, currency=None, productId=product, priceId="price_nope"),
            404,
            "priceId",
            "unknown",
        ),
        (
            base(amount=None, currency=None, productId=product, priceId=other_price),
            404,
            "priceId",
            "in product",
        ),
        (
            base(
                amount=None, currency=None, productId=rec["productId"], priceId=rec["priceList"][0]["priceId"]
            ),
            409,
            "priceId",
            "recurring",
        ),
        (base(productId=product, priceId=price), 400, "amount", "not allowed together with priceId"),
        (
            base(amount=None, currency="EUR", productId=product, priceId=price),
            409,
            "currency",
            "differs from the price",
        ),
    ]
    for body, status, field, rule in cases:
        msg = api.error("POST", "/payment", body, status)
        assert field in msg and rule in msg, msg
    api.ok("POST", f"/sandbox/prices/{price}/deactivate")
    msg = api.error(
        "POST", "/payment", base(amount=None, currency=None, productId=product, priceId=price), 409
    )
    assert "inactive" in msg
    assert other
