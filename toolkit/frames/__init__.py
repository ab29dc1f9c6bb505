"""Journal records and API models as pandas frames keyed by ``merchantReferenceId``, schema-checked.

Columns carry the API's own field names, so they can be looked up in ``api-spec.md``, plus the
journal's (``environment``, ``requestTime``, ``outcomeTime``, ``outcomeState``, ``error``). The key
is the index and may repeat: a double charge is a real thing and is never dropped.

Money is exact: each amount is a column of ``Decimal`` (as the API wrote it) and a column of
integer minor units (``amountMinor``) for arithmetic. Timestamps (the spec's milliseconds) are
timezone-aware UTC. Text is Arrow-backed, which keeps building and checking 100,000 rows fast.
Each frame is checked against its pandera schema when it is built.

    columns             column builders: Python values in, one typed column out
    schemas             the pandera contracts, sharing their common columns by inheritance
    from_journal        payments_frame, products_frame, prices_frame
    from_subscriptions  subscriptions_frame, invoice_items_frame, phases_frame
"""

from toolkit.frames.columns import KEY, STRING, minor_units
from toolkit.frames.from_journal import payments_frame, prices_frame, products_frame
from toolkit.frames.from_subscriptions import invoice_items_frame, phases_frame, subscriptions_frame
from toolkit.frames.schemas import (
    SUBSCRIPTION_STATES,
    EnvironmentSchema,
    FrameSchema,
    InvoiceItemsSchema,
    JournalSchema,
    PaymentsSchema,
    PhasesSchema,
    PricesSchema,
    ProductsSchema,
    SubscriptionPartSchema,
    SubscriptionsSchema,
)

__all__ = [
    "KEY",
    "STRING",
    "SUBSCRIPTION_STATES",
    "EnvironmentSchema",
    "FrameSchema",
    "InvoiceItemsSchema",
    "JournalSchema",
    "PaymentsSchema",
    "PhasesSchema",
    "PricesSchema",
    "ProductsSchema",
    "SubscriptionPartSchema",
    "SubscriptionsSchema",
    "invoice_items_frame",
    "minor_units",
    "payments_frame",
    "phases_frame",
    "prices_frame",
    "products_frame",
    "subscriptions_frame",
]
