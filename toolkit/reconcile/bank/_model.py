"""What every format's reader hands back: statements and their booked entries, exact and placed.

A reader turns its format into these and nothing else, so the de-duplication and the continuity
rules (``_combine``) are written once for all four formats.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from toolkit.errors import InputError, MoneyError
from toolkit.money import check_currency, to_minor


@dataclass(frozen=True, slots=True)
class Entry:
    """One booked entry, its amount signed (credit positive) in the currency's minor units."""

    amount_minor: int
    booking_date: dt.date
    value_date: dt.date
    entry_reference: str
    counterparty: str
    remittance: str
    reversal: bool
    place: str


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of one account: its balances (minor units, signed) and its entries.

    ``opening_derived`` marks an opening balance the file does not state (OFX gives only the
    closing one): it is the closing balance less the entries, so continuity can still be checked.
    """

    statement_id: str
    format: str
    account: str
    currency: str
    opening_minor: int | None
    opening_date: dt.date | None
    closing_minor: int | None
    closing_date: dt.date | None
    entries: tuple[Entry, ...]
    source: str
    place: str
    opening_derived: bool = False


def refuse(source: str, place: str, message: str) -> InputError:
    """The one-line error every reader raises: the file, the place in it, what is wrong."""
    return InputError(f"{source}: {place}: {message}" if place else f"{source}: {message}")


def currency_of(code: str, source: str, place: str) -> str:
    """An ISO 4217 code, or an error naming where the unknown one was written."""
    try:
        return check_currency(code.strip())
    except MoneyError as exc:
        raise refuse(source, place, f"currency {exc}") from None


def minor_units(text: str, currency: str, source: str, place: str) -> int:
    """Exact minor units of an unsigned decimal text; more decimals than the currency has is refused."""
    written = text.strip()
    if not written or written[0] in "+-":
        raise refuse(source, place, f"amount {written!r} is not an unsigned number")
    try:
        return to_minor(written, currency)
    except MoneyError as exc:
        raise refuse(source, place, f"amount {written!r}: {exc}") from None


def iso_date(text: str, source: str, place: str) -> dt.date:
    """The date of an ISO 8601 date or date-time as written (its own day, not converted to UTC)."""
    written = text.strip()
    try:
        return dt.date.fromisoformat(written[:10])
    except ValueError:
        raise refuse(source, place, f"{written!r} is not a date") from None
