"""Every fault mode against the toolkit's ``Client`` and ``AsyncClient`` (through the journal) and a
bare httpx client, over real HTTP on 127.0.0.1.

For each mode: exactly the payments the mode says are created at the sandbox (0 for
``drop_before_commit`` and ``error``, 1 for ``delay`` and the ``*_after_commit`` modes), and the
toolkit's verdict. A client cannot tell a connection closed before the commit from one closed after
it, nor a 5xx that committed from one that did not, so the toolkit reports ``unknown`` for every mode
that may have committed as far as it can see: always when the payment was created (it is never
reported as rejected or not sent), and also for ``drop_before_commit`` and 5xx, where only the
settlement export can say that nothing happened. A 429 is a refusal (``rejected``); a delay is a
success. Whatever the verdict, a re-run sends nothing that might exist twice.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from toolkit import AsyncClient, Client
from toolkit.bulk import acreate_payments, create_payments
from toolkit.controls import SandboxControls
from toolkit.errors import APIError, NotFoundError, OutcomeUnknownError
from toolkit.journal import UNKNOWN_STATES, Journal, payment_body
from toolkit.models import PaymentRequest, to_json_bytes
from toolkit.sandbox.embedded import RunningSandbox, start_server

pytestmark = pytest.mark.timeout(60)

KEY = "sk_test_fault_modes_0123456789"
TIMEOUT = 1.5  # the client gives up on a hang after this long


@dataclass(frozen=True)
class Case:
    mode: str
    created: int  # payments the mode leaves at the sandbox
    state: str  # what the journal records
    wire: type[Exception] | int  # what a bare httpx client sees: an exception, or a status
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return "-".join([self.mode, *(str(v) for v in self.params.values())])


CASES = [
    Case("delay", 1, "succeeded", 200, {"delayMs": 100}),
    Case("error", 0, "unknown", 500, {"status": 500}),
    Case("error", 0, "unknown", 502, {"status": 502}),
    Case("error", 0, "unknown", 503, {"status": 503}),
    Case("error", 0, "rejected", 429, {"status": 429, "retryAfter": 1}),
    Case("drop_before_commit", 0, "unknown", httpx.RemoteProtocolError),
    Case("drop_after_commit", 1, "unknown", httpx.RemoteProtocolError),
    Case("hang_after_commit", 1, "unknown", httpx.ReadTimeout),
]
IDS = [case.id for case in CASES]


@pytest.fixture(scope="module")
def fault_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("modes") / "sandbox.sqlite", api_key=KEY)
    yield running
    running.stop()


@pytest.fixture
def controls(fault_sandbox: RunningSandbox) -> Iterator[SandboxControls]:
    with Client(base_url=fault_sandbox.base_url, api_key=KEY) as client:
        controls = SandboxControls(client)
        controls.clear_faults()
        yield controls
        controls.clear_faults()


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "journal.sqlite", environment="fault modes") as opened:
        yield opened


@pytest.fixture
def sync_client(fault_sandbox: RunningSandbox) -> Iterator[Client]:
    with Client(base_url=fault_sandbox.base_url, api_key=KEY, timeout=TIMEOUT) as client:
        yield client


@pytest.fixture
async def async_client(fault_sandbox: RunningSandbox) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(base_url=fault_sandbox.base_url, api_key=KEY, timeout=TIMEOUT) as client:
        yield client


def payment(reference: str) -> dict[str, Any]:
    return {
        "merchantReferenceId": reference,
        "customerEmail": "modes@example.com",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "amount": Decimal("25.00"),
        "currency": "USD",
        "returnUrl": "https://shop.example/r",
    }


def arm(controls: SandboxControls, case: Case) -> str:
    """A rule taking the next POST /payment; returns a fresh merchantReferenceId for the test."""
    controls.add_fault(route="POST /payment", mode=case.mode, count=1, **case.params)
    return f"{case.id}-{uuid.uuid4().hex[:8]}"


def created(controls: SandboxControls, reference: str) -> int:
    return len(controls.export_payments(reference))


def check_verdict(case: Case, state: str, made: int) -> None:
    assert made == case.created
    assert state == case.state
    if made:  # a payment that exists is never reported as one that does not
        assert state in ("unknown", "succeeded")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_client(case: Case, controls: SandboxControls, sync_client: Client, journal: Journal) -> None:
    reference = arm(controls, case)
    request = PaymentRequest.build(payment(reference))
    key, body = payment_body(request)
    record = journal.run("payment", key, body, lambda: sync_client.create_payment(request))
    check_verdict(case, record.state, created(controls, reference))
    assert controls.faults()["fired"].tolist() == [1]

    again = journal.run("payment", key, body, lambda: sync_client.create_payment(request))
    if case.state == "rejected":  # nothing exists there: sending again is right, and now it goes through
        assert again.sent and again.state == "succeeded" and created(controls, reference) == 1
    else:
        assert not again.sent and again.state == case.state
        assert created(controls, reference) == case.created


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_client_raises_what_the_journal_records(
    case: Case, controls: SandboxControls, sync_client: Client
) -> None:
    """Without the journal: OutcomeUnknownError exactly for ``unknown``, APIError for a 429."""
    reference = arm(controls, case)
    if case.state == "succeeded":
        assert sync_client.create_payment(payment(reference)).orderId
    else:
        expected = OutcomeUnknownError if case.state == "unknown" else APIError
        with pytest.raises(expected) as raised:
            sync_client.create_payment(payment(reference))
        assert type(raised.value) is expected
    assert created(controls, reference) == case.created


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_async_client(
    case: Case, controls: SandboxControls, async_client: AsyncClient, journal: Journal
) -> None:
    reference = arm(controls, case)
    result = await acreate_payments(
        [payment(reference)], client=async_client, journal=journal, progress=False
    )
    record = journal.get("payment", reference)
    assert record is not None and result.sent == 1
    check_verdict(case, record.state, created(controls, reference))
    if case.state != "succeeded":
        assert result.errors["stage"].tolist() == [case.state]
    row = result.frame.loc[reference]
    assert row["outcomeState"] == case.state
    assert (row["status"] == "unknown") == (
        case.state == "unknown"
    )  # shown as unknown, with the amount asked

    rerun = await acreate_payments([payment(reference)], client=async_client, journal=journal, progress=False)
    if case.state != "rejected":
        assert rerun.sent == 0 and created(controls, reference) == case.created


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bare_httpx(case: Case, controls: SandboxControls, fault_sandbox: RunningSandbox) -> None:
    reference = arm(controls, case)
    headers = {
        "X-API-KEY": KEY,
        "X-Timestamp": str(time.time_ns() // 1_000_000),
        "Content-Type": "application/json",
    }
    with httpx.Client(base_url=fault_sandbox.base_url, timeout=TIMEOUT) as http:
        body = to_json_bytes(payment(reference))
        if isinstance(case.wire, int):
            response = http.post("/payment", content=body, headers=headers)
            assert response.status_code == case.wire
            assert response.json()["code"] == case.wire
            if case.wire == 429:
                assert response.headers["retry-after"] == "1"
        else:
            with pytest.raises(case.wire):
                http.post("/payment", content=body, headers=headers)
    assert created(controls, reference) == case.created
    log = controls.requests()
    (entry,) = [row for _, row in log[log["merchantReferenceId"] == reference].iterrows()]
    assert entry["fault"] == case.mode
    assert pd.isna(entry["status"]) == (not isinstance(case.wire, int))


def test_a_get_is_retried_after_a_dropped_connection(controls: SandboxControls, sync_client: Client) -> None:
    """GET /subscription is safe to repeat: the client retries after the drop, once, and gets its answer."""
    controls.add_fault(route="GET /subscription", mode="drop_before_commit", count=1)
    with pytest.raises(NotFoundError):
        sync_client.get_subscription("sub_retried")
    log = controls.requests()
    mine = log[log["path"] == "/subscription/sub_retried"]
    assert mine["fault"].isna().tolist() == [True, False]  # newest first: the retry, then the dropped one
    assert mine["fault"].iloc[1] == "drop_before_commit" and pd.isna(mine["status"].iloc[1])
    assert mine["status"].iloc[0] == 404


async def test_a_converted_payment_without_an_answer_is_shown_in_the_currency_asked(
    controls: SandboxControls, async_client: AsyncClient, journal: Journal
) -> None:
    """10.50 USD to be paid in JPY: a call dropped after the commit is ``unknown`` and one refused
    (429) is a failed call, each shown with the amount and currency asked for. The frame paired
    10.50 with JPY, no amount at all, and the whole batch raised instead of showing any outcome."""
    tag = uuid.uuid4().hex[:8]
    converted = [
        {**payment(f"fx-{n}-{tag}"), "amount": Decimal("10.50"), "paymentCurrency": "JPY"} for n in range(3)
    ]
    controls.add_fault(route="POST /payment", mode="drop_after_commit", count=1)
    controls.add_fault(route="POST /payment", mode="error", count=1, status=429, retryAfter=1)
    result = await acreate_payments(
        converted, client=async_client, journal=journal, progress=False, concurrency=1
    )
    frame = result.frame
    assert sorted(frame["outcomeState"]) == ["rejected", "succeeded", "unknown"]
    unknown = frame[frame["outcomeState"] == "unknown"].iloc[0]
    assert (unknown["status"], unknown["amount"], unknown["currency"]) == ("unknown", Decimal("10.50"), "USD")
    paid = frame[frame["outcomeState"] == "succeeded"].iloc[0]
    assert (paid["amount"], paid["currency"]) == (Decimal("1575"), "JPY")  # 10.50 USD at the sandbox's rate


def test_an_interrupt_stops_a_batch_run_inside_a_running_loop(
    controls: SandboxControls,
    fault_sandbox: RunningSandbox,
    journal: Journal,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In Jupyter (a running loop) the batch runs on a loop of its own in a thread: Ctrl-C reached
    only the waiting caller, and every payment was still sent. Now it stops the batch as
    ``asyncio.run`` does: the call in flight is ``unknown``, the rest are not sent."""
    monkeypatch.setenv("TOOLKIT_BASE_URL", fault_sandbox.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", KEY)
    tag = uuid.uuid4().hex[:8]
    rows = [payment(f"int-{n}-{tag}") for n in range(6)]
    controls.add_fault(route="POST /payment", mode="delay", count=6, delayMs=700)
    interrupt = threading.Timer(1.0, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))

    async def in_a_notebook_cell() -> None:
        interrupt.start()
        create_payments(rows, journal=journal, concurrency=1, progress=False)

    loop = asyncio.new_event_loop()  # as a kernel's: Python's own SIGINT handler (asyncio.run's defers)
    # Python's own handler, whatever an earlier test of this process left: a Spark session's
    # context installs one of its own (it cancels Spark's jobs first, a call into the JVM).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(in_a_notebook_cell())
    finally:
        loop.close()
        signal.signal(signal.SIGINT, previous)
    states = [record.state for record in journal.records("payment") if record.key.endswith(tag)]
    assert len(states) <= 2 and set(states) & UNKNOWN_STATES  # the one in flight; nothing after it
    assert sum(created(controls, row["merchantReferenceId"]) for row in rows) <= 2
