"""Recording a reconciliation as a run of a track: its cut-off, the run it is compared with, the
checks that refuse it, and the states its exceptions get (``states.py``), appended to the log.

Rules where the issue leaves the choice:

* The cut-off of a run is ``as_of`` (``--as-of``; a date is the end of that day, 23:59:59 UTC, as
  the engine reads it), else the time the run is recorded. The previous run is the track's latest
  run with an earlier cut-off; a run with the same cut-off as the last one is a re-run of it,
  compared with the same previous run, so re-running a day with the same inputs reports the same
  states (both runs stay in the history). A cut-off earlier than the track's last run is refused:
  a track goes forward in time. So is a period that does not cover the last run's: what left the
  period would be listed as resolved without being looked at.
* Informational rows (``severity`` info: in transit, within tolerance) are not exceptions and
  are not tracked: they get no id, state or ``ageDays``, are not in the audit log, the states or
  the thresholds, and stay in the result and the reports with those columns blank. A payment in
  transit that becomes a break later is ``new`` then.
* Two runs of the same track at once: the engine work runs in parallel; recording is serialised
  by the store's write lock, each run then sees the other's entry as its previous run (when its
  cut-off is later) and the entry numbers are unique, so no run is lost or duplicated. A writer
  that waits more than ``BUSY_SECONDS`` gives up with exit 2 and records nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from toolkit.errors import InputError, TrackError, TrackIntegrityError
from toolkit.reconcile import audit
from toolkit.reconcile.period import period_seconds
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import CATEGORIES, HELD_ROWS
from toolkit.reconcile.timing import parse_as_of as timing_cut_off
from toolkit.reconcile.tracking.model import Tracking
from toolkit.reconcile.tracking.states import (
    RESOLVED_COLUMNS,
    STATES,
    exception_facts,
    exception_ids,
    judge,
    lapsed_acknowledgements,
    resolved_rows,
)
from toolkit.reconcile.tracking.store import (
    Entry,
    Store,
    check_track_name,
    latest_signoffs,
    os_user,
    parse_time,
    runs_of,
    store_path,
    utc_text,
)
from toolkit.runlog import file_hashes

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput


#: The kind of run a track holds unless its runs say otherwise (``recording``'s ``kind``).
PAYMENT_RUNS = "payments"


def parse_as_of(value: str | date | datetime | None) -> datetime | None:
    """A run's cut-off as the engine cuts the data (``timing.parse_as_of``: a bare date is the
    end of that day, UTC), to the second. The track recorded 00:00 for a date the engine read
    to 23:59:59, so a later time of that day went back in time and resolved what it missed."""
    if value is None or value == "":
        return None
    try:
        moment = timing_cut_off(value)
    except InputError:
        text = str(value).strip()
        raise TrackError(
            f"as-of {text!r}: not a date or time (write 2026-11-23 or 2026-11-23T02:00:00Z)"
        ) from None
    return moment.replace(microsecond=0)


def _input_hashes(inputs: Iterable[LoadedInput]) -> list[dict[str, Any]]:
    """The sha256 of each input: of its files, of a frame's Arrow stream, none for a table name."""
    out = []
    for loaded in inputs:
        described = loaded.described
        item: dict[str, Any] = {"side": loaded.side, "source": loaded.source}
        if described.paths:
            item["files"] = file_hashes(described.paths)
        elif described.table is not None:
            import pyarrow as pa

            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, described.table.schema) as writer:
                writer.write_table(described.table)
            item["sha256"] = hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
        else:
            item["sha256"] = None  # a table of a catalog: nothing local to hash
        out.append(item)
    return out


def with_earlier_date_formats(
    track: str, inputs: tuple[LoadedInput, ...], *, home: str | Path | None = None
) -> tuple[LoadedInput, ...]:
    """``inputs``, each side whose date format is not given with the one the track's latest run
    read that side with (``earlier_date_format``): where a month-to-date file's rows cannot say
    whether ``05/01/2025`` is May or January, the track's earlier months can."""
    if not store_path(home).exists():
        return inputs
    with Store.open(home, create=False) as store:
        runs = runs_of(store.chain(track, must_exist=False))
    earlier: dict[str, str] = {}
    for run in runs:  # oldest first: the latest run's order wins
        for item in run.payload.get("inputs", []):
            if isinstance(item, dict) and isinstance(item.get("dateFormat"), str):
                earlier[str(item.get("side"))] = item["dateFormat"]
    return tuple(
        replace(loaded, earlier_date_format=earlier.get(loaded.side))
        if loaded.described.date_format is None and loaded.side in earlier
        else loaded
        for loaded in inputs
    )


def check_can_run(
    track: str, as_of: str | date | datetime | None = None, *, home: str | Path | None = None
) -> None:
    """Refuse early, before the engine works, what ``recording`` would refuse: a bad name or
    cut-off, a store that cannot be read, a track that does not verify, a cut-off in its past."""
    check_track_name(track)
    cut_off = parse_as_of(as_of)
    if not store_path(home).exists():
        return
    with Store.open(home, create=False) as store:
        runs = runs_of(store.chain(track, must_exist=False))
    if cut_off is not None:
        _refuse_going_back(track, runs, cut_off)


def _refuse_going_back(track: str, runs: list[Entry], cut_off: datetime) -> None:
    """A track's runs go forward in time: refuse a cut-off before its last run's."""
    if runs and parse_time(runs[-1].payload["asOf"]) > cut_off:
        last = runs[-1].payload
        raise TrackError(
            f"track {track}: its run {last['run']} is as of {last['asOf']}, "
            f"later than {utc_text(cut_off)}: a track's runs go forward in time"
        )


def _refuse_spilled(result: ReconciliationResult, track: str) -> None:
    """A run's history holds each of its exceptions, in memory: a spilled result is refused."""
    if result.spilled is not None:
        raise TrackError(
            f"track {track!r}: this run has {sum(result.spilled.counts.values()):,} exception rows, "
            f"more than a tracked run holds ({HELD_ROWS:,}); reconcile a shorter period, or without "
            "--track"
        )


@contextmanager
def recording(
    result: ReconciliationResult,
    track: str,
    *,
    as_of: str | date | datetime | None = None,
    inputs: Iterable[LoadedInput] = (),
    home: str | Path | None = None,
    started: datetime | None = None,
    output_dir: str | Path | None = None,
    kind: str = PAYMENT_RUNS,
) -> Iterator[ReconciliationResult]:
    """Record a run of ``track`` and yield the result with its states (``result.tracking``).
    ``kind``: what the track's runs reconcile (a payout run's track is its own: ``payouts``).

    The run is committed when the block ends; if the block raises (a report that cannot be
    written), nothing is recorded. The store stays locked for writing meanwhile, so a second run
    of the store waits. A track the store does not hold, whose earlier runs ``output_dir``'s
    run.json or the reports index above it show, is refused: its history is gone, and starting
    "run 1" again would hide that.
    """
    check_track_name(track)
    _refuse_spilled(result, track)
    cut_off = parse_as_of(as_of)
    hashes = _input_hashes(inputs)
    for item, read_with in zip(hashes, result.date_formats, strict=False):
        if read_with is not None:  # how its dates were read, for the track's later runs
            item["dateFormat"] = read_with
    with Store.open(home, create=True) as store, store.writing():
        chain = store.chain(track, must_exist=False)
        if not chain:
            _refuse_a_history_gone(track, output_dir)
            chain = [store.append(track, "track", {"track": track}, [])]
        moment = cut_off or datetime.now(UTC).replace(microsecond=0)
        _refuse_another_kind(track, chain, kind)
        previous, rerun_of, period = _place(track, chain, moment, inputs)
        signoffs = latest_signoffs(chain)
        tracked, payload = _track(
            result,
            track,
            moment,
            previous,
            (signoffs, lapsed_acknowledgements(chain, signoffs)),
            len(runs_of(chain, voided_too=True)) + 1,  # a voided run keeps its number
            hashes,
            started,
            rerun_of,
        )
        said = {"kind": kind} if kind != PAYMENT_RUNS else {}  # a payment run's entry as before
        entry = store.append(track, "run", {**payload, "period": period, **said}, chain)
        assert tracked.tracking is not None
        head = audit.Head(track, entry.number, entry.hash).text
        yield replace(tracked, tracking=replace(tracked.tracking, audit_head=head))


def _refuse_another_kind(track: str, chain: list[Entry], kind: str) -> None:
    """A track holds one kind of run: a payout run compared with a payment run's exceptions would
    list each of them as resolved."""
    runs = runs_of(chain, voided_too=True)
    held = runs[-1].payload.get("kind", PAYMENT_RUNS) if runs else kind
    if held != kind:
        raise TrackError(
            f"track {track}: its runs reconcile {held}, not {kind}; give this run a track of its own"
        )


def _place(
    track: str, chain: list[Entry], moment: datetime, inputs: Iterable[LoadedInput]
) -> tuple[Entry | None, int | None, dict[str, Any] | None]:
    """Where a run with the cut-off ``moment`` goes in the track: the run it is compared with (the
    latest with an earlier cut-off), the run whose cut-off it repeats, and its period. Refuses a
    cut-off back in time and a period that does not cover the previous run's."""
    runs = runs_of(chain)
    _refuse_going_back(track, runs, moment)
    earlier = [r for r in runs if parse_time(r.payload["asOf"]) < moment]
    previous = earlier[-1] if earlier else None
    period = _period_of(inputs)
    if previous is not None:
        _refuse_a_period_not_covering(track, previous, period)
    same = [r for r in runs if parse_time(r.payload["asOf"]) == moment]
    rerun_of = int(same[-1].payload["run"]) if same else None
    return previous, rerun_of, period


def _refuse_a_history_gone(track: str, output_dir: str | Path | None) -> None:
    """``TrackIntegrityError`` when a run.json in ``output_dir``, or under the reports folder
    above it, records a run of ``track`` that was recorded (exit 0 or 1) and the store has none."""
    if output_dir is None or not str(output_dir).strip():
        return
    from toolkit import runlog

    folder = Path(output_dir)
    manifests: list[tuple[Path, dict[str, Any]]] = []
    own = folder / runlog.MANIFEST
    if own.is_file():
        with suppress(OSError, ValueError):
            data = json.loads(own.read_text(encoding="utf-8"))
            manifests.append((own, data if isinstance(data, dict) else {}))
    root = runlog.reports_root(folder)
    if root is not None:
        manifests += runlog.read_manifests(root)
    for path, data in manifests:
        parameters = data.get("parameters")
        named = data.get("track") or (parameters.get("track") if isinstance(parameters, dict) else None)
        if named == track and data.get("exitCode") in (0, 1):
            run = f"run {data['run']}" if "run" in data else "a run"
            raise TrackIntegrityError(
                f"track {track}: the store has no history of it, but {path} records {run} of it: "
                "restore tracks.sqlite from a backup (to start the track anew on purpose, give it "
                "another name)"
            )


def _period_of(inputs: Iterable[LoadedInput]) -> dict[str, Any] | None:
    """The period a run reconciled: its bounds as given (``from``, ``to``; '' when open) and as
    the engine reads them (``seconds``: [lower, upper), None when open), or None for all."""
    for loaded in inputs:
        if loaded.period is not None:
            lower, upper = period_seconds(loaded.period)
            return {"from": loaded.period.start, "to": loaded.period.end, "seconds": [lower, upper]}
    return None


def _refuse_a_period_not_covering(track: str, previous: Entry, period: dict[str, Any] | None) -> None:
    """A run's period covers the previous run's, or the previous run's exceptions dated outside it
    would be listed as resolved without being looked at (a rolling one-day period resolved every
    exception the next night). A run recorded before periods were is not checked."""
    if "period" not in previous.payload:
        return
    before, now = previous.payload["period"], period
    (low, high), (was_low, was_high) = (p["seconds"] if p else [None, None] for p in (now, before))
    starts = low is None or (was_low is not None and low <= was_low)
    ends = high is None or (was_high is not None and high >= was_high)
    if starts and ends:
        return

    def text(bounds: dict[str, Any] | None) -> str:
        return "every date" if bounds is None else f"{bounds['from'] or '...'} to {bounds['to'] or '...'}"

    raise TrackError(
        f"track {track}: run {previous.payload['run']} reconciled {text(before)}, which this run's "
        f"period, {text(now)}, does not cover: its exceptions outside the period would be listed as "
        "resolved without being checked. Keep the track's period start (a month to date), or give "
        "each period its own track"
    )


def tracked_rows(exceptions: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """The rows a track follows: the exceptions, not the informational rows (``severity`` info:
    in transit, within tolerance), which get no id nor state and count towards no threshold."""
    if "severity" not in exceptions.columns:
        return np.ones(len(exceptions), dtype=bool)
    return (exceptions["severity"].astype(str) != "info").to_numpy(dtype=bool)


def _spread(values: list[Any], tracked: npt.NDArray[np.bool_]) -> npt.NDArray[np.object_]:
    """Values of the tracked rows put at their places among all rows (None for the others)."""
    out = np.full(len(tracked), None, dtype=object)
    out[tracked] = values
    return out


def _track(
    result: ReconciliationResult,
    track: str,
    as_of: datetime,
    previous: Entry | None,
    signed: tuple[dict[str, Entry], dict[str, int]],
    number: int,
    hashes: list[dict[str, Any]],
    started: datetime | None,
    rerun_of: int | None,
) -> tuple[ReconciliationResult, dict[str, Any]]:
    """The result with the states of its exceptions, and the payload of its run's entry; ``signed``
    is each exception's latest sign-off and the acknowledgements that lapsed."""
    tracked = tracked_rows(result.exceptions)
    exceptions = result.exceptions[tracked]
    ids = exception_ids(track, exceptions, {c.source: c.side for c in result.counts})
    facts = exception_facts(exceptions, result.rejected)
    rows, ages = judge(ids, exceptions, facts, previous, signed, as_of)
    resolved = resolved_rows(previous, ids, as_of)
    with_states = result.exceptions.assign(
        exceptionId=_spread(ids, tracked),
        state=pd.Categorical(_spread([row[4] for row in rows], tracked), categories=list(STATES)),
        firstSeen=_spread([row[5] for row in rows], tracked),
        ageDays=pd.array(_spread(ages, tracked).tolist(), dtype="Int64"),
        stateReason=_spread([row[6] for row in rows], tracked),
    )
    tracking = Tracking(
        track=track,
        run=number,
        as_of=as_of,
        previous_run=previous.payload["run"] if previous is not None else None,
        exceptions=with_states[tracked].reset_index(drop=True),
        resolved=_resolved_frame(resolved),
        inputs=tuple(hashes),
        rerun_of=rerun_of,
    )
    payload = _run_payload(tracking, result, rows, resolved, hashes, started)
    return replace(result, exceptions=with_states, tracking=tracking), payload


def _resolved_frame(rows: list[list[Any]]) -> pd.DataFrame:
    """``Tracking.resolved``: the resolved rows in report order of their categories."""
    resolved = pd.DataFrame(rows, columns=list(RESOLVED_COLUMNS), dtype=object)
    order = {name: i for i, name in enumerate(CATEGORIES)}
    return resolved.sort_values(
        "category", key=lambda c: c.map(order).fillna(len(order)), kind="stable"
    ).reset_index(drop=True)


def _run_payload(
    tracking: Tracking,
    result: ReconciliationResult,
    rows: list[list[Any]],
    resolved: list[list[Any]],
    hashes: list[dict[str, Any]],
    started: datetime | None,
) -> dict[str, Any]:
    """What the run's entry of the audit log holds (``period`` aside, added by ``recording``)."""
    counts = tracking.state_counts()
    return {
        "run": tracking.run,
        "asOf": tracking.as_of_text,
        "started": utc_text(started or datetime.now(UTC)),
        "previousRun": tracking.previous_run,
        "inputs": hashes,
        "counts": {"exceptions": len(rows), "matched": result.matched_count, **counts},
        "byCategory": tracking.states().to_dict(orient="records"),
        "ageBuckets": tracking.age_buckets().to_dict(orient="records"),
        "exceptions": rows,
        "resolved": resolved,
        "rerunOf": tracking.rerun_of,
        "osUser": os_user(),
    }


def track_result(
    result: ReconciliationResult,
    track: str,
    *,
    as_of: str | date | datetime | None = None,
    inputs: Iterable[LoadedInput] = (),
    home: str | Path | None = None,
    output_dir: str | Path | None = None,
) -> ReconciliationResult:
    """Record ``result`` as a run of ``track`` now; returns it with the states of its exceptions."""
    with recording(result, track, as_of=as_of, inputs=inputs, home=home, output_dir=output_dir) as tracked:
        return tracked
