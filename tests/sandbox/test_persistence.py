"""State survives restarts; the stored key is shared; several servers (and processes) share a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, wait_until_answering
from tests.sandbox.conftest import Api, now_ms
from toolkit.sandbox.embedded import embedded_sandbox, start_server


def test_restart_keeps_everything(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite"
    first = start_server(db_path=db)
    api = Api(first)
    try:
        key = first.api_key.get_secret_value()
        assert key.startswith("sk_test_")
        plan = api.ok(
            "POST",
            "/product",
            {
                "name": "P",
                "priceList": [
                    {
                        "currency": "USD",
                        "unitAmount": 5,
                        "priceType": "recurring",
                        "recurringDetails": {"interval": "month"},
                    }
                ],
            },
        )
        sub = api.ok(
            "POST",
            "/sandbox/subscriptions",
            {
                "customerEmail": "p@example.com",
                "productId": plan["productId"],
                "priceId": plan["priceList"][0]["priceId"],
                "paymentMethodType": "GCASH",
            },
        )
        paid = api.pay(amount=100, currency="PHP", paymentMethodType="GCASH")
        api.ok("POST", "/sandbox/clock/advance", {"days": 1})
    finally:
        api.close()
        first.stop()
    second = start_server(db_path=db)
    api = Api(second)
    try:
        assert second.api_key.get_secret_value() == key
        got = api.ok("GET", f"/subscription/{sub['subscriptionId']}")
        assert (
            got["createTime"] == sub["createTime"]
            and got["paymentInstrumentId"] == sub["paymentInstrumentId"]
        )
        rows = api.ok("GET", "/sandbox/payments")["payments"]
        assert [r["orderId"] for r in rows] == [paid["orderId"]]
        assert api.ok("GET", "/sandbox/info")["now"] - now_ms() > 86_000_000
        again = api.pay(
            amount=100,
            currency="PHP",
            paymentMethodType="GCASH",
            paymentInstrumentId=paid["paymentInstrumentId"],
        )
        assert again["paymentInstrumentId"] == paid["paymentInstrumentId"]
    finally:
        api.close()
        second.stop()


def test_embedded_sandbox_is_started_once(tmp_path: Path) -> None:
    first = embedded_sandbox(tmp_path / "home")
    try:
        assert embedded_sandbox(tmp_path / "home") is first
        assert first.db_path == (tmp_path / "home" / "sandbox.sqlite").resolve()
        assert "sk_test" not in repr(first)
    finally:
        first.stop()


@pytest.mark.slow
def test_two_processes_write_the_same_database(tmp_path: Path) -> None:
    """A ``toolkit sandbox`` process and an embedded server interleave writes on one file."""
    db = tmp_path / "shared.sqlite"
    local = start_server(db_path=db)
    key = local.api_key.get_secret_value()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit.cli", "sandbox", "--port", str(port), "--db", str(db)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        remote = f"http://127.0.0.1:{port}"
        wait_until_answering(remote + "/sandbox/info", seconds=20)
        body = {
            "customerEmail": "m@example.com",
            "paymentMethodType": "CARD",
            "amount": 1,
            "currency": "USD",
            "paymentInstrumentId": "pi_test_default",
            "returnUrl": "https://r",
        }
        ids = []
        for index in range(40):
            base = remote if index % 2 else local.base_url
            response = httpx.post(
                base + "/payment", json=body, headers={"X-API-KEY": key, "X-Timestamp": str(now_ms())}
            )
            assert response.status_code == 200, response.text
            ids.append(response.json()["data"]["orderId"])
        exported = httpx.get(
            remote + "/sandbox/payments", headers={"X-API-KEY": key, "X-Timestamp": str(now_ms())}
        ).json()
        assert sorted(p["orderId"] for p in exported["data"]["payments"]) == sorted(ids)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0].decode()
        local.stop()
    assert f"http://127.0.0.1:{port}" in output
