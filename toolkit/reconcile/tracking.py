"""Tracked reconciliations: runs of a named track, the lifecycle of each exception, sign-offs, audit.

A reconciliation run with a track (``toolkit reconcile --track NAME``, ``reconcile(...,
track=NAME)``, ``track_result(result, NAME)``) is recorded in the track's history, and each of its
exceptions gets a stable ``exceptionId`` and a ``state``:

* ``new``: not in the previous run of the track; ``firstSeen`` is this run's cut-off;
* ``open``: in the previous run too; ``firstSeen`` is the cut-off of the first run of the unbroken
  streak in which it has been seen, ``ageDays`` the whole days from then to this cut-off;
* ``acknowledged``: a person acknowledged it (``acknowledge``) and its facts (amounts, currencies,
  statuses on both sides, a duplicate's number of rows, a rejected row's amount as written) are
  still those they saw; when the facts change the acknowledgement lapses for good and the
  exception is ``open`` again, ``stateReason`` saying what changed;
* ``resolved``, listed apart (``Tracking.resolved``): in the previous run, not in this one; with
  when it was first seen, last seen, and the cut-off at which it was gone.

Storage: one SQLite file, ``TOOLKIT_HOME/reconcile/tracks.sqlite``, for every track. SQLite
rather than DuckDB because (1) two processes can share it safely: a writer takes the file's lock
(``BEGIN IMMEDIATE``) and a second writer waits for it (``busy_timeout``) instead of failing to
open the file, which is what DuckDB does when another process holds it; (2) its transactions are
durable on power loss with ``synchronous=FULL``, and the journal (``toolkit.journal``) already
relies on the same; (3) the data is small (exceptions, not payments) and read whole, where DuckDB
brings nothing; (4) anyone can inspect it with the ``sqlite3`` shell.

The store is one append-only table, ``entries``: the audit log. Every run, acknowledgement and
reopening is an entry of its track, numbered 1, 2, ... (entry 1 creates the track), holding its
payload as canonical JSON (a run's payload holds all its exceptions with their states, the
resolved ones, its counts, and the sha256 of its input files) and two hashes: ``prev_hash``, the
hash of the track's entry before it (64 zeros for entry 1), and ``hash``, the sha256 of the entry
itself (number, track, kind, time, ``prev_hash`` and payload). States are always worked out from
the log, so there is nothing beside it to fall out of step. ``verify`` recomputes the chain and
names the first entry that does not match; changing any byte of an entry, removing one or
inserting one is caught, and so is an entry moved to another track name (every track must start
at its entry 1). The chain is anchored outside the store and can be keyed (``audit.py``): the
head saved beside the store, in each report and run.json catches entries removed from the end,
a recomputed chain and a history deleted; an HMAC key kept apart stops a recomputation.

Every run and every sign-off verifies the chain first: a track whose log does not verify refuses
further runs and sign-offs (``TrackIntegrityError``, exit 2) and never starts a new history by
itself. Restore the store from a backup, or start a new track under another name on purpose.

Rules where the issue leaves the choice:

* ``exceptionId`` is ``E`` + the first 16 hex digits of the sha256 of the track, the category and
  the key (``merchantReferenceId``). A rejected row may have no key, or share it with another
  rejected row, so its id also takes its side and its row number. Should a (key, category) repeat
  within a run all the same, the repeats are numbered in order.
* The cut-off of a run is ``as_of`` (``--as-of``; a date is the end of that day, 23:59:59 UTC, as
  the engine reads it), else the time the run is recorded. The previous run is the track's latest
  run with an earlier cut-off; a run with the same cut-off as the last one is a re-run of it,
  compared with the same previous run, so re-running a day with the same inputs reports the same
  states (both runs stay in the history). A cut-off earlier than the track's last run is refused:
  a track goes forward in time. So is a period that does not cover the last run's: what left the
  period would be listed as resolved without being looked at.
* An acknowledgement is of the facts of the latest run; it holds while the exception stays and its
  facts stay the same. Once a run did not hold it (a re-run of a day included), it has lapsed for
  good: running the day again with the old facts does not bring it back. An exception that is
  resolved and comes back later is ``new`` again, with a new ``firstSeen``, and its old
  acknowledgement does not hold.
* Informational rows (``severity`` info: in transit, within tolerance) are not exceptions and
  are not tracked: they get no id, state or ``ageDays``, are not in the audit log, the states or
  the thresholds, and stay in the result and the reports with those columns blank. A payment in
  transit that becomes a break later is ``new`` then.
* The age buckets (0-1, 2-7, 8-30, over 30 days) count the unacknowledged exceptions (``new`` and
  ``open``), those ``--max-exceptions`` counts and ``--max-age`` checks; acknowledged ones are
  counted beside them.
* Two runs of the same track at once: the engine work runs in parallel; recording is serialised
  by the store's write lock, each run then sees the other's entry as its previous run (when its
  cut-off is later) and the entry numbers are unique, so no run is lost or duplicated. A writer
  that waits more than ``BUSY_SECONDS`` gives up with exit 2 and records nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from toolkit.errors import InputError, NotebookFailure, TrackError, TrackIntegrityError
from toolkit.outputs import cell_text
from toolkit.reconcile import audit
from toolkit.reconcile.period import period_seconds
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import CATEGORIES, HELD_ROWS
from toolkit.reconcile.schema import TRACKING_COLUMNS as TRACKING_COLUMNS  # its home before
from toolkit.reconcile.timing import parse_as_of as timing_cut_off
from toolkit.reconcile.track_store import (  # the audit log itself
    FACTS_VERSION,
    HISTORY_COLUMNS,
    SIGNOFF_COLUMNS,
    Entry,
    Store,
    _parse_time,
    _rows,
    _runs,
    _signoffs,
    check_track_name,
    history_rows,
    os_user,
    signoff_rows,
    store_path,
    utc_text,
)
from toolkit.runlog import file_hashes

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput

#: States of an exception in a run, in report order (``resolved`` ones are listed apart).
STATES: tuple[str, ...] = ("new", "open", "acknowledged")
#: The facts an acknowledgement is of: when one of them changes, it lapses.
FACT_COLUMNS: tuple[str, ...] = (
    "ledger_amount",
    "processor_amount",
    "ledger_currency",
    "processor_currency",
    "ledger_status",
    "processor_status",
)
#: What else an acknowledgement is of, stored after ``FACT_COLUMNS``: every row of a duplicate,
#: each with its amount, currency and status (two charges of 100.00 acknowledged are not a third
#: of 99,999.00, nor four), and a rejected row's amount as written (10.00 acknowledged is not
#: 50000.00). An acknowledgement recorded before they were added is of the first facts only.
MORE_FACTS: tuple[str, ...] = ("rows", "amount as written")
#: ``appears 4 times in the processor (rows 2, 5, 9)``, or with each row's amount, currency and
#: status when they differ (``rows 2: 100.00 USD success, 5: ...``): a duplicate's detail
#: (``engine.duplicate_rows``).
_DUPLICATE = re.compile(r"^appears (\d+) times in the (ledger|processor) \(rows (.*)\)$", re.DOTALL)
_ROW_NUMBER = re.compile(r"(?:^|, )\d+: ")
#: Columns of ``Tracking.resolved``.
RESOLVED_COLUMNS: tuple[str, ...] = (
    "exceptionId",
    "merchantReferenceId",
    "category",
    *FACT_COLUMNS,
    "firstSeen",
    "lastSeen",
    "resolvedAt",
)
#: Age buckets of unacknowledged exceptions: (label, lowest age, highest age) in whole days.
AGE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0-1 days", 0, 1),
    ("2-7 days", 2, 7),
    ("8-30 days", 8, 30),
    ("over 30 days", 31, None),
)


# ---------------------------------------------------------------------------------------------
# Times


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


def age_days(first_seen: str, as_of: datetime) -> int:
    """Whole days from ``first_seen`` to ``as_of`` (rounded down, never negative)."""
    return max(0, (as_of - _parse_time(first_seen)) // timedelta(days=1))


# ---------------------------------------------------------------------------------------------
# What a tracked run adds to a result


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
# Ids and facts


def exception_ids(track: str, exceptions: pd.DataFrame, sides: dict[str, str]) -> list[str]:
    """The stable id of each exception (see the module docstring); ``sides`` maps a source to
    its side, for rejected rows."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for key, category, source, row in zip(
        exceptions["merchantReferenceId"].tolist(),
        exceptions["category"].astype(str).tolist(),
        exceptions["source"].tolist(),
        exceptions["source_row"].tolist(),
        strict=True,
    ):
        parts = [track, category, cell_text(key)]
        if category == "rejected_row":
            parts += [sides.get(cell_text(source), cell_text(source)), cell_text(row)]
        base = "\x1f".join(parts)
        repeat = seen.get(base, 0)
        seen[base] = repeat + 1
        if repeat:
            base += f"\x1f#{repeat}"
        ids.append("E" + hashlib.sha256(base.encode("utf-8")).hexdigest()[:16])
    return ids


def _facts(exceptions: pd.DataFrame, rejected: pd.DataFrame) -> list[list[str]]:
    """Each exception's ``FACT_COLUMNS`` and ``MORE_FACTS``, as text; ``rejected`` is the
    result's rejected rows, as written."""
    columns = [[cell_text(v) for v in exceptions[c].tolist()] for c in FACT_COLUMNS]
    written = {
        (cell_text(source), int(row)): cell_text(amount)
        for source, row, amount in zip(
            rejected["source"], rejected["source_row"], rejected["amount"], strict=True
        )
    }
    rows, amounts = [], []
    for index, (category, detail, source, row) in enumerate(
        zip(
            exceptions["category"].astype(str),
            exceptions["detail"],
            exceptions["source"],
            exceptions["source_row"],
            strict=True,
        )
    ):
        side = category.removeprefix("duplicate_in_")
        if side in ("ledger", "processor"):
            shown = [columns[FACT_COLUMNS.index(f"{side}_{n}")][index] for n in _ROW_FACTS]
            rows.append(_duplicate_rows(cell_text(detail), shown))
        else:
            rows.append("")
        rejected_row = category == "rejected_row"
        amounts.append(written.get((cell_text(source), int(row)), "") if rejected_row else "")
    return [list(fact) for fact in zip(*columns, rows, amounts, strict=True)]


#: What a duplicate's row is known by: its amount, currency and status.
_ROW_FACTS = ("amount", "currency", "status")


def _duplicate_rows(detail: str, shown: list[str]) -> str:
    """A duplicate's rows as a fact: how many, then each one's amount, currency and status,
    sorted (``3 rows: 100.00 USD success; 100.00 USD success; 99999.00 USD success``), so that a
    row changed, added or removed changes it, and the file re-sorted or a row inserted above does
    not. The detail lists the rows' values only when they differ; else each is the row shown."""
    found = _DUPLICATE.match(detail)
    if found is None:
        return ""
    count, _, listed = found.groups()
    if _ROW_NUMBER.match(listed):
        each = [item for item in _ROW_NUMBER.split(listed) if item]
    else:
        each = [" ".join(shown)] * int(count)
    return f"{count} rows: " + "; ".join(sorted(each))


def _changes(before: Sequence[str], after: Sequence[str]) -> str:
    """What changed, fact by fact, of the facts ``before`` has (``MORE_FACTS`` may be missing)."""
    return ", ".join(
        f"{name} {a or '(none)'} -> {b or '(none)'}"
        for name, a, b in zip((*FACT_COLUMNS, *MORE_FACTS), before, after, strict=False)
        if a != b
    )


# ---------------------------------------------------------------------------------------------
# The history of a track, as states


def _lapsed(chain: list[Entry], signoffs: dict[str, Entry]) -> dict[str, int]:
    """The acknowledgements a run after them did not hold (their facts changed, or the exception
    was resolved), with that run's number: they lapsed for good, so a re-run of the day with the
    old facts (compared with the run before the day, which predates the lapse) keeps them lapsed."""
    runs = [(run.number, run.payload["run"], _rows(run)) for run in _runs(chain)]
    lapsed: dict[str, int] = {}
    for exception_id, signoff in signoffs.items():
        if signoff.kind != "ack":
            continue
        for number, run_number, rows in runs:
            row = rows.get(exception_id)
            if number > signoff.number and (row is None or row[3] != "acknowledged"):
                lapsed[exception_id] = int(run_number)
                break
    return lapsed


def _state(
    exception_id: str,
    facts: list[str],
    previous: Entry | None,
    before: dict[str, list[Any]],
    signoff: Entry | None,
    lapsed_in: int | None = None,
) -> tuple[str, str]:
    """(state, reason) of an exception of this run; see the module docstring.

    A sign-off counts when it came after the previous run ("fresh"), or, for an acknowledgement,
    when the exception was acknowledged in the previous run; once an acknowledgement lapsed, or
    the exception was resolved, it no longer counts. The reason of a lapse or a reopening is
    carried while the exception stays open.
    """
    seen_before = exception_id in before
    base = "open" if seen_before else "new"
    previous_state, previous_reason = (
        (before[exception_id][3], before[exception_id][5]) if seen_before else ("", "")
    )
    carried = (
        previous_reason
        if previous_state == "open" and previous_reason.startswith(("reopened", "acknowledgement"))
        else ""
    )
    if signoff is None:
        return base, carried
    fresh = signoff.number > (previous.number if previous is not None else 0)
    who = f"{signoff.payload['by']} at {signoff.at}"
    if signoff.kind == "reopen":
        return (base, f"reopened by {who}: {signoff.payload['note']}") if fresh else (base, carried)
    if not (fresh or previous_state == "acknowledged"):
        return base, carried
    if lapsed_in is not None:
        return base, f"acknowledgement by {who} lapsed in run {lapsed_in}"
    acknowledged_facts = signoff.payload["facts"][exception_id]
    if acknowledged_facts == facts[: len(acknowledged_facts)]:
        return "acknowledged", f"acknowledged by {who}: {signoff.payload['note']}"
    if signoff.payload.get("factsVersion", 1) < FACTS_VERSION and facts[len(FACT_COLUMNS)]:
        return base, (
            f"acknowledgement by {who} lapsed: it was given when an acknowledgement covered a "
            f"duplicate's number of rows only, and now covers each row; check them and acknowledge "
            f"again ({facts[len(FACT_COLUMNS)]})"
        )
    return base, f"acknowledgement by {who} lapsed: {_changes(acknowledged_facts, facts)}"


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
        runs = _runs(store.chain(track, must_exist=False))
    if cut_off is not None:
        _refuse_going_back(track, runs, cut_off)


def _refuse_going_back(track: str, runs: list[Entry], cut_off: datetime) -> None:
    """A track's runs go forward in time: refuse a cut-off before its last run's."""
    if runs and _parse_time(runs[-1].payload["asOf"]) > cut_off:
        last = runs[-1].payload
        raise TrackError(
            f"track {track}: its run {last['run']} is as of {last['asOf']}, "
            f"later than {utc_text(cut_off)}: a track's runs go forward in time"
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
) -> Iterator[ReconciliationResult]:
    """Record a run of ``track`` and yield the result with its states (``result.tracking``).

    The run is committed when the block ends; if the block raises (a report that cannot be
    written), nothing is recorded. The store stays locked for writing meanwhile, so a second run
    of the store waits. A track the store does not hold, whose earlier runs ``output_dir``'s
    run.json or the reports index above it show, is refused: its history is gone, and starting
    "run 1" again would hide that.
    """
    check_track_name(track)
    if result.spilled is not None:  # a run's history holds each of its exceptions, in memory
        raise TrackError(
            f"track {track!r}: this run has {sum(result.spilled.counts.values()):,} exception rows, "
            f"more than a tracked run holds ({HELD_ROWS:,}); reconcile a shorter period, or without "
            "--track"
        )
    cut_off = parse_as_of(as_of)
    hashes = _input_hashes(inputs)
    with Store.open(home, create=True) as store, store.writing():
        chain = store.chain(track, must_exist=False)
        if not chain:
            _refuse_a_history_gone(track, output_dir)
            chain = [store.append(track, "track", {"track": track}, [])]
        moment = cut_off or datetime.now(UTC).replace(microsecond=0)
        runs = _runs(chain)
        _refuse_going_back(track, runs, moment)
        earlier = [r for r in runs if _parse_time(r.payload["asOf"]) < moment]
        previous = earlier[-1] if earlier else None
        period = _period_of(inputs)
        if previous is not None:
            _refuse_a_period_not_covering(track, previous, period)
        same = [r for r in runs if _parse_time(r.payload["asOf"]) == moment]
        rerun_of = int(same[-1].payload["run"]) if same else None
        signoffs = _signoffs(chain)
        tracked, payload = _track(
            result,
            track,
            moment,
            previous,
            (signoffs, _lapsed(chain, signoffs)),
            len(_runs(chain, voided_too=True)) + 1,  # a voided run keeps its number
            hashes,
            started,
            rerun_of,
        )
        entry = store.append(track, "run", {**payload, "period": period}, chain)
        assert tracked.tracking is not None
        head = audit.Head(track, entry.number, entry.hash).text
        yield replace(tracked, tracking=replace(tracked.tracking, audit_head=head))


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
    signoffs, lapsed = signed  # each exception's latest sign-off; the acknowledgements that lapsed
    tracked = tracked_rows(result.exceptions)
    exceptions = result.exceptions[tracked]
    sides = {c.source: c.side for c in result.counts}
    ids = exception_ids(track, exceptions, sides)
    facts = _facts(exceptions, result.rejected)
    before = _rows(previous) if previous is not None else {}
    as_of_text = utc_text(as_of)
    states, first_seen, reasons, ages = [], [], [], []
    rows: list[list[Any]] = []
    for exception_id, category, key, fact in zip(
        ids,
        exceptions["category"].astype(str).tolist(),
        exceptions["merchantReferenceId"].tolist(),
        facts,
        strict=True,
    ):
        state, reason = _state(
            exception_id, fact, previous, before, signoffs.get(exception_id), lapsed.get(exception_id)
        )
        first = before[exception_id][4] if exception_id in before else as_of_text
        states.append(state)
        first_seen.append(first)
        reasons.append(reason)
        ages.append(age_days(first, as_of))
        rows.append([exception_id, category, cell_text(key), fact, state, first, reason])
    current = set(ids)
    resolved_rows = [
        [
            exception_id,
            row[1],
            row[0],
            *row[2][: len(FACT_COLUMNS)],
            row[4],
            previous.payload["asOf"],
            as_of_text,
        ]
        for exception_id, row in before.items()
        if exception_id not in current and previous is not None
    ]
    resolved = pd.DataFrame(resolved_rows, columns=list(RESOLVED_COLUMNS), dtype=object)
    order = {name: i for i, name in enumerate(CATEGORIES)}
    resolved = resolved.sort_values(
        "category", key=lambda c: c.map(order).fillna(len(order)), kind="stable"
    ).reset_index(drop=True)
    with_states = result.exceptions.assign(
        exceptionId=_spread(ids, tracked),
        state=pd.Categorical(_spread(states, tracked), categories=list(STATES)),
        firstSeen=_spread(first_seen, tracked),
        ageDays=pd.array(_spread(ages, tracked).tolist(), dtype="Int64"),
        stateReason=_spread(reasons, tracked),
    )
    tracking = Tracking(
        track=track,
        run=number,
        as_of=as_of,
        previous_run=previous.payload["run"] if previous is not None else None,
        exceptions=with_states[tracked].reset_index(drop=True),
        resolved=resolved,
        inputs=tuple(hashes),
        rerun_of=rerun_of,
    )
    counts = tracking.state_counts()
    payload = {
        "run": number,
        "asOf": as_of_text,
        "started": utc_text(started or datetime.now(UTC)),
        "previousRun": tracking.previous_run,
        "inputs": hashes,
        "counts": {"exceptions": len(ids), "matched": result.matched_count, **counts},
        "byCategory": tracking.states().to_dict(orient="records"),
        "ageBuckets": tracking.age_buckets().to_dict(orient="records"),
        "exceptions": rows,
        "resolved": resolved_rows,
        "rerunOf": rerun_of,
        "osUser": os_user(),
    }
    return replace(result, exceptions=with_states, tracking=tracking), payload


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
