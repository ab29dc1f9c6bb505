"""The audit log of tracked runs: the SQLite store, its hash chain and heads, and reading it back.

What ``record.py`` records and ``signing.py`` signs is kept here: one append-only table,
``entries``, in ``TOOLKIT_HOME/reconcile/tracks.sqlite``, for every track. This module imports
neither pandas nor the engine, so the commands that only read or sign the log (``ack``,
``reopen``, ``void``, ``verify``, ``history``, ``signoffs``) start in a fraction of a second.

SQLite rather than DuckDB because (1) two processes can share it safely: a writer takes the file's
lock (``BEGIN IMMEDIATE``) and a second writer waits for it (``busy_timeout``) instead of failing
to open the file, which is what DuckDB does when another process holds it; (2) its transactions
are durable on power loss with ``synchronous=FULL``, and the journal (``toolkit.journal``) already
relies on the same; (3) the data is small (exceptions, not payments) and read whole, where DuckDB
brings nothing; (4) anyone can inspect it with the ``sqlite3`` shell.

Every run, acknowledgement and reopening is an entry of its track, numbered 1, 2, ... (entry 1
creates the track), holding its payload as canonical JSON (a run's payload holds all its
exceptions with their states, the resolved ones, its counts, and the sha256 of its input files)
and two hashes: ``prev_hash``, the hash of the track's entry before it (64 zeros for entry 1), and
``hash``, the sha256 of the entry itself (number, track, kind, time, ``prev_hash`` and payload).
States are always worked out from the log, so there is nothing beside it to fall out of step.
``verify`` recomputes the chain and names the first entry that does not match; changing any byte
of an entry, removing one or inserting one is caught, and so is an entry moved to another track
name (every track must start at its entry 1). The chain is anchored outside the store and can be
keyed (``audit.py``): the head saved beside the store, in each report and run.json catches entries
removed from the end, a recomputed chain and a history deleted; an HMAC key kept apart stops a
recomputation.

Every run and every sign-off verifies the chain first: a track whose log does not verify refuses
further runs and sign-offs (``TrackIntegrityError``, exit 2) and never starts a new history by
itself. Restore the store from a backup, or start a new track under another name on purpose.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolkit import _sqlite
from toolkit.errors import TrackError, TrackIntegrityError
from toolkit.reconcile import audit

#: How long a run waits for another run of the store to finish recording.
BUSY_SECONDS = 600.0
TRACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_GENESIS = "0" * 64
_KINDS = ("track", "run", "ack", "reopen", "void")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    track TEXT NOT NULL,
    number INTEGER NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (track, number)
);
"""


def utc_text(moment: datetime) -> str:
    """``2026-11-23T02:00:00Z``: the one way times are written in the store and the reports."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """A time as ``utc_text`` writes it, read back."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def store_path(home: str | Path | None = None) -> Path:
    """``TOOLKIT_HOME/reconcile/tracks.sqlite`` (``home`` overrides ``TOOLKIT_HOME``)."""
    if home is None:
        from toolkit.home import toolkit_home  # not the settings' stack: pydantic costs 0.3 s

        home = toolkit_home()
    return Path(home) / "reconcile" / "tracks.sqlite"


def _create(path: Path) -> None:
    """A new store, made beside ``path`` and linked into place whole (``_sqlite.create``; another
    process creating it at the same moment wins, and that is fine: its store is as new)."""

    def build(connection: sqlite3.Connection) -> None:
        connection.executescript(_SCHEMA)

    try:
        _sqlite.create(path, build)
    except _sqlite.CreateFailed as exc:
        raise TrackError(f"cannot create the reconciliation store {path}: {exc.error}") from None


def _not_a_store(connection: sqlite3.Connection) -> str | None:
    """Why the file is not a store, or None: a store that was emptied is never taken for a new one
    (new stores are moved into place with their table already in them)."""
    tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return None if "entries" in tables else "no entries table"


def _refused(refused: _sqlite.Refused) -> TrackError:
    """The store's words for a file ``_sqlite.open_existing`` refused (fail closed: it is never
    taken for an empty one)."""
    path = refused.path
    if refused.problem == "foreign":
        return TrackError(
            f"{path} is not a reconciliation store (empty or damaged): restore it from a "
            "backup, or move it aside to start every track anew"
        )
    if refused.problem == "damaged":
        return TrackError(
            f"{path} is a damaged reconciliation store ({refused.reason}): restore it from a "
            "backup, or move it aside to start every track anew"
        )
    return TrackError(f"{path}: cannot be read as a reconciliation store ({refused.reason})")


def check_track_name(track: str) -> str:
    """The track name, or a ``TrackError`` saying which names are allowed (it names a file row)."""
    if not isinstance(track, str) or not TRACK_NAME.fullmatch(track):  # no trailing newline
        raise TrackError(
            f"track name {track!r}: use letters, digits, '.', '_' and '-' (at most 100, "
            "starting with a letter or digit)"
        )
    return track


def _canonical(payload: object) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(
    number: int, track: str, kind: str, at: str, prev_hash: str, payload: str, key: bytes | None = None
) -> str:
    """The hash of one entry of the audit log, over everything it holds: SHA-256, or HMAC-SHA256
    under the audit key (``audit.py``)."""
    text = "\x1f".join((str(number), track, kind, at, prev_hash, payload))
    return audit.digest(text, key)


@dataclass(frozen=True)
class Entry:
    """One entry of a track's audit log, verified."""

    number: int
    kind: str
    at: str
    payload: dict[str, Any]
    hash: str

    def describe(self) -> str:
        """The entry in a line, for ``verify`` and error messages."""
        if self.kind == "run":
            return f"run {self.payload.get('run')} as of {self.payload.get('asOf')}"
        if self.kind in ("ack", "reopen"):
            ids = self.payload.get("ids", [])
            return f"{self.kind} of {len(ids)} exception(s) by {self.payload.get('by')}"
        if self.kind == "void":
            return f"void of run {self.payload.get('run')} by {self.payload.get('by')}"
        return f"{self.kind} created"


def _describe_raw(number: int, kind: str, payload: str) -> str:
    try:
        parsed = json.loads(payload)
    except ValueError:
        return kind
    return Entry(number, kind, "", parsed if isinstance(parsed, dict) else {}, "").describe()


def check_head(track: str, entries: list[Entry], head: audit.Head, where: str) -> None:
    """``TrackIntegrityError`` unless ``entries`` hold ``head`` (its entry, with its hash)."""
    if not entries:
        raise TrackIntegrityError(
            f"track {track}: its audit log is gone from the store, but {where} shows entry "
            f"{head.entry}: restore tracks.sqlite from a backup (to start the track anew on purpose, "
            "give it another name)"
        )
    if head.entry > len(entries):
        raise TrackIntegrityError(
            f"track {track}: the audit log ends at entry {len(entries)}, but {where} shows entry "
            f"{head.entry}: entries were removed outside the toolkit"
        )
    if not audit.matches(entries[head.entry - 1].hash, head.hash):
        raise TrackIntegrityError(
            f"track {track}: entry {head.entry} is not the one {where} shows: the audit log was "
            "rewritten outside the toolkit"
        )


class Store:
    """The reconciliation store: an open SQLite connection to ``tracks.sqlite``.

    ``Store.open(create=...)`` refuses a file that is not a store (fail closed: it is never taken
    for an empty one).
    """

    def __init__(self, path: Path, connection: sqlite3.Connection, key: bytes | None = None) -> None:
        self.path, self.connection, self.key = path, connection, key
        self._appended: list[audit.Head] = []  # heads to save once their entries are committed

    @classmethod
    def open(cls, home: str | Path | None = None, *, create: bool) -> Store:
        """The store under ``home``, opened; a missing one is made only when ``create`` (a run
        makes it; a sign-off or ``verify`` of a store that does not exist is an error)."""
        path = store_path(home)
        key = audit.audit_key()
        if not path.exists():
            if not create:
                heads = path.parent / "heads"
                saved = sorted(p.name for p in heads.iterdir()) if heads.is_dir() else []
                if saved:  # the heads outside the store remember what was in it
                    raise TrackIntegrityError(
                        f"no reconciliation store at {path}, but the heads of track(s) "
                        f"{', '.join(saved)} are saved beside it: the store was deleted; restore it "
                        "from a backup"
                    )
                raise TrackError(f"no reconciliation store at {path}: no track has been run yet")
            _create(path)
        try:
            connection = _sqlite.open_existing(path, identify=_not_a_store, busy_seconds=BUSY_SECONDS)
        except _sqlite.Refused as refused:
            raise _refused(refused) from None
        return cls(path, connection, key)

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction, holding the file's write lock: committed when the block ends,
        rolled back when it raises."""
        self._appended = []
        try:
            with _sqlite.write(self.connection):
                yield
        except sqlite3.Error as exc:  # busy, read-only, a full disk, a journal that cannot be made
            held = f" (another run held it for {BUSY_SECONDS:.0f} s)" if "locked" in str(exc) else ""
            raise TrackError(f"{self.path}: cannot record ({exc}){held}; nothing was recorded") from None
        for head in self._appended:  # outside the store: what a later store must still hold
            audit.save_head(self.path, head)

    def tracks(self) -> list[str]:
        """The names of the tracks in the store."""
        return [r[0] for r in self.connection.execute("SELECT DISTINCT track FROM entries ORDER BY track")]

    def chain(self, track: str, *, must_exist: bool = True) -> list[Entry]:
        """The track's entries, verified: ``TrackIntegrityError`` names the first that does not
        match; ``TrackError`` when the track does not exist (and ``must_exist``)."""
        try:
            rows = self.connection.execute(
                "SELECT number, kind, at, payload, prev_hash, hash FROM entries WHERE track = ? "
                "ORDER BY number",
                (track,),
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise TrackIntegrityError(f"track {track}: the store cannot be read ({exc})") from None
        if not rows:
            self._check_no_orphans()  # a new track too: the track an orphan came from is unknown
            self._check_saved_head(track, [])
            if must_exist:
                known = self.tracks()
                hint = f" (tracks: {', '.join(known)})" if known else " (no track has been run yet)"
                raise TrackError(f"unknown track {track!r}{hint}")
            return []
        entries: list[Entry] = []
        keyed_from = 0  # the track's first keyed entry (0: none so far)
        for expected, row in enumerate(rows, start=1):
            previous = entries[-1].hash if entries else _GENESIS
            entry = self._verified(track, expected, row, previous, keyed_from)
            keyed_from = keyed_from or (entry.number if audit.is_keyed(entry.hash) else 0)
            entries.append(entry)
        self._check_no_orphans()
        self._check_saved_head(track, entries)
        return entries

    def _verified(
        self, track: str, expected: int, row: Sequence[Any], previous: str, keyed_from: int
    ) -> Entry:
        """Entry ``expected`` of the track read from ``row``, checked: its number, that it follows
        the entry before it (whose hash is ``previous``), that a keyed track stays keyed (from its
        entry ``keyed_from``, 0 when none is), its own hash and its kind."""
        number, kind, at, payload, prev_hash, digest = row
        if number != expected:
            raise TrackIntegrityError(
                f"track {track}: entry {expected} is missing (the next is entry {number}): "
                "the audit log was changed outside the toolkit"
            )

        def where() -> str:
            """The entry in words, for an error only (it parses the payload once more)."""
            return f"track {track}: entry {number} ({_describe_raw(number, str(kind), str(payload))})"

        if prev_hash != previous:
            raise TrackIntegrityError(
                f"{where()} does not follow entry {number - 1}: its previous hash does not match"
            )
        keyed = audit.is_keyed(str(digest))
        if keyed and self.key is None:
            raise TrackError(
                f"track {track} is keyed (from entry {keyed_from or number}): its audit log is "
                f"checked and written only with the audit key ({audit.AUDIT_KEY_VARIABLE} or "
                f"{audit.AUDIT_KEY_FILE_VARIABLE})"
            )
        if keyed_from and not keyed:
            raise TrackIntegrityError(
                f"{where()} is not keyed, after keyed entry {keyed_from}: a keyed track stays "
                "keyed; it was changed outside the toolkit"
            )
        computed = entry_hash(
            number, track, str(kind), str(at), str(prev_hash), str(payload), self.key if keyed else None
        )
        if not audit.matches(computed, str(digest)):
            raise TrackIntegrityError(
                f"{where()} does not match its hash: it was changed outside the toolkit"
                + (", or the audit key is not the one it was written with" if keyed else "")
            )
        if (kind == "track") != (number == 1) or kind not in _KINDS:
            raise TrackIntegrityError(f"{where()} is not a valid entry of kind {kind!r}")
        return Entry(number, str(kind), str(at), json.loads(payload), str(digest))

    def _check_saved_head(self, track: str, entries: list[Entry]) -> None:
        """The store still holds the head saved beside it (``audit.py``): entries removed from
        the end, a chain recomputed, the track or the whole file gone are caught here."""
        head = audit.saved_head(self.path, track)
        if head is not None:
            check_head(track, entries, head, f"the head saved in {self.path.parent / 'heads' / track}")

    def _check_no_orphans(self) -> None:
        """Every track of the store starts at its entry 1: an entry moved to another (or a new)
        track name is caught even when it was the last of its own track. Which track it came
        from cannot be told, so every track of the store is refused, a new one too."""
        row = self.connection.execute(
            "SELECT track, min(number) FROM entries GROUP BY track HAVING min(number) != 1 LIMIT 1"
        ).fetchone()
        if row is not None:
            raise TrackIntegrityError(
                f"the store holds entry {row[1]} of track {row[0]!r} without the entries before it: "
                "entries were moved or removed outside the toolkit"
            )

    def append(self, track: str, kind: str, payload: dict[str, Any], after: list[Entry]) -> Entry:
        """Append one entry after ``after`` (the verified chain), inside ``writing()``: keyed when
        the audit key is set (``chain`` refused a keyed track without it)."""
        number = len(after) + 1
        prev_hash = after[-1].hash if after else _GENESIS
        at = utc_text(datetime.now(UTC))
        text = _canonical(payload)
        digest = entry_hash(number, track, kind, at, prev_hash, text, self.key)
        self.connection.execute(
            "INSERT INTO entries (track, number, kind, at, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
            (track, number, kind, at, text, prev_hash, digest),
        )
        self._appended.append(audit.Head(track, number, digest))
        return Entry(number, kind, at, payload, digest)

    def find_track_of(self, exception_id: str) -> str | None:
        """The track whose latest run holds ``exception_id`` (for the message of a wrong track)."""
        pattern = f'%"{exception_id}"%'
        row = self.connection.execute(
            "SELECT track FROM entries WHERE kind = 'run' AND payload LIKE ? ORDER BY seq DESC LIMIT 1",
            (pattern,),
        ).fetchone()
        return None if row is None else str(row[0])


def runs_of(chain: list[Entry], *, voided_too: bool = False) -> list[Entry]:
    """The track's runs, those voided (``void_run``) left out unless ``voided_too``."""
    runs = [e for e in chain if e.kind == "run"]
    if voided_too:
        return runs
    voided = {int(e.payload["run"]) for e in chain if e.kind == "void"}
    return [r for r in runs if int(r.payload["run"]) not in voided]


def rows_of(run: Entry) -> dict[str, list[Any]]:
    """A run's exceptions by id: [category, key, facts, state, firstSeen, reason]."""
    return {row[0]: row[1:] for row in run.payload["exceptions"]}


def latest_signoffs(chain: list[Entry]) -> dict[str, Entry]:
    """The latest ack or reopen entry of each exception id."""
    latest: dict[str, Entry] = {}
    for entry in chain:
        if entry.kind in ("ack", "reopen"):
            for exception_id in entry.payload["ids"]:
                latest[exception_id] = entry
    return latest


def os_user() -> str:
    """The operating-system account running the toolkit, from the user database by the process's
    uid, never from ``USER`` or ``LOGNAME`` (which anyone sets); ``uid 1234`` when it has no entry."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, AttributeError):  # no entry for the uid, or no pwd (Windows)
        import getpass

        try:
            return getpass.getuser()
        except Exception:
            return f"uid {os.geteuid()}" if hasattr(os, "geteuid") else ""


def verify(track: str, *, against: Sequence[str | Path] = (), home: str | Path | None = None) -> int:
    """Check the track's audit log; returns its number of entries, or raises
    ``TrackIntegrityError`` naming the first entry that does not match.

    Besides the chain itself and the head saved beside the store, each file of ``against`` (a
    report.html or run.json kept elsewhere) must show a head the log still holds.
    """
    check_track_name(track)
    heads = [(str(path), audit.heads_in_file(path, track)) for path in against]
    with Store.open(home, create=False) as store:
        chain = store.chain(track)
        keyed = store.key is not None
    if keyed and not any(audit.is_keyed(entry.hash) for entry in chain):
        raise TrackIntegrityError(
            f"track {track}: the audit key is set, but no entry of the track is keyed, so anyone "
            "who can write the store could have recomputed it: either it has not been run since "
            "the key was set (its next run or sign-off keys it from then on), or its keyed "
            "entries were rewritten without the key"
        )
    for path, found in heads:
        for head in found:
            check_head(track, chain, head, path)
    return len(chain)


#: Columns of ``history``.
HISTORY_COLUMNS: tuple[str, ...] = (
    "run",
    "asOf",
    "recorded",
    "exceptions",
    "new",
    "open",
    "acknowledged",
    "resolved",
    "matched",
    "rerunOf",
)


#: Columns of ``signoffs``: one row per exception of each sign-off.
SIGNOFF_COLUMNS: tuple[str, ...] = (
    "at",
    "action",
    "exceptionId",
    "category",
    "merchantReferenceId",
    "by",
    "osUser",
    "note",
    "run",
)


def history_rows(track: str, *, home: str | Path | None = None) -> list[tuple[Any, ...]]:
    """The track's runs, oldest first, as rows of ``HISTORY_COLUMNS``; verified first."""
    check_track_name(track)
    with Store.open(home, create=False) as store:
        chain = store.chain(track)
    rows = []
    for run in runs_of(chain):
        counts = run.payload["counts"]
        rows.append(
            (
                run.payload["run"],
                run.payload["asOf"],
                run.at,
                counts["exceptions"],
                counts["new"],
                counts["open"],
                counts["acknowledged"],
                counts["resolved"],
                counts["matched"],
                run.payload.get("rerunOf") or "",
            )
        )
    return rows


def signoff_rows(track: str, *, home: str | Path | None = None) -> list[tuple[Any, ...]]:
    """Every acknowledgement and reopening of the track, oldest first, one row per exception, with
    its category and key as in the run it was signed on, and every run voided, as rows of
    ``SIGNOFF_COLUMNS``; verified first."""
    check_track_name(track)
    with Store.open(home, create=False) as store:
        chain = store.chain(track)
    rows_of_run = {run.payload["run"]: rows_of(run) for run in runs_of(chain, voided_too=True)}
    rows: list[tuple[Any, ...]] = []
    for entry in chain:
        payload = entry.payload
        if entry.kind == "void":  # a correction of the track: shown with the sign-offs
            rows.append(
                (
                    entry.at,
                    "voided run",
                    "",
                    "",
                    "",
                    payload["by"],
                    payload["osUser"],
                    payload["note"],
                    payload["run"],
                )
            )
        elif entry.kind in ("ack", "reopen"):
            signed = rows_of_run.get(payload["run"], {})
            for exception_id in payload["ids"]:
                category, key = signed.get(exception_id, ["", ""])[:2]
                action = "acknowledged" if entry.kind == "ack" else "reopened"
                by, os_account = payload["by"], payload.get("osUser", "")  # not recorded before it was
                rows.append(
                    (
                        entry.at,
                        action,
                        exception_id,
                        category,
                        key,
                        by,
                        os_account,
                        payload["note"],
                        payload["run"],
                    )
                )
    return rows


def text_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a plain text table, columns right-aligned like pandas' ``to_string``, for the
    commands that print the log without loading pandas."""
    texts = [[str(c) for c in columns], *[["" if v is None else str(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in texts) for i in range(len(columns))]
    return "\n".join(
        " ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in texts
    )
