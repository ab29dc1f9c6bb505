"""Stripe's and Adyen's exports reconciled as downloaded (issue 37): recognised by their header,
read by their layout files (``toolkit/reconcile/exports/``), with no option; every planted case
found, no false exception, no rejected row for fee or payout lines, and counts that add up. On
each backend."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.reconcile.exports import DATEV_COLUMNS, DATEV_HEADER, PLANTED, write_month
from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import load_ledger, load_processor, reconcile, write_report
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.exports import layout_named, recognised
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


@pytest.mark.parametrize("export", ["stripe", "adyen"])
def test_an_export_as_downloaded_reconciles_with_no_option(
    tmp_path: Path, backend: Backend, export: str
) -> None:
    paths = write_month(tmp_path)
    processor = load_processor(paths[export])
    assert processor.layout is not None and processor.layout.name in (
        "stripe_balance_itemized",
        "adyen_settlement_details",
    )
    result = reconcile(load_ledger(paths["ledger"]), processor, backend=backend, as_of="2025-05-31")
    assert _found(result) == PLANTED
    ledger, pro = result.counts
    assert pro.rejected == 0 and pro.movements == 3  # the fee, the dispute fee and the payout
    assert pro.after_cutoff == 0  # ORD-12, at 01:30 CEST on June 1st, is May 31st in UTC
    assert ledger.adds_up and pro.adds_up
    totals = {(m.side, m.kind): str(m.amount) for m in result.movements}
    assert totals["processor", "refund"] == "-35.00"
    assert totals["processor", "chargeback"] == "-180.50"
    assert totals["processor", "fee"] == "-17.35"
    assert totals["processor", "payout"] == "-500.00"


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
    assert "26 rows = 18 matched + 5 in exceptions + 0 rejected + 3 fees, payouts and adjustments" in (
        capsys.readouterr().out
    )
    exceptions = pd.read_csv(out / "exceptions.csv", dtype=str, keep_default_na=False)
    found = set(
        zip(exceptions["merchantReferenceId"], exceptions["category"], exceptions["kind"], strict=True)
    )
    assert found == PLANTED
    summary = pd.read_csv(out / "summary.csv", dtype=str).set_index("category")
    assert summary.loc["processor_payout", "amount"] == "-500.00"


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
