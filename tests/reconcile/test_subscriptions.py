"""Subscription checks: each planted problem found once, nothing else."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pandas as pd

from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import load_subscription_ledger, reconcile_subscriptions, write_report

LEDGER = pd.DataFrame(
    [
        ("s-ok", "m1", "p1", "2", "20.00", "USD", "active"),
        ("s-trial", "m2", "p1", "1", "10", "USD", "active"),
        ("s-missing", "m3", "p1", "1", "10.00", "USD", "active"),
        ("s-price", "m4", "p1", "1", "10.00", "USD", "active"),
        ("s-qty", "m5", "p1", "1", "10.00", "USD", "active"),
        ("s-amount", "m6", "p1", "1", "1200", "JPY", "active"),
        ("s-state", "m7", "p1", "1", "10.00", "USD", "active"),
        ("s-canceled", "m8", "p1", "1", "10.00", "USD", "canceled"),
        ("s-bad", "m9", "p1", "one", "10.00", "USD", "active"),
    ],
    columns=["subscriptionId", "merchantReferenceId", "priceId", "quantity", "amount", "currency", "state"],
)
PROCESSOR = (
    pd.DataFrame(
        [
            ("m1", "s-ok", "p1", 2, "active", Decimal("20.0"), "USD"),
            ("m2", "s-trial", "p1", 1, "trialing", Decimal("10.00"), None),
            ("m4", "s-price", "p2", 1, "active", Decimal("10.00"), "USD"),
            ("m5", "s-qty", "p1", 3, "active", Decimal("10.00"), "USD"),
            ("m6", "s-amount", "p1", 1, "active", Decimal("1300"), "JPY"),
            ("m7", "s-state", "p1", 1, "canceled", None, "USD"),
            ("m8", "s-canceled", "p1", 1, "canceled", None, "USD"),
            ("m10", "s-extra", "p1", 1, "active", Decimal("5.00"), "USD"),
        ],
        columns=[
            "merchantReferenceId",
            "subscriptionId",
            "priceId",
            "quantity",
            "state",
            "upcomingInvoiceAmount",
            "currency",
        ],
    )
    .set_index("merchantReferenceId")
    .astype({"quantity": "Int64"})
)


def test_subscription_checks() -> None:
    result = reconcile_subscriptions(load_subscription_ledger(LEDGER), PROCESSOR)
    found = sorted(
        zip(
            result.exceptions["detail"].str.split(":").str[0],
            result.exceptions["category"].astype(str),
            strict=True,
        )
    )
    assert found == sorted(
        [
            ("subscription s-missing", "subscription_missing"),
            ("subscription s-extra", "subscription_missing"),
            ("subscription s-price", "subscription_price_mismatch"),
            ("subscription s-qty", "subscription_quantity_mismatch"),
            ("subscription s-amount", "subscription_amount_mismatch"),
            ("subscription s-state", "subscription_state_mismatch"),
            ("quantity 'one' is not a whole number", "rejected_row"),
        ]
    )
    assert sorted(result.matched["subscriptionId"]) == ["s-canceled", "s-ok", "s-trial"]
    (counts,) = result.counts
    assert counts.adds_up and counts.rows == 9 and counts.rejected == 1
    summary = result.summary.set_index(["category", "currency"])
    assert summary.loc[("subscription_amount_mismatch", "JPY"), "amount"] == Decimal(100)


def test_merged_with_payments() -> None:
    payments = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    subs = reconcile_subscriptions(load_subscription_ledger(LEDGER), PROCESSOR)
    both = payments.merged(subs)
    assert both.exception_count == payments.exception_count + subs.exception_count
    assert both.category_counts["subscription_state_mismatch"] == 1
    assert len(both.counts) == 3


def test_merged_with_checks_that_found_nothing_keeps_whole_counts(tmp_path: Path) -> None:
    """Subscription checks with no row to show have an empty summary; merged, the payments'
    counts stay whole numbers in the summary, summary.csv and the notebook view (not 1.0)."""
    payments = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    clean = reconcile_subscriptions(load_subscription_ledger(LEDGER.iloc[:0]), PROCESSOR.iloc[:0])
    both = payments.merged(clean)
    assert both.summary["count"].tolist() == payments.summary["count"].tolist()
    assert str(both.summary["count"].dtype) == "int64"
    written = write_report(both, tmp_path, environment="tests")
    counts = pd.read_csv(written["summary.csv"], dtype=str)["count"].tolist()
    assert counts == [str(n) for n in payments.summary["count"]]
    assert "<td>1.0</td>" not in both._repr_html_()


def test_merged_rejected_rows_are_one_line_of_the_summary(tmp_path: Path) -> None:
    """Rejected rows of payments (4) and of subscriptions (1) merged are one ``rejected_row``
    line of 5 in the summary and summary.csv, as in a result of either; no line is repeated."""
    payments = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    subs = reconcile_subscriptions(load_subscription_ledger(LEDGER), PROCESSOR)
    both = payments.merged(subs)
    lines = both.summary.set_index(["category", "currency"])
    assert lines.index.is_unique
    assert lines.loc[("rejected_row", ""), "count"] == 5
    assert both.summary["count"].sum() == payments.summary["count"].sum() + subs.summary["count"].sum()
    written = pd.read_csv(write_report(both, tmp_path, environment="tests")["summary.csv"], dtype=str)
    assert written["category"].tolist().count("rejected_row") == 1
