"""Each payout found in the bank statement, or said to be missing: the second of the controller's
three questions (did every payout arrive, for the amount the processor says?), and the third
(is every processor deposit in the bank explained by a payout?).

Pure Python over small lists: a month has tens of payouts and a statement hundreds of entries,
whatever the backend that added the payouts up. The rules, in order:

1. **A reference decides first.** A bank entry whose reference or remittance text carries the
   payout's id (Stripe's ``po_...``; a batch number as ``batch 7``) is that payout's: matched when
   the amounts agree, ``payout_amount_mismatch`` when they do not.
2. **Then currency, amount and date.** Of the entries in the payout's currency, for its exact
   amount, dated (value date) from the payout's day to ``window`` business days after it, the
   nearest is taken where it is nobody else's nearest too; payouts that cannot be told apart (two
   equal payouts, two equal entries) are ``payout_ambiguous``, never paired at random.
3. **Otherwise** the payout is ``in_transit`` while its window is open at the cut-off, and
   ``payout_missing_in_bank`` after.

A payout whose rows add up to nothing (paid out, then returned: Stripe's ``payout_reversal``) is
``failed``: no money is expected in the bank. A bank credit no payout explains is
``bank_deposit_unexplained`` where its text names the processor (or a counterparty given);
other entries are counted and left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

#: The words a processor's deposit carries in a bank's text (compared in lower case).
PROCESSOR_WORDS: tuple[str, ...] = ("stripe", "adyen", "paypal", "braintree", "checkout.com", "mollie")


@dataclass(frozen=True)
class Payout:
    """A payout as the processor's export says it: its id, currency, the amount paid out (minor
    units; negative: a debit of the bank account) and its day."""

    payout: str
    currency: str
    amount_minor: int
    paid_on: date | None

    @property
    def key(self) -> tuple[str, str]:
        """The payout and its currency: a payout of two currencies is two payouts."""
        return self.payout, self.currency


@dataclass(frozen=True)
class BankEntry:
    """A booked bank entry (``bank.read_statements``' ``entries``), the fields matching reads."""

    index: int
    currency: str
    amount_minor: int
    value_date: date
    booking_date: date
    entry_reference: str
    counterparty: str
    remittance: str


@dataclass(frozen=True)
class Found:
    """What became of one payout: ``outcome`` (``matched``, ``payout_amount_mismatch``,
    ``payout_ambiguous``, ``in_transit``, ``payout_missing_in_bank`` or ``failed``), the bank
    entry it was found as (None where none), and how (``reference`` or ``amount and date``)."""

    payout: Payout
    outcome: str
    entry: BankEntry | None = None
    by: str | None = None
    candidates: int = 0


def business_days_after(day: date, days: int, holidays: frozenset[date]) -> date:
    """The day ``days`` business days (Monday to Friday, not a holiday) after ``day``."""
    current, left = day, days
    while left > 0:
        current += timedelta(days=1)
        if current.weekday() < 5 and current not in holidays:
            left -= 1
    return current


def _mentions(entry: BankEntry, payout: str) -> bool:
    """Whether the entry's reference or text carries the payout's id: as a word (``po_1Qx``), or
    a batch number written ``batch 7`` (a bare number is no evidence)."""
    text = f"{entry.entry_reference} {entry.remittance}".lower()
    wanted = re.escape(payout.lower())
    if payout.isdigit():
        return re.search(rf"\bbatch\s*(no\.?|number|nr\.?)?\s*#?{wanted}\b", text) is not None
    return re.search(rf"(?<![\w]){wanted}(?![\w])", text) is not None


def match_payouts(
    payouts: Sequence[Payout],
    entries: Sequence[BankEntry],
    *,
    window: int,
    holidays: frozenset[date] = frozenset(),
    as_of: date,
) -> tuple[list[Found], list[BankEntry]]:
    """Each payout's outcome (in ``payouts``' order), and the entries no payout took."""
    used: set[int] = set()
    found: dict[str, Found] = {}
    for payout in payouts:
        if payout.amount_minor == 0:
            found[payout.payout] = Found(payout, "failed")
            continue
        named = [e for e in entries if e.index not in used and _mentions(e, payout.payout)]
        if len(named) == 1 or (named and len({e.amount_minor for e in named}) == 1):
            entry = min(named, key=lambda e: abs((e.value_date - (payout.paid_on or e.value_date)).days))
            used.add(entry.index)
            right = entry.amount_minor == payout.amount_minor and entry.currency == payout.currency
            found[payout.payout] = Found(
                payout, "matched" if right else "payout_amount_mismatch", entry, "reference"
            )
    by_amount = [p for p in payouts if p.payout not in found]
    windows = {p.payout: _window(p, window, holidays) for p in by_amount}
    free = [e for e in entries if e.index not in used]
    candidates = {p.payout: [e for e in free if _fits(p, e, windows[p.payout])] for p in by_amount}
    for payout, entry in _nearest_pairs(by_amount, candidates):
        used.add(entry.index)
        found[payout.payout] = Found(payout, "matched", entry, "amount and date")
    for payout in by_amount:
        if payout.payout in found:
            continue
        left = [e for e in candidates[payout.payout] if e.index not in used]
        if left:
            found[payout.payout] = Found(payout, "payout_ambiguous", candidates=len(left))
            continue
        last = windows[payout.payout][1]
        open_window = last is None or as_of <= last
        found[payout.payout] = Found(payout, "in_transit" if open_window else "payout_missing_in_bank")
    return [found[p.payout] for p in payouts], [e for e in entries if e.index not in used]


def _window(payout: Payout, days: int, holidays: frozenset[date]) -> tuple[date | None, date | None]:
    """The value dates a payout may arrive on: its day to ``days`` business days after."""
    if payout.paid_on is None:
        return None, None
    return payout.paid_on, business_days_after(payout.paid_on, days, holidays)


def _fits(payout: Payout, entry: BankEntry, window: tuple[date | None, date | None]) -> bool:
    first, last = window
    same = entry.currency == payout.currency and entry.amount_minor == payout.amount_minor
    if first is None or last is None:
        return same
    return same and first <= entry.value_date <= last


def _nearest_pairs(
    payouts: Sequence[Payout], candidates: dict[str, list[BankEntry]]
) -> Iterable[tuple[Payout, BankEntry]]:
    """Payouts and entries that are each other's one nearest: an entry several payouts could be,
    or a payout with several entries at the same distance, is no pair (``payout_ambiguous``)."""

    def distance(payout: Payout, entry: BankEntry) -> int:
        return abs((entry.value_date - (payout.paid_on or entry.value_date)).days)

    nearest: dict[str, BankEntry] = {}
    for payout in payouts:
        options = candidates[payout.payout]
        if not options:
            continue
        best = min(distance(payout, e) for e in options)
        closest = [e for e in options if distance(payout, e) == best]
        if len(closest) == 1:
            nearest[payout.payout] = closest[0]
    claimed: dict[int, list[Payout]] = {}
    for payout in payouts:
        if payout.payout in nearest:
            claimed.setdefault(nearest[payout.payout].index, []).append(payout)
    for payout in payouts:
        entry = nearest.get(payout.payout)
        if entry is not None and len(claimed[entry.index]) == 1:
            yield payout, entry


def looks_like_a_deposit(entry: BankEntry, counterparties: Sequence[str]) -> bool:
    """A bank credit whose text names a processor (``PROCESSOR_WORDS``) or a counterparty given."""
    if entry.amount_minor <= 0:
        return False
    text = f"{entry.counterparty} {entry.remittance} {entry.entry_reference}".lower()
    words = (*PROCESSOR_WORDS, *(c.strip().lower() for c in counterparties if c.strip()))
    return any(word in text for word in words)
