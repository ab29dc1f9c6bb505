"""Payouts reconciled from the processor to the bank (issue 38): does each payout add up to its
items, did it arrive in the bank for its amount, and is every processor deposit in the bank
explained by a payout?

``reconcile_payouts`` reads the processor's export as the payment reconciliation does (its layout
names the payout of each row: ``[payout]``), adds each payout's items up in the backend
(``_engine/payouts.py``, the same SQL on DuckDB and Spark), reads the bank statements
(``bank.read_statements``) and finds each payout there (``matching.py``). Given the books, it
finds each payout among the books' payout bookings too (rows of kind ``payout``: a transfer from
the clearing account to the bank), by the same rules. ``write_payout_report`` writes what it
found (``report.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.errors import InputError
from toolkit.money import from_minor, to_minor
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.bank import BankStatements, read_statements
from toolkit.reconcile.inputs import LoadedInput, load_ledger, load_processor
from toolkit.reconcile.payouts.matching import BankEntry, Found, Payout, looks_like_a_deposit, match_payouts
from toolkit.reconcile.result import PayoutTotal
from toolkit.reconcile.sources.rows import PART_SHIFT
from toolkit.reconcile.timing import parse_as_of

if TYPE_CHECKING:
    from toolkit.reconcile._engine.model import Side

__all__ = [
    "PAYOUT_CATEGORIES",
    "PayoutLine",
    "PayoutReconciliation",
    "business_days",
    "holiday_dates",
    "reconcile_payouts",
]

#: What the payout reconciliation reports, exceptions first (each needs an action), then what is
#: only information.
PAYOUT_CATEGORIES: tuple[str, ...] = (
    "payout_items_do_not_add_up",
    "payout_missing_in_bank",
    "payout_amount_mismatch",
    "payout_ambiguous",
    "bank_deposit_unexplained",
    "statement_gap",
    "payout_missing_in_books",
    "payout_amount_mismatch_in_books",
    "payout_ambiguous_in_books",
    "books_payout_unexplained",
)
#: Outcomes that are no exception: found, on its way, or never meant to arrive.
INFORMATIONAL: tuple[str, ...] = ("matched", "in_transit", "failed")
#: A payout's outcome in the books (``PayoutLine.books_outcome``) from ``matching``'s, and the
#: category of those that need an action.
BOOKS_OUTCOMES: dict[str, str] = {
    "matched": "booked",
    "payout_amount_mismatch": "booked for another amount",
    "payout_ambiguous": "cannot be told apart",
    "in_transit": "not booked yet",
    "payout_missing_in_bank": "not booked",
    "failed": "nothing to book",
}
BOOKS_CATEGORIES: dict[str, str] = {
    "booked for another amount": "payout_amount_mismatch_in_books",
    "cannot be told apart": "payout_ambiguous_in_books",
    "not booked": "payout_missing_in_books",
}


@dataclass(frozen=True)
class PayoutLine:
    """One payout (a payout row of the export, per currency): what it paid out and when, whether
    its items add up (``items_state``, from ``PayoutTotal.state``), and what the bank shows
    (``outcome``; the entry's reference, dates and amount where found)."""

    payout: str
    currency: str
    paid_out: Decimal
    paid_on: date | None
    items: int
    items_net: Decimal
    items_state: str
    outcome: str
    matched_by: str | None = None
    bank_reference: str | None = None
    bank_booking_date: date | None = None
    bank_value_date: date | None = None
    bank_amount: Decimal | None = None
    candidates: int = 0
    #: In the books (None: not compared): ``BOOKS_OUTCOMES``' words, and the booking found.
    books_outcome: str | None = None
    books_row: int | None = None
    books_date: date | None = None
    books_amount: Decimal | None = None


@dataclass(frozen=True)
class PayoutReconciliation:
    """What the payout reconciliation found: every payout (``payouts``), the per-payout totals of
    the export (``totals``, those without a payout row included), the bank credits that look like
    a processor's deposit and no payout explains (``unexplained``: bank entries as dicts), the
    statements' gaps, and how many other bank entries there were."""

    payouts: tuple[PayoutLine, ...]
    totals: tuple[PayoutTotal, ...]
    unexplained: tuple[dict[str, object], ...]
    gaps: tuple[dict[str, object], ...]
    other_entries: int
    bank_entries: int
    as_of: date
    window: int
    sources: tuple[str, ...] = field(default=())
    #: The books compared (None: none given), their payout bookings, and those no payout of the
    #: export explains (``books_payout_unexplained``: a transfer booked that the processor did
    #: not make, or one of another export), as dicts (row, date, currency, amount, key).
    books: str | None = None
    books_payouts: int = 0
    books_unexplained: tuple[dict[str, object], ...] = ()

    @property
    def exception_count(self) -> int:
        """Payouts, deposits and bookings that need an action, and the statements' gaps."""
        counts = self.counts()
        return sum(counts[name] for name in PAYOUT_CATEGORIES)

    def result_text(self, track: str = "") -> str:
        """The run in a line, as the command and the notebook end with it (``track``: what a
        tracked run adds after the count)."""
        counts = self.counts()
        return (
            f"{self.exception_count:,} exceptions{track}; {counts['matched']} of {len(self.payouts)} "
            f"payout(s) in the bank, {counts['in_transit']} in transit"
        )

    def counts(self) -> dict[str, int]:
        """How many of each outcome and category (``PAYOUT_CATEGORIES`` and ``INFORMATIONAL``)."""
        counts = dict.fromkeys((*PAYOUT_CATEGORIES, *INFORMATIONAL), 0)
        for line in self.payouts:
            counts[line.outcome] += 1
            counts["payout_items_do_not_add_up"] += line.items_state == "does not add up"
            books = BOOKS_CATEGORIES.get(line.books_outcome or "")
            if books is not None:
                counts[books] += 1
        counts["bank_deposit_unexplained"] = len(self.unexplained)
        counts["statement_gap"] = len(self.gaps)
        counts["books_payout_unexplained"] = len(self.books_unexplained)
        return counts


def reconcile_payouts(
    processor: LoadedInput | str | Path,
    bank: str | Path | Sequence[str | Path] | BankStatements,
    *,
    window: str = "3d",
    as_of: date | datetime | str | None = None,
    holidays: Sequence[date] = (),
    counterparties: Sequence[str] = (),
    backend: Backend | str | None = None,
    ledger: LoadedInput | str | Path | None = None,
) -> PayoutReconciliation:
    """The processor's payouts against the bank statements (and the books, given ``ledger``).

    ``window``: how long a payout may take to arrive, in business days (``3d``: three days,
    Monday to Friday, ``holidays`` left out). ``as_of``: the cut-off (default today, UTC): a
    payout whose window is still open then is in transit. ``counterparties``: more names of a
    processor's deposit in the bank's text. ``backend``: where the export's payouts are added up
    (DuckDB by default; Spark the same). ``ledger``: the books whose payout bookings (rows of
    kind ``payout``, as a bookkeeping report's layout or a type column says) are compared too,
    by the same rules and window as the bank's entries.
    """
    loaded = _payout_export(processor)
    books = ledger if ledger is None or isinstance(ledger, LoadedInput) else load_ledger(ledger, carry=False)
    statements = bank if isinstance(bank, BankStatements) else read_statements(bank)
    days = business_days(window)
    cutoff = _day(as_of)
    engine = backend if isinstance(backend, Backend) else connect(backend or "duckdb")
    engine.fit(loaded.described.size)
    totals = _totals(loaded, engine)
    booked = None if books is None else _booked_payouts(books, engine)
    payouts = [
        Payout(t.payout, t.currency, to_minor(t.paid_out, t.currency), _paid_on(t))
        for t in totals
        if t.paid_out is not None
    ]
    rows = statements.entries.to_pylist()
    entries = [_entry(i, row) for i, row in enumerate(rows)]
    match = functools.partial(match_payouts, payouts, window=days, holidays=frozenset(holidays), as_of=cutoff)
    found, left = match(entries)
    found_in_books, books_left = match(booked) if booked is not None else ([], [])
    in_books = {(f.payout.payout, f.payout.currency): f for f in found_in_books}
    by_id = {(t.payout, t.currency): t for t in totals}
    lines = tuple(_line(f, by_id[f.payout.key], in_books.get(f.payout.key)) for f in found)
    unexplained = tuple(rows[e.index] for e in left if looks_like_a_deposit(e, counterparties))
    read = (loaded.source, *sorted({str(r["source"]) for r in rows}), *([books.source] if books else []))
    return PayoutReconciliation(
        payouts=lines,
        totals=totals,
        unexplained=unexplained,
        gaps=tuple(statements.gaps.to_pylist()),
        other_entries=len(left) - len(unexplained),
        bank_entries=len(entries),
        as_of=cutoff,
        window=days,
        sources=read,
        books=None if books is None else books.source,
        books_payouts=0 if booked is None else len(booked),
        books_unexplained=tuple(_booking(e) for e in books_left),
    )


def _payout_export(processor: LoadedInput | str | Path) -> LoadedInput:
    """The processor's export, refused unless it says which payout paid each row."""
    loaded = processor if isinstance(processor, LoadedInput) else load_processor(processor, carry=False)
    if loaded.layout is None or loaded.layout.payout is None:
        raise InputError(
            f"{loaded.source}: this export does not say which payout paid each row; a payout report "
            "is one whose layout has [payout] (Stripe's balance and payout reconciliation reports, "
            "Adyen's settlement details)"
        )
    return loaded


def _totals(loaded: LoadedInput, engine: Backend) -> tuple[PayoutTotal, ...]:
    """Each payout of the export added up, in the backend (the payment reconciliation's SQL)."""
    from toolkit.reconcile._engine.payouts import payout_totals

    with engine.failures():
        return payout_totals(engine, _checked(engine, loaded))


def _checked(engine: Backend, loaded: LoadedInput) -> Side:
    """A side read and checked as the payment run reads it (dated, its slashed dates' order
    decided), with no cut-off: a payout run counts every row the file holds."""
    from toolkit.reconcile._engine.sides import checked_rows, dated

    return checked_rows(engine, loaded.side, dated(loaded, None, rated=True).with_dates_read(engine))


def _booked_payouts(books: LoadedInput, engine: Backend) -> list[BankEntry]:
    """The books' payout bookings (rows of kind ``payout``, usable) as entries to match: the
    money the clearing account sent to the bank, signed as the bank receives it, on the day
    booked, the row's key as its reference."""
    from toolkit.reconcile.inputs.checks import currency_codes
    from toolkit.reconcile.movements import code

    with engine.failures():
        side = _checked(engine, books)
        query = (
            f"SELECT _ord, _minor, _cur, _when, _key FROM ({side.rows}) "
            f"WHERE _kind = {code('payout')} AND NOT _rejected AND _minor IS NOT NULL ORDER BY _ord"
        )
        rows = engine.arrow(query).to_pylist()
    codes = currency_codes()
    entries = []
    for row in rows:
        day = datetime.fromtimestamp(int(row["_when"]), UTC).date() if row["_when"] is not None else date.min
        entries.append(
            BankEntry(
                index=int(row["_ord"]),  # unique across the books' files; its row: ``_row``
                currency=codes[int(row["_cur"])],
                amount_minor=-int(row["_minor"]),
                value_date=day,
                booking_date=day,
                entry_reference=str(row["_key"] or ""),
                counterparty="",
                remittance="",
            )
        )
    return entries


def _row(index: int) -> int:
    """The row of a books' entry, in its file (``index`` is the row's ``_ord``)."""
    return index % (1 << PART_SHIFT)


def _booking(entry: BankEntry) -> dict[str, object]:
    """A payout booking no payout explains, as ``books_unexplained`` holds it."""
    return {
        "row": _row(entry.index),
        "date": entry.booking_date,
        "currency": entry.currency,
        "amount": from_minor(entry.amount_minor, entry.currency),
        "key": entry.entry_reference,
    }


def business_days(window: str, option: str = "--window") -> int:
    """``3d`` (or ``3``): three business days; ``InputError`` naming ``option`` otherwise."""
    written = re.fullmatch(r"\s*([0-9]{1,3})\s*d?\s*", window.lower())
    if written is None:
        raise InputError(f"{option}: {window!r} is not a number of business days (e.g. 3d)")
    return int(written.group(1))


def holiday_dates(text: str | None, option: str = "--holidays") -> tuple[date, ...]:
    """Bank holidays: ``YYYY-MM-DD`` dates, comma-separated, or a file of them (one a line, ``#``
    comments); ``InputError`` naming ``option`` and the one that is not a date."""
    if not text or not text.strip():
        return ()
    path = Path(text.strip()).expanduser()
    written = path.read_text(encoding="utf-8") if path.is_file() else text
    days = []
    for part in written.replace(",", "\n").splitlines():
        part = part.split("#", 1)[0].strip()
        if part:
            try:
                days.append(date.fromisoformat(part))
            except ValueError:
                raise InputError(f"{option}: {part!r} is not a date (YYYY-MM-DD)") from None
    return tuple(days)


def _day(as_of: date | datetime | str | None) -> date:
    """The cut-off's day (UTC; a bare date is that day, as for the payment run); today when not
    given."""
    return datetime.now(UTC).date() if as_of is None else parse_as_of(as_of).date()


def _paid_on(total: PayoutTotal) -> date | None:
    return total.paid_on.date() if total.paid_on is not None else None


def _entry(index: int, row: dict[str, object]) -> BankEntry:
    return BankEntry(
        index=index,
        currency=str(row["currency"]),
        amount_minor=int(str(row["amount_minor"])),
        value_date=_as_date(row["value_date"]),
        booking_date=_as_date(row["booking_date"]),
        entry_reference=str(row["entry_reference"] or ""),
        counterparty=str(row["counterparty"] or ""),
        remittance=str(row["remittance"] or ""),
    )


def _as_date(value: object) -> date:
    assert isinstance(value, date)
    return value


def _line(found: Found, total: PayoutTotal, in_books: Found | None) -> PayoutLine:
    payout, entry = found.payout, found.entry
    booking = in_books.entry if in_books is not None else None
    return PayoutLine(
        payout=payout.payout,
        currency=payout.currency,
        paid_out=from_minor(payout.amount_minor, payout.currency),
        paid_on=payout.paid_on,
        items=total.items,
        items_net=total.items_net,
        items_state=total.state,
        outcome=found.outcome,
        matched_by=found.by,
        bank_reference=entry.entry_reference if entry else None,
        bank_booking_date=entry.booking_date if entry else None,
        bank_value_date=entry.value_date if entry else None,
        bank_amount=from_minor(entry.amount_minor, entry.currency) if entry else None,
        candidates=found.candidates,
        books_outcome=None if in_books is None else BOOKS_OUTCOMES[in_books.outcome],
        books_row=_row(booking.index) if booking else None,
        books_date=booking.booking_date if booking else None,
        books_amount=from_minor(booking.amount_minor, booking.currency) if booking else None,
    )


def payout_table(result: PayoutReconciliation) -> pa.Table:
    """``payouts.csv``'s rows as text: each payout, its items and what the bank shows."""
    names = (
        "payout",
        "currency",
        "paid_out",
        "paid_on",
        "items",
        "items_net",
        "items_state",
        "outcome",
        "matched_by",
        "bank_reference",
        "bank_booking_date",
        "bank_value_date",
        "bank_amount",
        "books_outcome",
        "books_row",
        "books_date",
        "books_amount",
    )
    rows = [[_text(getattr(line, name)) for name in names] for line in result.payouts]
    return pa.table({name: pa.array([r[i] for r in rows], pa.string()) for i, name in enumerate(names)})


def _text(value: object) -> str:
    return "" if value is None else str(value)
