"""``toolkit journal resolve`` asks the service, where it can, before it records a resolution
(issue 34): a payment marked failed that the sandbox holds as succeeded would be sent, and charged,
a second time. Over real HTTP on 127.0.0.1: a sandbox whose fault rules leave an outcome unknown
(``drop_after_commit``: made, answer lost; ``drop_before_commit``: never made), and a service that
is not a sandbox (``tests.faults.FaultServer``), where nothing can be looked up.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.faults import FaultServer, Mode, refused_url
from toolkit import Client, Journal, create_payments
from toolkit.cli import main
from toolkit.controls import SandboxControls
from toolkit.journal import payment_body
from toolkit.models import PaymentRequest, PaymentStatus, to_json_bytes
from toolkit.sandbox.embedded import RunningSandbox, start_server

pytestmark = pytest.mark.timeout(60)

KEY = "sk_test_resolve_checked_0123456789"
NOT_CHECKED = "not checked against the service: it offers no look-up"


@pytest.fixture(scope="module")
def checked_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("resolve") / "sandbox.sqlite", api_key=KEY)
    yield running
    running.stop()


@pytest.fixture
def controls(checked_sandbox: RunningSandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxControls]:
    """The sandbox's controls, with the toolkit pointed at it (``TOOLKIT_BASE_URL``)."""
    monkeypatch.setenv("TOOLKIT_BASE_URL", checked_sandbox.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", KEY)
    with Client() as client:
        controls = SandboxControls(client)
        controls.clear_faults()
        yield controls
        controls.clear_faults()


def payment(reference: str, instrument: str = "pi_test_success") -> dict[str, Any]:
    return {
        "merchantReferenceId": reference,
        "customerEmail": "resolve@example.com",
        "paymentMethodType": "CARD",
        "paymentInstrumentId": instrument,
        "amount": "25.00",
        "currency": "USD",
        "returnUrl": "https://shop.example/r",
    }


def unknown_payment(controls: SandboxControls, mode: str, instrument: str = "pi_test_success") -> str:
    """A payment the journal holds as unknown after the fault ``mode``; returns its reference."""
    reference = f"RC-{mode}-{uuid.uuid4().hex[:8]}"
    controls.add_fault(route="POST /payment", mode=mode, count=1)
    result = create_payments([payment(reference, instrument)], progress=False)
    assert result.sent == 1 and list(result.errors["stage"]) == ["unknown"]
    return reference


def state_of(reference: str) -> str:
    with Journal.open() as journal:
        record = journal.get("payment", reference)
    assert record is not None
    return record.state


def refusal(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a refused resolution prints on stderr."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_failed_is_refused_for_a_payment_the_sandbox_holds_as_succeeded(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_after_commit")
    held = controls.find_payment(reference)
    assert held.status == PaymentStatus.SUCCESS
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--failed"]) == 2
    line = refusal(capsys)
    assert line.startswith(f"toolkit journal: payment {reference!r} did happen")
    assert f"order {held.orderId} as success (25.00 USD)" in line and "nothing was recorded" in line
    assert "--response '{" in line  # what to record instead
    assert state_of(reference) == "unknown"
    assert create_payments([payment(reference)], progress=False).sent == 0  # still never sent again
    assert len(controls.payments_under(reference)) == 1


def test_failed_is_refused_for_a_payment_still_pending_at_the_sandbox(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_after_commit", "pi_test_pending")
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--failed"]) == 2
    assert "as pending" in refusal(capsys)
    assert state_of(reference) == "unknown"


def test_failed_is_recorded_when_the_sandbox_holds_nothing(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_before_commit")
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--failed"]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"payment {reference}: now abandoned "
        f"(checked against the sandbox: it holds no payment under {reference!r})\n"
    )
    assert state_of(reference) == "abandoned"
    assert create_payments([payment(reference)], progress=False).sent == 1  # sent again, once


def test_failed_is_recorded_when_the_sandbox_holds_it_as_failed(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed payment charged nothing: sending it again is no second charge."""
    reference = unknown_payment(controls, "drop_after_commit", "pi_test_failure")
    held = controls.find_payment(reference)
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--failed"]) == 0
    out = capsys.readouterr().out
    assert f"(checked against the sandbox: it holds order {held.orderId} as failure (25.00 USD))" in out
    assert state_of(reference) == "abandoned"


def test_the_sandboxs_own_answer_is_recorded(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_after_commit")
    answer = to_json_bytes(controls.find_payment(reference).model_dump(exclude_none=True)).decode()
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--response", answer]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"payment {reference}: now succeeded (checked against the sandbox: it holds order ")
    assert state_of(reference) == "succeeded"


def test_a_pending_answer_is_recorded_with_how_it_settled_since(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_after_commit", "pi_test_pending")
    pending = controls.find_payment(reference)
    assert pending.orderId is not None
    answer = to_json_bytes(pending.model_dump(exclude_none=True)).decode()
    controls.resolve_payment(pending.orderId, "success")
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--response", answer]) == 0
    assert "it has settled since as success: recorded" in capsys.readouterr().out
    with Journal.open() as journal:
        assert journal.settlements()[pending.orderId][0] == PaymentStatus.SUCCESS


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"status": 3}, "status failure (the sandbox: success)"),
        ({"orderId": "ord_not_this_one"}, "holds no order ord_not_this_one under it, but order "),
        ({"paymentInstrumentId": "pi_other"}, "paymentInstrumentId pi_other (the sandbox: pi_test_success)"),
    ],
    ids=["status", "orderId", "instrument"],
)
def test_a_response_the_sandbox_contradicts_is_refused(
    change: dict[str, Any], said: str, controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_after_commit")
    answer = {**controls.find_payment(reference).model_dump(mode="json", exclude_none=True), **change}
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--response", to_json_bytes(answer).decode()]) == 2
    line = refusal(capsys)
    assert line.startswith(f"toolkit journal: payment {reference!r}") and said in line, line
    assert state_of(reference) == "unknown"


def test_a_response_for_a_payment_the_sandbox_never_made_is_refused(
    controls: SandboxControls, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = unknown_payment(controls, "drop_before_commit")
    answer = {"orderId": "ord_invented", "status": 1, "amount": Decimal("25.00"), "currency": "USD"}
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--response", to_json_bytes(answer).decode()]) == 2
    line = refusal(capsys)
    assert f"payment {reference!r}: the sandbox holds no payment under it" in line
    assert "resolve it with --failed" in line and state_of(reference) == "unknown"


def journal_unknown(reference: str) -> None:
    """An unknown outcome as a process killed while sending leaves it (the intent, no outcome)."""
    _, body = payment_body(PaymentRequest.build(payment(reference)))
    with Journal.open() as journal:
        assert isinstance(journal.begin("payment", reference, body), int)


def test_a_service_that_offers_no_look_up_records_it_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FaultServer(Mode.OK) as live:  # answers 404 (in an envelope) to GET /sandbox/info
        monkeypatch.setenv("TOOLKIT_BASE_URL", live.url)
        monkeypatch.setenv("TOOLKIT_API_KEY", "live-key-0123456789")
        journal_unknown("LIVE-1")
        assert main(["journal", "resolve", "LIVE-1", "--failed"]) == 0
        assert capsys.readouterr().out == f"payment LIVE-1: now abandoned ({NOT_CHECKED})\n"
        assert [(r.method, r.path) for r in live.requests()] == [("GET", "/sandbox/info")]
    assert state_of("LIVE-1") == "abandoned"


def test_a_service_that_cannot_be_reached_is_not_taken_for_one_without_a_look_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", refused_url())
    monkeypatch.setenv("TOOLKIT_API_KEY", "live-key-0123456789")
    monkeypatch.setenv("TOOLKIT_MAX_RETRIES", "0")
    journal_unknown("GONE-1")
    assert main(["journal", "resolve", "GONE-1", "--failed"]) == 2
    line = refusal(capsys)
    assert line.startswith("toolkit journal: payment 'GONE-1': cannot ask the service what became of it (")
    assert line.endswith("nothing was recorded") and state_of("GONE-1") == "sending"


def test_the_embedded_sandbox_is_asked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No TOOLKIT_BASE_URL: the embedded sandbox under TOOLKIT_HOME is the service asked."""
    with Client() as client:
        controls = SandboxControls(client)
        reference = unknown_payment(controls, "drop_after_commit")
    capsys.readouterr()
    assert main(["journal", "resolve", reference, "--failed"]) == 2
    assert "as success" in refusal(capsys) and state_of(reference) == "unknown"
