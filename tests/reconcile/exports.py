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
        ("", "payout", "500.00", 30),
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


def stripe_balance_csv() -> str:
    """Stripe's itemized balance change from activity report of the month."""
    rows: list[list[str]] = [STRIPE_HEADER]
    category = {"charge": "charge", "refund": "refund", "chargeback": "dispute", "dispute_fee": "fee"}
    category |= {"fee": "fee", "payout": "payout"}
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        signed = amount if kind == "charge" else f"-{amount}"
        when = f"2025-05-{day:02d} 10:{i:02d}:00"
        source = {"charge": "ch_", "refund": "re_", "chargeback": "du_", "payout": "po_"}.get(kind, "")
        row = {
            "balance_transaction_id": f"txn_{i:04d}",
            "created_utc": when,
            "created": when,
            "available_on_utc": f"2025-05-{min(day + 2, 31):02d} 00:00:00",
            "available_on": f"2025-05-{min(day + 2, 31):02d} 00:00:00",
            "currency": "eur",
            "gross": signed,
            "fee": "0.00",
            "net": signed,
            "reporting_category": category[kind],
            "source_id": f"{source}{i:04d}" if source else "",
            "description": "Dispute fee" if kind == "dispute_fee" else "",
            "customer_facing_amount": amount if key else "",
            "customer_facing_currency": "eur" if key else "",
            "automatic_payout_id": "po_0001",
            "charge_id": f"ch_{i:04d}" if key else "",
            "payment_intent_id": f"pi_{i:04d}" if key else "",
            "payment_metadata[customer_ref]": f"CUS-{i % 7}" if key else "",
            "payment_metadata[order_id]": key,
        }
        rows.append([row[name] for name in STRIPE_HEADER])
    return _csv(rows)


def adyen_settlement_csv() -> str:
    """Adyen's settlement details report of the month (batch 7); times in CEST, one of them
    after midnight local time on June 1st, which is May 31st in UTC."""
    rows: list[list[str]] = [ADYEN_HEADER]
    types = {"charge": "Settled", "refund": "Refunded", "chargeback": "Chargeback", "dispute_fee": "Fee"}
    types |= {"fee": "Fee", "payout": "MerchantPayout"}
    for i, (key, kind, amount, day) in enumerate(_movements(), start=1):
        when = f"2025-05-{day:02d} 12:{i:02d}:00" if key != "ORD-12" else "2025-06-01 01:30:00"
        gross = key != "" and kind != "dispute_fee"
        credit = kind == "charge"
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
            "Exchange Rate": "1" if gross else "",
            "Net Currency": "EUR",
            "Net Debit (NC)": "" if credit else amount,
            "Net Credit (NC)": amount if credit else "",
            "Commission (NC)": "",
            "Markup (NC)": "",
            "Scheme Fees (NC)": "",
            "Interchange (NC)": "",
            "Payment Method Variant": "visaclassic" if key else "",
            "Modification Merchant Reference": "",
            "Batch Number": "7",
        }
        rows.append([row.get(name, "") for name in ADYEN_HEADER])
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
    }
    paths = {}
    for name, (file, text) in files.items():
        paths[name] = folder / file
        paths[name].write_text(text, encoding="utf-8")
    paths["datev"] = folder / "EXTF_Buchungsstapel_2025-05.csv"
    paths["datev"].write_bytes(datev_extf())
    return paths
