"""Faults on demand: rules kept in the sandbox database, and the middleware that applies them.

A rule says which requests (route ``POST /payment``, ``POST /product``, ``GET /subscription`` or
``*``, and the next ``count`` of them, or each with ``probability`` drawn from a sequence fixed by
``seed``) meet which fault:

- ``delay``: read the request, wait ``delayMs``, then run it and answer normally (the route runs
  even when the client gave up meanwhile, as on a slow service);
- ``error``: answer ``status`` (with ``Retry-After`` for 429, or when given) without running the route;
- ``drop_before_commit``: close the connection without an answer before the route runs;
- ``drop_after_commit``: run the route (a valid payment is created), then close without an answer;
- ``hang_after_commit``: run the route, then answer nothing until the client gives up (or
  ``HANG_LIMIT_S`` passes, or the server stops), then close.

Rules live in the database so that every worker process of a server shares them and their counts:
taking a request is one write transaction (``BEGIN IMMEDIATE``), so ``count: 1`` fires exactly once
whatever the number of workers. The n-th request a ``probability`` rule is tried on fires when a hash
of (``seed``, n) falls below it: the same rule meets the same requests on every run. Rules are tried
in the order they were added; the first that fires applies. Only requests with a valid key and
timestamp meet faults, and only on the three API routes, never on ``/sandbox/`` controls.

Rules are cleared by ``DELETE /sandbox/faults``, by ``POST /sandbox/reset``, and when a server starts
on the database (``toolkit sandbox``, or the embedded sandbox starting in a process): they never
survive a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkit.control_models import FaultRuleRequest
from toolkit.models import MAX_BODY_BYTES, parse_json
from toolkit.sandbox import store
from toolkit.sandbox.db import Database
from toolkit.sandbox.deps import authenticate
from toolkit.sandbox.http import BadRequest, Unauthorized, error_response
from toolkit.sandbox.protocol import Connection, connection_of
from toolkit.sandbox.requests_log import entry_of

logger = logging.getLogger("toolkit.sandbox")

#: The longest a ``hang_after_commit`` request waits for its client to give up.
HANG_LIMIT_S = 120.0
#: Modes that close a connection themselves: they need the sandbox's own protocol.
CLOSING_MODES = frozenset({"drop_before_commit", "drop_after_commit", "hang_after_commit"})
#: Bounds on waiting for uvicorn to report a closed connection (it does so on the next loop turn).
_DISCONNECT_WAIT_S = 5.0
_MAX_MESSAGES = 10_000
_ARMED = ("fault_rules", "armed routes")


def route_of(method: str, path: str) -> str | None:
    """The rule route a request belongs to; None for everything faults never touch."""
    if method == "POST" and path in ("/payment", "/product"):
        return f"POST {path}"
    if method == "GET" and path.startswith("/subscription/"):
        return "GET /subscription"
    return None


# ---------------------------------------------------------------------------------------------
# the rules


def rule_record(row: sqlite3.Row) -> dict[str, Any]:
    """A rule as the controls answer it (``FaultRule``)."""
    return {
        "id": row["id"],
        "route": row["route"],
        "mode": row["mode"],
        "count": row["count"],
        "remaining": row["remaining"],
        "probability": None if row["probability"] is None else Decimal(row["probability"]),
        "seed": row["seed"],
        "delayMs": row["delay_ms"],
        "status": row["status"],
        "retryAfter": row["retry_after"],
        "matched": int(row["matched"]),
        "fired": int(row["fired"]),
        "createTime": int(row["create_time"]),
    }


def check_servable(req: FaultRuleRequest, scope: Scope) -> None:
    """Refuse a closing mode where this app cannot close connections (not served by SandboxProtocol)."""
    if req.mode in CLOSING_MODES and connection_of(scope) is None:
        raise BadRequest(
            "mode",
            f"{req.mode} needs the sandbox served by `toolkit sandbox` or the embedded sandbox "
            "(toolkit.sandbox.protocol.SandboxProtocol)",
        )


def add_rule(db: Database, req: FaultRuleRequest) -> dict[str, Any]:
    """Store a rule; with neither ``count`` nor ``probability`` it takes the next matching request."""
    count = req.count if req.count is not None or req.probability is not None else 1
    rule_id = store.new_id("flt_")
    with db.write() as conn:
        store.insert_fault_rule(
            conn,
            rule={
                "id": rule_id,
                "route": req.route,
                "mode": req.mode,
                "count": count,
                "remaining": count,
                "probability": None if req.probability is None else str(req.probability),
                "seed": req.seed,
                "delay_ms": req.delayMs,
                "status": req.answered_status,
                "retry_after": req.answered_retry_after,
                "matched": 0,
                "fired": 0,
                "create_time": store.wall_ms(),
            },
        )
        row = next(r for r in store.list_fault_rules(conn) if r["id"] == rule_id)
    return rule_record(row)


def list_rules(db: Database) -> list[dict[str, Any]]:
    """Every armed fault rule, as the controls answer it."""
    return [rule_record(row) for row in store.list_fault_rules(db.conn)]


def clear_rules(db: Database) -> int:
    """Delete every rule; returns how many there were."""
    with db.write() as conn:
        return store.clear_fault_rules(conn)


def fires(probability: Decimal, seed: int, index: int) -> bool:
    """Whether the ``index``-th request a probability rule is tried on meets the fault (exact compare)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return Fraction(int.from_bytes(digest, "big"), 2**64) < Fraction(probability)


@dataclass(frozen=True)
class Firing:
    """A rule that fired on one request: what to do to it."""

    rule_id: str
    mode: str
    delay_ms: int | None
    status: int | None
    retry_after: int | None


def armed(db: Database, route: str) -> bool:
    """Whether any rule could fire on ``route``: one cached read while nothing is committed."""
    cache = db.read_cache()
    routes: frozenset[str] | None = cache.get(_ARMED)
    if routes is None:
        routes = cache[_ARMED] = store.armed_fault_routes(db.reader)
    return route in routes or "*" in routes


def take(db: Database, route: str) -> Firing | None:
    """Try the armed rules on one request, counting it, in one write transaction."""
    with db.write() as conn:
        for row in store.armed_fault_rules(conn, route=route):
            if row["probability"] is None:
                fired = True
            else:
                fired = fires(Decimal(row["probability"]), int(row["seed"]), int(row["matched"]))
            store.count_fault_match(conn, rule_id=row["id"], fired=fired)
            if fired:
                return Firing(row["id"], row["mode"], row["delay_ms"], row["status"], row["retry_after"])
    return None


# ---------------------------------------------------------------------------------------------
# applying them


class FaultMiddleware:
    """Applies the first rule that fires to an authenticated request on an API route."""

    def __init__(self, app: ASGIApp, db: Database) -> None:
        self.app = app
        self.db = db

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Apply the first matching fault rule to a request, else pass it on."""
        route = route_of(scope["method"], scope["path"]) if scope["type"] == "http" else None
        firing = None
        if route is not None and armed(self.db, route) and _authenticated(scope):
            firing = take(self.db, route)
        if firing is None:
            await self.app(scope, receive, send)
            return
        entry = entry_of(scope)
        if entry is not None:
            entry.fault, entry.fault_id = firing.mode, firing.rule_id
        await _MODES[firing.mode](self.app, firing, scope, receive, send)


def _authenticated(scope: Scope) -> bool:
    """Faults meet only requests the route would accept: a wrong key gets its 401, not a fault."""
    try:
        authenticate(Request(scope))
    except Unauthorized:
        return False
    return True


async def _delay(app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send) -> None:
    replay = await _read_ahead(receive)
    await _wait(connection_of(scope), (firing.delay_ms or 0) / 1000)
    await app(scope, replay, send)


async def _read_ahead(receive: Receive) -> Receive:
    """The request's body, read now and handed to the route after the delay: a slow service still
    carries out a request whose client gave up waiting (the route read nothing then, and a payment
    the docs promise, and a real service would make, was never made)."""
    messages: list[Message] = []
    size = 0
    for _ in range(_MAX_MESSAGES):
        message = await receive()
        messages.append(message)
        size += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
        if size > MAX_BODY_BYTES:  # the route refuses it (413) as it reads on
            break

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay


async def _error(app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send) -> None:
    await _read_reference(scope, receive)
    status = firing.status or 500
    response = error_response(status, f"sandbox fault: injected HTTP {status} (rule {firing.rule_id})")
    if firing.retry_after is not None:
        response.headers["Retry-After"] = str(firing.retry_after)
    await response(scope, receive, send)


async def _drop_before_commit(
    app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send
) -> None:
    await _read_reference(scope, receive)
    await _close(app, firing, scope, receive, send)


async def _drop_after_commit(
    app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send
) -> None:
    await _run_withheld(app, scope, receive)
    await _close(app, firing, scope, receive, send)


async def _hang_after_commit(
    app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send
) -> None:
    await _run_withheld(app, scope, receive)
    entry = entry_of(scope)
    if entry is not None:
        entry.done()  # logged as the hang begins: what happened is settled now
    connection = connection_of(scope)
    gone = asyncio.ensure_future(_until_disconnected(receive))
    waits = {gone} if connection is None else {gone, asyncio.ensure_future(connection.stopping.wait())}
    try:
        await asyncio.wait(waits, timeout=HANG_LIMIT_S, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
    if not (gone.done() and not gone.cancelled()):
        await _close(app, firing, scope, receive, send)


_MODES: dict[str, Callable[[ASGIApp, Firing, Scope, Receive, Send], Awaitable[None]]] = {
    "delay": _delay,
    "error": _error,
    "drop_before_commit": _drop_before_commit,
    "drop_after_commit": _drop_after_commit,
    "hang_after_commit": _hang_after_commit,
}


async def _wait(connection: Connection | None, seconds: float) -> None:
    """Sleep, cut short if the server starts shutting down."""
    if connection is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(connection.stopping.wait(), timeout=seconds)


async def _read_reference(scope: Scope, receive: Receive) -> None:
    """Read the body (for a route that will not run) and log its merchantReferenceId, if it has one."""
    chunks: list[bytes] = []
    size = 0
    for _ in range(_MAX_MESSAGES):
        message = await receive()
        if message["type"] != "http.request":
            return
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    entry = entry_of(scope)
    if entry is None:
        return
    try:
        body = parse_json(b"".join(chunks))
    except (ValueError, RecursionError):
        return
    if isinstance(body, dict):
        entry.note_reference(body.get("merchantReferenceId"))


async def _run_withheld(app: ASGIApp, scope: Scope, receive: Receive) -> None:
    """Run the route to its end (it commits what it commits) and keep its answer to ourselves."""

    async def withhold(message: Message) -> None:
        return None

    try:
        await app(scope, receive, withhold)
    except Exception as exc:  # the answer is withheld either way; the error is the server's to know
        logger.error("error under fault on %s %s", scope["method"], scope["path"], exc_info=exc)


async def _close(app: ASGIApp, firing: Firing, scope: Scope, receive: Receive, send: Send) -> None:
    """Close the connection without an answer, and return once uvicorn has seen it closed (so it does
    not answer 500 for an application that returned without a response)."""
    connection = connection_of(scope)
    if connection is None:
        response = error_response(
            500,
            f"sandbox fault {firing.mode} cannot close this connection "
            "(the sandbox is not served with SandboxProtocol)",
        )
        await response(scope, receive, send)
        return
    connection.drop()
    try:
        await asyncio.wait_for(_until_disconnected(receive), timeout=_DISCONNECT_WAIT_S)
    except TimeoutError:
        logger.warning("fault %s: the connection did not report closing", firing.rule_id)


async def _until_disconnected(receive: Receive) -> None:
    for _ in range(_MAX_MESSAGES):
        if (await receive())["type"] == "http.disconnect":
            return
