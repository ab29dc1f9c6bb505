"""The sandbox's SQLite database: one file, WAL, safe with several processes writing at once.

Each thread gets its own connection (the event loop of a server is one thread), writes run in
``BEGIN IMMEDIATE`` transactions so two processes never interleave a read-then-write, and a
checkpointer thread keeps the WAL short. The schema and the seeded test instruments are here;
the queries that read and write the tables are in ``store.py`` (the full-stack template's
``deps.py`` / ``crud.py`` split: the database, then what is done with it).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The sandbox's database file under ``TOOLKIT_HOME`` (the embedded sandbox and ``toolkit sandbox``).
DATABASE_NAME = "sandbox.sqlite"
SCHEMA_VERSION = "1"
BUSY_TIMEOUT_MS = 30_000
#: ``Database.read_cache`` starts over beyond this many entries (a bound, not a tuning knob).
READ_CACHE_MAX_ENTRIES = 10_000
#: Every this many commits through one ``Database``, the checkpointer thread copies the WAL back into
#: the database file (a PASSIVE checkpoint: it never blocks writers or readers).
CHECKPOINT_EVERY_COMMITS = 50
#: A committing connection checkpoints by itself only once the WAL holds this many pages (SQLite's
#: default is 1000): a backstop bounding the WAL should the checkpointer fall behind, or when other
#: processes on the file do not run one.
WAL_AUTOCHECKPOINT_PAGES = 2000

#: Seeded payment instruments usable by any customer with any method; value = forced outcome
#: (None: no forced outcome, the test-amount and method rules decide).
TEST_INSTRUMENTS: dict[str, int | None] = {
    "pi_test_success": 1,
    "pi_test_pending": 2,
    "pi_test_failure": 3,
    "pi_test_3ds": 5,
    "pi_test_default": None,
}

#: Each COMMIT appends every page it dirtied to the WAL, and POST /payment is one such commit, so the
#: tables it writes keep few B-trees: ``sessions`` is keyed by its id alone (WITHOUT ROWID: one tree,
#: not a rowid table plus a unique index), ``orders.seq`` is a plain rowid (AUTOINCREMENT would update
#: ``sqlite_sequence`` on every insert; seq only orders rows, and only ``reset`` deletes them, all at
#: once), and the index ``expire_orders`` searches holds only orders that can expire (partial index;
#: an order that settled at once never enters it). ``orders_open`` was its full-table predecessor.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY, email TEXT, reference_id TEXT UNIQUE, create_time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS customers_email ON customers(email);
CREATE TABLE IF NOT EXISTS instruments (
    id TEXT PRIMARY KEY, customer_id TEXT, method TEXT, test_outcome INTEGER,
    create_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS products (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT, image TEXT, tax_category TEXT,
    default_price TEXT, localized_names TEXT, active INTEGER NOT NULL,
    create_time INTEGER NOT NULL, update_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS prices (
    id TEXT PRIMARY KEY, product_id TEXT NOT NULL, snapshot_id TEXT NOT NULL UNIQUE,
    currency TEXT NOT NULL, unit_minor INTEGER NOT NULL, price_type TEXT NOT NULL,
    interval TEXT, interval_count INTEGER, trial_days INTEGER, pricing_model TEXT,
    currency_options TEXT, is_default INTEGER NOT NULL, active INTEGER NOT NULL,
    position INTEGER NOT NULL, create_time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS prices_product ON prices(product_id);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, create_time INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS orders (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, customer_id TEXT NOT NULL,
    method TEXT NOT NULL, instrument_id TEXT NOT NULL, merchant_reference_id TEXT,
    product_id TEXT, price_id TEXT, amount_minor INTEGER NOT NULL, currency TEXT NOT NULL,
    pricing_minor INTEGER NOT NULL, pricing_currency TEXT NOT NULL, status INTEGER NOT NULL,
    failure_reason TEXT, metadata TEXT, expires_at INTEGER,
    create_time INTEGER NOT NULL, update_time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS orders_reference ON orders(merchant_reference_id);
DROP INDEX IF EXISTS orders_open;
CREATE INDEX IF NOT EXISTS orders_expiring ON orders(status, expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS subscriptions (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, product_id TEXT NOT NULL,
    price_id TEXT NOT NULL, quantity INTEGER NOT NULL, method TEXT, instrument_id TEXT,
    merchant_reference TEXT, metadata TEXT, phases TEXT, session_id TEXT NOT NULL,
    create_time INTEGER NOT NULL, cancel_at INTEGER, cancel_at_period_end INTEGER NOT NULL,
    cancel_requested_at INTEGER, cancel_reason TEXT);
CREATE TABLE IF NOT EXISTS fault_rules (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, route TEXT NOT NULL, mode TEXT NOT NULL,
    count INTEGER, remaining INTEGER, probability TEXT, seed INTEGER, delay_ms INTEGER,
    status INTEGER, retry_after INTEGER, matched INTEGER NOT NULL, fired INTEGER NOT NULL,
    create_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS request_log (
    seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,
    status INTEGER, latency_us INTEGER NOT NULL, merchant_reference_id TEXT, fault TEXT,
    fault_id TEXT);
"""

#: Tables emptied by ``reset`` (meta keeps the API key; seeded instruments are put back). The fault
#: rules go too; the request log stays (it records what the sandbox received, the reset included).
DATA_TABLES = (
    "customers",
    "instruments",
    "products",
    "prices",
    "sessions",
    "orders",
    "subscriptions",
    "fault_rules",
)


class Database:
    """One SQLite file; a connection per thread, created on first use.

    Each connection also has a read cache (``read_cache``) for the read-only routes, so a GET does
    not re-read rows nothing has changed since the last request.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._commits = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn.executescript(_SCHEMA)
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('clock_offset_ms', '0')")
            seed_test_instruments(conn)

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; transactions are explicit)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            # Durability: in WAL mode NORMAL fsyncs only at checkpoints, not at every COMMIT. A
            # committed transaction survives the process being killed (it is in the WAL file, in the
            # OS page cache); only a power loss or OS crash may lose the last commits. That is the
            # right trade for a test service, and what the benchmark's reference uses too.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints (copying the WAL into the file, with its fsyncs) run on the checkpointer
            # thread, not in the thread that commits, which is the event loop of a server: there a
            # checkpoint stalled every request in flight for milliseconds, a few times per second
            # under load. Same durability: commits are still in the WAL, synced as before.
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            self._local.conn = conn
            self._local.cache = {}
            self._local.cache_version = None
        return conn

    def read_cache(self) -> dict[Any, Any]:
        """This thread's cache of rows and values read outside write transactions, still valid.

        ``PRAGMA data_version`` (one cheap statement) changes when another connection, in this
        process or another one, has committed since the last call; then the cache is emptied. Commits
        through this connection do not change it, so ``write`` empties the cache itself. Use it only
        outside ``write`` (inside, read the rows: the transaction's snapshot is what counts).
        """
        conn = self.conn
        local = self._local
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != local.cache_version or len(local.cache) > READ_CACHE_MAX_ENTRIES:
            local.cache.clear()
            local.cache_version = version
        cache: dict[Any, Any] = local.cache
        return cache

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken with BEGIN IMMEDIATE: reads inside it see no other writer."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            # Whatever this transaction wrote (or read before rolling back) must not be served from
            # the cache: data_version does not see this connection's own commits.
            self._local.cache.clear()
        conn.execute("COMMIT")
        self._commits += 1
        if self._commits % CHECKPOINT_EVERY_COMMITS == 0:
            _CHECKPOINTER.request(self.path)

    def close(self) -> None:
        """Close this thread's connection (other threads' close with their thread)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.cache = {}
            self._local.cache_version = None


class _Checkpointer:
    """One daemon thread for the process that runs PASSIVE checkpoints of the files it is given.

    Each checkpoint opens its own short-lived connection (read-write, never creating the file: a
    database deleted meanwhile is skipped), so nothing here keeps a ``Database`` alive.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: set[Path] = set()
        self._thread: threading.Thread | None = None

    def request(self, path: Path) -> None:
        with self._lock:
            self._pending.add(path)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sandbox-wal-checkpoint", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                paths, self._pending = self._pending, set()
            for path in paths:
                checkpoint(path)


def checkpoint(path: Path) -> None:
    """A PASSIVE checkpoint of the file's WAL; errors are left to the connections' autocheckpoint."""
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
    except sqlite3.Error:
        return
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:
        pass
    finally:
        conn.close()


_CHECKPOINTER = _Checkpointer()


def seed_test_instruments(conn: sqlite3.Connection) -> None:
    """Put the seeded test instruments back (a new database, and every reset)."""
    for instrument_id, outcome in TEST_INSTRUMENTS.items():
        conn.execute(
            "INSERT OR IGNORE INTO instruments(id, customer_id, method, test_outcome, create_time)"
            " VALUES (?, NULL, NULL, ?, 0)",
            (instrument_id, outcome),
        )
