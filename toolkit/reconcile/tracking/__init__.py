"""Tracked reconciliations: runs of a named track, the lifecycle of each exception, sign-offs, audit.

A track is a named series of reconciliation runs (``toolkit reconcile --track NAME``,
``reconcile(..., track=NAME)``, ``track_result(result, NAME)``): each run is recorded in the
track's history, and each of its exceptions gets a stable ``exceptionId`` and a state, ``new``,
``open`` or ``acknowledged`` (those of the previous run that are gone are ``resolved``), with its
age, so that a person acknowledges an exception once and is told when its facts change.

* ``store.py``: the audit log every track is kept in, one hash-chained SQLite table
  (``Store``, ``verify``, ``history_rows``, ``signoff_rows``), and why SQLite;
* ``signing.py``: ``acknowledge``, ``reopen`` and ``void_run``, entries of the log;
* ``states.py``: an exception's id, its facts and its state across runs (the rules of each state);
* ``record.py``: ``recording`` and ``track_result``, a run recorded, and the checks that refuse
  one (``check_can_run``); the cut-off and the previous run;
* ``model.py``: ``Tracking``, what a tracked run adds to its result, the history and sign-offs as
  frames, and the thresholds (``findings``, ``check_tracked_threshold``).

``store.py`` and ``signing.py`` import neither pandas nor the engine, and no module here imports
the engine (``tests/test_import_graph.py``). Names are imported on first use, as in
``toolkit.reconcile``, so the commands that only read or sign the log load no pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_names

#: Each public name: (its module under toolkit.reconcile.tracking, its name there).
_EXPORTS: dict[str, tuple[str, str]] = {
    "AGE_BUCKETS": ("model", "AGE_BUCKETS"),
    "TRACKING_COLUMNS": ("model", "TRACKING_COLUMNS"),
    "Tracking": ("model", "Tracking"),
    "check_tracked_threshold": ("model", "check_tracked_threshold"),
    "findings": ("model", "findings"),
    "history": ("model", "history"),
    "signoffs": ("model", "signoffs"),
    "check_can_run": ("record", "check_can_run"),
    "parse_as_of": ("record", "parse_as_of"),
    "recording": ("record", "recording"),
    "track_result": ("record", "track_result"),
    "tracked_rows": ("record", "tracked_rows"),
    "acknowledge": ("signing", "acknowledge"),
    "reopen": ("signing", "reopen"),
    "void_run": ("signing", "void_run"),
    "FACT_COLUMNS": ("states", "FACT_COLUMNS"),
    "MORE_FACTS": ("states", "MORE_FACTS"),
    "RESOLVED_COLUMNS": ("states", "RESOLVED_COLUMNS"),
    "STATES": ("states", "STATES"),
    "age_days": ("states", "age_days"),
    "exception_ids": ("states", "exception_ids"),
    "verify": ("store", "verify"),
}


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from toolkit.reconcile.tracking.model import (
        AGE_BUCKETS,
        TRACKING_COLUMNS,
        Tracking,
        check_tracked_threshold,
        findings,
        history,
        signoffs,
    )
    from toolkit.reconcile.tracking.record import (
        check_can_run,
        parse_as_of,
        recording,
        track_result,
        tracked_rows,
    )
    from toolkit.reconcile.tracking.signing import acknowledge, reopen, void_run
    from toolkit.reconcile.tracking.states import (
        FACT_COLUMNS,
        MORE_FACTS,
        RESOLVED_COLUMNS,
        STATES,
        age_days,
        exception_ids,
    )
    from toolkit.reconcile.tracking.store import verify

__all__ = [
    "AGE_BUCKETS",
    "FACT_COLUMNS",
    "MORE_FACTS",
    "RESOLVED_COLUMNS",
    "STATES",
    "TRACKING_COLUMNS",
    "Tracking",
    "acknowledge",
    "age_days",
    "check_can_run",
    "check_tracked_threshold",
    "exception_ids",
    "findings",
    "history",
    "parse_as_of",
    "recording",
    "reopen",
    "signoffs",
    "track_result",
    "tracked_rows",
    "verify",
    "void_run",
]
