"""Dependencies declared once: the sandbox state (store, key, clock tolerance, request log) and
authentication."""

from __future__ import annotations

import functools
import hmac
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from pydantic import SecretStr

from toolkit.sandbox.db import Database
from toolkit.sandbox.http import Unauthorized
from toolkit.sandbox.requests_log import RequestLog


@dataclass(frozen=True)
class SandboxState:
    """What every request needs; held in ``app.state.sandbox``."""

    db: Database
    api_key: SecretStr
    timestamp_tolerance_ms: int
    request_log: RequestLog

    @functools.cached_property
    def key_bytes(self) -> bytes:
        """The key as bytes for ``hmac.compare_digest``, encoded once."""
        return self.api_key.get_secret_value().encode()


async def get_state(request: Request) -> SandboxState:
    """Async on purpose: FastAPI runs plain ``def`` dependencies in its thread pool, a hop per call."""
    state: SandboxState = request.app.state.sandbox
    return state


async def get_db(request: Request) -> Database:
    """The store of this app (one connection per server thread); async for the same reason."""
    state: SandboxState = request.app.state.sandbox
    return state.db


async def require_auth(request: Request) -> None:
    """The router-level dependency form of ``authenticate``."""
    authenticate(request)


def authenticate(request: Request) -> SandboxState:
    """X-API-KEY must match (constant time) and X-Timestamp be ms within the tolerance, both ways.

    Returns the sandbox state. The two hot routes (POST /payment, GET /subscription) call it first
    thing instead of declaring dependencies: FastAPI's dependency resolution costs more per request
    than the rest of a cached GET.
    """
    state: SandboxState = request.app.state.sandbox
    key = request.headers.get("x-api-key")
    if key is None:
        raise Unauthorized("Unauthorized: missing X-API-KEY header")
    try:
        given = key.encode("latin-1")
    except UnicodeEncodeError:
        given = b""
    if not hmac.compare_digest(given, state.key_bytes):
        raise Unauthorized("Unauthorized: invalid API key")
    stamp = request.headers.get("x-timestamp")
    if stamp is None:
        raise Unauthorized("Unauthorized: missing X-Timestamp header")
    stamp = stamp.strip()
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 16:
        raise Unauthorized("Unauthorized: X-Timestamp must be milliseconds since the Unix epoch")
    skew = abs(time.time_ns() // 1_000_000 - int(stamp))
    if skew > state.timestamp_tolerance_ms:
        raise Unauthorized(
            f"Unauthorized: X-Timestamp is outside the allowed skew of "
            f"{state.timestamp_tolerance_ms // 1000} s"
        )
    return state


Authenticated = Depends(require_auth)
DbDep = Annotated[Database, Depends(get_db)]
StateDep = Annotated[SandboxState, Depends(get_state)]
