"""The request log: the last requests the sandbox received, for ``GET /sandbox/requests``.

Each request becomes one ``Entry`` (method, path, status, latency, its ``merchantReferenceId`` when
the route read one, the fault applied if any), recorded once when its fate is known: its answer
sent, its connection dropped, or a hang begun. Never a header, so never the key.

Entries are kept in the sandbox database (table ``request_log``, the last ``LOG_SIZE``), so every
worker process of one server, and every server on the same file, shares one log. Writing a row per
request would cost a commit per request and empty every connection's read cache each time, so each
process buffers its entries and appends them in one transaction at most ``FLUSH_INTERVAL_S`` after
the first of them (on its event loop, between requests). A read flushes its own process's buffer
first: with one process (the embedded sandbox, ``toolkit sandbox`` by default) the log is exact at
every read; another worker's latest requests appear within ``FLUSH_INTERVAL_S``. Each entry is
written exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkit.sandbox import store
from toolkit.sandbox.db import Database

logger = logging.getLogger("toolkit.sandbox")

#: Rows kept in the database (older ones are deleted as new ones arrive); also the largest ``limit``.
LOG_SIZE = 1000
DEFAULT_LIMIT = 100
FLUSH_INTERVAL_S = 0.1
#: The log's own reads are not logged (reading it would change it).
UNLOGGED_PATHS = frozenset({"/sandbox/requests"})
#: Where a request's ``Entry`` sits in its ASGI scope, for the routes and the fault middleware.
ENTRY_KEY = "toolkit.request_log_entry"
MAX_TEXT = 256


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _printable(text: str) -> str:
    """For a terminal line: control characters escaped, so a path cannot forge or hide a line."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


@dataclass
class Entry:
    """One request, filled in as it goes; ``done`` records it (once)."""

    log: RequestLog = field(repr=False)
    time_ms: int
    started: float
    method: str
    path: str
    status: int | None = None
    merchant_reference_id: str | None = None
    fault: str | None = None
    fault_id: str | None = None
    latency_us: int | None = None

    def note_reference(self, value: Any) -> None:
        """Keep the request's merchantReferenceId when it is a string (bodies are the routes' to judge)."""
        if isinstance(value, str):
            self.merchant_reference_id = _clip(value)

    def done(self) -> None:
        """Record the request now, with the latency so far; later calls do nothing."""
        if self.latency_us is None:
            self.latency_us = int((time.perf_counter() - self.started) * 1_000_000)
            self.log.record(self)

    def row(self) -> tuple[Any, ...]:
        """The entry as the requests table stores it."""
        return (
            self.time_ms,
            self.method,
            self.path,
            self.status,
            self.latency_us,
            self.merchant_reference_id,
            self.fault,
            self.fault_id,
        )

    def line(self) -> str:
        """One line for ``toolkit sandbox --log-requests``."""
        stamp = datetime.fromtimestamp(self.time_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        status = "-" if self.status is None else str(self.status)
        latency = (self.latency_us or 0) / 1000
        parts = [f"{stamp}Z", self.method, _printable(self.path), status, f"{latency:.1f}ms"]
        if self.merchant_reference_id is not None:
            parts.append(f"merchantReferenceId={_printable(self.merchant_reference_id)}")
        if self.fault is not None:
            parts.append(f"fault={self.fault}:{self.fault_id}")
        return " ".join(parts)


def entry_of(scope: MutableMapping[str, Any]) -> Entry | None:
    """The log entry of the request with this scope (None for unlogged paths)."""
    entry = scope.get(ENTRY_KEY)
    return entry if isinstance(entry, Entry) else None


def note_reference(scope: MutableMapping[str, Any], value: Any) -> None:
    """What a route calls once it has the body: the log shows the request's merchantReferenceId."""
    entry = entry_of(scope)
    if entry is not None:
        entry.note_reference(value)


def record_of(row: sqlite3.Row) -> dict[str, Any]:
    """One entry as ``GET /sandbox/requests`` answers it (latency in exact ms, to the microsecond)."""
    return {
        "time": int(row["time"]),
        "method": row["method"],
        "path": row["path"],
        "status": row["status"],
        "latencyMs": Decimal(int(row["latency_us"])).scaleb(-3),
        "merchantReferenceId": row["merchant_reference_id"],
        "fault": row["fault"],
        "faultId": row["fault_id"],
    }


class RequestLog:
    """This process's buffer of finished entries, appended to the database in batches."""

    def __init__(self, db: Database, *, echo: Callable[[str], None] | None = None) -> None:
        self.db = db
        self.echo = echo
        self._pending: list[tuple[Any, ...]] = []
        self._flush_due: asyncio.TimerHandle | None = None

    def begin(self, method: str, path: str) -> Entry:
        """Start timing one request."""
        return Entry(
            log=self,
            time_ms=time.time_ns() // 1_000_000,
            started=time.perf_counter(),
            method=method,
            path=_clip(path),
        )

    def record(self, entry: Entry) -> None:
        """Keep a finished request; rows are written in batches, off the request's path."""
        self._pending.append(entry.row())
        if self.echo is not None:
            self.echo(entry.line())
        if self._flush_due is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on an event loop: nothing to batch with
                self.flush()
                return
            self._flush_due = loop.call_later(FLUSH_INTERVAL_S, self.flush)

    def flush(self) -> None:
        """Append the buffered entries in one transaction; on failure they wait for the next flush."""
        if self._flush_due is not None:
            self._flush_due.cancel()
            self._flush_due = None
        rows, self._pending = self._pending, []
        if not rows:
            return
        try:
            with self.db.write() as conn:
                store.append_requests(conn, rows=rows, keep=LOG_SIZE)
        except sqlite3.Error as exc:
            logger.warning("request log: %d entries not written yet: %s", len(rows), exc)
            self._pending = (rows + self._pending)[-LOG_SIZE:]

    def recent(self, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """The most recent requests, newest first (this process's buffer flushed first)."""
        self.flush()
        return [record_of(row) for row in store.recent_requests(self.db.conn, limit=limit)]


class RequestLogMiddleware:
    """Opens an ``Entry`` per request, notes the status it is answered with, records it when done."""

    def __init__(self, app: ASGIApp, log: RequestLog) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Time the request and record its method, path, status and fault."""
        if scope["type"] != "http" or scope["path"] in UNLOGGED_PATHS:
            await self.app(scope, receive, send)
            return
        entry = self.log.begin(scope["method"], scope["path"])
        scope[ENTRY_KEY] = entry

        async def logged_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry.status = int(message["status"])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                entry.done()  # before any other request runs: a client that got its answer finds it

        try:
            await self.app(scope, receive, logged_send)
        except ClientDisconnect:
            # The client gave up before its body was read (a delay it would not wait for): a
            # dropped connection (status null), not a server error with a traceback on the console.
            return
        except BaseException:
            if entry.status is None and entry.fault is None:
                entry.status = 500  # what the server's last-resort handler answers
            raise
        finally:
            entry.done()
