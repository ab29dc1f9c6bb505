"""The local record of every create call: the intent is committed before sending, the outcome after.

One SQLite file (WAL) per environment under ``TOOLKIT_HOME/journal/``, so sandbox and live records
never mix. A business key (``merchantReferenceId``) is journaled once per kind, enforced by a unique
constraint, so re-runs and concurrent processes send nothing twice.

States of a call:

- ``sending``   the intent is committed and the request may be on its way; if the process died, the
                outcome is unknown. Shown as ``unknown``, never re-sent by itself.
- ``succeeded`` the service answered with data (for a payment, whatever its status). Never re-sent.
- ``unknown``   the request may have taken effect (timeout, dropped connection, 5xx). Never re-sent.
- ``rejected``  the service said no (4xx, envelope error): nothing exists there. Sent again on re-run.
- ``not_sent``  the request never left (refused connection). Sent again on re-run.
- ``abandoned`` the user marked an unknown call as failed (``resolve(..., failed=True)``): it may be
                sent again.

The journal stores the request body only; the API key lives in headers and never reaches it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from toolkit.config import Environment, load_settings, resolve_environment
from toolkit.errors import (
    APIError,
    JournalConflictError,
    JournalError,
    OutcomeUnknownError,
    TransportError,
)
from toolkit.models import PaymentRequest, parse_json, to_json_bytes

Kind = Literal["payment", "product"]
State = Literal["sending", "succeeded", "unknown", "rejected", "not_sent", "abandoned"]

#: States in which nothing exists at the service, so the call may be sent (again).
SENDABLE_STATES: frozenset[str] = frozenset({"rejected", "not_sent", "abandoned"})
#: States whose outcome nobody knows: listed by ``unknown()`` and shown as status ``unknown``.
UNKNOWN_STATES: frozenset[str] = frozenset({"sending", "unknown"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id           INTEGER PRIMARY KEY,
    kind         TEXT    NOT NULL CHECK (kind IN ('payment', 'product')),
    businessKey  TEXT    NOT NULL,
    requestHash  TEXT    NOT NULL,
    request      TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    response     TEXT,
    error        TEXT,
    attempts     INTEGER NOT NULL DEFAULT 1,
    requestTime  INTEGER NOT NULL,
    outcomeTime  INTEGER,
    resolvedBy   TEXT,
    UNIQUE (kind, businessKey)
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class JournalRecord:
    """One journaled create call. ``sent`` is True when this very call sent the request."""

    kind: Kind
    key: str
    state: State
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    attempts: int
    requestTime: int
    outcomeTime: int | None
    resolvedBy: str | None
    environment: str
    sent: bool = False

    @property
    def outcome_known(self) -> bool:
        return self.state not in UNKNOWN_STATES


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def request_hash(body: bytes) -> str:
    """The fingerprint that tells 'the same request' from 'a different request for the same key'."""
    return hashlib.sha256(body).hexdigest()


class Journal:
    """The journal of one environment. Safe to share between threads of one process and processes."""

    def __init__(self, path: Path, *, environment: str) -> None:
        self.path = path
        self.environment = environment
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=60000")
        with self._write() as db:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('environment', ?)", (environment,))

    @classmethod
    def for_environment(cls, environment: Environment, home: Path) -> Journal:
        """The journal file of an environment under ``home`` (``TOOLKIT_HOME``)."""
        return cls(home / "journal" / f"{environment.key}.sqlite", environment=environment.label)

    @classmethod
    def open(cls, environment: Environment | None = None) -> Journal:
        """The journal of the configured environment (``TOOLKIT_BASE_URL``, else the embedded sandbox)."""
        settings = load_settings()
        return cls.for_environment(environment or resolve_environment(settings), settings.home)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the lock up front, so two processes never deadlock."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- the two halves of a journaled call ----------------------------------------------------

    def begin(self, kind: Kind, key: str, body: bytes) -> JournalRecord | int:
        """Commit the intent to send ``body`` under ``key``; return its row id to go ahead.

        Returns the existing record instead when the key is known and must not be sent again;
        raises ``JournalConflictError`` when the key was used for a different request.
        """
        if not key:
            raise JournalError(f"a {kind} needs a merchantReferenceId to be journaled")
        digest = request_hash(body)
        with self._write() as db:
            row = db.execute("SELECT * FROM calls WHERE kind = ? AND businessKey = ?", (kind, key)).fetchone()
            if row is None:
                cursor = db.execute(
                    "INSERT INTO calls (kind, businessKey, requestHash, request, state, requestTime) "
                    "VALUES (?, ?, ?, ?, 'sending', ?)",
                    (kind, key, digest, body.decode(), _now_ms()),
                )
                assert cursor.lastrowid is not None
                return cursor.lastrowid
            if row["state"] in SENDABLE_STATES:
                db.execute(
                    "UPDATE calls SET requestHash = ?, request = ?, state = 'sending', response = NULL, "
                    "error = NULL, attempts = attempts + 1, requestTime = ?, outcomeTime = NULL, "
                    "resolvedBy = NULL WHERE id = ?",
                    (digest, body.decode(), _now_ms(), row["id"]),
                )
                return int(row["id"])
            if row["requestHash"] != digest:
                raise JournalConflictError(
                    f"{kind} {key!r} was already sent with a different request (state {row['state']}); "
                    "nothing was sent. Use a new merchantReferenceId, or resolve the old call first."
                )
            return self._record(row)

    def finish(self, row_id: int, *, state: State, response: dict[str, Any] | None = None,
               error: str | None = None) -> JournalRecord:
        """Commit the outcome of a call begun with ``begin``."""
        with self._write() as db:
            db.execute(
                "UPDATE calls SET state = ?, response = ?, error = ?, outcomeTime = ? WHERE id = ?",
                (state, None if response is None else to_json_bytes(response).decode(), error,
                 _now_ms(), row_id),
            )
            row = db.execute("SELECT * FROM calls WHERE id = ?", (row_id,)).fetchone()
        return self._record(row, sent=True)

    # -- journaled calls --------------------------------------------------------------------

    def run(self, kind: Kind, key: str, body: bytes, send: Callable[[], BaseModel]) -> JournalRecord:
        """Journal and perform one blocking create call."""
        started = self.begin(kind, key, body)
        if isinstance(started, JournalRecord):
            return started
        try:
            result = send()
        except Exception as exc:
            return self._failed(started, exc)
        return self.finish(started, state="succeeded", response=result.model_dump(mode="python"))

    async def arun(self, kind: Kind, key: str, body: bytes,
                   send: Callable[[], Awaitable[BaseModel]]) -> JournalRecord:
        """Journal and perform one create call on an AsyncClient."""
        started = self.begin(kind, key, body)
        if isinstance(started, JournalRecord):
            return started
        try:
            result = await send()
        except Exception as exc:
            return self._failed(started, exc)
        return self.finish(started, state="succeeded", response=result.model_dump(mode="python"))

    def _failed(self, row_id: int, exc: Exception) -> JournalRecord:
        """Record a failure; errors that are not about the outcome still leave it unknown, and re-raise."""
        if isinstance(exc, OutcomeUnknownError):
            return self.finish(row_id, state="unknown", error=str(exc))
        if isinstance(exc, TransportError) and not exc.may_have_reached_server:
            return self.finish(row_id, state="not_sent", error=str(exc))
        if isinstance(exc, APIError):
            return self.finish(row_id, state="rejected", error=str(exc))
        self.finish(row_id, state="unknown", error=f"{type(exc).__name__}: {exc}")
        raise exc

    # -- reading and resolving --------------------------------------------------------------

    def records(self, kind: Kind | None = None, *,
                states: frozenset[str] | None = None) -> list[JournalRecord]:
        """Every journaled call (of a kind, in some states), oldest first."""
        query, args = "SELECT * FROM calls", []
        if kind is not None:
            query, args = query + " WHERE kind = ?", [kind]
        rows = self._db.execute(query + " ORDER BY id", args).fetchall()
        found = [self._record(row) for row in rows]
        return [r for r in found if states is None or r.state in states]

    def get(self, kind: Kind, key: str) -> JournalRecord | None:
        row = self._db.execute(
            "SELECT * FROM calls WHERE kind = ? AND businessKey = ?", (kind, key)
        ).fetchone()
        return None if row is None else self._record(row)

    def unknown(self, kind: Kind | None = None) -> list[JournalRecord]:
        """Calls whose outcome nobody knows: in flight, or cut off. Resolve them with ``resolve``."""
        return self.records(kind, states=UNKNOWN_STATES)

    def resolve(self, kind: Kind, key: str, *, failed: bool = False,
                response: BaseModel | dict[str, Any] | None = None, note: str = "user") -> JournalRecord:
        """Settle an unknown call: ``failed=True`` allows sending it again; ``response=`` records it."""
        if failed == (response is not None):
            raise JournalError("resolve needs exactly one of failed=True or response=...")
        record = self.get(kind, key)
        if record is None:
            raise JournalError(f"no journaled {kind} with key {key!r}")
        if record.outcome_known:
            raise JournalError(f"{kind} {key!r} is already {record.state}; only unknown outcomes resolve")
        data = response.model_dump(mode="python") if isinstance(response, BaseModel) else response
        with self._write() as db:
            db.execute(
                "UPDATE calls SET state = ?, response = ?, outcomeTime = ?, resolvedBy = ? "
                "WHERE kind = ? AND businessKey = ? AND state IN ('sending', 'unknown')",
                ("abandoned" if failed else "succeeded",
                 None if data is None else to_json_bytes(data).decode(), _now_ms(),
                 f"{note} (pid {os.getpid()})", kind, key),
            )
        resolved = self.get(kind, key)
        assert resolved is not None
        return resolved

    def _record(self, row: sqlite3.Row, *, sent: bool = False) -> JournalRecord:
        return JournalRecord(
            kind=row["kind"], key=row["businessKey"], state=row["state"],
            request=parse_json(row["request"]),
            response=None if row["response"] is None else parse_json(row["response"]),
            error=row["error"], attempts=row["attempts"], requestTime=row["requestTime"],
            outcomeTime=row["outcomeTime"], resolvedBy=row["resolvedBy"],
            environment=self.environment, sent=sent,
        )

    def integrity_check(self) -> str:
        """SQLite's own check of the file (``ok`` when sound)."""
        return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])


def payment_body(request: PaymentRequest) -> tuple[str, bytes]:
    """The business key and wire body of a payment; the key is its merchantReferenceId."""
    if not request.merchantReferenceId:
        raise JournalError("a journaled payment needs a merchantReferenceId (its business key)")
    return request.merchantReferenceId, request.to_json()

