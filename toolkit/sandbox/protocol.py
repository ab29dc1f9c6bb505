"""The HTTP protocol the sandbox is served with: uvicorn's h11 protocol, plus a handle on the connection.

An ASGI application cannot close a connection without answering: if it raises before starting a
response, uvicorn answers 500. The fault modes ``drop_*`` and ``hang_after_commit`` need exactly that
silence, so every connection puts a ``Connection`` into the ASGI scope's ``state`` (under
``CONNECTION_KEY``) through which the application can close it, and learn that the server is
stopping (a hanging request must not hold up a clean shutdown).

``start_server`` (the embedded sandbox) and ``toolkit sandbox`` both serve with ``SandboxProtocol``;
an application served any other way has no ``Connection``, and the modes that need one are refused.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

CONNECTION_KEY = "toolkit.connection"


class Connection:
    """One client connection, as the application may act on it."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        #: Set when the server begins shutting down: a request waiting on purpose stops waiting.
        self.stopping = asyncio.Event()

    def drop(self) -> None:
        """Close the connection without a byte of answer (uvicorn then sees the client as gone)."""
        self._transport.close()


class SandboxProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11) whose requests carry their ``Connection`` in scope ``state``."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Give each connection a handle that a fault can close without answering."""
        no_delay(transport)
        self.toolkit_connection = Connection(transport)
        # uvicorn copies app_state into each request's scope["state"]; this connection's copy holds
        # its handle (the dict shared by all connections is left as it is).
        self.app_state = {**self.app_state, CONNECTION_KEY: self.toolkit_connection}
        super().connection_made(transport)

    def shutdown(self) -> None:
        """Tell the connection's handle the server stops, so a hanging fault lets go."""
        self.toolkit_connection.stopping.set()
        super().shutdown()


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send each answer as soon as it is written (TCP_NODELAY), whoever made the listening socket.

    asyncio sets it only on sockets whose protocol number is TCP, and the listening socket uvicorn
    makes for several workers has none: there Nagle's algorithm held an answer's body back until
    the client acknowledged its headers, which a client delays by 40 ms. Every request on a
    kept-alive connection to ``toolkit sandbox --workers 2`` took 44 ms.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def connection_of(scope: Mapping[str, Any]) -> Connection | None:
    """The connection a request came on, when the app is served with ``SandboxProtocol``."""
    state = scope.get("state")
    found = state.get(CONNECTION_KEY) if isinstance(state, Mapping) else None
    return found if isinstance(found, Connection) else None
