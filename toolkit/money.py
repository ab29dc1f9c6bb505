"""Exact money: ISO 4217 minor units, exact conversion between major and minor units, formatting.

No float ever holds an amount. Amounts are ``Decimal`` in models and integer minor units in frames.
Digits come from babel's CLDR data, corrected where CLDR's accounting digits differ from ISO 4217.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from functools import cache

from babel import Locale
from babel.numbers import (
    format_currency,
    get_currency_precision,
    get_currency_symbol,
    get_decimal_symbol,
    get_group_symbol,
    list_currencies,
)

# Re-exported: the functions here raise it, and callers catch it as ``toolkit.money.MoneyError``.
from toolkit.errors import MoneyError as MoneyError

# ISO 4217 minor units where CLDR's default digits say otherwise (CLDR follows cash practice, and
# changes: CLDR 47, in babel 2.19, gave COP, HUF and IDR 0 digits, where ISO 4217 keeps 2).
_ISO_DIGITS_OVERRIDES: dict[str, int] = {
    "AFN": 2,
    "ALL": 2,
    "COP": 2,
    "HUF": 2,
    "IDR": 2,
    "IQD": 3,
    "IRR": 2,
    "KPW": 2,
    "LAK": 2,
    "LBP": 2,
    "MGA": 2,
    "MMK": 2,
    "MRO": 2,
    "RSD": 2,
    "SLL": 2,
    "SOS": 2,
    "STD": 2,
    "SYP": 2,
    "YER": 2,
    "ZMK": 2,
    "ZWD": 2,
}


@cache
def _known_currencies() -> frozenset[str]:
    return frozenset(list_currencies())


def is_currency(code: str) -> bool:
    """True for an uppercase three-letter ISO 4217 code."""
    return len(code) == 3 and code.isalpha() and code.isupper() and code in _known_currencies()


def check_currency(code: str) -> str:
    """Return ``code`` when it is an uppercase ISO 4217 code, else raise ``MoneyError``."""
    if not is_currency(code):
        if code.upper() != code and is_currency(code.upper()):
            raise MoneyError(f"must be uppercase: {code.upper()!r}, not {code!r}")
        raise MoneyError(f"{code!r} is not a three-letter ISO 4217 currency code")
    return code


@cache
def minor_digits(currency: str) -> int:
    """Number of decimal places of the currency's minor unit (JPY 0, USD 2, KWD 3)."""
    check_currency(currency)
    if currency in _ISO_DIGITS_OVERRIDES:
        return _ISO_DIGITS_OVERRIDES[currency]
    return int(get_currency_precision(currency))


def parse_decimal(text: str | int | Decimal) -> Decimal:
    """Read an amount written as text (``"12.30"``) exactly; floats are refused."""
    if isinstance(text, float):
        raise MoneyError("amounts must not be floats; pass a str, int or Decimal")
    try:
        value = Decimal(text.strip()) if isinstance(text, str) else Decimal(text)
    except InvalidOperation:
        raise MoneyError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise MoneyError(f"{text!r} is not a finite amount")
    return value


#: The most decimals any ISO 4217 currency has (CLF, UYW: 4); amounts with more are never money.
MAX_DECIMALS = 4
#: Digits before the decimal point: with ``MAX_DECIMALS`` the minor units stay below 10**18 (int64).
MAX_INTEGER_DIGITS = 14
#: A request's amounts are below this many major units (the sandbox refuses more, and the client
#: checks it before sending: minor units stay far inside SQLite's int64).
MAX_REQUEST_AMOUNT = Decimal(10) ** 12


def decimal_places(amount: Decimal) -> int:
    """Decimals the amount really has (``12.300`` has 1), read off its digits: no context, no rounding."""
    _, digits, exponent = amount.as_tuple()
    if not isinstance(exponent, int):
        raise MoneyError(f"{amount!r} is not a finite amount")
    text = "".join(map(str, digits))
    if not text.strip("0"):
        return 0
    return max(0, -(exponent + len(text) - len(text.rstrip("0"))))


def integer_digits(amount: Decimal) -> int:
    """Digits before the decimal point (``1200.5`` has 4; ``0.5`` has 0), exactly."""
    _, digits, exponent = amount.as_tuple()
    if not isinstance(exponent, int):
        raise MoneyError(f"{amount!r} is not a finite amount")
    stripped = "".join(map(str, digits)).lstrip("0")
    return max(0, len(stripped) + exponent) if stripped else 0


def check_amount_range(amount: Decimal) -> Decimal:
    """The amount, when it is a finite number money can hold; else ``MoneyError`` (never rounded).

    At most ``MAX_INTEGER_DIGITS`` digits before the point and ``MAX_DECIMALS`` after it: beyond
    that a Decimal context would round (28 digits) or overflow, and a minor-unit integer would
    not fit 64 bits.
    """
    if not amount.is_finite():
        raise MoneyError(f"{amount} is not a finite amount")
    if integer_digits(amount) > MAX_INTEGER_DIGITS:
        raise MoneyError(f"more than {MAX_INTEGER_DIGITS} digits before the decimal point")
    if decimal_places(amount) > MAX_DECIMALS:
        raise MoneyError(f"more than {MAX_DECIMALS} decimals (no currency has more)")
    return amount


def fits_currency(amount: Decimal, currency: str) -> bool:
    """True when the amount has no more decimals than the currency's minor unit allows (exactly)."""
    return decimal_places(amount) <= minor_digits(currency)


def to_minor(amount: Decimal | str | int, currency: str) -> int:
    """Exact major -> minor units; more decimals than the currency allows is an error, not rounding."""
    value = check_amount_range(parse_decimal(amount))
    if not fits_currency(value, currency):
        raise MoneyError(f"{value} has more decimals than {currency} allows ({minor_digits(currency)})")
    numerator, denominator = value.as_integer_ratio()
    return int(numerator * 10 ** minor_digits(currency) // denominator)


def from_minor(minor: int, currency: str) -> Decimal:
    """Exact minor -> major units, with the currency's number of decimals (1230 USD -> 12.30)."""
    digits = minor_digits(currency)
    return Decimal(int(minor)).scaleb(-digits).quantize(Decimal(1).scaleb(-digits))


def round_to_currency(amount: Decimal, currency: str) -> Decimal:
    """Round half-to-even to the currency's minor unit (used only where conversion must round)."""
    return amount.quantize(Decimal(1).scaleb(-minor_digits(currency)), rounding=ROUND_HALF_EVEN)


def format_money(amount: Decimal | int, currency: str, *, minor: bool = False, locale: str = "en_US") -> str:
    """Human text for an amount (``$12.30``, ``¥1,200``); pass ``minor=True`` for minor units."""
    value = from_minor(int(amount), currency) if minor else Decimal(amount)
    written = _written_as(currency, locale)
    if written is None or not value.is_finite():
        return _babel_text(value, currency, locale)
    return written.text(value)


def _babel_text(value: Decimal, currency: str, locale: str) -> str:
    return str(format_currency(value, currency, locale=_locale(locale), decimal_quantization=False))


@dataclass(frozen=True)
class _WrittenAs:
    """How Babel writes amounts of one currency in one locale, read once off its pattern: the
    text around the number (positive, negative), the currency's digits and the locale's symbols.

    Babel works this out again for every amount (with the currency's plural name, which the
    pattern does not use): about 16 us an amount against 2-3 us here, and the page of a report of
    100,000 payments formats 7,000. ``text`` gives Babel's text exactly (``_written_as`` checks it
    on sample amounts, and the tests on every currency in eight locales)."""

    prefix: tuple[str, str]
    suffix: tuple[str, str]
    digits: int
    symbols: dict[int, str]

    def text(self, value: Decimal) -> str:
        """``value`` as Babel's ``format_currency(..., decimal_quantization=False)`` writes it: at
        least the currency's digits, more when the amount has more, grouped by thousands."""
        negative = int(value.is_signed())
        number = f"{abs(value).normalize():,f}"  # exact: every digit the amount has, no more
        point = number.find(".")
        places = 0 if point < 0 else len(number) - point - 1
        if places < self.digits:
            number += ("" if places else ".") + "0" * (self.digits - places)
        return f"{self.prefix[negative]}{number.translate(self.symbols)}{self.suffix[negative]}"


#: Amounts each way of writing is checked on against Babel before it is used.
_SAMPLES = tuple(
    Decimal(text)
    for text in ("0", "-0.00", "7", "0.5", "-1234.5", "1234567.891", "12.30", "1E+3", "-999.9999")
)


@cache
def _written_as(currency: str, locale: str) -> _WrittenAs | None:
    """The way ``currency`` is written in ``locale``, or None where Babel's pattern is one this
    does not write (grouping other than by thousands, as in India; scientific or significant
    digits; the currency's name; a group symbol that is a quote) or gives other text on a sample."""
    place = _locale(locale)
    pattern = place.currency_formats["standard"]
    group, decimal = get_group_symbol(place), get_decimal_symbol(place)
    around = "".join((*pattern.prefix, *pattern.suffix))
    if (
        pattern.grouping != (3, 3)
        or pattern.int_prec[0] > 1
        or pattern.exp_prec
        or pattern.scale
        or "@" in pattern.pattern
        or "¤¤¤" in around
        or "'" in group + decimal
    ):
        return None

    def filled(text: str) -> str:  # as ``NumberPattern.apply`` fills and unquotes its pattern
        text = text.replace("¤¤", currency.upper()).replace("¤", get_currency_symbol(currency, place))
        return re.sub(r"'([^']*)'", lambda m: m.group(1) or "'", text)

    written = _WrittenAs(
        prefix=(filled(pattern.prefix[0]), filled(pattern.prefix[1])),
        suffix=(filled(pattern.suffix[0]), filled(pattern.suffix[1])),
        digits=int(get_currency_precision(currency)),
        symbols=str.maketrans({",": group, ".": decimal}),
    )
    if any(written.text(sample) != _babel_text(sample, currency, locale) for sample in _SAMPLES):
        return None
    return written


@cache
def _locale(name: str) -> Locale:
    """A parsed locale, once: parsing it took half of each call (a report formats thousands)."""
    return Locale.parse(name)
