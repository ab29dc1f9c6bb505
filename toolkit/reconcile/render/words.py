"""The report's words: categories, sides, sources, periods, cut-offs and money as a controller
reads them, shared by report.html, the notebook cell, the workbook's summary and the command's
lines, so that none of them says a row differently.

Amounts stay exact (``Decimal``) and are formatted with their currency; days are said in words
that do not depend on the process locale.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd

from toolkit.money import format_money, is_currency
from toolkit.reconcile.timing import duration_text
from toolkit.reconcile.tolerance import Tolerance

#: A period as ``write_report`` takes it: (start, end) dates (ISO text or ``date``, either may be
#: empty), text said as it is, or None for no period.
Period = tuple[date | str | None, date | str | None] | str | None

NO_PERIOD = "whole files: no period was selected, so every row was reconciled"

#: Each category in plain words (a short name, then what it means and what to do about it).
CATEGORY_WORDS: dict[str, tuple[str, str]] = {
    "missing_in_processor": (
        "In the books, not at the processor",
        "Check whether the payment was really taken (look it up at the processor by its "
        "reference); if it never happened, reverse the booking. A credit note the processor "
        "never refunded: refund the customer, or reverse the credit note.",
    ),
    "missing_in_ledger": (
        "At the processor, not in the books",
        "Money moved that the books do not show: find the order and book it, or refund the "
        "customer if the payment is not ours. A refund or chargeback (its kind says which): "
        "book it, and a chargeback's fee.",
    ),
    "amount_mismatch": (
        "Amounts differ",
        "Both sides have the payment for different amounts (the amount shown is the "
        "difference): check the order, then correct the booking or dispute the charge.",
    ),
    "currency_mismatch": (
        "Currencies differ",
        "Booked in one currency, charged in another: find out which currency the customer "
        "paid in and correct the booking (amounts in two currencies are not compared).",
    ),
    "status_mismatch": (
        "Statuses differ",
        "For example paid in the books but failed or pending at the processor: confirm the "
        "final status with the processor before recognising the revenue.",
    ),
    "duplicate_in_processor": (
        "Charged more than once",
        "The processor took the payment more than once (failed attempts do not count): a "
        "possible double charge. Confirm with the processor and refund the extra charge.",
    ),
    "duplicate_in_ledger": (
        "Booked more than once",
        "The books have the same payment more than once: remove the extra booking.",
    ),
    "unknown_outcome": (
        "Outcome unknown at the processor",
        "The processor has no final answer for this payment yet: look it up again before "
        "acting, and do not charge the customer again.",
    ),
    "rejected_row": (
        "Row could not be read",
        "A row of an input file is unusable (the reason is in the detail) and its amount is "
        "in no total: fix the file and run the reconciliation again.",
    ),
    "subscription_missing": (
        "Subscription on one side only",
        "Expected in the subscription ledger but not at the processor, or the reverse: check "
        "whether it was ever created, or cancelled without the books knowing.",
    ),
    "subscription_price_mismatch": (
        "Subscription on another price",
        "The processor bills a different price than the ledger expects: check what the "
        "customer agreed to, then move the subscription or correct the ledger.",
    ),
    "subscription_quantity_mismatch": (
        "Subscription quantity differs",
        "The processor bills a different number of units or seats: confirm the quantity "
        "with the customer's contract and correct one side.",
    ),
    "subscription_amount_mismatch": (
        "Next invoice differs",
        "The next invoice at the processor is not the amount the ledger expects: check the "
        "price, discounts and currency before the invoice goes out.",
    ),
    "subscription_state_mismatch": (
        "Subscription state differs",
        "For example active in the ledger but cancelled at the processor: confirm the state "
        "and update the side that is wrong.",
    ),
    "in_transit": (
        "In transit, not yet a break",
        "Pending or waiting for the customer at the processor, or booked with no processor row "
        "yet, and dated inside the settlement window before the cut-off: nothing to do yet; it "
        "becomes an exception if it is still open once the window has passed.",
    ),
    "within_tolerance": (
        "Matched within tolerance",
        "Both sides have the payment and the amounts differ by no more than the tolerance "
        "allows: nothing to correct per payment, but post the net variance per currency as a "
        "rounding or exchange difference, and look into it if it grows.",
    ),
}

#: The heading of each informational category's own section of the page.
INFO_HEADINGS: dict[str, str] = {
    "in_transit": "For information: in transit",
    "within_tolerance": "Matched within tolerance",
}

SIDE_WORDS = {
    "ledger": "Ledger (the books)",
    "processor": "Processor",
    "subscription ledger": "Subscription ledger",
}

FOOTNOTE = (
    "Matched: payments found on both sides with the same amount, currency and status (the "
    "ledger's amount). At risk: the sum of the exception amounts, as in the table of findings, "
    "a refund's as much as a charge's (for 'Amounts differ' the difference, for 'Charged more "
    "than once' the extra charges, otherwise the payment's amount; a payment with two problems "
    "counts in both). Net difference: all usable ledger rows minus all usable processor rows in "
    "that currency (duplicates count in full; failed payments, rows that could not be read and "
    "rows outside the period count on neither side; a payment matched through its price counts "
    "in the currency of its price)."
)
#: Added to the footnote when the page has informational rows.
INFO_FOOTNOTE = (
    "Payments in transit and matches within tolerance are not exceptions and not at risk: they "
    "are listed apart, for information. The matched payments include the matches within "
    "tolerance, at the ledger's amount."
)


def money_text(amount: Any, currency: Any, *, signed: bool = False) -> str:
    """Formatted money (``$12.30``) when the currency is known, else the exact text or ''."""
    if amount is None or amount is pd.NA:
        return ""
    if isinstance(currency, str) and is_currency(currency):
        text = format_money(Decimal(amount), currency)
    else:
        text = str(amount)
    return f"+{text}" if signed and Decimal(amount) > 0 else text


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _day(value: date | str | None) -> str:
    """A day in words (``1 May 2024``, not ``%B``, which follows the process locale); text that
    is not an ISO date is said as written."""
    if value is None:
        return ""
    if not isinstance(value, date):
        text = str(value).strip()
        try:
            value = date.fromisoformat(text)
        except ValueError:
            return text
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def period_text(period: Period) -> str:
    """The period in words; inclusive whole days in UTC, as ``select_period`` applies it."""
    if period is None:
        return NO_PERIOD
    if isinstance(period, str):
        return period.strip() or NO_PERIOD
    start, end = (_day(p) for p in period)
    if start and end:
        return f"{start} (UTC)" if start == end else f"{start} to {end} (UTC, both days included)"
    if start:
        return f"from {start} onwards (UTC)"
    if end:
        return f"up to and including {end} (UTC)"
    return NO_PERIOD


def source_words(source: str, *, short: bool = False) -> str:
    """A source in words: a file by its name (not a local path); data handed over in Python
    (``<processor frame>``) as such, ``short`` for a table cell."""
    frame = re.fullmatch(r"<(.+) frame>", source)
    if frame:
        return f"{frame.group(1)} (from Python)" if short else f"{frame.group(1)} data passed in from Python"
    return re.split(r"[\\/]", source.rstrip("\\/"))[-1] or source


def tolerance_text(tolerance: Tolerance) -> str:
    """The amount tolerance in words."""
    if tolerance.is_zero:
        return "amounts must match exactly"
    return f"differences of up to {tolerance.text()} count as matching, and are listed with their variance"


def moment_text(moment: datetime) -> str:
    """A cut-off in words, in UTC (``20 November 2026, 00:00 UTC``); a naive time is UTC."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{_day(moment.date())}, {moment:%H:%M} UTC"


def timing_text(cutoff: datetime | None, grace: timedelta | None) -> str:
    """The cut-off and the settlement window in words ('' when the run had neither), so that a
    controller knows which rows were left for a later run and which are in transit."""
    if cutoff is None:
        return f"settlement window {duration_text(grace)} before the cut-off" if grace else ""
    text = f"{moment_text(cutoff)}; rows dated after it are left for the next run"
    if grace:
        text += (
            f"; settlement window {duration_text(grace)}: payments dated from "
            f"{moment_text(cutoff - grace)} that have not settled yet are in transit, not breaks"
        )
    return text


def category_label(category: str) -> str:
    """The short plain name of a category (the code itself for one this module does not know)."""
    return CATEGORY_WORDS.get(category, (category, ""))[0]
