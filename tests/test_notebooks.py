"""The notebooks, run by papermill as ``toolkit run`` runs them, and what they produce.

Every run is checked for the API key in every file it wrote (zip members of .xlsx included) and in
what the command printed: the canary key of a sandbox server started with a known key, a wrong
canary key that the server refuses, and the embedded sandbox's own key.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import zipfile
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest

from tests.leaks import KEY, encodings, leaks
from tests.reconcile.files import SANDBOX_EXPORT
from toolkit import Client, create_payments, create_products, load_subscriptions, prices_frame
from toolkit.cli import main
from toolkit.controls import SandboxControls
from toolkit.journal import Journal
from toolkit.notebooks import (
    NOTEBOOK_DIR,
    NOTEBOOKS,
    ParameterError,
    check_parameters,
    declared_outputs,
    parse_value,
    resolve_notebook,
    scrub_file,
    scrub_text,
    secrets_in_environment,
)
from toolkit.sandbox.embedded import RunningSandbox, start_server

CANARY = "canary-key-7f3a9c1e5b2d4f60a8e1"
WRONG_CANARY = "wrong-canary-2b8d6e0f4a1c9e37"
DATA = NOTEBOOK_DIR / "data"


# ---------------------------------------------------------------------------------------------
# Helpers


def _contents(path: Path) -> list[bytes]:
    """The bytes of a file, and of each member when it is a zip (an .xlsx workbook)."""
    data = [path.read_bytes()]
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            data += [archive.read(name) for name in archive.namelist()]
    return data


def assert_no_secret(directory: Path, *texts: str, secrets: list[str]) -> None:
    """No secret in any file under ``directory`` nor in the printed ``texts``."""
    assert secrets
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert files, f"{directory} holds no output"
    for secret in secrets:
        for file in files:
            for blob in _contents(file):
                assert secret.encode() not in blob, f"{secret[:6]}... found in {file}"
        for text in texts:
            assert secret not in text


def toolkit_run(
    capsys: pytest.CaptureFixture[str],
    output: Path,
    notebook: str,
    *parameters: tuple[str, str],
    secrets: list[str],
) -> tuple[int, str, str]:
    """``toolkit run NOTEBOOK -p ... --output-dir output``; scans everything it produced."""
    argv = ["run", notebook, "--output-dir", str(output)]
    for name, value in parameters:
        argv += ["-p", name, value]
    code = main(argv)
    out, err = capsys.readouterr()
    assert_no_secret(output, out, err, secrets=secrets)
    return code, out, err


def outputs(notebook: Path) -> list[dict[str, Any]]:
    book = nbformat.read(str(notebook), as_version=4)  # type: ignore[no-untyped-call]
    return [o for cell in book.cells for o in cell.get("outputs", [])]


def images(notebook: Path) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs(notebook))


def csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def canary_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    """A sandbox server on 127.0.0.1 whose key is the canary."""
    server = start_server(db_path=tmp_path_factory.mktemp("canary") / "sandbox.sqlite", api_key=CANARY)
    yield server
    server.stop()


@pytest.fixture
def service(canary_server: RunningSandbox, monkeypatch: pytest.MonkeyPatch) -> RunningSandbox:
    """The environment points at the canary server, as a scheduler's would; the sandbox is emptied."""
    monkeypatch.setenv("TOOLKIT_BASE_URL", canary_server.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", CANARY)
    with Client() as client:
        SandboxControls(client).reset()
    return canary_server


# ---------------------------------------------------------------------------------------------
# Fast: parameters and scrubbing, nothing executed


def test_unknown_parameter_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "catalog_setup", "-p", "catalog_pth", "x.yaml", "--output-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown parameter 'catalog_pth'; did you mean 'catalog_path'?" in err
    assert not (tmp_path / "r").exists()
    with pytest.raises(ParameterError, match="set by the runner"):
        check_parameters(resolve_notebook("test_payments"), {"output_dir": "x"})
    with pytest.raises(ParameterError, match="did you mean 'reconciliation_report'"):
        resolve_notebook("reconcilation_report")


def test_every_notebook_declares_its_parameters_and_has_no_outputs() -> None:
    expected = {
        "catalog_setup": {"catalog_path", "dry_run", "output_dir"},
        "test_payments": {"scenario_path", "concurrency", "output_dir"},
        "reconciliation_report": {
            "ledger_path",
            "processor_path",
            "subscriptions_ledger_path",
            "ledger_map",
            "processor_map",
            "ledger_format",
            "processor_format",
            "ledger_delimiter",
            "ledger_encoding",
            "ledger_sheet",
            "ledger_header_row",
            "ledger_decimal",
            "ledger_date_format",
            "ledger_timezone",
            "ledger_currency",
            "period_start",
            "period_end",
            "amount_tolerance",
            "grace",
            "fx_rates_path",
            "max_exceptions",
            "track",
            "as_of",
            "max_age",
            "output_dir",
        },
        "payout_reconciliation": {
            "processor_path",
            "bank_path",
            "ledger_path",
            "ledger_currency",
            "window",
            "holidays",
            "counterparty",
            "as_of",
            "max_exceptions",
            "backend",
            "output_dir",
        },
        "fault_drill": {"merchant_reference_id", "output_dir"},
    }
    assert set(expected) == set(NOTEBOOKS)
    import papermill

    for name, params in expected.items():
        path = resolve_notebook(name)
        assert set(papermill.inspect_notebook(str(path))) == params
        book = nbformat.read(str(path), as_version=4)  # type: ignore[no-untyped-call]
        assert book.cells[0].cell_type == "markdown"
        assert all(p in book.cells[0].source for p in params)
        for cell in book.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None
                assert "API_KEY" not in cell.source


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5", 5),
        ("-1", -1),
        ("0.5", 0.5),
        ("true", True),
        ("False", False),
        ("null", None),
        ("2024-05-01", "2024-05-01"),
        ("data/x.csv", "data/x.csv"),
        ("", ""),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_parameter_values_are_read_like_papermill(text: str, value: Any) -> None:
    assert parse_value(text) == value


def test_scrub_redacts_text_and_workbook_members(tmp_path: Path) -> None:
    text = tmp_path / "a.csv"
    text.write_text(f"x,{CANARY}\n")
    book = tmp_path / "r.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("xl/sheet1.xml", f"<c>{CANARY}</c>")
    assert scrub_file(text, [CANARY]) and scrub_file(book, [CANARY])
    assert not scrub_file(text, [CANARY])
    assert_no_secret(tmp_path, secrets=[CANARY])
    assert "[redacted]" in text.read_text()


def test_scrub_finds_the_key_in_every_encoding() -> None:
    """A key with characters JSON and HTML escape, as nbconvert, json, html, markupsafe, repr show it."""
    forms = encodings(KEY) | {
        "".join(f"\\u{ord(c):04x}" for c in KEY),  # JSON with every character escaped
        "".join({'"': "&#34;", "&": "&#X26;", "<": "&LT;", "'": "&apos;"}.get(c, c) for c in KEY),
        urllib.parse.quote(KEY, safe=""),
    }
    for form in forms:
        assert scrub_text(f"<p>{form}</p>", [KEY]) == "<p>[redacted]</p>", form


@pytest.mark.parametrize(
    "value",
    [KEY, "\\" + KEY, KEY + "\\", f'"{KEY}"', f"'\\{KEY}\\'", f"{KEY}{KEY}"],
    ids=["alone", "after-backslash", "before-backslash", "quoted", "between-backslashes", "twice"],
)
def test_scrubbed_json_stays_valid_json(value: str) -> None:
    """A redaction never cuts a backslash escape in two, even with backslashes around the key."""
    document = json.dumps({"a": value, "b": [json.dumps(value)], value: html.escape(value)})
    scrubbed = scrub_text(document, [KEY])
    assert "[redacted]" in json.loads(scrubbed)["a"]
    assert not [form for form in encodings(KEY) if form in scrubbed]


def test_scrub_file_never_follows_a_symlink_and_keeps_the_mode(tmp_path: Path) -> None:
    outside = tmp_path / "toolkit.env"
    outside.write_text(f"TOOLKIT_API_KEY={KEY}\n")
    link = tmp_path / "out" / "linked.txt"
    link.parent.mkdir()
    link.symlink_to(outside)
    assert not scrub_file(link, [KEY])
    assert link.is_symlink() and outside.read_text() == f"TOOLKIT_API_KEY={KEY}\n"

    private = tmp_path / "out" / "notes.txt"
    private.write_text(json.dumps(KEY))
    private.chmod(0o640)
    binary = tmp_path / "out" / "blob.bin"
    binary.write_bytes(b"\x00\xff" + KEY.encode() + b"\x00")
    book = tmp_path / "out" / "r.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("xl/sharedStrings.xml", f"<t>{html.escape(KEY, quote=False)}</t>")
    assert scrub_file(private, [KEY]) and scrub_file(binary, [KEY]) and scrub_file(book, [KEY])
    assert json.loads(private.read_text()) == "[redacted]"
    assert private.stat().st_mode & 0o777 == 0o640
    assert binary.read_bytes() == b"\x00\xff" + b"*" * len(KEY) + b"\x00"
    assert not leaks(tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# Slow: notebooks executed by papermill


@pytest.mark.slow
def test_demo_runs_the_whole_chain_on_the_embedded_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolkit.demo import main as demo

    home = tmp_path / "home"
    assert demo(["--reports", str(tmp_path / "reports"), "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    secrets = secrets_in_environment({"TOOLKIT_HOME": str(home)})
    assert_no_secret(tmp_path / "reports", out, err, secrets=secrets)
    runs = {
        p.parent.parent.name: p.parent
        for p in (tmp_path / "reports").glob("*/*/*.html")
        if p.stem == p.parent.parent.name
    }
    assert set(runs) == {"catalog_setup", "test_payments", "reconciliation_report", "payout_reconciliation"}
    assert len(csv(runs["catalog_setup"] / "products.csv")) == 4
    assert len(csv(runs["catalog_setup"] / "prices.csv")) == 6
    outcomes = csv(runs["test_payments"] / "outcomes.csv")
    assert len(outcomes) == 22 and set(outcomes["ok"]) == {"True"}
    assert set(outcomes["actual"]) == {"success", "pending", "failure", "next_action"}
    assert len(set(outcomes["method"])) == 11
    assert images(runs["test_payments"] / "test_payments.ipynb") >= 10  # 9 wallet QR codes + chart
    # One planted case of each exception, and the rows for information: SCN-002 (booked at its USD
    # price, charged in EUR) is matched through its price, so it is in neither.
    exceptions = csv(runs["reconciliation_report"] / "exceptions.csv")
    found = zip(
        exceptions["merchantReferenceId"], exceptions["category"], exceptions["severity"], strict=True
    )
    assert {key: (category, severity) for key, category, severity in found} == {
        "MAN-0042": ("missing_in_processor", "exception"),
        "SCN-008": ("missing_in_ledger", "exception"),
        "SCN-012": ("amount_mismatch", "exception"),
        "SCN-013": ("currency_mismatch", "exception"),
        "SCN-014": ("status_mismatch", "exception"),
        "SCN-016": ("duplicate_in_ledger", "exception"),
        "MAN-0043": ("rejected_row", "exception"),
        "SCN-003": ("in_transit", "info"),  # pending at the processor, created just now
        "SCN-019": ("in_transit", "info"),  # waiting for the customer, not booked yet
        "SCN-020": ("within_tolerance", "info"),  # 0.01 IDR, within amount_tolerance 1
    }
    for name in ("report.html", "report.xlsx", "summary.csv"):
        assert (runs["reconciliation_report"] / name).is_file()
    page = (runs["reconciliation_report"] / "report.html").read_text()
    assert "embedded sandbox" in page
    assert 'id="in_transit-heading"' in page and 'id="within_tolerance-heading"' in page
    assert "7 exceptions to review" in page and "2 payments in transit and 1 matched within tolerance" in page
    assert "reconciliation_report: ok: 7 exceptions (1 rejected row(s)), no threshold set; report: " in out
    assert "catalog_setup: ok: 4 product(s) and 6 price(s) as the catalog says; report: " in out
    assert "test_payments: ok: all 22 outcomes as expected; report: " in out
    payouts = assert_demo_payouts(runs["payout_reconciliation"], out)
    for name, folder in runs.items():  # the embedded sandbox is said once, in the banner, not on stderr
        shown = outputs(folder / f"{name}.ipynb")
        assert not [o for o in shown if o.get("name") == "stderr" and "TOOLKIT_BASE_URL" in o.get("text", "")]
        assert any("`TOOLKIT_BASE_URL` is not set" in str(o.get("data", {})) for o in shown)
        tables = " ".join(str(o.get("data", {}).get("text/html", "")) for o in shown)
        assert tables and "&lt;NA&gt;" not in tables and ">None<" not in tables and ">nan<" not in tables
        assert "Empty DataFrame" not in str(shown) and "{'new'" not in str(shown)

    # A day later the demo tells the same story: its sandbox clock stood still (a running one would
    # have expired the payments waiting for their customers, 15 minutes after they were made).
    with sqlite3.connect(home / "sandbox.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'clock_offset_ms'", (str(86_400_000),))
    assert demo(["--reports", str(tmp_path / "later"), "--home", str(home)]) == 0
    later = next((tmp_path / "later" / "reconciliation_report").glob("*/exceptions.csv"))
    assert csv(later).equals(exceptions)
    again = capsys.readouterr().out
    assert "reconciliation_report: ok: 7 exceptions" in again
    later_payouts = next((tmp_path / "later" / "payout_reconciliation").glob("*/payouts.csv")).parent
    assert assert_demo_payouts(later_payouts, again).equals(payouts)


def assert_demo_payouts(folder: Path, out: str) -> pd.DataFrame:
    """The demo's payout run: its five payouts of one day, the EUR one delayed (in transit), the
    BRL one booked 1.00 short, a USD deposit no payout explains; returns its exceptions."""
    payouts = csv(folder / "payouts.csv")
    assert sorted(payouts["currency"]) == ["BRL", "EUR", "INR", "KRW", "USD"]
    assert len(set(payouts["paid_on"])) == 1 and set(payouts["items_state"]) == {"adds up"}
    outcomes = dict(zip(payouts["currency"], payouts["outcome"], strict=True))
    assert outcomes == {
        "BRL": "payout_amount_mismatch",
        "EUR": "in_transit",
        "INR": "matched",
        "KRW": "matched",
        "USD": "matched",
    }
    brl = payouts[payouts["currency"] == "BRL"].iloc[0]
    assert Decimal(brl["paid_out"]) - Decimal(brl["bank_amount"]) == Decimal("1.00")
    exceptions = csv(folder / "exceptions.csv")
    assert list(exceptions["category"]) == [
        "payout_amount_mismatch",
        "bank_deposit_unexplained",
        "in_transit",
    ]
    assert list(exceptions["amount"])[1] == "25.00"
    assert len(list((folder / "statements").glob("camt053_*.xml"))) == 10  # 5 accounts, 2 days
    assert "Payout reconciliation" in (folder / "report.html").read_text()
    workbook_formats(folder / "report.xlsx", payouts)
    line = "payout_reconciliation: ok: 2 exceptions; 3 of 5 payout(s) in the bank, 1 in transit, no threshold set"
    assert line in out
    return exceptions


def workbook_formats(path: Path, payouts: pd.DataFrame) -> None:
    """The payout report's workbook: each payout's amount a number in its currency's format
    (KRW without decimals), equal to payouts.csv's."""
    import openpyxl

    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["Summary", "Payouts", "Exceptions"]
    rows = list(book["Payouts"].iter_rows())
    column = [cell.value for cell in rows[0]].index("paid_out")
    cells = {row[1].value: row[column] for row in rows[1:]}
    for currency, paid_out in zip(payouts["currency"], payouts["paid_out"], strict=True):
        cell = cells[currency]
        assert Decimal(str(cell.value)) == Decimal(paid_out) and cell.data_type == "n"
        decimals = "" if currency == "KRW" else ".00"
        assert cell.number_format == f'#,##0{decimals} "{currency}"'


@pytest.mark.slow
def test_catalog_then_payments_against_a_service(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = [CANARY]
    catalog = str(DATA / "catalog.csv")
    code, _, _ = toolkit_run(
        capsys,
        tmp_path / "dry",
        "catalog_setup",
        ("catalog_path", catalog),
        ("dry_run", "true"),
        secrets=secrets,
    )
    assert code == 0
    assert list(csv(tmp_path / "dry" / "plan.csv")["action"]) == ["new", "new"]
    assert len(csv(tmp_path / "dry" / "products.csv")) == 0

    code, _, _ = toolkit_run(
        capsys, tmp_path / "cat", "catalog_setup", ("catalog_path", catalog), secrets=secrets
    )
    assert code == 0
    products = csv(tmp_path / "cat" / "products.csv")
    assert list(products["merchantReferenceId"]) == ["sticker-pack", "newsletter-plus"]
    assert products["productId"].str.len().min() > 0
    assert len(csv(tmp_path / "cat" / "prices.csv")) == 3

    scenario = tmp_path / "scenario.csv"
    scenario.write_text(
        "merchantReferenceId,customer,method,paymentInstrumentId,price,amount,currency,paymentCurrency,expected\n"
        "T-1,ana@example.com,CARD,pi_test_success,sticker-pack/USD,,,,success\n"
        "T-2,chen@example.com,ALIPAY,,sticker-pack/USD,,,JPY,next_action\n"
        "T-3,maria@example.com,GCASH,,,560.00,PHP,,5\n"
        "T-4,bo@example.com,CARD,pi_test_failure,,12.00,USD,,success\n"
    )
    code, _, err = toolkit_run(
        capsys,
        tmp_path / "pay",
        "test_payments",
        ("scenario_path", str(scenario)),
        ("concurrency", "2"),
        secrets=secrets,
    )
    assert code == 1
    assert "1 of 4 outcomes differ from the scenario: T-4 expected success got failure" in err
    payments = csv(tmp_path / "pay" / "payments.csv").set_index("merchantReferenceId")
    assert payments.loc["T-2", "amount"] == "700" and payments.loc["T-2", "currency"] == "JPY"
    assert list(csv(tmp_path / "pay" / "outcomes.csv")["ok"]) == ["True", "True", "True", "False"]
    assert images(tmp_path / "pay" / "test_payments.ipynb") == 3  # two QR codes and the chart
    assert set(csv(tmp_path / "pay" / "next_actions.csv")["merchantReferenceId"]) == {"T-2", "T-3"}


@pytest.mark.slow
def test_reconciliation_with_subscriptions_period_and_threshold(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_products(DATA / "catalog.yaml", progress=False)
    with Journal.open() as journal:
        prices = prices_frame(journal)
    monthly = prices[(prices.index == "analytics-pro") & (prices["interval"] == "month")].iloc[0]
    created = create_payments(
        [
            {
                "merchantReferenceId": "R-1",
                "customerEmail": "a@example.com",
                "paymentMethodType": "CARD",
                "paymentInstrumentId": "pi_test_success",
                "amount": "10.00",
                "currency": "USD",
                "returnUrl": "https://merchant.example/r",
            },
            {
                "merchantReferenceId": "R-2",
                "customerEmail": "a@example.com",
                "paymentMethodType": "CARD",
                "paymentInstrumentId": "pi_test_success",
                "amount": "20.00",
                "currency": "EUR",
                "returnUrl": "https://merchant.example/r",
            },
            {
                "merchantReferenceId": "R-3",
                "customerEmail": "m@example.com",
                "paymentMethodType": "GCASH",
                "amount": "560.00",
                "currency": "PHP",
                "returnUrl": "https://merchant.example/r",
            },
        ],
        progress=False,
    )
    assert created.ok
    with Client() as client:
        subscription = SandboxControls(client).create_subscription(
            customerEmail="s@example.com",
            productId=monthly["productId"],
            priceId=monthly["priceId"],
            quantity=2,
            merchantReference="SUB-1",
            paymentInstrumentId="pi_test_success",
        )
    seen = load_subscriptions([str(subscription.subscriptionId)], progress=False).frame.iloc[0]
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    ledger = tmp_path / "ledger.csv"
    ledger.write_text(
        "merchantReferenceId,date,amount,currency,status\n"
        f"R-1,{today},10.00,USD,success\n"
        f"R-2,{today},20.01,EUR,success\n"  # 1 minor unit: within_tolerance (amount_tolerance 1)
        f"R-3,{today},561.00,PHP,next_action\n"  # amount_mismatch
        f"R-9,{today},5.00,USD,success\n"  # booked today, not at the processor yet: in_transit
        "OLD-1,2020-01-31,7.00,USD,success\n"  # outside the period: left out
    )
    subscriptions = tmp_path / "subscriptions.csv"
    subscriptions.write_text(
        "subscriptionId,merchantReferenceId,priceId,quantity,amount,currency,state\n"
        f"{subscription.subscriptionId},SUB-1,{monthly['priceId']},3,{seen['upcomingInvoiceAmount']},"
        f"{seen['currency']},active\n"
    )
    code, _, err = toolkit_run(
        capsys,
        tmp_path / "rec",
        "reconciliation_report",
        ("ledger_path", str(ledger)),
        ("subscriptions_ledger_path", str(subscriptions)),
        ("period_start", today),
        ("period_end", today),
        ("amount_tolerance", "1"),
        ("max_exceptions", "0"),
        secrets=[CANARY],
    )
    assert code == 1, err
    last = err.strip().splitlines()[-1]  # the one line a scheduler forwards
    assert last.startswith(  # the rows for information are not counted
        "reconciliation_report: findings: 2 exceptions, more than max_exceptions=0; report: "
    )
    exceptions = csv(tmp_path / "rec" / "exceptions.csv")
    found = zip(
        exceptions["merchantReferenceId"], exceptions["category"], exceptions["severity"], strict=True
    )
    assert sorted(found) == [
        ("R-2", "within_tolerance", "info"),
        ("R-3", "amount_mismatch", "exception"),
        ("R-9", "in_transit", "info"),
        ("SUB-1", "subscription_quantity_mismatch", "exception"),
    ]
    for name in ("report.html", "report.xlsx", "summary.csv"):
        assert (tmp_path / "rec" / name).is_file()
    text = "".join(str(o.get("text", "")) for o in outputs(tmp_path / "rec" / "reconciliation_report.ipynb"))
    assert "ledger: 1 row(s) outside" in text
    assert images(tmp_path / "rec" / "reconciliation_report.ipynb") == 2
    html = (tmp_path / "rec" / "reconciliation_report.html").read_text()
    assert "select_period(" not in html and service.base_url in html  # code hidden, environment shown


@pytest.mark.slow
def test_reconciliation_of_european_books_with_their_own_column_names(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The analyst's own export as European Excel writes it (a title, semicolons, cp1252, decimal
    commas, German column names) against a settlement file: the notebook's map and reading
    parameters, as ``toolkit reconcile`` takes them."""
    export = tmp_path / "export.csv"
    export.write_text(SANDBOX_EXPORT, encoding="utf-8")
    books = tmp_path / "buchungen.csv"
    books.write_bytes(
        (
            "Buchungen Mai 2026\r\n\r\n"
            "Referenz;Betrag;Währung;Status\r\n"
            "m1;12,30;USD;success\r\nm2;1.200;JPY;pending\r\nm3;1,250;KWD;next_action\r\n"
            "m4;1.234,56;EUR;success\r\n"
        ).encode("cp1252")
    )
    code, out, err = toolkit_run(
        capsys,
        tmp_path / "rec",
        "reconciliation_report",
        ("ledger_path", str(books)),
        ("processor_path", str(export)),
        ("ledger_map", "merchantReferenceId=Referenz,amount=Betrag,currency=Währung"),
        ("ledger_decimal", ","),
        ("ledger_header_row", "3"),
        secrets=[CANARY],
    )
    assert code == 0, err
    assert "reconciliation_report: ok: 1 exceptions, no threshold set" in out
    exceptions = csv(tmp_path / "rec" / "exceptions.csv")
    found = exceptions[["merchantReferenceId", "category", "ledger_amount", "source_row"]]
    assert found.values.tolist() == [["m4", "missing_in_processor", "1234.56", "7"]]  # its line
    # The analyst's own files were called sandbox test data, with the local path of one.
    page = (tmp_path / "rec" / "report.html").read_text(encoding="utf-8")
    assert "Data from: processor file export.csv" in page
    assert "sandbox" not in page.lower() and str(tmp_path) not in page
    notebook = "".join(str(o) for o in outputs(tmp_path / "rec" / "reconciliation_report.ipynb"))
    assert "test data only" not in notebook and "sandbox" not in notebook.lower()


@pytest.mark.slow
def test_reconciliation_shows_the_first_rows_of_a_category_and_how_to_load_more(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,060 payments missing at the processor: the notebook shows 50 of them, says how to load
    more, and the report files hold all 1,060; counts are grouped by thousands."""
    export = tmp_path / "export.csv"
    export.write_text(SANDBOX_EXPORT, encoding="utf-8")
    books = tmp_path / "books.csv"
    books.write_text(
        "merchantReferenceId,amount,currency,status\n"
        + "".join(f"gone-{i:04},1.00,USD,success\n" for i in range(1060))
    )
    code, out, err = toolkit_run(
        capsys,
        tmp_path / "rec",
        "reconciliation_report",
        ("ledger_path", str(books)),
        ("processor_path", str(export)),
        secrets=[CANARY],
    )
    assert code == 0, err
    assert "reconciliation_report: ok: 1,063 exceptions" in out  # and the export's 3 payments
    assert len(csv(tmp_path / "rec" / "exceptions.csv")) == 1063
    notebook = tmp_path / "rec" / "reconciliation_report.ipynb"
    text = "".join(str(o.get("text", "")) for o in outputs(notebook))
    assert (
        "the first 50 of 1,060; more: report.exceptions_page('missing_in_processor', 50, 50); "
        "exceptions.csv and report.xlsx hold every one"
    ) in text
    shown = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs(notebook))
    assert "gone-0049" in shown and "gone-0050" not in shown
    headings = [str(o.get("data", {}).get("text/markdown", "")) for o in outputs(notebook)]
    assert "### missing_in_processor (1,060)" in headings


@pytest.mark.slow
def test_reconciliation_tracked_over_two_days(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A track in the notebook: states and ages in the files and the notebook, an acknowledgement
    from Python, max_exceptions counting new and open ones, max_age failing the run."""
    from toolkit.reconcile import acknowledge

    ledger, processor = tmp_path / "ledger.csv", tmp_path / "processor.csv"
    ledger.write_text(
        "merchantReferenceId,amount,currency,status\nA-1,5.00,USD,success\nA-2,6.00,USD,success\n"
    )
    processor.write_text("merchantReferenceId,amount,currency,status\nA-3,7.00,USD,success\n")
    common = (("ledger_path", str(ledger)), ("processor_path", str(processor)), ("track", "nightly"))
    code, out, err = toolkit_run(
        capsys,
        tmp_path / "reports" / "d1",
        "reconciliation_report",
        *common,
        ("as_of", "2026-11-01"),
        secrets=[CANARY],
    )
    assert code == 0, err
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith(
            "reconciliation_report: ok: 3 exceptions (3 new, 0 open, 0 acknowledged; 0 resolved), track nightly run 1"
        )
    )
    first = csv(tmp_path / "reports" / "d1" / "exceptions.csv")
    assert set(first["state"]) == {"new"} and set(first["ageDays"]) == {"0"}
    acknowledge("nightly", first[first["merchantReferenceId"] == "A-1"], note="invoice sent late", by="ana")
    # A run whose report cannot be written (a folder where report.html goes) records nothing: the
    # next run is run 2, and its previous run is still run 1. It is refused before the kernel starts.
    broken = tmp_path / "reports" / "broken"
    (broken / "report.html").mkdir(parents=True)
    argv = ["run", "reconciliation_report", "--output-dir", str(broken), "-p", "as_of", "2026-11-03"]
    code = main([*argv, *(part for name, value in common for part in ("-p", name, value))])
    err = capsys.readouterr().err
    assert code == 2 and "report.html: it is a folder" in err, (code, err)
    assert [p.name for p in broken.iterdir()] == ["report.html"]
    code, out, err = toolkit_run(
        capsys,
        tmp_path / "reports" / "d2",
        "reconciliation_report",
        *common,
        ("as_of", "2026-11-04"),
        ("max_exceptions", "2"),
        ("max_age", "2"),
        secrets=[CANARY],
    )
    assert code == 1, err
    assert (
        "2 unacknowledged exception(s) older than max-age 2 days (oldest 3)" in err.strip().splitlines()[-1]
    )
    second = csv(tmp_path / "reports" / "d2" / "exceptions.csv").set_index("merchantReferenceId")
    assert second["state"].to_dict() == {"A-1": "acknowledged", "A-2": "open", "A-3": "open"}
    assert set(second["ageDays"]) == {"3"} and set(second["firstSeen"]) == {"2026-11-01T23:59:59Z"}
    for name in ("states.csv", "ages.csv", "resolved.csv", "report.xlsx"):
        assert (tmp_path / "reports" / "d2" / name).is_file()
    text = "".join(
        str(o.get("text", "")) for o in outputs(tmp_path / "reports" / "d2" / "reconciliation_report.ipynb")
    )
    assert (
        "track nightly: run 2 as of 2026-11-04T23:59:59Z (previous run 1): 0 new, 2 open, 1 acknowledged"
        in text
    )
    html = (tmp_path / "reports" / "d2" / "reconciliation_report.html").read_text()
    assert "acknowledged by ana" in html and "ageDays" in html
    manifest = json.loads((tmp_path / "reports" / "d2" / "run.json").read_text())
    assert manifest["kind"] == "notebook" and manifest["name"] == "reconciliation_report"
    assert (manifest["exitCode"], manifest["status"], manifest["track"]) == (1, "findings", "nightly")
    assert "older than max-age 2 days" in manifest["reason"]
    assert manifest["parameters"]["as_of"] == "2026-11-04" and len(manifest["inputs"]) == 2
    assert manifest["counts"] == {"exceptions": 3, "new": 0, "open": 2, "acknowledged": 1, "resolved": 0}
    index = (tmp_path / "reports" / "index.html").read_text()
    assert index.index('href="d2/reconciliation_report.html"') < index.index(
        'href="d1/reconciliation_report.html"'
    )
    assert "<h2>Track nightly</h2>" in index


@pytest.mark.slow
def test_a_refused_key_is_exit_2_and_appears_nowhere(
    service: RunningSandbox,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLKIT_API_KEY", WRONG_CANARY)
    code, _, err = toolkit_run(
        capsys,
        tmp_path / "rec",
        "reconciliation_report",
        ("ledger_path", str(DATA / "ledger.csv")),
        secrets=[WRONG_CANARY, CANARY],
    )
    assert code == 2
    assert "cell [" in err and "AuthenticationError" in err
    assert (tmp_path / "rec" / "reconciliation_report.html").is_file()


@pytest.mark.slow
def test_catalog_setup_with_a_refused_key_is_infrastructure_not_a_finding(
    service: RunningSandbox,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, a refused key exited 1 ("4 product(s) not created as the catalog says"): finance's code."""
    monkeypatch.setenv("TOOLKIT_API_KEY", WRONG_CANARY)
    code, _, err = toolkit_run(capsys, tmp_path / "cat", "catalog_setup", secrets=[WRONG_CANARY, CANARY])
    assert code == 2
    assert "authentication failed" in err and "check TOOLKIT_API_KEY" in err
    assert "not created as the catalog says" not in err


@pytest.mark.slow
def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: no pgrep on a bare machine)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def start_a_slow_batch(tmp_path: Path, controls: SandboxControls, prefix: str) -> subprocess.Popen[str]:
    """``toolkit run test_payments`` over 8 payments each delayed 1.5 s, once the first has left."""
    scenario = tmp_path / "scenario.csv"
    scenario.write_text(
        "merchantReferenceId,customer,method,paymentInstrumentId,amount,currency,expected\n"
        + "".join(f"{prefix}-{i},ana@example.com,CARD,pi_test_success,1.00,USD,success\n" for i in range(8))
    )
    controls.add_fault(route="POST /payment", mode="delay", delayMs=1500, count=8)
    parameters = ["-p", "scenario_path", str(scenario), "-p", "concurrency", "1"]
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolkit.cli",
            "run",
            "test_payments",
            *parameters,
            "--output-dir",
            str(tmp_path / "out"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while payments_of(controls, prefix) < 1:  # the batch has begun: its first payment is made
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        time.sleep(0.1)
    return run


def payments_of(controls: SandboxControls, prefix: str) -> int:
    """Requests of the batch the sandbox has carried out (its log names each one's key)."""
    keys = controls.requests(limit=100)["merchantReferenceId"].dropna().astype(str)
    return int(keys.str.startswith(f"{prefix}-").sum())


@pytest.mark.slow
def test_a_kernel_that_dies_ends_the_run_exit_2(service: RunningSandbox, tmp_path: Path) -> None:
    """With the blocking kernel manager the reply was awaited in one blocking call, the liveness
    check never ran, and a killed kernel hung ``toolkit run`` past its cell timeout (15 min)."""
    with Client() as client:
        run = start_a_slow_batch(tmp_path, SandboxControls(client), "DEAD")
        for kernel in children(run.pid):
            os.kill(kernel, signal.SIGKILL)
        out, err = run.communicate(timeout=120)
    assert run.returncode == 2, (out, err)
    assert err.strip().splitlines()[-1].startswith("test_payments: error: DeadKernelError: Kernel died"), err


@pytest.mark.slow
def test_an_interrupted_run_stops_its_batch_and_says_so(service: RunningSandbox, tmp_path: Path) -> None:
    """Ctrl-C reached ``toolkit run``, not its kernel (a session of its own): the batch went on
    charging for seconds, then the run died with a traceback and no result line."""
    with Client() as client:
        controls = SandboxControls(client)
        run = start_a_slow_batch(tmp_path, controls, "INT")
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
        time.sleep(4)  # a call the kernel would still start shows by now
        sent = payments_of(controls, "INT")
    assert run.returncode == 2, (out, err)
    assert err.strip().splitlines()[-1].startswith("test_payments: error: interrupted in cell"), err
    assert "Traceback" not in err
    assert sent <= 3, sent  # the first, the one in flight, and at most one the interrupt crossed
    assert (tmp_path / "out" / "test_payments.ipynb").is_file()


def test_fault_drill_records_unknown_sends_nothing_twice_and_settles(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = toolkit_run(
        capsys, tmp_path / "drill", "fault_drill", ("merchant_reference_id", "DRILL-TEST-1"), secrets=[CANARY]
    )
    assert code == 0, out
    requests = csv(tmp_path / "drill" / "requests.csv")
    assert requests[["path", "status", "fault"]].values.tolist() == [["/payment", "", "drop_after_commit"]]
    assert csv(tmp_path / "drill" / "export.csv")["merchantReferenceId"].tolist() == ["DRILL-TEST-1"]
    payment = csv(tmp_path / "drill" / "payment.csv")
    assert payment[["outcomeState", "status", "amount"]].values.tolist() == [
        ["succeeded", "success", "42.00"]
    ]
    with Client() as client:
        controls = SandboxControls(client)
        assert controls.faults().empty  # the drill leaves no rule behind
        assert len(controls.export_payments("DRILL-TEST-1")) == 1
    # Again with the same key: the journal holds it, nothing is sent, the drill fails; its rule
    # stayed armed, and the next real payment met it and became unknown.
    code, out, err = toolkit_run(
        capsys, tmp_path / "again", "fault_drill", ("merchant_reference_id", "DRILL-TEST-1"), secrets=[CANARY]
    )
    assert code == 1 and "state succeeded" in out + err, out + err
    with Client() as client:
        assert SandboxControls(client).faults().empty
    code, out, err = toolkit_run(
        capsys, tmp_path / "spaced", "fault_drill", ("merchant_reference_id", " DRILL-SP"), secrets=[CANARY]
    )
    assert code == 2 and "has spaces at its ends" in out + err, out + err  # a bad parameter, not a finding
    # The kernel's sockets were made in the run's own folder, not beside the notebooks.
    assert not list(resolve_notebook("fault_drill").parent.glob("kernel-ipc*"))


# ---------------------------------------------------------------------------------------------
# The payout reconciliation notebook


@pytest.mark.parametrize(
    ("parameter", "value", "words"),
    [
        ("window", "three", "window: 'three' is not a number of business days"),
        ("holidays", "2025-12-25,2025-13-01", "holidays: '2025-13-01' is not a date"),
        ("backend", "sqlite", "backend: 'sqlite' is not duckdb or pyspark"),
        ("as_of", "tomorrow", "as_of: write a date"),
        ("max_exceptions", "-2", "max_exceptions: -2 is less than -1"),
        ("bank_path", "no/such/statements", "bank_path: no such file"),
        ("processor_path", str(DATA / "ledger.csv"), "processor_path and bank_path go together"),
        ("counterparty_name", "x", "did you mean 'counterparty'?"),
        ("ledger_path", "no/such/books.csv", "ledger_path: no such file"),
        ("ledger_currency", "EURO", "ledger_currency: 'EURO' is not an ISO 4217 code"),
    ],
)
def test_payout_parameters_are_refused_before_anything_runs(
    parameter: str, value: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "payout_reconciliation", "-p", parameter, value, "--output-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_the_payout_notebook_declares_the_report_s_files() -> None:
    """The runner claims a notebook's declared outputs before it starts: every file of the payout
    report is one."""
    from toolkit.reconcile.payouts.report import PAYOUT_REPORT_FILES

    assert set(PAYOUT_REPORT_FILES) <= set(declared_outputs(resolve_notebook("payout_reconciliation")))


def test_the_sandbox_counterparty_is_the_sandbox_processor() -> None:
    from toolkit.sandbox.payouts import PROCESSOR_NAME
    from toolkit.views.payouts import SANDBOX_COUNTERPARTY

    assert SANDBOX_COUNTERPARTY == PROCESSOR_NAME


def plant_a_week_of_payouts(controls: SandboxControls) -> tuple[dict[str, str], datetime]:
    """Payments on a Monday (EUR, USD), Tuesday (EUR) and Wednesday (USD), paid out Wednesday to
    Friday, then the bank: Wednesday's EUR payout lost, Thursday's booked for 1.00 less, Friday's
    delayed 5 business days, and a deposit from the processor no payout explains on the next
    Monday. The clock is left on the next Tuesday, the cut-off; returns the payout ids by what the
    bank did, and that instant."""
    now = controls.freeze_clock()
    monday = datetime.combine(now.date() + timedelta(days=7 - now.weekday()), datetime.min.time(), UTC)
    controls.advance_clock(milliseconds=(monday.replace(hour=9) - now) // timedelta(milliseconds=1))
    with Client() as client:
        for day, currency, amount in (
            (0, "EUR", "10.00"),
            (0, "USD", "15.00"),
            (1, "EUR", "20.00"),
            (2, "USD", "30.00"),
        ):
            if day and controls.now().weekday() < day:
                controls.advance_clock(days=1)
            result = client.create_payment(
                amount=Decimal(amount),
                currency=currency,
                paymentMethodType="CARD",
                paymentInstrumentId="pi_test_success",
                merchantReferenceId=f"PO-{day}-{currency}",
                customerEmail="buyer@example.com",
                returnUrl="https://shop.example/r",
            )
            assert result.status == 1, result  # success
    ids = {
        "lost": f"po_{monday + timedelta(days=2):%Y%m%d}_EUR",
        "matched": f"po_{monday + timedelta(days=2):%Y%m%d}_USD",
        "short": f"po_{monday + timedelta(days=3):%Y%m%d}_EUR",
        "late": f"po_{monday + timedelta(days=4):%Y%m%d}_USD",
    }
    controls.lose_payout(ids["lost"])
    controls.change_payout(ids["short"], "18.12")
    controls.delay_payout(ids["late"], 5)
    controls.add_bank_deposit("EUR", "123.45", day=(monday + timedelta(days=7)).date())
    controls.advance_clock(days=6)  # Wednesday -> the next Tuesday
    assert controls.now().weekday() == 1
    return ids, controls.now()


@pytest.mark.slow
def test_payout_reconciliation_on_the_sandbox_and_on_its_files(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Client() as client:
        ids, cutoff = plant_a_week_of_payouts(SandboxControls(client))
    secrets = [CANARY]
    out = tmp_path / "sandbox"
    code, printed, _ = toolkit_run(capsys, out, "payout_reconciliation", secrets=secrets)
    assert code == 0
    expected = {
        ids["lost"]: "payout_missing_in_bank",
        ids["matched"]: "matched",
        ids["short"]: "payout_amount_mismatch",
        ids["late"]: "in_transit",
    }
    assert (
        dict(zip(csv(out / "payouts.csv")["payout"], csv(out / "payouts.csv")["outcome"], strict=True))
        == expected
    )
    exceptions = csv(out / "exceptions.csv")
    assert list(exceptions["category"]) == [
        "payout_missing_in_bank",
        "payout_amount_mismatch",
        "bank_deposit_unexplained",
        "in_transit",
    ]
    assert "3 exceptions; 1 of 4 payout(s) in the bank, 1 in transit, no threshold set" in printed
    statements = sorted(p.name for p in (out / "statements").iterdir())
    first = cutoff.date() - timedelta(days=6)  # the first payout's day, the Wednesday
    assert statements == sorted(
        f"camt053_{currency}_{first + timedelta(days=n):%Y%m%d}.xml"
        for currency in ("EUR", "USD")
        for n in range(7)
    )
    for name in (
        "report.html",
        "report.xlsx",
        "summary.csv",
        "processor_payouts.csv",
        "payout_reconciliation.html",
    ):
        assert (out / name).is_file()

    # Past the threshold: findings, exit 1, the report written all the same.
    code, _, err = toolkit_run(
        capsys, tmp_path / "strict", "payout_reconciliation", ("max_exceptions", "2"), secrets=secrets
    )
    assert code == 1 and "findings: 3 exceptions" in err and "more than max_exceptions=2" in err
    assert (tmp_path / "strict" / "exceptions.csv").is_file()

    # The files the first run wrote, given back: the same payouts; a bank holiday on the Monday
    # keeps the lost payout's window open at the cut-off, so it is in transit, not missing.
    files = (("processor_path", str(out / "processor_payouts.csv")), ("bank_path", str(out / "statements")))
    given = (*files, ("as_of", cutoff.date().isoformat()), ("counterparty", "SANDBOX PAYMENTS"))
    holiday = ("holidays", (cutoff.date() - timedelta(days=1)).isoformat())
    code, printed, _ = toolkit_run(
        capsys, tmp_path / "files", "payout_reconciliation", *given, holiday, secrets=secrets
    )
    assert code == 0, printed
    outcomes = csv(tmp_path / "files" / "payouts.csv")
    assert dict(zip(outcomes["payout"], outcomes["outcome"], strict=True)) == expected | {
        ids["lost"]: "in_transit"
    }
    assert "2 exceptions; 1 of 4 payout(s) in the bank, 2 in transit" in printed
    assert not (tmp_path / "files" / "statements").exists()  # files given: nothing downloaded

    # A statement that cannot be read: exit 2, naming it.
    broken = tmp_path / "broken.xml"
    broken.write_text("<Document><BkToCstmrStmt>")
    code, _, err = toolkit_run(
        capsys,
        tmp_path / "bad",
        "payout_reconciliation",
        files[0],
        ("bank_path", str(broken)),
        secrets=secrets,
    )
    assert code == 2 and "broken.xml" in err


@pytest.mark.slow
def test_payout_reconciliation_compares_the_books_given(
    service: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files given, with the books (``ledger_path``, ``ledger_currency``): the QuickBooks report's
    transfer of the payout is its booking, shown in the notebook's table of payouts and in the
    report's files; books that name no currency, without ``ledger_currency``: exit 2."""
    import openpyxl

    from tests.reconcile.exports import PAID_OUT, write_month
    from toolkit.sandbox.statements import StatementEntry, camt053

    paths = write_month(tmp_path / "month")
    monday = date(2025, 6, 2)  # the month's payout was paid out on Friday, May 30th
    credit = StatementEntry(
        int(Decimal(PAID_OUT) * 100),
        monday,
        monday,
        "B1",
        "STRIPE PAYMENTS EUROPE LTD",
        "STRIPE PAYOUT po_0001",
    )
    bank = tmp_path / "camt053_20250602.xml"
    bank.write_bytes(
        camt053(iban="DE89370400440532013000", currency="EUR", day=monday, opening_minor=0, entries=(credit,))
    )
    files = (("processor_path", str(paths["stripe"])), ("bank_path", str(bank)), ("as_of", "2025-06-10"))
    books = ("ledger_path", str(paths["quickbooks"]))
    out = tmp_path / "books"
    code, printed, err = toolkit_run(
        capsys,
        out,
        "payout_reconciliation",
        *files,
        books,
        ("ledger_currency", "EUR"),
        ("max_exceptions", "0"),
        secrets=[CANARY],
    )
    assert code == 0, err
    assert "0 exceptions; 1 of 1 payout(s) in the bank, 0 in transit, within max_exceptions=0" in printed
    payouts = csv(out / "payouts.csv")
    assert list(payouts["books_outcome"]) == ["booked"]
    page = (out / "payout_reconciliation.html").read_text(encoding="utf-8")
    assert "in the books" in page and "booked on" in page and "in the books 1 of 1 booked" in page
    sheet = openpyxl.load_workbook(out / "report.xlsx")["Payouts"]
    row = dict(zip([c.value for c in sheet[1]], [c.value for c in sheet[2]], strict=True))
    assert (row["books_outcome"], row["books_amount"]) == ("booked", float(PAID_OUT))

    code, _, err = toolkit_run(
        capsys, tmp_path / "no_currency", "payout_reconciliation", *files, books, secrets=[CANARY]
    )
    assert code == 2 and "Transaction Detail by Account.csv" in err


def test_toolkit_run_imports_jsonschema_without_building_the_iri_grammar(tmp_path: Path) -> None:
    """jsonschema, which nbformat validates notebooks with, builds some 35 Earley parsers of RFC
    3987 at import when rfc3987-syntax is installed (jupyterlab brings it): 1.4 s of every run,
    for formats no notebook's schema has. ``toolkit run`` imports it without them, and runs."""
    if importlib.util.find_spec("rfc3987_syntax") is None:
        pytest.skip("rfc3987-syntax is not installed here: jsonschema builds no grammar to leave out")
    notebook = tmp_path / "one_cell.ipynb"
    cells = [('output_dir = ""', "parameters"), ('print("nothing done")', "result")]
    document = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [
            {
                "id": tag,
                "cell_type": "code",
                "metadata": {"tags": [tag]},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
            for source, tag in cells
        ],
    }
    notebook.write_text(json.dumps(document), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolkit.cli", "run", str(notebook)],
        cwd=tmp_path,
        env={**os.environ, "TOOLKIT_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "one_cell: ok: nothing done" in done.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"papermill", "nbformat", "jsonschema._format"} <= imported
    assert "rfc3987_syntax.syntax_helpers" not in imported
