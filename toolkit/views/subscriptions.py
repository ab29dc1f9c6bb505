"""The subscription checks of a notebook: its subscription ledger against the API's subscriptions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from toolkit.reconcile.result import ReconciliationResult


def subscription_checks(
    subscriptions_ledger_path: str | Path | None,
) -> tuple[ReconciliationResult, pd.DataFrame] | None:
    """Check the subscription ledger against the subscriptions read through the API.

    Returns the result and the subscriptions frame, or None when no ledger is given.
    """
    if subscriptions_ledger_path is None or not str(subscriptions_ledger_path).strip():
        return None
    from toolkit.bulk import load_subscriptions
    from toolkit.reconcile import load_subscription_ledger, reconcile_subscriptions

    ledger = load_subscription_ledger(str(subscriptions_ledger_path))
    ids = [str(i) for i in ledger.frame["subscriptionId"]] if len(ledger.frame) else []
    loaded = load_subscriptions(ids, progress=False)
    return reconcile_subscriptions(ledger, loaded.frame), loaded.frame
