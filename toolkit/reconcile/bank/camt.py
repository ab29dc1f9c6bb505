"""ISO 20022 camt.053 (bank-to-customer statement), versions .001.02 to .001.13, read with lxml.

lxml rather than ElementTree: it keeps each element's line, so a bad file is refused at its line.
The parser resolves no entity, loads no DTD and reaches no network, and a document with a DOCTYPE
is refused outright (a bank statement has none): the safety defusedxml gives ElementTree. The
official XSDs are not checked: ISO's terms do not clearly let us ship them, banks deviate in
fields we never read, and every field we do read is checked here, at its line.
"""

from __future__ import annotations

import datetime as dt
import re

from lxml import etree

from toolkit.reconcile.bank._model import Entry, Statement, currency_of, iso_date, minor_units, refuse

#: ``urn:iso:std:iso:20022:tech:xsd:camt.053.001.08``: the version is the last two digits.
NAMESPACE = re.compile(r"^urn:iso:std:iso:20022:tech:xsd:camt\.053\.001\.(\d\d)$")
OPENING = ("OPBD", "PRCD")
CLOSING = ("CLBD",)

_Element = etree._Element


def read_camt(data: bytes, source: str) -> list[Statement]:
    """Every statement (``Stmt``) of a camt.053 document."""
    document = _document(data, source)
    ns = {"c": etree.QName(document).namespace}
    version = NAMESPACE.match(ns["c"] or "")
    name = f"camt.053.001.{version.group(1) if version else '?'}"
    statements = document.findall("c:BkToCstmrStmt/c:Stmt", ns)
    if not statements:
        raise refuse(source, _line(document), "<Document> has no <BkToCstmrStmt>/<Stmt>")
    return [_statement(stmt, ns, name, source) for stmt in statements]


def _document(data: bytes, source: str) -> _Element:
    """The camt.053 ``Document`` element (also inside an envelope such as a business message)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        tree = etree.fromstring(data, parser).getroottree()
    except etree.XMLSyntaxError as exc:
        raise refuse(source, f"line {exc.lineno}", f"not well-formed XML: {exc.msg}") from None
    if tree.docinfo.doctype:  # type: ignore[union-attr]
        raise refuse(source, "line 1", "a DOCTYPE is not accepted in a bank statement")
    for element in tree.getroot().iter(etree.Element):
        qname = etree.QName(element)
        if qname.localname == "Document" and NAMESPACE.match(qname.namespace or ""):
            return element
    namespace = etree.QName(tree.getroot()).namespace
    raise refuse(source, "line 1", f"no camt.053 <Document> (the namespace is {namespace!r})")


def _statement(stmt: _Element, ns: dict[str, str], name: str, source: str) -> Statement:
    """One ``Stmt``: its account, balances and booked entries."""
    place = _line(stmt)
    account = _text(stmt, "c:Acct/c:Id/c:IBAN", ns) or _text(stmt, "c:Acct/c:Id/c:Othr/c:Id", ns)
    if not account:
        raise refuse(source, place, "<Stmt> has no <Acct>/<Id> (IBAN or Othr/Id)")
    balances: dict[str, tuple[int, str, dt.date]] = {}
    for bal in stmt.findall("c:Bal", ns):
        kind = _kind(bal, ns)
        if kind in OPENING + CLOSING and kind not in balances:
            balances[kind] = _balance(bal, ns, source)
    opening = next((balances[k] for k in OPENING if k in balances), None)
    closing = next((balances[k] for k in CLOSING if k in balances), None)
    currency = _currency(stmt, ns, [b[1] for b in (opening, closing) if b], source)
    entries = tuple(
        _entry(ntry, ns, currency, source) for ntry in stmt.findall("c:Ntry", ns) if _booked(ntry, ns)
    )
    return Statement(
        statement_id=_text(stmt, "c:Id", ns),
        format=name,
        account=account,
        currency=currency,
        opening_minor=opening[0] if opening else None,
        opening_date=opening[2] if opening else None,
        closing_minor=closing[0] if closing else None,
        closing_date=closing[2] if closing else None,
        entries=entries,
        source=source,
        place=place,
    )


def _currency(stmt: _Element, ns: dict[str, str], balances: list[str], source: str) -> str:
    """The account's currency (``Acct/Ccy``, else its balances'); a balance in another is refused."""
    place = _line(stmt)
    stated = _text(stmt, "c:Acct/c:Ccy", ns)
    currency = currency_of(stated, source, place) if stated else (balances[0] if balances else "")
    if not currency:
        raise refuse(source, place, "<Stmt> states no currency (<Acct>/<Ccy> or a balance's <Amt Ccy>)")
    for other in balances:
        if other != currency:
            raise refuse(source, place, f"a balance in {other} in a {currency} statement")
    return currency


def _kind(bal: _Element, ns: dict[str, str]) -> str:
    return _text(bal, "c:Tp/c:CdOrPrtry/c:Cd", ns) or _text(bal, "c:Tp/c:CdOrPrtry/c:Prtry", ns)


def _balance(bal: _Element, ns: dict[str, str], source: str) -> tuple[int, str, dt.date]:
    """A balance as (signed minor units, currency, date)."""
    minor, currency = _amount(bal, ns, source)
    when = _text(bal, "c:Dt/c:Dt", ns) or _text(bal, "c:Dt/c:DtTm", ns)
    if not when:
        raise refuse(source, _line(bal), "<Bal> has no <Dt>")
    return minor, currency, iso_date(when, source, _line(bal))


def _amount(parent: _Element, ns: dict[str, str], source: str) -> tuple[int, str]:
    """``Amt`` with its ``Ccy``, signed by the sibling ``CdtDbtInd`` (CRDT positive, DBIT negative)."""
    amt = parent.find("c:Amt", ns)
    if amt is None:
        raise refuse(source, _line(parent), f"<{etree.QName(parent).localname}> has no <Amt>")
    code = amt.get("Ccy")
    if not code:
        raise refuse(source, _line(amt), "<Amt> has no Ccy attribute")
    currency = currency_of(code, source, _line(amt))
    minor = minor_units(amt.text or "", currency, source, _line(amt))
    indicator = _text(parent, "c:CdtDbtInd", ns)
    if indicator not in ("CRDT", "DBIT"):
        raise refuse(source, _line(parent), f"<CdtDbtInd> is {indicator!r}, not CRDT or DBIT")
    return (minor if indicator == "CRDT" else -minor), currency


def _booked(ntry: _Element, ns: dict[str, str]) -> bool:
    """A booked entry: ``Sts`` BOOK (a code up to .07, a ``Cd`` in a choice from .08)."""
    return (_text(ntry, "c:Sts", ns) or _text(ntry, "c:Sts/c:Cd", ns)) == "BOOK"


def _entry(ntry: _Element, ns: dict[str, str], currency: str, source: str) -> Entry:
    place = _line(ntry)
    minor, written = _amount(ntry, ns, source)
    if written != currency:
        raise refuse(source, place, f"an entry in {written} in a {currency} statement")
    booked = _text(ntry, "c:BookgDt/c:Dt", ns) or _text(ntry, "c:BookgDt/c:DtTm", ns)
    if not booked:
        raise refuse(source, place, "<Ntry> has no <BookgDt>")
    booking = iso_date(booked, source, place)
    valued = _text(ntry, "c:ValDt/c:Dt", ns) or _text(ntry, "c:ValDt/c:DtTm", ns)
    return Entry(
        amount_minor=minor,
        booking_date=booking,
        value_date=iso_date(valued, source, place) if valued else booking,
        entry_reference=_text(ntry, "c:AcctSvcrRef", ns) or _text(ntry, "c:NtryRef", ns),
        counterparty=_counterparty(ntry, ns, credit=minor >= 0),
        remittance=_remittance(ntry, ns),
        reversal=_text(ntry, "c:RvslInd", ns).lower() in ("true", "1"),
        place=place,
    )


def _counterparty(ntry: _Element, ns: dict[str, str], *, credit: bool) -> str:
    """The other party: the debtor of a credit, the creditor of a debit (``Pty`` wraps it from .08)."""
    party = "c:Dbtr" if credit else "c:Cdtr"
    names: list[str] = []
    for details in ntry.findall("c:NtryDtls/c:TxDtls/c:RltdPties", ns):
        name = _text(details, f"{party}/c:Nm", ns) or _text(details, f"{party}/c:Pty/c:Nm", ns)
        if name and name not in names:
            names.append(name)
    return "; ".join(names)


def _remittance(ntry: _Element, ns: dict[str, str]) -> str:
    """Unstructured remittance lines and creditor references, else the entry's additional info."""
    parts = [
        " ".join((node.text or "").split())
        for node in ntry.iterfind("c:NtryDtls/c:TxDtls/c:RmtInf/*", ns)
        if etree.QName(node).localname == "Ustrd"
    ]
    parts += [
        (node.text or "").strip()
        for node in ntry.iterfind("c:NtryDtls/c:TxDtls/c:RmtInf/c:Strd/c:CdtrRefInf/c:Ref", ns)
    ]
    text = " ".join(part for part in parts if part)
    return text or _text(ntry, "c:AddtlNtryInf", ns)


def _text(parent: _Element, path: str, ns: dict[str, str]) -> str:
    found = parent.find(path, ns)
    return " ".join((found.text or "").split()) if found is not None else ""


def _line(element: _Element) -> str:
    return f"line {element.sourceline}"
