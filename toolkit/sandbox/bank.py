"""The sandbox's bank: where its payouts arrive, and what a control makes of them.

Pure functions over the payouts (``payouts.py``) and the bank controls (store tables
``bank_payout_controls`` and ``bank_deposits``): each payout is a credit booked on its payout day
in the account of its currency, with the payout's statement descriptor as remittance text, unless
a control says the bank lost it (no entry ever), delayed it (booked that many business days
later) or changed it (booked for another amount). A deposit control adds a credit no payout
explains. ``statement`` writes one day of one account as camt.053 (``statements.camt053``); the
opening balance is every earlier entry of the account, so that each day's closing balance is the
next day's opening balance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from toolkit.sandbox.payouts import PROCESSOR_NAME, Payout, business_days_after
from toolkit.sandbox.statements import StatementEntry, camt053

#: The sandbox account's bank code (a German BLZ: the IBAN is valid, the account fictitious).
BANK_CODE = "37040044"


@dataclass(frozen=True)
class PayoutControl:
    """What the bank does to one payout: lose it, book it ``delay_days`` business days late,
    and/or book it for ``amount_minor`` instead."""

    payout_id: str
    lost: bool = False
    delay_days: int = 0
    amount_minor: int | None = None


@dataclass(frozen=True)
class Deposit:
    """A credit no payout explains, booked on ``day``."""

    number: int
    currency: str
    amount_minor: int
    day: date
    counterparty: str
    text: str

    @property
    def reference(self) -> str:
        """The bank's reference of the entry (unique: statements that overlap repeat it)."""
        return f"BNK-DEP-{self.number:06d}"


@dataclass(frozen=True)
class BankLine:
    """One booked credit of an account."""

    currency: str
    entry: StatementEntry


def iban(currency: str) -> str:
    """The sandbox's account for ``currency``: a valid German IBAN whose account number spells
    the currency (letters as ISO 13616 numbers: EUR -> 141127)."""
    account = "".join(str(ord(letter) - 55) for letter in currency).rjust(10, "0")
    bban = f"{BANK_CODE}{account}"
    check = 98 - int(f"{bban}131400") % 97  # "DE00" moved to the end, D=13 E=14
    return f"DE{check:02d}{bban}"


def lines(
    payouts: Sequence[Payout], controls: Mapping[str, PayoutControl], deposits: Sequence[Deposit]
) -> list[BankLine]:
    """Every credit the bank books, whenever: the payouts as the controls leave them, and the
    deposits. A payout of nothing moves no money and books nothing."""
    booked: list[BankLine] = []
    for payout in payouts:
        control = controls.get(payout.id, PayoutControl(payout.id))
        amount = payout.net_minor if control.amount_minor is None else control.amount_minor
        if control.lost or amount == 0:
            continue
        day = business_days_after(payout.day, control.delay_days)
        entry = StatementEntry(amount, day, day, f"BNK-{payout.id[3:]}", PROCESSOR_NAME, payout.descriptor)
        booked.append(BankLine(payout.currency, entry))
    for deposit in deposits:
        entry = StatementEntry(
            deposit.amount_minor,
            deposit.day,
            deposit.day,
            deposit.reference,
            deposit.counterparty,
            deposit.text,
        )
        booked.append(BankLine(deposit.currency, entry))
    return booked


def statement(booked: Sequence[BankLine], *, currency: str, day: date) -> bytes:
    """The camt.053 statement of the ``currency`` account for ``day``: its entries that day, opened
    with the sum of every entry before it."""
    mine = [line.entry for line in booked if line.currency == currency]
    opening = sum(e.amount_minor for e in mine if e.booking_date < day)
    today = sorted((e for e in mine if e.booking_date == day), key=lambda e: e.reference)
    return camt053(
        iban=iban(currency),
        currency=currency,
        day=day,
        opening_minor=opening,
        entries=today,
        sequence=day.toordinal(),
    )
