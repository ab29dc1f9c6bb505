"""Sandbox throughput: POST /payment (card and wallet) and GET /subscription/{id}, 32 clients, loopback.

Runs the sandbox (``toolkit sandbox``) with 1 and 2 uvicorn workers, and, as the reference, a
minimal FastAPI app doing the same SQLite insert (POST, same WAL and synchronous settings) and a
dict lookup (GET, answering a body of the same size and shape as the sandbox's Subscription), each
in its own process; an aiohttp load generator on 127.0.0.1 measures requests/s and p50/p99 latency
for a bounded duration. Target: sandbox >= 70% of the reference's throughput and p99 <= 1.5x its p99.
Each run also reports the server's CPU time per request (its processes' user + system time over
the run, warm-up included, divided by the requests answered): a figure that load from other
processes on a shared machine disturbs much less than requests/s.

Two kinds of payment: a card payment (test instrument, status 1) and a wallet payment (ALIPAY with
no instrument: one is created, and the answer is a next action carrying a QR code). The reference
answers both the same way: it is the floor cost of FastAPI + one SQLite insert. It is served, like the
sandbox, with TCP_NODELAY on every connection (``NoDelayH11Protocol``; uvicorn leaves it off with
several workers).

Fairness on a shared machine: both servers run at the same time (an idle one costs nothing) and
their runs alternate, reference/sandbox then sandbox/reference, ``--rounds`` times; each side's
best round (highest requests/s) is reported, so a burst of load from other processes does not
land on one side only.

    python benchmarks/sandbox_throughput.py [--seconds 5] [--clients 32] [--rounds 2] \
        [--workers 1 2] [--operations card wallet subscription]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp
import httpx
import psutil  # type: ignore[import-untyped]
from fastapi import FastAPI, Request
from fastapi.responses import Response
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolkit.sandbox.protocol import no_delay

HOST = "127.0.0.1"
KEY = "sk_test_benchmark"
PAYMENT = {
    "customerEmail": "bench@example.com",
    "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_test_default",
    "amount": 12.30,
    "currency": "USD",
    "returnUrl": "https://shop.example/return",
    "merchantReferenceId": "bench",
}
WALLET_PAYMENT = {
    "customerEmail": "bench@example.com",
    "paymentMethodType": "ALIPAY",
    "amount": 12.30,
    "currency": "CNY",
    "returnUrl": "https://shop.example/return",
    "merchantReferenceId": "bench",
}


# ---------------------------------------------------------------------------------------------
# the reference app: same SQLite insert, dict lookup


def reference_subscription(sub_id: str) -> dict[str, object]:
    """A Subscription like the sandbox's for the benchmark's subscription (same keys, ~1.8 KB of JSON),
    so both GETs encode and send the same amount of data."""
    hexid = uuid.UUID(int=0).hex
    ids = {name: f"{name}_{hexid}" for name in ("cus", "prod", "price", "psnap", "ses")}
    start, month = 1_700_000_000_000, 2_592_000_000

    def item(cycle: int) -> dict[str, object]:
        return {
            "invoiceItemId": f"ii_{hexid}",
            "amount": "30.00",
            "currency": "USD",
            "description": f"Cycle {cycle}: 1 x Bench",
            "periodStart": start + (cycle - 1) * month,
            "periodEnd": start + cycle * month,
            "proration": False,
            "price": {
                "productId": ids["prod"],
                "productName": "Bench",
                "priceId": ids["price"],
                "priceSnapshotId": ids["psnap"],
                "unitAmount": "30.00",
                "quantity": 1,
                "currency": "USD",
                "recurring": {"trialPeriodDays": 0, "intervalCount": 1},
            },
        }

    return {
        "subscriptionId": sub_id,
        "status": "active",
        "customerId": ids["cus"],
        "productId": ids["prod"],
        "priceId": ids["price"],
        "priceSnapshotId": ids["psnap"],
        "currency": "USD",
        "createTime": start,
        "quantity": 1,
        "paymentMethodType": "CARD",
        "paymentInstrumentId": "pi_test_success",
        "merchantReference": None,
        "trialStart": None,
        "trialEnd": None,
        "currentPeriodStart": start,
        "currentPeriodEnd": start + month,
        "cancelAt": None,
        "cancelAtPeriodEnd": False,
        "canceledAt": None,
        "cancelReason": None,
        "recurringInvoiceItem": item(1),
        "upcomingInvoiceItem": item(2),
        "scheduledPhases": [],
        "elapsedCycles": 1,
        "sessionId": ids["ses"],
        "metadata": {},
    }


def create_reference_db(path: Path) -> None:
    """The reference's database, created once before its workers start: switching a new file to
    WAL needs it to itself, so two workers doing it on their first request could fail."""
    with closing(sqlite3.connect(path, isolation_level=None)) as c:
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, body TEXT, t INTEGER)")


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with TCP_NODELAY on every connection, as the sandbox's own protocol
    has: the listening socket uvicorn makes for several workers leaves Nagle's algorithm on, and
    every kept-alive request would then wait 40 ms for a delayed ACK, on either app."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        no_delay(transport)
        super().connection_made(transport)


def reference_app() -> FastAPI:
    """Minimal FastAPI app: POST /payment inserts one row (WAL), GET /subscription/{id} a dict lookup."""
    db = os.environ["BENCH_REFERENCE_DB"]
    local = threading.local()

    def conn() -> sqlite3.Connection:
        """Per thread, with the sandbox's settings (``toolkit.sandbox.db.Database.conn``)."""
        c: sqlite3.Connection | None = getattr(local, "conn", None)
        if c is None:
            c = sqlite3.connect(db, isolation_level=None, timeout=30)
            c.execute("PRAGMA busy_timeout = 30000")
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")
            local.conn = c
        return c

    subscriptions = {"sub_bench": reference_subscription("sub_bench")}
    app = FastAPI()

    @app.post("/payment")
    async def payment(request: Request) -> Response:
        body = json.loads(await request.body())
        order_id = "ord_" + uuid.uuid4().hex
        c = conn()
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO orders VALUES (?, ?, ?)", (order_id, json.dumps(body), time.time_ns()))
        c.execute("COMMIT")
        data = {"code": 200, "msg": "success", "data": {"orderId": order_id, "status": 1}}
        return Response(json.dumps(data), media_type="application/json")

    @app.get("/subscription/{sub_id}")
    async def subscription(sub_id: str) -> Response:
        data = {"code": 200, "msg": "success", "data": subscriptions.get(sub_id)}
        return Response(json.dumps(data), media_type="application/json")

    return app


# ---------------------------------------------------------------------------------------------
# servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, timeout: float = 120) -> None:
    """Poll until the server answers (generous: imports alone take seconds on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not start")


@dataclass(frozen=True)
class Server:
    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU time so far of the server process and its workers."""
        total = 0.0
        root = psutil.Process(self.pid)
        for process in (root, *root.children(recursive=True)):
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return float(total)


@contextmanager
def serve(kind: str, workers: int, workdir: Path) -> Iterator[Server]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    if kind == "sandbox":
        cmd = [
            sys.executable,
            "-m",
            "toolkit.cli",
            "sandbox",
            "--host",
            HOST,
            "--port",
            str(port),
            "--db",
            str(workdir / f"sandbox-{workers}.sqlite"),
            "--api-key",
            KEY,
            "--workers",
            str(workers),
        ]
    else:
        env["BENCH_REFERENCE_DB"] = str(workdir / f"reference-{workers}.sqlite")
        create_reference_db(Path(env["BENCH_REFERENCE_DB"]))
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            "sandbox_throughput:reference_app",
            "--factory",
            "--app-dir",
            str(Path(__file__).parent),
            "--host",
            HOST,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--no-access-log",
            "--http",
            "sandbox_throughput:NoDelayH11Protocol",
        ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_ready(f"http://{HOST}:{port}/openapi.json")
        yield Server(f"http://{HOST}:{port}", proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------------
# load


@dataclass(frozen=True)
class Result:
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    answered: int  # warm-up included
    cpu_us: float = 0.0  # server CPU per answered request

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def headers() -> dict[str, str]:
    return {
        "X-API-KEY": KEY,
        "X-Timestamp": str(time.time_ns() // 1_000_000),
        "Content-Type": "application/json",
    }


async def load(
    method: str, url: str, body: bytes | None, *, clients: int, seconds: float, warmup: float = 1.0
) -> Result:
    latencies: list[float] = []
    errors = 0
    answered = 0
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.perf_counter()
        measure_from = start + warmup
        stop_at = measure_from + seconds

        async def client() -> None:
            nonlocal errors, answered
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                try:
                    async with session.request(method, url, data=body, headers=headers()) as response:
                        await response.read()
                        ok = response.status == 200
                except aiohttp.ClientError:  # counted, not fatal: one reset must not lose the run
                    ok = False
                ended = time.perf_counter()
                answered += 1
                if began >= measure_from:
                    latencies.append(ended - began)
                    errors += 0 if ok else 1

        await asyncio.gather(*(client() for _ in range(clients)))
    latencies.sort()
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return Result(len(latencies), errors, seconds, cuts[49] * 1000, cuts[98] * 1000, answered)


def create_subscription(base: str) -> str:
    product = httpx.post(
        base + "/product",
        headers=headers(),
        json={
            "name": "Bench",
            "priceList": [
                {
                    "currency": "USD",
                    "unitAmount": 30,
                    "priceType": "recurring",
                    "recurringDetails": {"interval": "month"},
                }
            ],
        },
    ).json()["data"]
    sub = httpx.post(
        base + "/sandbox/subscriptions",
        headers=headers(),
        json={
            "customerEmail": "bench@example.com",
            "productId": product["productId"],
            "priceId": product["priceList"][0]["priceId"],
            "paymentInstrumentId": "pi_test_success",
        },
    ).json()["data"]
    return str(sub["subscriptionId"])


#: Short name (``--operations``) -> label in the table.
OPERATIONS = {
    "card": "POST /payment card",
    "wallet": "POST /payment wallet",
    "subscription": "GET /subscription",
}


def check_wallet(base: str) -> None:
    """Refuse to measure a wallet run that would not answer a QR next action (status 5); the extra
    requests, each on a new connection, let every worker derive its QR template before timing."""
    for _ in range(20):
        data = httpx.post(base + "/payment", headers=headers(), json=WALLET_PAYMENT).json()["data"]
        wallet = data["action"]["walletHandleRedirectOrDisplayQrCode"]
        if data["status"] != 5 or not wallet["imageDataUrl"].startswith("data:image/png;base64,"):
            raise RuntimeError(f"the wallet payment did not answer a QR next action: {data}")


def request_of(operation: str, base: str, subscription: str) -> tuple[str, str, bytes | None]:
    """(method, url, body) of one operation against one app."""
    if operation == "card":
        return "POST", base + "/payment", json.dumps(PAYMENT).encode()
    if operation == "wallet":
        return "POST", base + "/payment", json.dumps(WALLET_PAYMENT).encode()
    return "GET", f"{base}/subscription/{subscription}", None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="runs per app and case; best is kept")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="uvicorn workers")
    parser.add_argument("--operations", nargs="+", choices=list(OPERATIONS), default=list(OPERATIONS))
    args = parser.parse_args()
    operations = [name for name in OPERATIONS if name in args.operations]
    results: dict[tuple[str, int, str], Result] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for workers in args.workers:
            with (
                serve("reference", workers, workdir) as reference,
                serve("sandbox", workers, workdir) as sandbox,
            ):
                servers = {"reference": reference, "sandbox": sandbox}
                subs = {"reference": "sub_bench", "sandbox": create_subscription(sandbox.url)}
                check_wallet(sandbox.url)
                for name in operations:
                    for round_ in range(args.rounds):
                        order = ("reference", "sandbox") if round_ % 2 == 0 else ("sandbox", "reference")
                        for kind in order:
                            method, url, payload = request_of(name, servers[kind].url, subs[kind])
                            cpu_before = servers[kind].cpu_seconds()
                            run = asyncio.run(
                                load(method, url, payload, clients=args.clients, seconds=args.seconds)
                            )
                            cpu = (servers[kind].cpu_seconds() - cpu_before) / max(run.answered, 1)
                            run = replace(run, cpu_us=cpu * 1e6)
                            print(
                                f"  {OPERATIONS[name]} workers={workers} {kind} round {round_ + 1}: "
                                f"{run.rps:.0f} req/s, p99 {run.p99_ms:.1f} ms, "
                                f"server CPU {run.cpu_us:.0f} us/request",
                                file=sys.stderr,
                                flush=True,
                            )
                            best = results.get((kind, workers, name))
                            if best is None or run.rps > best.rps:
                                results[(kind, workers, name)] = run
    print(
        f"{args.clients} concurrent clients, {args.seconds:g} s measured per run, best of "
        f"{args.rounds} alternating rounds, loopback, {os.cpu_count()} CPUs (load generator shares them)"
    )
    print(
        f"{'operation':<22}{'workers':>8}{'app':>11}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'errors':>8}{'vs ref':>9}{'p99 x':>7}{'CPU us/req':>12}"
    )
    for workers in args.workers:
        for name in operations:
            ref = results[("reference", workers, name)]
            for kind in ("reference", "sandbox"):
                r = results[(kind, workers, name)]
                ratio = f"{r.rps / ref.rps:8.0%}" if kind == "sandbox" else ""
                p99x = f"{r.p99_ms / ref.p99_ms:6.2f}" if kind == "sandbox" else ""
                print(
                    f"{OPERATIONS[name]:<22}{workers:>8}{kind:>11}{r.rps:>10.0f}{r.p50_ms:>9.1f}{r.p99_ms:>9.1f}"
                    f"{r.errors:>8}{ratio:>9}{p99x:>7}{r.cpu_us:>12.0f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
