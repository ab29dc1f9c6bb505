"""Benchmark: subscription frames from 100,000 models, and loading 10,000 subscriptions over loopback.

Issue 3 targets, measured in one run:

* frames: ``subscriptions_frame`` + ``invoice_items_frame`` + ``phases_frame`` of 100,000
  ``Subscription`` models, as the client returns them, in <= 1.5 s (best of N; the median is
  printed too). For context, ``model_dump`` + ``pd.DataFrame`` of the same models is printed.
* loading: ``aload_subscriptions`` of 10,000 ids (concurrency 32, frames included) at >= 80% of the
  throughput of a bare aiohttp loop with the same concurrency, the same ``GET /subscription/{id}``
  requests and headers, reading and JSON-parsing each body, against the same sandbox in the same run.

The sandbox runs in its own process (``python -m toolkit.cli sandbox``) on a free 127.0.0.1 port
with a database in a temporary directory, so the load generator and the server never share one
interpreter; it is stopped at the end, whatever happens. The models of the frames benchmark are
varied copies of a real ``GET /subscription/{id}`` answer from that sandbox: different ids,
merchantReferences, currencies, amounts and quantities, both invoice items, 0-2 scheduled phases,
some trialing, some canceled, a few repeated merchantReferences.

Run: ``.venv/bin/python benchmarks/frames.py [--subscriptions 100000] [--load 10000]``
(``--load 0`` skips the loading part; ``--time-cap`` bounds the whole run).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pandas as pd

from toolkit.bulk import aload_subscriptions
from toolkit.client import AsyncClient
from toolkit.frames import invoice_items_frame, phases_frame, subscriptions_frame
from toolkit.models import Subscription, parse_json, to_json_bytes

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
FRAMES_TARGET_S = 1.5
LOAD_TARGET_RATIO = 0.80
START_TIMEOUT_S = 30.0
SETUP_CONCURRENCY = 16
USER_AGENT = "toolkit/0.1"
# Currencies with their minor digits (JPY has none, KWD three), weighted towards USD.
CURRENCIES: tuple[tuple[str, int], ...] = (
    ("USD", 2),
    ("USD", 2),
    ("USD", 2),
    ("EUR", 2),
    ("EUR", 2),
    ("JPY", 0),
    ("KWD", 3),
)
DAY_MS = 86_400_000
MONTH_MS = 30 * DAY_MS

T = TypeVar("T")


class BenchmarkError(RuntimeError):
    """The benchmark could not run as intended (the sandbox did not start, a request failed)."""


class Deadline:
    """The overall time cap: each phase gets what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self, what: str) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise BenchmarkError(f"time cap reached before {what}")
        return remaining


@dataclass
class Row:
    """One line of the results table."""

    name: str
    best: float
    median: float | None = None
    note: str = ""


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)


def _headers(api_key: str) -> dict[str, str]:
    """The headers the client sends on a GET, with a fresh X-Timestamp (ms since the epoch)."""
    return {
        "X-API-KEY": api_key,
        "X-Timestamp": str(time.time_ns() // 1_000_000),
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }


# ---------------------------------------------------------------------------------------------
# The sandbox, in its own process


@dataclass
class Sandbox:
    process: subprocess.Popen[bytes]
    base_url: str
    api_key: str
    log: Path

    def stop(self) -> None:
        """Terminate the server process this benchmark started (SIGTERM, then SIGKILL)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _answers(base_url: str, api_key: str) -> bool:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(base_url + "/sandbox/info", headers=_headers(api_key))  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310 (127.0.0.1 only)
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_sandbox(directory: Path, deadline: Deadline) -> Sandbox:
    """``toolkit sandbox`` on a free loopback port; returns once it answers GET /sandbox/info."""
    api_key = "bench_" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["TOOLKIT_HOME"] = str(directory / "home")
    for attempt in range(3):
        port = _free_port()
        log = directory / f"sandbox-{attempt}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "toolkit.cli",
                    "sandbox",
                    "--host",
                    HOST,
                    "--port",
                    str(port),
                    "--db",
                    str(directory / "sandbox.sqlite"),
                    "--api-key",
                    api_key,
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        sandbox = Sandbox(process, f"http://{HOST}:{port}", api_key, log)
        until = time.monotonic() + min(START_TIMEOUT_S, deadline.left("the sandbox started"))
        while time.monotonic() < until and process.poll() is None:
            if _answers(sandbox.base_url, api_key):
                return sandbox
            time.sleep(0.1)
        sandbox.stop()
        if time.monotonic() >= until:
            break
    tail = log.read_text(errors="replace")[-2000:]
    raise BenchmarkError(f"the sandbox did not start:\n{tail}")


async def _call(
    session: aiohttp.ClientSession,
    sandbox: Sandbox,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
) -> Any:
    """One setup call on the sandbox; returns the envelope's data or raises."""
    headers = _headers(sandbox.api_key)
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = to_json_bytes(body)
    async with session.request(method, sandbox.base_url + path, data=data, headers=headers) as response:
        raw = await response.read()
    envelope = parse_json(raw) if raw else None
    if response.status != 200 or not isinstance(envelope, dict) or envelope.get("code") != 200:
        raise BenchmarkError(f"{method} {path}: HTTP {response.status}: {raw[:300]!r}")
    return envelope.get("data")


async def _bounded(count: int, work: Callable[[int], Awaitable[T]], concurrency: int) -> list[T]:
    """``work(i)`` for i in range(count), at most ``concurrency`` at once, results in order."""
    results: dict[int, T] = {}
    positions = iter(range(count))

    async def worker() -> None:
        for position in positions:
            results[position] = await work(position)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, count)))))
    return [results[i] for i in range(count)]


@dataclass(frozen=True)
class Plan:
    """The product and the recurring prices the subscriptions are made on."""

    product_id: str
    trial_price: str
    plain_price: str
    phase_snapshots: tuple[str, str]


async def create_plan(session: aiohttp.ClientSession, sandbox: Sandbox) -> Plan:
    monthly = {"interval": "month", "intervalCount": 1}
    product = await _call(
        session,
        sandbox,
        "POST",
        "/product",
        {
            "name": "Benchmark plan",
            "description": "recurring prices for benchmarks/frames.py",
            "priceList": [
                {
                    "currency": "USD",
                    "unitAmount": Decimal("9.99"),
                    "priceType": "recurring",
                    "isDefaultPrice": True,
                    "recurringDetails": {**monthly, "trialPeriodDays": 14},
                },
                {
                    "currency": "USD",
                    "unitAmount": Decimal("19.99"),
                    "priceType": "recurring",
                    "recurringDetails": monthly,
                },
                {
                    "currency": "USD",
                    "unitAmount": Decimal("29.99"),
                    "priceType": "recurring",
                    "recurringDetails": monthly,
                },
            ],
        },
    )
    prices = product["priceList"]
    return Plan(
        product_id=product["productId"],
        trial_price=prices[0]["priceId"],
        plain_price=prices[1]["priceId"],
        phase_snapshots=(prices[1]["priceSnapshotId"], prices[2]["priceSnapshotId"]),
    )


def _subscription_body(plan: Plan, i: int) -> dict[str, Any]:
    phases = [
        {
            "effectiveCycle": 2 + 2 * k,
            "priceSnapshotId": plan.phase_snapshots[k],
            "quantity": 1 + (i + k) % 4,
            "metadata": {"step": str(k + 1)},
        }
        for k in range(i % 3)
    ]
    body: dict[str, Any] = {
        "customerEmail": f"customer{i % 2000}@example.com",
        "productId": plan.product_id,
        "priceId": plan.trial_price if i % 4 == 0 else plan.plain_price,
        "quantity": 1 + i % 5,
        "merchantReference": f"SUB-{i:07d}",
        "paymentMethodType": "WECHAT",
        "metadata": {"source": "benchmark", "cohort": str(i % 7)},
    }
    if phases:
        body["scheduledPhases"] = phases
    return body


async def create_subscriptions(sandbox: Sandbox, count: int, deadline: Deadline) -> tuple[list[str], Any]:
    """Setup (not timed): one product, ``count`` subscriptions, about 10% canceled now and 5% at
    period end. Returns the ids and the raw data of one subscription (the frames template)."""
    async with aiohttp.ClientSession() as session:
        plan = await create_plan(session, sandbox)

        async def one(i: int) -> str:
            body = _subscription_body(plan, i)
            data = await _call(session, sandbox, "POST", "/sandbox/subscriptions", body)
            subscription_id = str(data["subscriptionId"])
            if i % 10 == 9:
                await _call(
                    session,
                    sandbox,
                    "POST",
                    f"/sandbox/subscriptions/{subscription_id}/cancel",
                    {"atPeriodEnd": False, "reason": "benchmark: canceled now"},
                )
            elif i % 20 == 3:
                await _call(
                    session,
                    sandbox,
                    "POST",
                    f"/sandbox/subscriptions/{subscription_id}/cancel",
                    {"atPeriodEnd": True, "reason": "benchmark: at period end"},
                )
            return subscription_id

        async def run() -> tuple[list[str], Any]:
            ids = await _bounded(max(count, 3), one, SETUP_CONCURRENCY)
            # i = 2 (mod 12): a plain price with two phases; its raw answer is the frames template.
            template = await _call(session, sandbox, "GET", f"/subscription/{ids[2]}")
            return ids[:count], template

        return await asyncio.wait_for(run(), deadline.left("the subscriptions were created"))


# ---------------------------------------------------------------------------------------------
# Frames


def _money(minor: int, digits: int) -> Decimal:
    return Decimal(minor).scaleb(-digits)


def _invoice_item(
    template: dict[str, Any],
    *,
    item_id: str,
    amount: Decimal,
    unit: Decimal,
    currency: str,
    quantity: int,
    start: int,
    end: int,
    label: str,
    trial_days: int,
    price_id: str,
    snapshot_id: str,
) -> dict[str, Any]:
    price = template["price"]
    return {
        **template,
        "invoiceItemId": item_id,
        "amount": amount,
        "currency": currency,
        "description": f"{label}: {quantity} x {price['productName']}",
        "periodStart": start,
        "periodEnd": end,
        "price": {
            **price,
            "priceId": price_id,
            "priceSnapshotId": snapshot_id,
            "unitAmount": unit,
            "quantity": quantity,
            "currency": currency,
            "recurring": {**price["recurring"], "trialPeriodDays": trial_days},
        },
    }


def subscription_records(template: dict[str, Any], count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` varied copies of a real Subscription answer (the envelope's data, as parse_json gives it)."""
    rng = random.Random(seed)
    base_time = int(template["createTime"]) - 400 * DAY_MS
    recurring_template = template["recurringInvoiceItem"]
    upcoming_template = template["upcomingInvoiceItem"]
    phase_template = (template.get("scheduledPhases") or [{}])[0]
    records = []
    for i in range(count):
        currency, digits = CURRENCIES[rng.randrange(len(CURRENCIES))]
        unit_minor = rng.randrange(100, 100_000)
        quantity = rng.randint(1, 9)
        create = base_time + i * 300_000 + rng.randrange(300_000)
        trial = i % 4 == 0
        canceled = i % 10 == 9
        trial_end = create + 14 * DAY_MS if trial else None
        anchor = trial_end or create
        cycles = rng.randrange(0, 13)
        trialing = trial and cycles == 0 and not canceled
        start = create if trialing else anchor + max(cycles - 1, 0) * MONTH_MS
        end = trial_end if trialing and trial_end is not None else start + MONTH_MS
        unit = _money(unit_minor, digits)
        cycle_amount = _money(unit_minor * quantity, digits)
        price_id = f"price_{i % 50:032x}"
        snapshot_id = f"psnap_{i % 50:032x}"
        current = _invoice_item(
            recurring_template,
            item_id=f"ii_{2 * i:032x}",
            amount=_money(0, digits) if trialing else cycle_amount,
            start=start,
            end=end,
            label="Trial period" if trialing else f"Cycle {cycles}",
            unit=unit,
            currency=currency,
            quantity=quantity,
            price_id=price_id,
            snapshot_id=snapshot_id,
            trial_days=14 if trial else 0,
        )
        upcoming = _invoice_item(
            upcoming_template,
            item_id=f"ii_{2 * i + 1:032x}",
            amount=cycle_amount,
            start=end,
            end=end + MONTH_MS,
            label=f"Cycle {cycles + 1}",
            unit=unit,
            currency=currency,
            quantity=quantity,
            price_id=price_id,
            snapshot_id=snapshot_id,
            trial_days=14 if trial else 0,
        )
        phases = [
            {
                **phase_template,
                "sequence": k + 1,
                "effectiveCycle": cycles + 2 + 3 * k,
                "priceSnapshotId": f"psnap_{(i + k + 1) % 50:032x}",
                "quantity": quantity + k + 1,
                "metadata": {"step": str(k + 1)},
            }
            for k in range(i % 3)
        ]
        # About one key in 500 repeats the previous one: duplicates are kept, never dropped.
        key = f"SUB-{i - 1 if i % 500 == 499 else i:07d}"
        records.append(
            {
                **template,
                "subscriptionId": f"sub_{i:032x}",
                "status": "canceled" if canceled else "trialing" if trialing else "active",
                "customerId": f"cus_{i % 20_000:032x}",
                "priceId": price_id,
                "priceSnapshotId": snapshot_id,
                "currency": currency,
                "createTime": create,
                "quantity": quantity,
                "paymentInstrumentId": f"pi_{i:032x}",
                "merchantReference": key,
                "trialStart": create if trial else None,
                "trialEnd": trial_end,
                "currentPeriodStart": start,
                "currentPeriodEnd": end,
                "cancelAt": start + DAY_MS if canceled else None,
                "cancelAtPeriodEnd": False,
                "canceledAt": start + DAY_MS if canceled else None,
                "cancelReason": "customer request" if canceled else None,
                "recurringInvoiceItem": current,
                "upcomingInvoiceItem": upcoming,
                "scheduledPhases": phases,
                "elapsedCycles": cycles,
                "sessionId": f"ses_{i:032x}",
                "metadata": {"source": "benchmark", "cohort": str(i % 7)},
            }
        )
    return records


def make_models(template: dict[str, Any], count: int) -> list[Subscription]:
    """The models as ``AsyncClient.get_subscription`` returns them: ``model_validate`` of parse_json data."""
    records = subscription_records(template, count)
    for record in records[:50]:  # the records survive the wire unchanged
        if parse_json(to_json_bytes(record)) != record:
            raise BenchmarkError("a generated record does not survive a JSON round trip")
    return [Subscription.model_validate(record) for record in records]


def build_frames(models: Sequence[Subscription]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return (
        subscriptions_frame(models, environment="benchmark"),
        invoice_items_frame(models),
        phases_frame(models),
    )


def dump_frame(models: Sequence[Subscription]) -> pd.DataFrame:
    return pd.DataFrame([model.model_dump() for model in models])


def timed(function: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return times


def profile(function: Callable[[], object], limit: int = 25) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(function)
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(limit)


def bench_frames(
    template: dict[str, Any], count: int, repeats: int, results: Results, want_profile: bool
) -> None:
    print(f"frames: validating {count:,} Subscription models (setup, not timed) ...", flush=True)
    started = time.perf_counter()
    models = make_models(template, count)
    print(f"  model_validate of {count:,} dicts: {time.perf_counter() - started:.2f} s", flush=True)
    subs, items, phases = build_frames(models)
    expected_phases = sum(len(m.scheduledPhases or []) for m in models)
    if (len(subs), len(items), len(phases)) != (count, 2 * count, expected_phases):
        raise BenchmarkError(f"unexpected frame sizes {len(subs)}, {len(items)}, {len(phases)}")
    states = subs["state"].value_counts().to_dict()
    print(
        f"  frames: {len(subs):,} subscriptions ({states}), {len(items):,} invoice items, "
        f"{len(phases):,} phases; {subs.index.duplicated().sum()} repeated keys kept",
        flush=True,
    )
    del subs, items, phases

    frame_times = timed(lambda: build_frames(models), repeats)
    best, median = min(frame_times), statistics.median(frame_times)
    results.rows.append(
        Row(
            f"frames of {count:,} subscriptions (3 frames)",
            best,
            median,
            f"target <= {FRAMES_TARGET_S:.2f} s (at 100,000)",
        )
    )
    dump_times = timed(lambda: dump_frame(models), repeats)
    results.rows.append(
        Row(
            f"context: model_dump + pd.DataFrame ({count:,})",
            min(dump_times),
            statistics.median(dump_times),
            "issue's reference figure: 1.7 s",
        )
    )
    scaled = best * 100_000 / count
    met = scaled <= FRAMES_TARGET_S
    results.verdicts.append(
        f"frames: best {best:.3f} s for {count:,} (= {scaled:.3f} s per 100,000) -> "
        f"{'MET' if met else 'MISSED'} (target <= {FRAMES_TARGET_S} s)"
    )
    if want_profile or not met:
        print("\nprofile of one frames build (cumulative):", flush=True)
        profile(lambda: build_frames(models))


# ---------------------------------------------------------------------------------------------
# Loading


async def load_toolkit(sandbox: Sandbox, ids: Sequence[str], concurrency: int) -> int:
    """aload_subscriptions with its own AsyncClient, frames included; returns the rows loaded."""
    client = AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key)
    try:
        result = await aload_subscriptions(ids, client=client, concurrency=concurrency, progress=False)
    finally:
        await client.aclose()
    if not result.ok:
        raise BenchmarkError(
            f"aload_subscriptions failed on {len(result.errors)} ids: {result.errors['error'].iloc[0]}"
        )
    return len(result.frame)


async def load_bare(sandbox: Sandbox, ids: Sequence[str], concurrency: int) -> int:
    """The same GETs with bare aiohttp: ``concurrency`` workers, body read and JSON-parsed."""
    loaded: list[Any] = []
    queue = iter(ids)
    connector = aiohttp.TCPConnector(limit=100)  # as the AsyncClient's transport (max_connections=100)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            for subscription_id in queue:
                url = f"{sandbox.base_url}/subscription/{subscription_id}"
                async with session.get(url, headers=_headers(sandbox.api_key)) as response:
                    body = await response.read()
                    status = response.status
                envelope = json.loads(body)
                if status != 200 or envelope.get("code") != 200:
                    raise BenchmarkError(f"GET {url}: HTTP {status}: {body[:200]!r}")
                loaded.append(envelope["data"])

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(loaded)


LOADERS: dict[str, Callable[[Sandbox, Sequence[str], int], Awaitable[int]]] = {
    "toolkit": load_toolkit,
    "bare": load_bare,
}


def run_load(name: str, sandbox: Sandbox, ids: Sequence[str], concurrency: int, deadline: Deadline) -> float:
    gc.collect()
    started = time.perf_counter()
    loaded = asyncio.run(
        asyncio.wait_for(LOADERS[name](sandbox, ids, concurrency), deadline.left(f"the {name} load"))
    )
    elapsed = time.perf_counter() - started
    if loaded != len(ids):
        raise BenchmarkError(f"{name}: loaded {loaded} of {len(ids)}")
    print(f"  {name:8s} {len(ids):,} in {elapsed:.2f} s = {len(ids) / elapsed:,.0f}/s", flush=True)
    return elapsed


def bench_load(
    sandbox: Sandbox,
    ids: Sequence[str],
    concurrency: int,
    results: Results,
    deadline: Deadline,
    want_profile: bool,
) -> None:
    count = len(ids)
    print(f"loading: warm-up on {min(count, 500)} ids (not timed) ...", flush=True)
    for name in ("bare", "toolkit"):
        run_load(name, sandbox, ids[:500], concurrency, deadline)
    print(
        f"loading: {count:,} subscriptions, concurrency {concurrency}, two rounds in alternate order",
        flush=True,
    )
    times: dict[str, list[float]] = {"toolkit": [], "bare": []}
    for order in (("toolkit", "bare"), ("bare", "toolkit")):
        for name in order:
            times[name].append(run_load(name, sandbox, ids, concurrency, deadline))
    best = {name: min(values) for name, values in times.items()}
    rate = {name: count / value for name, value in best.items()}
    ratio = rate["toolkit"] / rate["bare"]
    results.rows.append(
        Row(
            f"load {count:,}: aload_subscriptions + frames",
            best["toolkit"],
            None,
            f"{rate['toolkit']:,.0f}/s (runs: {_runs(times['toolkit'])})",
        )
    )
    results.rows.append(
        Row(
            f"load {count:,}: bare aiohttp loop",
            best["bare"],
            None,
            f"{rate['bare']:,.0f}/s (runs: {_runs(times['bare'])})",
        )
    )
    met = ratio >= LOAD_TARGET_RATIO
    results.verdicts.append(
        f"loading: toolkit {rate['toolkit']:,.0f}/s vs bare {rate['bare']:,.0f}/s = {ratio:.1%} -> "
        f"{'MET' if met else 'MISSED'} (target >= {LOAD_TARGET_RATIO:.0%})"
    )
    if want_profile or not met:
        print("\nprofile of one toolkit load, client side (cumulative):", flush=True)
        profile(lambda: asyncio.run(load_toolkit(sandbox, ids, concurrency)))


def _runs(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f} s" for v in values)


# ---------------------------------------------------------------------------------------------


def print_table(results: Results, args: argparse.Namespace) -> None:
    print()
    print(
        f"benchmarks/frames.py  (python {sys.version.split()[0]}, pandas {pd.__version__}, "
        f"{os.cpu_count()} CPUs, repeats {args.repeats})"
    )
    width = max(len(row.name) for row in results.rows) if results.rows else 40
    print(f"{'measurement':{width}s}  {'best':>9s}  {'median':>9s}  note")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 9}  {'-' * 30}")
    for row in results.rows:
        median = f"{row.median:8.3f}s" if row.median is not None else f"{'-':>9s}"
        print(f"{row.name:{width}s}  {row.best:8.3f}s  {median}  {row.note}")
    print()
    for verdict in results.verdicts:
        print(verdict)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--subscriptions",
        type=int,
        default=100_000,
        help="models for the frames benchmark (default %(default)s; 0 skips it)",
    )
    parser.add_argument(
        "--load",
        type=int,
        default=10_000,
        help="subscriptions to create and load (default %(default)s; 0 skips it)",
    )
    parser.add_argument("--concurrency", type=int, default=32, help="load concurrency (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="frames repeats (default %(default)s)")
    parser.add_argument(
        "--time-cap",
        type=float,
        default=1200.0,
        help="stop with an error after this many seconds (default %(default)s)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="print cProfile output even when the targets are met"
    )
    args = parser.parse_args(argv)
    if args.subscriptions < 0 or args.load < 0 or args.concurrency < 1 or args.repeats < 1:
        parser.error("counts must be >= 0, concurrency and repeats >= 1")
    deadline = Deadline(args.time_cap)
    results = Results()
    with tempfile.TemporaryDirectory(prefix="bench-frames-") as tmp:
        sandbox = start_sandbox(Path(tmp), deadline)
        try:
            print(
                f"sandbox: {sandbox.base_url} (pid {sandbox.process.pid}), setup: "
                f"{max(args.load, 3):,} subscriptions ...",
                flush=True,
            )
            started = time.perf_counter()
            ids, template = asyncio.run(create_subscriptions(sandbox, args.load, deadline))
            print(f"  created in {time.perf_counter() - started:.1f} s", flush=True)
            if args.subscriptions:
                deadline.left("the frames benchmark")
                bench_frames(template, args.subscriptions, args.repeats, results, args.profile)
                gc.collect()
            if args.load:
                bench_load(sandbox, ids, args.concurrency, results, deadline, args.profile)
        finally:
            sandbox.stop()
    print_table(results, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
