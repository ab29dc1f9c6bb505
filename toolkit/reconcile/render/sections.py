"""The rows a report shows under its headline, worked out as data: the exceptions table (with
exact ranks to sort by, so the page's script never compares amounts as floating-point numbers),
the informational categories, the payments compared at reference rates and a tracked run's
states. report.html and the notebook cell render these alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.outputs import cell_text, frame_records
from toolkit.reconcile.render.words import (
    CATEGORY_WORDS,
    INFO_HEADINGS,
    category_label,
    money_text,
    source_words,
)
from toolkit.reconcile.schema import CATEGORIES, INFO_CATEGORIES

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult

#: Sort order of the states in the exceptions table (then oldest first).
STATE_ORDER = {"new": 0, "open": 1, "acknowledged": 2}

#: Rows of each category shown in the HTML page (exceptions.csv and the workbook hold them all).
HTML_ROWS = 20
#: Rows of each category the HTML page holds: those past ``HTML_ROWS`` are hidden until the reader
#: asks for them ("Show 20 more"), since the page is opened from disk and may fetch nothing.
HTML_MORE_ROWS = 500


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
        records += frame_records(part)
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
    reference = cell_text(record.get("processor_reference"))
    reason += f" (at the processor: {reference})" if reference else ""
    kind = cell_text(record.get("kind"))
    return (
        Cell(
            cell_text(record["merchantReferenceId"]),
            kind.replace("_", " ") if kind not in ("", "payment") else "",
        ),
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
        records = frame_records(oldest.head(rows))
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
        "rows": [_fx_cells(r) for r in frame_records(fx.head(rows))],
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
    """Amount with its currency, status below (and the processor's fee and net, where its export
    says); a currency alone where there is no amount."""
    amount, currency = record[f"{side}_amount"], cell_text(record[f"{side}_currency"])
    text = money_text(amount, currency) or currency
    below = cell_text(record[f"{side}_status"])
    fee = record.get(f"{side}_fee")
    if fee is not None and not pd.isna(fee):
        below += f" · fee {money_text(fee, currency)}, net {money_text(record[f'{side}_net'], currency)}"
    return Cell(text, below, rank)
