"""The sandbox's bank: a day's account statement as ISO 20022 camt.053.001.08 (BankToCustomerStatement),
the message European banks send, so that the payout reconciliation can be run against the
sandbox's payouts end to end (``toolkit reconcile payouts``).

Only what a statement needs is written: the group header, the account (IBAN, currency), the
opening and closing booked balances (``OPBD``, ``CLBD``), and per entry its amount, credit or
debit, status ``BOOK``, booking and value dates, the bank's reference (``AcctSvcrRef``), the
counterparty and the remittance text, as in the .08 message definition (``Sts/Cd``,
``RltdPties/Dbtr/Pty/Nm``). The reader (``toolkit.reconcile.bank``) reads it back exactly.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from toolkit.money import from_minor

NAMESPACE = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"


@dataclass(frozen=True)
class StatementEntry:
    """One booked entry: signed minor units (credit positive), its dates and texts."""

    amount_minor: int
    booking_date: date
    value_date: date
    reference: str
    counterparty: str = ""
    remittance: str = ""


def camt053(
    *,
    iban: str,
    currency: str,
    day: date,
    opening_minor: int,
    entries: Sequence[StatementEntry],
    sequence: int = 1,
) -> bytes:
    """A day's statement of ``iban`` as camt.053.001.08 XML (UTF-8): its opening balance, the
    entries, and the closing balance they add up to."""
    ET.register_namespace("", NAMESPACE)
    document = ET.Element(f"{{{NAMESPACE}}}Document")
    statement_root = _sub(document, "BkToCstmrStmt")
    header = _sub(statement_root, "GrpHdr")
    _sub(header, "MsgId", f"SANDBOX/{iban}/{day:%Y%m%d}")
    _sub(header, "CreDtTm", f"{day.isoformat()}T23:00:00Z")
    statement = _sub(statement_root, "Stmt")
    _sub(statement, "Id", f"{day:%Y%m%d}-{sequence}")
    _sub(statement, "ElctrncSeqNb", str(sequence))
    account = _sub(statement, "Acct")
    _sub(_sub(account, "Id"), "IBAN", iban)
    _sub(account, "Ccy", currency)
    closing = opening_minor + sum(e.amount_minor for e in entries)
    _balance(statement, "OPBD", opening_minor, currency, day)
    _balance(statement, "CLBD", closing, currency, day)
    for number, entry in enumerate(entries, start=1):
        _entry(statement, number, entry, currency)
    ET.indent(document, space="  ")
    body: bytes = ET.tostring(document, encoding="utf-8", xml_declaration=True)
    return body


def _sub(parent: ET.Element, name: str, text: str | None = None) -> ET.Element:
    element = ET.SubElement(parent, f"{{{NAMESPACE}}}{name}")
    if text is not None:
        element.text = text
    return element


def _amount(parent: ET.Element, minor: int, currency: str) -> None:
    amount = _sub(parent, "Amt", str(from_minor(abs(minor), currency)))
    amount.set("Ccy", currency)
    _sub(parent, "CdtDbtInd", "CRDT" if minor >= 0 else "DBIT")


def _balance(statement: ET.Element, code: str, minor: int, currency: str, day: date) -> None:
    balance = _sub(statement, "Bal")
    _sub(_sub(_sub(balance, "Tp"), "CdOrPrtry"), "Cd", code)
    _amount(balance, minor, currency)
    _sub(_sub(balance, "Dt"), "Dt", day.isoformat())


def _entry(statement: ET.Element, number: int, entry: StatementEntry, currency: str) -> None:
    element = _sub(statement, "Ntry")
    _sub(element, "NtryRef", str(number))
    _amount(element, entry.amount_minor, currency)
    _sub(_sub(element, "Sts"), "Cd", "BOOK")
    _sub(_sub(element, "BookgDt"), "Dt", entry.booking_date.isoformat())
    _sub(_sub(element, "ValDt"), "Dt", entry.value_date.isoformat())
    _sub(element, "AcctSvcrRef", entry.reference)
    if entry.counterparty or entry.remittance:
        details = _sub(_sub(element, "NtryDtls"), "TxDtls")
        if entry.counterparty:
            party = "Dbtr" if entry.amount_minor >= 0 else "Cdtr"
            _sub(_sub(_sub(_sub(details, "RltdPties"), party), "Pty"), "Nm", entry.counterparty)
        if entry.remittance:
            _sub(_sub(details, "RmtInf"), "Ustrd", entry.remittance)
