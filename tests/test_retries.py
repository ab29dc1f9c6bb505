"""Table tests of the pure retry policy in ``toolkit.retries``: no network, no sleeping.

The expected verdicts are written here from issue 2's rules, independently of the implementation:
GET is retried on 408, 429 and 5xx and on every transport failure; other non-2xx statuses fail;
POST is retried only when the request certainly never left (NOT_SENT); a 5xx or a failure after
sending makes its outcome UNKNOWN.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import aiohttp
import httpx
import pytest
from aiohttp.client_reqrep import ConnectionKey

from toolkit import retries
from toolkit.retries import Failure, Verdict

# -- classify_status: every status code 100-599, GET and POST -------------------------------------


def expected_status_verdict(status: int, *, idempotent: bool) -> Verdict:
    if 200 <= status <= 299:
        return Verdict.OK
    if idempotent:
        if status in (408, 429) or 500 <= status <= 599:
            return Verdict.RETRY
        return Verdict.FAIL
    if 500 <= status <= 599:
        return Verdict.UNKNOWN
    return Verdict.FAIL


@pytest.mark.parametrize("status", range(100, 600))
def test_classify_status_every_code_get(status: int) -> None:
    expected = expected_status_verdict(status, idempotent=True)
    assert retries.classify_status(status, idempotent=True) is expected


@pytest.mark.parametrize("status", range(100, 600))
def test_classify_status_every_code_post(status: int) -> None:
    assert retries.classify_status(status, idempotent=False) is expected_status_verdict(
        status, idempotent=False
    )


@pytest.mark.parametrize(
    ("status", "get", "post"),
    [
        (200, Verdict.OK, Verdict.OK),
        (201, Verdict.OK, Verdict.OK),
        (204, Verdict.OK, Verdict.OK),
        (301, Verdict.FAIL, Verdict.FAIL),
        (400, Verdict.FAIL, Verdict.FAIL),
        (401, Verdict.FAIL, Verdict.FAIL),  # never retried
        (403, Verdict.FAIL, Verdict.FAIL),
        (404, Verdict.FAIL, Verdict.FAIL),
        (408, Verdict.RETRY, Verdict.FAIL),
        (409, Verdict.FAIL, Verdict.FAIL),
        (422, Verdict.FAIL, Verdict.FAIL),
        (429, Verdict.RETRY, Verdict.FAIL),  # POST 429: the service said no, nothing was created
        (500, Verdict.RETRY, Verdict.UNKNOWN),
        (502, Verdict.RETRY, Verdict.UNKNOWN),
        (503, Verdict.RETRY, Verdict.UNKNOWN),
        (504, Verdict.RETRY, Verdict.UNKNOWN),
        (599, Verdict.RETRY, Verdict.UNKNOWN),
    ],
)
def test_classify_status_named_cases(status: int, get: Verdict, post: Verdict) -> None:
    assert retries.classify_status(status, idempotent=True) is get
    assert retries.classify_status(status, idempotent=False) is post


def test_post_is_never_retried_on_any_status() -> None:
    assert all(retries.classify_status(s, idempotent=False) is not Verdict.RETRY for s in range(100, 600))


def test_4xx_other_than_408_429_never_retried() -> None:
    for status in range(400, 500):
        verdict = retries.classify_status(status, idempotent=True)
        assert (verdict is Verdict.RETRY) == (status in (408, 429)), status


# -- classify_failure: every Failure, GET and POST ------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "get", "post"),
    [
        (Failure.NOT_SENT, Verdict.RETRY, Verdict.RETRY),
        (Failure.TIMEOUT, Verdict.RETRY, Verdict.UNKNOWN),
        (Failure.DROPPED, Verdict.RETRY, Verdict.UNKNOWN),
    ],
)
def test_classify_failure(failure: Failure, get: Verdict, post: Verdict) -> None:
    assert retries.classify_failure(failure, idempotent=True) is get
    assert retries.classify_failure(failure, idempotent=False) is post


def test_classify_failure_covers_every_failure() -> None:
    for failure in Failure:
        assert retries.classify_failure(failure, idempotent=True) is Verdict.RETRY
        expected = Verdict.RETRY if failure is Failure.NOT_SENT else Verdict.UNKNOWN
        assert retries.classify_failure(failure, idempotent=False) is expected


# -- failure_of: httpx exceptions (httpcore transport) ---------------------------------------------

_REQUEST = httpx.Request("POST", "http://127.0.0.1:9/payment")


def _httpx_error(kind: type[httpx.HTTPError], cause: BaseException | None = None) -> httpx.HTTPError:
    """A real httpx exception as httpx raises it: ``raise kind(...) from cause``."""
    try:
        try:
            if cause is not None:
                raise cause
            raise OSError("underlying failure")
        except BaseException as inner:
            if kind is httpx.HTTPStatusError:
                raise AssertionError("not a transport error") from inner
            error = kind("failed", request=_REQUEST) if issubclass(kind, httpx.RequestError) else kind("x")
            raise error from (inner if cause is not None else None)
    except httpx.HTTPError as exc:
        return exc
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("kind", "failure"),
    [
        (httpx.ConnectError, Failure.NOT_SENT),
        (httpx.ConnectTimeout, Failure.NOT_SENT),
        (httpx.PoolTimeout, Failure.NOT_SENT),
        (httpx.ReadTimeout, Failure.TIMEOUT),
        (httpx.WriteTimeout, Failure.TIMEOUT),
        (httpx.ReadError, Failure.DROPPED),
        (httpx.WriteError, Failure.DROPPED),
        (httpx.CloseError, Failure.DROPPED),
        (httpx.RemoteProtocolError, Failure.DROPPED),
        (httpx.NetworkError, Failure.DROPPED),
        (httpx.ProtocolError, Failure.DROPPED),
    ],
)
def test_failure_of_httpx_exceptions(kind: type[httpx.HTTPError], failure: Failure) -> None:
    assert retries.failure_of(_httpx_error(kind)) is failure
    # httpcore's own exceptions (not aiohttp's) as cause do not change the verdict
    assert retries.failure_of(_httpx_error(kind, cause=ConnectionRefusedError(111, "refused"))) is failure


def test_failure_of_httpx_read_timeout_caused_by_builtin_timeout() -> None:
    assert retries.failure_of(_httpx_error(httpx.ReadTimeout, cause=TimeoutError())) is Failure.TIMEOUT


# -- failure_of: aiohttp's exceptions, as AsyncClient meets them ------------------------------------


def _connection_key() -> ConnectionKey:
    return ConnectionKey("127.0.0.1", 9, False, True, None, None, None, None)


AIOHTTP_CASES: list[tuple[str, Callable[[], BaseException], Failure]] = [
    (
        "connector-refused",
        lambda: aiohttp.ClientConnectorError(_connection_key(), ConnectionRefusedError(111, "refused")),
        Failure.NOT_SENT,
    ),
    (
        "connector-dns",
        lambda: aiohttp.ClientConnectorDNSError(_connection_key(), OSError(-2, "Name or service not known")),
        Failure.NOT_SENT,
    ),
    (
        "connection-timeout",
        lambda: aiohttp.ConnectionTimeoutError("Connection timeout to host"),
        Failure.NOT_SENT,
    ),
    (
        "socket-read-timeout",
        lambda: aiohttp.SocketTimeoutError("Timeout on reading data from socket"),
        Failure.TIMEOUT,
    ),
    ("server-timeout", lambda: aiohttp.ServerTimeoutError("timeout"), Failure.TIMEOUT),
    # the dangerous one: a hang-up after the body must never count as "not sent"
    ("server-disconnected", lambda: aiohttp.ServerDisconnectedError(), Failure.DROPPED),
    (
        "client-os-error-reset",
        lambda: aiohttp.ClientOSError(104, "Connection reset by peer"),
        Failure.DROPPED,
    ),
    (
        "connection-reset",
        lambda: aiohttp.ClientConnectionResetError("Cannot write to closing transport"),
        Failure.DROPPED,
    ),
    ("connection-error", lambda: aiohttp.ClientConnectionError("Connection closed"), Failure.DROPPED),
    (
        "payload-error",
        lambda: aiohttp.ClientPayloadError("Response payload is not completed"),
        Failure.DROPPED,
    ),
]


@pytest.mark.parametrize(("name", "make", "failure"), AIOHTTP_CASES, ids=[case[0] for case in AIOHTTP_CASES])
def test_failure_of_aiohttp_exceptions(
    name: str, make: Callable[[], BaseException], failure: Failure
) -> None:
    assert retries.failure_of(make()) is failure


def test_server_disconnected_is_dropped_so_a_post_is_never_resent() -> None:
    """A hang-up after the body must never look like 'never sent': the POST would be re-sent."""
    failure = retries.failure_of(aiohttp.ServerDisconnectedError())
    assert failure is Failure.DROPPED
    assert retries.classify_failure(failure, idempotent=False) is Verdict.UNKNOWN


def test_client_connector_error_is_not_sent() -> None:
    failure = retries.failure_of(
        aiohttp.ClientConnectorError(_connection_key(), ConnectionRefusedError(111, "x"))
    )
    assert failure is Failure.NOT_SENT
    assert retries.classify_failure(failure, idempotent=False) is Verdict.RETRY


def test_asyncio_timeout_is_timeout() -> None:
    assert retries.failure_of(asyncio.TimeoutError()) is Failure.TIMEOUT  # noqa: UP041 (the alias aiohttp raises)


# -- retry_after_seconds ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("0.1", 0.1),
        ("1", 1.0),
        ("5", 5.0),
        ("29", 29.0),
        ("30", 30.0),
        ("31", 30.0),
        ("120", 30.0),
        ("86400", 30.0),
        ("1e400", 30.0),
        ("-3", 0.0),
        (" 7 ", 7.0),
    ],
)
def test_retry_after_delta_seconds(header: str, seconds: float) -> None:
    assert retries.retry_after_seconds(header) == pytest.approx(seconds)


def test_retry_after_cap_is_max_retry_after() -> None:
    assert retries.retry_after_seconds(str(retries.MAX_RETRY_AFTER * 10)) == retries.MAX_RETRY_AFTER


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "   ",
        "soon",
        "1,5",
        "12abc",
        "0x10",
        "nan",
        "NaN",
        "\x00",
        "Wed, 21 Oct 2099",
        "Mon, 32 Foo 2020 99:99:99 GMT",
        "tomorrow at noon",
    ],
)
def test_retry_after_garbage_is_none(header: str | None) -> None:
    assert retries.retry_after_seconds(header) is None


def _http_date(delta: timedelta) -> str:
    return format_datetime(datetime.now(UTC) + delta, usegmt=True)


def test_retry_after_http_date_in_future() -> None:
    seconds = retries.retry_after_seconds(_http_date(timedelta(seconds=10)))
    assert seconds is not None
    assert 8.0 <= seconds <= 10.0


def test_retry_after_http_date_in_past_is_zero() -> None:
    assert retries.retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_retry_after_http_date_far_future_is_capped() -> None:
    assert retries.retry_after_seconds(_http_date(timedelta(hours=2))) == retries.MAX_RETRY_AFTER


@pytest.mark.parametrize(
    "header",
    [
        # RFC 5322 dates with zone "-0000" (and without zone) parse to a *naive* datetime:
        # subtracting it from an aware "now" raises TypeError out of the client.
        "Wed, 21 Oct 2015 07:28:00 -0000",
        "21 Oct 2099 07:28:00",
    ],
)
def test_retry_after_naive_date_does_not_raise(header: str) -> None:
    seconds = retries.retry_after_seconds(header)  # TypeError today
    assert seconds is None or 0.0 <= seconds <= retries.MAX_RETRY_AFTER


def test_retry_after_result_always_within_bounds() -> None:
    for header in ["0", "0.5", "-1", "1e9", "-1e9", "inf", "-inf", _http_date(timedelta(seconds=3))]:
        seconds = retries.retry_after_seconds(header)
        assert seconds is not None
        assert 0.0 <= seconds <= retries.MAX_RETRY_AFTER
        assert not math.isnan(seconds)


# -- retry_delay --------------------------------------------------------------------------------------


def _backoff(retries_done: int) -> float:
    return float(min(retries.INITIAL_RETRY_DELAY * 2.0**retries_done, retries.MAX_RETRY_DELAY))


def test_retry_delay_growth_without_jitter() -> None:
    delays = [retries.retry_delay(n, jitter=lambda: 0.0) for n in range(8)]
    assert delays[0] == retries.INITIAL_RETRY_DELAY
    for before, after in itertools.pairwise(delays):
        assert after == min(before * 2, retries.MAX_RETRY_DELAY)
    assert delays[-1] == retries.MAX_RETRY_DELAY
    assert delays == [_backoff(n) for n in range(8)]


def test_retry_delay_documented_constants() -> None:
    assert [retries.retry_delay(n, jitter=lambda: 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_retry_delay_is_capped() -> None:
    for n in range(10, 40):
        assert retries.retry_delay(n, jitter=lambda: 0.0) == retries.MAX_RETRY_DELAY


def _constant(value: float) -> Callable[[], float]:
    return lambda: value


@pytest.mark.parametrize("retries_done", range(8))
def test_retry_delay_jitter_bounds(retries_done: int) -> None:
    full = _backoff(retries_done)
    lowest = retries.retry_delay(retries_done, jitter=lambda: 1.0)
    highest = retries.retry_delay(retries_done, jitter=lambda: 0.0)
    assert highest == pytest.approx(full)
    assert lowest == pytest.approx(0.75 * full)
    for fraction in (0.0, 0.1, 0.5, 0.9, 0.999999):
        delay = retries.retry_delay(retries_done, jitter=_constant(fraction))
        assert 0.75 * full <= delay <= full
    # with the default random jitter too
    for _ in range(200):
        assert 0.75 * full <= retries.retry_delay(retries_done) <= full


def test_retry_delay_jitter_actually_varies() -> None:
    assert len({retries.retry_delay(2) for _ in range(50)}) > 1


def test_retry_delay_honours_retry_after_without_jitter() -> None:
    calls: list[int] = []

    def jitter() -> float:
        calls.append(1)
        return 0.5

    assert retries.retry_delay(0, "0.1", jitter=jitter) == pytest.approx(0.1)
    assert retries.retry_delay(5, "2", jitter=jitter) == pytest.approx(2.0)
    assert retries.retry_delay(0, "3600", jitter=jitter) == retries.MAX_RETRY_AFTER
    assert retries.retry_delay(0, "0", jitter=jitter) == 0.0


def test_retry_delay_falls_back_to_backoff_on_garbage_retry_after() -> None:
    assert retries.retry_delay(1, "soon", jitter=lambda: 0.0) == _backoff(1)
    assert retries.retry_delay(1, "", jitter=lambda: 0.0) == _backoff(1)
    assert retries.retry_delay(1, None, jitter=lambda: 0.0) == _backoff(1)


def test_retry_delay_never_negative() -> None:
    for n in range(12):
        for header in (None, "-5", "0", "garbage"):
            assert retries.retry_delay(n, header) >= 0.0
