"""POST /product over real HTTP: prices, recurring details, defaults, currency options, rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.conftest import Api, recurring


def test_product_with_one_time_and_recurring_prices(api: Api) -> None:
    body = {
        "name": "Pro",
        "localizedNames": {"fr": "Pro FR", "ja-JP": "プロ"},
        "description": "d",
        "image": "img_1",
        "taxCategory": "software_service",
        "priceList": [
            {"currency": "USD", "unitAmount": 9.99, "currencyOptions": {"EUR": 9.49, "JPY": 1500}},
            recurring("quarter", 1, trial=14, amount=30) | {"isDefaultPrice": True},
            recurring("year", 2, amount=1200, currency="JPY"),
        ],
    }
    data = api.ok("POST", "/product", body)
    assert data["productId"].startswith("prod_") and data["active"] is True
    assert data["localizedNames"] == body["localizedNames"] and data["taxCategory"] == "software_service"
    assert isinstance(data["createTime"], int) and data["createTime"] == data["updateTime"]
    one_time, quarterly, yearly = data["priceList"]
    assert data["defaultPrice"] == quarterly["priceId"]
    for price in data["priceList"]:
        assert price["priceId"].startswith("price_") and price["priceSnapshotId"].startswith("psnap_")
        assert price["productId"] == data["productId"] and price["active"] is True
    assert one_time["recurring"] is None and one_time["priceType"] == "one_time"
    assert one_time["currencyOptions"] == {"EUR": 9.49, "JPY": 1500}
    assert quarterly["recurring"] == {
        "trialPeriodDays": 14,
        "intervalCount": 1,
        "transformQuantity": {"divideBy": 1},
    }
    assert quarterly["interval"] == "quarter" and quarterly["pricingModel"] == "flat_rate"
    assert (yearly["currency"], yearly["unitAmount"], yearly["interval"]) == ("JPY", 1200, "year")


def test_amounts_keep_currency_digits(api: Api) -> None:
    response = api.post("/product", {"name": "K", "priceList": [{"currency": "KWD", "unitAmount": 1.25}]})
    assert b'"unitAmount":1.250' in response.content


@pytest.mark.parametrize("interval", ["day", "week", "month", "quarter", "year"])
def test_every_interval_is_accepted(api: Api, interval: str) -> None:
    data = api.ok("POST", "/product", {"name": "P", "priceList": [recurring(interval, 3)]})
    assert data["priceList"][0]["interval"] == interval


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"priceList": []}, "name", "required"),
        ({"name": ""}, "name", "at least 1"),
        ({"name": "P", "taxCategory": "food"}, "taxCategory", "Input should be"),
        ({"name": "P", "localizedNames": {"fr": 1}}, "localizedNames.fr", "string"),
        (
            {
                "name": "P",
                "priceList": [
                    {"currency": "USD", "unitAmount": 1, "isDefaultPrice": True},
                    {"currency": "USD", "unitAmount": 2, "isDefaultPrice": True},
                ],
            },
            "priceList",
            "at most one",
        ),
        ({"name": "P", "defaultPrice": "price_x"}, "defaultPrice", "isDefaultPrice"),
        (
            {"name": "P", "priceList": [{"currency": "USD", "unitAmount": 0}]},
            "priceList.0.unitAmount",
            "greater than 0",
        ),
        (
            {"name": "P", "priceList": [{"currency": "JPY", "unitAmount": 1.5}]},
            "priceList.0.unitAmount",  # it was "priceList.0: unitAmount: ...", two fields to a parser
            "more decimals",
        ),
        (
            {"name": "P", "priceList": [{"currency": "USD", "unitAmount": 1, "priceType": "recurring"}]},
            "priceList.0.recurringDetails",
            "required when priceType is recurring",
        ),
        (
            {"name": "P", "priceList": [recurring() | {"recurringDetails": {"interval": "fortnight"}}]},
            "priceList.0.recurringDetails.interval",
            "Input should be",
        ),
        (
            {
                "name": "P",
                "priceList": [
                    recurring() | {"recurringDetails": {"interval": "month", "pricingModel": "tiered"}}
                ],
            },
            "pricingModel",
            "Input should be",
        ),
        (
            {"name": "P", "priceList": [{"currency": "USD", "unitAmount": 1, "currencyOptions": {"USD": 2}}]},
            "priceList.0.currencyOptions.USD",
            "same currency",
        ),
        (
            {"name": "P", "priceList": [{"currency": "USD", "unitAmount": 1, "isDefaultPrice": "yes"}]},
            "priceList.0.isDefaultPrice",
            "true or false",
        ),
        (
            {
                "name": "P",
                "priceList": [
                    recurring() | {"recurringDetails": {"interval": "month", "intervalCount": "2"}}
                ],
            },
            "intervalCount",
            "integer",
        ),
        (
            {
                "name": "P",
                "priceList": [
                    recurring() | {"recurringDetails": {"interval": "month", "intervalCount": 1201}}
                ],
            },
            "priceList.0.recurringDetails.intervalCount",
            "at most 1200 for interval month",
        ),
    ],
)
def test_invalid_product_is_400(api: Api, body: dict[str, Any], field: str, rule: str) -> None:
    msg = api.error("POST", "/product", body, 400)
    assert f"{field}: " in msg and rule in msg, msg  # the documented "<dotted path>: <rule>"
