"""``reconcile(..., track=NAME)``: the engine's ``reconcile``, recorded as a run of a track.

The engine knows nothing of tracks: this wrapper calls it unchanged and, given a track, records
its result (``tracking.track_result``) with the sha256 of both inputs. Without a track it returns
exactly what the engine returns.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from toolkit.reconcile import _engine
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.fx import Rates
from toolkit.reconcile.inputs import LoadedInput
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import HELD_ROWS, PREVIEW_ROWS
from toolkit.reconcile.tolerance import Tolerance
from toolkit.reconcile.tracking.record import check_can_run, track_result, with_earlier_date_formats


def reconcile(
    ledger: LoadedInput,
    processor: LoadedInput,
    *,
    amount_tolerance: int | str | Tolerance = 0,
    as_of: str | date | datetime | None = None,
    grace: str | timedelta | None = None,
    fx_rates: str | Path | Rates | None = None,
    backend: str | Backend = "duckdb",
    memory_limit: str | int | None = None,
    spill_dir: str | Path | None = None,
    track: str | None = None,
    held_rows: int = HELD_ROWS,
    preview_rows: int = PREVIEW_ROWS,
) -> ReconciliationResult:
    """Reconcile the ledger against the processor (``_engine.reconcile``, whose docstring gives the
    rules); with ``track``, record the run in that track's history and return the result with the
    state, ``firstSeen`` and ``ageDays`` of each exception (``result.tracking``). ``as_of`` is the
    cut-off (None: none, or with a track now) and, with a track, the run's date for ages. A track
    that cannot take the run (a bad name, a store that fails verification, a cut-off before its
    last run) raises ``TrackError`` before the engine runs."""
    if track is not None:
        check_can_run(track, as_of)
        ledger, processor = with_earlier_date_formats(track, (ledger, processor))
    result = _engine.reconcile(
        ledger,
        processor,
        amount_tolerance=amount_tolerance,
        as_of=as_of if as_of is not None or track is None else datetime.now(UTC),
        grace=grace,
        fx_rates=fx_rates,
        backend=backend,
        memory_limit=memory_limit,
        spill_dir=spill_dir,
        held_rows=held_rows,
        preview_rows=preview_rows,
    )
    if track is None:
        return result
    return track_result(result, track, as_of=as_of, inputs=(ledger, processor))
