"""Many calls at once: bounded concurrency on the AsyncClient, a progress bar, errors collected per row.

Create calls go through the journal, so a re-run sends nothing twice; reads (subscriptions) do not
need it. A failing row never stops the batch: it becomes a row of the ``errors`` frame. A refused
key or an unreachable service is no row's fault: no new call starts, the calls in flight finish,
and the error is raised (for a scheduler, infrastructure: exit code 2). The plain
functions work in scripts and in notebooks (where an event loop is already running); ``a``-prefixed
ones are for async code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import queue
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import pandas as pd
from pydantic import BaseModel
from tqdm.auto import tqdm

from toolkit.catalog import CatalogEntry, CatalogSource, load_catalog
from toolkit.client import AsyncClient, Client
from toolkit.config import load_settings
from toolkit.errors import (
    AuthenticationError,
    ConfigurationError,
    JournalError,
    RequestValidationError,
    ToolkitError,
    TransportError,
)
from toolkit.frames import (
    invoice_items_frame,
    payments_frame,
    phases_frame,
    prices_frame,
    products_frame,
    subscriptions_frame,
)
from toolkit.journal import UNKNOWN_STATES, Journal, JournalRecord, Kind, payment_body
from toolkit.models import PaymentRequest, Subscription, merge_fields

DEFAULT_CONCURRENCY = 8
ERROR_COLUMNS = ["merchantReferenceId", "row", "stage", "error"]

T = TypeVar("T")
ItemT = TypeVar("ItemT")


@dataclass
class BulkResult:
    """What a batch did: frames of its rows, the rows that failed, and how many requests it sent."""

    frame: pd.DataFrame
    errors: pd.DataFrame
    sent: int
    reused: int
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every row went through (no row in ``errors``)."""
        return self.errors.empty


class _Errors:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, key: str | None, row: int, stage: str, error: str) -> None:
        self.rows.append({"merchantReferenceId": key, "row": row, "stage": stage, "error": error})

    def frame(self) -> pd.DataFrame:
        # Text stays Python objects (pandas 3 would infer Arrow-backed str): a key that failed because
        # Arrow cannot encode it (a lone surrogate) must still be shown in the row of its error.
        frame = pd.DataFrame(self.rows, columns=ERROR_COLUMNS, dtype=object).astype({"row": "int64"})
        return frame.sort_values("row", kind="stable").reset_index(drop=True)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from plain code, also inside Jupyter's running event loop
    (then on a loop of its own in a thread).

    An interrupt (Ctrl-C, Jupyter's stop button) stops it as ``asyncio.run`` does: its tasks are
    cancelled, so no further call starts and a call in flight is journaled ``unknown``. In the
    thread, the interrupt reached only the waiting caller, and the batch went on to its end.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    loops: queue.Queue[asyncio.AbstractEventLoop] = queue.Queue()

    def work() -> T:
        with asyncio.Runner() as runner:
            loops.put(runner.get_loop())
            return runner.run(make())

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        done = pool.submit(work)
        try:
            return done.result()
        except KeyboardInterrupt:
            with contextlib.suppress(queue.Empty, RuntimeError):  # RuntimeError: it ended meanwhile
                loop = loops.get(timeout=10)
                loop.call_soon_threadsafe(_cancel_tasks, loop)
            raise


def _no_async_client(name: str, options: Mapping[str, Any]) -> None:
    """Refuse an ``AsyncClient`` in a blocking form: each call runs on an event loop of its own,
    and a client kept from an earlier call served a loop that is closed, so every row failed
    (``Event loop is closed``) and was journaled ``unknown`` though nothing had been sent."""
    if isinstance(options.get("client"), AsyncClient):
        raise ConfigurationError(
            f"{name} runs on an event loop of its own, and an AsyncClient serves one loop: pass no "
            f"client (the configured service), or await a{name}(..., client=...) in your own loop"
        )


def _cancel_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task of ``loop`` (run in its own thread)."""
    for task in asyncio.all_tasks(loop):
        task.cancel()


class _Stop:
    """The first failure that no other row can escape (a refused key, an unreachable service)."""

    def __init__(self) -> None:
        self.error: ToolkitError | None = None

    async def watch(self, call: Awaitable[T]) -> T:
        """Await one call, keeping its failure if it is one no row can escape."""
        try:
            return await call
        except ToolkitError as exc:
            if self.error is None and _is_infrastructure(exc):
                self.error = exc
            raise


def _is_infrastructure(exc: BaseException) -> bool:
    """Failures of the connection or the key, not of a row: every other row would fail the same way."""
    return isinstance(exc, AuthenticationError) or (
        isinstance(exc, TransportError) and not exc.may_have_reached_server
    )


async def _bounded(
    items: Sequence[ItemT],
    work: Callable[[int, ItemT], Awaitable[None]],
    *,
    concurrency: int,
    description: str,
    progress: bool,
    stop: _Stop | None = None,
) -> None:
    """Run ``work`` over the items with at most ``concurrency`` at once, ticking a progress bar.

    Once ``stop`` holds an error, no new item starts; the calls in flight finish (a POST cut off
    would become an unknown outcome), then the error is raised: the run failed on infrastructure.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    queue = iter(enumerate(items))
    shown = progress and len(items) > 1  # a bar for one call is noise in a script
    started = time.monotonic()
    with tqdm(total=len(items), desc=description, disable=not shown, unit="call") as bar:

        async def worker() -> None:
            for position, item in queue:
                if stop is not None and stop.error is not None:
                    return
                await work(position, item)
                bar.update(1)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(items)) or 1)))
        done = bar.n
    if shown:  # the bar is a widget in a notebook, gone from its HTML export; this line stays
        print(f"{description}: {done} of {len(items)} call(s) done in {time.monotonic() - started:.1f} s")
    if stop is not None and stop.error is not None:
        raise stop.error


def _rows(rows: pd.DataFrame | Iterable[Mapping[str, Any] | BaseModel]) -> list[Any]:
    if isinstance(rows, pd.DataFrame):
        return list(rows.reset_index().to_dict("records") if rows.index.name else rows.to_dict("records"))
    return list(rows)


def _clean(row: Mapping[str, Any] | BaseModel, ignore: frozenset[str]) -> dict[str, Any] | BaseModel:
    """Drop empty cells and ignored columns; refuse floats, which cannot hold money exactly."""
    if isinstance(row, BaseModel):
        return row
    cleaned = {}
    for name, value in row.items():
        if name in ignore or value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, str) and not value.strip():
            continue
        if isinstance(value, float):
            raise ToolkitError(
                f"{name}: {value!r} is a float; read amounts as text (dtype=str) so they stay exact"
            )
        cleaned[str(name)] = value
    return cleaned


def _key_of(row: Mapping[str, Any] | BaseModel) -> str | None:
    value = (
        getattr(row, "merchantReferenceId", None)
        if isinstance(row, BaseModel)
        else row.get("merchantReferenceId")
    )
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _duplicates(keys: Sequence[str | None], errors: _Errors) -> set[int]:
    """Rows whose key already appeared earlier in the same batch: refused, the first one goes ahead."""
    seen: dict[str, int] = {}
    refused = set()
    for position, key in enumerate(keys):
        if key is None:
            continue
        if key in seen:
            errors.add(key, position, "input", f"merchantReferenceId repeats row {seen[key]} of this batch")
            refused.add(position)
        else:
            seen[key] = position
    return refused


def _stage(exc: Exception, journal: Journal, kind: Kind, key: str) -> str:
    """Where a journaled call failed. ``unknown`` whenever the journal holds it as possibly sent."""
    if not isinstance(exc, RequestValidationError):
        with contextlib.suppress(ToolkitError):
            record = journal.get(kind, key)
            if record is not None and record.state in UNKNOWN_STATES:
                return "unknown"
    if isinstance(exc, JournalError):
        return "journal"
    return "request"


def _describe(exc: Exception) -> str:
    """The error's own words; an unexpected exception also says what kind it is."""
    return str(exc) if isinstance(exc, ToolkitError) else f"{type(exc).__name__}: {exc}"


def _note_outcome(record: JournalRecord, position: int, errors: _Errors) -> None:
    if record.state == "succeeded":
        return
    stage = "unknown" if record.state in ("sending", "unknown") else record.state
    errors.add(record.key, position, stage, record.error or f"outcome {record.state}")


@asynccontextmanager
async def _connected(client: AsyncClient | None) -> AsyncIterator[AsyncClient]:
    """The caller's client, or one made (and closed) here for the configured environment."""
    if client is not None:
        yield client
        return
    async with AsyncClient() as made:
        yield made


@asynccontextmanager
async def _journaled(
    client: AsyncClient | None, journal: Journal | None
) -> AsyncIterator[tuple[AsyncClient, Journal]]:
    """A client and the journal of its environment; what is made here is closed here."""
    async with _connected(client) as active:
        if journal is not None:
            yield active, journal
            return
        with Journal.for_environment(active.environment, load_settings().home) as opened:
            yield active, opened


def _result(
    records: dict[int, JournalRecord],
    errors: _Errors,
    frame: Callable[[list[JournalRecord]], pd.DataFrame],
    **extra: Callable[[list[JournalRecord]], pd.DataFrame],
) -> BulkResult:
    """The batch's records in input order, as frames, with what was sent and what was reused."""
    done = [records[p] for p in sorted(records)]
    return BulkResult(
        frame=frame(done),
        errors=errors.frame(),
        sent=sum(r.sent for r in done),
        reused=sum(not r.sent for r in done),
        extra={name: build(done) for name, build in extra.items()},
    )


# ---------------------------------------------------------------------------------------------
# Payments


async def acreate_payments(
    rows: pd.DataFrame | Iterable[Mapping[str, Any] | PaymentRequest],
    *,
    client: AsyncClient | None = None,
    journal: Journal | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = True,
    ignore_columns: Iterable[str] = (),
) -> BulkResult:
    """Create payments, journaled by merchantReferenceId: a re-run sends nothing twice."""
    items = _rows(rows)
    ignore = frozenset(ignore_columns)
    errors = _Errors()
    refused = _duplicates([_key_of(r) for r in items], errors)
    records: dict[int, JournalRecord] = {}
    stop = _Stop()
    async with _journaled(client, journal) as (active, book):

        async def one(position: int, row: Mapping[str, Any] | PaymentRequest) -> None:
            if position in refused:
                return
            key = _key_of(row)
            try:
                request = PaymentRequest.build(_clean(row, ignore))
                key, body = payment_body(request)
            except Exception as exc:  # one row's failure is that row's error; the batch goes on
                errors.add(key, position, "request", _describe(exc))
                return
            try:
                record = await book.arun(
                    "payment", key, body, lambda: stop.watch(active.create_payment(request))
                )
            except Exception as exc:
                errors.add(key, position, _stage(exc, book, "payment", key), _describe(exc))
                return
            records[position] = record
            _note_outcome(record, position, errors)

        await _bounded(
            items, one, concurrency=concurrency, description="payments", progress=progress, stop=stop
        )
    return _result(records, errors, lambda done: payments_frame(done, include_failed_calls=True))


def create_payment(
    request: PaymentRequest | Mapping[str, Any] | None = None,
    /,
    *,
    client: Client | None = None,
    journal: Journal | None = None,
    **fields: Any,
) -> JournalRecord:
    """One payment, journaled like a batch: the same merchantReferenceId again sends nothing.

    For engineers scripting one payment at a time; the record says what happened (``state``,
    ``response``) and ``payments_frame`` shows it with the rest. An unknown outcome is recorded as
    unknown and returned, never sent again.
    """
    payment = PaymentRequest.build(merge_fields(request, fields))
    key, body = payment_body(payment)
    with contextlib.ExitStack() as opened:
        active = client if client is not None else opened.enter_context(Client())
        book = (
            journal
            if journal is not None
            else opened.enter_context(Journal.for_environment(active.environment, load_settings().home))
        )
        return book.run("payment", key, body, lambda: active.create_payment(payment))


def create_payments(
    rows: pd.DataFrame | Iterable[Mapping[str, Any] | PaymentRequest], **options: Any
) -> BulkResult:
    """Blocking form of ``acreate_payments`` (works in notebooks too)."""
    _no_async_client("create_payments", options)
    return run_sync(lambda: acreate_payments(rows, **options))


# ---------------------------------------------------------------------------------------------
# Products


def _catalog_entries(catalog: CatalogSource | Sequence[CatalogEntry]) -> list[CatalogEntry]:
    """Entries as given, or read by ``load_catalog``."""
    if isinstance(catalog, Sequence) and catalog and all(isinstance(e, CatalogEntry) for e in catalog):
        return [entry for entry in catalog if isinstance(entry, CatalogEntry)]
    return load_catalog(cast("CatalogSource", catalog))


async def acreate_products(
    catalog: CatalogSource | Sequence[CatalogEntry],
    *,
    client: AsyncClient | None = None,
    journal: Journal | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = True,
) -> BulkResult:
    """Create a catalog's products with their prices, journaled by SKU: unchanged ones are not sent.

    ``frame`` is the products frame, ``extra["prices"]`` the prices frame.
    """
    entries = _catalog_entries(catalog)
    errors = _Errors()
    records: dict[int, JournalRecord] = {}
    stop = _Stop()
    async with _journaled(client, journal) as (active, book):

        async def one(position: int, entry: CatalogEntry) -> None:
            key = entry.merchantReferenceId
            try:
                record = await book.arun(
                    "product",
                    key,
                    entry.request.to_json(),
                    lambda: stop.watch(active.create_product(entry.request)),
                )
            except Exception as exc:  # one row's failure is that row's error; the batch goes on
                errors.add(key, position, _stage(exc, book, "product", key), _describe(exc))
                return
            records[position] = record
            _note_outcome(record, position, errors)

        await _bounded(
            entries, one, concurrency=concurrency, description="products", progress=progress, stop=stop
        )
    return _result(records, errors, products_frame, prices=prices_frame)


def create_products(catalog: CatalogSource | Sequence[CatalogEntry], **options: Any) -> BulkResult:
    """Blocking form of ``acreate_products`` (works in notebooks too)."""
    _no_async_client("create_products", options)
    return run_sync(lambda: acreate_products(catalog, **options))


# ---------------------------------------------------------------------------------------------
# Subscriptions


async def aload_subscriptions(
    ids: Iterable[str],
    *,
    client: AsyncClient | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = True,
) -> BulkResult:
    """Read subscriptions by id. ``frame`` is the subscriptions frame; ``extra`` holds
    ``invoice_items`` and ``phases``; ids that fail are rows of ``errors``."""
    wanted = [str(i) for i in ids]
    errors = _Errors()
    found: dict[int, Subscription] = {}
    async with _connected(client) as active:

        async def one(position: int, subscription_id: str) -> None:
            try:
                found[position] = await active.get_subscription(subscription_id)
            except ToolkitError as exc:
                errors.add(None, position, "request", f"{subscription_id}: {exc}")

        await _bounded(wanted, one, concurrency=concurrency, description="subscriptions", progress=progress)
        environment = active.environment.label
    subscriptions = [found[p] for p in sorted(found)]
    return BulkResult(
        frame=subscriptions_frame(subscriptions, environment=environment),
        errors=errors.frame(),
        sent=len(wanted),
        reused=0,
        extra={"invoice_items": invoice_items_frame(subscriptions), "phases": phases_frame(subscriptions)},
    )


def load_subscriptions(ids: Iterable[str], **options: Any) -> BulkResult:
    """Blocking form of ``aload_subscriptions`` (works in notebooks too)."""
    _no_async_client("load_subscriptions", options)
    return run_sync(lambda: aload_subscriptions(ids, **options))


__all__ = [
    "DEFAULT_CONCURRENCY",
    "BulkResult",
    "acreate_payments",
    "acreate_products",
    "aload_subscriptions",
    "create_payment",
    "create_payments",
    "create_products",
    "load_subscriptions",
    "run_sync",
]
