"""Amount tolerances: how far a ledger amount may be from the processor's and still match.

Written as ``--amount-tolerance`` (and the notebook's ``amount_tolerance``) takes it: one or more
terms separated by commas, each ``VALUE`` (every currency not named) or ``CUR=VALUE`` (that
currency); ``VALUE`` is ``N`` minor units, ``P%`` of the ledger amount, or ``P%:N`` (P percent of
the ledger amount, and at least N minor units). For example ``5``, ``0.5%``, ``0.5%:10``,
``JPY=1,EUR=0.1%:5,10``.

A percentage is exact: a difference ``d`` is within ``P%`` of an amount ``a`` when
``|d| * 100 <= |a| * P``, computed in integers, never through float. A match within tolerance is
never silent: the engine reports it as ``within_tolerance`` with its variance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from toolkit.errors import InputError
from toolkit.money import is_currency

_VALUE = re.compile(
    r"^(?:(?P<minor>[0-9]{1,18})|(?P<percent>[0-9]{1,6}(?:[.][0-9]{1,6})?)%(?::(?P<floor>[0-9]{1,18}))?)$"
)


@dataclass(frozen=True)
class Allowance:
    """What one currency allows: ``minor`` units, or ``percent`` of the ledger amount when that is more."""

    minor: int = 0
    percent: Decimal = Decimal(0)

    @property
    def is_zero(self) -> bool:
        """True when nothing but an exact match is allowed."""
        return not self.minor and not self.percent

    def ratio(self) -> tuple[int, int]:
        """``percent / 100`` as an exact fraction of integers ``(numerator, denominator)``."""
        _sign, digits, exponent = self.percent.as_tuple()
        numerator = int("".join(map(str, digits)) or "0")
        places = max(0, -int(exponent))
        numerator *= 10 ** max(0, int(exponent))
        return numerator, 100 * 10**places

    def allows(self, difference: int, amount: int) -> bool:
        """Whether ``difference`` (minor units) is within this allowance of ``amount``."""
        numerator, denominator = self.ratio()
        return abs(difference) <= self.minor or abs(difference) * denominator <= abs(amount) * numerator

    def text(self) -> str:
        """``5 minor units``, ``0.5%``, ``0.5% (at least 10 minor units)``, ``none``."""
        units = f"{self.minor} minor unit{'s' if self.minor != 1 else ''}"
        if not self.percent:
            return units if self.minor else "none"
        percent = f"{self.percent.normalize():f}%"
        return f"{percent} (at least {units})" if self.minor else percent


@dataclass(frozen=True)
class Tolerance:
    """An allowance for every currency (``default``) and, where given, one per currency."""

    default: Allowance = Allowance()
    per_currency: tuple[tuple[str, Allowance], ...] = ()

    @classmethod
    def of(cls, value: int | str | Tolerance | None) -> Tolerance:
        """A tolerance from what a caller gives: minor units, the text form, or a tolerance."""
        if isinstance(value, Tolerance):
            return value
        if value is None:
            return cls()
        if isinstance(value, bool):
            raise InputError("amount tolerance must be minor units or text such as 0.5%:10")
        if isinstance(value, int):
            if value < 0:
                raise InputError("amount tolerance must be >= 0 (minor units)")
            return cls(Allowance(minor=value))
        return cls.parse(value)

    @classmethod
    def parse(cls, text: str) -> Tolerance:
        """Read the text form (see the module docstring); a clear error naming the bad term."""
        default: Allowance | None = None
        per_currency: dict[str, Allowance] = {}
        terms = [t.strip() for t in str(text).split(",")]
        if not any(terms):
            raise InputError(
                "amount tolerance is empty; give minor units (5), a percentage (0.5%) or both (0.5%:5)"
            )
        for term in terms:
            currency, equals, value = term.rpartition("=")
            allowance = _allowance(value.strip(), term)
            if not equals:
                if default is not None:
                    raise InputError(f"amount tolerance {text!r}: more than one value for every currency")
                default = allowance
                continue
            code = currency.strip().upper()
            if not is_currency(code):
                raise InputError(
                    f"amount tolerance term {term!r}: {currency.strip()!r} is not an ISO 4217 currency"
                )
            if code in per_currency:
                raise InputError(f"amount tolerance {text!r}: {code} is given twice")
            per_currency[code] = allowance
        return cls(default or Allowance(), tuple(sorted(per_currency.items())))

    @property
    def is_zero(self) -> bool:
        """True when only exact amounts match (today's default)."""
        return self.default.is_zero and all(a.is_zero for _, a in self.per_currency)

    def for_currency(self, currency: str) -> Allowance:
        """The allowance of ``currency``."""
        return dict(self.per_currency).get(currency, self.default)

    def allows(self, difference: int, amount: int, currency: str) -> bool:
        """Whether ``difference`` is within tolerance of ``amount`` in ``currency``."""
        return self.for_currency(currency).allows(difference, amount)

    def text(self) -> str:
        """In words, for reports: ``none``, ``5 minor units``, ``0.5%; JPY 1 minor unit``."""
        parts = [self.default.text()] if not self.default.is_zero or not self.per_currency else []
        parts += [f"{code} {allowance.text()}" for code, allowance in self.per_currency]
        return "; ".join(parts)

    def spec(self) -> str:
        """The text form, as ``parse`` reads it back."""
        terms = [f"{code}={_spec(a)}" for code, a in self.per_currency]
        return ",".join([*terms, _spec(self.default)])

    def __str__(self) -> str:
        return self.text()


def _spec(allowance: Allowance) -> str:
    if not allowance.percent:
        return str(allowance.minor)
    percent = f"{allowance.percent.normalize():f}%"
    return f"{percent}:{allowance.minor}" if allowance.minor else percent


def _allowance(value: str, term: str) -> Allowance:
    found = _VALUE.match(value)
    if found is None:
        raise InputError(
            f"amount tolerance term {term!r}: write minor units (5), a percentage (0.5%) or a "
            "percentage with a floor in minor units (0.5%:10), optionally after a currency (USD=5)"
        )
    if found["minor"] is not None:
        return Allowance(minor=int(found["minor"]))
    try:
        percent = Decimal(found["percent"])
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise InputError(f"amount tolerance term {term!r}: {found['percent']!r} is not a number") from None
    if percent > 100:
        raise InputError(f"amount tolerance term {term!r}: a percentage above 100% matches any amount")
    return Allowance(minor=int(found["floor"] or 0), percent=percent)
