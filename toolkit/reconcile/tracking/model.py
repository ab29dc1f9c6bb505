"""What a tracked run adds to its result (``Tracking``), the history and sign-offs of a track as
frames, and the thresholds a tracked run is held to.

The age buckets (0-1, 2-7, 8-30, over 30 days) count the unacknowledged exceptions (``new`` and
``open``), those ``--max-exceptions`` counts and ``--max-age`` checks; acknowledged ones are counted
beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toolkit.errors import InputError, NotebookFailure, TrackError
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import CATEGORIES
from toolkit.reconcile.schema import TRACKING_COLUMNS as TRACKING_COLUMNS  # its home before
from toolkit.reconcile.tracking.states import STATES
from toolkit.reconcile.tracking.store import (
    HISTORY_COLUMNS,
    SIGNOFF_COLUMNS,
    history_rows,
    signoff_rows,
    utc_text,
)

#: Age buckets of unacknowledged exceptions: (label, lowest age, highest age) in whole days.
AGE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0-1 days", 0, 1),
    ("2-7 days", 2, 7),
    ("8-30 days", 8, 30),
    ("over 30 days", 31, None),
)


@dataclass(frozen=True)
class Tracking:
    """What a tracked run adds to its ``ReconciliationResult`` (``result.tracking``).

    The states of the run's exceptions are columns of ``result.exceptions`` (``TRACKING_COLUMNS``);
    ``resolved`` lists the previous run's exceptions that are gone (``RESOLVED_COLUMNS``).
    """

    track: str
    run: int
    as_of: datetime
    previous_run: int | None
    exceptions: pd.DataFrame = field(repr=False)
    resolved: pd.DataFrame = field(repr=False)
    inputs: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    rerun_of: int | None = None
    #: The audit log's head once this run is recorded (``audit.Head.text``), for the report and
    #: run.json: what ``verify --against`` checks the store still holds.
    audit_head: str = ""

    @property
    def as_of_text(self) -> str:
        """The run's cut-off as UTC text, as it is stored and shown."""
        return utc_text(self.as_of)

    def state_counts(self) -> dict[str, int]:
        """Exceptions per state, ``resolved`` included."""
        counts = self.exceptions["state"].value_counts()
        out = {state: int(counts.get(state, 0)) for state in STATES}
        out["resolved"] = len(self.resolved)
        return out

    @property
    def unacknowledged_count(self) -> int:
        """``new`` and ``open`` exceptions: those a threshold counts."""
        return int(self.exceptions["state"].isin(("new", "open")).sum())

    @property
    def oldest_unacknowledged(self) -> int | None:
        """The age in days of the oldest ``new`` or ``open`` exception (None when there is none)."""
        ages = self.exceptions.loc[self.exceptions["state"] != "acknowledged", "ageDays"]
        return int(ages.max()) if len(ages) else None

    def states(self) -> pd.DataFrame:
        """new / open / acknowledged / resolved per category (categories with any, report order)."""
        rows = []
        current = self.exceptions.groupby(["category", "state"], observed=True).size()
        resolved = self.resolved["category"].value_counts()
        for category in CATEGORIES:
            row = {s: int(current.get((category, s), 0)) for s in STATES}
            row["resolved"] = int(resolved.get(category, 0))
            if any(row.values()):
                rows.append({"category": category, **row})
        return pd.DataFrame(rows, columns=["category", *STATES, "resolved"]).astype(
            {s: "int64" for s in (*STATES, "resolved")}
        )

    def age_buckets(self) -> pd.DataFrame:
        """Exceptions by age: ``unacknowledged`` (new and open) and ``acknowledged``, per bucket."""
        frame = self.exceptions
        acknowledged = frame["state"] == "acknowledged"
        ages = frame["ageDays"].to_numpy(dtype=np.int64)
        rows = []
        for label, low, high in AGE_BUCKETS:
            inside = (ages >= low) & (ages <= (high if high is not None else np.iinfo(np.int64).max))
            rows.append((label, int((inside & ~acknowledged).sum()), int((inside & acknowledged).sum())))
        return pd.DataFrame(rows, columns=["age", "unacknowledged", "acknowledged"])

    def summary_text(self) -> str:
        """For the terminal: the run, states per category, and unacknowledged exceptions by age."""
        counts = self.state_counts()
        previous = f"previous run {self.previous_run}" if self.previous_run else "first run of the track"
        rerun = f"; a re-run of run {self.rerun_of}'s cut-off" if self.rerun_of else ""
        lines = [
            f"track {self.track}: run {self.run} as of {self.as_of_text} ({previous}{rerun}): "
            + ", ".join(f"{counts[s]:,} {s}" for s in (*STATES, "resolved"))
        ]
        states = self.states()
        if len(states):
            lines.append(states.to_string(index=False))
        lines.append(
            "unacknowledged by age: "
            + ", ".join(f"{r.age}: {r.unacknowledged:,}" for r in self.age_buckets().itertuples())
        )
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# History and sign-offs, as frames


def history(track: str, *, home: str | Path | None = None) -> pd.DataFrame:
    """The track's runs, oldest first, with their counts (``HISTORY_COLUMNS``); verified first."""
    return pd.DataFrame(history_rows(track, home=home), columns=list(HISTORY_COLUMNS))


def signoffs(track: str, *, home: str | Path | None = None) -> pd.DataFrame:
    """Every acknowledgement and reopening of the track, oldest first, one row per exception, with
    its category and key as in the run it was signed on, and every run voided
    (``SIGNOFF_COLUMNS``); verified first."""
    return pd.DataFrame(signoff_rows(track, home=home), columns=list(SIGNOFF_COLUMNS))


# ---------------------------------------------------------------------------------------------
# Thresholds


def findings(
    result: ReconciliationResult, max_exceptions: int | None, max_age: int | None = None
) -> str | None:
    """Why the run fails (exit 1), or None: more than ``max_exceptions`` exceptions (only ``new``
    and ``open`` ones when tracked), or an unacknowledged exception older than ``max_age`` days."""
    tracking = result.tracking
    reasons = []
    if max_exceptions is not None and max_exceptions >= 0:
        counted = tracking.unacknowledged_count if tracking is not None else result.exception_count
        if counted > max_exceptions:
            what = "new or open exceptions" if tracking is not None else "exceptions"
            reasons.append(f"{counted} {what}, more than max-exceptions {max_exceptions}")
    if max_age is not None and max_age >= 0 and tracking is not None:
        oldest = tracking.oldest_unacknowledged
        if oldest is not None and oldest > max_age:
            older = int(
                (tracking.exceptions.loc[lambda f: f["state"] != "acknowledged", "ageDays"] > max_age).sum()
            )
            reasons.append(
                f"{older} unacknowledged exception(s) older than max-age {max_age} days (oldest {oldest})"
            )
    return "; ".join(reasons) or None


def check_tracked_threshold(
    result: ReconciliationResult, max_exceptions: int | None, max_age: int | None
) -> str:
    """For the notebook's result line: the tracked counts, or ``NotebookFailure`` (exit 1) when
    ``findings`` says the run fails (-1 or None: no threshold)."""
    tracking = result.tracking
    if tracking is None:
        raise TrackError("check_tracked_threshold needs a tracked result (track_result)")
    nothing = result.nothing_compared
    limited = any(value is not None and value >= 0 for value in (max_exceptions, max_age))
    if nothing is not None and limited:
        raise InputError(f"{nothing}: a threshold cannot pass a run that compared nothing")
    counts = tracking.state_counts()
    found = (
        f"{result.exception_count} exceptions ({counts['new']} new, {counts['open']} open, "
        f"{counts['acknowledged']} acknowledged; {counts['resolved']} resolved), "
        f"track {tracking.track} run {tracking.run}"
    )
    failed = findings(result, max_exceptions, max_age)
    if failed is not None:
        raise NotebookFailure(f"{found}: {failed}")
    limits = [
        f"{name}={value}"
        for name, value in (("max_exceptions", max_exceptions), ("max_age", max_age))
        if value is not None and value >= 0
    ]
    return f"{found}, " + (f"within {', '.join(limits)}" if limits else "no threshold set")
