"""The exceptions threshold: where a reconciliation notebook fails on its merits (exit code 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.errors import InputError, NotebookFailure

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult


def check_threshold(result: ReconciliationResult, max_exceptions: int | None) -> str:
    """Raise ``NotebookFailure`` when exceptions exceed ``max_exceptions`` (-1 or None: no
    threshold), and ``InputError`` (exit 2) when a threshold is set and nothing was compared."""
    nothing = result.nothing_compared
    if nothing is not None and max_exceptions is not None and int(max_exceptions) >= 0:
        raise InputError(
            f"{nothing}; max_exceptions={max_exceptions} cannot pass a run that compared nothing"
        )
    count = int(result.exception_count)
    rejected = sum(c.rejected for c in result.counts)
    found = f"{count:,} exceptions" + (f" ({rejected:,} rejected row(s))" if rejected else "")
    if max_exceptions is None or int(max_exceptions) < 0:
        return f"{found}, no threshold set"
    if count > int(max_exceptions):
        raise NotebookFailure(f"{found}, more than max_exceptions={max_exceptions}")
    return f"{found}, within max_exceptions={max_exceptions}"
