"""Retries and unknown outcomes are logged (``toolkit.client`` at INFO, as httpx logs each request),
so an engineer can see what the client did; a log line never carries the key.

Against the real sandbox over HTTP on 127.0.0.1, its faults armed through its controls.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from decimal import Decimal

import pytest

from toolkit import Client, retries
from toolkit.controls import SandboxControls
from toolkit.errors import NotFoundError, OutcomeUnknownError
from toolkit.sandbox.embedded import RunningSandbox, start_server

pytestmark = pytest.mark.timeout(60)

KEY = "sk_test_logged_0123456789"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("logged") / "sandbox.sqlite", api_key=KEY)
    yield running
    running.stop()


@pytest.fixture
def client(sandbox: RunningSandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    monkeypatch.setattr(retries, "INITIAL_RETRY_DELAY", 0.01)
    with Client(base_url=sandbox.base_url, api_key=KEY, timeout=2.0, max_retries=2) as opened:
        SandboxControls(opened).clear_faults()
        yield opened
        SandboxControls(opened).clear_faults()


def client_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "toolkit.client" and r.levelno == logging.INFO
    ]


def test_each_retry_is_logged_with_its_reason_and_count(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    SandboxControls(client).add_fault(route="GET /subscription", mode="error", count=2, status=503)
    with caplog.at_level(logging.INFO, logger="toolkit.client"), pytest.raises(NotFoundError):
        client.get_subscription("sub_logged")  # two 503s, then the sandbox's answer: no such subscription
    lines = client_lines(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("GET /subscription/sub_logged: HTTP 503; retry 1 of 2 in "), lines
    assert lines[1].startswith("GET /subscription/sub_logged: HTTP 503; retry 2 of 2 in "), lines
    assert all(KEY not in r.getMessage() and KEY not in str(r.args) for r in caplog.records)


def test_a_dropped_connection_retried_says_so(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    SandboxControls(client).add_fault(route="GET /subscription", mode="drop_before_commit", count=1)
    with caplog.at_level(logging.INFO, logger="toolkit.client"), pytest.raises(NotFoundError):
        client.get_subscription("sub_dropped")
    lines = client_lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("GET /subscription/sub_dropped: dropped; retry 1 of 2"), (
        lines
    )


def test_an_unknown_outcome_is_logged_once_and_not_retried(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    SandboxControls(client).add_fault(route="POST /payment", mode="drop_after_commit", count=1)
    with caplog.at_level(logging.INFO, logger="toolkit.client"), pytest.raises(OutcomeUnknownError) as raised:
        client.create_payment(
            merchantReferenceId="logged-unknown-1",
            customerEmail="logged@example.com",
            paymentMethodType="CARD",
            paymentInstrumentId="pi_test_success",
            amount=Decimal("25.00"),
            currency="USD",
            returnUrl="https://shop.example/r",
        )
    assert client_lines(caplog) == [str(raised.value)]
    assert "the outcome is unknown" in str(raised.value) and KEY not in str(raised.value)
