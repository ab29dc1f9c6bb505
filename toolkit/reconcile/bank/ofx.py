"""OFX (Open Financial Exchange) 1.x SGML and 2.x XML bank and card statements, read with ofxtools.

ofxtools reads the header and the body (closing the tags SGML leaves open) into an element tree;
its typed conversion is not used, because it may quantize a decimal and refuses a file for an
aggregate we never read. Amounts are read from their text (``TRNAMT`` is signed: a credit is
positive), dates as written (``YYYYMMDD`` first, the time and zone after it). OFX states no
opening balance: it is derived as the closing ``LEDGERBAL`` less the statement's entries, and
marked so.
"""

from __future__ import annotations

import datetime as dt
import io
import xml.etree.ElementTree as ET

from ofxtools.Parser import OFXTree

from toolkit.reconcile.bank._model import Entry, Statement, currency_of, minor_units, refuse

#: A bank statement and a credit card statement, and where each keeps its account.
STATEMENTS = {"STMTRS": "BANKACCTFROM", "CCSTMTRS": "CCACCTFROM"}


def read_ofx(data: bytes, source: str) -> list[Statement]:
    """Every bank (``STMTRS``) and credit card (``CCSTMTRS``) statement of an OFX file."""
    tree = OFXTree()
    try:
        root = tree.parse(io.BytesIO(data))
    except Exception as exc:  # ofxtools' OFXHeaderError, ParseError, and what its regexes let through
        message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise refuse(source, "OFX", f"not a readable OFX file: {message}") from None
    statements = [
        _statement(stmt, f"{tag}[{n}]", source)
        for tag in STATEMENTS
        for n, stmt in enumerate(root.iter(tag), 1)
    ]
    if not statements:
        raise refuse(source, "OFX", "no <STMTRS> or <CCSTMTRS> statement")
    return statements


def _statement(stmt: ET.Element, place: str, source: str) -> Statement:
    currency = currency_of(_text(stmt, "CURDEF"), source, f"{place}/CURDEF")
    account = _text(stmt, f"{STATEMENTS[stmt.tag]}/ACCTID")
    if not account:
        raise refuse(source, place, f"no <{STATEMENTS[stmt.tag]}>/<ACCTID>")
    entries = tuple(
        _entry(trn, currency, source, f"{place}/BANKTRANLIST/STMTTRN[{n}]")
        for n, trn in enumerate(stmt.findall("BANKTRANLIST/STMTTRN"), 1)
    )
    closing = _signed(_text(stmt, "LEDGERBAL/BALAMT"), currency, source, f"{place}/LEDGERBAL/BALAMT")
    closing_date = _date(_text(stmt, "LEDGERBAL/DTASOF"), source, f"{place}/LEDGERBAL/DTASOF")
    start = _text(stmt, "BANKTRANLIST/DTSTART")
    end = _text(stmt, "BANKTRANLIST/DTEND")
    return Statement(
        statement_id=f"{account}/{start[:8]}-{end[:8]}",
        format="ofx",
        account=account,
        currency=currency,
        opening_minor=closing - sum(e.amount_minor for e in entries),
        opening_date=_date(start, source, f"{place}/BANKTRANLIST/DTSTART") if start else None,
        closing_minor=closing,
        closing_date=closing_date,
        entries=entries,
        source=source,
        place=place,
        opening_derived=True,
    )


def _entry(trn: ET.Element, currency: str, source: str, place: str) -> Entry:
    posted = _date(_text(trn, "DTPOSTED"), source, f"{place}/DTPOSTED")
    available = _text(trn, "DTAVAIL")
    name = _text(trn, "NAME") or _text(trn, "PAYEE/NAME")
    return Entry(
        amount_minor=_signed(_text(trn, "TRNAMT"), currency, source, f"{place}/TRNAMT"),
        booking_date=posted,
        value_date=_date(available, source, f"{place}/DTAVAIL") if available else posted,
        entry_reference=_text(trn, "FITID"),
        counterparty=name,
        remittance=_text(trn, "MEMO"),
        reversal=False,
        place=place,
    )


def _signed(text: str, currency: str, source: str, place: str) -> int:
    """A signed OFX amount (``-200.00``; a decimal comma is allowed) in minor units."""
    written = text.strip()
    if not written:
        raise refuse(source, place, "no amount")
    if "," in written and "." not in written:
        written = written.replace(",", ".")
    negative = written.startswith("-")
    minor = minor_units(written[1:] if written[0] in "+-" else written, currency, source, place)
    return -minor if negative else minor


def _date(text: str, source: str, place: str) -> dt.date:
    """The day an OFX date-time names, as written (``20051004120000[-5:EST]`` is 4 October)."""
    written = text.strip()
    try:
        return dt.datetime.strptime(written[:8], "%Y%m%d").date()
    except ValueError:
        raise refuse(source, place, f"{written!r} is not an OFX date") from None


def _text(parent: ET.Element, path: str) -> str:
    found = parent.find(path)
    return " ".join((found.text or "").split()) if found is not None else ""
