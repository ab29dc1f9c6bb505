"""Payouts reconciled from the processor to the bank (issue 38): does each payout add up to its
items, did it arrive in the bank for its amount, and is every processor deposit in the bank
explained by a payout?

``reconcile_payouts`` reads the processor's export as the payment reconciliation does (its layout
names the payout of each row: ``[payout]``), adds each payout's items up in the backend
(``_engine/payouts.py``, the same SQL on DuckDB and Spark), reads the bank statements
(``bank.read_statements``) and finds each payout there (``matching.py``). ``write_payout_report``
writes what it found (``report.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

from toolkit.errors import InputError
from toolkit.money import from_minor, to_minor
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.bank import BankStatements, read_statements
from toolkit.reconcile.inputs import LoadedInput, load_processor
from toolkit.reconcile.payouts.matching import BankEntry, Found, Payout, looks_like_a_deposit, match_payouts
from toolkit.reconcile.result import PayoutTotal
from toolkit.reconcile.timing import parse_as_of

__all__ = [
    "PAYOUT_CATEGORIES",
    "PayoutLine",
    "PayoutReconciliation",
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
)
#: Outcomes that are no exception: found, on its way, or never meant to arrive.
INFORMATIONAL: tuple[str, ...] = ("matched", "in_transit", "failed")


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

    @property
    def exception_count(self) -> int:
        """Payouts and deposits that need an action, and the statements' gaps."""
        listed = sum(line.outcome not in INFORMATIONAL for line in self.payouts)
        added = sum(line.items_state == "does not add up" for line in self.payouts)
        return listed + added + len(self.unexplained) + len(self.gaps)

    def counts(self) -> dict[str, int]:
        """How many of each outcome and category (``PAYOUT_CATEGORIES`` and ``INFORMATIONAL``)."""
        counts = dict.fromkeys((*PAYOUT_CATEGORIES, *INFORMATIONAL), 0)
        for line in self.payouts:
            counts[line.outcome] += 1
            counts["payout_items_do_not_add_up"] += line.items_state == "does not add up"
        counts["bank_deposit_unexplained"] = len(self.unexplained)
        counts["statement_gap"] = len(self.gaps)
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
) -> PayoutReconciliation:
    """The processor's payouts against the bank statements.

    ``window``: how long a payout may take to arrive, in business days (``3d``: three days,
    Monday to Friday, ``holidays`` left out). ``as_of``: the cut-off (default today, UTC): a
    payout whose window is still open then is in transit. ``counterparties``: more names of a
    processor's deposit in the bank's text. ``backend``: where the export's payouts are added up
    (DuckDB by default; Spark the same).
    """
    loaded = processor if isinstance(processor, LoadedInput) else load_processor(processor, carry=False)
    if loaded.layout is None or loaded.layout.payout is None:
        raise InputError(
            f"{loaded.source}: this export does not say which payout paid each row; a payout report "
            "is one whose layout has [payout] (Stripe's balance and payout reconciliation reports, "
            "Adyen's settlement details)"
        )
    statements = bank if isinstance(bank, BankStatements) else read_statements(bank)
    days = _business_days(window)
    cutoff = _day(as_of)
    totals = _totals(loaded, backend)
    payouts = [
        Payout(t.payout, t.currency, to_minor(t.paid_out, t.currency), _paid_on(t))
        for t in totals
        if t.paid_out is not None
    ]
    rows = statements.entries.to_pylist()
    entries = [_entry(i, row) for i, row in enumerate(rows)]
    found, left = match_payouts(payouts, entries, window=days, holidays=frozenset(holidays), as_of=cutoff)
    by_id = {(t.payout, t.currency): t for t in totals}
    lines = tuple(_line(f, by_id[f.payout.payout, f.payout.currency]) for f in found)
    unexplained = tuple(rows[e.index] for e in left if looks_like_a_deposit(e, counterparties))
    return PayoutReconciliation(
        payouts=lines,
        totals=totals,
        unexplained=unexplained,
        gaps=tuple(statements.gaps.to_pylist()),
        other_entries=len(left) - len(unexplained),
        bank_entries=len(entries),
        as_of=cutoff,
        window=days,
        sources=(loaded.source, *sorted({str(r["source"]) for r in rows})),
    )


def _totals(loaded: LoadedInput, backend: Backend | str | None) -> tuple[PayoutTotal, ...]:
    """Each payout of the export added up, in the backend (the payment reconciliation's SQL)."""
    from toolkit.reconcile._engine.payouts import payout_totals
    from toolkit.reconcile._engine.sides import checked_rows, dated

    engine = backend if isinstance(backend, Backend) else connect(backend or "duckdb")
    with engine.failures():
        side = checked_rows(engine, "processor", dated(loaded, None, rated=True).with_dates_read(engine))
        return payout_totals(engine, side)


def _business_days(window: str) -> int:
    """``3d`` (or ``3``): three business days; ``InputError`` naming the option otherwise."""
    written = re.fullmatch(r"\s*([0-9]{1,3})\s*d?\s*", window.lower())
    if written is None:
        raise InputError(f"--window: {window!r} is not a number of business days (e.g. 3d)")
    return int(written.group(1))


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


def _line(found: Found, total: PayoutTotal) -> PayoutLine:
    payout, entry = found.payout, found.entry
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
    )
    rows = [[_text(getattr(line, name)) for name in names] for line in result.payouts]
    return pa.table({name: pa.array([r[i] for r in rows], pa.string()) for i, name in enumerate(names)})


def _text(value: object) -> str:
    return "" if value is None else str(value)
