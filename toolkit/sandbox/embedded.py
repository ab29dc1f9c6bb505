"""The sandbox in-process: uvicorn in a daemon thread on a free loopback port.

``start_server`` binds the socket itself (so port 0 picks a free port) and returns once the server
accepts connections. ``embedded_sandbox`` is the process-wide default the client falls back to when
no ``TOOLKIT_BASE_URL`` is configured: one server per process and database, started once.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from pydantic import SecretStr

from toolkit.sandbox import faults, store
from toolkit.sandbox.app import DEFAULT_TOLERANCE_S, create_app
from toolkit.sandbox.db import DATABASE_NAME, Database
from toolkit.sandbox.protocol import SandboxProtocol

START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RunningSandbox:
    """A sandbox serving in a background thread. ``repr`` never shows the key."""

    base_url: str
    api_key: SecretStr
    db_path: Path
    _server: uvicorn.Server = field(repr=False, compare=False)
    _thread: threading.Thread = field(repr=False, compare=False)

    def stop(self) -> None:
        """Ask uvicorn to exit, and wait for its thread (open connections are closed)."""
        self._server.should_exit = True
        self._thread.join(timeout=START_TIMEOUT_S)

    @property
    def running(self) -> bool:
        """True while the server thread serves and was not asked to stop."""
        return self._thread.is_alive() and not self._server.should_exit


def _listening(host: str, port: int) -> socket.socket:
    """A socket bound and listening on ``host:port`` (0: a free port), IPv6 when the host is."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)  # TCP_NODELAY: ``protocol.no_delay``
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def start_server(
    *,
    db_path: Path,
    api_key: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    timestamp_tolerance_s: float = DEFAULT_TOLERANCE_S,
    log_requests: bool = False,
) -> RunningSandbox:
    """Serve the sandbox for ``db_path`` in a daemon thread; returns when it accepts connections.

    With ``api_key`` None the key stored in the database is used (generated on first creation),
    so every process opening the same database agrees on it. Fault rules left in the database are
    cleared: they never survive a restart. ``log_requests`` prints a line per request on stdout.
    """
    db_path = Path(db_path)
    key = api_key if api_key is not None else store.stored_api_key(Database(db_path))
    app = create_app(
        db_path=db_path, api_key=key, timestamp_tolerance_s=timestamp_tolerance_s, log_requests=log_requests
    )
    faults.clear_rules(app.state.sandbox.db)
    sock = _listening(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        http=SandboxProtocol,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported to the caller below, never lost
            failure.append(exc)
        finally:
            sock.close()

    thread = threading.Thread(target=serve, name=f"toolkit-sandbox-{bound_port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while thread.is_alive() and not server.started and time.monotonic() < deadline:
        time.sleep(0.005)
    if not server.started:
        server.should_exit = True
        thread.join(timeout=5)
        raise RuntimeError(f"the sandbox did not start: {failure[0] if failure else 'unknown error'}")
    url_host = f"[{host}]" if ":" in host else host
    return RunningSandbox(
        base_url=f"http://{url_host}:{bound_port}",
        api_key=SecretStr(key),
        db_path=db_path,
        _server=server,
        _thread=thread,
    )


_EMBEDDED: dict[Path, RunningSandbox] = {}
_EMBEDDED_LOCK = threading.Lock()


def embedded_sandbox(home: Path) -> RunningSandbox:
    """The process-wide sandbox on ``home / "sandbox.sqlite"``: started once, then reused."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    db_path = (home / DATABASE_NAME).resolve()
    with _EMBEDDED_LOCK:
        running = _EMBEDDED.get(db_path)
        if running is None or not running.running:
            running = start_server(db_path=db_path)
            _EMBEDDED[db_path] = running
        return running
