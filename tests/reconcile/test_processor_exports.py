"""Stripe's and Adyen's exports reconciled as downloaded (issue 37): recognised by their header,
read by their layout files (``toolkit/reconcile/exports/``), with no option; every planted case
found, no false exception, no rejected row for fee or payout lines, and counts that add up. On
each backend."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.reconcile.exports import (
    CHARGE_FEE,
    DATEV_COLUMNS,
    DATEV_HEADER,
    PAID_OUT,
    PLANTED,
    SAP_MAP,
    write_month,
)
from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import load_ledger, load_processor, reconcile, write_report
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.exports import layout_named, recognised
from toolkit.reconcile.inputs import parse_mapping
from toolkit.reconcile.period import select_period
from toolkit.reconcile.result import ReconciliationResult

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves its gateway's sockets to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def _found(result: ReconciliationResult) -> set[tuple[str, str, str]]:
    frame = result.exceptions
    return set(zip(frame["merchantReferenceId"], frame["category"].astype(str), frame["kind"], strict=True))


#: Each download's layout, what it finds beyond the planted cases, and its processor totals per
#: (kind, currency): each charge's fee (0.45, Adyen's in three costs) totalled with the fee rows;
#: ORD-11 settled in USD.
DOWNLOADS = {
    "stripe": ("stripe_balance_itemized", set(), {("fee", "EUR"): "-25.45", ("fee", "USD"): "-0.45"}),
    "adyen": ("adyen_settlement_details", set(), {("fee", "EUR"): "-25.45", ("fee", "USD"): "-0.45"}),
    # Charges only: no fee or payout rows, each charge's fee beside it.
    "stripe_payments": ("stripe_unified_payments", set(), {("fee", "EUR"): "-8.10", ("fee", "USD"): "-0.45"}),
    # Each payment's lifecycle rows (Received, Authorised, SentForSettle) and a refused attempt
    # left out; its costs beside its Settled row. Transactional events only: no fee, dispute fee
    # or payout line.
    "adyen_accounting": (
        "adyen_payment_accounting",
        set(),
        {("fee", "EUR"): "-8.10", ("fee", "USD"): "-0.45"},
    ),
    # The dispute's withdrawal is an adjustment without the order's key in this export: the
    # books' chargeback is then one the processor does not show.
    "stripe_history": (
        "stripe_balance_history",
        {("ORD-18", "missing_in_processor", "returned")},
        {("fee", "EUR"): "-25.90", ("adjustment", "EUR"): "-180.50"},
    ),
}


#: The currency of the items each export pays out in a payout it does not hold (ORD-11's); the
#: exports that say nothing of payouts are not in it.
more_payout = {"stripe": "USD", "adyen": "USD", "stripe_history": "EUR"}


@pytest.mark.parametrize("export", list(DOWNLOADS))
def test_an_export_as_downloaded_reconciles_with_no_option(
    tmp_path: Path, backend: Backend, export: str
) -> None:
    paths = write_month(tmp_path)
    layout, more, totals = DOWNLOADS[export]
    processor = load_processor(paths[export])
    assert processor.layout is not None and processor.layout.name == layout
    result = reconcile(load_ledger(paths["ledger"]), processor, backend=backend, as_of="2025-05-31")
    assert _found(result) == PLANTED | more
    ledger, pro = result.counts
    assert pro.rejected == 0
    assert pro.after_cutoff == 0  # ORD-12, at 01:30 CEST on June 1st, is May 31st in UTC
    assert ledger.adds_up and pro.adds_up
    found = {(m.kind, m.currency): str(m.amount) for m in result.movements if m.side == "processor"}
    assert found["refund", "EUR"] == "-35.00"
    assert found.get(("chargeback", "EUR")) == (None if export == "stripe_history" else "-180.50")
    assert found.get(("payout", "EUR")) == (f"-{PAID_OUT}" if export in more_payout else None)
    assert {k: v for k, v in found.items() if k in totals} == totals
    # A payment shown is shown with the fee the processor took on it, and its net.
    charged = result.exceptions[
        result.exceptions["kind"].eq("payment") & result.exceptions["processor_amount"].notna()
    ]
    assert len(charged) == 3
    for amount, fee, net in zip(
        charged["processor_amount"], charged["processor_fee"], charged["processor_net"], strict=True
    ):
        assert (fee, net) == (Decimal(CHARGE_FEE), amount - Decimal(CHARGE_FEE))
    paid = {(p.currency, p.state) for p in result.payouts}
    assert paid == (
        {("EUR", "adds up"), (more_payout[export], "no payout row in the file")}
        if export in more_payout
        else set()
    )


def test_stripes_order_key_is_the_metadata_column_that_matches_the_books(tmp_path: Path) -> None:
    """Of two metadata columns, the first holds customer references: the order key is the one
    whose values are the ledger's keys."""
    paths = write_month(tmp_path)
    processor = load_processor(paths["stripe"])
    assert processor.key_choices == ("payment_metadata[customer_ref]", "payment_metadata[order_id]")
    chosen = processor.with_key_of(_duckdb(), load_ledger(paths["ledger"]))
    assert ("payment_metadata[order_id]", "merchantReferenceId") in chosen.renames


def test_a_layout_is_forced_by_name_or_given_as_a_file(tmp_path: Path) -> None:
    paths = write_month(tmp_path)
    own = tmp_path / "my_psp.toml"
    own.write_text(
        'title = "My PSP"\n[columns]\nmerchantReferenceId = "Merchant Reference"\ncurrency = "Gross Currency"\n'
        'type = "Type"\ncredit = "Gross Credit (GC)"\ndebit = "Gross Debit (GC)"\n'
        '[sign]\npositive = "credit"\n[fallback]\ncredit = "Net Credit (NC)"\ndebit = "Net Debit (NC)"\n'
        '[kinds]\nSettled = "payment"\nRefunded = "refund"\nChargeback = "chargeback"\nFee = "fee"\n'
        'MerchantPayout = "payout"\n',
        encoding="utf-8",
    )
    result = reconcile(load_ledger(paths["ledger"]), load_processor(paths["adyen"], export_format=own))
    assert _found(result) == PLANTED
    assert load_processor(paths["adyen"], export_format="adyen-settlement-details").layout == layout_named(
        "adyen_settlement_details"
    )
    with pytest.raises(InputError, match="no export layout 'paypal'"):
        load_processor(paths["adyen"], export_format="paypal")
    bad = tmp_path / "bad.toml"
    bad.write_text('[kinds]\nSettled = "sale"\n', encoding="utf-8")
    with pytest.raises(InputError, match="names sale; the kinds are payment"):
        load_processor(paths["adyen"], export_format=bad)


def test_only_a_header_with_every_recognised_column_is_an_export() -> None:
    assert recognised(["merchantReferenceId", "amount", "currency", "status"], "processor") is None
    assert recognised(["Psp Reference", "Merchant Reference", "Type"], "processor") is None


def test_the_command_reconciles_an_export_and_inspect_says_how_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_month(tmp_path)
    assert main(["reconcile", "inspect", str(paths["adyen"])]) == 0
    said = capsys.readouterr().out
    assert "export: Adyen settlement details report (adyen_settlement_details), recognised" in said
    assert "merchantReferenceId = Merchant Reference" in said
    assert "credit = Gross Credit (GC) (where empty: Net Credit (NC))" in said
    assert "Commission (NC): a fee of its own in Net Currency, where written and not zero" in said
    assert main(["reconcile", "inspect", str(paths["adyen_accounting"])]) == 0
    said = capsys.readouterr().out
    assert "export: Adyen payment accounting report (adyen_payment_accounting), recognised" in said
    assert "amount = Captured (PC) (where empty: Main Amount)" in said
    assert "rows whose type matches '^(Received|Authorised|" in said
    assert "Commission (SC): a fee of its own in Settlement Currency, where written and not zero" in said
    assert main(["reconcile", "inspect", str(paths["stripe_payments"])]) == 0
    said = capsys.readouterr().out
    assert "status words: paid = success, succeeded = success, refunded = success" in said
    assert "Amount Refunded: a refund of its own, where written and not zero" in said
    out = tmp_path / "out"
    code = main(
        [
            "reconcile",
            "--ledger",
            str(paths["ledger"]),
            "--processor",
            str(paths["stripe"]),
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0  # findings, and no threshold asked for
    assert "45 rows = 18 matched + 5 in exceptions + 0 rejected + 22 fees, payouts and adjustments" in (
        capsys.readouterr().out
    )
    exceptions = pd.read_csv(out / "exceptions.csv", dtype=str, keep_default_na=False)
    found = set(
        zip(exceptions["merchantReferenceId"], exceptions["category"], exceptions["kind"], strict=True)
    )
    assert found == PLANTED
    summary = pd.read_csv(out / "summary.csv", dtype=str).set_index("category")
    assert summary.loc["processor_payout", "amount"] == f"-{PAID_OUT}"


def _duckdb() -> Backend:
    from toolkit.reconcile.backends import connect

    return connect("duckdb")


def test_the_worked_example_of_the_layout_guide_reconciles(tmp_path: Path) -> None:
    """docs/reference/export-layouts.md's download and layout, as the page gives them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "export-layouts.md").read_text(
        encoding="utf-8"
    )
    blocks = page.split("```")
    download = next(b for b in blocks if b.startswith("text\nDate,")).removeprefix("text\n")
    layout = next(b for b in blocks if b.startswith("toml\n")).removeprefix("toml\n")
    (tmp_path / "my_psp_activity.csv").write_text(download, encoding="utf-8")
    (tmp_path / "my_psp.toml").write_text(layout, encoding="utf-8")
    books = tmp_path / "books.csv"
    books.write_text("merchantReferenceId,amount,currency\nORD-1001,49.90,EUR\nORD-1001,-49.90,EUR\n")
    out = tmp_path / "out"
    args = [
        "--processor",
        str(tmp_path / "my_psp_activity.csv"),
        "--processor-format",
        str(tmp_path / "my_psp.toml"),
    ]
    assert main(["reconcile", "--ledger", str(books), *args, "--output-dir", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv", dtype=str).set_index("category")
    assert summary.loc["matched", "count"] == "2"
    assert summary.loc["processor_fee", "amount"] == "-1.20"
    assert summary.loc["processor_payout", "amount"] == "-200.00"
    assert summary.loc["processor_refund", "amount"] == "-49.90"


def test_the_sample_downloads_are_the_documented_month(tmp_path: Path) -> None:
    """notebooks/data/exports/, which README runs, holds exactly the month these tests plant."""
    committed = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "exports"
    built = write_month(tmp_path)
    names = {
        "ledger": "ledger_2025-05.csv",
        "stripe": "stripe_balance_change_from_activity_2025-05.csv",
        "adyen": "adyen_settlement_detail_report_batch_7.csv",
        "stripe_payments": "stripe_unified_payments_2025-05.csv",
    }
    for name, file in names.items():
        assert (committed / file).read_text(encoding="utf-8") == built[name].read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("export", "reference"),
    [
        (
            "stripe",
            "balance_transaction_id txn_0015; source_id ch_0015; charge_id ch_0015; automatic_payout_id po_0001",
        ),
        ("adyen", "Psp Reference 8800000000000015; Modification Reference 9900000000000015; Batch Number 7"),
        ("adyen_accounting", "Psp Reference 8800000000000015"),
    ],
)
def test_an_exception_carries_the_processors_own_references(
    tmp_path: Path, export: str, reference: str
) -> None:
    """The row an analyst looks up at the processor: its references as the export names them
    (the second charge of ORD-15, the extra one, is shown)."""
    paths = write_month(tmp_path)
    result = reconcile(load_ledger(paths["ledger"]), load_processor(paths[export]))
    references = {
        (str(key), str(category)): reference
        for key, category, reference in zip(
            result.exceptions["merchantReferenceId"],
            result.exceptions["category"],
            result.exceptions["processor_reference"],
            strict=True,
        )
    }
    assert references["ORD-15", "duplicate_in_processor"] == reference
    assert str(references["ORD-16", "missing_in_ledger"]).startswith(reference.split(" ")[0])
    assert references["ORD-13", "missing_in_processor"] is None
    page = write_report(result, tmp_path / "report", environment="test")["report.html"].read_text(
        encoding="utf-8"
    )
    assert f"(at the processor: {reference})" in page


@pytest.mark.parametrize("export", ["stripe", "adyen"])
def test_a_datev_booking_batch_reconciles_with_no_option(
    tmp_path: Path, backend: Backend, export: str
) -> None:
    """DATEV's EXTF file as exported: its first line of metadata, ';', a decimal comma, latin-1,
    the sign in Soll/Haben-Kennzeichen, Belegdatum as day and month (its year from the first
    line), the key in Belegfeld 1; against each processor's download."""
    paths = write_month(tmp_path)
    ledger = load_ledger(paths["datev"])
    assert ledger.layout is not None and ledger.layout.name == "datev_extf_buchungsstapel"
    result = reconcile(ledger, load_processor(paths[export]), backend=backend, as_of="2025-05-31")
    assert _found(result) == PLANTED
    books = result.counts[0]
    assert (books.rows, books.rejected, books.after_cutoff) == (20, 0, 0) and books.adds_up


def test_a_booking_batch_across_the_new_year_dates_each_day_in_its_year(tmp_path: Path) -> None:
    """Belegdatum 3112 and 0201 of a batch from 2025-12-01 to 2026-01-31: December's year, then
    January's."""
    header = DATEV_HEADER.replace("20250501;20250531", "20251201;20260131")
    row = {name: '""' for name in DATEV_COLUMNS}
    rows = []
    for day, key in (("3112", "ORD-A"), ("0201", "ORD-B")):
        row |= {
            "Umsatz (ohne Soll/Haben-Kz)": "12,00",
            "Soll/Haben-Kennzeichen": '"S"',
            "WKZ Umsatz": '""',  # empty: the batch's currency
            "Belegdatum": f'"{day}"',
            "Belegfeld 1": f'"{key}"',
        }
        rows.append(";".join(row[name] for name in DATEV_COLUMNS))
    text = "\r\n".join([header, ";".join(f'"{c}"' for c in DATEV_COLUMNS), *rows]) + "\r\n"
    path = tmp_path / "EXTF_Buchungsstapel.csv"
    path.write_bytes(text.encode("latin-1"))
    frame = load_ledger(path).frame
    assert list(frame["date"]) == ["2025-12-31", "2026-01-02"]
    assert list(frame["currency"].astype(str)) == ["EUR", "EUR"]


def test_a_booking_batch_without_its_first_line_says_what_is_missing(tmp_path: Path) -> None:
    paths = write_month(tmp_path)
    cut = tmp_path / "cut.csv"
    cut.write_bytes(b"\r\n".join(paths["datev"].read_bytes().split(b"\r\n")[1:]))
    with pytest.raises(InputError, match="not a DATEV EXTF header with the batch's period"):
        load_ledger(cut)


def test_a_payments_export_reads_a_refund_and_a_dispute_from_their_columns(tmp_path: Path) -> None:
    """Stripe's payments export writes a charge's refund and dispute beside it: each is a
    movement of its own, shown at the charge's line; a dispute won took no money back."""
    paths = write_month(tmp_path)
    result = reconcile(load_ledger(paths["ledger"]), load_processor(paths["stripe_payments"]))
    refund = result.exceptions[result.exceptions["kind"] == "refund"].iloc[0]
    assert (refund["merchantReferenceId"], refund["source_row"]) == ("ORD-19", 20)  # ch_0019's line
    assert refund["processor_reference"] == "id ch_0019; PaymentIntent ID pi_0019"
    won = tmp_path / "won.csv"
    won.write_text(paths["stripe_payments"].read_text(encoding="utf-8").replace(",lost,", ",won,"), "utf-8")
    result = reconcile(load_ledger(paths["ledger"]), load_processor(won))
    assert _found(result) == PLANTED | {("ORD-18", "missing_in_processor", "returned")}


def test_an_sap_line_items_list_reconciles_with_a_mapping(tmp_path: Path, backend: Backend) -> None:
    """';', a decimal comma, SAP's trailing minus on credits, dotted day-first dates."""
    paths = write_month(tmp_path)
    ledger = load_ledger(paths["sap"], mapping=parse_mapping(SAP_MAP, "--ledger-map"))
    result = reconcile(ledger, load_processor(paths["adyen"]), backend=backend, as_of="2025-05-31")
    assert _found(result) == PLANTED
    assert result.counts[0].rejected == 0 and result.counts[0].adds_up


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[[split]]\nkind = "gift"\namount = "X"\n', "a \\[\\[split\\]\\] has kind"),
        ('[statuses]\npaid = "ok"\n', "\\[statuses\\] names ok"),
        ('[skip]\ndate = "("\n', "\\[skip\\] date: not a regular expression"),
        ('[skip]\nDate = "^$"\n', "\\[skip\\] maps a column of"),
    ],
)
def test_a_faulty_layout_says_which_key_is_wrong(tmp_path: Path, text: str, error: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=error):
        layout_named(bad)


def test_an_amount_with_a_currency_sign_is_read(tmp_path: Path) -> None:
    """Bookkeeping exports write ``$(180.50)``, ``-$30.00``, ``$1,234.50`` and ``12,50 €``."""
    books = tmp_path / "books.csv"
    books.write_text(
        'merchantReferenceId,amount,currency\nA,$(180.50),USD\nB,-$30.00,USD\nC,"$1,234.50",USD\nD,12.50 €,EUR\n',
        encoding="utf-8",
    )
    pro = tmp_path / "pro.csv"
    pro.write_text(
        "merchantReferenceId,amount,currency,status\nA,-180.50,USD,success\nB,-30.00,USD,success\n"
        "C,1234.50,USD,success\nD,12.50,EUR,success\n",
        encoding="utf-8",
    )
    result = reconcile(load_ledger(books), load_processor(pro))
    assert result.counts[0].matched == 4 and result.exceptions.empty


@pytest.mark.parametrize(
    ("export", "batch", "later"),
    [
        ("stripe", "po_0001", ("po_0002", "USD", "120.00")),
        ("adyen", "7", ("7", "USD", "120.00")),
        ("stripe_history", "po_0001", ("po_0002", "EUR", "110.05")),
    ],
)
def test_each_payout_adds_up_to_its_items(
    tmp_path: Path, export: str, batch: str, later: tuple[str, str, str]
) -> None:
    """The month's EUR payout is its items' net (fees, refunds, the chargeback taken off); ORD-11's
    is paid out in a payout the file does not hold; a payout changed by 0.04 does not add up."""
    paths = write_month(tmp_path)
    result = reconcile(load_ledger(paths["ledger"]), load_processor(paths[export]))
    payouts = {(p.payout, p.currency): (str(p.items_net), p.paid_out, p.state) for p in result.payouts}
    assert payouts == {
        (batch, "EUR"): (PAID_OUT, Decimal(PAID_OUT), "adds up"),
        later[:2]: (later[2], None, "no payout row in the file"),
    }
    changed = tmp_path / "changed.csv"
    changed.write_text(paths[export].read_text(encoding="utf-8").replace(PAID_OUT, "1578.00"), "utf-8")
    result = reconcile(load_ledger(paths["ledger"]), load_processor(changed))
    off = next(p for p in result.payouts if p.currency == "EUR")
    assert (off.state, off.difference) == ("does not add up", Decimal("0.04"))


def test_the_report_shows_each_payout(tmp_path: Path) -> None:
    """payouts.csv, report.html's Payouts and the workbook's summary sheet; none for an export that
    names no payout (and a payouts.csv of an earlier report in the folder is removed)."""
    paths = write_month(tmp_path)
    result = reconcile(load_ledger(paths["ledger"]), load_processor(paths["adyen"]))
    written = write_report(result, tmp_path / "report", environment="test")
    payouts = pd.read_csv(written["payouts.csv"], dtype=str, keep_default_na=False)
    assert payouts.to_dict("records") == [
        {
            "payout": "7",
            "currency": "EUR",
            "items": "24",
            "items_net": PAID_OUT,
            "paid_out": PAID_OUT,
            "difference": "0.00",
            "state": "adds up",
        },
        {
            "payout": "7",
            "currency": "USD",
            "items": "1",
            "items_net": "120.00",
            "paid_out": "",
            "difference": "",
            "state": "no payout row in the file",
        },
    ]
    page = written["report.html"].read_text(encoding="utf-8")
    assert '<table id="payouts">' in page and "no payout row in the file" in page
    sheet = openpyxl.load_workbook(written["report.xlsx"], read_only=True)["Summary"]
    cells = [row for row in sheet.iter_rows(values_only=True) if row and row[0] == "7"]
    assert cells[0][:7] == ("7", "EUR", 24, 1578.04, 1578.04, 0, "adds up")
    plain = reconcile(load_ledger(paths["ledger"]), load_processor(paths["stripe_payments"]))
    again = write_report(plain, tmp_path / "report", environment="test")
    assert "payouts.csv" not in again and not (tmp_path / "report" / "payouts.csv").exists()


def _ragged(path: Path) -> Path:
    """The report with its own lines (a title, a heading: one cell written) cut after that cell,
    as some exports write them: shorter than the header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = [line.rstrip(",") if sum(1 for c in line.split(",") if c) <= 1 else line for line in lines]
    assert cut != lines
    ragged = path.with_name(f"ragged {path.name}")
    ragged.write_text("\n".join(cut) + "\n", encoding="utf-8")
    return ragged


@pytest.mark.parametrize("books", ["quickbooks", "xero", "quickbooks ragged"])
def test_a_bookkeeping_report_reconciles_with_its_currency(
    tmp_path: Path, backend: Backend, books: str
) -> None:
    """QuickBooks' Transaction Detail by Account and Xero's Account Transactions of the clearing
    account, as exported: title lines, headings (also cut short after their one cell), totals and
    balances left out, US and ``01 May 2025`` dates, ``$(180.50)``, Debit and Credit; the
    processor's fee and payout booked as such. Only the currency is given (the reports name
    none)."""
    paths = write_month(tmp_path)
    export, _, cut = books.partition(" ")
    ledger = load_ledger(_ragged(paths[export]) if cut else paths[export], currency="EUR")
    assert ledger.layout is not None and ledger.layout.name.startswith(export)
    result = reconcile(ledger, load_processor(paths["stripe"]), backend=backend, as_of="2025-05-31")
    assert _found(result) == PLANTED
    counts = result.counts[0]
    assert (counts.rows, counts.rejected, counts.movements) == (22, 0, 2) and counts.adds_up
    booked = {(m.kind, m.currency): str(m.amount) for m in result.movements if m.side == "ledger"}
    assert booked == {
        ("payment", "EUR"): "1749.00",
        ("returned", "EUR"): "-210.50",
        ("fee", "EUR"): "-2.35",
        ("payout", "EUR"): f"-{PAID_OUT}",
    }


def test_a_bookkeeping_report_without_its_currency_says_which_option_gives_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_month(tmp_path)
    argv = ["reconcile", "--ledger", str(paths["xero"]), "--processor", str(paths["adyen"])]
    assert main([*argv, "--output-dir", str(tmp_path / "out"), "--as-of", "2025-05-31"]) == 2
    assert "--ledger-currency CODE (e.g. EUR) gives every row's" in capsys.readouterr().err
    out = tmp_path / "out2"
    assert main([*argv, "--ledger-currency", "EUR", "--output-dir", str(out), "--as-of", "2025-05-31"]) == 0
    found = pd.read_csv(out / "exceptions.csv", dtype=str, keep_default_na=False)
    assert set(zip(found["merchantReferenceId"], found["category"], found["kind"], strict=True)) == PLANTED


def test_a_layout_says_the_order_of_dates_its_rows_cannot_decide(tmp_path: Path) -> None:
    """A company's own profile of its books (a UK QuickBooks, day first): slashed dates from the
    1st to the 12th, which the rows alone cannot order, read as the layout says; without it, the
    run refuses with both readings."""
    books = tmp_path / "books.csv"
    books.write_text(
        "Ref,Date,Amount,Cur\nA,01/05/2025,10.00,GBP\nB,12/05/2025,20.00,GBP\n", encoding="utf-8"
    )
    layout = tmp_path / "uk_books.toml"
    layout.write_text(
        'side = "ledger"\n[columns]\nmerchantReferenceId = "Ref"\ndate = "Date"\namount = "Amount"\n'
        'currency = "Cur"\n[date]\nformat = "%d/%m/%Y"\n',
        encoding="utf-8",
    )
    may = select_period(load_ledger(books, export_format=layout), "date", "2025-05-01", "2025-05-31")
    assert (may.outside, len(may.frame)) == (0, 2)
    with pytest.raises(InputError, match="01/05/2025 is 1 May or January 5th"):
        _ = select_period(
            load_ledger(
                books,
                mapping={"merchantReferenceId": "Ref", "date": "Date", "amount": "Amount", "currency": "Cur"},
            ),
            "date",
            "2025-05-01",
            "2025-05-31",
        ).frame
    bad = tmp_path / "bad.toml"
    bad.write_text('side = "ledger"\n[date]\nformat = "%d/%q/%Y"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.toml: \[date\] format: "):
        layout_named(bad)
