"""Fault injection against a real misbehaving socket server (``tests/faults.py``) on 127.0.0.1.

Every case runs for ``Client`` and ``AsyncClient`` and for the three calls, and asserts exactly how
many requests the server read in full: one for every case whose outcome is unknown, and
``max_retries + 1`` for a GET that is retried to the end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Literal

import pytest

from tests.faults import FaultServer, Mode, Received, refused_url
from toolkit import retries
from toolkit.client import AsyncClient, Client, _BaseClient
from toolkit.errors import (
    APIError,
    AuthenticationError,
    OutcomeUnknownError,
    ToolkitError,
    TransportError,
)
from toolkit.models import PaymentResult, PaymentStatus, Product, Subscription

pytestmark = pytest.mark.timeout(30)

KEY = "sk_test_faults_0123456789"
MAX_RETRIES = 2
HANG_TIMEOUT = 0.3

Flavor = Literal["sync", "async"]
Call = Literal["create_payment", "create_product", "get_subscription"]
FLAVORS: list[Flavor] = ["sync", "async"]
POSTS: list[Call] = ["create_payment", "create_product"]
CALLS: list[Call] = ["create_payment", "create_product", "get_subscription"]

PAYMENT: dict[str, Any] = {
    "paymentMethodType": "ALIPAY",
    "returnUrl": "https://shop.example/return",
    "customerId": "cus_1",
    "amount": Decimal("12.30"),
    "currency": "USD",
}
PRODUCT: dict[str, Any] = {
    "name": "Fault product",
    "priceList": [{"currency": "USD", "unitAmount": Decimal("9.99")}],
}
SUBSCRIPTION_ID = "sub_fault_1"
PATHS: dict[Call, tuple[str, str]] = {
    "create_payment": ("POST", "/payment"),
    "create_product": ("POST", "/product"),
    "get_subscription": ("GET", f"/subscription/{SUBSCRIPTION_ID}"),
}


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "INITIAL_RETRY_DELAY", 0.01)


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Times at which the client built an attempt (one per connection attempt)."""
    built: list[float] = []
    original = _BaseClient._request

    def counting(self: _BaseClient, *args: Any, **kwargs: Any) -> Any:
        built.append(time.time())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_BaseClient, "_request", counting)
    return built


@pytest.fixture
def unsent(monkeypatch: pytest.MonkeyPatch) -> list[retries.Failure]:
    """Attempts that failed before the request could leave (a connect timeout on a busy machine).

    Retrying those is right even for a POST, so a test counts the attempts that were sent.
    """
    seen: list[retries.Failure] = []
    original = retries.failure_of

    def recording(exc: BaseException) -> retries.Failure:
        failure = original(exc)
        if failure is retries.Failure.NOT_SENT:
            seen.append(failure)
        return failure

    monkeypatch.setattr(retries, "failure_of", recording)
    return seen


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[FaultServer]:
    mode: Mode = request.param
    with FaultServer(mode) as fault_server:
        yield fault_server


def _call_sync(client: Client, call: Call) -> Any:
    if call == "create_payment":
        return client.create_payment(**PAYMENT)
    if call == "create_product":
        return client.create_product(**PRODUCT)
    return client.get_subscription(SUBSCRIPTION_ID)


async def _call_async(client: AsyncClient, call: Call) -> Any:
    if call == "create_payment":
        return await client.create_payment(**PAYMENT)
    if call == "create_product":
        return await client.create_product(**PRODUCT)
    return await client.get_subscription(SUBSCRIPTION_ID)


def invoke(
    flavor: Flavor, call: Call, url: str, *, timeout: float = 2.0, max_retries: int = MAX_RETRIES
) -> Any:
    """The call's result, or the ToolkitError it raised (anything else propagates)."""
    options: dict[str, Any] = {
        "base_url": url,
        "api_key": KEY,
        "timeout": timeout,
        "max_retries": max_retries,
    }
    if flavor == "sync":
        with Client(**options) as client:
            try:
                return _call_sync(client, call)
            except ToolkitError as exc:
                return exc

    async def main() -> Any:
        async with AsyncClient(**options) as client:
            try:
                return await _call_async(client, call)
            except ToolkitError as exc:
                return exc

    return asyncio.run(main())


def assert_headers(received: list[Received], call: Call) -> None:
    """X-API-KEY on every request; X-Timestamp numeric ms, near now, fresh per attempt."""
    method, path = PATHS[call]
    stamps: list[int] = []
    for request in received:
        assert (request.method, request.path) == (method, path)
        assert request.headers.get("x-api-key") == KEY
        stamp = request.headers.get("x-timestamp", "")
        assert stamp.isdigit(), stamp
        assert abs(int(stamp) - request.at * 1000) < 5_000, "X-Timestamp is not ms since the epoch, now"
        stamps.append(int(stamp))
        if method == "POST":
            assert request.headers.get("content-type") == "application/json"
            assert request.body
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == len(stamps), f"X-Timestamp reused across attempts: {stamps}"


def settle() -> None:
    """Give a wrongly re-sent request time to arrive before counting."""
    time.sleep(0.05)


# -- hang after reading the body --------------------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.HANG], indirect=True)
@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_hang_post_is_outcome_unknown_sent_once(
    server: FaultServer,
    flavor: Flavor,
    call: Call,
    attempts: list[float],
    unsent: list[retries.Failure],
) -> None:
    error = invoke(flavor, call, server.url, timeout=HANG_TIMEOUT)
    settle()
    assert isinstance(error, OutcomeUnknownError), error
    assert (error.method, error.path) == PATHS[call]
    assert server.count == 1
    assert len(attempts) - len(unsent) == 1
    assert_headers(server.requests(), call)


@pytest.mark.parametrize("server", [Mode.HANG], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_hang_get_is_retried_then_transport_error(
    server: FaultServer, flavor: Flavor, attempts: list[float]
) -> None:
    error = invoke(flavor, "get_subscription", server.url, timeout=HANG_TIMEOUT)
    settle()
    assert isinstance(error, TransportError), error
    assert error.may_have_reached_server is True
    assert server.count == MAX_RETRIES + 1
    assert len(attempts) == MAX_RETRIES + 1
    assert_headers(server.requests(), "get_subscription")


# -- close the connection after reading the body -----------------------------------------------------


@pytest.mark.parametrize("server", [Mode.CLOSE], indirect=True)
@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_close_post_is_outcome_unknown_sent_once(
    server: FaultServer, flavor: Flavor, call: Call, attempts: list[float]
) -> None:
    error = invoke(flavor, call, server.url)
    settle()
    assert isinstance(error, OutcomeUnknownError), error
    assert server.count == 1
    assert len(attempts) == 1
    assert_headers(server.requests(), call)


@pytest.mark.parametrize("server", [Mode.CLOSE], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_close_get_is_retried_exactly_max_retries(
    server: FaultServer, flavor: Flavor, attempts: list[float]
) -> None:
    """max_retries bounds what reaches the server: no hidden retry below the client.

    Fails for AsyncClient today: aiohttp's ClientSession re-sends an idempotent request once by
    itself on ServerDisconnectedError/ClientOSError (``_retry_connection``), so each of the toolkit's
    3 attempts reaches the server twice (6 requests).
    """
    error = invoke(flavor, "get_subscription", server.url)
    settle()
    assert isinstance(error, TransportError), error
    assert error.may_have_reached_server is True
    assert len(attempts) == MAX_RETRIES + 1
    assert server.count == MAX_RETRIES + 1
    assert_headers(server.requests(), "get_subscription")


# -- 5xx after accepting ---------------------------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.ERROR_500, Mode.UNAVAILABLE_503], indirect=True)
@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_5xx_post_is_outcome_unknown_sent_once(server: FaultServer, flavor: Flavor, call: Call) -> None:
    error = invoke(flavor, call, server.url)
    settle()
    assert isinstance(error, OutcomeUnknownError), error
    assert error.http_status == (500 if server.mode is Mode.ERROR_500 else 503)
    assert server.count == 1
    assert_headers(server.requests(), call)


@pytest.mark.parametrize("server", [Mode.ERROR_500, Mode.UNAVAILABLE_503], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_5xx_get_is_retried_then_api_error(server: FaultServer, flavor: Flavor) -> None:
    error = invoke(flavor, "get_subscription", server.url)
    settle()
    assert isinstance(error, APIError), error
    assert not isinstance(error, AuthenticationError)
    if server.mode is Mode.ERROR_500:
        assert (error.http_status, error.code, error.msg) == (500, 500, "internal error")
    else:
        assert (error.http_status, error.code) == (503, None)
    assert server.count == MAX_RETRIES + 1
    assert_headers(server.requests(), "get_subscription")


@pytest.mark.parametrize("server", [Mode.ERROR_500], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_with_options_max_retries_zero_sends_once(server: FaultServer, flavor: Flavor) -> None:
    if flavor == "sync":
        with Client(base_url=server.url, api_key=KEY) as client, pytest.raises(APIError):
            client.with_options(max_retries=0).get_subscription(SUBSCRIPTION_ID)
    else:

        async def main() -> None:
            async with AsyncClient(base_url=server.url, api_key=KEY) as client:
                with pytest.raises(APIError):
                    await client.with_options(max_retries=0).get_subscription(SUBSCRIPTION_ID)

        asyncio.run(main())
    settle()
    assert server.count == 1


# -- refused connection -----------------------------------------------------------------------------


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_refused_is_retried_then_transport_error_not_reached(
    flavor: Flavor, call: Call, attempts: list[float]
) -> None:
    error = invoke(flavor, call, refused_url())
    assert isinstance(error, TransportError), error
    assert error.may_have_reached_server is False
    assert len(attempts) == MAX_RETRIES + 1
    assert "**********" not in str(error)  # the message names the URL, not the key


# -- 429 with Retry-After -----------------------------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.RATE_LIMITED_429], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_429_get_honours_retry_after_and_succeeds(server: FaultServer, flavor: Flavor) -> None:
    result = invoke(flavor, "get_subscription", server.url)
    assert isinstance(result, Subscription), result
    assert result.subscriptionId == SUBSCRIPTION_ID
    received = server.requests()
    assert len(received) == 2
    assert received[1].at - received[0].at >= 0.09, "Retry-After: 0.1 was not honoured"
    assert_headers(received, "get_subscription")


@pytest.mark.parametrize("server", [Mode.RATE_LIMITED_429], indirect=True)
@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_429_post_is_api_error_not_retried(server: FaultServer, flavor: Flavor, call: Call) -> None:
    error = invoke(flavor, call, server.url)
    settle()
    assert isinstance(error, APIError), error
    assert error.http_status == 429
    assert error.code == 429
    assert server.count == 1


# -- 200 with an error code in the envelope ----------------------------------------------------------


@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_200_with_a_5xx_code_in_the_envelope_is_outcome_unknown_sent_once(flavor: Flavor, call: Call) -> None:
    """It was an APIError, so the journal recorded the payment as refused and a re-run sent it again."""
    with FaultServer(Mode.ENVELOPE_ERROR_200, error_status=500, error_msg="system busy") as server:
        error = invoke(flavor, call, server.url)
        settle()
        assert isinstance(error, OutcomeUnknownError), error
        assert error.http_status == 200 and "code 500: system busy" in str(error)
        assert server.count == 1


@pytest.mark.parametrize("flavor", FLAVORS)
def test_200_with_a_4xx_code_in_the_envelope_is_a_refusal(flavor: Flavor) -> None:
    with FaultServer(Mode.ENVELOPE_ERROR_200, error_status=400, error_msg="currency: unsupported") as server:
        error = invoke(flavor, "create_payment", server.url)
        assert isinstance(error, APIError) and not isinstance(error, OutcomeUnknownError), error
        assert (error.http_status, error.code, error.msg) == (200, 400, "currency: unsupported")


# -- 200 with a broken body -------------------------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.BROKEN_BODY], indirect=True)
@pytest.mark.parametrize("call", POSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_broken_body_post_is_outcome_unknown(server: FaultServer, flavor: Flavor, call: Call) -> None:
    error = invoke(flavor, call, server.url)
    settle()
    assert isinstance(error, OutcomeUnknownError), error
    assert error.http_status == 200
    assert server.count == 1


@pytest.mark.parametrize("server", [Mode.BROKEN_BODY], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_broken_body_get_is_api_error(server: FaultServer, flavor: Flavor) -> None:
    error = invoke(flavor, "get_subscription", server.url)
    settle()
    assert isinstance(error, APIError), error
    assert error.http_status == 200
    assert server.count == 1


# -- 401 --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.UNAUTHORIZED_401], indirect=True)
@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_401_is_authentication_error_with_body_never_retried(
    server: FaultServer, flavor: Flavor, call: Call
) -> None:
    error = invoke(flavor, call, server.url)
    settle()
    assert isinstance(error, AuthenticationError), error
    assert error.http_status == 401
    assert error.body == server.unauthorized_body
    assert server.unauthorized_body in str(error)
    assert server.count == 1
    assert_headers(server.requests(), call)


# -- the happy path through the same server ----------------------------------------------------------


@pytest.mark.parametrize("server", [Mode.OK], indirect=True)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_ok_every_call_returns_typed_data(server: FaultServer, flavor: Flavor) -> None:
    payment = invoke(flavor, "create_payment", server.url)
    product = invoke(flavor, "create_product", server.url)
    subscription = invoke(flavor, "get_subscription", server.url)
    assert isinstance(payment, PaymentResult)
    assert payment.status is PaymentStatus.SUCCESS
    assert payment.amount == Decimal("12.30")
    assert isinstance(product, Product)
    assert product.priceList is not None
    assert product.priceList[0].unitAmount == Decimal("9.99")
    assert isinstance(subscription, Subscription)
    assert subscription.subscriptionId == SUBSCRIPTION_ID
    received = server.requests()
    assert [(r.method, r.path) for r in received] == [PATHS[c] for c in CALLS]
    for request, call in zip(received, CALLS, strict=True):
        assert_headers([request], call)
    assert received[0].body == (
        b'{"customerId":"cus_1","paymentMethodType":"ALIPAY","amount":12.30,"currency":"USD",'
        b'"returnUrl":"https://shop.example/return"}'
    )


@pytest.mark.parametrize("server", [Mode.OK], indirect=True)
async def test_async_client_many_concurrent_calls_in_running_loop(server: FaultServer) -> None:
    async with AsyncClient(base_url=server.url, api_key=KEY, timeout=5.0) as client:
        results = await asyncio.gather(*(client.get_subscription(f"sub_{n}") for n in range(20)))
    assert sorted(r.subscriptionId or "" for r in results) == sorted(f"sub_{n}" for n in range(20))
    assert server.count == 20
    stamps = [r.headers["x-timestamp"] for r in server.requests()]
    assert all(s.isdigit() for s in stamps)


# -- an error status, then the server closes the connection (without Connection: close) -------------

ROUNDS = 10
FIRSTS: list[Call] = ["get_subscription", "create_product"]


def _rounds(flavor: Flavor, first: Call, url: str) -> list[tuple[Any, Any]]:
    """``ROUNDS`` times on one client: ``first`` (answered with the error, then closed), then a payment."""
    options: dict[str, Any] = {"base_url": url, "api_key": KEY, "timeout": 2.0, "max_retries": MAX_RETRIES}

    def outcome_sync(client: Client, call: Call) -> Any:
        try:
            return _call_sync(client, call)
        except ToolkitError as exc:
            return exc

    async def outcome_async(client: AsyncClient, call: Call) -> Any:
        try:
            return await _call_async(client, call)
        except ToolkitError as exc:
            return exc

    if flavor == "sync":
        with Client(**options) as client:
            return [
                (outcome_sync(client, first), outcome_sync(client, "create_payment")) for _ in range(ROUNDS)
            ]

    async def main() -> list[tuple[Any, Any]]:
        async with AsyncClient(**options) as client:
            return [
                (await outcome_async(client, first), await outcome_async(client, "create_payment"))
                for _ in range(ROUNDS)
            ]

    return asyncio.run(main())


@pytest.mark.parametrize("status", [500, 400])
@pytest.mark.parametrize("first", FIRSTS)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_post_after_an_error_and_a_close_reaches_the_server(flavor: Flavor, first: Call, status: int) -> None:
    """A connection that answered an error is not reused: the next POST goes out on a live one.

    The server answers ``first`` with ``status`` and closes the connection a moment later without
    having said ``Connection: close``; a POST sent on it meanwhile never reaches the server and was
    reported as an unknown outcome.
    """
    with FaultServer(Mode.ERROR_THEN_CLOSE, error_status=status) as server:
        outcomes = _rounds(flavor, first, server.url)
        settle()
        received = server.requests()
    unknown = sum(isinstance(payment, OutcomeUnknownError) for _, payment in outcomes)
    paid = sum(isinstance(payment, PaymentResult) for _, payment in outcomes)
    assert (paid, unknown) == (ROUNDS, 0), f"{unknown} of {ROUNDS} payments unknown"
    # a create call answered 5xx may have taken effect; a GET or a 4xx is an answer
    expected = OutcomeUnknownError if first != "get_subscription" and status >= 500 else APIError
    for error, _ in outcomes:
        assert isinstance(error, expected), error
        assert error.http_status == status
    tries = MAX_RETRIES + 1 if first == "get_subscription" and status >= 500 else 1
    one_round = [PATHS[first]] * tries + [PATHS["create_payment"]]
    assert [(r.method, r.path) for r in received] == one_round * ROUNDS
