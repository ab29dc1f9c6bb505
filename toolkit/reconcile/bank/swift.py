"""SWIFT MT940 (customer statement message), read with the ``mt-940`` library.

The library splits the tags and reads each (dates, Decimal amounts, the ``:86:`` details of the
common bank dialects); this module cuts the file into statements at each ``:20:`` itself so that
every statement and ``:61:`` line keeps its line number, and signs each amount from its mark:
C and RD (a reversed debit) are credits, D and RC (a reversed credit) debits.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import mt940

from toolkit.reconcile.bank._model import Entry, Statement, currency_of, minor_units, refuse

#: Each opt-in fix of the library (reversal marks, whole ``:86:`` texts, a byte-order mark...).
OPTIONS = mt940.Options.all()
#: A statement starts at each ``:20:`` (transaction reference) at the start of a line.
STATEMENT_START = re.compile(r"(?m)^:20:")
ENTRY_LINE = re.compile(r"(?m)^:61:")
#: Placeholders for "no reference" a bank writes in the reference subfields.
NO_REFERENCE = {"", "NONREF", "NOTPROVIDED"}


def read_mt940(text: str, source: str) -> list[Statement]:
    """Every statement (``:20:`` to the next ``:20:``) of an MT940 file."""
    starts = [m.start() for m in STATEMENT_START.finditer(text)]
    if not starts:
        raise refuse(source, "line 1", "no :20: tag opens a statement")
    ends = [*starts[1:], len(text)]
    return [
        _statement(text[a:b], text.count("\n", 0, a) + 1, source) for a, b in zip(starts, ends, strict=True)
    ]


def _statement(block: str, first_line: int, source: str) -> Statement:
    place = f"line {first_line}"
    try:
        parsed = mt940.parse(block, options=OPTIONS)
    except Exception as exc:  # the library raises bare exceptions of many kinds for a bad tag
        raise refuse(source, place, f"the statement cannot be read: {_first_line(exc)}") from None
    data = parsed.data
    opening = data.get("final_opening_balance") or data.get("intermediate_opening_balance")
    closing = data.get("final_closing_balance") or data.get("intermediate_closing_balance")
    account = str(data.get("account_identification") or "").strip()
    if not account:
        raise refuse(source, place, "the statement has no :25: account identification")
    if opening is None or closing is None:
        raise refuse(source, place, "the statement has no :60F:/:60M: opening or :62F:/:62M: closing balance")
    currency = currency_of(str(opening.amount.currency or ""), source, place)
    lines = [first_line + block.count("\n", 0, m.start()) for m in ENTRY_LINE.finditer(block)]
    if len(lines) != len(parsed.transactions):
        raise refuse(source, place, f"{len(lines)} :61: lines but {len(parsed.transactions)} entries read")
    entries = tuple(
        _entry(t.data, currency, source, f"line {n}") for t, n in zip(parsed.transactions, lines, strict=True)
    )
    number = "/".join(str(data[k]) for k in ("statement_number", "sequence_number") if data.get(k))
    return Statement(
        statement_id="/".join(p for p in (str(data.get("transaction_reference") or "").strip(), number) if p),
        format="mt940",
        account=account,
        currency=currency,
        opening_minor=_balance(opening, currency, source, place),
        opening_date=_date(opening.date),
        closing_minor=_balance(closing, currency, source, place),
        closing_date=_date(closing.date),
        entries=entries,
        source=source,
        place=place,
    )


def _balance(balance: Any, currency: str, source: str, place: str) -> int:
    """A ``:60:``/``:62:`` balance in signed minor units (D is a debit balance)."""
    amount = balance.amount
    if str(amount.currency) != currency:
        raise refuse(source, place, f"a balance in {amount.currency} in a {currency} statement")
    return _signed(amount.amount, currency, source, place)


def _signed(amount: Decimal, currency: str, source: str, place: str) -> int:
    """Minor units of the library's Decimal (exact: it reads the text, never a float), sign kept."""
    minor = minor_units(str(abs(amount)), currency, source, place)
    return -minor if amount < 0 else minor


def _entry(data: dict[str, Any], currency: str, source: str, place: str) -> Entry:
    """One ``:61:`` line with its ``:86:`` details."""
    mark = str(data.get("status") or "").upper()
    if mark not in ("C", "D", "RC", "RD"):
        raise refuse(source, place, f"debit/credit mark {mark!r} is not C, D, RC or RD")
    minor = minor_units(str(abs(data["amount"].amount)), currency, source, place)
    value = _date(data.get("date"))
    if value is None:
        raise refuse(source, place, ":61: has no value date")
    booking = _date(data.get("entry_date")) or value
    reference = str(data.get("bank_reference") or "").strip()
    details = "".join(str(data.get("transaction_details") or "").splitlines())
    return Entry(
        amount_minor=minor if mark in ("C", "RD") else -minor,
        booking_date=booking,
        value_date=value,
        entry_reference="" if reference.upper() in NO_REFERENCE else reference,
        counterparty=" ".join(str(data.get("applicant_name") or "").split()),
        remittance=" ".join(str(data.get("purpose") or details).split()),
        reversal=mark.startswith("R"),
        place=place,
    )


def _date(value: object) -> dt.date | None:
    return dt.date(value.year, value.month, value.day) if isinstance(value, dt.date) else None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
