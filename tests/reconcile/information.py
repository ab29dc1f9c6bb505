"""A result with the parts of issue 11 made by hand: informational rows (in transit, within
tolerance), a cut-off and a settlement window, payments compared at reference rates, a missing
rate, and row accounting that adds up. The engine's own result is the base, so every exception
category is there too; the reports are tested on this until the engine makes such results."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd

from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import CATEGORIES, EXCEPTION_COLUMNS, ReconciliationResult
from toolkit.reconcile.result import FX_COLUMNS, SUMMARY_COLUMNS
from toolkit.reconcile.tolerance import Tolerance

CUTOFF = datetime(2026, 11, 20, tzinfo=UTC)
GRACE = timedelta(days=3)
MISSING_RATE = "no rate for GBP/USD on 2026-11-18"

#: (key, category, ledger amount, processor amount, ledger currency, processor currency, ledger
#: status, processor status, side, row, detail, age in days)
INFO_ROWS: list[tuple[Any, ...]] = [
    (
        "transit-new",
        "in_transit",
        "25.00",
        None,
        "USD",
        None,
        "success",
        None,
        "ledger",
        30,
        "no processor row yet",
        0,
    ),
    (
        "transit-old",
        "in_transit",
        "40.00",
        "40.00",
        "EUR",
        "EUR",
        "success",
        "pending",
        "processor",
        31,
        "pending",
        2,
    ),
    (
        "tol-usd-1",
        "within_tolerance",
        "10.00",
        "10.02",
        "USD",
        "USD",
        "success",
        "success",
        "ledger",
        32,
        "variance",
        5,
    ),
    (
        "tol-usd-2",
        "within_tolerance",
        "20.00",
        "19.99",
        "USD",
        "USD",
        "success",
        "success",
        "ledger",
        33,
        "variance",
        1,
    ),
    (
        "tol-jpy",
        "within_tolerance",
        "1000",
        "999",
        "JPY",
        "JPY",
        "success",
        "success",
        "ledger",
        34,
        "variance",
        None,
    ),
]
#: Per payment compared at a reference rate: two EUR -> USD (variances +0.01 and -0.03), one
#: CHF -> USD exact. Each variance is charged - expected.
FX_ROWS: list[tuple[Any, ...]] = [
    (
        "fx-1",
        date(2026, 11, 18),
        "10.00",
        "EUR",
        "1.0842",
        "10.84",
        "10.85",
        "USD",
        "0.01",
        "within_tolerance",
    ),
    (
        "fx-2",
        date(2026, 11, 19),
        "100.00",
        "EUR",
        "1.0851",
        "108.51",
        "108.48",
        "USD",
        "-0.03",
        "within_tolerance",
    ),
    ("fx-3", date(2026, 11, 19), "50.00", "CHF", "1.1302", "56.51", "56.51", "USD", "0.00", "matched"),
]


def _money(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def info_frame(sources: dict[str, str]) -> pd.DataFrame:
    """``INFO_ROWS`` as exception rows (``severity`` info), sources by side."""
    records = [
        {
            "merchantReferenceId": key,
            "category": category,
            "ledger_amount": _money(ledger),
            "processor_amount": _money(processor),
            "ledger_currency": l_cur,
            "processor_currency": p_cur,
            "ledger_status": l_status,
            "processor_status": p_status,
            "source": sources[side],
            "source_row": row,
            "detail": detail,
            "severity": "info",
            "age_days": age,
        }
        for key, category, ledger, processor, l_cur, p_cur, l_status, p_status, side, row, detail, age in INFO_ROWS
    ]
    frame = pd.DataFrame(records, columns=list(EXCEPTION_COLUMNS))
    frame["age_days"] = pd.array(frame["age_days"].tolist(), dtype="Int64")
    return frame


def fx_frame() -> pd.DataFrame:
    """``FX_ROWS`` with exact amounts and rates."""
    rows = [
        (
            key,
            day,
            Decimal(amount),
            base,
            Decimal(rate),
            Decimal(expected),
            Decimal(charged),
            quote,
            Decimal(v),
            c,
        )
        for key, day, amount, base, rate, expected, charged, quote, v, c in FX_ROWS
    ]
    return pd.DataFrame(rows, columns=list(FX_COLUMNS))


def with_information(base: ReconciliationResult | None = None) -> ReconciliationResult:
    """``base`` (the planted discrepancies by default) with the informational rows, the summary
    rows the engine gives them, the cut-off, FX rows, a missing rate, and counts that add up:
    each side gains the 3 matches within tolerance; in transit, 2 ledger rows and 1 processor
    row (``transit-old`` is on both); after the cut-off, 1 ledger row and 2 processor rows."""
    base = base or run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    sources = {c.side: c.source for c in base.counts}
    info = info_frame(sources)
    exceptions = pd.concat([base.exceptions.astype({"category": str}), info], ignore_index=True)
    exceptions["category"] = pd.Categorical(exceptions["category"], categories=list(CATEGORIES))
    summary_rows = pd.DataFrame(
        [
            ("in_transit", "EUR", 1, Decimal("40.00")),
            ("in_transit", "USD", 1, Decimal("25.00")),
            ("within_tolerance", "JPY", 1, Decimal("1")),  # ledger - processor
            ("within_tolerance", "USD", 2, Decimal("-0.01")),  # -0.02 + 0.01
        ],
        columns=list(SUMMARY_COLUMNS),
    )
    summary = pd.concat([base.summary, summary_rows], ignore_index=True)
    ledger, processor = base.counts
    counts = (
        replace(ledger, rows=ledger.rows + 6, matched=ledger.matched + 3, in_transit=2, after_cutoff=1),
        replace(
            processor, rows=processor.rows + 6, matched=processor.matched + 3, in_transit=1, after_cutoff=2
        ),
    )
    return replace(
        base,
        exceptions=exceptions,
        summary=summary,
        counts=counts,
        cutoff=CUTOFF,
        grace=GRACE,
        fx=fx_frame(),
        missing_rates=(MISSING_RATE,),
        amount_tolerance=Tolerance.parse("0.5%:2"),
    )
