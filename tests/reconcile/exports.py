"""Processor exports and a ledger for one month of orders, in the layouts the vendors document,
with the cases a month really has planted (issue 37).

Headers:

- Stripe's itemized balance change from activity report (balance_change_from_activity.itemized.3),
  columns in the order of docs.stripe.com/reports/balance, with two metadata columns the merchant
  named (``payment_metadata[customer_ref]`` first, so that the order key must be chosen by its
  values); amounts signed (refunds, disputes, fees and payouts negative), times
  ``YYYY-MM-DD HH:MM:SS`` in UTC; categories of docs.stripe.com/reports/reporting-categories.
- Adyen's settlement details report, its 30 columns as the report documents them; unsigned amounts
  in Gross/Net Debit and Credit, a fee's and a payout's in the net columns only, times in the
  account's time zone named in ``TimeZone``.
- Adyen's payment accounting report (its Interactive variant, for the month), its 25 standard
  columns in order: docs.adyen.com/reporting/invoice-reconciliation/payment-accounting-report and
  docs.adyen.com/essentials/interactive-payment-accounting-report (the first seven as those pages
  give them; the rest in the order public parsers of the report read them: Yoast's
  singer-tap-adyen ``schemas/payment_accounting.json``, Wikimedia's SmashPig
  ``AdyenPaymentsAccountingReport``). A payment once per status it passes through (Received,
  Authorised, SentForSettle, Settled: docs.adyen.com/reporting/reports-and-the-payments-lifecycle,
  docs.adyen.com/account/payments-lifecycle), a refund as SentForRefund and Refunded, a chargeback
  as Chargeback with nothing captured and its amount in Main Amount (as SmashPig reads it); a
  refused attempt (Received, Refused). Only transactional events, no fee, dispute fee or payout
  line: "You won't see any MerchantPayouts, BalanceTransfers, DepositCorrections etc."
  (help.adyen.com/knowledge/finance/reports-and-reconciliation/interactive-payment-accounting-report).
  The pages reachable do not give the signs of the register columns (Received, Authorised,
  Captured, Payable): each amount is written as the money its record type moves.

- DATEV's booking batch (EXTF Buchungsstapel) as accounting software writes it for DATEV: the
  first line of metadata (its fields as ERPNext's DATEV export writes them, the period in fields
  15 and 16), the column names of the format (all of them, as DATEV requires), ';', a decimal
  comma, text quoted, latin-1, CRLF; ``Belegdatum`` as day and month; credit notes as ``H``.

Planted, on both: ORD-13 booked and never charged, ORD-14 charged 0.01 less, ORD-15 charged
twice, ORD-16 charged and never booked, ORD-17 refunded in two parts and booked as one credit
note, ORD-18 a chargeback booked, ORD-19 a refund the books lack; a fee line, a dispute fee line
and a payout line with no order key.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

#: (order key, charged amount, booked amount or None). Orders 1 to 12 are plain matches.
ORDERS = [(f"ORD-{n:02d}", f"{10 * n + 0.5:.2f}") for n in range(1, 20)]

#: What the planted cases are (key, category, kind).
PLANTED = {
    ("ORD-13", "missing_in_processor", "payment"),
    ("ORD-14", "amount_mismatch", "payment"),
    ("ORD-15", "duplicate_in_processor", "payment"),
    ("ORD-16", "missing_in_ledger", "payment"),
    ("ORD-19", "missing_in_ledger", "refund"),
}

STRIPE_HEADER = [
    "balance_transaction_id",
    "created_utc",
    "created",
    "available_on_utc",
    "available_on",
    "currency",
    "gross",
    "fee",
    "net",
    "reporting_category",
    "source_id",
    "description",
    "customer_facing_amount",
    "customer_facing_currency",
    "automatic_payout_id",
    "charge_id",
    "payment_intent_id",
    "payment_metadata[customer_ref]",
    "payment_metadata[order_id]",
]

ADYEN_HEADER = [
    "Company Account",
    "Merchant Account",
    "Psp Reference",
    "Merchant Reference",
    "Payment Method",
    "Creation Date",
    "TimeZone",
    "Type",
    "Modification Reference",
    "Gross Currency",
    "Gross Debit (GC)",
    "Gross Credit (GC)",
    "Exchange Rate",
    "Net Currency",
    "Net Debit (NC)",
    "Net Credit (NC)",
    "Commission (NC)",
    "Markup (NC)",
    "Scheme Fees (NC)",
    "Interchange (NC)",
    "Payment Method Variant",
    "Modification Merchant Reference",
    "Batch Number",
    "Reserved4",
    "Reserved5",
    "Reserved6",
    "Reserved7",
    "Reserved8",
    "Reserved9",
    "Reserved10",
]


#: The month's EUR payout: what its items add up to, net of fees (each charge's 0.45), refunds,
#: the chargeback and its fee, and the fee line; ORD-11's USD (Stripe's and Adyen's settlement
#: in USD; EUR in the balance history) is paid out apart, in ``po_0002``, which the month's file
#: does not hold.
PAID_OUT = "1578.04"


def _movements() -> list[tuple[str, str, str, int]]:
    """(order key or "", kind, amount unsigned, day of May) of the processor's month."""
    moves = []
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key == "ORD-13":
            continue  # booked, never charged
        charged = f"{float(amount) - 0.01:.2f}" if key == "ORD-14" else amount
        moves.append((key, "charge", charged, n))
        if key == "ORD-15":
            moves.append((key, "charge", charged, n))  # charged twice
    moves += [
        ("ORD-17", "refund", "10.00", 20),
        ("ORD-17", "refund", "20.00", 21),
        ("ORD-18", "chargeback", ORDERS[17][1], 22),
        ("", "dispute_fee", "15.00", 22),
        ("ORD-19", "refund", "5.00", 23),
        ("", "fee", "2.35", 28),
        ("", "payout", PAID_OUT, 30),
    ]
    return moves


def ledger_csv() -> str:
    """The books: a plain CSV with signed amounts and no status; credit notes negative."""
    rows = [("merchantReferenceId", "amount", "currency", "date")]
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key != "ORD-16":  # charged, never booked
            rows.append((key, amount, "EUR", f"2025-05-{n:02d}"))
    rows += [
        ("ORD-17", "-30.00", "EUR", "2025-05-21"),
        ("ORD-18", f"-{ORDERS[17][1]}", "EUR", "2025-05-22"),
    ]
    return _csv(rows)


#: ORD-11 is a EUR order settled in USD: its amount in the balance's currency, and the fee of a
#: charge (Stripe's and Adyen's costs), in the settlement currency.
SETTLED_IN_USD = ("ORD-11", "120.45")
CHARGE_FEE = "0.45"


def stripe_balance_csv() -> str:
    """Stripe's itemized balance change from activity report of the month: each charge with its
    fee; ORD-11 charged in EUR and settled in USD (``customer_facing_amount`` the EUR)."""
    rows: list[list[str]] = [STRIPE_HEADER]
    category = {"charge": "charge", "refund": "refund", "chargeback": "dispute", "dispute_fee": "fee"}
    category |= {"fee": "fee", "payout": "payout"}
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        signed = amount if kind == "charge" else f"-{amount}"
        when = f"2025-05-{day:02d} 10:{i:02d}:00"
        source = {"charge": "ch_", "refund": "re_", "chargeback": "du_", "payout": "po_"}.get(kind, "")
        usd = key == SETTLED_IN_USD[0]
        gross = SETTLED_IN_USD[1] if usd else signed
        fee = CHARGE_FEE if kind == "charge" else "0.00"
        row = {
            "balance_transaction_id": f"txn_{i:04d}",
            "created_utc": when,
            "created": when,
            "available_on_utc": f"2025-05-{min(day + 2, 31):02d} 00:00:00",
            "available_on": f"2025-05-{min(day + 2, 31):02d} 00:00:00",
            "currency": "usd" if usd else "eur",
            "gross": gross,
            "fee": fee,
            "net": f"{float(gross) - float(fee):.2f}",
            "reporting_category": category[kind],
            "source_id": "po_0001" if kind == "payout" else f"{source}{i:04d}" if source else "",
            "description": "Dispute fee" if kind == "dispute_fee" else "",
            "customer_facing_amount": amount if key else "",
            "customer_facing_currency": "eur" if key else "",
            # A payout is in no payout: its own id is its source.
            "automatic_payout_id": "" if kind == "payout" else "po_0002" if usd else "po_0001",
            "charge_id": f"ch_{i:04d}" if key else "",
            "payment_intent_id": f"pi_{i:04d}" if key else "",
            "payment_metadata[customer_ref]": f"CUS-{i % 7}" if key else "",
            "payment_metadata[order_id]": key,
        }
        rows.append([row[name] for name in STRIPE_HEADER])
    return _csv(rows)


def adyen_settlement_csv() -> str:
    """Adyen's settlement details report of the month (batch 7); times in CEST, one of them
    after midnight local time on June 1st, which is May 31st in UTC; each settled payment's
    costs (0.45 in all) in the net columns; ORD-11 charged in EUR and settled in USD."""
    rows: list[list[str]] = [ADYEN_HEADER]
    types = {"charge": "Settled", "refund": "Refunded", "chargeback": "Chargeback", "dispute_fee": "Fee"}
    types |= {"fee": "Fee", "payout": "MerchantPayout"}
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        when = f"2025-05-{day:02d} 12:{i:02d}:00" if key != "ORD-12" else "2025-06-01 01:30:00"
        gross = key != "" and kind != "dispute_fee"
        credit = kind == "charge"
        usd = key == SETTLED_IN_USD[0]
        settled = SETTLED_IN_USD[1] if usd else amount
        row = {
            "Company Account": "AcmeCompany",
            "Merchant Account": "AcmeEU",
            "Psp Reference": f"88{i:014d}" if key else "",
            "Merchant Reference": key,
            "Payment Method": "visa" if key else "",
            "Creation Date": when,
            "TimeZone": "CEST",
            "Type": types[kind],
            "Modification Reference": f"99{i:014d}" if gross else "Transaction Fees May 2025",
            "Gross Currency": "EUR",
            "Gross Debit (GC)": amount if gross and not credit else "",
            "Gross Credit (GC)": amount if gross and credit else "",
            "Exchange Rate": ("1.09" if usd else "1") if gross else "",
            "Net Currency": "USD" if usd else "EUR",
            "Net Debit (NC)": "" if credit else amount,
            "Net Credit (NC)": f"{float(settled) - 0.45:.2f}" if credit else "",
            "Commission (NC)": "0.30" if credit else "",
            "Markup (NC)": "",
            "Scheme Fees (NC)": "0.05" if credit else "",
            "Interchange (NC)": "0.10" if credit else "",
            "Payment Method Variant": "visaclassic" if key else "",
            "Modification Merchant Reference": "",
            "Batch Number": "7",
        }
        rows.append([row.get(name, "") for name in ADYEN_HEADER])
    return _csv(rows)


#: Adyen's payment accounting report's standard columns, in order (docs.adyen.com, Payment
#: accounting report and Interactive payment accounting report: "Standard columns").
ADYEN_ACCOUNTING_HEADER = [
    "Company Account",
    "Merchant Account",
    "Psp Reference",
    "Merchant Reference",
    "Payment Method",
    "Booking Date",
    "TimeZone",
    "Main Currency",
    "Main Amount",
    "Record Type",
    "Payment Currency",
    "Received (PC)",
    "Authorised (PC)",
    "Captured (PC)",
    "Settlement Currency",
    "Payable (SC)",
    "Commission (SC)",
    "Markup (SC)",
    "Scheme Fees (SC)",
    "Interchange (SC)",
    "Processing Fee Currency",
    "Processing Fee (FC)",
    "User Name",
    "Payment Method Variant",
    "Modification Merchant Reference",
]

#: The statuses each movement of the month passes through in the payment accounting report, the
#: last the one that moves money; the register (PC: payment currency) each writes its amount in.
#: A chargeback writes none: its amount is in Main Amount.
_LIFECYCLE = {
    "charge": (
        ("Received", "Received (PC)"),
        ("Authorised", "Authorised (PC)"),
        ("SentForSettle", "Captured (PC)"),
        ("Settled", "Captured (PC)"),
    ),
    "refund": (("SentForRefund", "Captured (PC)"), ("Refunded", "Captured (PC)")),
    "chargeback": (("Chargeback", ""),),
    "refused": (("Received", "Received (PC)"), ("Refused", "")),
}


def adyen_accounting_csv() -> str:
    """Adyen's payment accounting report of the month (times in CEST; ORD-12 settled after
    midnight local time on June 1st, May 31st in UTC): each payment with its lifecycle rows, the
    Settled row with its costs (0.45 in all) and its payable in the settlement currency (ORD-11's
    in USD); refunds and the chargeback on the payment's PSP reference; ORD-09's refused attempt.
    The register columns' signs are not on the pages documented: each amount is written as the
    money its row's record type moves (a refund's and a chargeback's are read as money out)."""
    rows: list[list[str]] = [ADYEN_ACCOUNTING_HEADER]
    psp: dict[str, str] = {}
    moves = [m for m in _movements() if m[1] in _LIFECYCLE]
    moves.append((ORDERS[8][0], "refused", ORDERS[8][1], 9))
    for i, (key, kind, amount, day) in enumerate(moves, start=1):
        # A refund's or chargeback's row names its payment's PSP reference (ORD-15's second
        # charge is a payment of its own).
        reference = psp[key] if kind in ("refund", "chargeback") else f"88{i:014d}"
        psp[key] = reference
        usd = key == SETTLED_IN_USD[0]
        lifecycle = _LIFECYCLE[kind]
        for step, (record, register) in enumerate(lifecycle):
            last = step == len(lifecycle) - 1
            money = last and kind != "refused"
            when = f"2025-05-{day:02d} {8 + step:02d}:{i:02d}:00"
            if key == "ORD-12" and last:
                when = "2025-06-01 01:30:00"
            row = {
                "Company Account": "AcmeCompany",
                "Merchant Account": "AcmeEU",
                "Psp Reference": reference,
                "Merchant Reference": key,
                "Payment Method": "visa",
                "Booking Date": when,
                "TimeZone": "CEST",
                "Main Currency": "EUR",
                "Main Amount": amount,
                "Record Type": record,
                "Payment Currency": "EUR",
                "Payment Method Variant": "visaclassic",
            }
            if register:
                row[register] = amount
            if money:
                settled = SETTLED_IN_USD[1] if usd else amount
                row["Settlement Currency"] = "USD" if usd else "EUR"
                row["Payable (SC)"] = f"{float(settled) - 0.45:.2f}" if kind == "charge" else f"-{amount}"
            if money and kind == "charge":
                row |= {"Commission (SC)": "0.30", "Scheme Fees (SC)": "0.05", "Interchange (SC)": "0.10"}
            rows.append([row.get(name, "") for name in ADYEN_ACCOUNTING_HEADER])
    return _csv(rows)


#: The columns of a booking batch, in order (DATEV-Format, Buchungsstapel).
DATEV_COLUMNS = [
    "Umsatz (ohne Soll/Haben-Kz)",
    "Soll/Haben-Kennzeichen",
    "WKZ Umsatz",
    "Kurs",
    "Basis-Umsatz",
    "WKZ Basis-Umsatz",
    "Konto",
    "Gegenkonto (ohne BU-Schlüssel)",
    "BU-Schlüssel",
    "Belegdatum",
    "Belegfeld 1",
    "Belegfeld 2",
    "Skonto",
    "Buchungstext",
    "Postensperre",
    "Diverse Adressnummer",
    "Geschäftspartnerbank",
    "Sachverhalt",
    "Zinssperre",
    "Beleglink",
    *(f"Beleginfo - {part} {n}" for n in range(1, 9) for part in ("Art", "Inhalt")),
    "KOST1 - Kostenstelle",
    "KOST2 - Kostenstelle",
    "KOST-Menge",
    "EU-Mitgliedstaat u. USt-IdNr.",
    "EU-Steuersatz",
    "Abw. Versteuerungsart",
    "Sachverhalt L+L",
    "Funktionsergänzung L+L",
    "BU 49 Hauptfunktionstyp",
    "BU 49 Hauptfunktionsnummer",
    "BU 49 Funktionsergänzung",
    *(f"Zusatzinformation - {part} {n}" for n in range(1, 21) for part in ("Art", "Inhalt")),
    "Stück",
    "Gewicht",
    "Zahlweise",
    "Forderungsart",
    "Veranlagungsjahr",
    "Zugeordnete Fälligkeit",
    "Skontotyp",
    "Auftragsnummer",
    "Buchungstyp",
    "USt-Schlüssel (Anzahlungen)",
    "EU-Mitgliedstaat (Anzahlungen)",
    "Sachverhalt L+L (Anzahlungen)",
    "EU-Steuersatz (Anzahlungen)",
    "Erlöskonto (Anzahlungen)",
    "Herkunft-Kz",
    "Leerfeld",
    "KOST-Datum",
    "SEPA-Mandatsreferenz",
    "Skontosperre",
    "Gesellschaftername",
    "Beteiligtennummer",
    "Identifikationsnummer",
    "Zeichnernummer",
    "Postensperre bis",
    "Bezeichnung SoBil-Sachverhalt",
    "Kennzeichen SoBil-Buchung",
    "Festschreibung",
    "Leistungsdatum",
    "Datum Zuord. Steuerperiode",
    "Fälligkeit",
    "Generalumkehr (GU)",
    "Steuersatz",
    "Land",
]

#: The first line: "EXTF", version 700, category 21 (Buchungsstapel), format version 9, created,
#: imported, origin, by, to, adviser, client, fiscal year start, account length, the period from
#: and to, a description, dictation, booking type 1, purpose 0, not fixed, the currency, then
#: reserved fields and the chart of accounts (SKR03).
DATEV_HEADER = (
    '"EXTF";700;21;"Buchungsstapel";9;20250602093000000;;"EN";"export";;1234567;10001;20250101;4;'
    '20250501;20250531;"Buchungsstapel Mai";;1;0;0;"EUR";;;;;"03";;;;'
)


def datev_extf() -> bytes:
    """The books of the month as DATEV's booking batch: invoices on the receivable (Konto 1400)
    against revenue (8400) as ``S``, credit notes as ``H``."""
    bookings = []
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key != "ORD-16":  # charged, never booked
            bookings.append((amount, "S", f"{n:02d}05", key, "Rechnung"))
    bookings += [
        ("30.00", "H", "2105", "ORD-17", "Gutschrift"),
        (ORDERS[17][1], "H", "2205", "ORD-18", "Rückbelastung"),
    ]
    lines = [DATEV_HEADER, ";".join(f'"{name}"' for name in DATEV_COLUMNS)]
    for amount, flag, day, key, text in bookings:
        row = {
            "Umsatz (ohne Soll/Haben-Kz)": amount.replace(".", ","),
            "Soll/Haben-Kennzeichen": f'"{flag}"',
            "WKZ Umsatz": '"EUR"',
            "Konto": "1400",
            "Gegenkonto (ohne BU-Schlüssel)": "8400",
            "Belegdatum": f'"{day}"',
            "Belegfeld 1": f'"{key}"',
            "Buchungstext": f'"{text} {key}"',
        }
        lines.append(";".join(row.get(name, '""') for name in DATEV_COLUMNS))
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


#: Stripe's Dashboard payments export (unified_payments.csv), its columns as the Dashboard writes
#: them (Stripe publishes no reference; the header of a donation importer of such files), with the
#: merchant's ``order_id (metadata)`` column after them.
UNIFIED_HEADER = [
    "id",
    "Description",
    "Seller Message",
    "Created (UTC)",
    "Amount",
    "Amount Refunded",
    "Currency",
    "Converted Amount",
    "Converted Amount Refunded",
    "Fee",
    "Tax",
    "Converted Currency",
    "Mode",
    "Status",
    "Statement Descriptor",
    "Customer ID",
    "Customer Description",
    "Customer Email",
    "Captured",
    "Card ID",
    "Card Last4",
    "Card Brand",
    "Card Funding",
    "Card Exp Month",
    "Card Exp Year",
    "Card Name",
    "Card Address Line1",
    "Card Address Line2",
    "Card Address City",
    "Card Address State",
    "Card Address Country",
    "Card Address Zip",
    "Card Issue Country",
    "Card Fingerprint",
    "Card CVC Status",
    "Card AVS Zip Status",
    "Card AVS Line1 Status",
    "Card Tokenization Method",
    "Disputed Amount",
    "Dispute Status",
    "Dispute Reason",
    "Dispute Date (UTC)",
    "Dispute Evidence Due (UTC)",
    "Invoice ID",
    "Payment Source Type",
    "Destination",
    "Transfer",
    "Interchange Costs",
    "Merchant Service Charge",
    "Transfer Group",
    "PaymentIntent ID",
    "order_id (metadata)",
]


def stripe_unified_csv() -> str:
    """Stripe's payments export of the month: a row per charge, the refunded and disputed amounts
    in their columns (ORD-17's two refunds as one 30.00, ORD-19's 5.00, ORD-18's dispute lost),
    a failed attempt that took no money, ORD-11 converted to USD; no fee or payout rows (the
    export lists charges only)."""
    refunded = {"ORD-17": "30.00", "ORD-19": "5.00"}
    rows: list[list[str]] = [UNIFIED_HEADER]
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        if kind != "charge":
            continue
        usd = key == SETTLED_IN_USD[0]
        disputed = key == "ORD-18"
        row = {
            "id": f"ch_{i:04d}",
            "Created (UTC)": f"2025-05-{day:02d} 10:{i:02d}:00",
            "Amount": amount,
            "Amount Refunded": refunded.get(key, "0.00"),
            "Currency": "eur",
            "Converted Amount": SETTLED_IN_USD[1] if usd else amount,
            "Converted Amount Refunded": refunded.get(key, "0.00"),
            "Fee": CHARGE_FEE,
            "Tax": "0.00",
            "Converted Currency": "usd" if usd else "eur",
            "Mode": "Live",
            "Status": "Refunded" if key in refunded else "Paid",
            "Captured": "true",
            "Card Brand": "Visa",
            "Disputed Amount": amount if disputed else "",
            "Dispute Status": "lost" if disputed else "",
            "Dispute Date (UTC)": "2025-05-22 09:00:00" if disputed else "",
            "Payment Source Type": "card",
            "PaymentIntent ID": f"pi_{i:04d}",
            "order_id (metadata)": key,
        }
        rows.append([row.get(name, "") for name in UNIFIED_HEADER])
    failed = {"id": "ch_0099", "Created (UTC)": "2025-05-09 11:00:00", "Amount": ORDERS[8][1]}
    failed |= {"Amount Refunded": "0.00", "Currency": "eur", "Fee": "0.00", "Status": "Failed"}
    failed |= {"Captured": "false", "order_id (metadata)": ORDERS[8][0]}
    rows.append([failed.get(name, "") for name in UNIFIED_HEADER])
    return _csv(rows)


#: Stripe's balance history as the Dashboard's Balance page exported it (no vendor reference; the
#: header parsers of such files agree on), with the merchant's metadata column.
HISTORY_HEADER = [
    "id",
    "Type",
    "Source",
    "Amount",
    "Fee",
    "Net",
    "Currency",
    "Created (UTC)",
    "Available On (UTC)",
    "Description",
    "Transfer",
    "order_id (metadata)",
]


def stripe_history_csv() -> str:
    """Stripe's balance history of the month: types of the BalanceTransaction object; the
    dispute's withdrawal an ``adjustment`` without the order's metadata (as this export writes
    it), the dispute fee a ``stripe_fee``."""
    rows: list[list[str]] = [HISTORY_HEADER]
    types = {"charge": "charge", "refund": "refund", "chargeback": "adjustment"}
    types |= {"dispute_fee": "stripe_fee", "fee": "stripe_fee", "payout": "payout"}
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        fee = CHARGE_FEE if kind == "charge" else "0.00"
        signed = amount if kind == "charge" else f"-{amount}"
        source = {"charge": "ch_", "refund": "re_", "chargeback": "du_", "payout": "po_"}.get(kind, "")
        description = "Chargeback withdrawal for ch_0018" if kind == "chargeback" else ""
        row = {
            "id": f"txn_{i:04d}",
            "Type": types[kind],
            "Source": "po_0001" if kind == "payout" else f"{source}{i:04d}" if source else "",
            "Amount": signed,
            "Fee": fee,
            "Net": f"{float(signed) - float(fee):.2f}",
            "Currency": "eur",
            "Created (UTC)": f"2025-05-{day:02d} 10:{i:02d}",
            "Available On (UTC)": f"2025-05-{min(day + 2, 31):02d} 00:00",
            "Description": description,
            "Transfer": "" if kind == "payout" else "po_0002" if key == SETTLED_IN_USD[0] else "po_0001",
            "order_id (metadata)": key if kind in ("charge", "refund") else "",
        }
        rows.append([row[name] for name in HISTORY_HEADER])
    return _csv(rows)


def quickbooks_csv() -> str:
    """The books as QuickBooks Online's Transaction Detail by Account report of the clearing
    account the processor's money is booked on: the company, report name and dates above the
    header, its empty first header cell, the account's heading and total rows; US dates; a
    customer's payment per order (its number the order key), refund receipts (one as
    ``$(180.50)``), the processor's fee as an expense and its payout as a transfer, amounts with
    thousands grouped."""
    width = 9
    rows: list[list[str]] = [
        ["Acme Shop LLC", *[""] * (width - 1)],
        ["Transaction Detail by Account", *[""] * (width - 1)],
        ["May 1-31, 2025", *[""] * (width - 1)],
        [""] * width,
        ["", "Date", "Transaction Type", "Num", "Name", "Memo/Description", "Split", "Amount", "Balance"],
        ["Stripe Clearing", *[""] * (width - 1)],
    ]
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key != "ORD-16":  # charged, never booked
            rows.append(
                ["", f"05/{n:02d}/2025", "Payment", key, "Customer", "", "Accounts Receivable", amount, ""]
            )
    rows.append(["", "05/21/2025", "Refund Receipt", "ORD-17", "Customer", "Refund", "Sales", "-30.00", ""])
    rows.append(
        ["", "05/22/2025", "Refund Receipt", "ORD-18", "Customer", "Chargeback", "Sales", "$(180.50)", ""]
    )
    rows.append(["", "05/28/2025", "Expense", "", "Stripe", "Fees", "Bank Charges", "-2.35", ""])
    rows.append(["", "05/30/2025", "Transfer", "", "", "Payout", "Checking", f"-{PAID_OUT}", ""])
    rows.append(["Total for Stripe Clearing", *[""] * 6, "$-41.89", ""])
    rows.append([""] * width)
    rows.append(["TOTAL", *[""] * 6, "$-41.89", ""])
    return _csv(rows)


def xero_csv() -> str:
    """The books as Xero's Account Transactions report of the clearing account: the report's
    name, the organisation and the period above the header (one cell each); the account's heading
    (its row as wide as the table), opening and closing balances and total; ``01 May 2025`` dates;
    unsigned Debit and Credit: a payment per order a debit, the refunds credits, the processor's
    fee spent money, its payout a transfer."""
    header = [
        "Date",
        "Source",
        "Description",
        "Reference",
        "Debit",
        "Credit",
        "Running Balance",
        "Gross",
        "GST",
    ]
    rows: list[list[str]] = [
        ["Account Transactions"],
        ["Acme Shop Ltd"],
        ["For the period 1 May 2025 to 31 May 2025"],
    ]
    rows += [
        [],
        header,
        ["Stripe Clearing", *[""] * 8],
        ["Opening Balance", "", "", "", "", "", "0.00", "", ""],
    ]
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key != "ORD-16":
            rows.append(
                [f"{n:02d} May 2025", "Receivable Payment", "Customer", key, amount, "", "", amount, "0.00"]
            )
    rows.append(["21 May 2025", "Receivable Payment", "Refund", "ORD-17", "", "30.00", "", "-30.00", "0.00"])
    rows.append(
        ["22 May 2025", "Receivable Payment", "Chargeback", "ORD-18", "", "180.50", "", "-180.50", "0.00"]
    )
    rows.append(["28 May 2025", "Spend Money", "Stripe fees", "", "", "2.35", "", "-2.35", "0.00"])
    rows.append(
        ["30 May 2025", "Bank Transfer", "Stripe payout", "", "", PAID_OUT, "", f"-{PAID_OUT}", "0.00"]
    )
    rows.append(["Total Stripe Clearing", "", "", "", "1,749.00", "1,790.89", "", "", ""])
    rows.append(["Closing Balance", "", "", "", "", "", "-41.89", "", ""])
    return _csv(rows)


#: An SAP-style customer line items list (FBL5N) saved as a semicolon CSV, with the mapping that
#: reads it.
SAP_MAP = "merchantReferenceId=Assignment,amount=Amount in DC,currency=Curr.,date=Doc. Date"


def sap_csv() -> str:
    """The books as an SAP line items list: ';', decimal comma, a credit with SAP's trailing
    minus (``30,00-``), dotted day-first dates."""
    rows = [["Assignment", "DocumentNo", "Doc. Date", "Amount in DC", "Curr.", "Text"]]
    for n, (key, amount) in enumerate(ORDERS, start=1):
        if key != "ORD-16":
            rows.append(
                [key, f"90000{n:03d}", f"{n:02d}.05.2025", amount.replace(".", ","), "EUR", "Invoice"]
            )
    rows.append(["ORD-17", "90000101", "21.05.2025", "30,00-", "EUR", "Credit memo"])
    rows.append(["ORD-18", "90000102", "22.05.2025", "180,50-", "EUR", "Chargeback"])
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="\n").writerows(rows)
    return out.getvalue()


def _csv(rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def write_month(folder: Path) -> dict[str, Path]:
    """The ledger and both exports of the month in ``folder``, by name."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "ledger": ("ledger.csv", ledger_csv()),
        "stripe": ("balance_change_from_activity.csv", stripe_balance_csv()),
        "adyen": ("settlement_detail_report_batch_7.csv", adyen_settlement_csv()),
        "adyen_accounting": (
            "payments_accounting_report_filtered_2025-05-01_2025-06-01.csv",
            adyen_accounting_csv(),
        ),
        "stripe_payments": ("unified_payments.csv", stripe_unified_csv()),
        "stripe_history": ("balance_history.csv", stripe_history_csv()),
        "quickbooks": ("Transaction Detail by Account.csv", quickbooks_csv()),
        "xero": ("Account_Transactions.csv", xero_csv()),
        "sap": ("FBL5N.csv", sap_csv()),
    }
    paths = {}
    for name, (file, text) in files.items():
        paths[name] = folder / file
        paths[name].write_text(text, encoding="utf-8")
    paths["datev"] = folder / "EXTF_Buchungsstapel_2025-05.csv"
    paths["datev"].write_bytes(datev_extf())
    return paths
