"""Frames: schemas checked, money exact, timestamps UTC, duplicate keys kept."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pandas as pd
import pandera.errors
import pytest

from toolkit.errors import FrameError
from toolkit.frames import (
    FrameSchema,
    InvoiceItemsSchema,
    JournalSchema,
    PaymentsSchema,
    PhasesSchema,
    PricesSchema,
    ProductsSchema,
    SubscriptionsSchema,
    invoice_items_frame,
    minor_units,
    payments_frame,
    phases_frame,
    subscriptions_frame,
)
from toolkit.journal import JournalRecord, State
from toolkit.models import Subscription
from toolkit.money import minor_digits


def record(
    key: str,
    *,
    state: State = "succeeded",
    amount: Any = "12.30",
    currency: str = "USD",
    status: int = 1,
    **response: Any,
) -> JournalRecord:
    request = {
        "merchantReferenceId": key,
        "paymentMethodType": "CARD",
        "amount": Decimal(str(amount)),
        "currency": currency,
        "customerId": "cus_1",
    }
    answer = (
        {
            "orderId": f"ord_{key}",
            "status": status,
            "amount": Decimal(str(amount)),
            "currency": currency,
            **response,
        }
        if state == "succeeded"
        else None
    )
    return JournalRecord(
        kind="payment",
        key=key,
        state=state,
        request=request,
        response=answer,
        error=None,
        attempts=1,
        requestTime=1_700_000_000_123,
        outcomeTime=None,
        resolvedBy=None,
        environment="test",
    )


def test_payments_frame_columns_types_and_schema() -> None:
    frame = payments_frame([record("a"), record("b", status=5), record("c", state="sending")])
    assert frame.index.name == "merchantReferenceId"
    assert list(frame["status"]) == ["success", "next_action", "unknown"]
    assert list(frame["status"].cat.categories) == ["success", "pending", "failure", "next_action", "unknown"]
    assert frame["amountMinor"].dtype == "Int64" and frame["amount"].dtype == object
    assert frame.loc["a", "amount"] == Decimal("12.30")
    assert str(frame["requestTime"].dtype) == "datetime64[ms, UTC]"
    assert frame["requestTime"].iloc[0] == pd.Timestamp("2023-11-14T22:13:20.123Z")
    assert frame["environment"].tolist() == ["test"] * 3
    PaymentsSchema.validate(frame)


def test_unknown_outcomes_keep_the_amount_asked_for_and_refused_calls_are_left_out() -> None:
    frame = payments_frame([record("u", state="unknown", amount="5.00"), record("r", state="rejected")])
    assert list(frame.index) == ["u"] and frame.loc["u", "amountMinor"] == 500
    everything = payments_frame([record("r", state="rejected")], include_failed_calls=True)
    assert everything["status"].isna().all() and list(everything["outcomeState"]) == ["rejected"]


def test_duplicate_keys_are_kept() -> None:
    frame = payments_frame([record("dup"), record("dup"), record("other")])
    assert list(frame.index) == ["dup", "dup", "other"]


def test_money_column_is_exact_over_a_million_amounts() -> None:
    rng = random.Random(3)
    minors = [rng.randrange(1, 10**12) for _ in range(1_000_000)]
    currencies = [rng.choice(["USD", "JPY", "KWD"]) for _ in minors]
    amounts = [Decimal(m).scaleb(-minor_digits(c)) for m, c in zip(minors, currencies, strict=True)]
    column = minor_units(amounts, currencies, [None] * len(minors))
    assert str(column.dtype) == "Int64"
    assert int(pd.Series(column).sum()) == sum(minors)


def test_payments_frame_money_is_exact() -> None:
    rng = random.Random(4)
    minors = [rng.randrange(1, 10**12) for _ in range(20_000)]
    frame = payments_frame([record(f"k{i}", amount=Decimal(m).scaleb(-2)) for i, m in enumerate(minors)])
    assert int(frame["amountMinor"].sum()) == sum(minors)
    assert sum(frame["amount"]) == Decimal(sum(minors)).scaleb(-2)


def test_zero_and_three_decimal_currencies() -> None:
    frame = payments_frame(
        [record("j", amount="1200", currency="JPY"), record("k", amount="1.250", currency="KWD")]
    )
    assert frame["amountMinor"].tolist() == [1200, 1250]


def test_an_amount_finer_than_its_currency_is_an_error_not_rounded() -> None:
    with pytest.raises(FrameError, match="more decimals than JPY allows"):
        payments_frame([record("j", amount="10.5", currency="JPY")])


def test_schema_rejects_a_float_amount_column() -> None:
    frame = payments_frame([record("a")])
    frame["amountMinor"] = frame["amountMinor"].astype(float)
    with pytest.raises(pandera.errors.SchemaError):
        PaymentsSchema.validate(frame)


def subscription(key: str, **changes: Any) -> Subscription:
    item = {
        "invoiceItemId": f"ii_{key}",
        "amount": Decimal("13.50"),
        "periodStart": 1_700_000_000_000,
        "periodEnd": 1_702_592_000_000,
        "proration": False,
        "currency": "EUR",
        "price": {
            "priceId": "price_1",
            "unitAmount": Decimal("4.50"),
            "quantity": 3,
            "recurring": {"intervalCount": 1, "trialPeriodDays": 7},
        },
    }
    data = {
        "subscriptionId": f"sub_{key}",
        "merchantReference": key,
        "quantity": 3,
        "priceId": "price_1",
        "currentPeriodStart": 1_700_000_000_000,
        "currentPeriodEnd": 1_702_592_000_000,
        "recurringInvoiceItem": item,
        "upcomingInvoiceItem": item,
        "currency": "EUR",
        "status": "active",
        "scheduledPhases": [{"sequence": 1, "effectiveCycle": 3, "quantity": 5}],
        **changes,
    }
    return Subscription.model_validate(data)


def test_subscription_frames() -> None:
    subs = [
        subscription("s1"),
        subscription("s2", status=None, canceledAt=1_700_000_100_000, scheduledPhases=None),
    ]
    frame = subscriptions_frame(subs, environment="test")
    assert list(frame.index) == ["s1", "s2"] and list(frame["state"]) == ["active", "canceled"]
    assert frame["upcomingInvoiceAmountMinor"].tolist() == [1350, 1350]
    assert frame.loc["s2", "canceledAt"] == pd.Timestamp(1_700_000_100_000, unit="ms", tz="UTC")
    items = invoice_items_frame(subs)
    assert len(items) == 4 and set(items["item"]) == {"recurring", "upcoming"}
    assert (
        items["unitAmount"].tolist() == [Decimal("4.50")] * 4 and items["intervalCount"].tolist() == [1] * 4
    )
    phases = phases_frame(subs)
    assert list(phases.index) == ["s1"] and phases["quantity"].tolist() == [5]


def test_empty_frames_still_have_their_schema() -> None:
    assert list(payments_frame([]).columns) == list(payments_frame([record("a")]).columns)
    assert subscriptions_frame([]).empty and phases_frame([]).empty


def test_whole_amounts_sent_as_json_integers_become_decimals() -> None:
    whole = record("krw", amount="13500", currency="KRW")
    assert whole.response is not None
    whole.response["amount"] = 13500
    frame = payments_frame([whole])
    assert frame.loc["krw", "amount"] == Decimal(13500) and isinstance(frame.loc["krw", "amount"], Decimal)
    assert frame.loc["krw", "amountMinor"] == 13500


@pytest.mark.parametrize(
    "schema",
    [PaymentsSchema, ProductsSchema, PricesSchema, SubscriptionsSchema, InvoiceItemsSchema, PhasesSchema],
)
def test_every_schema_inherits_the_key_and_the_strict_configuration(schema: type[FrameSchema]) -> None:
    built = schema.to_schema()
    assert issubclass(schema, FrameSchema)
    assert str(built.index.dtype) == "string[pyarrow]" and built.strict is True and built.ordered is False


def test_a_column_no_schema_names_is_refused_and_the_order_is_free() -> None:
    frame = payments_frame([record("a")])
    PaymentsSchema.validate(frame[list(reversed(frame.columns))])
    with pytest.raises((pandera.errors.SchemaError, pandera.errors.SchemaErrors), match="'surprise' not in"):
        PaymentsSchema.validate(frame.assign(surprise=1))


def test_journal_columns_are_declared_once_for_payments_and_products() -> None:
    journal = set(JournalSchema.to_schema().columns)
    assert journal == {"environment", "requestTime", "outcomeTime", "outcomeState", "error"}
    assert journal <= set(PaymentsSchema.to_schema().columns)
    assert journal <= set(ProductsSchema.to_schema().columns)
    assert "requestTime" not in SubscriptionsSchema.to_schema().columns
