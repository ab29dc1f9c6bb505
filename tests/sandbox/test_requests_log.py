"""The request log (GET /sandbox/requests): what each entry holds, never the key, each request exactly
once under 200 concurrent requests (one process, and two worker processes), the ring bound."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port, wait_until_answering
from tests.sandbox.conftest import TEST_KEY, Api, now_ms
from toolkit.models import to_json_bytes
from toolkit.sandbox import store
from toolkit.sandbox.db import Database
from toolkit.sandbox.embedded import start_server
from toolkit.sandbox.requests_log import FLUSH_INTERVAL_S, LOG_SIZE

pytestmark = pytest.mark.timeout(120)

PAYMENT: dict[str, Any] = {
    "customerEmail": "log@example.com",
    "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_test_default",
    "amount": 3,
    "currency": "USD",
    "returnUrl": "https://r",
}


def log(api: Api, limit: int = 100) -> list[dict[str, Any]]:
    response = api.get("/sandbox/requests", params={"limit": limit})
    assert response.status_code == 200, response.text
    assert TEST_KEY not in response.text
    entries: list[dict[str, Any]] = response.json()["data"]["requests"]
    return entries


def test_entries_say_what_happened_newest_first(api: Api, unique: str) -> None:
    api.pay(**{**PAYMENT, "merchantReferenceId": f"ok-{unique}"})
    api.error("POST", "/payment", {**PAYMENT, "amount": -1, "merchantReferenceId": f"bad-{unique}"}, 400)
    api.ok("POST", "/sandbox/faults", {"route": "POST /payment", "mode": "error", "status": 503})
    api.error("POST", "/payment", {**PAYMENT, "merchantReferenceId": f"flt-{unique}"}, 503)
    api.get("/subscription/sub_nope")
    entries = log(api, limit=5)
    assert [(e["method"], e["path"], e["status"]) for e in entries] == [
        ("GET", "/subscription/sub_nope", 404),
        ("POST", "/payment", 503),
        ("POST", "/sandbox/faults", 200),
        ("POST", "/payment", 400),
        ("POST", "/payment", 200),
    ]
    assert [e["merchantReferenceId"] for e in entries] == [
        None,
        f"flt-{unique}",
        None,
        f"bad-{unique}",
        f"ok-{unique}",
    ]
    assert entries[1]["fault"] == "error" and entries[1]["faultId"].startswith("flt_")
    assert entries[0]["fault"] is None and entries[0]["faultId"] is None
    assert all(isinstance(e["latencyMs"], float) and e["latencyMs"] >= 0 for e in entries)
    assert all(abs(e["time"] - now_ms()) < 60_000 for e in entries)
    assert entries == sorted(entries, key=lambda e: -e["time"])
    assert all(e["path"] != "/sandbox/requests" for e in log(api, limit=LOG_SIZE))  # reading is not logged
    assert len(log(api, limit=2)) == 2
    assert "limit" in api.error("GET", f"/sandbox/requests?limit={LOG_SIZE + 1}", None, 400)
    assert "limit" in api.error("GET", "/sandbox/requests?limit=0", None, 400)


def test_a_dropped_request_is_logged_without_a_status(api: Api, unique: str) -> None:
    api.ok("POST", "/sandbox/faults", {"route": "POST /payment", "mode": "drop_before_commit"})
    with pytest.raises(httpx.RemoteProtocolError):
        api.post("/payment", {**PAYMENT, "merchantReferenceId": f"drop-{unique}"})
    (entry,) = [e for e in log(api) if e["merchantReferenceId"] == f"drop-{unique}"]
    assert entry["status"] is None and entry["fault"] == "drop_before_commit"


def test_a_client_gone_before_its_body_arrived_is_a_dropped_request_not_a_server_error(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """Half a body, then the connection closed: the route's read raised ClientDisconnect, logged
    as an unexpected error with its traceback and listed as a 500 nobody received."""
    url = httpx.URL(api.sandbox.base_url)
    head = (
        f"POST /payment HTTP/1.1\r\nHost: {url.host}\r\nX-API-KEY: {TEST_KEY}\r\n"
        f"X-Timestamp: {now_ms()}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    sent = now_ms()
    with caplog.at_level("INFO", logger="toolkit.sandbox"):
        with socket.create_connection((url.host, url.port), timeout=5) as conn:
            conn.sendall(head.encode() + b'{"merchantReferenceId": ')
        deadline = time.monotonic() + 5
        while not (found := [e for e in log(api) if e["path"] == "/payment" and e["time"] >= sent]):
            assert time.monotonic() < deadline, log(api, limit=5)
            time.sleep(0.05)
    assert [(e["status"], e["fault"]) for e in found] == [(None, None)]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


async def _concurrent(base_url: str, unique: str, count: int) -> None:
    """``count`` requests at once on as many connections: payments and subscription reads alternate."""
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:

        async def one(index: int) -> int:
            auth = {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms()), "Content-Type": "application/json"}
            if index % 2:
                response = await client.get(f"/subscription/sub_{unique}_{index}", headers=auth)
            else:
                body = to_json_bytes({**PAYMENT, "merchantReferenceId": f"c-{unique}-{index}"})
                response = await client.post("/payment", content=body, headers=auth)
            return response.status_code

        statuses = await asyncio.gather(*(one(i) for i in range(count)))
    assert sorted(set(statuses)) == [200, 404]


def _mine(entries: list[dict[str, Any]], unique: str) -> list[str]:
    return [
        e["merchantReferenceId"] or e["path"]
        for e in entries
        if unique in (e["merchantReferenceId"] or "") or unique in e["path"]
    ]


def _expected(unique: str, count: int) -> list[str]:
    return sorted(f"/subscription/sub_{unique}_{i}" if i % 2 else f"c-{unique}-{i}" for i in range(count))


@pytest.mark.slow
async def test_200_concurrent_requests_are_each_listed_exactly_once(api: Api, unique: str) -> None:
    await _concurrent(api.sandbox.base_url, unique, 200)
    assert sorted(_mine(log(api, limit=LOG_SIZE), unique)) == _expected(unique, 200)


@pytest.mark.slow
def test_two_worker_processes_share_one_log(tmp_path: Path, unique: str) -> None:
    """``toolkit sandbox --workers 2``: each worker appends its own; the log lists each request once.
    The fault rules are shared too: a count is taken once across both workers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["TOOLKIT_SANDBOX_API_KEY"] = TEST_KEY
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolkit.cli",
            "sandbox",
            "--port",
            str(port),
            "--workers",
            "2",
            "--db",
            str(tmp_path / "workers.sqlite"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(url + "/openapi.json")
        asyncio.run(_concurrent(url, unique, 200))
        # Another worker's entries arrive within FLUSH_INTERVAL_S; poll a bounded number of times.
        mine: list[str] = []
        for _ in range(100):
            auth = {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms())}
            entries = httpx.get(url + "/sandbox/requests", params={"limit": LOG_SIZE}, headers=auth)
            mine = _mine(entries.json()["data"]["requests"], unique)
            if len(mine) >= 200:
                break
            time.sleep(FLUSH_INTERVAL_S)
        assert sorted(mine) == _expected(unique, 200)
        assert asyncio.run(_count_shared_by_workers(url, unique)) == [200] * 35 + [503] * 5
    finally:
        server.terminate()
        server.wait(timeout=30)


async def _count_shared_by_workers(url: str, unique: str) -> list[int]:
    """A ``count: 5`` rule against 40 payments at once spread over both workers: five meet it."""
    auth = {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms()), "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=40), timeout=60) as client:
        rule = {"route": "POST /payment", "mode": "error", "status": 503, "count": 5}
        assert (await client.post("/sandbox/faults", json=rule, headers=auth)).status_code == 200

        async def one(index: int) -> int:
            body = to_json_bytes({**PAYMENT, "merchantReferenceId": f"w-{unique}-{index}"})
            return (await client.post("/payment", content=body, headers=auth)).status_code

        statuses = sorted(await asyncio.gather(*(one(i) for i in range(40))))
        (listed,) = (await client.get("/sandbox/faults", headers=auth)).json()["data"]["faults"]
        assert (listed["fired"], listed["remaining"]) == (5, 0)
    return statuses


def test_log_requests_prints_one_line_per_request_without_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], unique: str
) -> None:
    running = start_server(db_path=tmp_path / "echo.sqlite", api_key=TEST_KEY, log_requests=True)
    try:
        auth = {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms())}
        httpx.post(
            running.base_url + "/payment",
            content=to_json_bytes({**PAYMENT, "merchantReferenceId": f"echo-{unique}\n"}),
            headers=auth,
        )
        httpx.get(running.base_url + "/subscription/sub_echo", headers=auth)
    finally:
        running.stop()
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == 2 and TEST_KEY not in "".join(lines)
    assert " POST /payment 200 " in lines[0] and lines[0].endswith(f"merchantReferenceId=echo-{unique}\\x0a")
    assert " GET /subscription/sub_echo 404 " in lines[1] and lines[1].endswith("ms")


def test_the_log_keeps_the_last_rows_only(tmp_path: Path) -> None:
    db = Database(tmp_path / "ring.sqlite")
    for batch in range(3):
        rows = [
            (1000 * batch + i, "GET", f"/subscription/{batch}-{i}", 404, 10, None, None, None)
            for i in range(10)
        ]
        with db.write() as conn:
            store.append_requests(conn, rows=rows, keep=15)
    kept = store.recent_requests(db.conn, limit=100)
    assert [row["path"] for row in kept] == [
        f"/subscription/{b}-{i}" for b in (2, 1) for i in range(9, -1, -1)
    ][:15]
