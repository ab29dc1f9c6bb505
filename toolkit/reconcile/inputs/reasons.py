"""Why a row cannot be used, in words: for the few rejected rows only, from their text as written
and the code the check left of each (``rejection_code``: its problems, a bit each).
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


#: ``rejection_code``'s bits for the ``_bad_*`` flags, one each from the lowest; the amount's
#: problem code is written above them.
_FLAG_BITS = 12


def rejection_code(checked: Relation) -> tuple[str, tuple[str, ...]]:
    """SQL of a rejected row's problems as one small integer (null for a usable row): a bit per
    ``_bad_*`` flag of the check ``checked``, in the order returned, and the amount's problem code
    above them. The check keeps it with its rows, so that the reasons of its rejected rows are read
    from their text as written, not from the whole check run again over them."""
    flags = tuple(c for c in checked.columns if c.startswith("_bad_"))
    if len(flags) > _FLAG_BITS:
        raise ValueError(f"{len(flags)} flags do not fit the rejection code: {flags}")
    bits = [f"CASE WHEN {ident(flag)} THEN {1 << i} ELSE 0 END" for i, flag in enumerate(flags)]
    code = " + ".join([*bits, f"COALESCE(CAST(_amount_error AS INTEGER), 0) * {1 << _FLAG_BITS}"])
    return f"CASE WHEN _rejected THEN CAST({code} AS SMALLINT) END", flags


def rejected_frame(
    loaded: LoadedInput, backend: Backend, rows: Relation, flags: tuple[str, ...]
) -> pd.DataFrame:
    """The rejected rows, as written, with every reason each one cannot be used: ``rows`` are
    the rows as written (``LoadedInput.read``) with ``_why``, the check's ``rejection_code`` of
    ``flags`` (null for a usable row)."""
    status = "status" if loaded.kind == "payments" else "state"
    period = loaded.period.column if loaded.period else ""
    dated = loaded.dated.column if loaded.dated else ""
    fallback = loaded.dated.fallback if loaded.dated and loaded.dated.fallback in rows.columns else None
    columns = [
        "merchantReferenceId",
        "amount",
        "currency",
        status,
        "source_row",
        *(["subscriptionId", "quantity"] if loaded.kind != "payments" else []),
        *(["type"] if loaded.typed else []),
        *[c for c in PRICING_COLUMNS if c in rows.columns],
        *[c for c in (period, dated, fallback) if c],
    ]
    file = sources.source_sql(loaded.described, "_ord")
    table = backend.arrow(
        f"SELECT {', '.join(ident(c) for c in dict.fromkeys(columns))}, _why, {file} AS _file "
        f"FROM ({rows}) WHERE _why IS NOT NULL ORDER BY _ord"
    )
    records = [_decoded(r, flags, period, dated, fallback) for r in table.to_pylist()]
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


def _decoded(
    row: dict[str, Any], flags: tuple[str, ...], period: str, dated: str, fallback: str | None
) -> dict[str, Any]:
    """``row`` with its ``_bad_*`` flags and ``_amount_error`` read from its ``_why``, and the
    date texts the check read: the period's column as written (``in_period``), the dated column
    trimmed, or where it is empty its fallback trimmed (``dated_by``)."""
    why = int(row["_why"])
    row |= {flag: bool(why >> i & 1) for i, flag in enumerate(flags)}
    row["_amount_error"] = why >> _FLAG_BITS
    row["_date_text"] = row[period] if period else ""
    if dated:
        when = _trimmed(row[dated])
        row["_when_text"] = _trimmed(row[fallback]) if fallback and not when else when
    return row


def _trimmed(text: str | None) -> str | None:
    """``text`` without the whitespace around it, as ``checks.trimmed`` trims it."""
    return None if text is None else text.strip(SPACE)


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
