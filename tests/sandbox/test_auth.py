"""Authentication on every route: key compared in constant time, timestamp within the tolerance."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.sandbox.conftest import TEST_KEY, now_ms
from toolkit.sandbox.embedded import RunningSandbox, start_server

ROUTES = [
    ("POST", "/payment"),
    ("POST", "/product"),
    ("GET", "/subscription/sub_x"),
    ("GET", "/sandbox/info"),
    ("GET", "/sandbox/payments"),
    ("POST", "/sandbox/reset"),
    ("POST", "/sandbox/clock/advance"),
    ("POST", "/sandbox/subscriptions"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Timestamp": "NOW"},
        {"X-API-KEY": "sk_test_wrong", "X-Timestamp": "NOW"},
        {"X-API-KEY": TEST_KEY},
        {"X-API-KEY": TEST_KEY, "X-Timestamp": "abc"},
        {"X-API-KEY": TEST_KEY, "X-Timestamp": "-5"},
        {"X-API-KEY": TEST_KEY, "X-Timestamp": "OLD"},
        {"X-API-KEY": TEST_KEY, "X-Timestamp": "FUTURE"},
        {"X-API-KEY": "é", "X-Timestamp": "NOW"},
    ],
)
def test_refused_with_plain_string_401(
    sandbox: RunningSandbox, method: str, path: str, headers: dict[str, str]
) -> None:
    stamps = {"NOW": now_ms(), "OLD": now_ms() - 301_000, "FUTURE": now_ms() + 301_000}
    sent = {k: str(stamps.get(v, v)) for k, v in headers.items()}
    response = httpx.request(
        method, sandbox.base_url + path, headers={k.encode(): v.encode() for k, v in sent.items()}, json={}
    )
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text.startswith("Unauthorized")
    assert TEST_KEY not in response.text and "sk_test_wrong" not in response.text


def test_within_tolerance_both_ways_is_accepted(sandbox: RunningSandbox) -> None:
    for skew in (-290_000, 0, 290_000):
        response = httpx.get(
            sandbox.base_url + "/sandbox/info",
            headers={"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms() + skew)},
        )
        assert response.status_code == 200


def test_tolerance_is_configurable(tmp_path: Path) -> None:
    running = start_server(db_path=tmp_path / "t.sqlite", api_key="k", timestamp_tolerance_s=5)
    try:
        late = httpx.get(
            running.base_url + "/sandbox/info",
            headers={"X-API-KEY": "k", "X-Timestamp": str(now_ms() - 10_000)},
        )
        assert late.status_code == 401
    finally:
        running.stop()
