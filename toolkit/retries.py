"""The retry policy as pure functions: what to do after a status or a transport failure, and how long to wait.

The spec has no idempotency key, so a create call (POST) that may have reached the service is never
sent again: only a request that certainly never left (connection refused, connect timeout, no free
connection) is retried. GET is retried on transport failures, 408, 429 and 5xx. Nothing here does
I/O, so every case is tested with a table, without a network.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import Final

import aiohttp
import httpx

INITIAL_RETRY_DELAY: Final = 0.5
MAX_RETRY_DELAY: Final = 8.0
MAX_RETRY_AFTER: Final = 30.0
RETRYABLE_GET_STATUSES: Final = frozenset({408, 429})


class Verdict(Enum):
    """What to do with one attempt's result."""

    OK = "ok"
    RETRY = "retry"
    FAIL = "fail"  # the service answered no: nothing was created
    UNKNOWN = "unknown"  # a create call may have taken effect


class Failure(Enum):
    """How a request failed in transit."""

    NOT_SENT = "not sent"  # refused, connect timeout, pool timeout: the service never saw it
    TIMEOUT = "timeout"  # sent, no answer in time
    DROPPED = "dropped"  # sent, connection closed or broken before a full answer


def classify_status(status: int, *, idempotent: bool) -> Verdict:
    """Verdict for an HTTP status: GET retries 408/429/5xx; POST never retries, 5xx is unknown."""
    if 200 <= status < 300:
        return Verdict.OK
    if idempotent:
        return Verdict.RETRY if status in RETRYABLE_GET_STATUSES or status >= 500 else Verdict.FAIL
    return Verdict.UNKNOWN if status >= 500 else Verdict.FAIL


def classify_failure(failure: Failure, *, idempotent: bool) -> Verdict:
    """Verdict for a transport failure: only a request that never left is retried when not idempotent."""
    if failure is Failure.NOT_SENT or idempotent:
        return Verdict.RETRY
    return Verdict.UNKNOWN


def failure_of(exc: BaseException) -> Failure:
    """Classify an httpx (``Client``) or aiohttp (``AsyncClient``) exception.

    A failure counts as NOT_SENT only when it is certain the service never saw the request:
    anything else about a create call is an unknown outcome.
    """
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError):
        return Failure.NOT_SENT
    if isinstance(exc, aiohttp.ServerTimeoutError | TimeoutError):
        return Failure.TIMEOUT
    if isinstance(exc, aiohttp.ClientError):
        return Failure.DROPPED
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure.NOT_SENT
    if isinstance(exc, httpx.TimeoutException):
        return Failure.TIMEOUT
    return Failure.DROPPED


def retry_after_seconds(header: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date), capped; None if absent or bad."""
    if not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            when = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def retry_delay(
    retries_done: int, retry_after: str | None = None, *, jitter: Callable[[], float] = random.random
) -> float:
    """Wait before the next attempt: Retry-After when the service gave one, else backoff with jitter."""
    honoured = retry_after_seconds(retry_after)
    if honoured is not None:
        return honoured
    backoff = min(INITIAL_RETRY_DELAY * 2**retries_done, MAX_RETRY_DELAY)
    return float(backoff * (1 - 0.25 * jitter()))
