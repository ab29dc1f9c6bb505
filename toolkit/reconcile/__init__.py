"""Reconciliation: load a ledger and a processor side, compare them exactly, report the exceptions.

load_ledger / load_processor / load_subscription_ledger  ->  LoadedInput
select_period(loaded, column, start, end)                 ->  LoadedInput (outside counted)
reconcile(ledger, processor, as_of=, grace=, fx_rates=)   ->  ReconciliationResult (cut-off, FX)
load_rates(path) / Tolerance.parse(text)                  ->  reference rates, amount tolerances
track_result(result, track) / acknowledge / reopen        ->  a tracked run, sign-offs (tracking/)
with recording(result, track) as tracked: write_report(..) ->  recorded only if the report is written
verify_track(track) / track_history(track)                ->  the audit log checked, the runs
track_signoffs(track)                                     ->  who acknowledged or reopened what, when, why
reconcile_subscriptions(sub_ledger, subscriptions)        ->  ReconciliationResult
write_report(result, output_dir)                          ->  report.html, report.xlsx, ...

Names are imported on first use (as in ``toolkit``), so a command that only reads a track's audit
log (``toolkit reconcile verify``) loads neither the engine, pandas nor DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_names

#: Each public name: (its module under toolkit.reconcile, its name there).
_EXPORTS: dict[str, tuple[str, str]] = {
    "Rates": ("fx", "Rates"),
    "load_rates": ("fx", "load_rates"),
    "LoadedInput": ("inputs", "LoadedInput"),
    "load_ledger": ("inputs", "load_ledger"),
    "load_processor": ("inputs", "load_processor"),
    "load_subscription_ledger": ("inputs", "load_subscription_ledger"),
    "select_period": ("period", "select_period"),
    "render_html": ("render.page", "render_html"),
    "summary_text": ("render.report", "summary_text"),
    "write_report": ("render.report", "write_report"),
    "CATEGORIES": ("schema", "CATEGORIES"),
    "EXCEPTION_COLUMNS": ("schema", "EXCEPTION_COLUMNS"),
    "FX_COLUMNS": ("schema", "FX_COLUMNS"),
    "INFO_CATEGORIES": ("schema", "INFO_CATEGORIES"),
    "PAYMENT_CATEGORIES": ("schema", "PAYMENT_CATEGORIES"),
    "SUBSCRIPTION_CATEGORIES": ("schema", "SUBSCRIPTION_CATEGORIES"),
    "SUMMARY_COLUMNS": ("schema", "SUMMARY_COLUMNS"),
    "ReconciliationResult": ("result", "ReconciliationResult"),
    "RowCounts": ("result", "RowCounts"),
    "SideTotal": ("result", "SideTotal"),
    "reconcile_subscriptions": ("subscriptions", "reconcile_subscriptions"),
    "Tolerance": ("tolerance", "Tolerance"),
    "reconcile": ("tracked", "reconcile"),
    "RESOLVED_COLUMNS": ("tracking.states", "RESOLVED_COLUMNS"),
    "TRACKING_COLUMNS": ("schema", "TRACKING_COLUMNS"),
    "Tracking": ("tracking.model", "Tracking"),
    "acknowledge": ("tracking.signing", "acknowledge"),
    "findings": ("tracking.model", "findings"),
    "recording": ("tracking.record", "recording"),
    "reopen": ("tracking.signing", "reopen"),
    "track_result": ("tracking.record", "track_result"),
    "track_history": ("tracking.model", "history"),
    "track_signoffs": ("tracking.model", "signoffs"),
    "verify_track": ("tracking.store", "verify"),
}


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from toolkit.reconcile.fx import (
        Rates,
        load_rates,
    )
    from toolkit.reconcile.inputs import (
        LoadedInput,
        load_ledger,
        load_processor,
        load_subscription_ledger,
    )
    from toolkit.reconcile.period import select_period
    from toolkit.reconcile.render.page import render_html
    from toolkit.reconcile.render.report import summary_text, write_report
    from toolkit.reconcile.result import (
        ReconciliationResult,
        RowCounts,
        SideTotal,
    )
    from toolkit.reconcile.schema import (
        CATEGORIES,
        EXCEPTION_COLUMNS,
        FX_COLUMNS,
        INFO_CATEGORIES,
        PAYMENT_CATEGORIES,
        SUBSCRIPTION_CATEGORIES,
        SUMMARY_COLUMNS,
        TRACKING_COLUMNS,
    )
    from toolkit.reconcile.subscriptions import (
        reconcile_subscriptions,
    )
    from toolkit.reconcile.tolerance import (
        Tolerance,
    )
    from toolkit.reconcile.tracked import (
        reconcile,
    )
    from toolkit.reconcile.tracking.model import Tracking, findings
    from toolkit.reconcile.tracking.model import history as track_history
    from toolkit.reconcile.tracking.model import signoffs as track_signoffs
    from toolkit.reconcile.tracking.record import recording, track_result
    from toolkit.reconcile.tracking.signing import acknowledge, reopen
    from toolkit.reconcile.tracking.states import RESOLVED_COLUMNS
    from toolkit.reconcile.tracking.store import verify as verify_track

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
