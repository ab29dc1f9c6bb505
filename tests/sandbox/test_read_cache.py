"""GET /subscription is served from a read cache: it must never show stale state.

Other writers are another server on the same file (its own connection, as a notebook kernel's
embedded sandbox would be) and a bare sqlite3 connection (as another process would be). Also: the
sandbox's prebuilt JSON encoder and decoder give what the shared helpers give.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import TEST_KEY, Api, recurring
from toolkit.sandbox import store
from toolkit.sandbox.db import Database
from toolkit.sandbox.embedded import start_server
from toolkit.sandbox.rules import DAY_MS


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Api, Api, Path]]:
    """Two servers on one database file, and the file."""
    db = tmp_path / "shared.sqlite"
    first, second = start_server(db_path=db, api_key=TEST_KEY), start_server(db_path=db, api_key=TEST_KEY)
    apis = Api(first), Api(second)
    yield apis[0], apis[1], db
    for api in apis:
        api.close()
    first.stop()
    second.stop()


def _subscribe(api: Api) -> dict[str, Any]:
    plan = api.ok("POST", "/product", {"name": "Plan", "priceList": [recurring()]})
    return dict(
        api.ok(
            "POST",
            "/sandbox/subscriptions",
            {
                "customerEmail": "c@example.com",
                "productId": plan["productId"],
                "priceId": plan["priceList"][0]["priceId"],
                "paymentInstrumentId": "pi_test_success",
            },
        )
    )


def test_commits_of_another_server_are_seen(pair: tuple[Api, Api, Path]) -> None:
    reader, writer, _ = pair
    sub = _subscribe(writer)
    path = f"/subscription/{sub['subscriptionId']}"
    assert reader.ok("GET", path) == reader.ok("GET", path) == sub  # second read: from the cache
    writer.ok("POST", "/sandbox/clock/advance", {"days": 40})
    assert reader.ok("GET", path)["elapsedCycles"] == 2
    writer.ok("POST", f"/sandbox/subscriptions/{sub['subscriptionId']}/cancel", {"atPeriodEnd": False})
    assert reader.ok("GET", path)["status"] == "canceled"
    writer.ok("POST", "/sandbox/reset")
    assert "unknown subscription" in reader.error("GET", path, None, 404)


def test_a_commit_from_another_process_is_seen(pair: tuple[Api, Api, Path]) -> None:
    api, _, db = pair
    sub = _subscribe(api)
    path = f"/subscription/{sub['subscriptionId']}"
    assert api.ok("GET", path)["quantity"] == 1
    with sqlite3.connect(db, isolation_level=None) as other:
        other.execute("UPDATE subscriptions SET quantity = 3 WHERE id = ?", (sub["subscriptionId"],))
        other.execute("UPDATE meta SET value = ? WHERE key = 'clock_offset_ms'", (str(35 * DAY_MS),))
    other.close()
    got = api.ok("GET", path)
    assert got["quantity"] == 3 and got["elapsedCycles"] == 2
    assert got["recurringInvoiceItem"]["amount"] == 90


def test_own_writes_are_seen(pair: tuple[Api, Api, Path]) -> None:
    api, _, _ = pair
    sub = _subscribe(api)
    path = f"/subscription/{sub['subscriptionId']}"
    assert api.ok("GET", path)["status"] == "active"
    api.ok("POST", "/sandbox/clock/advance", {"days": 31})
    assert api.ok("GET", path)["elapsedCycles"] == 2
    api.ok("POST", f"/sandbox/subscriptions/{sub['subscriptionId']}/cancel", {"atPeriodEnd": True})
    got = api.ok("GET", path)
    assert got["cancelAtPeriodEnd"] is True and got["upcomingInvoiceItem"] is None


def test_the_cache_never_holds_a_write_not_committed(tmp_path: Path) -> None:
    """The cache reads through its own connection: a write still open (here, one that then rolls
    back) is not in it, during the write or after."""
    db = Database(tmp_path / "c.sqlite")
    with pytest.raises(RuntimeError), db.write() as conn:
        store.advance_clock(conn, delta_ms=DAY_MS)
        assert store.clock_offset_ms(conn) == DAY_MS
        assert store.cached_now_ms(db, db.read_cache()) < store.now_ms(conn) - DAY_MS // 2
        raise RuntimeError("roll back")
    assert db.read_cache()["clock"] == (None, 0)
    assert store.clock_offset_ms(db.conn) == 0
