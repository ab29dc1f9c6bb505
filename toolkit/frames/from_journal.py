"""Frames of what the journal recorded: payments, products and their prices.

Each row is one journaled create call, keyed by its business key, with the journal's columns
(``environment``, ``requestTime``, ``outcomeTime``, ``outcomeState``, ``error``) beside the API's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from toolkit.frames import columns as col
from toolkit.frames.schemas import PaymentsSchema, PricesSchema, ProductsSchema
from toolkit.journal import UNKNOWN_STATES, Journal, JournalRecord
from toolkit.models import PAYMENT_STATUS_NAMES, PaymentStatus


def _records(source: Journal | Iterable[JournalRecord], kind: str) -> list[JournalRecord]:
    if isinstance(source, Journal):
        return source.records(kind)  # type: ignore[arg-type]
    return [record for record in source if record.kind == kind]


def _journal_columns(records: Sequence[JournalRecord]) -> dict[str, Any]:
    return {
        "environment": col.strings([r.environment for r in records]),
        "requestTime": col.times([r.requestTime for r in records]),
        "outcomeTime": col.times([r.outcomeTime for r in records]),
        "outcomeState": col.strings([r.state for r in records]),
        "error": col.strings([r.error for r in records]),
    }


def _charged(request: dict[str, Any], response: dict[str, Any]) -> tuple[Any, Any]:
    """The amount and its currency: what the service answered, else what was asked for, in the
    currency it was asked in (a call without an answer converted nothing: 10.50 USD asked to be
    paid in JPY is not 10.50 JPY, which is no amount at all)."""
    if response.get("amount") is not None:
        return response["amount"], (
            response.get("currency") or request.get("paymentCurrency") or request.get("currency")
        )
    return request.get("amount"), request.get("currency")


def _status_name(record: JournalRecord) -> str | None:
    if record.state in UNKNOWN_STATES:
        return "unknown"
    status = (record.response or {}).get("status")
    if record.state != "succeeded" or status is None:
        return None
    try:
        return PaymentStatus(int(status)).label
    except ValueError:
        return None


# Long: the frame's columns, declared one by one in the order the frame has them.
def payments_frame(
    source: Journal | Iterable[JournalRecord], *, include_failed_calls: bool = False
) -> pd.DataFrame:
    """Payments as the journal knows them.

    Calls the service refused or that never left created nothing at the processor, so they are
    left out unless ``include_failed_calls``; calls with an unknown outcome are always in, with
    status ``unknown`` and the amount that was asked for. ``pricingAmount`` and
    ``pricingCurrency`` are what was asked for, or for a payment by ``priceId`` the price of the
    journal's own product (``prices_frame``), so that books kept in the pricing currency match.
    ``status`` is the settled status once the journal has recorded a settlement (a pending payment
    resolved at the sandbox, ``SandboxControls.resolve_payment``), with ``settledTime``; the status
    the service answered stays in ``answeredStatus``.
    """
    settled = source.settlements() if isinstance(source, Journal) else {}
    source = source if isinstance(source, Journal) else list(source)  # read twice: payments, prices
    catalog = _catalog_prices(source)
    records = [
        r
        for r in _records(source, "payment")
        if include_failed_calls or r.state == "succeeded" or r.state in UNKNOWN_STATES
    ]
    keys = [r.key for r in records]
    requests = [r.request for r in records]
    responses = [r.response or {} for r in records]
    actions = [resp.get("action") or {} for resp in responses]
    charged = [_charged(req, resp) for req, resp in zip(requests, responses, strict=True)]
    amounts = col.amounts([amount for amount, _ in charged])
    currencies = [currency for _, currency in charged]

    def asked(name: str) -> list[Any]:
        return [req.get(name) for req in requests]

    def answered(name: str) -> list[Any]:
        return [resp.get(name) for resp in responses]

    columns = {
        "orderId": col.strings(answered("orderId")),
        "sessionId": col.strings(answered("sessionId")),
        "paymentInstrumentId": col.strings(
            [
                resp.get("paymentInstrumentId") or req.get("paymentInstrumentId")
                for req, resp in zip(requests, responses, strict=True)
            ]
        ),
        "paymentMethodType": col.strings(asked("paymentMethodType")),
        "customerId": col.strings(asked("customerId")),
        "customerEmail": col.strings(asked("customerEmail")),
        "referenceCustomerId": col.strings(asked("referenceCustomerId")),
        "productId": col.strings(asked("productId")),
        "priceId": col.strings(asked("priceId")),
        "status": pd.Categorical(
            [
                settled[order][0].label if order in settled else _status_name(record)
                for order, record in zip(answered("orderId"), records, strict=True)
            ],
            categories=PAYMENT_STATUS_NAMES,
        ),
        "answeredStatus": pd.Categorical([_status_name(r) for r in records], categories=PAYMENT_STATUS_NAMES),
        "settledTime": col.times(
            [settled[order][1] if order in settled else None for order in answered("orderId")]
        ),
        "amount": col.objects(amounts),
        "amountMinor": col.minor_units(amounts, currencies, keys),
        "currency": col.strings(currencies),
        "pricingAmount": col.objects(
            col.amounts(
                [req.get("amount", catalog.get(str(req.get("priceId")), (None, None))[0]) for req in requests]
            )
        ),
        "pricingCurrency": col.strings(
            [req.get("currency") or catalog.get(str(req.get("priceId")), (None, None))[1] for req in requests]
        ),
        "actionType": col.strings([a.get("type") for a in actions]),
        "actionMethod": col.strings([a.get("method") for a in actions]),
        "redirectUrl": col.strings([a.get("redirectUrl") for a in actions]),
        "action": col.objects([a or None for a in actions]),
        "createTime": col.times(answered("createTime")),
        **_journal_columns(records),
    }
    return PaymentsSchema.validate(col.keyed(columns, keys))


def _catalog_prices(source: Journal | Iterable[JournalRecord]) -> dict[str, tuple[Any, str]]:
    """``priceId`` -> (unit amount, currency) of the prices of the journal's own products."""
    prices = prices_frame(source)
    return {
        str(price_id): (amount, str(currency))
        for price_id, amount, currency in zip(
            prices["priceId"], prices["unitAmount"], prices["currency"], strict=True
        )
        if isinstance(price_id, str) and isinstance(currency, str)
    }


def products_frame(source: Journal | Iterable[JournalRecord]) -> pd.DataFrame:
    """Products keyed by the catalog's merchantReferenceId (the merchant's SKU)."""
    records = _records(source, "product")
    keys = [r.key for r in records]
    req = [r.request for r in records]
    resp = [r.response or {} for r in records]
    columns = {
        "productId": col.strings([p.get("productId") for p in resp]),
        "name": col.strings([p.get("name") or q.get("name") for p, q in zip(resp, req, strict=True)]),
        "active": col.bools([p.get("active") for p in resp]),
        "description": col.strings(
            [p.get("description") or q.get("description") for p, q in zip(resp, req, strict=True)]
        ),
        "defaultPrice": col.strings([p.get("defaultPrice") for p in resp]),
        "image": col.strings([p.get("image") or q.get("image") for p, q in zip(resp, req, strict=True)]),
        "taxCategory": col.strings([q.get("taxCategory") for q in req]),
        "localizedNames": col.objects(
            [p.get("localizedNames") or q.get("localizedNames") for p, q in zip(resp, req, strict=True)]
        ),
        "priceCount": col.ints(
            [len(p.get("priceList") or q.get("priceList") or []) for p, q in zip(resp, req, strict=True)]
        ),
        "createTime": col.times([p.get("createTime") for p in resp]),
        "updateTime": col.times([p.get("updateTime") for p in resp]),
        **_journal_columns(records),
    }
    return ProductsSchema.validate(col.keyed(columns, keys))


def prices_frame(source: Journal | Iterable[JournalRecord]) -> pd.DataFrame:
    """One row per price of each journaled product, keyed by the product's merchantReferenceId.

    The response's price records carry no currency or type in the spec, so those come from the
    request (the service keeps the order of ``priceList``), unless the response sends them.
    """
    rows: list[tuple[JournalRecord, dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    for record in _records(source, "product"):
        asked = record.request.get("priceList") or []
        answered = (record.response or {}).get("priceList") or [{} for _ in asked]
        default = (record.response or {}).get("defaultPrice")
        for position, price in enumerate(answered):
            request_price = asked[position] if position < len(asked) else {}
            rows.append((record, price, request_price, {"default": default}))
    keys = [r.key for r, _, _, _ in rows]
    currencies = [p.get("currency") or q.get("currency") for _, p, q, _ in rows]
    amounts = col.amounts([p.get("unitAmount", q.get("unitAmount")) for _, p, q, _ in rows])
    details = [q.get("recurringDetails") or {} for _, _, q, _ in rows]
    recurring = [p.get("recurring") or {} for _, p, _, _ in rows]
    columns = {
        "productId": col.strings(
            [p.get("productId") or (r.response or {}).get("productId") for r, p, _, _ in rows]
        ),
        "priceId": col.strings([p.get("priceId") for _, p, _, _ in rows]),
        "priceSnapshotId": col.strings([p.get("priceSnapshotId") for _, p, _, _ in rows]),
        "currency": col.strings(currencies),
        "unitAmount": col.objects(amounts),
        "unitAmountMinor": col.minor_units(amounts, currencies, keys),
        "priceType": col.strings(
            [p.get("priceType") or q.get("priceType") or "one_time" for _, p, q, _ in rows]
        ),
        "interval": col.strings(
            [p.get("interval") or d.get("interval") for (_, p, _, _), d in zip(rows, details, strict=True)]
        ),
        "intervalCount": col.ints(
            [
                rc.get("intervalCount", d.get("intervalCount"))
                for rc, d in zip(recurring, details, strict=True)
            ]
        ),
        "trialPeriodDays": col.ints(
            [
                rc.get("trialPeriodDays", d.get("trialPeriodDays"))
                for rc, d in zip(recurring, details, strict=True)
            ]
        ),
        "isDefaultPrice": col.bools(
            [
                (p.get("priceId") == extra["default"]) if p.get("priceId") else q.get("isDefaultPrice")
                for _, p, q, extra in rows
            ]
        ),
        "active": col.bools([p.get("active") for _, p, _, _ in rows]),
        "currencyOptions": col.objects(
            [p.get("currencyOptions") or q.get("currencyOptions") for _, p, q, _ in rows]
        ),
        "createTime": col.times([p.get("createTime") for _, p, _, _ in rows]),
        "environment": col.strings([r.environment for r, _, _, _ in rows]),
    }
    return PricesSchema.validate(col.keyed(columns, keys))
