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
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from toolkit import _sqlite
from toolkit.config import load_settings
from toolkit.environment import Environment, resolve_environment
from toolkit.errors import (
    APIError,
    JournalConflictError,
    JournalError,
    OutcomeUnknownError,
    TransportError,
)
from toolkit.models import (
    PaymentRequest,
    PaymentResult,
    PaymentStatus,
    Product,
    SettlementRecord,
    parse_json,
    to_json_bytes,
)
from toolkit.money import fits_currency, is_currency

Kind = Literal["payment", "product"]
State = Literal["sending", "succeeded", "unknown", "rejected", "not_sent", "abandoned"]

#: States in which nothing exists at the service, so the call may be sent (again).
SENDABLE_STATES: frozenset[str] = frozenset({"rejected", "not_sent", "abandoned"})
#: States whose outcome nobody knows: listed by ``unknown()`` and shown as status ``unknown``.
UNKNOWN_STATES: frozenset[str] = frozenset({"sending", "unknown"})

#: How payments settled after their answer (a pending payment resolved at the sandbox): their
#: status as of ``updateTime``. Made when the first settlement is recorded (older journals have none).
_SETTLEMENTS = """
CREATE TABLE IF NOT EXISTS settlements (
    orderId      TEXT    PRIMARY KEY,
    businessKey  TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    updateTime   INTEGER,
    recordedTime INTEGER NOT NULL
);
"""

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
        """False while the call may still have reached the service unanswered (never re-sent then)."""
        return self.state not in UNKNOWN_STATES


def _sqlite_reason(exc: sqlite3.Error) -> str:
    """SQLite's reason in words a user can act on."""
    text = str(exc)
    if "not a database" in text:
        return "not a journal (not an SQLite database)"
    if "malformed" in text:
        return "the file is damaged (database disk image is malformed)"
    if "readonly" in text or "unable to open" in text:
        return f"{text}; check that the file and its folder are writable"
    if "full" in text:
        return f"{text}; free some space where the journal lives"
    return text


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _changed_fields(sent: str, body: bytes) -> str:
    """What differs between the request sent under a key and ``body``, by value (``10.0`` is the
    ``10.00`` a spreadsheet saved again); '' when they are the same request written otherwise."""
    try:
        before, after = (json.loads(text, parse_float=Decimal) for text in (sent, body))
    except ValueError:
        return "the request"
    if not isinstance(before, dict) or not isinstance(after, dict):
        return "" if before == after else "the request"
    return ", ".join(
        f"{name} {before.get(name)!s} -> {after.get(name)!s}"
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    )


def _conflict_text(kind: Kind, key: str, state: str, changed: str) -> str:
    """Why a key is refused for a different request, and what may be done: never a blind new key,
    which would make the payment a second time."""
    if state in UNKNOWN_STATES:
        then = f"its outcome is unknown: find it at the service and settle it (toolkit journal resolve {key})"
    else:
        then = (
            f"the call stands as sent ({state}); send the request as it was, or make another {kind} "
            "under a new merchantReferenceId only if a second one is meant"
        )
    return f"{kind} {key!r} was already sent with a different request ({changed}); nothing was sent: {then}"


def request_hash(body: bytes) -> str:
    """The fingerprint that tells 'the same request' from 'a different request for the same key'."""
    return hashlib.sha256(body).hexdigest()


#: SQLite's ``application_id`` of a journal file ("TKJ1"): tells a journal from any other database.
APPLICATION_ID = 0x544B4A31
_REQUIRED_COLUMNS = frozenset({"kind", "businessKey", "requestHash", "request", "state", "response"})
#: How long a call waits for another process's write to the journal to finish.
BUSY_SECONDS = 60.0


def _unusable(path: Path, reason: str) -> JournalError:
    return JournalError(
        f"the journal {path} cannot be used: {reason}. Nothing was sent. Restore the file from a "
        "backup, or move it aside if you are sure none of its calls matter (a new journal forgets "
        "what was sent and would send it again)"
    )


def _create(path: Path, environment: str) -> None:
    """Make a new journal file at ``path`` atomically (``_sqlite.create``): a half-made file is
    never visible under the journal's name, so a file found there is either a whole journal or
    something to refuse. Losing the race to another process is fine."""

    def build(db: sqlite3.Connection) -> None:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.executescript(_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('environment', ?)", (environment,))

    try:
        _sqlite.create(path, build)
    except _sqlite.CreateFailed as exc:
        raise JournalError(f"cannot create the journal {path}: {exc.reason}") from None


def _not_a_journal(db: sqlite3.Connection, path: Path) -> str | None:
    """Why the file at ``path`` is not a journal, or None when it is one (fail closed: nothing is
    sent on a guess)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(calls)")}
    if not columns:
        return "an empty file" if path.stat().st_size == 0 else "not a journal (no calls table)"
    missing = sorted(_REQUIRED_COLUMNS - columns)
    if missing:
        return f"not a journal (its calls table lacks {', '.join(missing)})"
    return None


def _refused(refused: _sqlite.Refused) -> JournalError:
    """The journal's words for a file ``_sqlite.open_existing`` refused."""
    path = refused.path
    if refused.problem == "damaged":
        return _unusable(path, f"the file is damaged ({refused.reason})")
    if refused.problem == "unreadable" and refused.error is not None:
        reason = _sqlite_reason(refused.error)
        if "writable" in reason or "free some space" in reason:  # the file may be fine
            return JournalError(f"the journal {path} cannot be opened: {reason}. Nothing was sent")
        return _unusable(path, reason)
    return _unusable(path, refused.reason)


def _checked_response(kind: Kind, response: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """A resolution's response, checked as the service's own would be: a payment's status is one
    the service gives and its amount fits its currency. A resolution cannot be undone, and one of
    ``[1, 2]`` or ``{"status": 9}`` made every later frame of the journal fail."""
    if isinstance(response, BaseModel):
        response = response.model_dump(mode="python")
    if not isinstance(response, dict):
        raise JournalError(f"the response must be the data object of the {kind} response (a JSON object)")
    model = PaymentResult if kind == "payment" else Product
    try:
        checked = model.model_validate(response)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "response"
        raise JournalError(f"the response is not a {kind} response: {where}: {first['msg']}") from None
    if isinstance(checked, PaymentResult):
        # The service names every order it makes, and a settlement finds the payment by it.
        if not (checked.orderId or "").strip():
            raise JournalError("the response's orderId is required: the service's identifier of the order")
        if not isinstance(checked.status, PaymentStatus):
            given = ", ".join(str(status) for status in PaymentStatus)
            raise JournalError(f"the response's status must be one the service gives: {given}")
        if checked.amount is not None:
            currency = checked.currency or ""
            if not is_currency(currency) or not fits_currency(Decimal(checked.amount), currency):
                raise JournalError(
                    f"the response's amount {checked.amount} is not an amount of its currency {currency!r}"
                )
        if checked.status is PaymentStatus.NEXT_ACTION and checked.action is None:
            raise JournalError("the response's action is required when its status is next_action (5)")
    return checked.model_dump(mode="python")


def _refuse_another_payment(request: dict[str, Any], response: dict[str, Any]) -> None:
    """A response that cannot be the answer to the request on record (a typo: 99.00 EUR for the
    10.00 USD sent) is refused, as a changed request is: the payments frame would show it charged."""
    currency = request.get("paymentCurrency") or request.get("currency")
    if currency is not None and response.get("currency") not in (None, currency):
        raise JournalError(
            f"the response's currency {response.get('currency')} is not the {currency} asked for; "
            "give the service's answer to the request on record"
        )
    asked = request.get("amount")
    answered = response.get("amount")
    if asked is None or answered is None or request.get("paymentCurrency") or request.get("priceId"):
        return  # a price or a conversion sets the amount charged
    if Decimal(str(asked)) != Decimal(str(answered)):
        raise JournalError(
            f"the response's amount {answered} is not the {asked} asked for; "
            "give the service's answer to the request on record"
        )


class Journal:
    """The journal of one environment. Safe to share between threads of one process and processes.

    A new journal is created only where no file exists. A file that is there but empty, damaged or
    not a journal is refused with ``JournalError``: taking it as "nothing was ever sent" would send
    every call again.
    """

    def __init__(self, path: Path, *, environment: str) -> None:
        self.path = path
        self.environment = environment
        if not path.exists():
            _create(path, environment)
        try:
            self._db = _sqlite.open_existing(
                path,
                identify=lambda db: _not_a_journal(db, path),
                busy_seconds=BUSY_SECONDS,
                threads=True,
            )
        except _sqlite.Refused as refused:
            raise _refused(refused) from None
        self._db.row_factory = sqlite3.Row

    @staticmethod
    def path_for(environment: Environment, home: Path) -> Path:
        """Where the journal of an environment lives under ``home`` (``TOOLKIT_HOME``)."""
        return home / "journal" / f"{environment.key}.sqlite"

    @classmethod
    def for_environment(cls, environment: Environment, home: Path) -> Journal:
        """The journal of an environment under ``home`` (``TOOLKIT_HOME``).

        A journal kept under the name the URL had as written (before one spelling named one
        service) is refused, not passed over: what it recorded would be sent again.
        """
        path = cls.path_for(environment, home)
        if environment.former_key is not None:
            former = home / "journal" / f"{environment.former_key}.sqlite"
            if former.exists():
                raise JournalError(
                    f"the journal of the {environment.label} is {former}, named by the URL as "
                    f"written; a service's journal is now named by its URL in one spelling: move "
                    f"it (with its -wal file, while no run uses it) to {path}. Nothing was sent"
                )
        return cls(path, environment=environment.label)

    @classmethod
    def open(cls, environment: Environment | None = None) -> Journal:
        """The journal of the configured environment (``TOOLKIT_BASE_URL``, else the embedded sandbox)."""
        settings = load_settings()
        return cls.for_environment(environment or resolve_environment(settings), settings.home)

    def close(self) -> None:
        """Close the journal's database connection."""
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        """SQLite's failures (a full disk, a damaged or read-only file) as one-line JournalErrors."""
        try:
            yield
        except sqlite3.Error as exc:
            raise JournalError(f"the journal {self.path}: {_sqlite_reason(exc)}") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the lock up front, so two processes never deadlock."""
        with self._sqlite_errors(), _sqlite.write(self._db) as db:
            yield db

    def _read(self, query: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._sqlite_errors():
            return self._db.execute(query, args).fetchall()

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
                changed = _changed_fields(row["request"], body)
                if changed:
                    raise JournalConflictError(_conflict_text(kind, key, str(row["state"]), changed))
            return self._record(row)

    def finish(
        self, row_id: int, *, state: State, response: dict[str, Any] | None = None, error: str | None = None
    ) -> JournalRecord:
        """Commit the outcome of a call begun with ``begin``."""
        with self._write() as db:
            db.execute(
                "UPDATE calls SET state = ?, response = ?, error = ?, outcomeTime = ? WHERE id = ?",
                (
                    state,
                    None if response is None else to_json_bytes(response).decode(),
                    error,
                    _now_ms(),
                    row_id,
                ),
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
        return self._succeeded(kind, key, started, result)

    async def arun(
        self, kind: Kind, key: str, body: bytes, send: Callable[[], Awaitable[BaseModel]]
    ) -> JournalRecord:
        """Journal and perform one create call on an AsyncClient."""
        started = self.begin(kind, key, body)
        if isinstance(started, JournalRecord):
            return started
        try:
            result = await send()
        except Exception as exc:
            return self._failed(started, exc)
        return self._succeeded(kind, key, started, result)

    def _succeeded(self, kind: Kind, key: str, row_id: int, result: BaseModel) -> JournalRecord:
        """Record the answer; if even that fails (a full disk), say what the service did."""
        response = result.model_dump(mode="python")
        try:
            return self.finish(row_id, state="succeeded", response=response)
        except JournalError as exc:
            raise JournalError(
                f"{kind} {key!r} was sent and the service answered {to_json_bytes(response).decode()}, "
                f"but the answer could not be recorded ({exc}). The journal keeps it as unknown, so it "
                f"is never sent again; once the journal can be written, record it with "
                f"Journal.resolve or `toolkit journal resolve {key} --response '...'`"
            ) from None

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

    def records(
        self, kind: Kind | None = None, *, states: frozenset[str] | None = None
    ) -> list[JournalRecord]:
        """Every journaled call (of a kind, in some states), oldest first."""
        query, args = "SELECT * FROM calls", []
        if kind is not None:
            query, args = query + " WHERE kind = ?", [kind]
        rows = self._read(query + " ORDER BY id", args)
        found = [self._record(row) for row in rows]
        return [r for r in found if states is None or r.state in states]

    def get(self, kind: Kind, key: str) -> JournalRecord | None:
        """The record of one business key, or None when it was never journaled."""
        rows = self._read("SELECT * FROM calls WHERE kind = ? AND businessKey = ?", (kind, key))
        return self._record(rows[0]) if rows else None

    def unknown(self, kind: Kind | None = None) -> list[JournalRecord]:
        """Calls whose outcome nobody knows: in flight, or cut off. Resolve them with ``resolve``."""
        return self.records(kind, states=UNKNOWN_STATES)

    def resolve(
        self,
        kind: Kind,
        key: str,
        *,
        failed: bool = False,
        response: BaseModel | dict[str, Any] | None = None,
        note: str = "user",
        confirm: Callable[[JournalRecord, dict[str, Any] | None], None] | None = None,
    ) -> JournalRecord:
        """Settle an unknown call: ``failed=True`` allows sending it again; ``response=`` records it.

        ``confirm(record, response)`` is called once the resolution passed the journal's own checks
        and before anything is written: it raises to refuse it. ``toolkit journal resolve`` asks the
        service there, where it can be asked; the journal itself never speaks HTTP.
        """
        if failed == (response is not None):
            raise JournalError("resolve needs exactly one of failed=True or response=...")
        record = self.get(kind, key)
        if record is None:
            raise JournalError(f"no journaled {kind} with key {key!r}")
        if record.outcome_known:
            raise JournalError(f"{kind} {key!r} is already {record.state}; only unknown outcomes resolve")
        data = None if response is None else _checked_response(kind, response)
        if data is not None and kind == "payment":
            _refuse_another_payment(record.request, data)
        if confirm is not None:
            confirm(record, data)
        with self._write() as db:
            db.execute(
                "UPDATE calls SET state = ?, response = ?, error = NULL, outcomeTime = ?, resolvedBy = ? "
                "WHERE kind = ? AND businessKey = ? AND state IN ('sending', 'unknown')",
                (
                    "abandoned" if failed else "succeeded",
                    None if data is None else to_json_bytes(data).decode(),
                    _now_ms(),
                    f"{note} (pid {os.getpid()})",
                    kind,
                    key,
                ),
            )
        resolved = self.get(kind, key)
        assert resolved is not None
        return resolved

    # -- settlements learnt after the answer ------------------------------------------------------

    def record_settlement(self, settled: SettlementRecord) -> bool:
        """Remember how a payment of this journal settled after its answer (``payments_frame``
        shows it); False, and nothing recorded, when this journal did not make the payment.

        Only a settled status (success or failure) is recorded; a later record of the same order
        replaces an earlier one.
        """
        if settled.status not in (PaymentStatus.SUCCESS, PaymentStatus.FAILURE) or not settled.orderId:
            raise JournalError(
                f"only a settled payment is recorded, not {settled.status} ({settled.orderId})"
            )
        key = settled.merchantReferenceId or ""
        record = self.get("payment", key)
        if record is None or (record.response or {}).get("orderId") != settled.orderId:
            return False
        with self._write() as db:
            db.execute(_SETTLEMENTS)
            db.execute(
                "INSERT OR REPLACE INTO settlements VALUES (?, ?, ?, ?, ?)",
                (settled.orderId, key, int(settled.status), settled.updateTime, _now_ms()),
            )
        return True

    def settlements(self) -> dict[str, tuple[PaymentStatus, int | None]]:
        """orderId -> (settled status, its time in epoch ms) of every settlement recorded."""
        if not self._read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settlements'"):
            return {}
        rows = self._read("SELECT orderId, status, updateTime FROM settlements")
        return {row["orderId"]: (PaymentStatus(row["status"]), row["updateTime"]) for row in rows}

    def _record(self, row: sqlite3.Row, *, sent: bool = False) -> JournalRecord:
        return JournalRecord(
            kind=row["kind"],
            key=row["businessKey"],
            state=row["state"],
            request=parse_json(row["request"]),
            response=None if row["response"] is None else parse_json(row["response"]),
            error=row["error"],
            attempts=row["attempts"],
            requestTime=row["requestTime"],
            outcomeTime=row["outcomeTime"],
            resolvedBy=row["resolvedBy"],
            environment=self.environment,
            sent=sent,
        )

    def integrity_check(self) -> str:
        """SQLite's own check of the file (``ok`` when sound)."""
        return str(self._read("PRAGMA integrity_check")[0][0])


def payment_body(request: PaymentRequest) -> tuple[str, bytes]:
    """The business key and wire body of a payment; the key is its merchantReferenceId."""
    key = request.merchantReferenceId
    if not key:
        raise JournalError("a journaled payment needs a merchantReferenceId (its business key)")
    trimmed = key.strip(" \t\n\r")
    if key != trimmed:  # 'A-1 ' and 'A-1' were two keys, two charges, one payment
        raise JournalError(
            f"merchantReferenceId {key!r} has spaces or line breaks at its ends, which reconciliation "
            f"drops: write it {trimmed!r}. Nothing was sent"
        )
    return key, request.to_json()
