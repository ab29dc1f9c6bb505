"""The sandbox's HTTP protocol on the listening socket uvicorn makes for ``toolkit sandbox --workers N``."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from toolkit.sandbox.protocol import SandboxProtocol


async def _hello(request: Request) -> Response:
    return PlainTextResponse("hello")


def test_answers_go_out_at_once_on_the_socket_uvicorn_makes_for_workers() -> None:
    """uvicorn's listening socket for several workers declares no TCP protocol number, so asyncio
    leaves Nagle's algorithm on: each answer on a kept-alive connection waited 40 ms for the
    client's delayed ACK (44 ms a payment with ``--workers 2``). Every connection sets TCP_NODELAY."""
    config = uvicorn.Config(
        Starlette(routes=[Route("/", _hello)]),
        host="127.0.0.1",
        port=0,
        http=SandboxProtocol,
        lifespan="off",
        log_level="warning",
    )
    sock = config.bind_socket()  # what uvicorn's supervisor hands its workers
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started
        with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=10) as client:
            assert [client.get("/").text for _ in range(3)] == ["hello"] * 3
            connections = list(server.server_state.connections)
            assert len(connections) == 1  # kept alive
            (protocol,) = connections
            server_side = protocol.transport.get_extra_info("socket")
            assert server_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
