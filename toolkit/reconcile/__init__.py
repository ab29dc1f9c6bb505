"""Reconciliation: load a ledger and a processor side, compare them exactly, report the exceptions.

load_ledger / load_processor / load_subscription_ledger  ->  LoadedInput
select_period(loaded, column, start, end)                 ->  LoadedInput (outside counted)
reconcile(ledger, processor, as_of=, grace=, fx_rates=)   ->  ReconciliationResult (cut-off, FX)
load_rates(path) / Tolerance.parse(text)                  ->  reference rates, amount tolerances
track_result(result, track) / acknowledge / reopen        ->  a tracked run, sign-offs (tracking.py)
with recording(result, track) as tracked: write_report(..) ->  recorded only if the report is written
verify_track(track) / track_history(track)                ->  the audit log checked, the runs
track_signoffs(track)                                     ->  who acknowledged or reopened what, when, why
reconcile_subscriptions(sub_ledger, subscriptions)        ->  ReconciliationResult
write_report(result, output_dir)                          ->  report.html, report.xlsx, ...
"""

from toolkit.reconcile.fx import Rates, load_rates
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
    FX_COLUMNS,
    INFO_CATEGORIES,
    PAYMENT_CATEGORIES,
    SUBSCRIPTION_CATEGORIES,
    SUMMARY_COLUMNS,
    ReconciliationResult,
    RowCounts,
    SideTotal,
)
from toolkit.reconcile.subscriptions import reconcile_subscriptions
from toolkit.reconcile.tolerance import Tolerance
from toolkit.reconcile.tracked import reconcile
from toolkit.reconcile.tracking import (
    RESOLVED_COLUMNS,
    TRACKING_COLUMNS,
    Tracking,
    acknowledge,
    findings,
    recording,
    reopen,
    track_result,
)
from toolkit.reconcile.tracking import history as track_history
from toolkit.reconcile.tracking import signoffs as track_signoffs
from toolkit.reconcile.tracking import verify as verify_track

__all__ = [
    "CATEGORIES",
    "EXCEPTION_COLUMNS",
    "FX_COLUMNS",
    "INFO_CATEGORIES",
    "PAYMENT_CATEGORIES",
    "RESOLVED_COLUMNS",
    "SUBSCRIPTION_CATEGORIES",
    "SUMMARY_COLUMNS",
    "TRACKING_COLUMNS",
    "LoadedInput",
    "Rates",
    "ReconciliationResult",
    "RowCounts",
    "SideTotal",
    "Tolerance",
    "Tracking",
    "acknowledge",
    "findings",
    "load_ledger",
    "load_processor",
    "load_rates",
    "load_subscription_ledger",
    "reconcile",
    "reconcile_subscriptions",
    "recording",
    "render_html",
    "reopen",
    "select_period",
    "summary_text",
    "track_history",
    "track_result",
    "track_signoffs",
    "verify_track",
    "write_report",
]
