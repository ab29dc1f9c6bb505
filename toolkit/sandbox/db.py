"""The sandbox's SQLite database: one file, WAL, safe with several processes writing at once.

Each thread gets its own connection (the event loop of a server is one thread), writes run in
``BEGIN IMMEDIATE`` transactions so two processes never interleave a read-then-write, and a
checkpointer thread keeps the WAL short. POST /payment commits in groups (``write_soon``): the
payments asked for on one turn of the event loop are written together in one transaction, each
answered once it is committed, so a burst of them costs one COMMIT and writes each page once.
The schema and the seeded test instruments are here; the queries that read and write the tables
are in ``store.py`` (the full-stack template's ``deps.py`` / ``crud.py`` split: the database, then
what is done with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

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
#: The database holds the sandbox's generated API key and customers' e-mails: its owner alone reads
#: it. SQLite gives its -wal and -shm files the database file's mode, so they are private too.
FILE_MODE = 0o600
#: A folder the sandbox makes for its database.
FOLDER_MODE = 0o700

#: Seeded payment instruments usable by any customer with any method; value = forced outcome
#: (None: no forced outcome, the test-amount and method rules decide).
TEST_INSTRUMENTS: dict[str, int | None] = {
    "pi_test_success": 1,
    "pi_test_pending": 2,
    "pi_test_failure": 3,
    "pi_test_3ds": 5,
    "pi_test_default": None,
}

#: Each COMMIT appends every page it dirtied to the WAL, so the tables POST /payment writes keep few
#: B-trees: a session is an id on its order or subscription (nothing ever read the ``sessions``
#: table that held them, now dropped), ``orders.seq`` is a plain rowid (AUTOINCREMENT would update
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
DROP TABLE IF EXISTS sessions;
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
CREATE TABLE IF NOT EXISTS bank_payout_controls (
    payout_id TEXT PRIMARY KEY, lost INTEGER NOT NULL, delay_days INTEGER NOT NULL,
    amount_minor INTEGER, update_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bank_deposits (
    seq INTEGER PRIMARY KEY, currency TEXT NOT NULL, amount_minor INTEGER NOT NULL,
    day TEXT NOT NULL, counterparty TEXT NOT NULL, text TEXT NOT NULL, create_time INTEGER NOT NULL);
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
    "orders",
    "subscriptions",
    "fault_rules",
    "bank_payout_controls",
    "bank_deposits",
)


class Database:
    """One SQLite file; per thread, a connection for writes and reads and one for the read cache,
    each created on first use.

    The read cache (``read_cache``) serves the read-only routes, so a GET does not re-read rows
    nothing has changed since the last request.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._commits = 0
        _make_private(self.path)
        self.conn.executescript(_SCHEMA)
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('clock_offset_ms', '0')")
            seed_test_instruments(conn)

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; transactions are explicit). ``write_soon``
        writes still waiting on this thread are written and committed first: whoever takes the
        connection sees them, in the order they were asked for."""
        self._write_queued()
        return self._connection("conn")

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's connection for the read cache: it never sees a ``write_soon`` group that is
        not committed yet, and reading through it never commits one."""
        return self._connection("reader")

    def _connection(self, name: str) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, name, None)
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
            setattr(self._local, name, conn)
            if name == "reader":
                self._local.cache = {}
                self._local.cache_version = None
        return conn

    def read_cache(self) -> dict[Any, Any]:
        """This thread's cache of rows and values read through ``reader``, still valid.

        ``PRAGMA data_version`` (one cheap statement) changes when another connection, in this
        process or another one, has committed since the last call; then the cache is emptied.
        """
        conn = self.reader
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
        conn.execute("COMMIT")
        self._committed()

    async def write_soon(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)``, done with the other writes asked for on this turn of the event loop in
        one write transaction, and its result once that is committed (group commit).

        The writes are queued, then done one after the other by one callback scheduled after the
        callbacks ready now: BEGIN IMMEDIATE, each write in a savepoint (one that raises takes back
        only its own rows, and raises in its caller), COMMIT. The write lock is held only while
        they run, never across a turn of the loop. A write whose caller was cancelled before its
        turn is not done. A COMMIT that fails raises in every write of the group.
        """
        local = self._local
        queued: list[_Write] | None = getattr(local, "queued", None)
        loop = asyncio.get_running_loop()
        if queued is None:
            queued = local.queued = []
            loop.call_soon(self._write_queued)
        written: asyncio.Future[T] = loop.create_future()
        queued.append(_Write(work, written))
        return await written

    def _write_queued(self) -> None:
        """Do the queued writes in one transaction and answer their callers (see ``write_soon``)."""
        queued: list[_Write] | None = getattr(self._local, "queued", None)
        if not queued:
            return
        self._local.queued = None
        conn = self._connection("conn")
        done: list[tuple[_Write, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for write in queued:
                if write.answer.done():  # its caller is gone: nobody waits for this payment
                    continue
                conn.execute("SAVEPOINT write_soon")
                try:
                    done.append((write, write.work(conn)))
                except Exception as exc:
                    conn.execute("ROLLBACK TO write_soon")
                    write.answer.set_exception(exc)
                conn.execute("RELEASE write_soon")
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for write in queued:
                if not write.answer.done():
                    write.answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        self._committed()
        for write, value in done:
            if not write.answer.done():
                write.answer.set_result(value)

    def _committed(self) -> None:
        self._commits += 1
        if self._commits % CHECKPOINT_EVERY_COMMITS == 0:
            _CHECKPOINTER.request(self.path)

    def close(self) -> None:
        """Close this thread's connections (other threads' close with their thread)."""
        self._write_queued()
        for name in ("conn", "reader"):
            conn: sqlite3.Connection | None = getattr(self._local, name, None)
            if conn is not None:
                conn.close()
                setattr(self._local, name, None)
        self._local.cache = {}
        self._local.cache_version = None


def _make_private(path: Path) -> None:
    """Create the database file (and the folders missing above it) readable by its owner alone,
    before SQLite opens it: SQLite made it 0644, world-readable, key and e-mails included.

    An existing file or folder keeps its mode: it may have been given one on purpose.
    """
    missing: list[Path] = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            folder.mkdir(mode=FOLDER_MODE)
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(handle)  # an empty file is an empty SQLite database


@dataclass(frozen=True)
class _Write:
    """One ``write_soon`` write waiting for its group: what to do, and where its caller waits."""

    work: Callable[[sqlite3.Connection], Any]
    answer: asyncio.Future[Any]


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
