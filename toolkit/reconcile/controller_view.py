"""What report.html says, worked out as data: the controller's view of a ``ReconciliationResult``.

The page is read by a controller who did not run the reconciliation: so it states the period and
the sources in words, totals per currency, each category in plain words with what to do about
it, and only then the exceptions. Everything here is exact: amounts stay ``Decimal`` and are
formatted with their currency; ranks for sorting are computed here, so the page's script never
compares amounts as floating-point numbers. ``report.py`` renders this with the template.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from importlib import resources
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.money import format_money, is_currency
from toolkit.outputs import cell_text
from toolkit.reconcile.schema import CATEGORIES, INFO_CATEGORIES
from toolkit.reconcile.timing import duration_text
from toolkit.reconcile.tolerance import Tolerance

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult, RowCounts

#: Sort order of the states in the exceptions table (then oldest first).
STATE_ORDER = {"new": 0, "open": 1, "acknowledged": 2}

#: Rows of each category shown in the HTML page (exceptions.csv and the workbook hold them all).
HTML_ROWS = 20
#: Rows of each category the HTML page holds: those past ``HTML_ROWS`` are hidden until the reader
#: asks for them ("Show 20 more"), since the page is opened from disk and may fetch nothing.
HTML_MORE_ROWS = 500

#: A period as ``write_report`` takes it: (start, end) dates (ISO text or ``date``, either may be
#: empty), text said as it is, or None for no period.
Period = tuple[date | str | None, date | str | None] | str | None

NO_PERIOD = "whole files: no period was selected, so every row was reconciled"

#: Each category in plain words (a short name, then what it means and what to do about it).
CATEGORY_WORDS: dict[str, tuple[str, str]] = {
    "missing_in_processor": (
        "In the books, not at the processor",
        "Check whether the payment was really taken (look it up at the processor by its "
        "reference); if it never happened, reverse the booking.",
    ),
    "missing_in_ledger": (
        "At the processor, not in the books",
        "Money moved that the books do not show: find the order and book it, or refund the "
        "customer if the payment is not ours.",
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


# ---------------------------------------------------------------------------------------------
# Words


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


# ---------------------------------------------------------------------------------------------
# The parts of the page


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


@dataclass(frozen=True)
class Cell:
    """A cell of the exceptions table: text, a muted second line, and a rank to sort by
    (-1: empty, sorted last), or None to sort by the text."""

    text: str
    sub: str = ""
    rank: int | None = None


@dataclass(frozen=True)
class ExceptionRow:
    """One exception as the report's table shows it: its category and its cells; ``held``: in
    the page but hidden until the reader asks for more of its category."""

    category: str
    cells: tuple[Cell, ...]
    held: bool = False


@dataclass(frozen=True)
class CutCategory:
    """A category with more exceptions than the page shows at first: how many it shows, how many
    it holds (the rest of those hidden until asked for) and how many there are."""

    code: str
    label: str
    shown: int
    embedded: int
    count: int


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


def _ranks(keys: list[tuple[Any, ...] | None]) -> list[int]:
    """The rank of each key in sorted order (-1 for None): exact, whatever the key holds."""
    order = sorted((k, i) for i, k in enumerate(keys) if k is not None)
    ranks = [-1] * len(keys)
    for rank, (_, i) in enumerate(order):
        ranks[i] = rank
    return ranks


def _amount_key(amount: Any, currency: Any) -> tuple[str, Decimal] | None:
    if amount is None or amount is pd.NA:
        return None
    return (cell_text(currency), Decimal(amount))


def exception_rows(
    result: ReconciliationResult, rows: int, embed: int = HTML_MORE_ROWS
) -> tuple[list[ExceptionRow], list[CutCategory]]:
    """The first ``embed`` exceptions of each category as table rows, those past the first
    ``rows`` held (hidden until asked for), and each category cut short. Ranks are over every
    row held, so that rows revealed later sort among those shown."""
    exceptions = result.exceptions
    embed = max(rows, embed)
    records: list[dict[str, Any]] = []
    held: list[bool] = []
    cut: list[CutCategory] = []
    for category, count in result.category_counts.items():
        if not count:
            continue
        part = exceptions[exceptions["category"] == category].head(embed)
        shown = min(rows, len(part))
        if count > shown:
            cut.append(CutCategory(category, category_label(category), shown, len(part), count))
        records += [dict(zip(part.columns, r, strict=True)) for r in part.itertuples(index=False)]
        held += [False] * shown + [True] * (len(part) - shown)
    order = {name: i for i, name in enumerate(CATEGORIES)}
    category_rank = _ranks([(order.get(str(r["category"]), len(order)), i) for i, r in enumerate(records)])
    ledger_rank = _ranks([_amount_key(r["ledger_amount"], r["ledger_currency"]) for r in records])
    processor_rank = _ranks([_amount_key(r["processor_amount"], r["processor_currency"]) for r in records])
    where = [source_words(cell_text(r["source"]), short=True) for r in records]
    where_rank = _ranks([(w, int(r["source_row"])) for w, r in zip(where, records, strict=True)])
    tracked = result.tracking is not None
    state_rank = _ranks(
        [(STATE_ORDER.get(str(r["state"]), 9), -int(r["ageDays"])) if tracked else None for r in records]
    )
    table = []
    for i, r in enumerate(records):
        category = str(r["category"])
        ranks = (ledger_rank[i], processor_rank[i], where_rank[i], state_rank[i])
        payment, *rest = row_cells(r, tracked=tracked, ranks=ranks)
        kind = Cell(category_label(category), category, category_rank[i])
        table.append(ExceptionRow(category, (payment, kind, *rest), held[i]))
    return table, cut


def row_cells(
    record: dict[str, Any], *, tracked: bool, ranks: tuple[int, int, int, int] = (-1, -1, -1, -1)
) -> tuple[Cell, ...]:
    """An exception as table cells: the payment, both sides, where it is, its state (a tracked
    run's) and the detail; ``ranks`` sort the sides, the place and the state."""
    ledger, processor, where, state = ranks
    reason = f" ({record['stateReason']})" if tracked and record["stateReason"] else ""
    return (
        Cell(cell_text(record["merchantReferenceId"])),
        _side_cell(record, "ledger", ledger),
        _side_cell(record, "processor", processor),
        Cell(source_words(cell_text(record["source"]), short=True), f"row {record['source_row']}", where),
        *((_state_cell(record, state),) if tracked else ()),
        Cell(cell_text(record["detail"]) + reason),
    )


def _state_cell(record: dict[str, Any], rank: int) -> Cell:
    """State, then when the exception was first seen and its age, and its id for a sign-off (not
    "acknowledged since" that day: the sign-off may be later, and its reason says when)."""
    age = int(record["ageDays"])
    seen = f"first seen {str(record['firstSeen'])[:10]}, {age} day{'s' if age != 1 else ''}"
    return Cell(str(record["state"]), f"{seen} · {record['exceptionId']}", rank)


def tracking_view(result: ReconciliationResult, rows: int) -> dict[str, Any] | None:
    """What the page says of a tracked run: states per category, ages, resolved (first ``rows``)."""
    tracking = result.tracking
    if tracking is None:
        return None
    counts = tracking.state_counts()
    resolved = tracking.resolved
    previous = f"run {tracking.previous_run}" if tracking.previous_run else "none (first run of the track)"
    return {
        "track": tracking.track,
        "run": tracking.run,
        "as_of": tracking.as_of_text.replace("T", " ").replace("Z", " UTC"),
        "previous": previous,
        "rerun_of": tracking.rerun_of,
        "audit_head": tracking.audit_head,
        "counts": counts,
        "states": [
            (category_label(str(r.category)), str(r.category), r.new, r.open, r.acknowledged, r.resolved)
            for r in tracking.states().itertuples(index=False)
        ],
        "ages": list(tracking.age_buckets().itertuples(index=False, name=None)),
        "resolved": [
            (
                cell_text(r["merchantReferenceId"]),
                category_label(str(r["category"])),
                money_text(r["ledger_amount"] or None, r["ledger_currency"])
                or cell_text(r["ledger_currency"]),
                money_text(r["processor_amount"] or None, r["processor_currency"])
                or cell_text(r["processor_currency"]),
                str(r["firstSeen"])[:10],
                str(r["resolvedAt"])[:10],
            )
            for r in resolved.head(rows).to_dict(orient="records")
        ],
        "resolved_cut": len(resolved) > rows,
    }


@dataclass(frozen=True)
class InfoSection:
    """One informational category: its summary line (count, amounts per currency from the
    summary) and its first rows, oldest first (``cells``: payment, ledger, processor, where or
    variance, age in days, detail)."""

    code: str
    heading: str
    label: str
    action: str
    count: int
    amounts: str
    amount_label: str
    fifth_column: str
    rows: list[tuple[Cell, ...]]


#: What the summary's amount of each informational category is, in the page's words.
INFO_AMOUNTS = {"in_transit": "amount at stake", "within_tolerance": "net variance (ledger \u2212 processor)"}


def info_sections(result: ReconciliationResult, rows: int) -> list[InfoSection]:
    """The informational categories that have rows, each with its first ``rows`` rows, oldest
    first (an in-transit payment near the end of the window is the next break)."""
    sections = []
    counts = result.info_counts
    for code in INFO_CATEGORIES:
        if not counts.get(code):
            continue
        label, action = CATEGORY_WORDS[code]
        part = result.exceptions[result.exceptions["category"] == code]
        oldest = part.assign(_age=part["age_days"].astype("Int64")).sort_values(
            "_age", ascending=False, kind="stable", na_position="last"
        )
        records = records_of(oldest.head(rows))
        variance = code == "within_tolerance"
        at_rates = _fx_variances(result) if variance else {}
        sections.append(
            InfoSection(
                code=code,
                heading=INFO_HEADINGS[code],
                label=label,
                action=action,
                count=counts[code],
                amounts=_summary_amounts(result, code, signed=variance),
                amount_label=INFO_AMOUNTS[code],
                fifth_column="variance (ledger \u2212 processor)" if variance else "where",
                rows=[_info_cells(r, variance=variance, at_rates=at_rates) for r in records],
            )
        )
    return sections


def _summary_amounts(result: ReconciliationResult, code: str, *, signed: bool) -> str:
    """A category's amounts per currency from the summary (``€5.00 · $1.00``)."""
    rows = result.summary[result.summary["category"] == code].sort_values("currency")
    return " · ".join(
        money_text(amount, currency, signed=signed)
        for currency, amount in zip(rows["currency"], rows["amount"], strict=True)
        if amount is not None and amount is not pd.NA
    )


def _fx_variances(result: ReconciliationResult) -> dict[str, tuple[Decimal, str]]:
    """Per payment compared at a reference rate: expected minus charged (ledger minus processor,
    in the charged currency: what the summary sums) and that currency."""
    fx = result.fx
    return {
        str(key): (-Decimal(variance), str(currency))
        for key, variance, currency in zip(
            fx["merchantReferenceId"], fx["variance"], fx["charged_currency"], strict=True
        )
    }


def _info_cells(
    record: dict[str, Any], *, variance: bool, at_rates: dict[str, tuple[Decimal, str]] | None = None
) -> tuple[Cell, ...]:
    """An informational row: payment, both sides, where it is (or its variance), age, detail."""
    age = record.get("age_days")  # nullable: NA, None or NaN for a row without a date
    fifth = (
        Cell(_variance_text(record, at_rates or {}))
        if variance
        else Cell(source_words(cell_text(record["source"]), short=True), f"row {record['source_row']}")
    )
    return (
        Cell(cell_text(record["merchantReferenceId"])),
        _side_cell(record, "ledger", -1),
        _side_cell(record, "processor", -1),
        fifth,
        Cell(_age_text(age)),
        Cell(cell_text(record["detail"])),
    )


def records_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a frame as dicts keyed by column name."""
    columns = [str(c) for c in frame.columns]
    return [dict(zip(columns, row, strict=True)) for row in frame.itertuples(index=False)]


def _age_text(age: Any) -> str:
    """Whole days ('' for a row without a date: NA, None or NaN)."""
    return "" if cell_text(age) == "" else f"{int(age):,}"


def _variance_text(record: dict[str, Any], at_rates: dict[str, tuple[Decimal, str]]) -> str:
    """Ledger minus processor, exact: in one currency, or for a payment compared at a reference
    rate (``at_rates``), the amount expected at the rate minus the charge (the cell was empty,
    while the summary summed it)."""
    ledger, processor = record["ledger_amount"], record["processor_amount"]
    currency = cell_text(record["ledger_currency"])
    if ledger is None or processor is None or ledger is pd.NA or processor is pd.NA:
        return ""
    if currency != cell_text(record["processor_currency"]):
        converted = at_rates.get(cell_text(record["merchantReferenceId"]))
        return "" if converted is None else money_text(converted[0], converted[1], signed=True)
    return money_text(Decimal(ledger) - Decimal(processor), currency, signed=True)


def fx_view(result: ReconciliationResult, rows: int) -> dict[str, Any] | None:
    """Payments compared at a reference rate: the total variance per currency pair (exact), the
    first ``rows`` payments, and the rates that were missing; None when there is none of these."""
    fx = result.fx
    if fx.empty and not result.missing_rates:
        return None
    pairs = [
        (
            f"{base} → {quote}",
            int(payments),
            money_text(variance, quote, signed=True),
        )
        for base, quote, payments, variance in result.fx_pairs.itertuples(index=False, name=None)
    ]
    return {
        "pairs": pairs,
        "rows": [_fx_cells(r) for r in records_of(fx.head(rows))],
        "count": len(fx),
        "cut": len(fx) > rows,
        "missing": list(result.missing_rates[:rows]),
        "missing_count": len(result.missing_rates),
    }


def _fx_cells(record: dict[str, Any]) -> tuple[str, ...]:
    """Payment, date, ledger amount, rate, expected, charged, variance, outcome: as text."""
    charged = record["charged_currency"]
    return (
        cell_text(record["merchantReferenceId"]),
        _date_text(record["date"]),
        money_text(record["ledger_amount"], record["ledger_currency"]),
        cell_text(record["rate"]),
        money_text(record["expected_amount"], charged),
        money_text(record["charged_amount"], charged),
        money_text(record["variance"], charged, signed=True),
        category_label(str(record["category"])) if record["category"] != "matched" else "Exact at the rate",
    )


def _date_text(value: Any) -> str:
    """A day as ISO text (``2026-11-18``), whether it came as a date, a timestamp or text."""
    if isinstance(value, datetime | pd.Timestamp):
        return value.strftime("%Y-%m-%d")
    if isinstance(value, date):
        return value.isoformat()
    return cell_text(value)


def _side_cell(record: dict[str, Any], side: str, rank: int) -> Cell:
    """Amount with its currency, status below; a currency alone where there is no amount."""
    amount, currency = record[f"{side}_amount"], cell_text(record[f"{side}_currency"])
    text = money_text(amount, currency) or currency
    return Cell(text, cell_text(record[f"{side}_status"]), rank)


# ---------------------------------------------------------------------------------------------
# The page's script


def script(*, more: bool = False) -> tuple[str, str]:
    """The inline script (sorting, filtering; with ``more``, revealing held rows too) and its CSP
    hash, so no other script can run. A page with no held rows gets the script alone, as before."""
    templates = resources.files("toolkit.reconcile").joinpath("templates")
    text = templates.joinpath("report.js").read_text("utf-8")
    if more:
        text += templates.joinpath("report-more.js").read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return text, f"sha256-{digest}"


def page(
    result: ReconciliationResult,
    *,
    title: str,
    environment: str,
    generated_at: str,
    period: Period,
    rows: int,
) -> dict[str, Any]:
    """Everything the template shows, as plain values."""
    found, clear = category_lines(result)
    table, cut = exception_rows(result, rows)
    held = any(row.held for row in table)
    information = info_sections(result, rows)
    code, script_hash = script(more=held)
    return {
        "title": title,
        "environment": environment,
        "generated_at": generated_at,
        "period": period_text(period),
        "tolerance": tolerance_text(result.amount_tolerance),
        "timing": timing_text(result.cutoff, result.grace),
        "verdict": verdict(result),
        "information": " ".join(t for t in (information_line(result), not_final_text(result, period)) if t),
        "sources": source_lines(result),
        "outside": any(c.outside for c in result.counts),
        "in_transit": any(c.in_transit for c in result.counts),
        "after_cutoff": any(c.after_cutoff for c in result.counts),
        "adds_up": all(c.adds_up for c in result.counts),
        "currencies": currency_lines(result),
        "footnote": FOOTNOTE + (f" {INFO_FOOTNOTE}" if information else ""),
        "unreadable": result.category_counts.get("rejected_row", 0),
        "found": found,
        "clear": clear,
        "rows": table,
        "cut": cut,
        "per_category": rows,
        "shown": sum(not row.held for row in table),
        "held": held,
        "script": code,
        "script_hash": script_hash,
        "tracking": tracking_view(result, rows),
        "info": information,
        "fx": fx_view(result, rows),
    }
