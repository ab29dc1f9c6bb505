"""The period of a reconciliation: only the rows dated inside [start, end], whole days in UTC.

The notebook, the command and the report reconcile one period at a time; rows outside it are
counted, not dropped, so rows in = usable + rejected + outside still holds. The rows are selected
by the checks (``inputs/checks.py``); this module holds what a period is, so the audit log reads it
without loading them.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from toolkit.errors import InputError

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput


@dataclass(frozen=True)
class Period:
    """Rows whose ``column`` falls in [start, end], whole days in UTC (either bound optional)."""

    column: str
    start: str
    end: str


def period_seconds(period: Period) -> tuple[int | None, int | None]:
    """The period as [lower, upper) in epoch seconds (None: open on that side)."""
    lower, upper = period_bounds(period.start, period.end)
    return (
        None if lower is None else int(lower.timestamp()),
        None if upper is None else int(upper.timestamp()),
    )


def period_bounds(start: str, end: str) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """[start, day after end) in UTC; whole days, so ``end`` is inclusive."""
    try:
        lower = pd.Timestamp(start, tz="UTC") if start else None
        upper = pd.Timestamp(end, tz="UTC").normalize() + pd.Timedelta(days=1) if end else None
    except ValueError as exc:
        raise InputError(f"period_start/period_end must be dates like 2024-05-31 ({exc})") from None
    if (lower is not None and pd.isna(lower)) or (upper is not None and pd.isna(upper)):
        raise InputError("period_start/period_end must be dates like 2024-05-31")
    if lower is not None and upper is not None and lower >= upper:  # every row would be outside it
        raise InputError(f"period_start {start} is after period_end {end}: no day is in the period")
    return lower, upper


def select_period(loaded: LoadedInput, column: str, start: str | None, end: str | None) -> LoadedInput:
    """``loaded`` with only the rows whose ``column`` falls in [start, end] (whole days, UTC).

    A usable row whose date is empty or cannot be read (ISO 8601 dates and times, or epoch
    milliseconds) cannot be placed in or out of the period: it is rejected with the reason.
    Rows dated outside the period are counted in ``outside``, those that cannot be used too (the
    run of their own period lists them). No bounds: ``loaded`` as it is.
    """
    first, last = str(start or "").strip(), str(end or "").strip()
    if not first and not last:
        return loaded
    period_bounds(first, last)
    columns = {canonical for _, canonical in loaded.renames} | (
        set(loaded.described.columns) - {own for own, _ in loaded.renames}
    )
    if column not in columns:
        raise InputError(
            f"{loaded.source}: no {column!r} column to select the period "
            f"{first or '...'} to {last or '...'} by"
        )
    if loaded.period is not None:
        raise InputError(f"{loaded.source}: a period is already selected")
    return dataclasses.replace(loaded, period=Period(column, first, last))


def restrict_period(
    loaded: LoadedInput, column: str, period_start: str | None, period_end: str | None
) -> LoadedInput:
    """Deprecated: ``select_period``, under the name it had first (it goes in the next release)."""
    warnings.warn(
        "toolkit.reconcile.period.restrict_period is deprecated: use toolkit.reconcile.select_period",
        DeprecationWarning,
        stacklevel=2,
    )
    return select_period(loaded, column, period_start, period_end)
