"""The payout reconciliation's report: ``report.html`` (the controller's view), ``report.xlsx``
(the same tables for a spreadsheet, amounts as numbers: ``workbook.py``), ``payouts.csv`` (every
payout, its items and its bank entry), ``exceptions.csv`` (what needs an action, then what is on
its way) and ``summary.csv`` (per outcome and currency), written whole or not at all, in a folder
whose files the toolkit may replace (``output_record``), as the payment report is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.money import from_minor
from toolkit.output_record import claim
from toolkit.outputs import atomic_path, cell_text, ensure_directory
from toolkit.reconcile.payouts import (
    BOOKS_CATEGORIES,
    INFORMATIONAL,
    PAYOUT_CATEGORIES,
    PayoutLine,
    PayoutReconciliation,
    payout_table,
)
from toolkit.reconcile.payouts.workbook import COUNT_FORMAT, PLAIN_FORMAT, TextTable, write_payout_workbook
from toolkit.reconcile.render.page import template
from toolkit.reconcile.render.report import write_csv_table
from toolkit.reconcile.schema import TRACKING_COLUMNS

if TYPE_CHECKING:
    from toolkit.reconcile.tracking.model import Tracking

#: What the report is made of.
PAYOUT_REPORT_FILES: tuple[str, ...] = (
    "report.html",
    "report.xlsx",
    "payouts.csv",
    "exceptions.csv",
    "summary.csv",
)
#: The columns of ``exceptions.csv``.
EXCEPTION_COLUMNS: tuple[str, ...] = (
    "exception_id",
    "category",
    "payout",
    "currency",
    "amount",
    "bank_reference",
    "bank_date",
    "books_row",
    "detail",
)

#: The columns of ``summary.csv``.
SUMMARY_COLUMNS: tuple[str, ...] = ("category", "currency", "count", "amount")

#: What each outcome of a payout says in the page's table.
OUTCOME_WORDS: dict[str, str] = {
    "matched": "arrived",
    "in_transit": "on its way (window open)",
    "failed": "failed or returned: nothing expected",
    "payout_missing_in_bank": "MISSING",
    "payout_amount_mismatch": "arrived, for another amount",
    "payout_ambiguous": "cannot be told apart",
}


@dataclass(frozen=True)
class _Total:
    currency: str
    category: str
    count: int
    amount: Decimal


def exception_rows(result: PayoutReconciliation) -> list[dict[str, str]]:
    """``exceptions.csv``'s rows: every payout exception, unexplained deposit and gap (in the
    order of ``PAYOUT_CATEGORIES``), then the payouts in transit."""
    window = f"{result.window} business day{'s' if result.window != 1 else ''}"
    rows = [row for line in result.payouts for row in _payout_rows(line, window)]
    rows += [_deposit_row(entry) for entry in result.unexplained]
    rows += [_booking_row(booking, result.books or "the books") for booking in result.books_unexplained]
    rows += [_gap_row(gap) for gap in result.gaps]
    order = {name: i for i, name in enumerate((*PAYOUT_CATEGORIES, *INFORMATIONAL))}
    rows.sort(key=lambda row: order[row["category"]])
    return [{column: row.get(column, "") for column in EXCEPTION_COLUMNS} for row in rows]


def _payout_rows(line: PayoutLine, window: str) -> list[dict[str, str]]:
    """A payout's rows: its items not adding up, and its outcome in the bank where it needs an
    action or is on its way."""
    base = {"payout": line.payout, "currency": line.currency}
    rows = []
    if line.items_state == "does not add up":
        rows.append(
            base
            | {
                "exception_id": f"payout:{line.payout}:{line.currency}:items",
                "category": "payout_items_do_not_add_up",
                "amount": str(line.items_net - line.paid_out),
                "detail": f"its items add up to {line.items_net}, it paid out {line.paid_out}: "
                "ask the processor which items the payout holds",
            }
        )
    books = BOOKS_CATEGORIES.get(line.books_outcome or "")
    if books is not None:
        rows.append(
            base
            | {
                "exception_id": f"payout:{line.payout}:{line.currency}:books",
                "category": books,
                "amount": str(line.paid_out),
                "books_row": "" if line.books_row is None else str(line.books_row),
                "detail": _books_detail(line, window),
            }
        )
    said = _payout_detail(line, window)
    if said is not None:
        rows.append(
            base
            | {
                "exception_id": f"payout:{line.payout}:{line.currency}",
                "category": line.outcome,
                "amount": str(line.paid_out),
                "bank_reference": line.bank_reference or "",
                "bank_date": str(line.bank_booking_date or ""),
                "detail": said,
            }
        )
    return rows


def _deposit_row(entry: Mapping[str, object]) -> dict[str, str]:
    """A bank credit that looks like a processor's deposit and no payout explains."""
    reference = str(entry["entry_reference"] or f"{entry['source']} {entry['source_place']}")
    return {
        "exception_id": f"bank:{reference}",
        "category": "bank_deposit_unexplained",
        "currency": str(entry["currency"]),
        "amount": str(entry["amount"]),
        "bank_reference": str(entry["entry_reference"] or ""),
        "bank_date": str(entry["booking_date"]),
        "detail": f"a deposit from {entry['counterparty'] or 'the processor'} "
        f"({entry['remittance'] or 'no text'}) that no payout of the export explains: "
        "a payout of another export or period, or one the processor does not show",
    }


def _booking_row(booking: Mapping[str, object], books: str) -> dict[str, str]:
    """A payout booked in the books that no payout of the export explains."""
    return {
        "exception_id": f"books:{booking['row']}",
        "category": "books_payout_unexplained",
        "currency": str(booking["currency"]),
        "amount": str(booking["amount"]),
        "books_row": str(booking["row"]),
        "detail": f"a payout booked on {booking['date']} ({books}, row {booking['row']}) that no payout "
        "of the export explains: a payout of another export or period, or a transfer booked twice",
    }


def _books_detail(line: PayoutLine, window: str) -> str:
    """What to do about a payout the books do not show as the processor paid it."""
    if line.books_outcome == "not booked":
        return (
            f"paid out on {line.paid_on or 'an unknown day'}, not booked within {window}: book the transfer"
        )
    if line.books_outcome == "booked for another amount":
        return (
            f"booked on {line.books_date} (row {line.books_row}) for {line.books_amount}: correct the booking"
        )
    return "several bookings of this amount in its window, and another payout of the same amount"


def _gap_row(gap: Mapping[str, object]) -> dict[str, str]:
    """A break in an account's chain of statements (``bank``'s ``gaps``)."""
    currency, difference = str(gap["currency"]), gap["difference_minor"]
    return {
        "exception_id": f"gap:{gap['account']}:{gap['before_closing_date']}",
        "category": "statement_gap",
        "currency": currency,
        "amount": "" if difference is None else str(from_minor(int(str(difference)), currency)),
        "detail": f"{gap['reason']}, between statement {gap['before_statement']} "
        f"({gap['before_source']}) and {gap['after_statement']} ({gap['after_source']}): get the "
        "missing statement from the bank before reading a payout as missing",
    }


def _payout_detail(line: PayoutLine, window: str) -> str | None:
    """What to do about a payout's outcome (None: nothing, it arrived or was never meant to)."""
    if line.outcome == "payout_missing_in_bank":
        return (
            f"paid out on {line.paid_on or 'an unknown day'}, not in the bank within {window}: ask the "
            "processor for the payout's trace id, and the bank"
        )
    if line.outcome == "payout_amount_mismatch":
        return (
            f"found by its reference as {line.bank_reference} for {line.bank_amount}: ask the bank and "
            "the processor about the difference"
        )
    if line.outcome == "payout_ambiguous":
        return (
            f"{line.candidates} bank entries of this amount in its window, and another payout of the "
            "same amount: tell them apart by their references"
        )
    if line.outcome == "in_transit":
        return f"paid out on {line.paid_on}: its {window} are not over at the cut-off"
    return None


def _totals(result: PayoutReconciliation) -> list[_Total]:
    """Per currency and outcome: how many payouts and their sum; the unexplained deposits; in the
    books, the payouts booked or the exception each is, and the bookings no payout explains."""
    counted: list[tuple[str, str, Decimal]] = [(p.currency, p.outcome, p.paid_out) for p in result.payouts]
    counted += [
        (str(e["currency"]), "bank_deposit_unexplained", Decimal(str(e["amount"])))
        for e in result.unexplained
    ]
    for line in result.payouts:
        said = line.books_outcome or ""
        books = "payout_booked" if said == "booked" else BOOKS_CATEGORIES.get(said)
        if books is not None:
            counted.append((line.currency, books, line.paid_out))
    counted += [
        (str(b["currency"]), "books_payout_unexplained", Decimal(str(b["amount"])))
        for b in result.books_unexplained
    ]
    sums: dict[tuple[str, str], tuple[int, Decimal]] = {}
    for currency, category, amount in counted:
        count, total = sums.get((currency, category), (0, Decimal(0)))
        sums[currency, category] = (count + 1, total + amount)
    return [_Total(c, o, n, a) for (c, o), (n, a) in sorted(sums.items())]


def _verdict(result: PayoutReconciliation) -> str:
    counts = result.counts()
    found = result.exception_count
    arrived = f"{counts['matched']} of {len(result.payouts)} payout(s) in the bank"
    if result.books is not None:
        booked = sum(line.books_outcome == "booked" for line in result.payouts)
        arrived += f", {booked} booked"
    if not found:
        return f"ok: {arrived}, {counts['in_transit']} on its way; nothing to do."
    return f"{found} exception(s) to look at; {arrived}, {counts['in_transit']} on its way."


def write_payout_report(
    result: PayoutReconciliation,
    output_dir: str | Path,
    *,
    title: str = "Payout reconciliation",
    environment: str,
    generated_at: datetime | None = None,
    holidays: Sequence[object] = (),
    tracking: Tracking | None = None,
) -> dict[str, Path]:
    """Write ``PAYOUT_REPORT_FILES`` into ``output_dir`` (created); returns them by name. Nothing
    is written when a file there is an input of the run or not the toolkit's (``OutputError``).
    A tracked run's ``tracking`` (``tracked.recording_payouts``) adds each exception's id, state,
    first seen, age and reason."""
    directory = ensure_directory(output_dir)
    paths = {name: directory / name for name in PAYOUT_REPORT_FILES}
    record = claim(directory, PAYOUT_REPORT_FILES, inputs=result.sources)
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    exceptions = exception_rows(result) if tracking is None else with_states(exception_rows(result), tracking)
    columns = EXCEPTION_COLUMNS + (TRACKING_COLUMNS if tracking is not None else ())
    totals = _totals(result)
    page = template("payouts.html.j2").render(
        title=title,
        environment=environment,
        generated_at=when,
        as_of=result.as_of,
        window=result.window,
        holidays=bool(holidays),
        sources=result.sources,
        verdict=_verdict(result),
        payouts=[
            {**line.__dict__, "outcome_words": OUTCOME_WORDS.get(line.outcome, line.outcome)}
            for line in result.payouts
        ],
        totals=totals,
        exceptions=exceptions,
        bank_entries=result.bank_entries,
        other_entries=result.other_entries,
        books=result.books,
        books_payouts=result.books_payouts,
        tracking=None if tracking is None else tracking.summary_text(),
    )
    summary = _summary_rows(totals)
    payouts = payout_table(result)
    with contextlib.ExitStack() as stack:
        temporary = {name: stack.enter_context(atomic_path(path)) for name, path in paths.items()}
        temporary["report.html"].write_text(page, encoding="utf-8")
        write_csv_table(payouts, temporary["payouts.csv"])
        write_csv_table(_text_table(columns, exceptions), temporary["exceptions.csv"])
        write_csv_table(_text_table(SUMMARY_COLUMNS, summary), temporary["summary.csv"])
        write_payout_workbook(
            temporary["report.xlsx"],
            heading=_heading(result, title, environment, when, bool(holidays), tracking),
            summary=TextTable(SUMMARY_COLUMNS, summary, amounts=_IN_CURRENCY, numbers=_COUNT),
            payouts=TextTable(tuple(payouts.column_names), payouts.to_pylist(), _PAYOUT_AMOUNTS, _ROWS),
            exceptions=TextTable(columns, exceptions, amounts=_IN_CURRENCY, numbers=_EXCEPTION_NUMBERS),
        )
    record.updated(PAYOUT_REPORT_FILES, ())
    return paths


def _summary_rows(totals: Sequence[_Total]) -> list[dict[str, str]]:
    """``summary.csv``'s rows: per category and currency, how many and their sum."""
    return [
        {"category": t.category, "currency": t.currency, "count": str(t.count), "amount": str(t.amount)}
        for t in totals
    ]


def with_states(rows: list[dict[str, str]], tracking: Tracking) -> list[dict[str, str]]:
    """``rows`` with a tracked run's ``TRACKING_COLUMNS`` (blank for a row the track does not
    follow: a payout in transit)."""
    tracked = tracking.exceptions
    states = {
        (str(key), str(category)): {c: cell_text(record[c]) for c in TRACKING_COLUMNS}
        for key, category, record in zip(
            tracked["merchantReferenceId"], tracked["category"], tracked.to_dict("records"), strict=True
        )
    }
    blank = dict.fromkeys(TRACKING_COLUMNS, "")
    return [row | states.get((row["exception_id"], row["category"]), blank) for row in rows]


#: The workbook's amount columns (each in its row's ``currency``) and whole numbers (counts with
#: thousands separated, a row of the books plain).
_IN_CURRENCY = {"amount": "currency"}
_PAYOUT_AMOUNTS = dict.fromkeys(("paid_out", "items_net", "bank_amount", "books_amount"), "currency")
_ROWS = {"items": COUNT_FORMAT, "books_row": PLAIN_FORMAT}
_EXCEPTION_NUMBERS = {"books_row": PLAIN_FORMAT, "ageDays": COUNT_FORMAT}
_COUNT = {"count": COUNT_FORMAT}


def _heading(
    result: PayoutReconciliation,
    title: str,
    environment: str,
    when: str,
    holidays: bool,
    tracking: Tracking | None,
) -> list[str]:
    """The workbook's Summary above its table: where the data came from, the run's settings, the
    verdict, the books, a tracked run's states, the files read."""
    days = f"{result.window} business day{'s' if result.window != 1 else ''}"
    books = (
        f"Books: {result.books}, {result.books_payouts} payout booking(s) compared by the same rules "
        "and window."
        if result.books is not None
        else "The books were not compared for payouts (give them with --ledger, or the notebook's "
        "ledger_path)."
    )
    return [
        f"Data from: {environment}",
        title,
        f"Generated {when}",
        f"Cut-off: {result.as_of} (a payout whose window is still open then is in transit)",
        f"Window: {days}, Monday to Friday{', holidays left out' if holidays else ''}",
        _verdict(result),
        books,
        *([] if tracking is None else tracking.summary_text().splitlines()[:1]),  # the run and its states
        f"From: {', '.join(result.sources)}",
    ]


def _text_table(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> pa.Table:
    """Rows of text as a table of ``columns`` (the CSV files' cells)."""
    return pa.table({c: pa.array([row.get(c, "") for row in rows], pa.string()) for c in columns})
