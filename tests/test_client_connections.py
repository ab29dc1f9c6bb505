"""Which connections the clients reuse: every one after a success, none after an error status, none
idle past ``KEEPALIVE_EXPIRY``; and a POST after one of the sandbox's own 500s reaches the sandbox.

The fault server (``tests/faults.py``) counts the connections it accepts; the sandbox's export says
which payments it really received.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Literal

import pytest

from tests.conftest import exported_payments
from tests.faults import FaultServer, Mode
from toolkit import client as client_module
from toolkit.client import AsyncClient, Client
from toolkit.errors import (
    APIError,
    AuthenticationError,
    ConfigurationError,
    OutcomeUnknownError,
    ToolkitError,
)
from toolkit.models import PaymentResult, PaymentStatus, Subscription
from toolkit.sandbox import store
from toolkit.sandbox.embedded import RunningSandbox

pytestmark = pytest.mark.timeout(60)

KEY = "sk_test_connections_0123456789"
Flavor = Literal["sync", "async"]
FLAVORS: list[Flavor] = ["sync", "async"]
CALLS = 10
PAYMENT: dict[str, Any] = {
    "paymentMethodType": "ALIPAY",
    "returnUrl": "https://shop.example/return",
    "customerId": "cus_1",
    "amount": "12.30",
    "currency": "USD",
}


def run_calls(flavor: Flavor, url: str, calls: list[str], *, pause: float = 0.0) -> list[Any]:
    """Each call (``pay`` or ``get``) in order on one client, ``pause`` s apart: results or ToolkitErrors."""
    options: dict[str, Any] = {"base_url": url, "api_key": KEY, "timeout": 5.0, "max_retries": 0}
    if flavor == "sync":
        results: list[Any] = []
        with Client(**options) as client:
            for n, call in enumerate(calls):
                time.sleep(pause if n else 0.0)
                try:
                    results.append(
                        client.create_payment(**PAYMENT)
                        if call == "pay"
                        else client.get_subscription("sub_1")
                    )
                except ToolkitError as exc:
                    results.append(exc)
        return results

    async def main() -> list[Any]:
        results: list[Any] = []
        async with AsyncClient(**options) as client:
            for n, call in enumerate(calls):
                await asyncio.sleep(pause if n else 0.0)
                try:
                    results.append(
                        await client.create_payment(**PAYMENT)
                        if call == "pay"
                        else await client.get_subscription("sub_1")
                    )
                except ToolkitError as exc:
                    results.append(exc)
        return results

    return asyncio.run(main())


@pytest.mark.parametrize("body_delay", [0.0, 0.02], ids=["whole", "body-later"])
@pytest.mark.parametrize("flavor", FLAVORS)
def test_successful_calls_share_one_connection(flavor: Flavor, body_delay: float) -> None:
    """The normal path keeps its connection: no reconnect after a success."""
    with FaultServer(Mode.OK, body_delay=body_delay) as server:
        results = run_calls(flavor, server.url, ["pay", "get"] * (CALLS // 2))
        assert server.count == CALLS
        assert server.connections == 1
    assert all(isinstance(r, PaymentResult | Subscription) for r in results), results


@pytest.mark.parametrize("body_delay", [0.0, 0.02], ids=["whole", "body-later"])
@pytest.mark.parametrize(
    ("mode", "status"), [(Mode.ERROR_500, 500), (Mode.UNAVAILABLE_503, 503), (Mode.UNAUTHORIZED_401, 401)]
)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_connection_that_answered_an_error_is_not_reused(
    flavor: Flavor, mode: Mode, status: int, body_delay: float
) -> None:
    """The server keeps these connections open; the client closes each one after its error, whether
    the body came with the status or after it."""
    with FaultServer(mode, body_delay=body_delay) as server:
        results = run_calls(flavor, server.url, ["get", "pay"] * (CALLS // 2))
        assert server.count == CALLS
        assert server.connections == CALLS
    for call, result in zip(["get", "pay"] * (CALLS // 2), results, strict=True):
        # a payment answered 5xx may have taken effect; a GET or a 4xx is an answer
        expected = OutcomeUnknownError if call == "pay" and status >= 500 else APIError
        assert isinstance(result, expected), result
        assert result.http_status == status


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_connection_idle_past_the_keepalive_expiry_is_not_reused(
    flavor: Flavor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below typical server keep-alive timeouts (uvicorn, Node, Apache: 5 s; gunicorn: 2 s)."""
    assert client_module.KEEPALIVE_EXPIRY <= 1.0
    monkeypatch.setattr(client_module, "KEEPALIVE_EXPIRY", 0.05)
    with FaultServer(Mode.OK) as server:
        results = run_calls(flavor, server.url, ["pay", "pay", "pay"], pause=0.3)
        assert server.count == 3
        assert server.connections == 3
    assert all(isinstance(r, PaymentResult) for r in results), results


# -- against the sandbox: uvicorn closes the connection after an exception in the application -------


BOOM = "sub_boom"


@pytest.fixture
def failing_subscription(monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /subscription/sub_boom raises inside the sandbox: its last-resort handler answers 500,
    and uvicorn then closes the connection (without having said ``Connection: close``)."""
    original = store.get_subscription

    def get_subscription(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("subscription_id") == BOOM:
            raise RuntimeError("injected failure")
        return original(*args, **kwargs)

    monkeypatch.setattr(store, "get_subscription", get_subscription)


def payment(reference: str) -> dict[str, Any]:
    return {
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "returnUrl": "https://shop/r",
        "customerEmail": f"{reference}@example.com",
        "amount": "12.30",
        "currency": "USD",
        "merchantReferenceId": reference,
    }


async def _sandbox_rounds_async(sandbox: RunningSandbox, references: list[str]) -> list[tuple[Any, Any]]:
    async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
        once = client.with_options(max_retries=0)
        return [
            (
                await _outcome(once.get_subscription(BOOM)),
                await _outcome(client.create_payment(**payment(ref))),
            )
            for ref in references
        ]


async def _outcome(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except ToolkitError as exc:
        return exc


def _outcome_sync(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ToolkitError as exc:
        return exc


@pytest.mark.usefixtures("failing_subscription")
@pytest.mark.parametrize("flavor", FLAVORS)
def test_post_after_a_sandbox_500_reaches_the_sandbox(sandbox: RunningSandbox, flavor: Flavor) -> None:
    references = [f"conn-{uuid.uuid4().hex[:12]}" for _ in range(CALLS)]
    if flavor == "sync":
        with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
            once = client.with_options(max_retries=0)
            outcomes = [
                (
                    _outcome_sync(partial(once.get_subscription, BOOM)),
                    _outcome_sync(partial(client.create_payment, **payment(ref))),
                )
                for ref in references
            ]
    else:
        outcomes = asyncio.run(_sandbox_rounds_async(sandbox, references))
    unknown = sum(isinstance(paid, OutcomeUnknownError) for _, paid in outcomes)
    assert unknown == 0, f"{unknown} of {CALLS} payments unknown"
    for error, paid in outcomes:
        assert isinstance(error, APIError) and not isinstance(error, AuthenticationError), error
        assert error.http_status == 500
        assert isinstance(paid, PaymentResult), paid
        assert paid.status is PaymentStatus.SUCCESS
    received = {p["merchantReferenceId"] for p in exported_payments(sandbox)}
    assert set(references) <= received


@pytest.mark.filterwarnings(
    "ignore::ResourceWarning"
)  # the first loop's session, never closed, by design of the case
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_async_client_used_by_a_second_loop_pays_once_or_refuses_before_sending(
    sandbox: RunningSandbox,
) -> None:
    """One AsyncClient across two ``asyncio.run`` calls made the second payment and then raised a
    plain RuntimeError (a caller reading "not sent" paid twice on retry)."""
    client = AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key, max_retries=0)
    refs = [f"loop-{uuid.uuid4().hex[:10]}-{n}" for n in range(3)]

    async def pay(reference: str) -> PaymentResult:
        return await client.create_payment(**payment(reference))

    # Loop after loop, each ended: the client follows to the new loop.
    assert [asyncio.run(pay(ref)).status for ref in refs[:2]] == [PaymentStatus.SUCCESS] * 2
    # Two loops alive at once: refused before anything is sent.
    alive = asyncio.new_event_loop()
    try:
        alive.run_until_complete(pay(f"{refs[0]}-alive"))
        with pytest.raises(ConfigurationError, match="another event loop \\(nothing was sent\\)"):
            asyncio.run(pay(refs[2]))
        alive.run_until_complete(client.aclose())
    finally:
        alive.close()
    made = [p["merchantReferenceId"] for p in exported_payments(sandbox)]
    assert [made.count(ref) for ref in refs] == [1, 1, 0]
