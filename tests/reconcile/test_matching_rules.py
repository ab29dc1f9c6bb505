"""Matching as payments really behave (issue 11): prices in another currency, the cut-off and the
settlement window, tolerances with their variance, reference rates, periods across the boundary.

Each planted set holds one row per rule, on both sides of each line; every planted case must be
found, nothing else, and the rows must add up, on DuckDB and on Spark alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.errors import InputError
from toolkit.reconcile import ReconciliationResult, load_ledger, load_processor, reconcile, select_period
from toolkit.reconcile.backends import Backend

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

LEDGER_COLUMNS = ["merchantReferenceId", "date", "amount", "currency", "status"]
PROCESSOR_COLUMNS = [
    "merchantReferenceId",
    "createTime",
    "amount",
    "currency",
    "status",
    "pricingAmount",
    "pricingCurrency",
]
#: The cut-off of the planted set: the end of 19 November 2026 (UTC); the window starts 3 days before.
AS_OF = "2026-11-19"

#: key -> (ledger row, processor row, the categories the key must have). Dates as the books and an
#: export write them; "" where a side has no row.
PLANTED: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None, set[str]]] = {
    # Prices in another currency
    "FX-PRICE": (
        ("2026-11-18", "10.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "560.00", "PHP", "success", "10.00", "USD"),
        set(),
    ),
    "FX-CHARGED": (
        ("2026-11-18", "18.40", "EUR", "success"),
        ("2026-11-18T10:00:00Z", "18.40", "EUR", "success", "20.00", "USD"),
        set(),
    ),
    "FX-AMOUNT": (
        ("2026-11-18", "10.50", "USD", "success"),
        ("2026-11-18T10:00:00Z", "560.00", "PHP", "success", "10.00", "USD"),
        {"amount_mismatch"},
    ),
    "FX-CURRENCY": (
        ("2026-11-18", "10.00", "GBP", "success"),
        ("2026-11-18T10:00:00Z", "560.00", "PHP", "success", "10.00", "USD"),
        {"currency_mismatch"},
    ),
    # The settlement window
    "PENDING-IN": (
        ("2026-11-18", "5.00", "USD", "success"),
        ("2026-11-18T12:00:00Z", "5.00", "USD", "pending", "", ""),
        {"in_transit"},
    ),
    "PENDING-OUT": (
        ("2026-11-10", "5.00", "USD", "success"),
        ("2026-11-10T12:00:00Z", "5.00", "USD", "pending", "", ""),
        {"status_mismatch"},
    ),
    "WAITING-IN": (None, ("1795075200000", "7.00", "USD", "next_action", "", ""), {"in_transit"}),
    "SETTLED-ONLY": (None, ("2026-11-19T08:00:00Z", "7.00", "USD", "success", "", ""), {"missing_in_ledger"}),
    "BOOKED-IN": (("2026-11-19", "3.00", "USD", "success"), None, {"in_transit"}),
    "BOOKED-OUT": (("2026-11-01", "3.00", "USD", "success"), None, {"missing_in_processor"}),
    # After the cut-off: the processor records it a day after the books
    "RECORDED-LATE": (
        ("2026-11-19", "4.00", "USD", "success"),
        ("2026-11-20T09:00:00Z", "4.00", "USD", "success", "", ""),
        {"in_transit"},
    ),
    "BOOKED-AFTER": (("2026-11-20", "4.00", "USD", "success"), None, set()),
    # The cut-off's last second, to the second: a fraction is cut, never rounded up past it.
    "LAST-SECOND": (
        ("2026-11-19", "2.00", "USD", "success"),
        ("2026-11-19T23:59:59.600Z", "2.00", "USD", "success", "", ""),
        set(),
    ),
    # Tolerances: 0.5% of the ledger amount, at least 3 minor units; JPY 1 yen
    "TOL-PERCENT": (
        ("2026-11-15", "100.00", "USD", "success"),
        ("2026-11-15T10:00:00Z", "100.40", "USD", "success", "", ""),
        {"within_tolerance"},
    ),
    "TOL-FLOOR": (
        ("2026-11-15", "1.00", "USD", "success"),
        ("2026-11-15T10:00:00Z", "0.97", "USD", "success", "", ""),
        {"within_tolerance"},
    ),
    "TOL-BEYOND": (
        ("2026-11-15", "100.00", "USD", "success"),
        ("2026-11-15T10:00:00Z", "100.51", "USD", "success", "", ""),
        {"amount_mismatch"},
    ),
    "TOL-JPY-IN": (
        ("2026-11-15", "1000", "JPY", "success"),
        ("2026-11-15T10:00:00Z", "1001", "JPY", "success", "", ""),
        {"within_tolerance"},
    ),
    "TOL-JPY-OUT": (
        ("2026-11-15", "1000", "JPY", "success"),
        ("2026-11-15T10:00:00Z", "1002", "JPY", "success", "", ""),
        {"amount_mismatch"},
    ),
    # A date that cannot be read
    "BAD-DATE": (("31/11/2026", "1.00", "USD", "success"), None, {"rejected_row"}),
    "PLAIN": (
        ("2026-11-12", "12.30", "USD", "success"),
        ("2026-11-12T10:00:00Z", "12.3", "USD", "1", "", ""),
        set(),
    ),
    # Missing by the cut-off, there after it: settled on the 10th, booked on the 21st; and booked
    # on the 2nd, recorded by the processor on the 22nd.
    "BOOKED-LATE": (
        ("2026-11-21", "6.00", "USD", "success"),
        ("2026-11-10T10:00:00Z", "6.00", "USD", "success", "", ""),
        {"missing_in_ledger"},
    ),
    "RECORDED-LATER": (
        ("2026-11-02", "8.00", "USD", "success"),
        ("2026-11-22T10:00:00Z", "8.00", "USD", "success", "", ""),
        {"missing_in_processor"},
    ),
    # In the books in a row that cannot be read (a point written twice).
    "UNREAD": (
        ("2026-11-03", "9..00", "USD", "success"),
        ("2026-11-03T10:00:00Z", "9.00", "USD", "success", "", ""),
        {"missing_in_ledger", "rejected_row"},
    ),
}
TOLERANCE = "JPY=1,0.5%:3"


def sides(
    planted: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None, set[str]]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    ledger = [(key, *row) for key, (row, _, _) in planted.items() if row is not None]
    processor = [(key, *row) for key, (_, row, _) in planted.items() if row is not None]
    return pd.DataFrame(ledger, columns=LEDGER_COLUMNS), pd.DataFrame(processor, columns=PROCESSOR_COLUMNS)


def categories(result: ReconciliationResult) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for key, category in zip(
        result.exceptions["merchantReferenceId"], result.exceptions["category"], strict=True
    ):
        found.setdefault(str(key), set()).add(str(category))
    return found


def rows(result: ReconciliationResult, key: str, category: str) -> pd.Series:
    frame = result.exceptions
    chosen = frame[(frame["merchantReferenceId"] == key) & (frame["category"] == category)]
    assert len(chosen) == 1, (key, category, chosen)
    return chosen.iloc[0]


@pytest.fixture(scope="module")
def planted(backend: Backend) -> ReconciliationResult:
    ledger, processor = sides(PLANTED)
    return reconcile(
        load_ledger(ledger),
        load_processor(processor),
        amount_tolerance=TOLERANCE,
        as_of=AS_OF,
        grace="3d",
        backend=backend,
    )


def test_every_planted_case_is_found_and_nothing_else(planted: ReconciliationResult) -> None:
    wanted = {key: cats for key, (_, _, cats) in PLANTED.items() if cats}
    assert categories(planted) == wanted


def test_the_rows_add_up_with_in_transit_and_after_the_cutoff(planted: ReconciliationResult) -> None:
    ledger, processor = planted.counts
    assert all(c.adds_up for c in planted.counts)
    # In transit: PENDING-IN, BOOKED-IN, RECORDED-LATE (ledger); PENDING-IN, WAITING-IN (processor).
    assert (ledger.in_transit, processor.in_transit) == (3, 2)
    # BOOKED-AFTER, BOOKED-LATE (ledger); RECORDED-LATE, RECORDED-LATER (processor).
    assert (ledger.after_cutoff, processor.after_cutoff) == (2, 2)
    assert ledger.rejected == 2  # BAD-DATE, UNREAD
    # Matched: FX-PRICE, FX-CHARGED, PLAIN, LAST-SECOND and the three within tolerance.
    assert planted.matched_count == 7
    assert ledger.exceptions == 7 and processor.exceptions == 8


def test_information_is_shown_and_never_counted_as_an_exception(planted: ReconciliationResult) -> None:
    info = planted.exceptions[planted.exceptions["severity"] == "info"]
    assert set(info["category"]) == {"in_transit", "within_tolerance"}
    assert planted.info_count == len(info) == 7  # 4 in transit, 3 within tolerance
    assert planted.exception_count == len(planted.exceptions) - 7
    assert planted.category_counts["status_mismatch"] == 1  # PENDING-OUT only


def test_prices_in_the_ledgers_currency_match_and_the_matched_frame_shows_both(
    planted: ReconciliationResult,
) -> None:
    matched = planted.matched.set_index("merchantReferenceId")
    fx = matched.loc["FX-PRICE"]
    assert (fx["amountMinor"], fx["currency"]) == (1000, "USD")
    assert (fx["charged_amountMinor"], fx["charged_currency"]) == (56000, "PHP")
    assert (fx["pricing_amountMinor"], fx["pricing_currency"]) == (1000, "USD")
    # The net difference per currency counts it in the currency of its price: PHP keeps only
    # the two PHP charges that are exceptions (FX-AMOUNT, FX-CURRENCY).
    assert [(m.side, m.currency, m.rows, m.amount) for m in planted.price_moves] == [
        ("charged", "PHP", 1, Decimal("560.00")),
        ("priced", "USD", 1, Decimal("10.00")),
    ]
    assert planted.net_by_currency()["PHP"] == Decimal("-1120.00")
    charged = matched.loc["FX-CHARGED"]
    assert (charged["charged_amountMinor"], charged["charged_currency"]) == (1840, "EUR")
    assert bool(matched["pricing_amountMinor"].isna().loc["PLAIN"])


def test_a_price_that_differs_is_an_amount_mismatch_in_the_pricing_currency(
    planted: ReconciliationResult,
) -> None:
    row = rows(planted, "FX-AMOUNT", "amount_mismatch")
    assert row["detail"] == (
        "ledger 10.50 USD, processor priced 10.00 USD (charged 560.00 PHP) (difference 0.50); processor row 3"
    )
    summary = planted.summary.set_index(["category", "currency"])
    assert summary.loc[("amount_mismatch", "USD"), "amount"] == Decimal("1.01")  # 0.50 + 0.51


def test_half_a_price_or_one_that_cannot_be_read_rejects_the_row_saying_why(backend: Backend) -> None:
    """An amount without its currency, or a currency without an amount, was passed over: the
    payment became a currency_mismatch that hid the export's fault. A price with too many
    decimals was said to be "not an amount in an ISO 4217 currency"."""
    written = {
        "HALF-AMOUNT": ("10.00", "", "pricingAmount '10.00' has no pricingCurrency"),
        "HALF-CURRENCY": ("", "USD", "pricingCurrency 'USD' has no pricingAmount"),
        "PRICE-DECIMALS": ("10.5", "JPY", "pricingAmount '10.5' has more decimals than JPY allows (0)"),
        "PRICE-CODE": ("10.00", "XYZ", "pricingCurrency 'XYZ' is not an ISO 4217 code"),
        "PRICE-TEXT": ("abc", "USD", "pricingAmount 'abc' is not a number"),
    }
    ledger = [(key, "2026-11-18", "10.00", "USD", "success") for key in [*written, "SAME-CURRENCY"]]
    processor = [
        (key, "2026-11-18T10:00:00Z", "560.00", "PHP", "success", price, currency)
        for key, (price, currency, _) in written.items()
    ] + [("SAME-CURRENCY", "2026-11-18T10:00:00Z", "10.00", "USD", "success", "", "USD")]
    result = reconcile(
        load_ledger(pd.DataFrame(ledger, columns=LEDGER_COLUMNS)),
        load_processor(pd.DataFrame(processor, columns=PROCESSOR_COLUMNS)),
        backend=backend,
    )
    rejected = result.rejected.set_index("merchantReferenceId")["detail"].to_dict()
    assert rejected == {key: reason for key, (_, _, reason) in written.items()}
    assert list(result.matched["merchantReferenceId"]) == ["SAME-CURRENCY"]  # the charge's own currency


def test_a_thousand_grouped_with_a_point_where_nothing_decides_is_rejected_not_matched_small(
    backend: Backend, tmp_path: Path
) -> None:
    """1.500 EUR on both sides of a German export matched as 1.50; now both are refused, alike."""
    header = "merchantReferenceId;amount;currency;status\n"
    (tmp_path / "l.csv").write_text(header + "T1;1.500;EUR;success\nT2;12;EUR;success\n")
    (tmp_path / "p.csv").write_text(header + "T1;1.500;EUR;success\nT2;12;EUR;success\n")
    result = reconcile(load_ledger(tmp_path / "l.csv"), load_processor(tmp_path / "p.csv"), backend=backend)
    assert list(result.matched["merchantReferenceId"]) == ["T2"]
    assert (
        result.rejected["detail"].tolist()
        == [
            "amount '1.500' may be 1500 or 1.500 EUR: no amount of the file's first rows says which "
            "decimal mark it uses (--decimal , or --decimal .)"
        ]
        * 2
    )


def test_in_transit_rows_say_why_with_their_age_at_the_cutoff(planted: ReconciliationResult) -> None:
    pending = rows(planted, "PENDING-IN", "in_transit")
    assert pending["detail"] == (
        "ledger success, processor pending since 2026-11-18 12:00 UTC; "
        "inside the settlement window (3 days before the cut-off)"
    )
    assert pending["age_days"] == 1 and pending["severity"] == "info"
    booked = rows(planted, "BOOKED-IN", "in_transit")
    assert booked["detail"].startswith("not at the processor yet; booked 2026-11-19 00:00 UTC")
    assert booked["age_days"] == 0
    waiting = rows(planted, "WAITING-IN", "in_transit")  # epoch milliseconds: 2026-11-19 08:00 UTC
    assert waiting["detail"].startswith("not in the ledger yet; at the processor since 2026-11-19 08:00 UTC")
    assert rows(planted, "BOOKED-OUT", "missing_in_processor")["age_days"] == 18
    assert planted.cutoff is not None and planted.cutoff.isoformat() == "2026-11-19T23:59:59+00:00"


def test_a_payment_missing_from_a_side_says_where_that_sides_row_is(
    planted: ReconciliationResult,
) -> None:
    ledger, processor = (list(frame["merchantReferenceId"]) for frame in sides(PLANTED))
    booked = rows(planted, "BOOKED-LATE", "missing_in_ledger")
    assert booked["detail"] == (
        f"not in the ledger by the cut-off; ledger row {ledger.index('BOOKED-LATE') + 1} "
        "is dated 2026-11-21 00:00 UTC, after it"
    )
    assert (booked["source"], booked["source_row"]) == (
        "<processor frame>",
        processor.index("BOOKED-LATE") + 1,
    )
    recorded = rows(planted, "RECORDED-LATER", "missing_in_processor")
    assert recorded["detail"] == (
        f"not at the processor by the cut-off; processor row {processor.index('RECORDED-LATER') + 1} "
        "is dated 2026-11-22 10:00 UTC, after it"
    )
    unread = rows(planted, "UNREAD", "missing_in_ledger")
    assert unread["detail"] == (
        f"not read in the ledger; ledger row {ledger.index('UNREAD') + 1} has this key but cannot be "
        "read (its rejected_row says why)"
    )
    # Nowhere at all: as before.
    assert rows(planted, "SETTLED-ONLY", "missing_in_ledger")["detail"] == "not found in the ledger"
    assert rows(planted, "BOOKED-OUT", "missing_in_processor")["detail"] == "not found at the processor"


def test_matches_within_tolerance_carry_their_variance_summed_per_currency(
    planted: ReconciliationResult,
) -> None:
    row = rows(planted, "TOL-PERCENT", "within_tolerance")
    assert row["detail"] == (
        "ledger 100.00 USD, processor 100.40 USD (variance -0.40, within tolerance); processor row 11"
    )
    summary = planted.summary.set_index(["category", "currency"])
    assert summary.loc[("within_tolerance", "USD"), "amount"] == Decimal("-0.37")  # -0.40 + 0.03
    assert summary.loc[("within_tolerance", "USD"), "count"] == 2
    assert summary.loc[("within_tolerance", "JPY"), "amount"] == Decimal("-1")
    assert planted.amount_tolerance.text() == "0.5% (at least 3 minor units); JPY 1 minor unit"


#: Keys that are exceptions and would also be information: each is its exception only.
EXCEPTION_ONLY = {
    "PENDING-DIFFERS": (  # pending in the window, but charged 0.50 more
        [("2026-11-18", "10.00", "USD", "success")],
        [("2026-11-18T12:00:00Z", "10.50", "USD", "pending", "", "")],
        {"amount_mismatch"},
    ),
    "NEAR-FAILED": (  # within the tolerance, but failed
        [("2026-11-15", "100.00", "USD", "success")],
        [("2026-11-15T10:00:00Z", "100.40", "USD", "failure", "", "")],
        {"status_mismatch"},
    ),
    "NEAR-TWICE": (  # within the tolerance, but charged twice
        [("2026-11-15", "100.00", "USD", "success")],
        [("2026-11-15T10:00:00Z", "100.40", "USD", "success", "", "")] * 2,
        {"duplicate_in_processor"},
    ),
    "RATED-FAILED": (  # within the tolerance at the day's rate, but failed
        [("2026-11-18", "20.00", "USD", "success")],
        [("2026-11-18T10:00:00Z", "18.41", "EUR", "failure", "", "")],
        {"status_mismatch"},
    ),
}


def test_a_payment_with_an_exception_is_neither_in_transit_nor_within_tolerance(
    backend: Backend, rates_file: Path
) -> None:
    """A payment that failed or was charged twice is no variance to post, and an amount at risk
    is not also at stake in transit: the summary's information leaves them out, and the
    information counts agree with the rows counted (they were listed as both)."""
    ledger = [(key, *row) for key, (rows_, _, _) in EXCEPTION_ONLY.items() for row in rows_]
    processor = [(key, *row) for key, (_, rows_, _) in EXCEPTION_ONLY.items() for row in rows_]
    result = reconcile(
        load_ledger(pd.DataFrame(ledger, columns=LEDGER_COLUMNS)),
        load_processor(pd.DataFrame(processor, columns=PROCESSOR_COLUMNS)),
        amount_tolerance=TOLERANCE,
        as_of=AS_OF,
        fx_rates=rates_file,
        backend=backend,
    )
    assert categories(result) == {key: cats for key, (_, _, cats) in EXCEPTION_ONLY.items()}
    assert result.info_count == 0
    assert set(result.summary["category"]) == {"amount_mismatch", "status_mismatch", "duplicate_in_processor"}
    assert all(c.adds_up and c.in_transit == 0 for c in result.counts)


def test_an_unreadable_date_is_a_rejected_row_with_its_reason(planted: ReconciliationResult) -> None:
    row = rows(planted, "BAD-DATE", "rejected_row")
    assert "date '31/11/2026' is not a date or time" in row["detail"]


def test_without_a_cutoff_nothing_is_in_transit_and_every_row_takes_part() -> None:
    ledger, processor = sides(PLANTED)
    result = reconcile(load_ledger(ledger), load_processor(processor), amount_tolerance=TOLERANCE)
    found = categories(result)
    assert "in_transit" not in {c for cats in found.values() for c in cats}
    assert found["PENDING-IN"] == {"status_mismatch"} and found["BOOKED-IN"] == {"missing_in_processor"}
    assert found["BAD-DATE"] == {"missing_in_processor"}  # the date is only read for a cut-off
    assert all(c.after_cutoff == 0 for c in result.counts)


# ---------------------------------------------------------------------------------------------
# A period's boundary: the books decide the period of a payment both sides have

BOUNDARY: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None, set[str]]] = {
    # Booked on the 31st, recorded by the processor on the 1st: October's, on both sides.
    "LATE-RECORD": (
        ("2026-10-31", "9.00", "USD", "success"),
        ("2026-11-01T09:00:00Z", "9.00", "USD", "success", "", ""),
        set(),
    ),
    # Recorded by the processor on the 31st, booked on the 1st: November's, on both sides.
    "LATE-BOOKING": (
        ("2026-11-01", "8.00", "USD", "success"),
        ("2026-10-31T22:00:00Z", "8.00", "USD", "success", "", ""),
        set(),
    ),
    "INSIDE": (
        ("2026-10-15", "7.00", "USD", "success"),
        ("2026-10-15T10:00:00Z", "7.00", "USD", "success", "", ""),
        set(),
    ),
    "NOVEMBER-ONLY": (None, ("2026-11-02T10:00:00Z", "6.00", "USD", "success", "", ""), set()),
    "OCTOBER-ONLY": (("2026-10-31", "5.00", "USD", "success"), None, {"missing_in_processor"}),
    # A processor row far from the boundary keeps its own date even when the books differ.
    "FAR-APART": (
        ("2026-10-02", "4.00", "USD", "success"),
        ("2026-11-20T10:00:00Z", "4.00", "USD", "success", "", ""),
        {"missing_in_processor"},
    ),
}


def period_run(start: str, end: str, backend: Backend) -> ReconciliationResult:
    ledger, processor = sides(BOUNDARY)
    return reconcile(
        select_period(load_ledger(ledger), "date", start, end),
        select_period(load_processor(processor), "createTime", start, end),
        as_of="2026-12-10",
        backend=backend,
    )


def test_a_payment_recorded_after_the_boundary_is_matched_in_the_books_period(backend: Backend) -> None:
    october = period_run("2026-10-01", "2026-10-31", backend)
    assert categories(october) == {
        "OCTOBER-ONLY": {"missing_in_processor"},
        "FAR-APART": {"missing_in_processor"},
    }
    matched = set(october.matched["merchantReferenceId"])
    assert matched == {"LATE-RECORD", "INSIDE"}
    ledger, processor = october.counts
    assert ledger.adds_up and processor.adds_up
    # Processor rows left out: LATE-BOOKING (November's), NOVEMBER-ONLY and FAR-APART.
    assert processor.outside == 3 and processor.rows == 5 and processor.matched == 2
    # The processor has FAR-APART in another period: said, with its row and date.
    processor_keys = [key for key, (_, row, _) in BOUNDARY.items() if row is not None]
    assert rows(october, "FAR-APART", "missing_in_processor")["detail"] == (
        f"not at the processor in the period; processor row {processor_keys.index('FAR-APART') + 1} "
        "is dated 2026-11-20 10:00 UTC, outside it"
    )
    assert rows(october, "OCTOBER-ONLY", "missing_in_processor")["detail"] == "not found at the processor"


def test_the_next_period_does_not_report_them_again(backend: Backend) -> None:
    november = period_run("2026-11-01", "2026-11-30", backend)
    found = categories(november)
    assert "LATE-RECORD" not in found  # reconciled in October
    assert found == {"NOVEMBER-ONLY": {"missing_in_ledger"}, "FAR-APART": {"missing_in_ledger"}}
    ledger_keys = [key for key, (row, _, _) in BOUNDARY.items() if row is not None]
    assert rows(november, "FAR-APART", "missing_in_ledger")["detail"] == (
        f"not in the ledger in the period; ledger row {ledger_keys.index('FAR-APART') + 1} "
        "is dated 2026-10-02 00:00 UTC, outside it"
    )
    assert "LATE-BOOKING" in set(november.matched["merchantReferenceId"])
    assert all(c.adds_up for c in november.counts)


#: Rows that cannot be used, each dated in one period: a ledger that grows keeps its old bad row.
BAD_ROWS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None, set[str]]] = {
    "SEPTEMBER-BAD": (("2026-09-14", "12,50", "USD", "success"), None, set()),
    # A side with no usable row stops the run (issue 37): September's books have one that is.
    "SEPTEMBER-OK": (
        ("2026-09-15", "4.00", "USD", "success"),
        ("2026-09-15T10:00:00Z", "4.00", "USD", "success", "", ""),
        set(),
    ),
    "NOVEMBER-BAD": (None, ("2026-11-03T10:00:00Z", "3.00", "USD", "settled?", "", ""), set()),
}


@pytest.mark.parametrize(
    ("start", "end", "listed"),
    [
        ("2026-10-01", "2026-10-31", set()),
        ("2026-09-01", "2026-09-30", {"SEPTEMBER-BAD"}),
        ("2026-11-01", "2026-11-30", {"NOVEMBER-BAD"}),
    ],
)
def test_a_row_that_cannot_be_used_is_listed_by_the_run_of_its_own_period_only(
    start: str, end: str, listed: set[str], backend: Backend
) -> None:
    ledger, processor = sides(BOUNDARY | BAD_ROWS)
    result = reconcile(
        select_period(load_ledger(ledger), "date", start, end),
        select_period(load_processor(processor), "createTime", start, end),
        as_of="2026-12-10",
        backend=backend,
    )
    rejected = {k for k, found in categories(result).items() if "rejected_row" in found}
    assert rejected == listed
    led, pro = result.counts
    assert (led.rejected, pro.rejected) == (int("SEPTEMBER-BAD" in listed), int("NOVEMBER-BAD" in listed))
    assert led.adds_up and pro.adds_up
    if start == "2026-10-01":  # counted with the rows of other periods
        assert (led.outside, pro.outside) == (3, 5)


# ---------------------------------------------------------------------------------------------
# Reference rates

RATES = (
    "date,base,quote,rate\n"
    "2026-11-18,USD,EUR,0.92\n"
    "2026-11-18,PHP,USD,0.0178\n"  # USD -> PHP is its inverse: 1/0.0178
)
RATED: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None, set[str]]] = {
    "R-EXACT": (
        ("2026-11-18", "20.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "18.40", "EUR", "success", "", ""),
        set(),
    ),
    "R-WITHIN": (
        ("2026-11-18", "20.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "18.35", "EUR", "success", "", ""),
        {"within_tolerance"},
    ),
    "R-BEYOND": (
        ("2026-11-18", "20.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "18.00", "EUR", "success", "", ""),
        {"amount_mismatch"},
    ),
    "R-NO-RATE": (
        ("2026-11-18", "10.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "10.00", "GBP", "success", "", ""),
        {"currency_mismatch"},
    ),
    "R-NO-DAY": (
        ("2026-11-17", "10.00", "USD", "success"),
        ("2026-11-17T10:00:00Z", "9.20", "EUR", "success", "", ""),
        {"currency_mismatch"},
    ),
    "R-INVERSE": (
        ("2026-11-18", "10.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "562.00", "PHP", "success", "", ""),
        {"within_tolerance"},
    ),
    "R-PRICED": (  # a price in the ledger's currency needs no rate
        ("2026-11-18", "10.00", "USD", "success"),
        ("2026-11-18T10:00:00Z", "560.00", "PHP", "success", "10.00", "USD"),
        set(),
    ),
}


@pytest.fixture
def rates_file(tmp_path: Path) -> Path:
    path = tmp_path / "rates.csv"
    path.write_text(RATES)
    return path


def test_amounts_in_two_currencies_are_compared_at_the_days_rate(backend: Backend, rates_file: Path) -> None:
    ledger, processor = sides(RATED)
    result = reconcile(
        load_ledger(ledger),
        load_processor(processor),
        amount_tolerance="0.5%",
        fx_rates=rates_file,
        backend=backend,
    )
    assert categories(result) == {key: cats for key, (_, _, cats) in RATED.items() if cats}
    assert result.missing_rates == ("no rate for USD/EUR on 2026-11-17", "no rate for USD/GBP on 2026-11-18")
    assert "no rate for USD/GBP on 2026-11-18" in rows(result, "R-NO-RATE", "currency_mismatch")["detail"]
    beyond = rows(result, "R-BEYOND", "amount_mismatch")
    assert beyond["detail"] == (
        "ledger 20.00 USD = 18.40 EUR at 1 USD = 0.92 EUR on 2026-11-18, processor 18.00 EUR "
        "(variance 0.40 EUR, beyond tolerance); processor row 3"  # ledger minus processor, as in one currency
    )
    fx = result.fx.set_index("merchantReferenceId")
    assert list(fx.index) == ["R-BEYOND", "R-EXACT", "R-INVERSE", "R-PRICED", "R-WITHIN"]
    # Matched through its price, and shown at the rate: 10.00 USD = 561.80 PHP, charged 560.00.
    priced = fx.loc["R-PRICED"]
    assert (priced["category"], priced["variance"]) == ("matched", Decimal("-1.80"))
    inverse = fx.loc["R-INVERSE"]
    # 10.00 USD / 0.0178 = 561.797... PHP: 561.80 (half away from zero), charged 562.00.
    assert (inverse["expected_amount"], inverse["variance"]) == (Decimal("561.80"), Decimal("0.20"))
    assert fx.loc["R-EXACT", "category"] == "matched" and fx.loc["R-EXACT", "variance"] == Decimal("0.00")
    pairs = result.fx_pairs.set_index(["ledger_currency", "charged_currency"])
    assert pairs.loc[("USD", "EUR"), "variance"] == Decimal("-0.45")  # 0 - 0.05 - 0.40
    assert pairs.loc[("USD", "EUR"), "payments"] == 3
    assert pairs.loc[("USD", "PHP"), "variance"] == Decimal("-1.60")  # 0.20 - 1.80
    summary = result.summary.set_index(["category", "currency"])
    assert summary.loc[("amount_mismatch", "EUR"), "amount"] == Decimal("0.40")
    assert {"R-EXACT", "R-PRICED", "R-INVERSE", "R-WITHIN"} <= set(result.matched["merchantReferenceId"])
    assert all(c.adds_up for c in result.counts)


def test_a_match_within_tolerance_at_a_rate_shows_the_variance_the_summary_sums(rates_file: Path) -> None:
    """20.00 USD at 0.92 is 18.40 EUR, charged 18.35: the page's variance cell (ledger minus
    processor) was empty for it, while the summary's within_tolerance EUR line summed +0.05."""
    from toolkit.reconcile.render.sections import info_sections
    from toolkit.reconcile.render.words import money_text

    ledger, processor = sides({"R-WITHIN": RATED["R-WITHIN"]})
    result = reconcile(
        load_ledger(ledger), load_processor(processor), amount_tolerance="0.5%", fx_rates=rates_file
    )
    (section,) = info_sections(result, 10)
    (row,) = section.rows
    assert row[3].text == money_text(Decimal("0.05"), "EUR", signed=True)
    summary = result.summary.set_index(["category", "currency"])
    assert summary.loc[("within_tolerance", "EUR"), "amount"] == Decimal("0.05")


def test_without_rates_two_currencies_are_a_currency_mismatch() -> None:
    ledger, processor = sides(RATED)
    result = reconcile(load_ledger(ledger), load_processor(processor), amount_tolerance="0.5%")
    found = categories(result)
    assert {key for key, cats in found.items() if cats == {"currency_mismatch"}} == {
        "R-EXACT",
        "R-WITHIN",
        "R-BEYOND",
        "R-NO-RATE",
        "R-NO-DAY",
        "R-INVERSE",
    }
    assert result.fx.empty and result.missing_rates == ()


# ---------------------------------------------------------------------------------------------
# The command


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def toolkit(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Done]:
    """``toolkit reconcile ARGS`` in a folder, as a user runs it: the exit code and what it printed."""

    def run(*args: str, cwd: Path) -> Done:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(["reconcile", *args])
        out, err = capsys.readouterr()
        return Done(code, out, err)

    return run


def test_the_command_names_each_missing_rate_once_and_keeps_information_out_of_the_threshold(
    tmp_path: Path, rates_file: Path, toolkit: Callable[..., Done]
) -> None:
    ledger, processor = sides({**RATED, **{k: v for k, v in PLANTED.items() if k.startswith("TOL-")}})
    ledger.to_csv(tmp_path / "ledger.csv", index=False)
    processor.to_csv(tmp_path / "processor.csv", index=False)
    done = toolkit(
        "--ledger",
        "ledger.csv",
        "--processor",
        "processor.csv",
        "--fx-rates",
        str(rates_file),
        "--amount-tolerance",
        TOLERANCE,
        "--as-of",
        "2026-11-19",
        "--max-exceptions",
        "4",  # R-BEYOND, R-NO-RATE, R-NO-DAY, TOL-BEYOND; TOL-JPY-OUT makes it 5
        "--output-dir",
        "out",
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("no rate for USD/GBP on 2026-11-18") == 1
    assert done.stderr.count("no rate for USD/EUR on 2026-11-17") == 1
    assert "5 exceptions" in done.stderr.splitlines()[-1]
    exceptions = pd.read_csv(tmp_path / "out" / "exceptions.csv", dtype=str, keep_default_na=False)
    info = exceptions[exceptions["severity"] == "info"]
    assert sorted(info["merchantReferenceId"]) == [
        "R-INVERSE",
        "R-WITHIN",
        "TOL-FLOOR",
        "TOL-JPY-IN",
        "TOL-PERCENT",
    ]
    assert (tmp_path / "out" / "fx.csv").is_file()


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("date,base,quote,rate\n2026-11-18,USD,EUR,0.92\n2026-11-18,USD,ZZQ,1.5\n", "line 3"),
        ("date,base,quote,rate\n2026-11-18,USD,EUR,1e3\n", "line 2"),
        ("day,base,quote,rate\n2026-11-18,USD,EUR,0.92\n", "line 1"),
    ],
)
def test_a_malformed_rate_file_exits_2_naming_the_file_and_line(
    tmp_path: Path, content: str, where: str, toolkit: Callable[..., Done]
) -> None:
    ledger, processor = sides(RATED)
    ledger.to_csv(tmp_path / "ledger.csv", index=False)
    processor.to_csv(tmp_path / "processor.csv", index=False)
    (tmp_path / "rates.csv").write_text(content)
    done = toolkit(
        "--ledger", "ledger.csv", "--processor", "processor.csv", "--fx-rates", "rates.csv", cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: rates.csv, " + where), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not any(tmp_path.glob("reports/**/report.html"))


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--grace", "3 days", "--grace '3 days': write a duration"),
        ("--as-of", "yesterday", "--as-of 'yesterday': write a date"),
        ("--amount-tolerance", "5 percent", "amount tolerance term '5 percent'"),
        ("--amount-tolerance", "XYZ=5", "'XYZ' is not an ISO 4217 currency"),
    ],
)
def test_bad_rules_exit_2_in_one_line(
    tmp_path: Path, option: str, value: str, words: str, toolkit: Callable[..., Done]
) -> None:
    ledger, processor = sides(RATED)
    ledger.to_csv(tmp_path / "ledger.csv", index=False)
    processor.to_csv(tmp_path / "processor.csv", index=False)
    done = toolkit("--ledger", "ledger.csv", "--processor", "processor.csv", option, value, cwd=tmp_path)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_tolerance_given_twice_for_a_currency_is_refused() -> None:
    with pytest.raises(InputError, match="USD is given twice"):
        reconcile(*map(load_ledger, sides(PLANTED)), amount_tolerance="USD=1,USD=2")


def test_the_journals_payments_are_dated_by_when_they_were_sent() -> None:
    """The journal's payments frame has no ``createTime`` where the answer carried none: its
    ``requestTime`` dates the payment, so a pending one is in transit, and one sent after the
    cut-off (an unknown outcome too) takes no part."""
    ledger = pd.DataFrame([("J-PENDING", "2026-11-19", "5.00", "USD", "success")], columns=LEDGER_COLUMNS)
    journal = pd.DataFrame(
        [
            ("J-PENDING", "", "2026-11-19T09:00:00Z", "5.00", "USD", "pending"),
            ("J-LATE", "", "2026-11-20T09:00:00Z", "6.00", "USD", "unknown"),
            ("J-OLD", "", "2026-11-01T09:00:00Z", "6.00", "USD", "unknown"),
        ],
        columns=["merchantReferenceId", "createTime", "requestTime", "amount", "currency", "status"],
    )
    result = reconcile(load_ledger(ledger), load_processor(journal), as_of=AS_OF)
    assert categories(result) == {
        "J-PENDING": {"in_transit"},
        "J-OLD": {"missing_in_ledger", "unknown_outcome"},
    }
    assert result.counts[1].after_cutoff == 1


def test_a_rejected_rows_reasons_quote_the_texts_the_check_read() -> None:
    """A rejected row's reasons quote its dates as the check read them: the dated column trimmed,
    or its fallback where it is empty, and a period's column as written; every other problem of
    the row is said too (the check's codes, read back for the rejected rows only)."""
    ledger = pd.DataFrame(
        [
            ("L-OK", "2026-11-10", "5.00", "USD", "success"),
            ("L-BAD", "2026-11-10", "1,2,3", "ABC", "success"),
            ("L-DATE", " 2026-11-31", "5.00", "USD", "success"),
        ],
        columns=LEDGER_COLUMNS,
    )
    journal = pd.DataFrame(
        [
            ("L-OK", "2026-11-10T09:00:00Z", "", "5.00", "USD", "success"),
            ("P-FALLBACK", "", " 2026-13-45 ", "6.00", "USD", "pending"),
            ("P-OWN", "  not a time ", "2026-11-10T09:00:00Z", "7.00", "USD", "maybe"),
        ],
        columns=["merchantReferenceId", "createTime", "requestTime", "amount", "currency", "status"],
    )
    books = select_period(load_ledger(ledger), "date", "2026-11-01", "2026-11-30")
    result = reconcile(books, load_processor(journal), as_of=AS_OF)
    details = dict(zip(result.rejected["merchantReferenceId"], result.rejected["detail"], strict=True))
    assert details == {
        "L-BAD": "currency 'ABC' is not an ISO 4217 code; amount '1,2,3' is not a number",
        "L-DATE": "date '2026-11-31' is not a date or time (e.g. 2024-05-31, 31.05.2024, or epoch milliseconds)",
        "P-FALLBACK": "createTime '2026-13-45' is not a date or time "
        "(e.g. 2024-05-31, 31.05.2024, or epoch milliseconds)",
        "P-OWN": "status 'maybe' is not one of success, pending, failure, next_action, unknown or 1/2/3/5",
    }


#: key -> (ledger rows, processor rows, the categories the key must have): keys repeated on a side.
REPEATS: dict[str, tuple[list[tuple[str, str, str]], list[tuple[str, str, str]], set[str]]] = {
    # A failed attempt, then the payment that went through: charged once, matched.
    "RETRY": (
        [("10.00", "USD", "success")],
        [("10.00", "USD", "failure"), ("10.00", "USD", "success")],
        set(),
    ),
    "RETRY-BOOKED": (
        [("10.00", "USD", "failure"), ("10.00", "USD", "success")],
        [("10.00", "USD", "success")],
        set(),
    ),
    # Charged twice, once for the right amount: a double charge, and no amount difference besides.
    "MOVED": (
        [("30.00", "USD", "success")],
        [("31.00", "USD", "success"), ("30.00", "USD", "success")],
        {"duplicate_in_processor"},
    ),
    "TWICE": (
        [("20.00", "USD", "success")],
        [("20.00", "USD", "success"), ("20.00", "USD", "success")],
        {"duplicate_in_processor"},
    ),
    # Failed twice while the books say paid: a status difference, no double charge.
    "FAILED-TWICE": (
        [("5.00", "USD", "success")],
        [("5.00", "USD", "failure"), ("5.00", "USD", "failure")],
        {"status_mismatch"},
    ),
    "CROSSED": (
        [("10.00", "USD", "success"), ("12.00", "USD", "success")],
        [("12.00", "USD", "success"), ("10.00", "USD", "success")],
        {"duplicate_in_ledger", "duplicate_in_processor"},
    ),
}


@pytest.fixture(scope="module")
def repeats(backend: Backend) -> ReconciliationResult:
    columns = ["merchantReferenceId", "amount", "currency", "status"]
    ledger = [(key, *row) for key, (rows, _, _) in REPEATS.items() for row in rows]
    processor = [(key, *row) for key, (_, rows, _) in REPEATS.items() for row in rows]
    return reconcile(
        load_ledger(pd.DataFrame(ledger, columns=columns)),
        load_processor(pd.DataFrame(processor, columns=columns)),
        backend=backend,
    )


def test_a_repeated_key_is_compared_on_its_row_that_agrees_and_failed_attempts_are_no_double_charge(
    repeats: ReconciliationResult,
) -> None:
    """A failed attempt and its retry were a double charge (refund advised) and a status mismatch;
    a double charge with one right amount was an amount mismatch too."""
    assert categories(repeats) == {key: cats for key, (_, _, cats) in REPEATS.items() if cats}
    matched = repeats.matched.set_index("merchantReferenceId")
    assert sorted(matched.index) == ["RETRY", "RETRY-BOOKED"]
    assert matched.loc["RETRY", "processor_row"] == 2  # the payment that went through
    assert matched.loc["RETRY-BOOKED", "ledger_row"] == 3  # its row 2 is the failed attempt
    assert repeats.matched_count == 2
    summary = repeats.summary.set_index("category")
    assert summary.loc["matched", "count"] == 2 and summary.loc["matched", "amount"] == Decimal("20.00")
    ledger, processor = repeats.counts
    assert all(c.adds_up for c in repeats.counts)
    assert (ledger.matched, processor.matched) == (3, 3)  # each repeat's rows go with their key


def test_a_double_charge_shows_the_extra_row_and_every_rows_amount_when_they_differ(
    repeats: ReconciliationResult,
) -> None:
    moved = rows(repeats, "MOVED", "duplicate_in_processor")
    assert moved["processor_amount"] == Decimal("31.00") and moved["source_row"] == 4
    assert (
        moved["detail"]
        == "appears 2 times in the processor (rows 4: 31.00 USD success, 5: 30.00 USD success)"
    )
    twice = rows(repeats, "TWICE", "duplicate_in_processor")
    assert (twice["source_row"], twice["detail"]) == (7, "appears 2 times in the processor (rows 6, 7)")
    crossed = rows(repeats, "CROSSED", "duplicate_in_ledger")
    assert crossed["ledger_amount"] == Decimal("12.00")  # the ledger compared its 10.00 with the processor's


def test_at_risk_is_unsigned_a_triple_charge_risks_both_extras_and_pending_is_not_also_within_tolerance(
    backend: Backend,
) -> None:
    """A refund missing at the processor cancelled the charge missing there (at risk 0.00); a
    payment charged three times put one payment at risk; a pending payment inside the window
    with a variance within tolerance was both in transit and a variance to post."""
    columns = ["merchantReferenceId", "date", "amount", "currency", "status"]
    ledger = [
        ("SALE", "2026-11-10", "25.00", "USD", "success"),
        ("SALE-REFUND", "2026-11-12", "-25.00", "USD", "success"),
        ("THRICE", "2026-11-10", "10.00", "USD", "success"),
        ("PENDING", "2026-11-18", "100.00", "USD", "success"),
    ]
    processor = [
        ("THRICE", "2026-11-10T10:00:00Z", "10.00", "USD", "success"),
        ("THRICE", "2026-11-10T10:00:01Z", "10.00", "USD", "success"),
        ("THRICE", "2026-11-10T10:00:02Z", "10.00", "USD", "success"),
        ("PENDING", "2026-11-18T12:00:00Z", "100.40", "USD", "pending"),
    ]
    result = reconcile(
        load_ledger(pd.DataFrame(ledger, columns=columns)),
        load_processor(pd.DataFrame(processor, columns=[*columns[:1], "createTime", *columns[2:]])),
        amount_tolerance="0.5%",
        as_of=AS_OF,
        backend=backend,
    )
    assert categories(result) == {
        "SALE": {"missing_in_processor"},
        "SALE-REFUND": {"missing_in_processor"},
        "THRICE": {"duplicate_in_processor"},
        "PENDING": {"in_transit"},
    }
    summary = result.summary.set_index("category")
    missing = summary.loc["missing_in_processor"]
    assert missing["count"] == 2 and missing["amount"] == Decimal("50.00")  # it was 0.00
    assert summary.loc["duplicate_in_processor", "amount"] == Decimal("20.00")  # two extra charges
    assert "within_tolerance" not in summary.index
