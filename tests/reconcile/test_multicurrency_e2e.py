"""Payments charged in another currency than their price, end to end: created through the journal
against a real sandbox on 127.0.0.1, then reconciled against books kept in the pricing currency.

The books of a shop that prices in USD hold USD; the processor charged PHP or EUR (spec rule 2:
converted, or a fixed multi-currency price). The settlement export and the journal's payments
frame carry both (``pricingAmount``/``pricingCurrency`` beside ``amount``/``currency``), so the
books match without reference rates; before, every such payment was a ``currency_mismatch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from toolkit import Client, payments_frame, prices_frame
from toolkit.bulk import acreate_payments, acreate_products, run_sync
from toolkit.cli import main
from toolkit.client import AsyncClient
from toolkit.controls import SandboxControls
from toolkit.journal import Journal
from toolkit.reconcile import load_ledger, load_processor, reconcile
from toolkit.sandbox.embedded import RunningSandbox, start_server

RETURN_URL = "https://shop.example/return"
#: A product priced in USD with a fixed EUR price (spec rule 2: "the configured fixed
#: multi-currency price"), as the sample catalog's products are.
CATALOG = [
    {
        "merchantReferenceId": "mc-ebook",
        "name": "The Payments Cookbook",
        "priceList": [
            {
                "currency": "USD",
                "unitAmount": "9.99",
                "isDefaultPrice": True,
                "currencyOptions": {"EUR": "8.99"},
            }
        ],
    }
]
#: What each payment was priced at (the books' USD) and what the sandbox charged for it: PHP and
#: EUR at its rates (9.01 USD x 56, 20.00 USD x 0.92), EUR at the fixed price, USD as it is.
CHARGES = {
    "MC-GCASH": ("9.01", "USD", "504.56", "PHP"),
    "MC-CARD": ("20.00", "USD", "18.40", "EUR"),
    "MC-FIXED": ("9.99", "USD", "8.99", "EUR"),
    "MC-USD": ("12.00", "USD", "12.00", "USD"),
}
LEDGER_HEADER = "merchantReferenceId,amount,currency,status\n"


@dataclass(frozen=True)
class Charged:
    """What the sandbox and the journal hold once the payments are made."""

    export_csv: bytes  # the settlement export as the processor's file
    journal: pd.DataFrame  # the journal's payments frame


def payment_rows(price: pd.Series) -> list[dict[str, str]]:
    """A GCASH wallet payment (USD converted to PHP; its test amount ...901 succeeds), card
    payments converted and at a fixed price (EUR), and one charged in its own currency."""
    common = {"returnUrl": RETURN_URL, "customerEmail": "ana@example.com"}
    card = {**common, "paymentMethodType": "CARD", "paymentInstrumentId": "pi_test_success"}
    product = {"productId": str(price["productId"]), "priceId": str(price["priceId"])}
    converted = {"currency": "USD", "paymentCurrency": "PHP"}
    return [
        {
            **common,
            **converted,
            "merchantReferenceId": "MC-GCASH",
            "paymentMethodType": "GCASH",
            "amount": "9.01",
        },
        {**card, **converted, "merchantReferenceId": "MC-CARD", "amount": "20.00", "paymentCurrency": "EUR"},
        {**card, **product, "merchantReferenceId": "MC-FIXED", "paymentCurrency": "EUR"},
        {**card, "merchantReferenceId": "MC-USD", "amount": "12.00", "currency": "USD"},
    ]


@pytest.fixture(scope="module")
def charged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Charged]:
    """The payments made once for the module, on a sandbox of their own (its export holds them only)."""
    folder = tmp_path_factory.mktemp("multicurrency")
    server = start_server(db_path=folder / "sandbox.sqlite")
    try:
        with Journal(folder / "journal.sqlite", environment="multi-currency e2e") as journal:
            run_sync(lambda: _create(server, journal))
            frame = payments_frame(journal)
        with Client(base_url=server.base_url, api_key=server.api_key) as client:
            export = SandboxControls(client).export_csv()
        yield Charged(export_csv=export, journal=frame)
    finally:
        server.stop()


async def _create(server: RunningSandbox, journal: Journal) -> None:
    async with AsyncClient(base_url=server.base_url, api_key=server.api_key) as client:
        products = await acreate_products(CATALOG, client=client, journal=journal, progress=False)
        assert products.ok, products.errors
        (price,) = (row for _, row in prices_frame(journal).iterrows())
        payments = await acreate_payments(payment_rows(price), client=client, journal=journal, progress=False)
        assert payments.ok, payments.errors


def ledger_file(tmp_path: Path, rows: dict[str, tuple[str, str]], name: str = "ledger.csv") -> Path:
    """A ledger of successful payments, ``{key: (amount, currency)}``."""
    path = tmp_path / name
    lines = [f"{key},{amount},{currency},success\n" for key, (amount, currency) in rows.items()]
    path.write_text(LEDGER_HEADER + "".join(lines), encoding="utf-8")
    return path


def priced_ledger(tmp_path: Path, keys: list[str] | None = None) -> Path:
    """The books as a USD shop keeps them: each payment at its USD price."""
    chosen = keys or list(CHARGES)
    return ledger_file(tmp_path, {key: CHARGES[key][:2] for key in chosen})


def export_file(tmp_path: Path, charged: Charged) -> Path:
    path = tmp_path / "export.csv"
    path.write_bytes(charged.export_csv)
    return path


def test_the_export_has_the_price_and_the_charge_of_every_payment(tmp_path: Path, charged: Charged) -> None:
    export = pd.read_csv(export_file(tmp_path, charged), dtype=str, keep_default_na=False)
    shown = export.set_index("merchantReferenceId")
    assert {
        key: (row["pricingAmount"], row["pricingCurrency"], row["amount"], row["currency"], row["status"])
        for key, row in shown.iterrows()
    } == {key: (*charge, "success") for key, charge in CHARGES.items()}


def assert_matched_with_both_amounts(matched: pd.DataFrame, keys: list[str]) -> None:
    """Every payment matched on its USD price, the charge beside it (a payment charged in its
    own currency has no price apart from its charge: ``<NA>``)."""
    columns = ["charged_amountMinor", "charged_currency", "pricing_amountMinor", "pricing_currency"]
    found = {
        str(row["merchantReferenceId"]): (
            int(row["amountMinor"]),
            str(row["currency"]),
            *(str(row[column]) for column in columns),
        )
        for _, row in matched.iterrows()
    }
    expected = {}
    for key in keys:
        price, currency, charge, charged_currency = CHARGES[key]
        minor, charged_minor = int(Decimal(price) * 100), int(Decimal(charge) * 100)
        pricing = ("<NA>", "<NA>") if charged_currency == currency else (str(minor), currency)
        expected[key] = (minor, currency, str(charged_minor), charged_currency, *pricing)
    assert found == expected


def test_books_in_the_pricing_currency_match_the_settlement_export(tmp_path: Path, charged: Charged) -> None:
    result = reconcile(load_ledger(priced_ledger(tmp_path)), load_processor(export_file(tmp_path, charged)))
    assert result.exceptions.empty, result.exceptions[["merchantReferenceId", "category", "detail"]]
    assert result.exception_count == 0 and result.matched_count == len(CHARGES)
    assert_matched_with_both_amounts(result.matched, list(CHARGES))
    # Nothing is owed in any currency: the charges count in the currency of their price.
    assert set(result.net_by_currency().values()) == {Decimal(0)}


def test_books_in_the_pricing_currency_match_the_journal(tmp_path: Path, charged: Charged) -> None:
    """The journal's payments frame as the processor side (the live service's default). The
    price of a payment made by ``priceId`` (no amount asked) is the journal's own product's."""
    assert charged.journal.loc["MC-FIXED", "pricingAmount"] == Decimal("9.99")
    assert charged.journal.loc["MC-FIXED", "pricingCurrency"] == "USD"
    result = reconcile(load_ledger(priced_ledger(tmp_path)), load_processor(charged.journal))
    assert result.exceptions.empty, result.exceptions[["merchantReferenceId", "category", "detail"]]
    assert_matched_with_both_amounts(result.matched, list(CHARGES))


def test_books_in_the_charged_currency_match_too(tmp_path: Path, charged: Charged) -> None:
    """A shop that books what the customer paid (PHP, EUR) matches on the charge, as always."""
    ledger = ledger_file(tmp_path, {key: (charge[2], charge[3]) for key, charge in CHARGES.items()})
    result = reconcile(load_ledger(ledger), load_processor(export_file(tmp_path, charged)))
    assert result.exceptions.empty and result.matched_count == len(CHARGES)


def test_a_wrong_price_or_a_third_currency_is_an_exception(tmp_path: Path, charged: Charged) -> None:
    books = {key: CHARGES[key][:2] for key in CHARGES}
    books["MC-GCASH"] = ("9.02", "USD")  # one cent above the price
    books["MC-CARD"] = ("20.00", "GBP")  # neither the price's currency nor the charge's
    result = reconcile(
        load_ledger(ledger_file(tmp_path, books)), load_processor(export_file(tmp_path, charged))
    )
    found = result.exceptions.set_index("merchantReferenceId")
    assert found["category"].astype(str).to_dict() == {
        "MC-GCASH": "amount_mismatch",
        "MC-CARD": "currency_mismatch",
    }
    assert set(found["severity"]) == {"exception"} and result.exception_count == 2
    gcash = str(found.loc["MC-GCASH", "detail"])
    assert gcash.startswith("ledger 9.02 USD, processor priced 9.01 USD (charged 504.56 PHP)"), gcash
    assert "(difference 0.01)" in gcash
    card = str(found.loc["MC-CARD", "detail"])
    assert card.startswith("ledger GBP, processor EUR"), card
    assert result.matched_count == 2  # MC-FIXED and MC-USD


def test_the_command_reports_no_exception(
    tmp_path: Path, charged: Charged, capsys: pytest.CaptureFixture[str]
) -> None:
    """``toolkit reconcile`` on the files as a user has them, with its cut-off (now)."""
    out = tmp_path / "out"
    code = main(
        [
            "reconcile",
            "--ledger",
            str(priced_ledger(tmp_path)),
            "--processor",
            str(export_file(tmp_path, charged)),
            "--output-dir",
            str(out),
            "--max-exceptions",
            "0",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    lines = (out / "exceptions.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and lines[0].startswith("merchantReferenceId,category,"), lines
    assert "severity" in lines[0]
    assert printed.out.strip().splitlines()[-1].startswith("ok: 0 exceptions")
