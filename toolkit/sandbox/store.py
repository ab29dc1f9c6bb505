"""The sandbox's queries: what is read from and written to its database (``db.py``).

Every money column holds integer minor units; JSON columns hold only strings and integers. Ids are
prefix + uuid4 hex so they are unique across processes without coordination.

Functions take the connection (or the ``Database``) first and everything else keyword-only, so
call sites read like records.
"""

from __future__ import annotations

import functools
import json
import secrets
import sqlite3
import time
import uuid
from typing import Any

from toolkit.sandbox.db import DATA_TABLES, Database, seed_test_instruments


def new_id(prefix: str) -> str:
    """An id unique across processes: ``prefix`` + uuid4 hex (``ord_9f0c...``)."""
    return f"{prefix}{uuid.uuid4().hex}"


def new_test_key() -> str:
    """A random sandbox API key, recognisable as a test key."""
    return f"sk_test_{secrets.token_urlsafe(24)}"


def wall_ms() -> int:
    """Real time in ms since the epoch (the sandbox clock adds its offset to this)."""
    return time.time_ns() // 1_000_000


def dumps(value: Any) -> str | None:
    """JSON text of a column value holding only strings and integers (None stays NULL)."""
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def loads(text: str | None) -> Any:
    """A JSON column's value (None stays None)."""
    return None if text is None else json.loads(text)


def _one(cursor: sqlite3.Cursor) -> sqlite3.Row | None:
    row: sqlite3.Row | None = cursor.fetchone()
    return row


# ---------------------------------------------------------------------------------------------
# meta: API key and clock


def get_meta(conn: sqlite3.Connection, *, key: str) -> str | None:
    """A value of the ``meta`` table (key, clock offset, schema), or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def stored_api_key(db: Database) -> str:
    """The key kept in the database, generated on first use, so every process agrees on it."""
    with db.write() as conn:
        key = get_meta(conn, key="api_key")
        if key is None:
            key = new_test_key()
            conn.execute("INSERT INTO meta(key, value) VALUES ('api_key', ?)", (key,))
    return key


def clock_offset_ms(conn: sqlite3.Connection) -> int:
    """How far ``/sandbox/clock/advance`` has moved the sandbox clock ahead of wall time."""
    return int(get_meta(conn, key="clock_offset_ms") or 0)


def clock_frozen_ms(conn: sqlite3.Connection) -> int | None:
    """The instant a frozen sandbox clock stands at, or None while it runs with wall time."""
    value = get_meta(conn, key="clock_frozen_ms")
    return None if value is None else int(value)


def clock_state(conn: sqlite3.Connection) -> tuple[int | None, int]:
    """(frozen instant or None, offset) in one statement: every payment reads it."""
    values = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('clock_frozen_ms', 'clock_offset_ms')"
        ).fetchall()
    )
    frozen = values.get("clock_frozen_ms")
    return (None if frozen is None else int(frozen)), int(values.get("clock_offset_ms") or 0)


def _clock(frozen: int | None, offset: int) -> int:
    return frozen if frozen is not None else wall_ms() + offset


def now_ms(conn: sqlite3.Connection) -> int:
    """The sandbox clock: the frozen instant, else wall time plus the offset of clock advances."""
    return _clock(*clock_state(conn))


def cached_now_ms(db: Database, cache: dict[Any, Any]) -> int:
    """``now_ms`` with the clock's state from ``cache`` (a ``Database.read_cache``) when it is there."""
    state = cache.get("clock")
    if state is None:
        state = cache["clock"] = clock_state(db.reader)
    return _clock(*state)


def advance_clock(conn: sqlite3.Connection, *, delta_ms: int) -> None:
    """Move the sandbox clock ahead by ``delta_ms`` (a frozen clock stays frozen, further on)."""
    key = "clock_offset_ms" if clock_frozen_ms(conn) is None else "clock_frozen_ms"
    conn.execute(
        "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) WHERE key = ?", (delta_ms, key)
    )


def freeze_clock(conn: sqlite3.Connection) -> None:
    """Stop the sandbox clock where it stands; a frozen clock keeps its instant."""
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('clock_frozen_ms', ?)", (str(now_ms(conn)),))


def resume_clock(conn: sqlite3.Connection) -> None:
    """Let a frozen clock run again from its instant: it never goes back, nor jumps ahead."""
    frozen = clock_frozen_ms(conn)
    if frozen is not None:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'clock_offset_ms'", (str(frozen - wall_ms()),))
        conn.execute("DELETE FROM meta WHERE key = 'clock_frozen_ms'")


def reset(conn: sqlite3.Connection) -> None:
    """Empty every table, reset the clock (running, with wall time), keep the API key and put the
    test instruments back."""
    for table in DATA_TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'clock_offset_ms'")
    conn.execute("DELETE FROM meta WHERE key = 'clock_frozen_ms'")
    seed_test_instruments(conn)


# ---------------------------------------------------------------------------------------------
# customers and instruments


def get_customer(conn: sqlite3.Connection, *, customer_id: str) -> sqlite3.Row | None:
    """A customer by id, or None."""
    return _one(conn.execute("SELECT * FROM customers WHERE id = ?", (customer_id,)))


def find_customer(
    conn: sqlite3.Connection, *, email: str | None, reference_id: str | None
) -> sqlite3.Row | None:
    """By merchant reference first (it is unique), then by e-mail (oldest customer wins)."""
    if reference_id is not None:
        row = _one(conn.execute("SELECT * FROM customers WHERE reference_id = ?", (reference_id,)))
        if row is not None:
            return row
    if email is not None:
        return _one(
            conn.execute("SELECT * FROM customers WHERE email = ? ORDER BY create_time, id LIMIT 1", (email,))
        )
    return None


def insert_customer(
    conn: sqlite3.Connection, *, email: str | None, reference_id: str | None, now: int
) -> str:
    """A new customer; returns its id."""
    customer_id = new_id("cus_")
    conn.execute(
        "INSERT INTO customers(id, email, reference_id, create_time) VALUES (?, ?, ?, ?)",
        (customer_id, email, reference_id, now),
    )
    return customer_id


def bind_reference(conn: sqlite3.Connection, *, customer_id: str, reference_id: str) -> None:
    """Bind a ``referenceCustomerId`` to a customer that has none yet."""
    conn.execute(
        "UPDATE customers SET reference_id = ? WHERE id = ? AND reference_id IS NULL",
        (reference_id, customer_id),
    )


def get_instrument(conn: sqlite3.Connection, *, instrument_id: str) -> sqlite3.Row | None:
    """A payment instrument by id, or None."""
    return _one(conn.execute("SELECT * FROM instruments WHERE id = ?", (instrument_id,)))


def insert_instrument(conn: sqlite3.Connection, *, customer_id: str, method: str, now: int) -> str:
    """A new payment instrument of a customer for a method; returns its id."""
    instrument_id = new_id("pi_")
    conn.execute(
        "INSERT INTO instruments(id, customer_id, method, test_outcome, create_time)"
        " VALUES (?, ?, ?, NULL, ?)",
        (instrument_id, customer_id, method, now),
    )
    return instrument_id


# ---------------------------------------------------------------------------------------------
# products and prices


def insert_product(
    conn: sqlite3.Connection,
    *,
    name: str,
    description: str | None,
    image: str | None,
    tax_category: str | None,
    localized_names: dict[str, str] | None,
    now: int,
) -> str:
    """A new product; returns its id."""
    product_id = new_id("prod_")
    conn.execute(
        "INSERT INTO products(id, name, description, image, tax_category, default_price,"
        " localized_names, active, create_time, update_time) VALUES (?, ?, ?, ?, ?, NULL, ?, 1, ?, ?)",
        (product_id, name, description, image, tax_category, dumps(localized_names), now, now),
    )
    return product_id


def set_default_price(conn: sqlite3.Connection, *, product_id: str, price_id: str) -> None:
    """Make a price the product's default."""
    conn.execute("UPDATE products SET default_price = ? WHERE id = ?", (price_id, product_id))


def insert_price(
    conn: sqlite3.Connection,
    *,
    product_id: str,
    currency: str,
    unit_minor: int,
    price_type: str,
    interval: str | None,
    interval_count: int | None,
    trial_days: int | None,
    pricing_model: str | None,
    currency_options: dict[str, int] | None,
    is_default: bool,
    position: int,
    now: int,
) -> tuple[str, str]:
    """Insert a price and its (only) snapshot; prices are immutable in the sandbox."""
    price_id, snapshot_id = new_id("price_"), new_id("psnap_")
    conn.execute(
        "INSERT INTO prices(id, product_id, snapshot_id, currency, unit_minor, price_type, interval,"
        " interval_count, trial_days, pricing_model, currency_options, is_default, active, position,"
        " create_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
        (
            price_id,
            product_id,
            snapshot_id,
            currency,
            unit_minor,
            price_type,
            interval,
            interval_count,
            trial_days,
            pricing_model,
            dumps(currency_options),
            int(is_default),
            position,
            now,
        ),
    )
    return price_id, snapshot_id


def get_product(conn: sqlite3.Connection, *, product_id: str) -> sqlite3.Row | None:
    """A product by id, or None."""
    return _one(conn.execute("SELECT * FROM products WHERE id = ?", (product_id,)))


def get_price(conn: sqlite3.Connection, *, price_id: str) -> sqlite3.Row | None:
    """A price by id, or None."""
    return _one(conn.execute("SELECT * FROM prices WHERE id = ?", (price_id,)))


def get_price_by_snapshot(conn: sqlite3.Connection, *, snapshot_id: str) -> sqlite3.Row | None:
    """A price by one of its snapshot ids, or None."""
    return _one(conn.execute("SELECT * FROM prices WHERE snapshot_id = ?", (snapshot_id,)))


def deactivate_price(conn: sqlite3.Connection, *, price_id: str) -> None:
    """Mark a price inactive: it can no longer be charged."""
    conn.execute("UPDATE prices SET active = 0 WHERE id = ?", (price_id,))


def list_prices(conn: sqlite3.Connection, *, product_id: str) -> list[sqlite3.Row]:
    """The prices of a product, in the order they were created."""
    return conn.execute(
        "SELECT * FROM prices WHERE product_id = ? ORDER BY position", (product_id,)
    ).fetchall()


# ---------------------------------------------------------------------------------------------
# orders (payments)


@functools.lru_cache(maxsize=64)
def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    """The INSERT statement for these columns, built once (and so the same text for sqlite3's
    statement cache every time)."""
    return f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


def insert_order(conn: sqlite3.Connection, *, order: dict[str, Any]) -> None:
    """Insert one order; ``order`` holds every column of the orders table except ``seq``."""
    conn.execute(_insert_sql("orders", tuple(order)), tuple(order.values()))


def get_order(conn: sqlite3.Connection, *, order_id: str) -> sqlite3.Row | None:
    """A payment (order) by id, or None."""
    return _one(conn.execute("SELECT * FROM orders WHERE id = ?", (order_id,)))


def set_order_status(
    conn: sqlite3.Connection, *, order_id: str, status: int, reason: str | None, now: int
) -> None:
    """Settle a payment: its status, failure reason and update time."""
    conn.execute(
        "UPDATE orders SET status = ?, failure_reason = ?, expires_at = NULL, update_time = ? WHERE id = ?",
        (status, reason, now, order_id),
    )


def expire_orders(conn: sqlite3.Connection, *, now: int) -> int:
    """Pending and next-action orders past their expiry become failures (reason ``expired``)."""
    cursor = conn.execute(
        "UPDATE orders SET status = 3, failure_reason = 'expired', update_time = expires_at,"
        " expires_at = NULL WHERE status IN (2, 5) AND expires_at IS NOT NULL AND expires_at <= ?",
        (now,),
    )
    return int(cursor.rowcount)


def list_orders(conn: sqlite3.Connection, *, merchant_reference_id: str | None = None) -> list[sqlite3.Row]:
    """Every payment, or those of one merchantReferenceId, in the order they were made."""
    if merchant_reference_id is None:
        return conn.execute("SELECT * FROM orders ORDER BY seq").fetchall()
    return conn.execute(
        "SELECT * FROM orders WHERE merchant_reference_id = ? ORDER BY seq", (merchant_reference_id,)
    ).fetchall()


# ---------------------------------------------------------------------------------------------
# subscriptions


def insert_subscription(conn: sqlite3.Connection, *, subscription: dict[str, Any]) -> None:
    """A new subscription."""
    conn.execute(_insert_sql("subscriptions", tuple(subscription)), tuple(subscription.values()))


def get_subscription(conn: sqlite3.Connection, *, subscription_id: str) -> sqlite3.Row | None:
    """A subscription by id, or None."""
    return _one(conn.execute("SELECT * FROM subscriptions WHERE id = ?", (subscription_id,)))


def cancel_subscription(
    conn: sqlite3.Connection,
    *,
    subscription_id: str,
    cancel_at: int,
    at_period_end: bool,
    reason: str | None,
    now: int,
) -> None:
    """Cancel a subscription now or at the end of its period."""
    conn.execute(
        "UPDATE subscriptions SET cancel_at = ?, cancel_at_period_end = ?, cancel_requested_at = ?,"
        " cancel_reason = ? WHERE id = ?",
        (cancel_at, int(at_period_end), now, reason, subscription_id),
    )


# ---------------------------------------------------------------------------------------------
# fault rules (``toolkit.sandbox.faults`` decides; these only read and write)


def insert_fault_rule(conn: sqlite3.Connection, *, rule: dict[str, Any]) -> None:
    """Insert one rule; ``rule`` holds every column of fault_rules except ``seq``."""
    conn.execute(_insert_sql("fault_rules", tuple(rule)), tuple(rule.values()))


def list_fault_rules(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every rule, in the order they were added (the order they are tried in)."""
    return conn.execute("SELECT * FROM fault_rules ORDER BY seq").fetchall()


def armed_fault_routes(conn: sqlite3.Connection) -> frozenset[str]:
    """The routes (``*`` included) of rules that can still fire."""
    rows = conn.execute(
        "SELECT DISTINCT route FROM fault_rules WHERE remaining IS NULL OR remaining > 0"
    ).fetchall()
    return frozenset(str(row[0]) for row in rows)


def armed_fault_rules(conn: sqlite3.Connection, *, route: str) -> list[sqlite3.Row]:
    """Rules for ``route`` or ``*`` that can still fire, in the order they are tried."""
    return conn.execute(
        "SELECT * FROM fault_rules WHERE route IN (?, '*') AND (remaining IS NULL OR remaining > 0)"
        " ORDER BY seq",
        (route,),
    ).fetchall()


def count_fault_match(conn: sqlite3.Connection, *, rule_id: str, fired: bool) -> None:
    """One more request matched the rule; if it fired, one more firing and one fewer remaining."""
    conn.execute(
        "UPDATE fault_rules SET matched = matched + 1, fired = fired + ?,"
        " remaining = CASE WHEN remaining IS NULL THEN NULL ELSE remaining - ? END WHERE id = ?",
        (int(fired), int(fired), rule_id),
    )


def clear_fault_rules(conn: sqlite3.Connection) -> int:
    """Delete every rule; returns how many there were."""
    return int(conn.execute("DELETE FROM fault_rules").rowcount)


# ---------------------------------------------------------------------------------------------
# the bank's controls (``toolkit.sandbox.bank`` decides what they do; these only read and write)


def set_payout_control(
    conn: sqlite3.Connection,
    *,
    payout_id: str,
    now: int,
    lost: bool | None = None,
    delay_days: int | None = None,
    amount_minor: int | None = None,
) -> None:
    """Record what the bank does to a payout; what is not given keeps its earlier value."""
    conn.execute(
        "INSERT INTO bank_payout_controls(payout_id, lost, delay_days, amount_minor, update_time)"
        " VALUES (?, COALESCE(?, 0), COALESCE(?, 0), ?, ?) ON CONFLICT(payout_id) DO UPDATE SET"
        " lost = COALESCE(?, lost), delay_days = COALESCE(?, delay_days),"
        " amount_minor = COALESCE(?, amount_minor), update_time = excluded.update_time",
        (
            payout_id,
            None if lost is None else int(lost),
            delay_days,
            amount_minor,
            now,
            None if lost is None else int(lost),
            delay_days,
            amount_minor,
        ),
    )


def list_payout_controls(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every payout control, by payout id."""
    return conn.execute("SELECT * FROM bank_payout_controls ORDER BY payout_id").fetchall()


def insert_deposit(
    conn: sqlite3.Connection,
    *,
    currency: str,
    amount_minor: int,
    day: str,
    counterparty: str,
    text: str,
    now: int,
) -> int:
    """A credit no payout explains; returns its number."""
    cursor = conn.execute(
        "INSERT INTO bank_deposits(currency, amount_minor, day, counterparty, text, create_time)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (currency, amount_minor, day, counterparty, text, now),
    )
    return int(cursor.lastrowid or 0)


def list_deposits(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every planted deposit, in the order they were added."""
    return conn.execute("SELECT * FROM bank_deposits ORDER BY seq").fetchall()


def clear_bank_controls(conn: sqlite3.Connection) -> int:
    """Delete every payout control and deposit; returns how many there were."""
    return int(conn.execute("DELETE FROM bank_payout_controls").rowcount) + int(
        conn.execute("DELETE FROM bank_deposits").rowcount
    )


# ---------------------------------------------------------------------------------------------
# request log (``toolkit.sandbox.requests_log`` buffers; these only read and write)

REQUEST_LOG_COLUMNS: tuple[str, ...] = (
    "time",
    "method",
    "path",
    "status",
    "latency_us",
    "merchant_reference_id",
    "fault",
    "fault_id",
)


def append_requests(conn: sqlite3.Connection, *, rows: list[tuple[Any, ...]], keep: int) -> None:
    """Append rows (values in ``REQUEST_LOG_COLUMNS`` order), then keep only the last ``keep`` rows."""
    conn.executemany(_insert_sql("request_log", REQUEST_LOG_COLUMNS), rows)
    conn.execute("DELETE FROM request_log WHERE seq <= (SELECT MAX(seq) FROM request_log) - ?", (keep,))


def recent_requests(conn: sqlite3.Connection, *, limit: int) -> list[sqlite3.Row]:
    """The most recent requests by arrival time, newest first."""
    return conn.execute("SELECT * FROM request_log ORDER BY time DESC, seq DESC LIMIT ?", (limit,)).fetchall()
