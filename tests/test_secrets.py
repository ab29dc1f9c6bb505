"""The API key never shows: grep everything the client can print, raise or log for a canary key.

A random canary key is used with ``Client``, ``AsyncClient``, ``Settings`` and ``Environment``
against the fault server (``tests/faults.py``, some modes echoing the key back) and a refused port.
Checked for the canary: repr/str of every object, every raised exception (str, repr, attributes,
the whole cause/context chain), its formatted traceback (``traceback.format_exception``), the
locals of every non-test frame of that traceback (what ``--showlocals``, Sentry or rich tracebacks
print), and every record logged at DEBUG by every logger (httpx, httpcore, aiohttp, asyncio, toolkit).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.faults import FaultServer, Mode, refused_url
from toolkit import retries
from toolkit.client import AsyncClient, Client
from toolkit.config import Settings, load_settings
from toolkit.environment import resolve_environment
from toolkit.errors import ToolkitError

pytestmark = pytest.mark.timeout(60)

CANARY = "sk_canary_" + secrets.token_hex(16)
CANARY_PARTS = [CANARY, CANARY[10:26]]  # the whole key, and 16 hex chars of its random part
TESTS_DIR = str(Path(__file__).resolve().parent)
LOGGERS = ["", "httpx", "httpcore", "aiohttp", "asyncio", "toolkit", "h11", "urllib3"]

Flavor = Literal["sync", "async"]
Call = Literal["create_payment", "create_product", "get_subscription"]
FLAVORS: list[Flavor] = ["sync", "async"]
CALLS: list[Call] = ["create_payment", "create_product", "get_subscription"]

PAYMENT: dict[str, Any] = {
    "paymentMethodType": "ALIPAY",
    "returnUrl": "https://shop.example/return",
    "customerId": "cus_1",
    "amount": Decimal("12.30"),
    "currency": "USD",
}
PRODUCT: dict[str, Any] = {"name": "Canary", "priceList": [{"currency": "USD", "unitAmount": "9.99"}]}


@dataclass(frozen=True)
class Scenario:
    name: str
    server: Callable[[], FaultServer] | None  # None: the refused port


SCENARIOS = [
    Scenario("hang", lambda: FaultServer(Mode.HANG)),
    Scenario("close", lambda: FaultServer(Mode.CLOSE)),
    Scenario("refused", None),
    Scenario("500-echo", lambda: FaultServer(Mode.ERROR_500, error_msg=f"bad key {CANARY}")),
    Scenario("503-echo", lambda: FaultServer(Mode.UNAVAILABLE_503, unavailable_body=f"no service {CANARY}")),
    Scenario("429", lambda: FaultServer(Mode.RATE_LIMITED_429)),
    Scenario("broken-body", lambda: FaultServer(Mode.BROKEN_BODY)),
    Scenario("401-echo", lambda: FaultServer(Mode.UNAUTHORIZED_401, unauthorized_body=f"bad key {CANARY}")),
    Scenario("ok", lambda: FaultServer(Mode.OK)),
]
TRANSPORT_SCENARIOS = [s for s in SCENARIOS if s.name in ("hang", "close", "refused")]


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "INITIAL_RETRY_DELAY", 0.01)


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name or None)
    return caplog


@contextmanager
def target(scenario: Scenario) -> Iterator[str]:
    if scenario.server is None:
        yield refused_url()
        return
    with scenario.server() as server:
        yield server.url


def run(flavor: Flavor, call: Call, url: str, *, api_key: str = CANARY, max_retries: int = 1) -> Any:
    """The result of one call, or whatever it raised (any exception, not only ToolkitError)."""
    options: dict[str, Any] = {
        "base_url": url,
        "api_key": api_key,
        "timeout": 0.2,
        "max_retries": max_retries,
    }
    if flavor == "sync":
        try:
            with Client(**options) as client:
                if call == "create_payment":
                    return client.create_payment(**PAYMENT)
                if call == "create_product":
                    return client.create_product(**PRODUCT)
                return client.get_subscription("sub_1")
        except Exception as exc:
            return exc

    async def main() -> Any:
        async with AsyncClient(**options) as client:
            if call == "create_payment":
                return await client.create_payment(**PAYMENT)
            if call == "create_product":
                return await client.create_product(**PRODUCT)
            return await client.get_subscription("sub_1")

    try:
        return asyncio.run(main())
    except Exception as exc:
        return exc


_TRANSPORT_OUTCOMES: dict[tuple[str, Flavor, Call], Any] = {}


def transport_outcome(scenario: Scenario, flavor: Flavor, call: Call) -> Any:
    """One run per case, shared by the tests that only inspect the raised error."""
    key = (scenario.name, flavor, call)
    if key not in _TRANSPORT_OUTCOMES:
        with target(scenario) as url:
            _TRANSPORT_OUTCOMES[key] = run(flavor, call, url)
    return _TRANSPORT_OUTCOMES[key]


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and every cause and context below it (shown or suppressed)."""
    found: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
    return found


def displayed_chain(exc: BaseException) -> list[BaseException]:
    """The exceptions a printed traceback shows (causes, and contexts not suppressed)."""
    shown: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and not any(current is e for e in shown):
        shown.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return shown


def exception_texts(exc: BaseException) -> dict[str, str]:
    """Everything printable about a raised exception, by where it comes from."""
    texts: dict[str, str] = {}
    for n, e in enumerate(chain(exc)):
        texts[f"chain[{n}] {type(e).__name__} str"] = str(e)
        texts[f"chain[{n}] {type(e).__name__} repr"] = repr(e)
        texts[f"chain[{n}] {type(e).__name__} args"] = repr(e.args)
        if isinstance(e, ToolkitError):
            texts[f"chain[{n}] {type(e).__name__} attributes"] = repr(vars(e))
    texts["traceback.format_exception"] = "".join(traceback.format_exception(exc))
    return texts


def traceback_locals(exc: BaseException) -> dict[str, str]:
    """Locals of every frame outside the tests, as ``capture_locals`` tracebacks print them."""
    found: dict[str, str] = {}
    todo = [traceback.TracebackException.from_exception(exc, capture_locals=True)]
    seen: list[traceback.TracebackException] = []
    while todo:
        te = todo.pop()
        if any(te is s for s in seen):
            continue
        seen.append(te)
        for frame in te.stack:
            if frame.filename.startswith(TESTS_DIR):
                continue
            for name, value in (frame.locals or {}).items():
                found[
                    f"{frame.filename.rsplit('site-packages/', 1)[-1]}:{frame.lineno} "
                    f"{frame.name}() local {name}"
                ] = value
        todo += [e for e in (te.__cause__, te.__context__) if e is not None]
    return found


def log_texts(caplog: pytest.LogCaptureFixture) -> dict[str, str]:
    texts = {"caplog.text": caplog.text}
    for n, record in enumerate(caplog.records):
        texts[f"log[{n}] {record.name}"] = record.getMessage() + repr(record.args)
    return texts


def leaks(texts: dict[str, str]) -> list[str]:
    """Where the canary shows, each with a little text around it."""
    found: list[str] = []
    for where, text in texts.items():
        for part in CANARY_PARTS:
            at = text.find(part)
            if at >= 0:
                found.append(f"{where}: ...{text[max(0, at - 80) : at + len(part) + 20]!r}...")
                break
    return found


# -- objects ----------------------------------------------------------------------------------------


def test_canary_is_not_in_reprs_of_clients_settings_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(base_url="http://127.0.0.1:9", api_key=CANARY)
    environment = resolve_environment(settings)
    monkeypatch.setenv("TOOLKIT_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TOOLKIT_API_KEY", CANARY)
    from_env = load_settings()
    texts: dict[str, str] = {}
    for name, obj in [
        ("settings", settings),
        ("environment", environment),
        ("settings from env", from_env),
        ("environment from env", resolve_environment(from_env)),
    ]:
        texts[f"{name} repr"] = repr(obj)
        texts[f"{name} str"] = str(obj)
    texts["settings json"] = settings.model_dump_json()
    texts["settings dump"] = repr(settings.model_dump())
    with Client(base_url="http://127.0.0.1:9", api_key=CANARY) as client, Client() as env_client:
        copy = client.with_options(timeout=1.0, max_retries=0)
        for name, obj in [
            ("client", client),
            ("env client", env_client),
            ("with_options copy", copy),
            ("copy of copy", copy.with_options(max_retries=3)),
        ]:
            texts[f"{name} repr"] = repr(obj)
            texts[f"{name} str"] = str(obj)
            texts[f"{name} format"] = f"{obj}|{obj!r}"
            texts[f"{name} environment"] = repr(obj.environment)
        assert env_client.environment.api_key.get_secret_value() == CANARY
    assert environment.api_key.get_secret_value() == CANARY
    assert not leaks(texts), leaks(texts)


async def test_canary_is_not_in_reprs_of_async_client() -> None:
    async with AsyncClient(base_url="http://127.0.0.1:9", api_key=CANARY) as client:
        copy = client.with_options(max_retries=0)
        texts = {
            "repr": repr(client),
            "str": str(client),
            "copy repr": repr(copy),
            "copy str": str(copy),
            "environment": repr(client.environment),
        }
    assert not leaks(texts), leaks(texts)


# -- every call against every fault -----------------------------------------------------------------


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_canary_not_in_errors_tracebacks_or_debug_logs(
    scenario: Scenario, flavor: Flavor, call: Call, debug_logs: pytest.LogCaptureFixture
) -> None:
    with target(scenario) as url:
        outcome = run(flavor, call, url)
    texts = log_texts(debug_logs)
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, ToolkitError), f"not a ToolkitError: {outcome!r}"
        texts.update(exception_texts(outcome))
    else:
        assert scenario.name in ("ok", "429"), outcome
        texts["result repr"] = repr(outcome)
    assert not leaks(texts), leaks(texts)


@pytest.mark.parametrize("call", ["create_payment", "get_subscription"])
@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("scenario", TRANSPORT_SCENARIOS, ids=[s.name for s in TRANSPORT_SCENARIOS])
def test_canary_not_in_traceback_locals(scenario: Scenario, flavor: Flavor, call: Call) -> None:
    """Fails for AsyncClient: the TransportError/OutcomeUnknownError is implicitly chained to the
    httpx error (raised inside the generator while ``_drive`` handles it), whose traceback holds
    aiohttp's ``ClientSession._request`` frame with the request headers as a local."""
    outcome = transport_outcome(scenario, flavor, call)
    assert isinstance(outcome, ToolkitError), outcome
    found = leaks(traceback_locals(outcome))
    assert not found, found


@pytest.mark.parametrize("call", ["create_payment", "get_subscription"])
@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("scenario", TRANSPORT_SCENARIOS, ids=[s.name for s in TRANSPORT_SCENARIOS])
def test_errors_do_not_show_httpx_exceptions_in_their_traceback(
    scenario: Scenario, flavor: Flavor, call: Call
) -> None:
    """toolkit/client.py promises "Errors are raised ``from None`` so no httpx object (whose header
    repr shows custom headers in clear) rides along in a traceback". Transport errors break it:
    they are raised inside ``_exchange`` while ``_drive`` is handling the httpx exception, so
    ``__context__`` is the httpx error (``.request.headers`` holds the key) and is printed."""
    outcome = transport_outcome(scenario, flavor, call)
    assert isinstance(outcome, ToolkitError), outcome
    foreign = [
        f"{type(e).__module__}.{type(e).__name__}"
        for e in displayed_chain(outcome)
        if not type(e).__module__.startswith("toolkit")
    ]
    assert not foreign, f"{type(outcome).__name__} shows chained {foreign}"
    for e in chain(outcome):
        request = getattr(e, "_request", None)
        assert request is None or CANARY not in repr(request.headers), (
            f"{type(e).__name__}.request.headers carries the key, reachable from the raised error"
        )


# -- keys that are not valid header values ----------------------------------------------------------


@pytest.mark.parametrize("suffix", ["\n", "\r\nX-Injected: 1"], ids=["trailing-newline", "crlf"])
@pytest.mark.parametrize("flavor", FLAVORS)
def test_key_with_line_break_fails_as_toolkit_error_without_the_key(
    flavor: Flavor, suffix: str, debug_logs: pytest.LogCaptureFixture
) -> None:
    """A key read from a file often ends in a newline. Today: sync raises TransportError whose
    printed traceback shows ``httpx.LocalProtocolError: Illegal header value b'sk_canary_...\\n'``
    (and calls it 'may have reached the server'); async raises a bare ValueError from aiohttp."""
    with FaultServer(Mode.OK) as server:
        outcome = run(flavor, "get_subscription", server.url, api_key=CANARY + suffix)
        assert server.count == 0
    texts = log_texts(debug_logs)
    if isinstance(outcome, BaseException):
        texts.update(exception_texts(outcome))
        assert isinstance(outcome, ToolkitError), f"not a ToolkitError: {outcome!r}"
    assert not leaks(texts), leaks(texts)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_non_ascii_key_fails_as_toolkit_error(flavor: Flavor) -> None:
    """Today a UnicodeEncodeError escapes from building the request headers."""
    with FaultServer(Mode.OK) as server:
        outcome = run(flavor, "get_subscription", server.url, api_key=CANARY + "é")
    assert isinstance(outcome, ToolkitError), f"not a ToolkitError: {outcome!r}"
    assert not leaks(exception_texts(outcome))


# -- echoed bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, 150, 170, 180, 195])
def test_truncated_error_body_does_not_keep_part_of_the_key(offset: int) -> None:
    """``APIError.msg`` is ``_redact(response.text[:200])``: truncating *before* redacting leaves the
    head of a key that straddles character 200 in clear. Redact first, then truncate."""
    body = "x" * offset + CANARY + " y"
    with FaultServer(Mode.UNAVAILABLE_503, unavailable_body=body) as server:
        outcome = run("sync", "get_subscription", server.url, max_retries=0)
    assert isinstance(outcome, ToolkitError), outcome
    texts = exception_texts(outcome)
    random_part = CANARY[len("sk_canary_") :]
    partial = [
        where
        for where, text in texts.items()
        if any(random_part[:n] in text for n in range(6, len(random_part) + 1))
    ]
    assert not partial, f"part of the key survives in {partial}: {texts}"
