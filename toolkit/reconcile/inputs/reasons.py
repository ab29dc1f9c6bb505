"""Why a row cannot be used, in words: read again for the few rejected rows only, from their text
as written (``checks.py`` leaves a code per problem).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from toolkit.money import minor_digits
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs.checks import (
    AMOUNT_ERRORS,
    NOT_A_NUMBER,
    NUMBER,
    SPACE,
    TOO_MANY_DECIMALS,
    TOO_MANY_DIGITS,
    currency_codes,
)
from toolkit.reconcile.movements import KINDS
from toolkit.reconcile.relation import Relation, ident
from toolkit.reconcile.schema import PRICING_COLUMNS, REJECTED_COLUMNS

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput


def rejected_frame(loaded: LoadedInput, backend: Backend, rows: Relation) -> pd.DataFrame:
    """The rejected rows, as written, with every reason each one cannot be used."""
    status = "status" if loaded.kind == "payments" else "state"
    flags = [c for c in rows.columns if c.startswith("_bad_")]
    columns = [
        "merchantReferenceId",
        "amount",
        "currency",
        status,
        "source_row",
        "_amount_error",
        "_date_text",
        *flags,
        *(["subscriptionId", "quantity"] if loaded.kind != "payments" else []),
        *(["_when_text"] if "_when_text" in rows.columns else []),
        *(["type"] if loaded.typed else []),
        *[c for c in PRICING_COLUMNS if c in rows.columns],
    ]
    file = sources.source_sql(loaded.described, "_ord")
    table = backend.arrow(  # the rows may be the checks' stages (``rejected_rows``)
        f"SELECT {', '.join(ident(c) for c in columns)}, {file} AS _file FROM ({rows}) "
        "WHERE _rejected ORDER BY _ord"
    )
    records = table.to_pylist()
    period = loaded.period.column if loaded.period else ""
    dated = loaded.dated.column if loaded.dated else ""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": [r["merchantReferenceId"] for r in records],
            "amount": [r["amount"] for r in records],
            "currency": [r["currency"] for r in records],
            "status": [r[status] for r in records],
            "source_row": np.array([r["source_row"] for r in records], dtype=np.int64),
            "detail": [_reasons(r, status, period, dated, loaded.described.decimal) for r in records],
            "source": [r["_file"] for r in records],
        },
        columns=list(REJECTED_COLUMNS),
    )
    return frame


def _amount_reason(row: dict[str, Any], code: int, decimal: str) -> str:
    """Why an amount cannot be read, with the decimal mark the file was read with when it matters."""
    currency = str(row["currency"] or "").strip(SPACE).upper()
    digits = minor_digits(currency) if code == TOO_MANY_DECIMALS else None
    reason = AMOUNT_ERRORS[code].format(amount=row["amount"], currency=currency, digits=digits)
    if code == NOT_A_NUMBER and decimal == ",":
        return f"{reason} with a decimal comma (e.g. 1.234,56)"
    written = str(row["amount"] or "").strip(SPACE)
    if code == NOT_A_NUMBER and sources.ONE_COMMA.fullmatch(written):  # refused by ``_ungrouped``
        thousand, decimal_text = written.replace(",", ""), written.replace(",", ".")
        return f"{reason} ({thousand} or {decimal_text} {currency}? write {thousand} or {decimal_text})"
    if code == NOT_A_NUMBER and decimal == sources.POINT_UNDECIDED and sources.ONE_POINT.fullmatch(written):
        return (
            f"amount {written!r} may be {written.replace('.', '')} or {written} {currency}: no amount "
            "of the file's first rows says which decimal mark it uses (--decimal , or --decimal .)"
        )
    if code == NOT_A_NUMBER and sources.is_comma_decimal(written):
        return f"{reason} (a decimal comma? read the file with the decimal mark ',': --decimal ,)"
    return reason


def _price_problem(amount: str, currency: str) -> int:
    """The problem of a price the engine refused, found again from its text (a rejected row's
    reasons are worded in Python; a column of the check for it cost 10% of a run)."""
    if not re.fullmatch(NUMBER, amount):
        return NOT_A_NUMBER
    fraction = amount.partition(".")[2]
    return TOO_MANY_DECIMALS if fraction[minor_digits(currency) :].strip("0") else TOO_MANY_DIGITS


def _price_reason(row: dict[str, Any]) -> str:
    """Why a price (``pricingAmount``, ``pricingCurrency``) cannot be used, in the words the
    same fault of ``amount`` gets."""
    amount = str(row.get("pricingAmount") or "").strip(SPACE)
    currency = str(row.get("pricingCurrency") or "").strip(SPACE).upper()
    if not currency:
        return f"pricingAmount {amount!r} has no pricingCurrency"
    if not amount:
        return f"pricingCurrency {currency!r} has no pricingAmount"
    if currency not in currency_codes():
        return f"pricingCurrency {currency!r} is not an ISO 4217 code"
    code = _price_problem(amount, currency)
    digits = minor_digits(currency) if code == TOO_MANY_DECIMALS else None
    reason = AMOUNT_ERRORS.get(code, AMOUNT_ERRORS[NOT_A_NUMBER])
    said = reason.format(amount=amount, currency=currency, digits=digits)
    return said.replace("amount", "pricingAmount", 1)


def _reasons(row: dict[str, Any], status: str, period: str, dated: str = "", decimal: str = ".") -> str:
    """Every reason a row cannot be used, in words (few rows: Python is fine)."""
    parts: list[str] = []
    if row.get("_bad_subscription"):
        parts.append("subscriptionId is empty")
    if row.get("_bad_key"):
        parts.append("merchantReferenceId is empty")
    if row.get("_bad_currency"):
        parts.append(f"currency {row['currency']!r} is not an ISO 4217 code")
    if row.get("_bad_type"):
        parts.append(
            f"type {str(row['type']).strip(SPACE)!r} is not a kind of movement the toolkit knows "
            f"({', '.join(KINDS)}, or their usual names)"
        )
    if row.get("_bad_status"):
        parts.append(f"status {row[status]!r} is not one of {', '.join(PAYMENT_STATUS_NAMES)} or 1/2/3/5")
    code = int(row.get("_amount_error") or 0)
    if code in AMOUNT_ERRORS:
        parts.append(_amount_reason(row, code, decimal))
    if row.get("_bad_quantity"):
        parts.append(f"quantity {row['quantity'].strip(SPACE)!r} is not a whole number")
    if row.get("_bad_state"):
        parts.append(f"state {row[status].strip(SPACE)!r} is not active or canceled")
    if row.get("_bad_pricing"):
        parts.append(_price_reason(row))
    if row.get("_bad_when"):
        parts.append(
            f"{dated} {str(row['_when_text']).strip(SPACE)!r} is not a date or time (e.g. 2024-05-31, "
            "31.05.2024, or epoch milliseconds)"
        )
    if row.get("_bad_date"):
        text = str(row["_date_text"]).strip(SPACE)
        parts.append(
            f"{period} {text!r} is not a date or time (e.g. 2024-05-31, 31.05.2024, or epoch milliseconds)"
            if text
            else f"{period} is empty"
        )
    return "; ".join(parts)
