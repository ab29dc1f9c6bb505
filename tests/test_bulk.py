"""Bulk calls against the real sandbox: re-runs send nothing, failures are collected per row."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import exported_payments
from toolkit import AsyncClient, Client, Journal, create_payments, create_products, load_subscriptions
from toolkit.bulk import acreate_payments
from toolkit.controls import SandboxControls
from toolkit.errors import ConfigurationError
from toolkit.sandbox.embedded import RunningSandbox


def rows(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "merchantReferenceId": f"{prefix}-{i:03d}",
            "paymentMethodType": "CARD",
            "paymentInstrumentId": "pi_test_success",
            "returnUrl": "https://shop/r",
            "customerEmail": f"{prefix}{i}@example.com",
            "amount": f"{i + 1}.10",
            "currency": "USD",
        }
        for i in range(count)
    ]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite", environment="bulk test")


def run(batch: Any, sandbox: RunningSandbox, journal: Journal, **extra: Any) -> Any:
    from toolkit.bulk import run_sync
    from toolkit.client import AsyncClient

    async def go() -> Any:
        async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
            return await acreate_payments(batch, client=client, journal=journal, progress=False, **extra)

    return run_sync(go)


def test_rerun_of_100_payments_sends_nothing(sandbox: RunningSandbox, journal: Journal, unique: str) -> None:
    batch = rows(unique, 100)
    first = run(batch, sandbox, journal)
    assert (first.sent, first.reused, len(first.errors)) == (100, 0, 0)
    at_server = len(exported_payments(sandbox))
    again = run(batch, sandbox, journal)
    assert (again.sent, again.reused) == (0, 100)
    assert len(exported_payments(sandbox)) == at_server
    assert list(again.frame.index) == [r["merchantReferenceId"] for r in batch]
    assert again.frame["amountMinor"].sum() == sum(int(Decimal(r["amount"]) * 100) for r in batch)


def test_same_key_changed_amount_is_refused_and_nothing_sent(
    sandbox: RunningSandbox, journal: Journal, unique: str
) -> None:
    batch = rows(unique, 3)
    run(batch, sandbox, journal)
    at_server = len(exported_payments(sandbox))
    batch[1]["amount"] = "999.00"
    result = run(batch, sandbox, journal)
    assert result.sent == 0 and len(exported_payments(sandbox)) == at_server
    assert result.errors.to_dict("records")[0] | {"error": ""} == {
        "merchantReferenceId": f"{unique}-001",
        "row": 1,
        "stage": "journal",
        "error": "",
    }
    assert "different request" in result.errors["error"].iloc[0]


def test_a_key_with_a_space_at_its_end_is_refused_not_charged_again(
    sandbox: RunningSandbox, journal: Journal, unique: str
) -> None:
    """``K-1 `` is the ``K-1`` reconciliation reads, but it was a journal key of its own: the
    same payment made twice. It is refused, saying how to write it; nothing is sent for it."""
    batch = rows(unique, 1)
    run(batch, sandbox, journal)
    at_server = len(exported_payments(sandbox))
    again = run([{**batch[0], "merchantReferenceId": f"{unique}-000 "}], sandbox, journal)
    assert again.sent == 0 and len(exported_payments(sandbox)) == at_server
    (error,) = again.errors.to_dict("records")
    assert error["stage"] == "request" and f"write it '{unique}-000'" in error["error"]


def test_failures_are_collected_per_row_and_the_batch_goes_on(
    sandbox: RunningSandbox, journal: Journal, unique: str
) -> None:
    batch = rows(unique, 4)
    batch[0]["paymentMethodType"] = "card"
    batch[1]["paymentInstrumentId"] = "pi_unknown_instrument"
    batch[2]["merchantReferenceId"] = batch[3]["merchantReferenceId"]
    batch.append({**rows(unique + "x", 1)[0], "amount": 12.5})
    result = run(batch, sandbox, journal)
    by_row = {r["row"]: r for r in result.errors.to_dict("records")}
    assert by_row[0]["stage"] == "request" and "uppercase" in by_row[0]["error"]
    assert by_row[1]["stage"] == "rejected" and "paymentInstrumentId" in by_row[1]["error"]
    assert by_row[3]["stage"] == "input" and "repeats row 2" in by_row[3]["error"]
    assert by_row[4]["stage"] == "request" and "float" in by_row[4]["error"]
    assert result.sent == 2 and set(result.frame["outcomeState"]) == {"succeeded", "rejected"}


def test_rows_from_a_dataframe_with_extra_columns_ignored(
    sandbox: RunningSandbox, journal: Journal, unique: str
) -> None:
    frame = pd.DataFrame(rows(unique, 3)).assign(expected="success")
    result = run(frame, sandbox, journal, ignore_columns=["expected"])
    assert result.ok and result.sent == 3


def test_create_products_from_the_sample_catalog_twice(sandbox: RunningSandbox, tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "products:\n"
        "  - merchantReferenceId: SKU-BOOK\n    name: Cookbook\n    taxCategory: ebook\n"
        "    localizedNames: {de: Kochbuch}\n    priceList:\n"
        "      - {currency: USD, unitAmount: 9.99, isDefaultPrice: true, currencyOptions: {JPY: 1500}}\n"
        "      - currency: USD\n        unitAmount: 29.97\n        priceType: recurring\n"
        "        recurringDetails: {interval: quarter, intervalCount: 1, trialPeriodDays: 14}\n",
        encoding="utf-8",
    )
    with Journal(tmp_path / "j.sqlite", environment="t") as journal:
        from toolkit.bulk import acreate_products, run_sync
        from toolkit.client import AsyncClient

        async def go() -> Any:
            async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
                return await acreate_products(catalog, client=client, journal=journal, progress=False)

        first, second = run_sync(go), run_sync(go)
    assert (first.sent, second.sent, second.reused) == (1, 0, 1)
    prices = first.extra["prices"]
    assert list(prices["unitAmount"]) == [Decimal("9.99"), Decimal("29.97")]
    assert list(prices["unitAmountMinor"]) == [999, 2997]
    assert list(prices["priceType"]) == ["one_time", "recurring"]
    assert prices["isDefaultPrice"].tolist() == [True, False]
    assert first.frame.loc["SKU-BOOK", "localizedNames"] == {"de": "Kochbuch"}


def test_load_subscriptions_with_errors(sandbox: RunningSandbox, client: Client, unique: str) -> None:
    product = client.create_product(
        name="Plan",
        priceList=[
            {
                "currency": "EUR",
                "unitAmount": "4.50",
                "priceType": "recurring",
                "recurringDetails": {"interval": "month", "intervalCount": 1},
            }
        ],
    )
    assert product.priceList is not None
    controls = SandboxControls(client)
    subscription = controls.create_subscription(
        customerEmail=f"{unique}@example.com",
        productId=product.productId,
        priceId=product.priceList[0].priceId,
        quantity=3,
        merchantReference=f"sub-{unique}",
        paymentInstrumentId="pi_test_success",
    )
    from toolkit.bulk import aload_subscriptions, run_sync
    from toolkit.client import AsyncClient

    async def go() -> Any:
        async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as aclient:
            return await aload_subscriptions(
                [subscription.subscriptionId or "", "sub_missing"], client=aclient, progress=False
            )

    result = run_sync(go)
    assert list(result.frame.index) == [f"sub-{unique}"]
    assert result.frame.loc[f"sub-{unique}", "upcomingInvoiceAmount"] == Decimal("13.50")
    assert result.frame.loc[f"sub-{unique}", "upcomingInvoiceAmountMinor"] == 1350
    assert len(result.extra["invoice_items"]) == 2
    assert result.errors["error"].str.contains("sub_missing").all()


def test_plain_functions_use_the_embedded_sandbox_and_its_journal(unique: str) -> None:
    result = create_payments(rows(unique, 2), progress=False)
    assert result.sent == 2
    with Journal.open() as journal:
        assert journal.environment.startswith("embedded sandbox")
        assert {r.key for r in journal.records("payment")} == {f"{unique}-000", f"{unique}-001"}
    assert create_products([], progress=False).sent == 0
    assert load_subscriptions([], progress=False).frame.empty


@pytest.mark.parametrize(
    "bad",
    [
        {"amount": "1e999999999"},
        {"merchantReferenceId": "bad-\ud800"},
        {"amount": "0.000000000000000000000000000001"},
    ],
)
def test_one_bad_row_does_not_stop_the_batch(
    bad: dict[str, Any],
    sandbox: RunningSandbox,
    journal: Journal,
    unique: str,
) -> None:
    batch = rows(unique, 20)
    batch[7] = {**batch[7], **bad}
    result = run(batch, sandbox, journal, concurrency=4)
    assert result.sent == 19
    (error,) = result.errors.to_dict("records")
    assert error["row"] == 7 and error["stage"] == "request"
    exported = {p["merchantReferenceId"] for p in exported_payments(sandbox)}
    assert {r["merchantReferenceId"] for i, r in enumerate(batch) if i != 7} <= exported
    assert journal.unknown() == []  # nothing left in flight


def test_a_refused_key_stops_the_batch_and_is_raised(
    sandbox: RunningSandbox,
    journal: Journal,
    unique: str,
) -> None:
    from toolkit.bulk import run_sync
    from toolkit.client import AsyncClient
    from toolkit.errors import AuthenticationError

    async def go() -> Any:
        async with AsyncClient(base_url=sandbox.base_url, api_key="sk_wrong_key_for_this_test") as client:
            return await acreate_payments(
                rows(unique, 40), client=client, journal=journal, progress=False, concurrency=4
            )

    with pytest.raises(AuthenticationError, match="check TOOLKIT_API_KEY"):
        run_sync(go)
    attempted = journal.records()
    assert 1 <= len(attempted) <= 4  # the calls in flight when the first 401 came back, no more
    assert {r.state for r in attempted} == {"rejected"}  # nothing exists at the service: sendable
    assert not any(str(p["merchantReferenceId"]).startswith(unique) for p in exported_payments(sandbox))


def test_an_unreachable_service_stops_the_batch_with_a_hint(journal: Journal, unique: str) -> None:
    from tests.conftest import free_port
    from toolkit.bulk import run_sync
    from toolkit.client import AsyncClient
    from toolkit.errors import TransportError

    async def go() -> Any:
        url = f"http://127.0.0.1:{free_port()}"
        async with AsyncClient(base_url=url, api_key="sk_test_nobody_listens", max_retries=0) as client:
            return await acreate_payments(
                rows(unique, 40), client=client, journal=journal, progress=False, concurrency=4
            )

    with pytest.raises(TransportError, match="is the service running"):
        run_sync(go)
    assert 1 <= len(journal.records()) <= 4
    assert {r.state for r in journal.records()} == {"not_sent"}


def test_progress_is_a_line_that_survives_an_export_and_no_bar_for_one_call(
    sandbox: RunningSandbox,
    journal: Journal,
    unique: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from toolkit.bulk import run_sync
    from toolkit.client import AsyncClient

    def batch(count: int, prefix: str) -> None:
        async def go() -> Any:
            async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
                return await acreate_payments(rows(prefix, count), client=client, journal=journal)

        run_sync(go)

    batch(3, unique)
    captured = capsys.readouterr()
    assert "payments: 3 of 3 call(s) done in " in captured.out  # plain text: kept in the HTML export
    batch(1, unique + "-one")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""  # one call: no bar, no line


def test_one_journaled_payment_is_sent_once(
    sandbox: RunningSandbox,
    journal: Journal,
    unique: str,
) -> None:
    from toolkit import create_payment, payments_frame

    (row,) = rows(unique, 1)
    with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as client:
        first = create_payment(row, client=client, journal=journal)
        again = create_payment(client=client, journal=journal, **row)
    assert first.sent and first.state == "succeeded" and first.response is not None
    assert not again.sent and again.response == first.response
    assert (
        sum(p["merchantReferenceId"] == row["merchantReferenceId"] for p in exported_payments(sandbox)) == 1
    )
    assert list(payments_frame(journal).index) == [row["merchantReferenceId"]]


def test_a_blocking_batch_refuses_an_async_client_before_anything_is_journaled(
    sandbox: RunningSandbox, journal: Journal, unique: str
) -> None:
    """Each blocking call runs its own event loop: an AsyncClient kept from an earlier call served
    a closed loop, and every row was journaled ``unknown`` though nothing had been sent."""
    client = AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key)
    with pytest.raises(ConfigurationError, match="await acreate_payments"):
        create_payments(rows(unique, 2), client=client, journal=journal, progress=False)
    assert journal.records("payment") == []
