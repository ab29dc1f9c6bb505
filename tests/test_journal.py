"""The journal: intent before sending, outcome after; nothing sent twice; unknown outcomes kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from toolkit import JournalConflictError, JournalError, OutcomeUnknownError, PaymentResult
from toolkit.errors import APIError, TransportError
from toolkit.frames import payments_frame
from toolkit.journal import Journal


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite", environment="test")


class Sender:
    """Counts sends and answers as told, checking the intent is already committed when it sends."""

    def __init__(self, journal: Journal, answer: BaseModel | Exception) -> None:
        self.journal, self.answer, self.calls = journal, answer, 0

    def __call__(self) -> BaseModel:
        self.calls += 1
        seen_by_another_reader = Journal(self.journal.path, environment="test")
        assert "sending" in {r.state for r in seen_by_another_reader.records()}
        seen_by_another_reader.close()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


OK = PaymentResult.model_validate({"orderId": "ord_1", "status": 1, "amount": "12.30", "currency": "USD"})


def test_intent_is_committed_before_sending_and_outcome_after(journal: Journal) -> None:
    send = Sender(journal, OK)
    record = journal.run("payment", "ref-1", b'{"amount":12.30}', send)
    assert send.calls == 1 and record.sent and record.state == "succeeded"
    assert record.response is not None and str(record.response["amount"]) == "12.30"


def test_same_key_same_request_sends_nothing_and_returns_the_record(journal: Journal) -> None:
    journal.run("payment", "ref-1", b"{}", Sender(journal, OK))
    again = Sender(journal, OK)
    record = journal.run("payment", "ref-1", b"{}", again)
    assert again.calls == 0 and not record.sent and record.state == "succeeded"


def test_same_key_different_request_is_a_conflict_and_sends_nothing(journal: Journal) -> None:
    journal.run("payment", "ref-1", b'{"amount":1}', Sender(journal, OK))
    changed = Sender(journal, OK)
    with pytest.raises(JournalConflictError, match="different request"):
        journal.run("payment", "ref-1", b'{"amount":2}', changed)
    assert changed.calls == 0


def test_the_same_amount_written_otherwise_is_the_same_request(journal: Journal) -> None:
    """``10.0`` is the ``10.00`` sent (a spreadsheet saved again): it was refused as a different
    request, and the advice to use a new merchantReferenceId would have charged it twice."""
    journal.run("payment", "ref-1", b'{"amount":10.00,"currency":"USD"}', Sender(journal, OK))
    again = Sender(journal, OK)
    record = journal.run("payment", "ref-1", b'{"currency":"USD","amount":10.0}', again)
    assert again.calls == 0 and record.state == "succeeded"
    with pytest.raises(JournalConflictError) as refused:
        journal.run("payment", "ref-1", b'{"amount":12.00,"currency":"USD"}', again)
    assert "(amount 10.00 -> 12.00)" in str(refused.value) and "stands as sent (succeeded)" in str(
        refused.value
    )
    assert again.calls == 0


def test_unknown_outcome_is_recorded_and_never_resent(journal: Journal) -> None:
    lost = OutcomeUnknownError("read timeout", method="POST", path="/payment")
    record = journal.run("payment", "ref-1", b"{}", Sender(journal, lost))
    assert record.state == "unknown" and "read timeout" in (record.error or "")
    again = Sender(journal, OK)
    assert journal.run("payment", "ref-1", b"{}", again).state == "unknown"
    assert again.calls == 0
    assert [r.key for r in journal.unknown()] == ["ref-1"]


def test_an_intent_without_outcome_counts_as_unknown(journal: Journal) -> None:
    row = journal.begin("payment", "ref-1", b"{}")
    assert isinstance(row, int)
    assert [r.state for r in journal.unknown()] == ["sending"]
    again = Sender(journal, OK)
    journal.run("payment", "ref-1", b"{}", again)
    assert again.calls == 0


def test_resolve_failed_allows_sending_again(journal: Journal) -> None:
    journal.run("payment", "ref-1", b"{}", Sender(journal, OutcomeUnknownError("x", method="POST", path="/")))
    assert journal.resolve("payment", "ref-1", failed=True).state == "abandoned"
    again = Sender(journal, OK)
    record = journal.run("payment", "ref-1", b"{}", again)
    assert again.calls == 1 and record.state == "succeeded" and record.attempts == 2


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ([1, 2], "a JSON object"),
        ({"orderId": "ord_1", "status": 9}, "status must be one the service gives: success \\(1\\)"),
        (
            {"orderId": "ord_1", "status": 1, "amount": "abc", "currency": "USD"},
            "not a payment response: amount",
        ),
        (
            {"orderId": "ord_1", "status": 1, "amount": "42.001", "currency": "USD"},
            "not an amount of its currency",
        ),
        ({"orderId": "ord_1", "status": 1, "amount": "42.00", "currency": "usd dollars"}, "not an amount of"),
        ({"status": 1, "amount": "42.00", "currency": "USD"}, "orderId is required"),
        ({"orderId": " ", "status": 1}, "orderId is required"),
        ({"orderId": "ord_1", "status": 5}, "action is required when its status is next_action"),
    ],
)
def test_a_resolution_the_service_could_not_have_answered_is_refused(
    journal: Journal, response: object, message: str
) -> None:
    """A resolution cannot be undone: ``[1, 2]`` made every later frame of the journal raise, and
    ``{"status": 9}`` showed a resolved payment as never sent. Refused, the call stays unknown."""
    journal.begin("payment", "ref-1", b"{}")
    with pytest.raises(JournalError, match=message):
        journal.resolve("payment", "ref-1", response=response)  # type: ignore[arg-type]
    record = journal.get("payment", "ref-1")
    assert record is not None and not record.outcome_known
    payments_frame(journal)  # the journal still reads
    assert journal.resolve("payment", "ref-1", response={"orderId": "o", "status": 1}).state == "succeeded"


def test_a_resolution_that_answers_another_request_is_refused(journal: Journal) -> None:
    """10.00 USD was sent; a resolution of 99.00 EUR (a typo) was recorded, and the frame showed
    the payment charged 99.00 EUR, with the old "unknown" text still in its error column."""
    lost = OutcomeUnknownError("the outcome is unknown: dropped", method="POST", path="/payment")
    journal.run("payment", "ref-1", b'{"amount": 10.00, "currency": "USD"}', Sender(journal, lost))
    answer = {"orderId": "o", "status": 1, "amount": "99.00", "currency": "EUR"}
    with pytest.raises(JournalError, match="currency EUR is not the USD asked for"):
        journal.resolve("payment", "ref-1", response=answer)
    with pytest.raises(JournalError, match=r"amount 99\.00 is not the 10\.00 asked for"):
        journal.resolve("payment", "ref-1", response={**answer, "currency": "USD"})
    record = journal.resolve("payment", "ref-1", response={**answer, "amount": "10.0", "currency": "USD"})
    assert record.state == "succeeded" and record.error is None
    journal.begin("payment", "ref-2", b'{"amount": 10.00, "currency": "USD", "paymentCurrency": "JPY"}')
    converted = {"orderId": "o2", "status": 1, "amount": "1500", "currency": "JPY"}
    assert journal.resolve("payment", "ref-2", response=converted).state == "succeeded"


def test_resolve_with_the_outcome_found(journal: Journal) -> None:
    journal.begin("payment", "ref-1", b"{}")
    record = journal.resolve("payment", "ref-1", response=OK)
    assert record.state == "succeeded" and record.response and record.response["orderId"] == "ord_1"
    assert record.resolvedBy and record.resolvedBy.startswith("user")
    with pytest.raises(JournalError, match="only unknown outcomes resolve"):
        journal.resolve("payment", "ref-1", failed=True)


def test_refusals_and_unsent_calls_may_be_sent_again(journal: Journal) -> None:
    refused = APIError("400", http_status=400, code=400, msg="bad")
    assert journal.run("payment", "a", b"{}", Sender(journal, refused)).state == "rejected"
    never = TransportError("refused", may_have_reached_server=False)
    assert journal.run("payment", "b", b"{}", Sender(journal, never)).state == "not_sent"
    for key in ("a", "b"):
        retry = Sender(journal, OK)
        assert journal.run("payment", key, b'{"fixed":1}', retry).state == "succeeded"
        assert retry.calls == 1


def test_a_key_is_required(journal: Journal) -> None:
    with pytest.raises(JournalError, match="merchantReferenceId"):
        journal.begin("payment", "", b"{}")


def test_kinds_do_not_collide_and_environment_is_recorded(journal: Journal) -> None:
    journal.run("payment", "SKU-1", b"{}", Sender(journal, OK))
    journal.run("product", "SKU-1", b"{}", Sender(journal, OK))
    assert {(r.kind, r.environment) for r in journal.records()} == {("payment", "test"), ("product", "test")}
    assert journal.integrity_check() == "ok"
