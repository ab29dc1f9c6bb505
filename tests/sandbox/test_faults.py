"""Faults on demand, at the sandbox, over real HTTP with a bare httpx client: the rules, their counts
and sequences, what each mode does on the wire and how many payments it leaves behind."""

from __future__ import annotations

import concurrent.futures
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sandbox.conftest import TEST_KEY, Api, now_ms
from toolkit.models import to_json_bytes
from toolkit.sandbox.embedded import RunningSandbox, start_server
from toolkit.sandbox.faults import fires

pytestmark = pytest.mark.timeout(60)

PAYMENT: dict[str, Any] = {
    "customerEmail": "drill@example.com",
    "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_test_success",
    "amount": Decimal("12.30"),
    "currency": "USD",
    "returnUrl": "https://shop.example/r",
}


def headers() -> dict[str, str]:
    return {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms()), "Content-Type": "application/json"}


def add(api: Api, **rule: Any) -> dict[str, Any]:
    data: dict[str, Any] = api.ok("POST", "/sandbox/faults", rule)
    return data


def rules(api: Api) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok("GET", "/sandbox/faults")["faults"]
    return found


def clear(api: Api) -> int:
    response = api.http.delete("/sandbox/faults")
    assert response.status_code == 200, response.text
    return int(response.json()["data"]["cleared"])


def created(api: Api, reference: str) -> int:
    return len(api.ok("GET", f"/sandbox/payments?merchantReferenceId={reference}")["payments"])


def pay(sandbox: RunningSandbox, reference: str, *, timeout: float = 5.0) -> httpx.Response:
    """One POST /payment on a fresh connection of a bare httpx client."""
    body = to_json_bytes({**PAYMENT, "merchantReferenceId": reference})
    with httpx.Client(base_url=sandbox.base_url, timeout=timeout) as http:
        return http.post("/payment", content=body, headers=headers())


# ---------------------------------------------------------------------------------------------
# the rules


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"route": "POST /refund", "mode": "error"}, "route"),
        ({"route": "*", "mode": "explode"}, "mode"),
        ({"route": "*", "mode": "error", "times": 2}, "times"),
        ({"mode": "error"}, "route"),
        ({"route": "*", "mode": "error", "delayMs": 10}, "delayMs"),
        ({"route": "*", "mode": "delay"}, "delayMs"),
        ({"route": "*", "mode": "delay", "delayMs": 60_001}, "delayMs"),
        ({"route": "*", "mode": "drop_after_commit", "status": 500}, "status"),
        ({"route": "*", "mode": "error", "status": 404}, "status"),
        ({"route": "*", "mode": "error", "status": "503"}, "status"),
        ({"route": "*", "mode": "error", "status": 500, "retryAfter": 3}, "retryAfter"),
        ({"route": "*", "mode": "error", "count": 0}, "count"),
        ({"route": "*", "mode": "error", "count": True}, "count"),
        ({"route": "*", "mode": "error", "probability": 0.5}, "seed"),
        ({"route": "*", "mode": "error", "seed": 3}, "seed"),
        ({"route": "*", "mode": "error", "probability": 1.5, "seed": 1}, "probability"),
        ({"route": "*", "mode": "error", "probability": "0.5", "seed": 1}, "probability"),
        ({"route": "*", "mode": "error", "count": 1, "probability": 0.5, "seed": 1}, "count, probability"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_field(api: Api, rule: dict[str, Any], field: str) -> None:
    msg = api.error("POST", "/sandbox/faults", rule, 400)
    assert msg.startswith(f"{field}:") or f"; {field}:" in msg, msg
    assert rules(api) == []


def test_rules_are_listed_counted_and_cleared(api: Api) -> None:
    first = add(api, route="POST /payment", mode="error", status=503, count=2)
    assert first["id"].startswith("flt_") and first["count"] == 2 and first["remaining"] == 2
    assert (first["fired"], first["matched"]) == (0, 0)
    add(api, route="*", mode="error", status=429)
    assert [r["mode"] for r in rules(api)] == ["error", "error"]
    assert rules(api)[1]["retryAfter"] == 1 and rules(api)[1]["count"] == 1  # the defaults

    statuses = [pay(api.sandbox, f"count-{i}").status_code for i in range(4)]
    assert statuses == [503, 503, 429, 200]  # in the order added; a spent rule stays listed
    listed = rules(api)
    assert [(r["fired"], r["remaining"]) for r in listed] == [(2, 0), (1, 0)]
    assert clear(api) == 2
    assert rules(api) == []


def test_controls_wrong_keys_and_other_routes_never_meet_a_fault(api: Api) -> None:
    add(api, route="*", mode="error", status=500, count=1000)
    assert api.ok("GET", "/sandbox/info")["sandbox"] is True
    wrong = {"X-API-KEY": "sk_wrong", "X-Timestamp": str(now_ms())}
    assert httpx.post(api.sandbox.base_url + "/payment", json={}, headers=wrong).status_code == 401
    assert httpx.get(api.sandbox.base_url + "/nowhere", headers=headers()).status_code == 404
    assert rules(api)[0]["matched"] == 0
    assert pay(api.sandbox, "controls").status_code == 500
    assert rules(api)[0]["matched"] == 1


def test_each_route_meets_only_its_rules(api: Api) -> None:
    add(api, route="GET /subscription", mode="error", status=502)
    add(api, route="POST /product", mode="error", status=504)
    assert api.get("/subscription/sub_missing").status_code == 502
    assert api.get("/subscription/sub_missing").status_code == 404
    assert api.post("/product", {"name": "Lamp"}).status_code == 504
    assert pay(api.sandbox, "routes").status_code == 200


def test_probability_rules_repeat_their_sequence(api: Api) -> None:
    """Same seed, same requests hit; the sequence is the pure function ``fires``."""
    expected = [fires(Decimal("0.5"), 42, n) for n in range(12)]
    assert 0 < sum(expected) < 12
    seen = []
    for _ in range(2):
        rule = add(api, route="GET /subscription", mode="error", status=503, probability=0.5, seed=42)
        assert rule["probability"] == 0.5 and rule["count"] is None
        seen.append([api.get("/subscription/sub_x").status_code == 503 for _ in range(12)])
        clear(api)
    assert seen == [expected, expected]
    assert [fires(Decimal("0.5"), 43, n) for n in range(12)] != expected
    assert not any(fires(Decimal("0.000001"), 1, n) for n in range(100))
    assert all(fires(Decimal(1), 1, n) for n in range(100))


def test_reset_clears_the_rules_and_so_does_a_restart(api: Api, tmp_path: Path) -> None:
    add(api, route="*", mode="error", count=5)
    api.ok("POST", "/sandbox/reset")
    assert rules(api) == []

    db = tmp_path / "restart.sqlite"
    first = start_server(db_path=db, api_key=TEST_KEY)
    try:
        response = httpx.post(
            first.base_url + "/sandbox/faults",
            headers=headers(),
            content=b'{"route": "*", "mode": "error", "count": 5}',
        )
        assert response.status_code == 200
    finally:
        first.stop()
    second = start_server(db_path=db, api_key=TEST_KEY)
    try:
        listed = httpx.get(second.base_url + "/sandbox/faults", headers=headers()).json()["data"]["faults"]
        assert listed == []
    finally:
        second.stop()


# ---------------------------------------------------------------------------------------------
# the modes on the wire


def test_error_answers_an_envelope_and_creates_nothing(api: Api, unique: str) -> None:
    add(api, route="POST /payment", mode="error", status=429, retryAfter=7)
    response = pay(api.sandbox, f"err-{unique}")
    assert response.status_code == 429 and response.headers["retry-after"] == "7"
    envelope = response.json()
    assert envelope["code"] == 429 and envelope["data"] is None and "sandbox fault" in envelope["msg"]
    assert created(api, f"err-{unique}") == 0


@pytest.mark.parametrize(("mode", "payments"), [("drop_before_commit", 0), ("drop_after_commit", 1)])
def test_a_drop_closes_the_connection_without_an_answer(
    api: Api, unique: str, mode: str, payments: int
) -> None:
    add(api, route="POST /payment", mode=mode)
    with pytest.raises(httpx.RemoteProtocolError):
        pay(api.sandbox, f"drop-{unique}")
    assert created(api, f"drop-{unique}") == payments
    assert pay(api.sandbox, f"after-{unique}").status_code == 200  # count 1: the next one goes through


def test_hang_after_commit_answers_nothing_until_the_client_gives_up(api: Api, unique: str) -> None:
    add(api, route="POST /payment", mode="hang_after_commit")
    with pytest.raises(httpx.ReadTimeout):
        pay(api.sandbox, f"hang-{unique}", timeout=1.0)
    assert created(api, f"hang-{unique}") == 1
    assert rules(api)[0]["fired"] == 1


def test_delay_answers_normally_afterwards(api: Api, unique: str) -> None:
    add(api, route="POST /payment", mode="delay", delayMs=50)
    response = pay(api.sandbox, f"delay-{unique}")
    assert response.status_code == 200 and response.json()["data"]["status"] == 1
    assert created(api, f"delay-{unique}") == 1


def test_after_commit_modes_run_the_route_as_it_is(api: Api, unique: str) -> None:
    """An invalid request under drop_after_commit is still refused by the route: nothing is created."""
    add(api, route="POST /payment", mode="drop_after_commit")
    body = to_json_bytes({**PAYMENT, "amount": Decimal("-1"), "merchantReferenceId": f"bad-{unique}"})
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(api.sandbox.base_url + "/payment", content=body, headers=headers())
    assert created(api, f"bad-{unique}") == 0


def test_count_is_taken_once_across_concurrent_requests(api: Api, unique: str) -> None:
    """Twenty requests at once against ``count: 3``: exactly three meet the fault."""
    add(api, route="POST /payment", mode="error", status=503, count=3)
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(lambda i: pay(api.sandbox, f"conc-{unique}-{i}").status_code, range(20)))
    assert sorted(statuses) == [200] * 17 + [503] * 3
    assert rules(api)[0]["fired"] == 3 and rules(api)[0]["matched"] == 3


def test_a_delay_its_client_gave_up_on_still_makes_the_payment(
    api: Api, unique: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As a slow service does, and as the docs say (payments created: 1). The route read a body
    the client had taken away: nothing was made, and ClientDisconnect was logged as an error."""
    add(api, route="POST /payment", mode="delay", delayMs=600)
    with caplog.at_level("INFO", logger="toolkit.sandbox"), pytest.raises(httpx.ReadTimeout):
        pay(api.sandbox, f"gone-{unique}", timeout=0.1)
    deadline = time.monotonic() + 5
    while created(api, f"gone-{unique}") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert created(api, f"gone-{unique}") == 1
    requests = api.ok("GET", "/sandbox/requests")["requests"]
    (entry,) = [e for e in requests if e["merchantReferenceId"] == f"gone-{unique}"]
    assert (entry["path"], entry["fault"]) == ("/payment", "delay")
    assert entry["latencyMs"] >= 500
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
