"""The headline of a report: the verdict, the totals per currency, a line per category with
exceptions and each input's row accounting, worked out as data (report.html's first screen, the
notebook cell's summary and the command's closing lines say them alike).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.money import is_currency
from toolkit.reconcile.render.words import (
    CATEGORY_WORDS,
    SIDE_WORDS,
    Period,
    moment_text,
    money_text,
    source_words,
)
from toolkit.reconcile.schema import INFO_CATEGORIES

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult, RowCounts


@dataclass(frozen=True)
class CurrencyLine:
    """Headline totals of one currency (formatted; '' where there is nothing)."""

    currency: str
    matched_count: int
    matched: str
    at_risk_count: int
    at_risk: str
    net: str


@dataclass(frozen=True)
class CategoryLine:
    """One category that has exceptions, in plain words."""

    code: str
    label: str
    action: str
    count: int
    amounts: str
    bar: int  # width of the count bar, percent of the largest category


def _sum(values: Iterable[Any]) -> Decimal | None:
    amounts = [Decimal(v) for v in values if v is not None and v is not pd.NA]
    return sum(amounts, Decimal(0)) if amounts else None


def currency_lines(result: ReconciliationResult) -> list[CurrencyLine]:
    """Matched, at risk and net difference per currency (see ``FOOTNOTE`` for the definitions);
    informational rows (in transit, within tolerance) are never at risk: they have their own
    sections (``info_sections``)."""
    summary = result.summary
    codes = {str(c) for c in summary["currency"] if is_currency(str(c))}
    codes |= {t.currency for t in result.totals}
    net_of = result.net_by_currency()
    lines = []
    for code in sorted(codes):
        rows = summary[summary["currency"].astype(str) == code]
        matched = rows[rows["category"] == "matched"]
        risky = rows[~rows["category"].isin(("matched", *INFO_CATEGORIES))]  # info is not at risk
        matched_amount, risk_amount = _sum(matched["amount"]), _sum(risky["amount"])
        lines.append(
            CurrencyLine(
                currency=code,
                matched_count=int(matched["count"].sum()),
                matched=money_text(matched_amount, code),
                at_risk_count=int(risky["count"].sum()),
                at_risk=money_text(risk_amount, code),
                net=money_text(net_of[code], code, signed=True) if code in net_of else "",
            )
        )
    return lines


#: Each kind of movement in a report's words.
KIND_WORDS: dict[str, str] = {
    "payment": "payments (charges)",
    "refund": "refunds",
    "chargeback": "chargebacks",
    "chargeback_reversal": "chargebacks reversed (disputes won)",
    "returned": "money returned (credit notes)",
    "fee": "fees",
    "payout": "payouts",
    "adjustment": "adjustments",
}


@dataclass(frozen=True)
class MovementLine:
    """One currency's movements of one kind on each side (formatted; '' where a side has none);
    the kind ``net`` is a currency's every movement added up."""

    currency: str
    kind: str
    ledger_count: int
    ledger: str
    processor_count: int
    processor: str


@dataclass(frozen=True)
class PayoutLine:
    """One payout of the processor's export in one currency, formatted for the page."""

    payout: str
    currency: str
    items: int
    items_net: str
    paid_out: str
    difference: str
    state: str


def payout_lines(result: ReconciliationResult) -> list[PayoutLine]:
    """Each payout and currency the processor's export names, as the page shows it."""
    return [
        PayoutLine(
            payout=p.payout,
            currency=p.currency,
            items=p.items,
            items_net=money_text(p.items_net, p.currency, signed=True),
            paid_out="" if p.paid_out is None else money_text(p.paid_out, p.currency, signed=True),
            difference="" if p.difference is None else money_text(p.difference, p.currency, signed=True),
            state=p.state,
        )
        for p in result.payouts
    ]


def movement_sums(result: ReconciliationResult) -> dict[tuple[str, str, str], tuple[int, Decimal]]:
    """(side, kind, currency) -> rows and signed total of each side's movements, with the kind
    ``net`` for every movement of a currency added up; empty when every movement is a payment
    (the totals by currency say it all). report.html's table and summary.csv's rows read it."""
    if all(m.kind == "payment" for m in result.movements):
        return {}
    sums: dict[tuple[str, str, str], tuple[int, Decimal]] = {}
    for m in result.movements:
        for kind in (m.kind, "net"):
            count, amount = sums.get((m.side, kind, m.currency), (0, Decimal(0)))
            sums[(m.side, kind, m.currency)] = (count + m.rows, amount + m.amount)
    return sums


def movement_lines(result: ReconciliationResult) -> list[MovementLine]:
    """Per currency, each kind's count and signed total on each side, then their net."""
    sums = movement_sums(result)
    order = [*KIND_WORDS, "net"]
    lines = []
    for currency, kind in sorted({(c, k) for _, k, c in sums}, key=lambda ck: (ck[0], order.index(ck[1]))):
        led, pro = (sums.get((side, kind, currency)) for side in ("ledger", "processor"))
        lines.append(
            MovementLine(
                currency=currency,
                kind=KIND_WORDS.get(kind, "net (every movement)"),
                ledger_count=led[0] if led else 0,
                ledger=money_text(led[1], currency, signed=True) if led else "",
                processor_count=pro[0] if pro else 0,
                processor=money_text(pro[1], currency, signed=True) if pro else "",
            )
        )
    return lines


def category_lines(result: ReconciliationResult) -> tuple[list[CategoryLine], list[str]]:
    """The categories with exceptions (in report order), and the labels of those without."""
    counts = result.category_counts
    summary = result.summary
    largest = max(counts.values(), default=0)
    found, clear = [], []
    for code, count in counts.items():
        label, action = CATEGORY_WORDS.get(code, (code, ""))
        if not count:
            clear.append(label)
            continue
        rows = summary[summary["category"] == code].sort_values("currency")
        amounts = " · ".join(
            money_text(amount, currency)
            for currency, amount in zip(rows["currency"], rows["amount"], strict=True)
            if amount is not None and amount is not pd.NA
        )
        found.append(
            CategoryLine(code, label, action, count, amounts, bar=max(1, round(100 * count / largest)))
        )
    return found, clear


def source_lines(result: ReconciliationResult) -> list[RowCounts]:
    """The row accounting of each input, its side and source in words."""
    return [
        replace(c, side=SIDE_WORDS.get(c.side, c.side.capitalize()), source=source_words(c.source))
        for c in result.counts
    ]


def verdict(result: ReconciliationResult) -> str:
    """The page's headline sentence."""
    matched = result.matched_count
    noun = "payment" if matched == 1 else "payments"
    if not result.exception_count:
        return f"Nothing to review: all {matched:,} {noun} matched."
    rejected = result.category_counts.get("rejected_row", 0)
    unreadable = f", {rejected:,} of them rows that could not be read" if rejected else ""
    # On a tracked run, what a person acknowledged is not to review again.
    states = result.tracking.exceptions["state"].astype(str) if result.tracking is not None else None
    acknowledged = int((states == "acknowledged").sum()) if states is not None else 0
    review = result.exception_count - acknowledged
    exceptions = "exception" if review == 1 else "exceptions"
    if acknowledged:
        signed = f"{acknowledged:,} acknowledged"
        if not review:
            return f"Nothing to review: {signed}{unreadable}; {matched:,} {noun} matched."
        return f"{review:,} {exceptions} to review and {signed}{unreadable}; {matched:,} {noun} matched."
    return f"{review:,} {exceptions} to review{unreadable}; {matched:,} {noun} matched."


def information_line(result: ReconciliationResult) -> str:
    """The line under the verdict on the informational rows ('' when none): said apart, so that
    they are never read as exceptions."""
    counts = result.info_counts
    transit, tolerance = counts["in_transit"], counts["within_tolerance"]
    parts = [
        f"{transit:,} payment{'s' if transit != 1 else ''} in transit" if transit else "",
        f"{tolerance:,} matched within tolerance" if tolerance else "",
    ]
    found = [p for p in parts if p]
    return f"For information, not exceptions: {' and '.join(found)}." if found else ""


def not_final_text(result: ReconciliationResult, period: Period) -> str:
    """Said when a period with a last day has payments in transit ('' otherwise): a later
    period's run leaves them out (the books decide the period), so only this period's run, made
    again once the window after its last day has passed, shows which of them became breaks."""
    transit = result.info_counts["in_transit"]
    if not transit or result.grace is None or not isinstance(period, tuple) or not period[1]:
        return ""
    last = period[1]
    if not isinstance(last, date):
        try:
            last = date.fromisoformat(str(last).strip())
        except ValueError:
            return ""
    final = datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1) + result.grace
    noun = "payment" if transit == 1 else "payments"
    return (
        f"This period is not final: a later period's run leaves out its {transit:,} {noun} in "
        f"transit. Run this period again after {moment_text(final)}, when each has settled or is "
        "an exception."
    )
