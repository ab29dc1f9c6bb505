"""The period filter of a reconciliation's inputs: only the rows dated inside [start, end].

The notebook, the command and the report reconcile one period at a time; rows outside it are
counted, not dropped, so rows in = usable + rejected + outside still holds.
"""

from __future__ import annotations

from toolkit.reconcile.inputs import LoadedInput, select_period


def restrict_period(
    loaded: LoadedInput, column: str, period_start: str | None, period_end: str | None
) -> LoadedInput:
    """Keep the rows of a loaded side whose ``column`` falls in [period_start, period_end] (days, UTC).

    Returns a new ``LoadedInput``: rows whose date cannot be read are rejected with the reason, rows
    outside the period are counted in ``.outside`` and shown by the notebook and the reports. Empty
    or missing bounds leave that side open; no bounds at all: the input as it is.
    """
    return select_period(loaded, column, period_start, period_end)
