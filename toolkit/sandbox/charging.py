"""The rules of a one-time payment (POST /payment): who the customer is, which instrument pays,
what is charged in which currency, the outcome, and the next action; and a payment as the
settlement export reports it.

Like ``billing.py`` for subscriptions, these are the service's rules computed on stored rows,
with no web framework in them: the routes parse, call and answer. A refusal is raised as the sandbox's
``BadRequest``, ``NotFound`` or ``Conflict``, which the app answers with its error envelope.
"""

from __future__ import annotations

import base64
import sqlite3
from dataclasses import dataclass
from typing import Any

from toolkit.control_models import SubscriptionCreateRequest
from toolkit.models import AUTO_INSTRUMENT_METHODS, PaymentMethodType, PaymentRequest
from toolkit.money import MoneyError, from_minor, to_minor
from toolkit.sandbox import rules, store
from toolkit.sandbox.checkout import CHECKOUT_QR, checkout_url
from toolkit.sandbox.db import TEST_INSTRUMENTS
from toolkit.sandbox.http import BadRequest, Conflict, NotFound


@dataclass(frozen=True)
class CreatedPayment:
    """A payment just written, and what its answer needs."""

    data: dict[str, Any]
    method: PaymentMethodType
    forced: int | None  # the outcome a test instrument forced, if any
    return_url: str
    expires_at: int | None
    now: int

    def answer(self, *, images: str) -> dict[str, Any]:
        """The answer's data, with the next action of a payment that needs one. Built after the
        write transaction: a wallet's QR code need not hold the write lock. ``images`` is the base
        URL the QR images are named under (``http.image_base``)."""
        if self.data["status"] != rules.NEXT_ACTION:
            return self.data
        assert self.expires_at is not None
        order_id = str(self.data["orderId"])
        if self.forced == rules.NEXT_ACTION or self.method is PaymentMethodType.CARD:
            action = card_action(method=self.method.value, order_id=order_id, return_url=self.return_url)
        else:
            action = wallet_action(
                method=self.method,
                order_id=order_id,
                expires_at_ms=self.expires_at,
                now=self.now,
                images=images,
            )
        return {**self.data, "action": action}


def create_payment(conn: sqlite3.Connection, req: PaymentRequest, *, now: int) -> CreatedPayment:
    """Decide and write one payment, inside the caller's write transaction.

    The customer, the instrument and the charge are resolved under the spec's rules, the outcome
    is decided (``rules.decide_outcome``), and the session and order are written.
    """
    method = req.paymentMethodType
    customer_id, instrument_id, forced = resolve_payer(conn, req, now=now)
    charge = resolve_charge(conn, req=req)
    status = rules.decide_outcome(
        method=method,
        instrument_outcome=forced,
        pricing_minor=charge.pricing_minor,
        charged_minor=charge.amount_minor,
    )
    ttl = {rules.NEXT_ACTION: rules.NEXT_ACTION_TTL_MS, rules.PENDING: rules.PENDING_TTL_MS}.get(status)
    expires_at = None if ttl is None else now + ttl
    session_id = store.new_id("ses_")  # a checkout session: an id on its order
    order_id = store.new_id("ord_")
    store.insert_order(
        conn,
        order={
            "id": order_id,
            "session_id": session_id,
            "customer_id": customer_id,
            "method": method.value,
            "instrument_id": instrument_id,
            "merchant_reference_id": req.merchantReferenceId,
            "product_id": charge.product_id,
            "price_id": charge.price_id,
            "amount_minor": charge.amount_minor,
            "currency": charge.currency,
            "pricing_minor": charge.pricing_minor,
            "pricing_currency": charge.pricing_currency,
            "status": status,
            "failure_reason": None,
            "metadata": store.dumps(req.metadata),
            "expires_at": expires_at,
            "create_time": now,
            "update_time": now,
        },
    )
    data: dict[str, Any] = {
        "orderId": order_id,
        "sessionId": session_id,
        "paymentInstrumentId": instrument_id,
        "status": status,
        "amount": from_minor(charge.amount_minor, charge.currency),
        "currency": charge.currency,
    }
    return CreatedPayment(data, method, forced, req.returnUrl, expires_at, now)


@dataclass(frozen=True)
class Charge:
    """What a payment charges: the pricing amount, and the amount in the payment currency."""

    product_id: str | None
    price_id: str | None
    pricing_minor: int
    pricing_currency: str
    amount_minor: int
    currency: str


def resolve_payer(
    conn: sqlite3.Connection, req: PaymentRequest | SubscriptionCreateRequest, *, now: int
) -> tuple[str, str, int | None]:
    """Who pays, for a payment or a subscription alike: the customer, the instrument, and the
    outcome a test instrument forces (``resolve_customer``, then ``resolve_instrument``)."""
    customer_id = resolve_customer(
        conn,
        customer_id=req.customerId,
        email=req.customerEmail,
        reference_id=req.referenceCustomerId,
        now=now,
    )
    instrument_id, forced = resolve_instrument(
        conn,
        instrument_id=req.paymentInstrumentId,
        customer_id=customer_id,
        method=req.paymentMethodType,
        now=now,
    )
    return customer_id, instrument_id, forced


def resolve_customer(
    conn: sqlite3.Connection,
    *,
    customer_id: str | None,
    email: str | None,
    reference_id: str | None,
    now: int,
) -> str:
    """customerId must exist; else find by referenceCustomerId, then e-mail; else create."""
    if customer_id is not None:
        customer = store.get_customer(conn, customer_id=customer_id)
        if customer is None:
            raise NotFound(f"customerId: unknown customer {customer_id!r}")
        if reference_id is not None:
            bound = store.find_customer(conn, email=None, reference_id=reference_id)
            if bound is not None and bound["id"] != customer_id:
                raise Conflict("referenceCustomerId", "already bound to another customer")
            if customer["reference_id"] not in (None, reference_id):  # was dropped unsaid
                raise Conflict("referenceCustomerId", "the customer is bound to another referenceCustomerId")
            store.bind_reference(conn, customer_id=customer_id, reference_id=reference_id)
        return customer_id
    found = store.find_customer(conn, email=email, reference_id=reference_id)
    if found is not None:
        if reference_id is not None and found["reference_id"] is None:
            store.bind_reference(conn, customer_id=found["id"], reference_id=reference_id)
            return str(found["id"])
        if reference_id is None or found["reference_id"] == reference_id:
            return str(found["id"])
    return store.insert_customer(conn, email=email, reference_id=reference_id, now=now)


def resolve_instrument(
    conn: sqlite3.Connection,
    *,
    instrument_id: str | None,
    customer_id: str,
    method: PaymentMethodType,
    now: int,
) -> tuple[str, int | None]:
    """The instrument to use and the outcome it forces (test instruments only)."""
    if instrument_id is None:
        # The model already refused methods that cannot create an instrument (spec rule 3).
        assert method in AUTO_INSTRUMENT_METHODS
        return store.insert_instrument(conn, customer_id=customer_id, method=method.value, now=now), None
    if instrument_id in TEST_INSTRUMENTS:
        # Seeded rows (no customer, no method, the outcome of TEST_INSTRUMENTS), put back by every
        # reset and never updated: the constant answers what reading the row would.
        return instrument_id, TEST_INSTRUMENTS[instrument_id]
    row = store.get_instrument(conn, instrument_id=instrument_id)
    if row is None:
        raise NotFound(f"paymentInstrumentId: unknown payment instrument {instrument_id!r}")
    if row["customer_id"] is not None and row["customer_id"] != customer_id:
        raise Conflict("paymentInstrumentId", "belongs to another customer")
    if row["method"] is not None and row["method"] != method.value:
        raise Conflict("paymentInstrumentId", f"is a {row['method']} instrument, not {method.value}")
    outcome = row["test_outcome"]
    return instrument_id, None if outcome is None else int(outcome)


def active_price(conn: sqlite3.Connection, *, product_id: str, price_id: str) -> sqlite3.Row:
    """The price, after checking the product exists, the price is the product's, and it is active."""
    if store.get_product(conn, product_id=product_id) is None:
        raise NotFound(f"productId: unknown product {product_id!r}")
    price = store.get_price(conn, price_id=price_id)
    if price is None:
        raise NotFound(f"priceId: unknown price {price_id!r}")
    if price["product_id"] != product_id:
        raise NotFound(f"priceId: no price {price_id!r} in product {product_id!r}")
    if not price["active"]:
        raise Conflict("priceId", "the price is inactive")
    return price


def resolve_charge(conn: sqlite3.Connection, *, req: PaymentRequest) -> Charge:
    """Spec rules 1 and 2: what is charged, in which currency, and whether the method allows it."""
    fixed: dict[str, int] = {}
    if req.priceId is not None:  # without an amount (PaymentRequest refuses both)
        price = active_price(conn, product_id=str(req.productId), price_id=req.priceId)
        if price["price_type"] == "recurring":
            raise Conflict("priceId", "is a recurring price; a one-time payment needs a one_time price")
        if req.currency is not None and req.currency != price["currency"]:
            raise Conflict(
                "currency",
                f"differs from the price's currency {price['currency']}; "
                "use paymentCurrency to charge in another currency",
            )
        pricing_minor, pricing_currency = int(price["unit_minor"]), str(price["currency"])
        fixed = store.loads(price["currency_options"]) or {}
        product_id, price_id = req.productId, req.priceId
    else:
        assert req.amount is not None and req.currency is not None
        if req.productId is not None and store.get_product(conn, product_id=req.productId) is None:
            raise NotFound(f"productId: unknown product {req.productId!r}")
        pricing_currency = req.currency
        rules.check_magnitude(req.amount, "amount")
        pricing_minor = to_minor(req.amount, pricing_currency)
        product_id, price_id = req.productId, None
    currency = req.paymentCurrency or pricing_currency
    method = req.paymentMethodType
    supported = rules.METHOD_CURRENCIES[method]
    if currency not in supported:
        field = "paymentCurrency" if req.paymentCurrency else ("priceId" if req.priceId else "currency")
        rule = f"{currency} is not supported by {method.value} (supported: {', '.join(supported)})"
        if field == "priceId" and req.currency is None:
            raise Conflict(field, rule)  # the request names no currency: the stored price's refuses it
        raise BadRequest(field, rule)
    if currency == pricing_currency:
        amount_minor = pricing_minor
    elif currency in fixed:
        amount_minor = int(fixed[currency])
    else:
        try:
            converted = rules.convert(from_minor(pricing_minor, pricing_currency), pricing_currency, currency)
            amount_minor = to_minor(converted, currency)
        except (rules.FxError, MoneyError) as exc:
            if req.priceId is None and pricing_currency not in rules.FX_PER_USD:
                raise BadRequest("currency", str(exc)) from None  # a currency the sandbox never converts
            # The rates decide (a live service's move; the sandbox's are a table), or the stored price.
            raise Conflict("paymentCurrency", str(exc)) from None
    return Charge(product_id, price_id, pricing_minor, pricing_currency, amount_minor, currency)


def card_action(*, method: str, order_id: str, return_url: str) -> dict[str, Any]:
    """3-D Secure style authentication: POST postData to redirectUrl."""
    token = base64.urlsafe_b64encode(f"sandbox-3ds:{order_id}".encode()).decode("ascii")
    return {
        "type": method,
        "method": "POST",
        "redirectUrl": f"{rules.ACS_BASE}/challenge/{order_id}",
        "paymentMethodType": method,
        "postData": {"MD": order_id, "PaReq": token, "TermUrl": return_url},
    }


def wallet_action(
    *, method: PaymentMethodType, order_id: str, expires_at_ms: int, now: int, images: str
) -> dict[str, Any]:
    """Wallet or QR next action: GET redirectUrl, or scan the QR code, before expiresAt.

    The images are URLs under ``images`` (served by ``routes.images``, built when first asked
    for); only ``imageDataUrl`` carries a PNG in the response, drawn from the checkout family's
    template in tens of microseconds.
    """
    redirect = checkout_url(order_id)
    app = rules.WALLETS[method]
    mobile = (
        f"{rules.CHECKOUT_BASE}/app/{order_id}"
        if app.scheme == "https"
        else f"{app.scheme}://pay?orderId={order_id}"
    )
    wallet: dict[str, Any] = {
        "imageUrlPng": f"{images}{order_id}.png",
        "imageUrlSvg": f"{images}{order_id}.svg",
        "imageDataUrl": CHECKOUT_QR.png_data_url(redirect),
        "hostedInstructionsUrl": f"{rules.CHECKOUT_BASE}/instructions/{order_id}",
        "mobileAuthUrl": mobile,
        "fallbackUrl": redirect,
        "expiresAt": expires_at_ms // 1000,
        "expiresSecond": max(0, (expires_at_ms - now) // 1000),
    }
    if app.package is not None:
        wallet["packageName"] = app.package
    return {
        "type": method.value,
        "method": "GET",
        "redirectUrl": redirect,
        "paymentMethodType": method.value,
        "walletHandleRedirectOrDisplayQrCode": wallet,
    }


def export_record(row: sqlite3.Row) -> dict[str, Any]:
    """One settlement-export record (amounts exact Decimals with the currency's digits)."""
    return {
        "orderId": row["id"],
        "merchantReferenceId": row["merchant_reference_id"],
        "customerId": row["customer_id"],
        "paymentMethodType": row["method"],
        "paymentInstrumentId": row["instrument_id"],
        "amount": from_minor(row["amount_minor"], row["currency"]),
        "currency": row["currency"],
        "pricingAmount": from_minor(row["pricing_minor"], row["pricing_currency"]),
        "pricingCurrency": row["pricing_currency"],
        "status": rules.STATUS_NAMES[int(row["status"])],
        "createTime": int(row["create_time"]),
        "updateTime": int(row["update_time"]),
    }
