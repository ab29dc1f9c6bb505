"""Scenarios: a CSV of payments and expected outcomes, checked, sent and compared with what came back."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from toolkit.errors import InputError
from toolkit.journal import Journal
from toolkit.scenarios import (
    DEFAULT_RETURN_URL,
    compare_outcomes,
    mismatch_message,
    next_actions,
    outcomes_by_method,
    qr_png,
    read_scenario,
    scenario_requests,
)

HEADER = "merchantReferenceId,customer,method,paymentInstrumentId,amount,currency,expected\n"


def scenario(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "scenario.csv"
    path.write_text(HEADER + rows, encoding="utf-8")
    return path


def test_read_scenario_keeps_amounts_as_text_and_reads_status_codes(tmp_path: Path) -> None:
    frame = read_scenario(scenario(tmp_path, " S-1 ,ana@example.com,card,pi_test_success,12.30,USD, 1\n"))
    assert frame.to_dict("records") == [
        {
            "merchantReferenceId": "S-1",
            "customer": "ana@example.com",
            "method": "card",
            "paymentInstrumentId": "pi_test_success",
            "amount": "12.30",
            "currency": "USD",
            "expected": "success",
        }
    ]
    assert frame.attrs["source"] == str(tmp_path / "scenario.csv")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (",ana@example.com,CARD,,1.00,USD,success\n", "row 2: merchantReferenceId is empty"),
        ("S-1,ana@example.com,CARD,,1.00,USD,paid\n", "row 2: expected 'paid' is not one of"),
        (
            "S-1,a@example.com,CARD,,1,USD,success\nS-1,a@example.com,CARD,,1,USD,success\n",
            "'S-1' appears twice",
        ),
    ],
)
def test_a_scenario_that_cannot_work_names_the_row(tmp_path: Path, rows: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_scenario(scenario(tmp_path, rows))


def test_missing_columns_and_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "short.csv"
    path.write_text("merchantReferenceId,method\nS-1,CARD\n", encoding="utf-8")
    with pytest.raises(InputError, match="column\\(s\\) customer, expected missing"):
        read_scenario(path)
    with pytest.raises(InputError, match="scenario file not found"):
        read_scenario(tmp_path / "absent.csv")


def test_requests_name_the_customer_and_default_the_return_url(tmp_path: Path) -> None:
    frame = read_scenario(
        scenario(
            tmp_path,
            "S-1,ana@example.com,card,pi_test_success,12.30,USD,success\nS-2,cust-7,WECHAT,,8.00,CNY,next_action\n",
        )
    )
    with Journal(tmp_path / "journal.sqlite", environment="test") as journal:
        first, second = scenario_requests(frame, journal)
    assert (first.customerEmail, first.paymentMethodType, first.amount) == (
        "ana@example.com",
        "CARD",
        Decimal("12.30"),
    )
    assert first.returnUrl == DEFAULT_RETURN_URL
    assert (second.referenceCustomerId, second.customerEmail) == ("cust-7", None)


def test_a_price_unknown_to_the_journal_or_a_bad_request_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "priced.csv"
    path.write_text(
        "merchantReferenceId,customer,method,paymentInstrumentId,price,expected\n"
        "S-1,ana@example.com,CARD,pi_test_success,SKU-NONE/USD,success\n",
        encoding="utf-8",
    )
    with Journal(tmp_path / "journal.sqlite", environment="test") as journal:
        with pytest.raises(
            InputError, match=r"priced.csv: row 2 \(S-1\): price 'SKU-NONE/USD' is not a one-time"
        ):
            scenario_requests(read_scenario(path), journal)
        bad = read_scenario(
            scenario(tmp_path, "S-2,ana@example.com,CARD,pi_test_success,1.001,USD,success\n")
        )
        with pytest.raises(InputError, match=r"row 2 \(S-2\): invalid PaymentRequest"):
            scenario_requests(bad, journal)


def payments() -> pd.DataFrame:
    wallet = {
        "walletHandleRedirectOrDisplayQrCode": {"mobileAuthUrl": "weixin://pay/1", "expiresAt": 1_700_000_000}
    }
    return pd.DataFrame(
        {
            "paymentMethodType": ["CARD", "WECHAT", "CARD"],
            "status": pd.Categorical(
                ["success", "next_action", "unknown"],
                categories=["success", "pending", "failure", "next_action", "unknown"],
            ),
            "amount": [Decimal("12.30"), Decimal("8.00"), Decimal("1.00")],
            "currency": ["USD", "CNY", "USD"],
            "action": [None, {"method": "GET", "redirectUrl": "https://pay.example/1", **wallet}, None],
        },
        index=pd.Index(["S-1", "S-2", "S-3"], name="merchantReferenceId"),
    )


def test_outcomes_compared_with_the_scenario(tmp_path: Path) -> None:
    frame = read_scenario(
        scenario(
            tmp_path,
            "S-1,a@example.com,CARD,,1,USD,success\n"
            "S-2,a@example.com,WECHAT,,1,CNY,success\n"
            "S-4,a@example.com,CARD,,1,USD,failure\n"
            "S-5,a@example.com,CARD,,1,USD,pending\n",
        )
    )
    errors = pd.DataFrame({"merchantReferenceId": ["S-4"], "stage": ["send"], "error": ["HTTP 409"]})
    comparison = compare_outcomes(frame, payments(), errors)
    assert comparison["actual"].to_dict() == {
        "S-1": "success",
        "S-2": "next_action",
        "S-4": "error",
        "S-5": "not sent",
    }
    assert comparison["ok"].to_dict() == {"S-1": True, "S-2": False, "S-4": False, "S-5": False}
    assert (
        comparison.loc["S-1", "charged"] == "12.30 USD"
        and comparison.loc["S-4", "detail"] == "send: HTTP 409"
    )
    assert mismatch_message(comparison) == (
        "3 of 4 outcomes differ from the scenario: S-2 expected success got next_action, "
        "S-4 expected failure got error, S-5 expected pending got not sent"
    )
    assert mismatch_message(comparison[comparison["ok"]]) is None


def test_outcomes_by_method_shows_every_status() -> None:
    table = outcomes_by_method(payments())
    assert list(table.columns) == ["success", "pending", "failure", "next_action", "unknown"]
    assert list(table.loc["CARD"]) == [1, 0, 0, 0, 1]
    assert list(table.loc["WECHAT"]) == [0, 0, 0, 1, 0]


def test_next_actions_and_their_qr_codes() -> None:
    actions = next_actions(payments())
    assert actions.index.tolist() == ["S-2"]
    row = actions.loc["S-2"]
    assert (row["amount"], row["actionMethod"], row["mobileAuthUrl"], row["qrCode"]) == (
        "8.00 CNY",
        "GET",
        "weixin://pay/1",
        True,
    )
    assert row["expiresAt"] == pd.Timestamp("2023-11-14T22:13:20Z")
    action = payments()["action"].iloc[1]
    assert isinstance(action, dict)
    drawn = qr_png(action)  # drawn from mobileAuthUrl
    assert drawn is not None and drawn.startswith(b"\x89PNG")
    assert qr_png(
        {"walletHandleRedirectOrDisplayQrCode": {"imageDataUrl": "data:image/png;base64,iVBORw=="}}
    ) == (b"\x89PNG")
    assert qr_png({"method": "GET"}) is None
