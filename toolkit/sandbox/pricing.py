"""The rules of a product and its prices (POST /product): what a request may ask for, how it is
stored, and the Product the service answers, read back from the store.

Like ``charging.py`` for payments: no web framework here; the route parses, calls and answers.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from toolkit.models import PriceType, ProductRequest
from toolkit.money import from_minor, to_minor
from toolkit.sandbox import rules, store
from toolkit.sandbox.http import BadRequest


def check_product(req: ProductRequest) -> None:
    """Refuse, before anything is written, what the sandbox cannot store: a default price named
    before it exists, amounts and periods out of reach, a currency option in the price's own currency."""
    if req.defaultPrice is not None:
        raise BadRequest(
            "defaultPrice", "cannot name a price before it exists; set isDefaultPrice on a priceList item"
        )
    for index, item in enumerate(req.priceList or []):
        rules.check_magnitude(item.unitAmount, f"priceList.{index}.unitAmount")
        details = item.recurringDetails
        if details is not None and details.intervalCount > rules.MAX_INTERVAL_COUNT[details.interval.value]:
            raise BadRequest(
                f"priceList.{index}.recurringDetails.intervalCount",
                f"at most {rules.MAX_INTERVAL_COUNT[details.interval.value]} for interval "
                f"{details.interval.value} (a billing period is at most 100 years)",
            )
        for currency, amount in (item.currencyOptions or {}).items():
            field = f"priceList.{index}.currencyOptions.{currency}"
            if currency == item.currency:
                raise BadRequest(field, "same currency as the price itself")
            rules.check_magnitude(amount, field)


def create_product(conn: sqlite3.Connection, req: ProductRequest, *, now: int) -> dict[str, Any]:
    """Write a checked product with its prices (inside the caller's write transaction); the Product."""
    product_id = store.insert_product(
        conn,
        name=req.name,
        description=req.description,
        image=req.image,
        tax_category=req.taxCategory.value if req.taxCategory else None,
        localized_names=req.localizedNames,
        now=now,
    )
    for position, item in enumerate(req.priceList or []):
        details = item.recurringDetails
        price_id, _ = store.insert_price(
            conn,
            product_id=product_id,
            currency=item.currency,
            unit_minor=to_minor(item.unitAmount, item.currency),
            price_type=item.priceType.value,
            interval=details.interval.value if details else None,
            interval_count=details.intervalCount if details else None,
            trial_days=details.trialPeriodDays if details else None,
            pricing_model=(details.pricingModel.value if details.pricingModel else "flat_rate")
            if details
            else None,
            currency_options={
                cur: to_minor(amount, cur) for cur, amount in (item.currencyOptions or {}).items()
            }
            or None,
            is_default=bool(item.isDefaultPrice),
            position=position,
            now=now,
        )
        if item.isDefaultPrice:
            store.set_default_price(conn, product_id=product_id, price_id=price_id)
    return product_record(conn, product_id=product_id)


def price_record(row: sqlite3.Row) -> dict[str, Any]:
    """A price of the Product response: the spec's fields plus currency, priceType, interval, options."""
    options = store.loads(row["currency_options"]) or {}
    recurring = None
    if row["price_type"] == PriceType.RECURRING.value:
        recurring = {
            "trialPeriodDays": row["trial_days"] or 0,
            "intervalCount": row["interval_count"],
            "transformQuantity": {"divideBy": 1},
        }
    return {
        "priceId": row["id"],
        "priceSnapshotId": row["snapshot_id"],
        "productId": row["product_id"],
        "unitAmount": from_minor(row["unit_minor"], row["currency"]),
        "currency": row["currency"],
        "priceType": row["price_type"],
        "interval": row["interval"],
        "pricingModel": row["pricing_model"],
        "isDefaultPrice": bool(row["is_default"]),
        "recurring": recurring,
        "currencyOptions": {cur: from_minor(minor, cur) for cur, minor in options.items()} or None,
        "active": bool(row["active"]),
        "createTime": int(row["create_time"]),
    }


def product_record(conn: sqlite3.Connection, *, product_id: str) -> dict[str, Any]:
    """The Product response data, read back from the store."""
    row = store.get_product(conn, product_id=product_id)
    assert row is not None
    return {
        "productId": row["id"],
        "name": row["name"],
        "active": bool(row["active"]),
        "description": row["description"],
        "defaultPrice": row["default_price"],
        "image": row["image"],
        "taxCategory": row["tax_category"],
        "priceList": [price_record(price) for price in store.list_prices(conn, product_id=product_id)],
        "createTime": int(row["create_time"]),
        "updateTime": int(row["update_time"]),
        "localizedNames": store.loads(row["localized_names"]),
    }
