"""Reconciliation: load a ledger and a processor side, compare them exactly, report the exceptions.

load_ledger / load_processor / load_subscription_ledger  ->  LoadedInput
select_period(loaded, column, start, end)                 ->  LoadedInput (outside counted)
reconcile(ledger, processor)                              ->  ReconciliationResult
reconcile_subscriptions(sub_ledger, subscriptions)        ->  ReconciliationResult
write_report(result, output_dir)                          ->  report.html, report.xlsx, ...
"""

from toolkit.reconcile.engine import reconcile
from toolkit.reconcile.inputs import (
    LoadedInput,
    load_ledger,
    load_processor,
    load_subscription_ledger,
    select_period,
)
from toolkit.reconcile.report import render_html, summary_text, write_report
from toolkit.reconcile.result import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    PAYMENT_CATEGORIES,
    SUBSCRIPTION_CATEGORIES,
    SUMMARY_COLUMNS,
    ReconciliationResult,
    RowCounts,
    SideTotal,
)
from toolkit.reconcile.subscriptions import reconcile_subscriptions

__all__ = [
    "CATEGORIES",
    "EXCEPTION_COLUMNS",
    "PAYMENT_CATEGORIES",
    "SUBSCRIPTION_CATEGORIES",
    "SUMMARY_COLUMNS",
    "LoadedInput",
    "ReconciliationResult",
    "RowCounts",
    "SideTotal",
    "load_ledger",
    "load_processor",
    "load_subscription_ledger",
    "reconcile",
    "reconcile_subscriptions",
    "render_html",
    "select_period",
    "summary_text",
    "write_report",
]
