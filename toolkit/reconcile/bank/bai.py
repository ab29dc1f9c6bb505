"""BAI2 (BAI Cash Management Balance Reporting Specifications, version 2), read with ``bai2``.

The library joins continuation records (``88``), reads the fields of each record and checks the
control totals and record counts of every account, group and file, so a truncated file is
refused. Amounts are integers there, as in the file: BAI2 writes no decimal point, the currency
implies the minor digits, so a written amount is already in minor units. A transaction's sign
comes from its type code (credits 100-399, debits 400-699); opening and closing ledger are the
account's summary codes 010 and 015. Each account of each group (an as-of date) is a statement.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bai2 import bai2 as bai2_file  # type: ignore[import-untyped]
from bai2 import helpers
from bai2.constants import TypeCodeTransaction  # type: ignore[import-untyped]
from bai2.exceptions import IntegrityException  # type: ignore[import-untyped]

from toolkit.reconcile.bank._model import Entry, Statement, currency_of, refuse

OPENING_LEDGER, CLOSING_LEDGER = "010", "015"


class _Counted(helpers.IteratorHelper):  # type: ignore[misc]
    """The library's record reader, noting the first line of each record, to place what it read.

    A record is known by its list of rows, which the library hands on to the model it builds
    (``model.rows is record.rows``); the lengths of those lists are no guide, since the library
    extends a header's list with its section's rows when it counts them.
    """

    def __init__(self, lines: list[str]) -> None:
        self.done = 0
        self.previous = 0
        self.starts: dict[int, int] = {}
        self.current_record: Any = None
        super().__init__(lines)

    def advance(self) -> None:
        if self.current_record is not None:
            self.previous = self.done
            self.done += len(self.current_record.rows)
        super().advance()
        self.starts[id(self.current_record.rows)] = self.done


def read_bai2(text: str, source: str) -> list[Statement]:
    """Every account of every group of a BAI2 file, as a statement."""
    numbered = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    lines = [line for _, line in numbered]
    reader: _Counted | None = None
    try:
        reader = _Counted(lines)
        parsed = bai2_file.Bai2FileParser(reader).parse()
    except Exception as exc:  # the library's ParsingException, IntegrityException, ValueError...
        # A section's totals are checked once its trailer is read: the record before the current one.
        at = (reader.previous if isinstance(exc, IntegrityException) else reader.done) if reader else 0
        at = min(at, len(numbered) - 1)
        message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise refuse(source, f"line {numbered[at][0]}", f"not a readable BAI2 file: {message}") from None
    file_id = str(parsed.header.file_id or "")
    numbers = [n for n, _ in numbered]
    placed = {rows: f"line {numbers[at]}" for rows, at in reader.starts.items()}
    return [
        _statement(group, account, file_id, placed, source)
        for group in parsed.children
        for account in group.children
    ]


def _statement(group: Any, account: Any, file_id: str, placed: dict[int, str], source: str) -> Statement:
    header = account.header
    place = placed[id(header.rows)]
    currency = currency_of(str(header.currency or group.header.currency or "USD"), source, place)
    as_of: dt.date | None = group.header.as_of_date
    if as_of is None:
        raise refuse(source, placed[id(group.header.rows)], "the 02 record has no as-of date")
    summary = {item.type_code.code: item.amount for item in header.summary_items}
    entries = tuple(_entry(detail, as_of, source, placed[id(detail.rows)]) for detail in account.children)
    number = str(header.customer_account_number or "")
    if not number:
        raise refuse(source, place, "the 03 record has no customer account number")
    return Statement(
        statement_id=f"{file_id}/{as_of.isoformat()}/{number}",
        format="bai2",
        account=number,
        currency=currency,
        opening_minor=summary.get(OPENING_LEDGER),
        opening_date=as_of if summary.get(OPENING_LEDGER) is not None else None,
        closing_minor=summary.get(CLOSING_LEDGER),
        closing_date=as_of if summary.get(CLOSING_LEDGER) is not None else None,
        entries=entries,
        source=source,
        place=place,
    )


def _entry(detail: Any, as_of: dt.date, source: str, place: str) -> Entry:
    """A 16 record: its type code signs it, a value-dated (``V``) one carries its value date."""
    side = detail.type_code.transaction
    if side not in (TypeCodeTransaction.credit, TypeCodeTransaction.debit):
        raise refuse(source, place, f"type code {detail.type_code.code} is neither a credit nor a debit")
    if detail.amount is None or detail.amount < 0:
        raise refuse(source, place, f"the 16 record's amount {detail.amount!r} is not an unsigned number")
    availability = detail.availability or {}
    value = availability.get("date") if isinstance(availability, dict) else None
    return Entry(
        amount_minor=detail.amount if side == TypeCodeTransaction.credit else -detail.amount,
        booking_date=as_of,
        value_date=value or as_of,
        entry_reference=str(detail.bank_reference or "").strip(),
        counterparty="",
        remittance=" ".join(str(detail.text or "").split()),
        reversal=False,
        place=place,
    )
