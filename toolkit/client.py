"""``Client`` and ``AsyncClient``: the three calls of the API, typed and exact, with safe retries.

All logic that does no I/O lives in ``_BaseClient``: resolving where to connect, building each
attempt's headers, deciding retries (``toolkit.retries``), and turning answers into models or
errors. The attempt loop is a generator that yields plain steps (send these bytes, sleep) and
receives plain answers; ``Client`` drives it with httpx, ``AsyncClient`` with aiohttp's connection
pool directly (httpx's async pool, or httpx on top of aiohttp, costs several times aiohttp's own
throughput). The loop is written once.

Connections: a POST that may have reached the service is never sent again, so it must go out on a
connection that is alive, or "unknown outcome" would also cover requests the service never saw.
Servers close connections without warning in two cases, and both drivers avoid them:

- after an error: uvicorn, for one, answers 500 after an exception and then closes the connection
  without having said ``Connection: close``; many servers do the same after 4xx answers. A request
  sent on that connection in the moment before the close arrives is lost. So a connection whose
  response had an error status (``keeps_connection``) is closed, never returned to the pool.
- when idle: a server closes a kept-alive connection after its keep-alive timeout (5 s for
  uvicorn, Node.js and Apache httpd; 2 s for gunicorn's async workers), and a request sent just
  before the close arrives is lost the same way. The pools keep an idle connection for at most
  ``KEEPALIVE_EXPIRY``, well below those (httpx's default is 5 s, aiohttp's 15 s), so no request
  leaves on a connection the server may be closing. Under load a connection is reused within
  milliseconds; only a pause longer than that costs one new connection.

A success leaves its connection in the pool, so the normal path's throughput is unchanged.

The API key never leaves the headers of the outgoing request: not in a repr, an error, a log line
or an exception's context. The drivers hand the loop a ``Failure``, never the library's exception
(whose request object holds the headers in clear), and any text from the service is redacted.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import httpx
from aiohttp.connector import Connection
from pydantic import BaseModel, SecretStr, ValidationError

from toolkit import retries
from toolkit.config import Settings, load_settings
from toolkit.environment import Environment, resolve_environment
from toolkit.errors import (
    APIError,
    AuthenticationError,
    ConfigurationError,
    NotFoundError,
    OutcomeUnknownError,
    RequestValidationError,
    TransportError,
)
from toolkit.models import (
    SUCCESS_CODE,
    PaymentRequest,
    PaymentResult,
    Product,
    ProductRequest,
    Subscription,
    describe_errors,
    merge_fields,
    parse_json,
    to_json_bytes,
)

#: Retries and unknown outcomes are logged here at INFO, as httpx logs each request: an engineer
#: sees them with ``logging.basicConfig(level=logging.INFO)``. A line names the call, never the key.
logger = logging.getLogger("toolkit.client")

ModelT = TypeVar("ModelT", bound=BaseModel)

USER_AGENT = "toolkit/0.1"
MAX_CONNECTIONS = 100
MAX_KEEPALIVE_CONNECTIONS = 20  # Client's idle connections (httpx's default)
#: Seconds an idle connection stays in the pool: below common server keep-alive timeouts (module docstring).
KEEPALIVE_EXPIRY = 1.0


def path_segment(value: str, what: str) -> str:
    """An id as one segment of a URL path, escaped: ``../clock/resume?`` must name no other route."""
    if not isinstance(value, str) or not value.strip():
        raise RequestValidationError(what, [("id", "must be a non-empty string")])
    return quote(value, safe="")


def keeps_connection(status: int) -> bool:
    """Whether a connection goes back to the pool after a response with ``status``: only after a success.

    After an error status the server may close the connection without saying so; the next request,
    perhaps a POST that cannot be sent again, must not be the one that finds out.
    """
    return status < 400


def _says_done_or_no(code: int | None) -> bool:
    """Whether an HTTP 2xx answer's envelope settles a create call: success, or a refusal (a 4xx
    code). The spec shows no other code; a 5xx one (``system busy``) may come after the order was
    made, so it is an unknown outcome, never a "no" that a re-run would send again."""
    return code is not None and (code == SUCCESS_CODE or 400 <= code < 500)


def _outcome_unknown(
    message: str, *, method: str, path: str, http_status: int | None = None
) -> OutcomeUnknownError:
    """The error for a create call whose result is unknown, logged where it is found (the caller may
    catch it and record it, as the journal does, and a log still shows it happened)."""
    logger.info("%s", message)
    return OutcomeUnknownError(message, method=method, path=path, http_status=http_status)


@dataclass(frozen=True)
class _Send:
    """Step: send one attempt. ``repr`` leaves the headers out: they hold the key."""

    method: str
    url: str
    headers: dict[str, str] = field(repr=False)
    body: bytes | None


@dataclass(frozen=True)
class _Answer:
    """What came back: all the attempt loop needs of a response, from either library."""

    status: int
    retry_after: str | None
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class _Sleep:
    """Step: wait before the next attempt."""

    seconds: float


_Step = _Send | _Sleep
_Exchange = Generator[_Step, _Answer | retries.Failure | None, _Answer]


class _BaseClient:
    """Everything that does no I/O: connection settings, requests, retry decisions, decoding."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        connect_timeout: float | None = None,
        settings: Settings | None = None,
        environment: Environment | None = None,
    ) -> None:
        settings = settings or load_settings()
        if environment is not None and (base_url is not None or api_key is not None):
            raise ConfigurationError("give an environment, or base_url and api_key: not both")
        self.environment: Environment = environment or resolve_environment(
            settings, base_url=base_url, api_key=api_key
        )
        self.base_url: str = self.environment.base_url
        self._api_key: SecretStr = self.environment.api_key
        self.timeout: float = timeout if timeout is not None else settings.timeout
        self.connect_timeout: float = (
            connect_timeout if connect_timeout is not None else settings.connect_timeout
        )
        self.max_retries: int = max_retries if max_retries is not None else settings.max_retries
        self._owns_http = True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, api_key=SecretStr('**********'), "
            f"timeout={self.timeout}, max_retries={self.max_retries})"
        )

    def with_options(self, *, timeout: float | None = None, max_retries: int | None = None) -> Self:
        """A copy with other per-call options, sharing this client's connections (this one closes them)."""
        clone = copy.copy(self)
        if timeout is not None:
            clone.timeout = timeout
        if max_retries is not None:
            clone.max_retries = max_retries
        clone._owns_http = False
        return clone

    # -- building requests -------------------------------------------------------------------

    def _timeouts(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout, connect=min(self.connect_timeout, self.timeout))

    def _request(self, method: str, path: str, body: bytes | None, params: Mapping[str, str] | None) -> _Send:
        """One attempt, with a fresh X-Timestamp (ms since the epoch, as a string)."""
        headers = {
            "X-API-KEY": self._api_key.get_secret_value(),
            "X-Timestamp": str(time.time_ns() // 1_000_000),
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        url = self.base_url + path + ("?" + urlencode(params) if params else "")
        return _Send(method, url, headers, body)

    def _exchange(
        self, method: str, path: str, *, body: bytes | None = None, params: Mapping[str, str] | None = None
    ) -> _Exchange:
        """The attempt loop: yields sends and sleeps, returns the final answer or raises."""
        idempotent = method == "GET"
        retries_done = 0
        while True:
            outcome = yield self._request(method, path, body, params)
            if isinstance(outcome, retries.Failure):
                verdict = retries.classify_failure(outcome, idempotent=idempotent)
                if verdict is retries.Verdict.RETRY and retries_done < self.max_retries:
                    yield self._retry(
                        method, path, outcome.value, retries.retry_delay(retries_done), retries_done
                    )
                    retries_done += 1
                    continue
                raise self._transport_error(method, path, outcome, verdict)
            assert isinstance(outcome, _Answer)
            verdict = retries.classify_status(outcome.status, idempotent=idempotent)
            if verdict is retries.Verdict.RETRY and retries_done < self.max_retries:
                delay = retries.retry_delay(retries_done, outcome.retry_after)
                yield self._retry(method, path, f"HTTP {outcome.status}", delay, retries_done)
                retries_done += 1
                continue
            return outcome

    def _retry(self, method: str, path: str, reason: str, delay: float, retries_done: int) -> _Sleep:
        """The wait before attempt ``retries_done + 2``, logged: a retry is invisible otherwise."""
        logger.info(
            "%s %s: %s; retry %d of %d in %.2f s",
            method,
            path,
            reason,
            retries_done + 1,
            self.max_retries,
            delay,
        )
        return _Sleep(delay)

    # -- decoding answers --------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        secret = self._api_key.get_secret_value()
        return text.replace(secret, "**********") if secret else text

    def _transport_error(
        self, method: str, path: str, failure: retries.Failure, verdict: retries.Verdict
    ) -> TransportError | OutcomeUnknownError:
        where = f"{method} {path}"
        if verdict is retries.Verdict.UNKNOWN:
            return _outcome_unknown(
                f"{where}: the outcome is unknown ({failure.value} after the request was sent); "
                "it was not sent again, because the service may have acted on it",
                method=method,
                path=path,
            )
        reached = failure is not retries.Failure.NOT_SENT
        return TransportError(
            f"{where}: {failure.value} after {self.max_retries + 1} attempt(s) to {self.base_url}"
            + ("" if reached else "; is the service running? check TOOLKIT_BASE_URL"),
            may_have_reached_server=reached,
        )

    def _data(self, response: _Answer, method: str, path: str) -> Any:
        """The envelope's ``data``, or the error the status and envelope call for."""
        status = response.status
        creating = method != "GET"
        if status == 401:
            raise AuthenticationError(self._redact(response.text))
        try:
            envelope = parse_json(response.content)
        except ValueError:
            envelope = None
        is_envelope = isinstance(envelope, dict) and isinstance(envelope.get("code"), int)
        msg = self._redact(str(envelope.get("msg", ""))) if is_envelope else ""
        code = envelope["code"] if is_envelope else None
        if creating and (status >= 500 or (200 <= status < 300 and not _says_done_or_no(code))):
            said = msg if code in (None, SUCCESS_CODE) else f"code {code}: {msg}"
            raise _outcome_unknown(
                f"{method} {path}: HTTP {status} {said or '(no envelope)'}; the call may have taken "
                "effect and was not sent again",
                method=method,
                path=path,
                http_status=status,
            )
        if not is_envelope:
            raise APIError(
                f"{method} {path}: HTTP {status}, body is not an envelope",
                http_status=status,
                code=None,
                msg=self._redact(response.text)[:200],
            )
        assert isinstance(envelope, dict)
        if not 200 <= status < 300 or code != SUCCESS_CODE:
            error = NotFoundError if status == 404 else APIError
            raise error(
                f"{method} {path}: HTTP {status}, code {code}: {msg}", http_status=status, code=code, msg=msg
            )
        return envelope.get("data")

    def _model(self, model: type[ModelT], response: _Answer, method: str, path: str) -> ModelT:
        data = self._data(response, method, path)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            fields = "; ".join(f"{f}: {m}" for f, m in describe_errors(exc))
            if method != "GET":
                raise _outcome_unknown(
                    f"{method} {path}: the response does not match {model.__name__} ({fields}); "
                    "the call may have taken effect",
                    method=method,
                    path=path,
                    http_status=response.status,
                ) from None
            raise APIError(
                f"{method} {path}: response does not match {model.__name__}: {fields}",
                http_status=response.status,
                code=SUCCESS_CODE,
                msg=None,
            ) from None

    @staticmethod
    def _subscription_path(subscription_id: str) -> str:
        return "/subscription/" + path_segment(subscription_id, "subscription id")

    @staticmethod
    def _payment_body(request: PaymentRequest | Mapping[str, Any] | None, fields: dict[str, Any]) -> bytes:
        return PaymentRequest.build(merge_fields(request, fields)).to_json()

    @staticmethod
    def _product_body(request: ProductRequest | Mapping[str, Any] | None, fields: dict[str, Any]) -> bytes:
        return ProductRequest.build(merge_fields(request, fields)).to_json()


class Client(_BaseClient):
    """Blocking client. ``Client()`` alone talks to the embedded sandbox (or ``TOOLKIT_BASE_URL``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        limits = httpx.Limits(
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
            keepalive_expiry=KEEPALIVE_EXPIRY,
        )
        self._http = httpx.Client(timeout=self._timeouts(), follow_redirects=False, limits=limits)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections (a copy from ``with_options`` leaves them to its origin)."""
        if self._owns_http:
            self._http.close()

    def _send(self, step: _Send) -> _Answer | retries.Failure:
        try:
            request = self._http.build_request(
                step.method, step.url, content=step.body, headers=step.headers, timeout=self._timeouts()
            )
            response = self._http.send(request, stream=True)
            try:
                content = response.read()
                if not keeps_connection(response.status_code):
                    _close_connection(response)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            return retries.failure_of(exc)
        return _Answer(response.status_code, response.headers.get("retry-after"), content)

    def _drive(self, exchange: _Exchange) -> _Answer:
        step: _Step = next(exchange)
        while True:
            if isinstance(step, _Sleep):
                time.sleep(step.seconds)
                outcome = None
            else:
                outcome = self._send(step)
            try:
                step = exchange.send(outcome)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    def call(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None
    ) -> Any:
        """Any call on the service (used by the sandbox controls): returns the envelope's ``data``."""
        body = None if json is None else to_json_bytes(json)
        response = self._drive(self._exchange(method, path, body=body, params=params))
        return self._data(response, method, path)

    def get_bytes(self, path: str, *, params: Mapping[str, str] | None = None) -> bytes:
        """A GET whose answer is not an envelope (a CSV export): the body, after status checks."""
        response = self._drive(self._exchange("GET", path, params=params))
        if response.status != 200:
            self._data(response, "GET", path)
        return response.content

    def create_payment(
        self, request: PaymentRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> PaymentResult:
        """POST /payment. Never re-sent once it may have reached the service."""
        body = self._payment_body(request, fields)
        response = self._drive(self._exchange("POST", "/payment", body=body))
        return self._model(PaymentResult, response, "POST", "/payment")

    def create_product(
        self, request: ProductRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Product:
        """POST /product, with its prices."""
        body = self._product_body(request, fields)
        response = self._drive(self._exchange("POST", "/product", body=body))
        return self._model(Product, response, "POST", "/product")

    def get_subscription(self, subscription_id: str) -> Subscription:
        """GET /subscription/{id}; retried on transport failures, 408, 429 and 5xx."""
        path = self._subscription_path(subscription_id)
        response = self._drive(self._exchange("GET", path))
        return self._model(Subscription, response, "GET", path)


def _close_connection(response: httpx.Response) -> None:
    """Close the connection under ``response`` while the response still holds it (streamed, not closed).

    httpcore's documented ``network_stream`` response extension is the connection's socket. When the
    response is then closed, the pool checks its connections (``has_expired``) and drops this one,
    whose socket it sees as closed by the server (httpcore treats a socket without a file descriptor
    as readable, that is at end of stream). Closing the socket while the response holds the
    connection means no other thread can have taken it from the pool in between.
    """
    network_stream = response.extensions.get("network_stream")
    if network_stream is not None:
        network_stream.close()


class _ClosingOnError(aiohttp.ClientResponse):
    """aiohttp's response, except that a connection whose status is an error is closed, not pooled.

    aiohttp gives the connection back to the pool the moment the body has been read, which for a
    small body can be inside ``start``, before the caller sees the status; so the status is checked
    here, as soon as it is known, with no ``await`` in between.
    """

    async def start(self, connection: Connection) -> aiohttp.ClientResponse:
        protocol = connection.protocol
        response = await super().start(connection)
        if protocol is not None and not keeps_connection(self.status):
            if self.connection is None:  # the whole body came with the headers: already pooled
                protocol.close()  # the pool skips a closed connection
            else:
                protocol.force_close()  # closed instead of pooled once the body is read
        return response


class _SessionHolder:
    """aiohttp's session, made on first use inside the running loop and shared by ``with_options``
    copies; made again in a new loop once the old one has ended (a second ``asyncio.run``)."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self.session is not None and self.loop is not loop:
            # A session belongs to its loop: used from another, it sent the request and then
            # failed with a RuntimeError, a payment made and reported as a crash. Refused before
            # sending while its loop lives; left behind once that loop has closed.
            if self.loop is not None and not self.loop.is_closed():
                raise ConfigurationError(
                    "this AsyncClient is in use by another event loop (nothing was sent): "
                    "make one AsyncClient per loop or thread"
                )
            self.session = None
        if self.session is None or self.session.closed:
            self.loop = loop
            connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, keepalive_timeout=KEEPALIVE_EXPIRY)
            self.session = aiohttp.ClientSession(connector=connector, response_class=_ClosingOnError)
            # aiohttp re-sends an idempotent request once by itself when a kept-alive connection
            # drops; the toolkit counts and bounds its own attempts (as aiohttp's TestClient does).
            self.session._retry_connection = False
        return self.session

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


class AsyncClient(_BaseClient):
    """Asynchronous client on aiohttp's connection pool, for many calls at once."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._sessions = _SessionHolder()
        self._timeout_for: tuple[float, float] | None = None
        self._timeout = aiohttp.ClientTimeout()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections (a copy from ``with_options`` leaves them to its origin)."""
        if self._owns_http:
            await self._sessions.close()

    def _aiohttp_timeout(self) -> aiohttp.ClientTimeout:
        """aiohttp's timeouts for this client's options (made once per value: it is on every request)."""
        wanted = (self.connect_timeout, self.timeout)
        if self._timeout_for != wanted:
            self._timeout_for = wanted
            self._timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=min(wanted), sock_read=self.timeout
            )
        return self._timeout

    async def _send(self, step: _Send) -> _Answer | retries.Failure:
        timeout = self._aiohttp_timeout()
        try:
            async with self._sessions.get().request(
                step.method,
                step.url,
                data=step.body,
                headers=step.headers,
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                content = await response.read()
                return _Answer(response.status, response.headers.get("Retry-After"), content)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return retries.failure_of(exc)

    async def _drive(self, exchange: _Exchange) -> _Answer:
        step: _Step = next(exchange)
        while True:
            if isinstance(step, _Sleep):
                await asyncio.sleep(step.seconds)
                outcome = None
            else:
                outcome = await self._send(step)
            try:
                step = exchange.send(outcome)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    async def call(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None
    ) -> Any:
        """Any call on the service (used by the sandbox controls): returns the envelope's ``data``."""
        body = None if json is None else to_json_bytes(json)
        response = await self._drive(self._exchange(method, path, body=body, params=params))
        return self._data(response, method, path)

    async def create_payment(
        self, request: PaymentRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> PaymentResult:
        """POST /payment. Never re-sent once it may have reached the service."""
        body = self._payment_body(request, fields)
        response = await self._drive(self._exchange("POST", "/payment", body=body))
        return self._model(PaymentResult, response, "POST", "/payment")

    async def create_product(
        self, request: ProductRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Product:
        """POST /product, with its prices."""
        body = self._product_body(request, fields)
        response = await self._drive(self._exchange("POST", "/product", body=body))
        return self._model(Product, response, "POST", "/product")

    async def get_subscription(self, subscription_id: str) -> Subscription:
        """GET /subscription/{id}; retried on transport failures, 408, 429 and 5xx."""
        path = self._subscription_path(subscription_id)
        response = await self._drive(self._exchange("GET", path))
        return self._model(Subscription, response, "GET", path)
