"""A tiny misbehaving HTTP/1.1 server on 127.0.0.1 for fault-injection tests (threads and sockets).

``FaultServer(mode)`` listens on a free port, counts the connections it accepts (``connections``) and
every request once its full body has been read, records it (method, path, headers, body, time) and then
behaves per ``Mode``:

- ``HANG``: read the body, then never answer (until the server is closed at the end of the test);
- ``CLOSE``: read the body, then close the connection without a byte of answer;
- ``ERROR_500``: HTTP 500 with a ``{code, msg, data}`` envelope (``msg`` is ``error_msg``);
- ``UNAVAILABLE_503``: HTTP 503 with a plain-text body, no envelope (``unavailable_body``);
- ``RATE_LIMITED_429``: HTTP 429 with ``Retry-After`` (and an envelope) on the first request, then as ``OK``;
- ``BROKEN_BODY``: HTTP 200 whose JSON body is cut off half-way (valid HTTP framing, invalid JSON);
- ``ENVELOPE_ERROR_200``: HTTP 200 with an envelope whose ``code`` is ``error_status`` (``msg``:
  ``error_msg``), as services that answer every call with 200 do;
- ``UNAUTHORIZED_401``: HTTP 401 with a plain-string body (``unauthorized_body``);
- ``ERROR_THEN_CLOSE``: ``POST /payment`` as ``OK``; every other request gets HTTP ``error_status``
  (an envelope) *without* ``Connection: close``, then the server waits ``close_delay`` seconds without
  reading and closes the connection, as uvicorn does after an exception in the application. A request
  the client sends on that connection meanwhile is never read nor counted (the close resets it);
- ``OK``: HTTP 200 with a valid envelope for the path asked (payment result, product, subscription).

With ``body_delay`` the server sends each answer's head, waits that long, then sends its body (the
client sees the status before the body has arrived).

``refused_url()`` is an address with nothing listening (a port bound, then closed).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import Any, Self

HOST = "127.0.0.1"
_POLL = 0.02


class Mode(Enum):
    HANG = "hang"
    CLOSE = "close"
    ERROR_500 = "500"
    UNAVAILABLE_503 = "503"
    RATE_LIMITED_429 = "429"
    BROKEN_BODY = "broken-body"
    ENVELOPE_ERROR_200 = "envelope-error-200"
    UNAUTHORIZED_401 = "401"
    ERROR_THEN_CLOSE = "error-then-close"
    OK = "ok"


@dataclass(frozen=True)
class Received:
    """One request the server read in full."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # time.time() when the body had been read


def payment_data() -> dict[str, Any]:
    return {
        "orderId": "ord_fault_1",
        "sessionId": "ses_fault_1",
        "paymentInstrumentId": "pi_fault_1",
        "status": 1,
        "amount": 12.30,
        "currency": "USD",
    }


def product_data() -> dict[str, Any]:
    return {
        "productId": "prod_fault_1",
        "name": "Fault product",
        "active": True,
        "priceList": [
            {
                "priceId": "price_fault_1",
                "productId": "prod_fault_1",
                "unitAmount": 9.99,
                "active": True,
                "createTime": 1_700_000_000_000,
            }
        ],
        "createTime": 1_700_000_000_000,
        "updateTime": 1_700_000_000_000,
    }


def subscription_data(subscription_id: str) -> dict[str, Any]:
    return {
        "subscriptionId": subscription_id,
        "customerId": "cus_fault_1",
        "productId": "prod_fault_1",
        "priceId": "price_fault_1",
        "quantity": 1,
        "createTime": 1_700_000_000_000,
        "paymentMethodType": "CARD",
        "cancelAtPeriodEnd": False,
        "elapsedCycles": 2,
        "recurringInvoiceItem": {"invoiceItemId": "ii_1", "amount": 9.99, "proration": False},
    }


def envelope(data: Any, *, code: int = 200, msg: str = "success") -> bytes:
    return json.dumps({"code": code, "msg": msg, "data": data}, separators=(",", ":")).encode()


@dataclass
class FaultServer:
    """See the module docstring. Use as a context manager, or call ``start`` and ``close``."""

    mode: Mode
    retry_after: str = "0.1"
    unauthorized_body: str = "Unauthorized: invalid API key"
    error_msg: str = "internal error"
    unavailable_body: str = "Service Unavailable"
    error_status: int = 500
    close_delay: float = 0.05
    body_delay: float = 0.0
    received: list[Received] = field(default_factory=list, init=False)
    accepted: int = field(default=0, init=False)
    port: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False, repr=False)
    _conns: list[socket.socket] = field(default_factory=list, init=False, repr=False)
    _listener: socket.socket | None = field(default=None, init=False, repr=False)
    _answered_429: bool = field(default=False, init=False, repr=False)

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((HOST, 0))
        listener.listen(128)
        listener.settimeout(_POLL)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._spawn(self._accept_loop)
        return self

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            _close_quietly(conn)
        for thread in list(self._threads):
            thread.join(timeout=2)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.received)

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        with self._lock:
            return self.accepted

    def requests(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    # -- serving ------------------------------------------------------------------------------

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(_POLL)
            with self._lock:
                self._conns.append(conn)
                self.accepted += 1
            self._spawn(self._serve, conn)

    def _recv(self, conn: socket.socket) -> bytes | None:
        """Some bytes, b"" at end of stream, None when the server is stopping."""
        while not self._stop.is_set():
            try:
                return conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return b""
        return None

    def _read_request(self, conn: socket.socket, buffer: bytearray) -> Received | None:
        while b"\r\n\r\n" not in buffer:
            chunk = self._recv(conn)
            if not chunk:
                return None
            buffer += chunk
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = bytearray(rest)
        while len(body) < length:
            chunk = self._recv(conn)
            if not chunk:
                return None
            body += chunk
        buffer[:] = body[length:]
        return Received(method, target, headers, bytes(body[:length]), time.time())

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        try:
            while not self._stop.is_set():
                request = self._read_request(conn, buffer)
                if request is None:
                    return
                with self._lock:
                    self.received.append(request)
                if self.mode is Mode.HANG:
                    self._stop.wait()
                    return
                if self.mode is Mode.CLOSE:
                    return
                if self.mode is Mode.ERROR_THEN_CLOSE and not _is_payment(request):
                    status = self.error_status
                    self._send(conn, _response(status, envelope(None, code=status, msg=self.error_msg)))
                    self._stop.wait(self.close_delay)
                    return
                self._send(conn, self._answer(request))
        except OSError:
            return
        finally:
            _close_quietly(conn)

    def _send(self, conn: socket.socket, answer: bytes) -> None:
        if self.body_delay <= 0:
            conn.sendall(answer)
            return
        head, _, body = answer.partition(b"\r\n\r\n")
        conn.sendall(head + b"\r\n\r\n")
        self._stop.wait(self.body_delay)
        conn.sendall(body)

    def _answer(self, request: Received) -> bytes:
        mode = self.mode
        if mode is Mode.RATE_LIMITED_429:
            with self._lock:
                first, self._answered_429 = not self._answered_429, True
            if first:
                return _response(
                    429,
                    envelope(None, code=429, msg="too many requests"),
                    extra={"Retry-After": self.retry_after},
                )
            mode = Mode.OK
        if mode is Mode.ERROR_500:
            return _response(500, envelope(None, code=500, msg=self.error_msg))
        if mode is Mode.UNAVAILABLE_503:
            return _response(503, self.unavailable_body.encode(), content_type="text/plain")
        if mode is Mode.ENVELOPE_ERROR_200:
            return _response(200, envelope(None, code=self.error_status, msg=self.error_msg))
        if mode is Mode.UNAUTHORIZED_401:
            return _response(401, self.unauthorized_body.encode(), content_type="text/plain")
        body = self._ok_body(request)
        if mode is Mode.BROKEN_BODY:
            return _response(200, body[: len(body) // 2])
        return _response(200, body)

    @staticmethod
    def _ok_body(request: Received) -> bytes:
        path = request.path.split("?", 1)[0]
        if request.method == "POST" and path == "/payment":
            return envelope(payment_data())
        if request.method == "POST" and path == "/product":
            return envelope(product_data())
        if request.method == "GET" and path.startswith("/subscription/"):
            return envelope(subscription_data(path.removeprefix("/subscription/")))
        return envelope(None, code=404, msg="not found")


def _is_payment(request: Received) -> bool:
    return request.method == "POST" and request.path.split("?", 1)[0] == "/payment"


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _response(
    status: int, body: bytes, *, content_type: str = "application/json", extra: dict[str, str] | None = None
) -> bytes:
    headers = {"Content-Type": content_type, "Content-Length": str(len(body)), **(extra or {})}
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return head.encode("latin-1") + b"\r\n" + body


def _close_quietly(conn: socket.socket) -> None:
    with suppress(OSError):
        conn.close()


def refused_url() -> str:
    """``http://127.0.0.1:PORT`` where nothing listens: a port bound, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    return f"http://{HOST}:{port}"


@contextmanager
def fault_server(mode: Mode, **options: Any) -> Iterator[FaultServer]:
    with FaultServer(mode, **options) as server:
        yield server
