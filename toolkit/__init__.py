"""Typed client, local sandbox, journal, frames, reconciliation and notebooks for the payment API.

Start with ``Client()`` (the embedded sandbox when ``TOOLKIT_BASE_URL`` is unset), ``create_payments``
for many at once, and ``payments_frame(Journal.open())`` to see what was created.

Names are imported on first use, so ``toolkit reconcile`` or ``toolkit sandbox`` do not pay for
the client, pandas and pandera stacks they do not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "BulkResult": "toolkit.bulk",
    "acreate_payments": "toolkit.bulk",
    "acreate_products": "toolkit.bulk",
    "aload_subscriptions": "toolkit.bulk",
    "create_payment": "toolkit.bulk",
    "create_payments": "toolkit.bulk",
    "create_products": "toolkit.bulk",
    "load_subscriptions": "toolkit.bulk",
    "CatalogEntry": "toolkit.catalog",
    "load_catalog": "toolkit.catalog",
    "plan_catalog": "toolkit.catalog",
    "AsyncClient": "toolkit.client",
    "Client": "toolkit.client",
    "SandboxControls": "toolkit.controls",
    "Environment": "toolkit.environment",
    "Settings": "toolkit.config",
    "APIError": "toolkit.errors",
    "AuthenticationError": "toolkit.errors",
    "ConfigurationError": "toolkit.errors",
    "EngineError": "toolkit.errors",
    "FrameError": "toolkit.errors",
    "InputError": "toolkit.errors",
    "JournalConflictError": "toolkit.errors",
    "JournalError": "toolkit.errors",
    "MoneyError": "toolkit.errors",
    "NotebookFailure": "toolkit.errors",
    "NotFoundError": "toolkit.errors",
    "OutputError": "toolkit.errors",
    "OutcomeUnknownError": "toolkit.errors",
    "ParameterError": "toolkit.errors",
    "RequestValidationError": "toolkit.errors",
    "SandboxError": "toolkit.errors",
    "ToolkitError": "toolkit.errors",
    "TrackError": "toolkit.errors",
    "TrackIntegrityError": "toolkit.errors",
    "TransportError": "toolkit.errors",
    "invoice_items_frame": "toolkit.frames",
    "payments_frame": "toolkit.frames",
    "phases_frame": "toolkit.frames",
    "prices_frame": "toolkit.frames",
    "products_frame": "toolkit.frames",
    "subscriptions_frame": "toolkit.frames",
    "Journal": "toolkit.journal",
    "JournalRecord": "toolkit.journal",
    "Action": "toolkit.models",
    "DeviceType": "toolkit.models",
    "Envelope": "toolkit.models",
    "InvoiceItem": "toolkit.models",
    "PaymentMethodType": "toolkit.models",
    "PaymentRequest": "toolkit.models",
    "PaymentResult": "toolkit.models",
    "PaymentStatus": "toolkit.models",
    "PlatformType": "toolkit.models",
    "Price": "toolkit.models",
    "PriceData": "toolkit.models",
    "PriceItem": "toolkit.models",
    "Product": "toolkit.models",
    "ProductRequest": "toolkit.models",
    "RecurringDetails": "toolkit.models",
    "ScheduledPhase": "toolkit.models",
    "Subscription": "toolkit.models",
    "TaxCategory": "toolkit.models",
    "WalletHandleRedirectOrDisplayQrCode": "toolkit.models",
    "format_money": "toolkit.money",
    "from_minor": "toolkit.money",
    "minor_digits": "toolkit.money",
    "to_minor": "toolkit.money",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from toolkit.bulk import (
        BulkResult,
        acreate_payments,
        acreate_products,
        aload_subscriptions,
        create_payment,
        create_payments,
        create_products,
        load_subscriptions,
    )
    from toolkit.catalog import CatalogEntry, load_catalog, plan_catalog
    from toolkit.client import AsyncClient, Client
    from toolkit.config import Settings
    from toolkit.controls import SandboxControls
    from toolkit.environment import Environment
    from toolkit.errors import (
        APIError,
        AuthenticationError,
        ConfigurationError,
        EngineError,
        FrameError,
        InputError,
        JournalConflictError,
        JournalError,
        MoneyError,
        NotebookFailure,
        NotFoundError,
        OutcomeUnknownError,
        OutputError,
        ParameterError,
        RequestValidationError,
        SandboxError,
        ToolkitError,
        TrackError,
        TrackIntegrityError,
        TransportError,
    )
    from toolkit.frames import (
        invoice_items_frame,
        payments_frame,
        phases_frame,
        prices_frame,
        products_frame,
        subscriptions_frame,
    )
    from toolkit.journal import Journal, JournalRecord
    from toolkit.models import (
        Action,
        DeviceType,
        Envelope,
        InvoiceItem,
        PaymentMethodType,
        PaymentRequest,
        PaymentResult,
        PaymentStatus,
        PlatformType,
        Price,
        PriceData,
        PriceItem,
        Product,
        ProductRequest,
        RecurringDetails,
        ScheduledPhase,
        Subscription,
        TaxCategory,
        WalletHandleRedirectOrDisplayQrCode,
    )
    from toolkit.money import format_money, from_minor, minor_digits, to_minor

__all__ = [
    "APIError",
    "Action",
    "AsyncClient",
    "AuthenticationError",
    "BulkResult",
    "CatalogEntry",
    "Client",
    "ConfigurationError",
    "DeviceType",
    "EngineError",
    "Envelope",
    "Environment",
    "FrameError",
    "InputError",
    "InvoiceItem",
    "Journal",
    "JournalConflictError",
    "JournalError",
    "JournalRecord",
    "MoneyError",
    "NotFoundError",
    "NotebookFailure",
    "OutcomeUnknownError",
    "OutputError",
    "ParameterError",
    "PaymentMethodType",
    "PaymentRequest",
    "PaymentResult",
    "PaymentStatus",
    "PlatformType",
    "Price",
    "PriceData",
    "PriceItem",
    "Product",
    "ProductRequest",
    "RecurringDetails",
    "RequestValidationError",
    "SandboxControls",
    "SandboxError",
    "ScheduledPhase",
    "Settings",
    "Subscription",
    "TaxCategory",
    "ToolkitError",
    "TrackError",
    "TrackIntegrityError",
    "TransportError",
    "WalletHandleRedirectOrDisplayQrCode",
    "acreate_payments",
    "acreate_products",
    "aload_subscriptions",
    "create_payment",
    "create_payments",
    "create_products",
    "format_money",
    "from_minor",
    "invoice_items_frame",
    "load_catalog",
    "load_subscriptions",
    "minor_digits",
    "payments_frame",
    "phases_frame",
    "plan_catalog",
    "prices_frame",
    "products_frame",
    "subscriptions_frame",
    "to_minor",
]
