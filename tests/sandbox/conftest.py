"""Sandbox fixtures: a real server on 127.0.0.1 per test (own database), and an httpx client."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from typing import Any

import httpx
import pytest

from toolkit.models import to_json_bytes
from toolkit.sandbox.embedded import RunningSandbox, start_server

TEST_KEY = "sk_test_fixture_key_0123456789"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class SandboxAuth(httpx.Auth):
    """Adds X-API-KEY and a fresh X-Timestamp to every request."""

    def __init__(self, key: str) -> None:
        self.key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["X-API-KEY"] = self.key
        request.headers["X-Timestamp"] = str(now_ms())
        yield request


class Api:
    """A thin httpx wrapper: JSON bodies in, (status, envelope or text) out."""

    def __init__(self, sandbox: RunningSandbox) -> None:
        self.sandbox = sandbox
        self.http = httpx.Client(
            base_url=sandbox.base_url, auth=SandboxAuth(sandbox.api_key.get_secret_value()), timeout=30
        )

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        if body is not None:  # exact Decimals on the wire, like the real client
            kwargs["content"] = to_json_bytes(body)
            kwargs["headers"] = {"Content-Type": "application/json"}
        return self.http.post(path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        """Call and require a success envelope; return its data."""
        response = self.post(path, body) if method == "POST" else self.get(path)
        assert response.status_code == 200, response.text
        envelope = response.json()
        assert envelope["code"] == 200 and envelope["msg"] == "success"
        return envelope["data"]

    def error(self, method: str, path: str, body: Any, status: int) -> str:
        """Call and require an error envelope with ``status``; return its msg."""
        response = self.post(path, body) if method == "POST" else self.get(path)
        assert response.status_code == status, response.text
        envelope = response.json()
        assert envelope["code"] == status and envelope["data"] is None
        return str(envelope["msg"])

    def pay(self, **fields: Any) -> Any:
        body: dict[str, Any] = {"customerEmail": "buyer@example.com", "returnUrl": "https://shop.example/r"}
        body.update(fields)
        return self.ok("POST", "/payment", body)

    def close(self) -> None:
        self.http.close()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    """One server per test module (stopping one takes ~0.2 s); ``api`` resets it per test."""
    running = start_server(db_path=tmp_path_factory.mktemp("sandbox") / "sandbox.sqlite", api_key=TEST_KEY)
    yield running
    running.stop()


@pytest.fixture
def api(sandbox: RunningSandbox) -> Iterator[Api]:
    """A client on an emptied sandbox (POST /sandbox/reset), so every test starts from scratch."""
    client = Api(sandbox)
    client.ok("POST", "/sandbox/reset")
    yield client
    client.close()


def product_body(**price: Any) -> dict[str, Any]:
    """A product with one price (one-time USD 10.00 unless overridden)."""
    item: dict[str, Any] = {"currency": "USD", "unitAmount": 10, "isDefaultPrice": True}
    item.update(price)
    return {"name": "Widget", "priceList": [item]}


def recurring(
    interval: str = "month", count: int = 1, trial: int | None = None, amount: Any = 30, currency: str = "USD"
) -> dict[str, Any]:
    details: dict[str, Any] = {"interval": interval, "intervalCount": count, "pricingModel": "flat_rate"}
    if trial is not None:
        details["trialPeriodDays"] = trial
    return {"currency": currency, "unitAmount": amount, "priceType": "recurring", "recurringDetails": details}
