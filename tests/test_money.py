"""Exact money: ISO 4217 digits, exact major/minor conversion, refusal to round silently."""

from __future__ import annotations

from decimal import Decimal

import pytest
from babel.numbers import format_currency, list_currencies

from toolkit.money import (
    MoneyError,
    check_currency,
    format_money,
    from_minor,
    minor_digits,
    round_to_currency,
    to_minor,
)


@pytest.mark.parametrize(
    ("currency", "digits"),
    [
        ("USD", 2),
        ("EUR", 2),
        ("JPY", 0),
        ("KRW", 0),
        ("KWD", 3),
        ("BHD", 3),
        ("IQD", 3),
        ("CLF", 4),
        ("IDR", 2),
        ("COP", 2),  # CLDR 47 (babel 2.19) says 0 for IDR, COP and HUF
        ("HUF", 2),
        ("VND", 0),
    ],
)
def test_minor_digits_follow_iso_4217(currency: str, digits: int) -> None:
    assert minor_digits(currency) == digits


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("12.30", "USD", 1230),
        ("12.3", "USD", 1230),
        ("1200", "JPY", 1200),
        ("1.250", "KWD", 1250),
        ("999999999999.99", "USD", 99999999999999),
        ("0.01", "USD", 1),
    ],
)
def test_to_minor_is_exact(amount: str, currency: str, minor: int) -> None:
    assert to_minor(amount, currency) == minor
    assert from_minor(minor, currency) == Decimal(amount)


def test_more_decimals_than_the_currency_allows_is_an_error_not_rounding() -> None:
    with pytest.raises(MoneyError, match="more decimals than USD allows"):
        to_minor("10.005", "USD")
    with pytest.raises(MoneyError, match="JPY"):
        to_minor("100.5", "JPY")


def test_floats_are_refused() -> None:
    with pytest.raises(MoneyError, match="float"):
        to_minor(0.1, "USD")  # type: ignore[arg-type]


@pytest.mark.parametrize("code", ["usd", "US", "XYZ", "", "USDD"])
def test_bad_currency_codes_are_named(code: str) -> None:
    with pytest.raises(MoneyError, match=r"uppercase|ISO 4217"):
        check_currency(code)


def test_from_minor_keeps_the_currency_digits() -> None:
    assert str(from_minor(1230, "USD")) == "12.30"
    assert str(from_minor(1250, "KWD")) == "1.250"
    assert str(from_minor(1200, "JPY")) == "1200"


def test_round_to_currency_is_half_even() -> None:
    assert round_to_currency(Decimal("0.125"), "USD") == Decimal("0.12")
    assert round_to_currency(Decimal("0.135"), "USD") == Decimal("0.14")
    assert round_to_currency(Decimal("1234.5"), "JPY") == Decimal("1234")


def test_format_money() -> None:
    assert format_money(Decimal("1234.5"), "USD") == "$1,234.50"
    assert format_money(123450, "USD", minor=True) == "$1,234.50"
    assert format_money(1200, "JPY", minor=True) == "¥1,200"


@pytest.mark.parametrize("locale", ["en_US", "de_DE", "fr_CH", "de_CH", "nl_NL", "ja_JP", "ar_EG", "en_IN"])
def test_format_money_writes_what_babel_writes_in_every_currency(locale: str) -> None:
    """The report formats thousands of amounts through a way of writing read once per currency;
    every currency Babel knows must read exactly as Babel's own ``format_currency`` writes it."""
    amounts = [
        Decimal(text)
        for text in (
            "0.00",
            "-0",
            "0.07",
            "12.3",
            "12.300",
            "-1234.56",
            "1000000",
            "98765432109.8765",
            "5E+2",
        )
    ]
    for currency in sorted(list_currencies()):
        for amount in amounts:
            babel = format_currency(amount, currency, locale=locale, decimal_quantization=False)
            assert format_money(amount, currency, locale=locale) == babel, (currency, amount)
