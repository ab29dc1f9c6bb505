"""The planted payments: ledger and processor rows with every discrepancy the engine must find
(and rows it must match or reject), what it finds in them, and ``run``, which reconciles rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.reconcile import ReconciliationResult, load_ledger, load_processor, reconcile

COLUMNS = ["merchantReferenceId", "amount", "currency", "status"]


def frame(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def run(
    ledger: list[tuple[str, str, str, str]], processor: list[tuple[str, str, str, str]], **kwargs: Any
) -> ReconciliationResult:
    return reconcile(load_ledger(frame(ledger)), load_processor(frame(processor)), **kwargs)


PLANTED_LEDGER = [
    ("ok-usd", "10.1", "USD", "success"),  # written differently from the processor
    ("ok-jpy", "1200", "jpy", "1"),  # lowercase currency, status as a code
    ("ok-kwd", "1.250", "KWD", "pending"),
    ("ok-big", "123456789012.34", "USD", "success"),
    ("miss-proc", "5.00", "EUR", "success"),
    ("amount", "10.00", "USD", "success"),
    ("amount-kwd", "0.001", "KWD", "success"),
    ("currency", "100", "JPY", "success"),
    ("status", "7.00", "USD", "success"),
    ("dup-led", "3.00", "USD", "success"),
    ("dup-led", "3.00", "USD", "success"),
    ("dup-proc", "4.00", "USD", "success"),
    ("unknown", "9.99", "USD", "success"),
    ("two-problems", "1.00", "USD", "success"),
    ("bad-amount", "1.234", "USD", "success"),  # rejected: too many decimals
    ("bad-currency", "1.00", "ZZZ", "success"),  # rejected
    ("bad-status", "1.00", "USD", "settled"),  # rejected
    ("", "1.00", "USD", "success"),  # rejected: no key
]
PLANTED_PROCESSOR = [
    ("ok-usd", "10.10", "USD", "SUCCESS"),
    ("ok-jpy", "1200", "JPY", "success"),
    ("ok-kwd", "1.25", "KWD", "2"),
    ("ok-big", "123456789012.340", "USD", "1"),
    ("miss-led", "6.00", "EUR", "success"),
    ("amount", "10.01", "USD", "success"),
    ("amount-kwd", "0.002", "KWD", "success"),
    ("currency", "100.00", "USD", "success"),
    ("status", "7.00", "USD", "failure"),
    ("dup-led", "3.00", "USD", "success"),
    ("dup-proc", "4.00", "USD", "success"),
    ("dup-proc", "4.00", "USD", "success"),
    ("unknown", "9.99", "USD", "unknown"),
    ("two-problems", "2.00", "USD", "3"),
]
EXPECTED = {
    ("miss-proc", "missing_in_processor"),
    ("miss-led", "missing_in_ledger"),
    ("amount", "amount_mismatch"),
    ("amount-kwd", "amount_mismatch"),
    ("currency", "currency_mismatch"),
    ("status", "status_mismatch"),
    ("dup-led", "duplicate_in_ledger"),
    ("dup-proc", "duplicate_in_processor"),
    ("unknown", "unknown_outcome"),
    ("two-problems", "amount_mismatch"),
    ("two-problems", "status_mismatch"),
    ("bad-amount", "rejected_row"),
    ("bad-currency", "rejected_row"),
    ("bad-status", "rejected_row"),
    ("", "rejected_row"),
}
