"""Signing a track's audit log: acknowledging exceptions, reopening them, voiding a run.

Each is an entry of the log (``store.py``) naming who, why (a note, never blank) and the
operating-system user beside ``by``. An acknowledgement is of the facts of the latest run
(``states.py`` decides when it holds); all or nothing: an unknown id, or one of another track,
records nothing. Like the store, this module imports neither pandas nor the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import TrackError
from toolkit.reconcile.tracking.store import (
    Entry,
    Store,
    check_track_name,
    latest_signoffs,
    os_user,
    rows_of,
    runs_of,
)

if TYPE_CHECKING:
    import pandas as pd

#: The version of the facts an acknowledgement records (``factsVersion``): 2 since a duplicate's
#: facts are each of its rows, not only how many. One recorded before (none) lapses once on a
#: duplicate, saying so: it was given on fewer facts than an acknowledgement now covers.
FACTS_VERSION = 2
#: An exception's id (``exception_ids``): anything else is refused before the store is read.
EXCEPTION_ID = re.compile(r"E[0-9a-f]{16}")


def _ids(exceptions: Iterable[str] | pd.DataFrame | pd.Series | str) -> list[str]:
    """The ids given: one, several, or a frame's ``exceptionId`` column (told apart by its
    columns, so that this module never imports pandas)."""
    if isinstance(exceptions, str):
        values: list[Any] = [exceptions]
    elif hasattr(exceptions, "columns"):
        frame: Any = exceptions
        if "exceptionId" not in frame.columns:
            raise TrackError("the frame has no exceptionId column: pass the exceptions of a tracked run")
        values = frame["exceptionId"].tolist()
    else:
        values = list(exceptions)
    ids = list(dict.fromkeys(str(v).strip() for v in values))
    if not ids:
        raise TrackError("no exception id given")
    for exception_id in ids:
        if not EXCEPTION_ID.fullmatch(exception_id):
            raise TrackError(
                f"{exception_id!r} is not an exception id (E and 16 hex digits, as in the "
                "exceptionId column of exceptions.csv)"
            )
    return ids


def _signer(kind: str, note: str, by: str | None, why: str, does: str) -> str:
    """Who signs an entry of the log (``by``, else the operating-system user), once the note is
    shown to say ``why``: an audit trail names a person and a reason, never a blank."""
    if not note or not note.strip():
        raise TrackError(f"{kind}: a note is required ({why})")
    who = (os_user() if by is None else by).strip()
    if not who:
        raise TrackError(f"{kind}: who {does} is required (--by NAME, or by= in Python)")
    return who


def _signoff(
    kind: str,
    track: str,
    exceptions: Iterable[str] | pd.DataFrame | pd.Series | str,
    *,
    note: str,
    by: str | None,
    home: str | Path | None,
) -> Entry:
    check_track_name(track)
    ids = _ids(exceptions)
    who = _signer(kind, note, by, "what was found, why it may stay", "signs off")
    with Store.open(home, create=False) as store, store.writing():
        chain = store.chain(track)
        runs = runs_of(chain)
        if not runs:
            raise TrackError(f"track {track} has no run yet")
        latest = runs[-1]
        rows = rows_of(latest)
        signoffs = latest_signoffs(chain)
        for exception_id in ids:
            if exception_id not in rows:
                raise TrackError(_unknown(store, track, exception_id, chain))
            held = _held_by(exception_id, rows, latest, signoffs.get(exception_id))
            if kind == "reopen" and held is None:
                raise TrackError(f"track {track}: {exception_id} is not acknowledged: nothing to reopen")
            if kind == "ack" and held is not None:
                raise TrackError(
                    f"track {track}: {exception_id} is already acknowledged by {held.payload['by']} "
                    f"at {held.at}: reopen it first to acknowledge it again"
                )
        payload: dict[str, Any] = {
            "ids": ids,
            "note": note.strip(),
            "by": who,
            "osUser": os_user(),  # beside --by, which is free text: who was logged in
            "run": latest.payload["run"],
        }
        if kind == "ack":
            payload["facts"] = {i: rows[i][2] for i in ids}
            payload["factsVersion"] = FACTS_VERSION
        return store.append(track, kind, payload, chain)


def _held_by(
    exception_id: str, rows: dict[str, list[Any]], latest: Entry, signoff: Entry | None
) -> Entry | None:
    """The acknowledgement that holds the exception now, or None: a sign-off after the latest run
    decides (an acknowledgement holds, a reopening does not); else the latest run's state does.
    Acknowledging again is refused, so the person and note on record are never replaced unseen."""
    if signoff is not None and signoff.number > latest.number:
        return signoff if signoff.kind == "ack" else None
    if rows[exception_id][3] == "acknowledged" and signoff is not None and signoff.kind == "ack":
        return signoff
    return None


def _unknown(store: Store, track: str, exception_id: str, chain: list[Entry]) -> str:
    if any(exception_id in rows_of(r) for r in runs_of(chain)):
        return f"track {track}: {exception_id} is resolved (not in the latest run): nothing to sign off"
    other = store.find_track_of(exception_id)
    if other is not None and other != track:
        return f"{exception_id} is an exception of track {other}, not of track {track}"
    return f"track {track}: unknown exception id {exception_id}"


def acknowledge(
    track: str,
    exceptions: Iterable[str] | pd.DataFrame | pd.Series | str,
    *,
    note: str,
    by: str | None = None,
    home: str | Path | None = None,
) -> list[str]:
    """Acknowledge exceptions of the track's latest run (ids, or a frame with ``exceptionId``).

    All or nothing: an unknown id, or one of another track, raises ``TrackError`` naming it and
    records nothing. ``by`` defaults to the operating-system user, which is recorded beside it
    (``osUser``) either way. Returns the ids acknowledged.
    """
    entry = _signoff("ack", track, exceptions, note=note, by=by, home=home)
    return list(entry.payload["ids"])


def reopen(
    track: str,
    exceptions: Iterable[str] | pd.DataFrame | pd.Series | str,
    *,
    note: str,
    by: str | None = None,
    home: str | Path | None = None,
) -> list[str]:
    """Take back acknowledgements (ids, or a frame with ``exceptionId``); all or nothing."""
    entry = _signoff("reopen", track, exceptions, note=note, by=by, home=home)
    return list(entry.payload["ids"])


def void_run(
    track: str, run: int, *, note: str, by: str | None = None, home: str | Path | None = None
) -> tuple[Entry, Entry | None]:
    """Void the track's latest run, an audited correction of a cut-off given by mistake (a future
    ``--as-of`` would otherwise lock the track, every later run being "back in time").

    The run stays in the audit log, marked void by an entry with who, why and ``osUser``; the
    track goes on as if it had not been run: the next run is compared with the run before it (so
    what the voided run listed as resolved is looked at again, and its new exceptions are new
    again if still there), its cut-off no longer bounds the next ones, and acknowledgements given
    since keep holding where the facts are those the person saw. Only the latest run can be
    voided (void several from the last). Returns the void entry and the run now latest (or None).
    """
    check_track_name(track)
    who = _signer("void", note, by, "why the run was wrong", "voids the run")
    with Store.open(home, create=False) as store, store.writing():
        chain = store.chain(track)
        runs = runs_of(chain)
        latest = int(runs[-1].payload["run"]) if runs else None
        if latest != run:
            every = {int(r.payload["run"]) for r in runs_of(chain, voided_too=True)}
            if run not in every:
                raise TrackError(f"track {track} has no run {run}")
            if run not in {int(r.payload["run"]) for r in runs}:
                raise TrackError(f"track {track}: run {run} is void already")
            raise TrackError(
                f"track {track}: run {run} is not its latest run ({latest}): void run {latest} first"
            )
        voided = runs[-1]
        payload = {
            "run": run,
            "asOf": voided.payload["asOf"],
            "note": note.strip(),
            "by": who,
            "osUser": os_user(),
        }
        entry = store.append(track, "void", payload, chain)
        return entry, runs[-2] if len(runs) > 1 else None
