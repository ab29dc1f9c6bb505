"""Journal records and API models as pandas frames keyed by ``merchantReferenceId``, schema-checked.

Columns carry the API's own field names, so they can be looked up in ``api-spec.md``, plus the
journal's (``environment``, ``requestTime``, ``outcomeTime``, ``outcomeState``, ``error``). The key
is the index and may repeat: a double charge is a real thing and is never dropped.

Money is exact: each amount is a column of ``Decimal`` (as the API wrote it) and a column of
integer minor units (``amountMinor``) for arithmetic. Timestamps (the spec's milliseconds) are
timezone-aware UTC. Text is Arrow-backed, which keeps building and checking 100,000 rows fast.
Each frame is checked against its pandera schema when it is built.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pyarrow as pa_arrow
import pyarrow.compute as pc
from pandera.typing import Index, Series

from toolkit.errors import FrameError
from toolkit.journal import UNKNOWN_STATES, Journal, JournalRecord
from toolkit.models import (
    PAYMENT_STATUS_NAMES,
    InvoicePrice,
    InvoiceRecurring,
    PaymentStatus,
    Subscription,
)
from toolkit.money import minor_digits

STRING = pd.StringDtype("pyarrow")
KEY = "merchantReferenceId"
SUBSCRIPTION_STATES: tuple[str, ...] = ("trialing", "active", "canceled")


def _text() -> Any:
    """Schema field: nullable Arrow-backed text."""
    return pa.Field(nullable=True, dtype_kwargs={"storage": "pyarrow"})


def _utc() -> Any:
    """Schema field: nullable UTC timestamp."""
    return pa.Field(nullable=True, dtype_kwargs={"unit": "ms", "tz": "UTC"})


# ---------------------------------------------------------------------------------------------
# Column builders: one list in, one typed column out.


def _strings(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    """Arrow-backed text, built by pyarrow straight from the Python strings (None -> NA)."""
    return pd.arrays.ArrowStringArray(pa_arrow.array(values, type=pa_arrow.large_string()))


def _nullable(values: Any, kind: Any, fill: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Values and missing-mask as numpy arrays, converted by pyarrow (None -> masked)."""
    array = values if isinstance(values, pa_arrow.Array) else pa_arrow.array(values, type=kind)
    mask = array.is_null().to_numpy(zero_copy_only=False)
    return array.fill_null(fill).to_numpy(zero_copy_only=False, writable=True), mask


def _ints(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    data, mask = _nullable(values, pa_arrow.int64(), 0)
    return pd.arrays.IntegerArray(data, mask)


def _bools(values: Sequence[Any]) -> pd.api.extensions.ExtensionArray:
    data, mask = _nullable(values, pa_arrow.bool_(), False)
    return pd.arrays.BooleanArray(data, mask)


def _times(values: Sequence[Any]) -> pd.DatetimeIndex:
    """Milliseconds since the epoch -> UTC datetimes (None -> NaT)."""
    data, mask = _nullable(values, pa_arrow.int64(), 0)
    data[mask] = np.iinfo(np.int64).min  # NaT
    return pd.DatetimeIndex(data.view("datetime64[ms]")).tz_localize("UTC")


def _objects(values: Sequence[Any]) -> np.ndarray[Any, Any]:
    """Python objects kept as they are: Decimals (exact amounts), dicts (actions, localized names)."""
    return np.fromiter(values, dtype=object, count=len(values))


def minor_units(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None], keys: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    """The money column of every frame: exact integer minor units (Int64), never float.

    An amount finer than its currency allows is an error naming the key, not rounded. The common
    case is vectorised in pyarrow; anything it refuses goes through the exact row-by-row path.
    """
    try:
        return _minor_arrow(amounts, currencies)
    except (pa_arrow.ArrowException, TypeError, ValueError, OverflowError):
        return _minor_exact(amounts, currencies, keys)  # names the offending key, or copes with size


def _minor_arrow(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    """Vectorised: every amount as decimal128 at the finest scale present, then divided per row.

    Raises (the caller then takes the row-by-row path) if an amount has more decimals than the
    finest currency present allows, does not fit, or is not whole in its own currency's minor unit.
    """
    codes = pa_arrow.array(currencies, type=pa_arrow.string()).dictionary_encode()
    digits_of = np.array([minor_digits(c) for c in codes.dictionary.to_pylist()] or [0], dtype=np.int64)
    finest = int(digits_of.max())
    scaled = pc.multiply(
        pa_arrow.array(amounts, type=pa_arrow.decimal128(30, finest)),
        pa_arrow.scalar(Decimal(10**finest), type=pa_arrow.decimal128(finest + 1, 0)),
    )
    data, mask = _nullable(pc.cast(scaled, pa_arrow.int64()), None, 0)
    mask |= codes.is_null().to_numpy(zero_copy_only=False)
    divisor = 10 ** (finest - digits_of[codes.indices.fill_null(0).to_numpy(zero_copy_only=False)])
    if np.any((data % divisor != 0) & ~mask):
        raise ValueError("an amount is finer than its currency allows")
    data //= divisor
    data[mask] = 0
    return pd.arrays.IntegerArray(data, mask)


def _minor_exact(
    amounts: Sequence[Decimal | None], currencies: Sequence[str | None], keys: Sequence[str | None]
) -> pd.api.extensions.ExtensionArray:
    out: list[int | None] = []
    digits_of: dict[str, int] = {}
    for amount, currency, key in zip(amounts, currencies, keys, strict=True):
        if amount is None or currency is None:
            out.append(None)
            continue
        digits = digits_of.get(currency)
        if digits is None:
            digits = digits_of[currency] = minor_digits(currency)
        scaled = amount.scaleb(digits)
        whole = int(scaled)
        if whole != scaled:
            raise FrameError(f"{KEY} {key!r}: {amount} {currency} has more decimals than {currency} allows")
        out.append(whole)
    return _ints(out)


def _amounts(values: Sequence[Any]) -> list[Decimal | None]:
    """Amounts as exact Decimals: JSON writes whole amounts (13500 KRW) as integers."""
    return [None if v is None else v if isinstance(v, Decimal) else Decimal(v) for v in values]


def _frame(columns: dict[str, Any], keys: Sequence[str | None]) -> pd.DataFrame:
    return pd.DataFrame(columns, index=pd.Index(_strings(keys), name=KEY))


def _records(source: Journal | Iterable[JournalRecord], kind: str) -> list[JournalRecord]:
    if isinstance(source, Journal):
        return source.records(kind)  # type: ignore[arg-type]
    return [record for record in source if record.kind == kind]


def _journal_columns(records: Sequence[JournalRecord]) -> dict[str, Any]:
    return {
        "environment": _strings([r.environment for r in records]),
        "requestTime": _times([r.requestTime for r in records]),
        "outcomeTime": _times([r.outcomeTime for r in records]),
        "outcomeState": _strings([r.state for r in records]),
        "error": _strings([r.error for r in records]),
    }


class _JournalColumns(pa.DataFrameModel):
    environment: Series[pd.StringDtype] = _text()
    requestTime: Series[pd.DatetimeTZDtype] = _utc()
    outcomeTime: Series[pd.DatetimeTZDtype] = _utc()
    outcomeState: Series[pd.StringDtype] = _text()
    error: Series[pd.StringDtype] = _text()


# ---------------------------------------------------------------------------------------------
# Payments


class PaymentsSchema(_JournalColumns):
    """One row per journaled payment; ``status`` is ``unknown`` when the outcome is not known."""

    merchantReferenceId: Index[pd.StringDtype] = _text()
    orderId: Series[pd.StringDtype] = _text()
    sessionId: Series[pd.StringDtype] = _text()
    paymentInstrumentId: Series[pd.StringDtype] = _text()
    paymentMethodType: Series[pd.StringDtype] = _text()
    customerId: Series[pd.StringDtype] = _text()
    customerEmail: Series[pd.StringDtype] = _text()
    referenceCustomerId: Series[pd.StringDtype] = _text()
    productId: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    status: Series[pd.CategoricalDtype] = pa.Field(nullable=True, isin=list(PAYMENT_STATUS_NAMES))
    amount: Series[object] = pa.Field(nullable=True)
    amountMinor: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    currency: Series[pd.StringDtype] = _text()
    pricingAmount: Series[object] = pa.Field(nullable=True)
    pricingCurrency: Series[pd.StringDtype] = _text()
    actionType: Series[pd.StringDtype] = _text()
    actionMethod: Series[pd.StringDtype] = _text()
    redirectUrl: Series[pd.StringDtype] = _text()
    action: Series[object] = pa.Field(nullable=True)
    createTime: Series[pd.DatetimeTZDtype] = _utc()

    class Config:
        strict = True
        ordered = False


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


def payments_frame(
    source: Journal | Iterable[JournalRecord], *, include_failed_calls: bool = False
) -> pd.DataFrame:
    """Payments as the journal knows them.

    Calls the service refused or that never left created nothing at the processor, so they are
    left out unless ``include_failed_calls``; calls with an unknown outcome are always in, with
    status ``unknown`` and the amount that was asked for.
    """
    records = [
        r
        for r in _records(source, "payment")
        if include_failed_calls or r.state == "succeeded" or r.state in UNKNOWN_STATES
    ]
    keys = [r.key for r in records]
    requests = [r.request for r in records]
    responses = [r.response or {} for r in records]
    actions = [resp.get("action") or {} for resp in responses]
    amounts = _amounts(
        [
            resp.get("amount", req.get("amount")) if resp else req.get("amount")
            for req, resp in zip(requests, responses, strict=True)
        ]
    )
    currencies = [
        resp.get("currency") or req.get("paymentCurrency") or req.get("currency")
        for req, resp in zip(requests, responses, strict=True)
    ]

    def asked(name: str) -> list[Any]:
        return [req.get(name) for req in requests]

    def answered(name: str) -> list[Any]:
        return [resp.get(name) for resp in responses]

    columns = {
        "orderId": _strings(answered("orderId")),
        "sessionId": _strings(answered("sessionId")),
        "paymentInstrumentId": _strings(
            [
                resp.get("paymentInstrumentId") or req.get("paymentInstrumentId")
                for req, resp in zip(requests, responses, strict=True)
            ]
        ),
        "paymentMethodType": _strings(asked("paymentMethodType")),
        "customerId": _strings(asked("customerId")),
        "customerEmail": _strings(asked("customerEmail")),
        "referenceCustomerId": _strings(asked("referenceCustomerId")),
        "productId": _strings(asked("productId")),
        "priceId": _strings(asked("priceId")),
        "status": pd.Categorical([_status_name(r) for r in records], categories=PAYMENT_STATUS_NAMES),
        "amount": _objects(amounts),
        "amountMinor": minor_units(amounts, currencies, keys),
        "currency": _strings(currencies),
        "pricingAmount": _objects(_amounts(asked("amount"))),
        "pricingCurrency": _strings(asked("currency")),
        "actionType": _strings([a.get("type") for a in actions]),
        "actionMethod": _strings([a.get("method") for a in actions]),
        "redirectUrl": _strings([a.get("redirectUrl") for a in actions]),
        "action": _objects([a or None for a in actions]),
        "createTime": _times(answered("createTime")),
        **_journal_columns(records),
    }
    return PaymentsSchema.validate(_frame(columns, keys))


# ---------------------------------------------------------------------------------------------
# Products and prices


class ProductsSchema(_JournalColumns):
    merchantReferenceId: Index[pd.StringDtype] = _text()
    productId: Series[pd.StringDtype] = _text()
    name: Series[pd.StringDtype] = _text()
    active: Series[pd.BooleanDtype] = pa.Field(nullable=True)
    description: Series[pd.StringDtype] = _text()
    defaultPrice: Series[pd.StringDtype] = _text()
    image: Series[pd.StringDtype] = _text()
    taxCategory: Series[pd.StringDtype] = _text()
    localizedNames: Series[object] = pa.Field(nullable=True)
    priceCount: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    createTime: Series[pd.DatetimeTZDtype] = _utc()
    updateTime: Series[pd.DatetimeTZDtype] = _utc()

    class Config:
        strict = True
        ordered = False


def products_frame(source: Journal | Iterable[JournalRecord]) -> pd.DataFrame:
    """Products keyed by the catalog's merchantReferenceId (the merchant's SKU)."""
    records = _records(source, "product")
    keys = [r.key for r in records]
    req = [r.request for r in records]
    resp = [r.response or {} for r in records]
    columns = {
        "productId": _strings([p.get("productId") for p in resp]),
        "name": _strings([p.get("name") or q.get("name") for p, q in zip(resp, req, strict=True)]),
        "active": _bools([p.get("active") for p in resp]),
        "description": _strings(
            [p.get("description") or q.get("description") for p, q in zip(resp, req, strict=True)]
        ),
        "defaultPrice": _strings([p.get("defaultPrice") for p in resp]),
        "image": _strings([p.get("image") or q.get("image") for p, q in zip(resp, req, strict=True)]),
        "taxCategory": _strings([q.get("taxCategory") for q in req]),
        "localizedNames": _objects(
            [p.get("localizedNames") or q.get("localizedNames") for p, q in zip(resp, req, strict=True)]
        ),
        "priceCount": _ints(
            [len(p.get("priceList") or q.get("priceList") or []) for p, q in zip(resp, req, strict=True)]
        ),
        "createTime": _times([p.get("createTime") for p in resp]),
        "updateTime": _times([p.get("updateTime") for p in resp]),
        **_journal_columns(records),
    }
    return ProductsSchema.validate(_frame(columns, keys))


class PricesSchema(pa.DataFrameModel):
    merchantReferenceId: Index[pd.StringDtype] = _text()
    productId: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    currency: Series[pd.StringDtype] = _text()
    unitAmount: Series[object] = pa.Field(nullable=True)
    unitAmountMinor: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    priceType: Series[pd.StringDtype] = _text()
    interval: Series[pd.StringDtype] = _text()
    intervalCount: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    trialPeriodDays: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    isDefaultPrice: Series[pd.BooleanDtype] = pa.Field(nullable=True)
    active: Series[pd.BooleanDtype] = pa.Field(nullable=True)
    currencyOptions: Series[object] = pa.Field(nullable=True)
    createTime: Series[pd.DatetimeTZDtype] = _utc()
    environment: Series[pd.StringDtype] = _text()

    class Config:
        strict = True
        ordered = False


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
    amounts = _amounts([p.get("unitAmount", q.get("unitAmount")) for _, p, q, _ in rows])
    details = [q.get("recurringDetails") or {} for _, _, q, _ in rows]
    recurring = [p.get("recurring") or {} for _, p, _, _ in rows]
    columns = {
        "productId": _strings(
            [p.get("productId") or (r.response or {}).get("productId") for r, p, _, _ in rows]
        ),
        "priceId": _strings([p.get("priceId") for _, p, _, _ in rows]),
        "priceSnapshotId": _strings([p.get("priceSnapshotId") for _, p, _, _ in rows]),
        "currency": _strings(currencies),
        "unitAmount": _objects(amounts),
        "unitAmountMinor": minor_units(amounts, currencies, keys),
        "priceType": _strings(
            [p.get("priceType") or q.get("priceType") or "one_time" for _, p, q, _ in rows]
        ),
        "interval": _strings(
            [p.get("interval") or d.get("interval") for (_, p, _, _), d in zip(rows, details, strict=True)]
        ),
        "intervalCount": _ints(
            [
                rc.get("intervalCount", d.get("intervalCount"))
                for rc, d in zip(recurring, details, strict=True)
            ]
        ),
        "trialPeriodDays": _ints(
            [
                rc.get("trialPeriodDays", d.get("trialPeriodDays"))
                for rc, d in zip(recurring, details, strict=True)
            ]
        ),
        "isDefaultPrice": _bools(
            [
                (p.get("priceId") == extra["default"]) if p.get("priceId") else q.get("isDefaultPrice")
                for _, p, q, extra in rows
            ]
        ),
        "active": _bools([p.get("active") for _, p, _, _ in rows]),
        "currencyOptions": _objects(
            [p.get("currencyOptions") or q.get("currencyOptions") for _, p, q, _ in rows]
        ),
        "createTime": _times([p.get("createTime") for _, p, _, _ in rows]),
        "environment": _strings([r.environment for r, _, _, _ in rows]),
    }
    return PricesSchema.validate(_frame(columns, keys))


# ---------------------------------------------------------------------------------------------
# Subscriptions and their nested parts


class SubscriptionsSchema(pa.DataFrameModel):
    """One row per subscription, keyed by its merchantReference (exposed as merchantReferenceId)."""

    merchantReferenceId: Index[pd.StringDtype] = _text()
    subscriptionId: Series[pd.StringDtype] = _text()
    customerId: Series[pd.StringDtype] = _text()
    productId: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    quantity: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    paymentMethodType: Series[pd.StringDtype] = _text()
    paymentInstrumentId: Series[pd.StringDtype] = _text()
    state: Series[pd.CategoricalDtype] = pa.Field(nullable=True, isin=list(SUBSCRIPTION_STATES))
    currency: Series[pd.StringDtype] = _text()
    upcomingInvoiceAmount: Series[object] = pa.Field(nullable=True)
    upcomingInvoiceAmountMinor: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    recurringInvoiceAmount: Series[object] = pa.Field(nullable=True)
    recurringInvoiceAmountMinor: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    createTime: Series[pd.DatetimeTZDtype] = _utc()
    trialStart: Series[pd.DatetimeTZDtype] = _utc()
    trialEnd: Series[pd.DatetimeTZDtype] = _utc()
    currentPeriodStart: Series[pd.DatetimeTZDtype] = _utc()
    currentPeriodEnd: Series[pd.DatetimeTZDtype] = _utc()
    cancelAt: Series[pd.DatetimeTZDtype] = _utc()
    cancelAtPeriodEnd: Series[pd.BooleanDtype] = pa.Field(nullable=True)
    canceledAt: Series[pd.DatetimeTZDtype] = _utc()
    cancelReason: Series[pd.StringDtype] = _text()
    elapsedCycles: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    sessionId: Series[pd.StringDtype] = _text()
    metadata: Series[object] = pa.Field(nullable=True)
    environment: Series[pd.StringDtype] = _text()

    class Config:
        strict = True
        ordered = False


def _state(subscription: Subscription) -> str:
    """The service's state when it sends one (the sandbox does); else canceled or active."""
    sent = (subscription.model_extra or {}).get("status")
    if sent in SUBSCRIPTION_STATES:
        return str(sent)
    return "canceled" if subscription.canceledAt is not None else "active"


def _currency(subscription: Subscription) -> str | None:
    extra = subscription.model_extra or {}
    if extra.get("currency"):
        return str(extra["currency"])
    for item in (subscription.upcomingInvoiceItem, subscription.recurringInvoiceItem):
        if item is not None and (item.model_extra or {}).get("currency"):
            return str((item.model_extra or {})["currency"])
    return None


_CHUNK = 2048


def _fields(models: Sequence[Any], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """Fields of many models, one list per name.

    Each model is visited once (one C-level ``attrgetter`` call fetching all names) instead of once
    per field: with 100,000 models spread over memory, the visits, not the work, are the cost. The
    per-model tuples are transposed a chunk at a time so that few of them are alive at once (else
    they push the garbage collector into full collections over all the models).
    """
    get = operator.attrgetter(*names)  # two names or more: always a tuple
    columns: list[list[Any]] = [[] for _ in names]
    for start in range(0, len(models), _CHUNK):
        rows = zip(*map(get, models[start : start + _CHUNK]), strict=True)
        for column, values in zip(columns, rows, strict=True):
            column.extend(values)
    return dict(zip(names, columns, strict=True))


_SUBSCRIPTION_FIELDS = (
    "merchantReference",
    "subscriptionId",
    "customerId",
    "productId",
    "priceId",
    "priceSnapshotId",
    "quantity",
    "paymentMethodType",
    "paymentInstrumentId",
    "createTime",
    "trialStart",
    "trialEnd",
    "currentPeriodStart",
    "currentPeriodEnd",
    "cancelAt",
    "canceledAt",
    "cancelAtPeriodEnd",
    "cancelReason",
    "elapsedCycles",
    "sessionId",
    "metadata",
    "upcomingInvoiceItem",
    "recurringInvoiceItem",
)


def subscriptions_frame(subscriptions: Sequence[Subscription], *, environment: str = "") -> pd.DataFrame:
    """Subscriptions as the client returned them; cancelAt and canceledAt are read as milliseconds."""
    subs = list(subscriptions)
    field = _fields(subs, _SUBSCRIPTION_FIELDS)
    keys = field["merchantReference"]
    currencies = [_currency(s) for s in subs]
    upcoming = [i.amount if i else None for i in field["upcomingInvoiceItem"]]
    recurring = [i.amount if i else None for i in field["recurringInvoiceItem"]]
    ids = [i or "" for i in field["subscriptionId"]]
    columns = {
        "subscriptionId": _strings(field["subscriptionId"]),
        "customerId": _strings(field["customerId"]),
        "productId": _strings(field["productId"]),
        "priceId": _strings(field["priceId"]),
        "priceSnapshotId": _strings(field["priceSnapshotId"]),
        "quantity": _ints(field["quantity"]),
        "paymentMethodType": _strings(field["paymentMethodType"]),
        "paymentInstrumentId": _strings(field["paymentInstrumentId"]),
        "state": pd.Categorical([_state(s) for s in subs], categories=SUBSCRIPTION_STATES),
        "currency": _strings(currencies),
        "upcomingInvoiceAmount": _objects(upcoming),
        "upcomingInvoiceAmountMinor": minor_units(upcoming, currencies, ids),
        "recurringInvoiceAmount": _objects(recurring),
        "recurringInvoiceAmountMinor": minor_units(recurring, currencies, ids),
        **{
            name: _times(field[name])
            for name in (
                "createTime",
                "trialStart",
                "trialEnd",
                "currentPeriodStart",
                "currentPeriodEnd",
                "cancelAt",
                "canceledAt",
            )
        },
        "cancelAtPeriodEnd": _bools(field["cancelAtPeriodEnd"]),
        "cancelReason": _strings(field["cancelReason"]),
        "elapsedCycles": _ints(field["elapsedCycles"]),
        "sessionId": _strings(field["sessionId"]),
        "metadata": _objects(field["metadata"]),
        "environment": _strings([environment] * len(subs)),
    }
    return SubscriptionsSchema.validate(_frame(columns, keys))


class InvoiceItemsSchema(pa.DataFrameModel):
    """The recurring and upcoming invoice items of each subscription, one row each."""

    merchantReferenceId: Index[pd.StringDtype] = _text()
    subscriptionId: Series[pd.StringDtype] = _text()
    item: Series[pd.StringDtype] = pa.Field(
        nullable=False, isin=["recurring", "upcoming"], dtype_kwargs={"storage": "pyarrow"}
    )
    invoiceItemId: Series[pd.StringDtype] = _text()
    amount: Series[object] = pa.Field(nullable=True)
    amountMinor: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    currency: Series[pd.StringDtype] = _text()
    description: Series[pd.StringDtype] = _text()
    periodStart: Series[pd.DatetimeTZDtype] = _utc()
    periodEnd: Series[pd.DatetimeTZDtype] = _utc()
    proration: Series[pd.BooleanDtype] = pa.Field(nullable=True)
    productId: Series[pd.StringDtype] = _text()
    productName: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    unitAmount: Series[object] = pa.Field(nullable=True)
    quantity: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    trialPeriodDays: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    intervalCount: Series[pd.Int64Dtype] = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = False


_NO_PRICE = InvoicePrice()
_NO_RECURRING = InvoiceRecurring()


def invoice_items_frame(subscriptions: Sequence[Subscription]) -> pd.DataFrame:
    """Both invoice items of each subscription (``item`` says which), keyed like the subscription."""
    subs = list(subscriptions)
    sub = _fields(
        subs, ("merchantReference", "subscriptionId", "recurringInvoiceItem", "upcomingInvoiceItem")
    )
    owners: list[Subscription] = []
    keys: list[str | None] = []
    ids: list[str | None] = []
    kinds: list[str] = []
    items: list[Any] = []
    for s, key, sid, recurring_item, upcoming_item in zip(
        subs,
        sub["merchantReference"],
        sub["subscriptionId"],
        sub["recurringInvoiceItem"],
        sub["upcomingInvoiceItem"],
        strict=True,
    ):
        for kind, found in (("recurring", recurring_item), ("upcoming", upcoming_item)):
            if found is not None:
                owners.append(s)
                keys.append(key)
                ids.append(sid)
                kinds.append(kind)
                items.append(found)
    item = _fields(
        items,
        (
            "invoiceItemId",
            "amount",
            "description",
            "periodStart",
            "periodEnd",
            "proration",
            "price",
            "model_extra",
        ),
    )
    currencies = [
        (extra or {}).get("currency") or _currency(s)
        for extra, s in zip(item["model_extra"], owners, strict=True)
    ]
    prices = [_NO_PRICE if p is None else p for p in item["price"]]
    price = _fields(
        prices,
        ("productId", "productName", "priceId", "priceSnapshotId", "unitAmount", "quantity", "recurring"),
    )
    recur = _fields(
        [_NO_RECURRING if r is None else r for r in price["recurring"]], ("trialPeriodDays", "intervalCount")
    )
    amounts = item["amount"]
    columns = {
        "subscriptionId": _strings(ids),
        "item": _strings(kinds),
        "invoiceItemId": _strings(item["invoiceItemId"]),
        "amount": _objects(amounts),
        "amountMinor": minor_units(amounts, currencies, [i or "" for i in item["invoiceItemId"]]),
        "currency": _strings(currencies),
        "description": _strings(item["description"]),
        "periodStart": _times(item["periodStart"]),
        "periodEnd": _times(item["periodEnd"]),
        "proration": _bools(item["proration"]),
        "productId": _strings(price["productId"]),
        "productName": _strings(price["productName"]),
        "priceId": _strings(price["priceId"]),
        "priceSnapshotId": _strings(price["priceSnapshotId"]),
        "unitAmount": _objects(price["unitAmount"]),
        "quantity": _ints(price["quantity"]),
        "trialPeriodDays": _ints(recur["trialPeriodDays"]),
        "intervalCount": _ints(recur["intervalCount"]),
    }
    return InvoiceItemsSchema.validate(_frame(columns, keys))


class PhasesSchema(pa.DataFrameModel):
    merchantReferenceId: Index[pd.StringDtype] = _text()
    subscriptionId: Series[pd.StringDtype] = _text()
    sequence: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    effectiveCycle: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    priceSnapshotId: Series[pd.StringDtype] = _text()
    quantity: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    metadata: Series[object] = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = False


def phases_frame(subscriptions: Sequence[Subscription]) -> pd.DataFrame:
    """The scheduled phases of each subscription, one row each."""
    subs = list(subscriptions)
    sub = _fields(subs, ("merchantReference", "subscriptionId", "scheduledPhases"))
    keys: list[str | None] = []
    ids: list[str | None] = []
    phases: list[Any] = []
    for key, sid, scheduled in zip(
        sub["merchantReference"], sub["subscriptionId"], sub["scheduledPhases"], strict=True
    ):
        if scheduled:
            keys.extend([key] * len(scheduled))
            ids.extend([sid] * len(scheduled))
            phases.extend(scheduled)
    phase = _fields(phases, ("sequence", "effectiveCycle", "priceSnapshotId", "quantity", "metadata"))
    columns = {
        "subscriptionId": _strings(ids),
        "sequence": _ints(phase["sequence"]),
        "effectiveCycle": _ints(phase["effectiveCycle"]),
        "priceSnapshotId": _strings(phase["priceSnapshotId"]),
        "quantity": _ints(phase["quantity"]),
        "metadata": _objects(phase["metadata"]),
    }
    return PhasesSchema.validate(_frame(columns, keys))
