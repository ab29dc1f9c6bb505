"""The pandera contracts of the frames, checked when each frame is built.

Common columns and configuration are declared once and inherited::

    FrameSchema                  the merchantReferenceId index; strict, in any order
    ├── EnvironmentSchema        + environment (which service the rows came from)
    │   ├── JournalSchema        + requestTime, outcomeTime, outcomeState, error
    │   │   ├── PaymentsSchema
    │   │   └── ProductsSchema
    │   ├── PricesSchema
    │   └── SubscriptionsSchema  (also a SubscriptionPartSchema)
    └── SubscriptionPartSchema   + subscriptionId
        ├── InvoiceItemsSchema
        └── PhasesSchema
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Index, Series

from toolkit.models import PAYMENT_STATUS_NAMES

#: The states a subscription frame's ``state`` column may hold.
SUBSCRIPTION_STATES: tuple[str, ...] = ("trialing", "active", "canceled")


def _text() -> Any:
    """Schema field: nullable Arrow-backed text."""
    return pa.Field(nullable=True, dtype_kwargs={"storage": "pyarrow"})


def _utc() -> Any:
    """Schema field: nullable UTC timestamp."""
    return pa.Field(nullable=True, dtype_kwargs={"unit": "ms", "tz": "UTC"})


def _optional() -> Any:
    """Schema field: a column whose values may be missing (amounts, counts, flags, objects)."""
    return pa.Field(nullable=True)


class FrameSchema(pa.DataFrameModel):
    """What every frame shares: keyed by ``merchantReferenceId`` (may repeat), no extra column."""

    merchantReferenceId: Index[pd.StringDtype] = _text()

    class Config:
        """Strict: a column the schema does not name is an error; the order is free."""

        strict = True
        ordered = False


class EnvironmentSchema(FrameSchema):
    """Frames whose rows say which service they came from."""

    environment: Series[pd.StringDtype] = _text()


class JournalSchema(EnvironmentSchema):
    """Frames of journaled create calls: when each was asked and answered, and how it ended."""

    requestTime: Series[pd.DatetimeTZDtype] = _utc()
    outcomeTime: Series[pd.DatetimeTZDtype] = _utc()
    outcomeState: Series[pd.StringDtype] = _text()
    error: Series[pd.StringDtype] = _text()


class SubscriptionPartSchema(FrameSchema):
    """Frames of subscriptions and their parts, which name the subscription they belong to."""

    subscriptionId: Series[pd.StringDtype] = _text()


class PaymentsSchema(JournalSchema):
    """One row per journaled payment.

    ``status`` is the latest the journal knows: ``unknown`` when the outcome is not known, the
    settled status once a settlement is recorded (``settledTime``), else ``answeredStatus``, the
    status the service answered.
    """

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
    answeredStatus: Series[pd.CategoricalDtype] = pa.Field(nullable=True, isin=list(PAYMENT_STATUS_NAMES))
    settledTime: Series[pd.DatetimeTZDtype] = _utc()
    amount: Series[object] = _optional()
    amountMinor: Series[pd.Int64Dtype] = _optional()
    currency: Series[pd.StringDtype] = _text()
    pricingAmount: Series[object] = _optional()
    pricingCurrency: Series[pd.StringDtype] = _text()
    actionType: Series[pd.StringDtype] = _text()
    actionMethod: Series[pd.StringDtype] = _text()
    redirectUrl: Series[pd.StringDtype] = _text()
    action: Series[object] = _optional()
    createTime: Series[pd.DatetimeTZDtype] = _utc()


class ProductsSchema(JournalSchema):
    """One row per journaled product, keyed by the catalog's merchantReferenceId (the SKU)."""

    productId: Series[pd.StringDtype] = _text()
    name: Series[pd.StringDtype] = _text()
    active: Series[pd.BooleanDtype] = _optional()
    description: Series[pd.StringDtype] = _text()
    defaultPrice: Series[pd.StringDtype] = _text()
    image: Series[pd.StringDtype] = _text()
    taxCategory: Series[pd.StringDtype] = _text()
    localizedNames: Series[object] = _optional()
    priceCount: Series[pd.Int64Dtype] = _optional()
    createTime: Series[pd.DatetimeTZDtype] = _utc()
    updateTime: Series[pd.DatetimeTZDtype] = _utc()


class PricesSchema(EnvironmentSchema):
    """One row per price of each journaled product, keyed by the product's merchantReferenceId."""

    productId: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    currency: Series[pd.StringDtype] = _text()
    unitAmount: Series[object] = _optional()
    unitAmountMinor: Series[pd.Int64Dtype] = _optional()
    priceType: Series[pd.StringDtype] = _text()
    interval: Series[pd.StringDtype] = _text()
    intervalCount: Series[pd.Int64Dtype] = _optional()
    trialPeriodDays: Series[pd.Int64Dtype] = _optional()
    isDefaultPrice: Series[pd.BooleanDtype] = _optional()
    active: Series[pd.BooleanDtype] = _optional()
    currencyOptions: Series[object] = _optional()
    createTime: Series[pd.DatetimeTZDtype] = _utc()


class SubscriptionsSchema(SubscriptionPartSchema, EnvironmentSchema):
    """One row per subscription, keyed by its merchantReference (exposed as merchantReferenceId)."""

    customerId: Series[pd.StringDtype] = _text()
    productId: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    quantity: Series[pd.Int64Dtype] = _optional()
    paymentMethodType: Series[pd.StringDtype] = _text()
    paymentInstrumentId: Series[pd.StringDtype] = _text()
    state: Series[pd.CategoricalDtype] = pa.Field(nullable=True, isin=list(SUBSCRIPTION_STATES))
    currency: Series[pd.StringDtype] = _text()
    upcomingInvoiceAmount: Series[object] = _optional()
    upcomingInvoiceAmountMinor: Series[pd.Int64Dtype] = _optional()
    recurringInvoiceAmount: Series[object] = _optional()
    recurringInvoiceAmountMinor: Series[pd.Int64Dtype] = _optional()
    createTime: Series[pd.DatetimeTZDtype] = _utc()
    trialStart: Series[pd.DatetimeTZDtype] = _utc()
    trialEnd: Series[pd.DatetimeTZDtype] = _utc()
    currentPeriodStart: Series[pd.DatetimeTZDtype] = _utc()
    currentPeriodEnd: Series[pd.DatetimeTZDtype] = _utc()
    cancelAt: Series[pd.DatetimeTZDtype] = _utc()
    cancelAtPeriodEnd: Series[pd.BooleanDtype] = _optional()
    canceledAt: Series[pd.DatetimeTZDtype] = _utc()
    cancelReason: Series[pd.StringDtype] = _text()
    elapsedCycles: Series[pd.Int64Dtype] = _optional()
    sessionId: Series[pd.StringDtype] = _text()
    metadata: Series[object] = _optional()


class InvoiceItemsSchema(SubscriptionPartSchema):
    """The recurring and upcoming invoice items of each subscription, one row each."""

    item: Series[pd.StringDtype] = pa.Field(
        nullable=False, isin=["recurring", "upcoming"], dtype_kwargs={"storage": "pyarrow"}
    )
    invoiceItemId: Series[pd.StringDtype] = _text()
    amount: Series[object] = _optional()
    amountMinor: Series[pd.Int64Dtype] = _optional()
    currency: Series[pd.StringDtype] = _text()
    description: Series[pd.StringDtype] = _text()
    periodStart: Series[pd.DatetimeTZDtype] = _utc()
    periodEnd: Series[pd.DatetimeTZDtype] = _utc()
    proration: Series[pd.BooleanDtype] = _optional()
    productId: Series[pd.StringDtype] = _text()
    productName: Series[pd.StringDtype] = _text()
    priceId: Series[pd.StringDtype] = _text()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    unitAmount: Series[object] = _optional()
    quantity: Series[pd.Int64Dtype] = _optional()
    trialPeriodDays: Series[pd.Int64Dtype] = _optional()
    intervalCount: Series[pd.Int64Dtype] = _optional()


class PhasesSchema(SubscriptionPartSchema):
    """The scheduled phases of each subscription, one row each."""

    sequence: Series[pd.Int64Dtype] = _optional()
    effectiveCycle: Series[pd.Int64Dtype] = _optional()
    priceSnapshotId: Series[pd.StringDtype] = _text()
    quantity: Series[pd.Int64Dtype] = _optional()
    metadata: Series[object] = _optional()
