"""Sandbox throughput: POST /payment and GET /subscription/{id}, 32 concurrent clients, loopback.

Runs the sandbox (``toolkit sandbox``) with 1 and 2 uvicorn workers, and, as the reference, a
minimal FastAPI app doing the same SQLite insert (POST) and a dict lookup (GET), each in its own
process; an aiohttp load generator on 127.0.0.1 measures requests/s and p50/p99 latency for a
bounded duration. Target: sandbox >= 70% of the reference's throughput and p99 <= 1.5x its p99.

    python benchmarks/sandbox_throughput.py [--seconds 5] [--clients 32]
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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
from fastapi import FastAPI, Request
from fastapi.responses import Response

HOST = "127.0.0.1"
KEY = "sk_test_benchmark"
PAYMENT = {
    "customerEmail": "bench@example.com", "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_test_default", "amount": 12.30, "currency": "USD",
    "returnUrl": "https://shop.example/return", "merchantReferenceId": "bench",
}


# ---------------------------------------------------------------------------------------------
# the reference app: same SQLite insert, dict lookup


def reference_app() -> FastAPI:
    """Minimal FastAPI app: POST /payment inserts one row (WAL), GET /subscription/{id} a dict lookup."""
    db = os.environ["BENCH_REFERENCE_DB"]
    local = threading.local()

    def conn() -> sqlite3.Connection:
        c: sqlite3.Connection | None = getattr(local, "conn", None)
        if c is None:
            c = sqlite3.connect(db, isolation_level=None, timeout=30)
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")
            c.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, body TEXT, t INTEGER)")
            local.conn = c
        return c

    subscriptions = {"sub_bench": {"subscriptionId": "sub_bench", "quantity": 1, "amount": "30.00"}}
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


def wait_ready(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not start")


@contextmanager
def serve(kind: str, workers: int, workdir: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    if kind == "sandbox":
        cmd = [sys.executable, "-m", "toolkit.cli", "sandbox", "--host", HOST, "--port", str(port),
               "--db", str(workdir / f"sandbox-{workers}.sqlite"), "--api-key", KEY,
               "--workers", str(workers)]
    else:
        env["BENCH_REFERENCE_DB"] = str(workdir / f"reference-{workers}.sqlite")
        cmd = [sys.executable, "-m", "uvicorn", "sandbox_throughput:reference_app", "--factory",
               "--app-dir", str(Path(__file__).parent), "--host", HOST, "--port", str(port),
               "--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_ready(f"http://{HOST}:{port}/openapi.json")
        yield f"http://{HOST}:{port}"
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

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def headers() -> dict[str, str]:
    return {"X-API-KEY": KEY, "X-Timestamp": str(time.time_ns() // 1_000_000),
            "Content-Type": "application/json"}


async def load(method: str, url: str, body: bytes | None, *, clients: int, seconds: float,
               warmup: float = 1.0) -> Result:
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.perf_counter()
        measure_from = start + warmup
        stop_at = measure_from + seconds

        async def client() -> None:
            nonlocal errors
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                async with session.request(method, url, data=body, headers=headers()) as response:
                    await response.read()
                    ok = response.status == 200
                ended = time.perf_counter()
                if began >= measure_from:
                    latencies.append(ended - began)
                    errors += 0 if ok else 1

        await asyncio.gather(*(client() for _ in range(clients)))
    latencies.sort()
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return Result(len(latencies), errors, seconds, cuts[49] * 1000, cuts[98] * 1000)


def create_subscription(base: str) -> str:
    product = httpx.post(base + "/product", headers=headers(), json={"name": "Bench", "priceList": [
        {"currency": "USD", "unitAmount": 30, "priceType": "recurring",
         "recurringDetails": {"interval": "month"}}]}).json()["data"]
    sub = httpx.post(base + "/sandbox/subscriptions", headers=headers(), json={
        "customerEmail": "bench@example.com", "productId": product["productId"],
        "priceId": product["priceList"][0]["priceId"], "paymentInstrumentId": "pi_test_success",
    }).json()["data"]
    return str(sub["subscriptionId"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    body = json.dumps(PAYMENT).encode()
    results: dict[tuple[str, int, str], Result] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for workers in (1, 2):
            for kind in ("reference", "sandbox"):
                with serve(kind, workers, workdir) as base:
                    sub_id = create_subscription(base) if kind == "sandbox" else "sub_bench"
                    for name, method, path, payload in (
                        ("POST /payment", "POST", "/payment", body),
                        ("GET /subscription", "GET", f"/subscription/{sub_id}", None),
                    ):
                        results[(kind, workers, name)] = asyncio.run(load(
                            method, base + path, payload, clients=args.clients, seconds=args.seconds))
    print(f"{args.clients} concurrent clients, {args.seconds:g} s measured per run, loopback, "
          f"{os.cpu_count()} CPUs (load generator shares them)")
    print(f"{'operation':<20}{'workers':>8}{'app':>11}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'errors':>8}{'vs ref':>9}{'p99 x':>7}")
    for workers in (1, 2):
        for name in ("POST /payment", "GET /subscription"):
            ref = results[("reference", workers, name)]
            for kind in ("reference", "sandbox"):
                r = results[(kind, workers, name)]
                ratio = f"{r.rps / ref.rps:8.0%}" if kind == "sandbox" else ""
                p99x = f"{r.p99_ms / ref.p99_ms:6.2f}" if kind == "sandbox" else ""
                print(f"{name:<20}{workers:>8}{kind:>11}{r.rps:>10.0f}{r.p50_ms:>9.1f}{r.p99_ms:>9.1f}"
                      f"{r.errors:>8}{ratio:>9}{p99x:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
