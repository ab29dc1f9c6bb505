"""Dependencies declared once: the sandbox state (store, key, clock tolerance) and authentication."""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from pydantic import SecretStr

from toolkit.sandbox.http import Unauthorized
from toolkit.sandbox.store import Database


@dataclass(frozen=True)
class SandboxState:
    """What every request needs; held in ``app.state.sandbox``."""

    db: Database
    api_key: SecretStr
    timestamp_tolerance_ms: int

    @property
    def key_bytes(self) -> bytes:
        return self.api_key.get_secret_value().encode()


def get_state(request: Request) -> SandboxState:
    state: SandboxState = request.app.state.sandbox
    return state


def get_db(request: Request) -> Database:
    """The store of this app (one connection per server thread)."""
    return get_state(request).db


async def require_auth(request: Request) -> None:
    """X-API-KEY must match (constant time) and X-Timestamp be ms within the tolerance, both ways."""
    state = get_state(request)
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


Authenticated = Depends(require_auth)
DbDep = Annotated[Database, Depends(get_db)]
StateDep = Annotated[SandboxState, Depends(get_state)]
