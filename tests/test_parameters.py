"""Notebook parameters are checked for type and value before a kernel starts: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import ParameterError
from toolkit.notebooks import resolve_notebook
from toolkit.parameters import check_parameters, declared_parameters, parse_value

REPORT = resolve_notebook("reconciliation_report")


def test_defaults_give_the_types() -> None:
    declared = declared_parameters(REPORT)
    assert declared["max_exceptions"] == -1 and declared["ledger_path"] == "data/ledger.csv"


@pytest.mark.parametrize(
    ("text", "default", "value"),
    [
        ("2025-13-01", "", "2025-13-01"),  # YAML would raise on this date: it stays text
        ("2025-13-01", None, "2025-13-01"),
        ("007", "", "007"),  # text parameters keep their text
        ("5", 0, 5),
        ("ten", 0, "ten"),  # refused by the check, with its name
        ("yes", False, True),
        ("0.5", 1.0, 0.5),
    ],
)
def test_values_are_read_as_the_parameter_wants(text: str, default: Any, value: Any) -> None:
    assert parse_value(text, default) == value


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"period_start": "2025-13-01"}, "period_start: '2025-13-01' is not a date written YYYY-MM-DD"),
        ({"period_end": "31/01/2025"}, "period_end: '31/01/2025' is not a date"),
        ({"ledger_path": "no/such/ledger.csv"}, "ledger_path: no such file 'no/such/ledger.csv'"),
        ({"max_exceptions": "ten"}, "max_exceptions: 'ten' is not a whole number"),
        ({"max_exceptions": True}, "max_exceptions: True is not a whole number"),
        ({"ledger_path": 5}, "ledger_path: 5 is not text"),
        ({"ledger_decimal": ";"}, "ledger_decimal: ';' is not a decimal mark"),
        ({"ledger_delimiter": ";;"}, "ledger_delimiter: ';;' is not one character"),
        ({"ledger_encoding": "klingon"}, "ledger_encoding: unknown encoding 'klingon'"),
        ({"ledger_sheet": "0"}, "ledger_sheet: 0 must be"),
        ({"ledger_header_row": -2}, "ledger_header_row: -2 must be"),
        ({"ledger_date_format": "%d/%m/%j"}, "ledger_date_format: %j in '%d/%m/%j' is not a directive"),
        ({"ledger_timezone": "Europe/Nowhere"}, "ledger_timezone: 'Europe/Nowhere' is not a time zone"),
        ({"ledger_currency": "EURO"}, "ledger_currency: 'EURO' is not an ISO 4217 code"),
        ({"ledger_map": "amount"}, "ledger_map: give required=file column pairs"),
        ({"processor_format": "paypal"}, "processor_format: no export layout 'paypal'"),
        (
            {"ledger_format": "stripe_unified_payments"},
            "ledger_format: stripe_unified_payments is a layout of a processor's",
        ),
        ({"processor_map": "{"}, "processor_map: not valid JSON"),
    ],
)
def test_a_bad_value_is_refused_naming_the_parameter(parameters: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_parameters(REPORT, parameters)


def test_good_values_pass(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.csv"
    ledger.write_text("merchantReferenceId,amount,currency,status\n")
    check_parameters(
        REPORT,
        {"period_start": "2025-01-01", "period_end": "", "ledger_path": str(ledger), "max_exceptions": 0},
    )
    # A folder or a glob of Parquet files, as toolkit reconcile takes them, were refused.
    for inputs in (str(tmp_path), str(tmp_path / "*.csv")):
        check_parameters(REPORT, {"ledger_path": inputs, "processor_path": inputs})
    with pytest.raises(ParameterError, match="processor_path: no such file"):
        check_parameters(REPORT, {"processor_path": str(tmp_path / "*.parquet")})


@pytest.mark.parametrize(
    "pair", [("period_start", "2025-13-01"), ("ledger_path", "missing.csv"), ("max_exceptions", "ten")]
)
def test_toolkit_run_refuses_before_a_kernel_starts(pair: tuple[str, str], tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolkit.cli",
            "run",
            "reconciliation_report",
            "-p",
            *pair,
            "--output-dir",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and pair[0] in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    print(f"refused in {time.monotonic() - started:.1f} s")  # no kernel: a second or two of imports


def test_a_count_below_its_least_is_refused_before_the_kernel_starts() -> None:
    """``-p concurrency 0`` failed inside the notebook's cell, after the kernel had started."""
    with pytest.raises(ParameterError, match=r"concurrency: 0 is less than 1"):
        check_parameters(REPORT.with_name("test_payments.ipynb"), {"concurrency": 0})
    with pytest.raises(ParameterError, match=r"max_age: -5 is less than -1"):
        check_parameters(REPORT, {"max_age": -5})
    check_parameters(REPORT, {"max_age": -1, "max_exceptions": 0})


PAYOUTS = resolve_notebook("payout_reconciliation")


def test_payout_options_pass_as_the_command_reads_them(tmp_path: Path) -> None:
    holidays = tmp_path / "holidays.txt"
    holidays.write_text("2025-12-25  # Christmas\n2025-12-26\n")
    statement = tmp_path / "bank.xml"
    statement.write_text("<x/>")
    given = {
        "window": "5d",
        "holidays": str(holidays),
        "backend": "pyspark",
        "processor_path": str(holidays),
        "bank_path": str(tmp_path / "*.xml"),  # a glob that matches a file
        "counterparty": "ACME PAY, PSP LTD",
        "as_of": "2025-12-31",
    }
    check_parameters(PAYOUTS, given)
    check_parameters(PAYOUTS, {})  # neither file: the sandbox's


def test_payout_problems_are_said_together(tmp_path: Path) -> None:
    holidays = tmp_path / "holidays.txt"
    holidays.write_text("2025-12-25\nBoxing Day\n")
    with pytest.raises(ParameterError) as caught:
        check_parameters(PAYOUTS, {"holidays": str(holidays), "window": "-1", "bank_path": str(holidays)})
    said = str(caught.value)
    assert "holidays: 'Boxing Day' is not a date (YYYY-MM-DD)" in said
    assert "window: '-1' is not a number of business days" in said
    assert "processor_path and bank_path go together" in said
