"""Storage details the POST /payment fast path relies on: schema, seeded instruments, checkpoints,
and the body type check."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from decimal import Decimal
from pathlib import Path

import pytest

from toolkit.sandbox import db as sandbox_db
from toolkit.sandbox import store
from toolkit.sandbox.db import CHECKPOINT_EVERY_COMMITS, TEST_INSTRUMENTS, Database, checkpoint
from toolkit.sandbox.http import BadRequest, check_types


def test_seeded_instruments_are_the_constants(tmp_path: Path) -> None:
    """POST /payment answers test instruments from TEST_INSTRUMENTS without reading their rows."""
    db = Database(tmp_path / "s.sqlite")
    for _ in range(2):
        rows = {row["id"]: row for row in db.conn.execute("SELECT * FROM instruments")}
        assert set(rows) == set(TEST_INSTRUMENTS)
        for instrument_id, outcome in TEST_INSTRUMENTS.items():
            row = rows[instrument_id]
            assert (row["customer_id"], row["method"], row["test_outcome"]) == (None, None, outcome)
        with db.write() as conn:
            store.reset(conn)
    db.close()


def test_expiry_index_is_partial_and_used(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite")
    plan = db.conn.execute(
        "EXPLAIN QUERY PLAN UPDATE orders SET status = 3 WHERE status IN (2, 5)"
        " AND expires_at IS NOT NULL AND expires_at <= 1"
    ).fetchall()
    assert any("orders_expiring" in str(row[3]) for row in plan)
    sql = db.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'orders_expiring'").fetchone()[0]
    assert "WHERE expires_at IS NOT NULL" in sql
    db.close()


def test_old_database_drops_full_expiry_index(tmp_path: Path) -> None:
    """A file made before the partial index loses ``orders_open`` and gains ``orders_expiring``."""
    path = tmp_path / "old.sqlite"
    Database(path).close()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("DROP INDEX orders_expiring")
        conn.execute("CREATE INDEX orders_open ON orders(status, expires_at)")
    db = Database(path)
    names = {row[0] for row in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "orders_expiring" in names and "orders_open" not in names
    db.close()


def test_commits_request_background_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []
    done = threading.Event()

    def record(path: Path) -> None:
        seen.append(path)
        done.set()

    monkeypatch.setattr(sandbox_db, "checkpoint", record)
    db = Database(tmp_path / "s.sqlite")
    for index in range(CHECKPOINT_EVERY_COMMITS):
        with db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('n', ?)", (str(index),))
    assert done.wait(10)
    assert seen and set(seen) == {db.path}
    db.close()


def test_checkpoint_backfills_the_wal(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite")
    for index in range(20):
        with db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('n', ?)", (str(index),))
    checkpoint(db.path)
    busy, log, backfilled = db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and log == backfilled
    db.close()


def test_checkpoint_never_creates_a_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sqlite"
    checkpoint(missing)
    checkpoint(tmp_path / "no-such-dir" / "gone.sqlite")
    assert not missing.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"amount": "12.30"}, "amount: must be a JSON number"),
        ({"quantity": True}, "quantity: must be a JSON integer"),
        ({"atPeriodEnd": 1}, "atPeriodEnd: must be true or false"),
        (
            {"priceList": [{"name": "x"}, {"unitAmount": "3"}]},
            "priceList.1.unitAmount: must be a JSON number",
        ),
        (
            {"priceList": [{"currencyOptions": {"EUR": "3"}}]},
            "priceList.0.currencyOptions.EUR: must be a JSON number",
        ),
        ({"phases": [[{"sequence": 1.5}]]}, "phases.0.0.sequence: must be a JSON integer"),
    ],
)
def test_check_types_names_the_field(body: dict[str, object], message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        check_types(body)
    assert caught.value.msg == message


def test_check_types_accepts_right_types() -> None:
    check_types(
        {
            "amount": 1,
            "quantity": None,
            "priceList": [{"unitAmount": 2, "currencyOptions": {"EUR": 3}}],
            "metadata": {"amount": None},
            "atPeriodEnd": False,
        }
    )


def test_an_integer_may_be_written_with_a_zero_fraction() -> None:
    """JSON Schema 2020-12 (OpenAPI 3.1) reads 2.0 as an integer; 2.5 and 1E+30 are refused."""
    check_types({"quantity": Decimal("2.0"), "days": Decimal("1E+2"), "sequence": Decimal("-0")})
    for value in (Decimal("2.5"), Decimal("1E+30"), Decimal("Infinity")):
        with pytest.raises(BadRequest, match="must be a JSON integer"):
            check_types({"quantity": value})
