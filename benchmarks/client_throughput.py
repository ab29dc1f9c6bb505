"""Requests/s of the toolkit's clients against bare httpx and aiohttp, doing ``get_subscription``.

    .venv/bin/python benchmarks/client_throughput.py [--requests 3000] [--rounds 3] [--profile]

A minimal HTTP/1.1 server (raw asyncio, keep-alive, a fixed Subscription envelope for
``GET /subscription/{id}``, 401 without ``X-API-KEY``) runs in a separate process on 127.0.0.1, so
client and server never share an interpreter. Each case sends a fixed number of requests (after a
warm-up), under a time cap; every case is run ``--rounds`` times, interleaved, and the median is
reported. The bare loops do the work a user of the bare library needs: the same headers (API key,
a fresh X-Timestamp per request, Accept, User-Agent), read the body, parse the JSON and check the
envelope's code.

Targets (issue 2): ``AsyncClient`` (32 concurrent) >= 80% of bare aiohttp (32 concurrent);
``Client`` (sequential) >= 80% of bare sync httpx. With ``--profile``, the two toolkit cases are
also run under cProfile and the top functions by cumulative and own time are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from toolkit.client import USER_AGENT, AsyncClient, Client  # noqa: E402

API_KEY = "sk_bench_0123456789abcdef"
SUBSCRIPTION_ID = "sub_bench_1"
TARGET = 0.80

# -- the server (its own process) -------------------------------------------------------------------

SUBSCRIPTION: dict[str, Any] = {
    "subscriptionId": SUBSCRIPTION_ID,
    "customerId": "cus_1",
    "productId": "prod_1",
    "priceId": "price_1",
    "priceSnapshotId": "ps_1",
    "createTime": 1_717_171_717_000,
    "quantity": 1,
    "paymentMethodType": "CARD",
    "paymentInstrumentId": "pi_1",
    "merchantReference": "order-42",
    "trialStart": 1_717_171_717_000,
    "trialEnd": 1_717_776_517_000,
    "currentPeriodStart": 1_717_776_517_000,
    "currentPeriodEnd": 1_725_552_517_000,
    "cancelAt": None,
    "cancelAtPeriodEnd": False,
    "canceledAt": None,
    "cancelReason": None,
    "recurringInvoiceItem": {
        "invoiceItemId": "ii_1",
        "amount": 29.97,
        "description": "Pro plan, quarterly",
        "periodStart": 1_717_776_517_000,
        "periodEnd": 1_725_552_517_000,
        "proration": False,
        "price": {
            "productId": "prod_1",
            "productName": "Pro",
            "priceId": "price_1",
            "priceSnapshotId": "ps_1",
            "unitAmount": 29.97,
            "quantity": 1,
            "recurring": {"trialPeriodDays": 7, "intervalCount": 1},
        },
    },
    "upcomingInvoiceItem": None,
    "scheduledPhases": [
        {
            "sequence": 1,
            "effectiveCycle": 3,
            "priceSnapshotId": "ps_2",
            "quantity": 2,
            "metadata": {"reason": "upgrade"},
        }
    ],
    "elapsedCycles": 2,
    "sessionId": "ses_1",
    "metadata": {"plan": "pro"},
}


def _response(status: int, reason: str, body: bytes, content_type: str) -> bytes:
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


OK_RESPONSE = _response(
    200,
    "OK",
    json.dumps({"code": 200, "msg": "success", "data": SUBSCRIPTION}, separators=(",", ":")).encode(),
    "application/json",
)
NOT_FOUND = _response(404, "Not Found", b'{"code":404,"msg":"not found","data":null}', "application/json")
UNAUTHORIZED = _response(401, "Unauthorized", b"Unauthorized", "text/plain")


class _HTTPServerProtocol(asyncio.Protocol):
    """HTTP/1.1 with keep-alive: just enough for the benchmark's GETs."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end]
            lower = head.lower()
            length = 0
            if (at := lower.find(b"\r\ncontent-length:")) >= 0:
                stop = lower.find(b"\r\n", at + 2)
                length = int(lower[at + 17 : stop if stop >= 0 else None])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            request_line = head.split(b"\r\n", 1)[0].split(b" ")
            assert self.transport is not None
            if b"\r\nx-api-key:" not in lower:
                self.transport.write(UNAUTHORIZED)
            elif request_line[0] == b"GET" and request_line[1].startswith(b"/subscription/"):
                self.transport.write(OK_RESPONSE)
            else:
                self.transport.write(NOT_FOUND)


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_HTTPServerProtocol, "127.0.0.1", 0, backlog=512)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.isdigit():
        process.kill()
        raise SystemExit(f"the benchmark server did not start: {line!r}")
    return process, f"http://127.0.0.1:{line}"


def stop_server(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- the cases ------------------------------------------------------------------------------------


def headers() -> dict[str, str]:
    """What the toolkit sends, with a fresh timestamp: the bare loops send the same."""
    return {
        "X-API-KEY": API_KEY,
        "X-Timestamp": str(time.time_ns() // 1_000_000),
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }


def check(body: bytes) -> None:
    envelope = json.loads(body)
    if envelope["code"] != 200 or envelope["data"]["subscriptionId"] != SUBSCRIPTION_ID:
        raise RuntimeError(f"unexpected answer: {body[:200]!r}")


@dataclass
class Result:
    case: str
    requests: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


SyncLoop = Callable[[int, float], int]  # (requests, deadline) -> requests done


def run_sync(
    setup: Callable[[str], tuple[Callable[[], None], Callable[[], None]]],
    url: str,
    requests: int,
    warmup: int,
    cap: float,
) -> tuple[int, float]:
    one, close = setup(url)
    try:
        for _ in range(warmup):
            one()
        deadline = time.perf_counter() + cap
        start = time.perf_counter()
        done = 0
        while done < requests and (done % 100 or time.perf_counter() < deadline):
            one()
            done += 1
        return done, time.perf_counter() - start
    finally:
        close()


def toolkit_sync(url: str) -> tuple[Callable[[], None], Callable[[], None]]:
    client = Client(base_url=url, api_key=API_KEY, timeout=10.0, max_retries=0)

    def one() -> None:
        subscription = client.get_subscription(SUBSCRIPTION_ID)
        if subscription.subscriptionId != SUBSCRIPTION_ID:
            raise RuntimeError(subscription)

    return one, client.close


def httpx_sync(url: str) -> tuple[Callable[[], None], Callable[[], None]]:
    client = httpx.Client(timeout=10.0)
    target = f"{url}/subscription/{SUBSCRIPTION_ID}"

    def one() -> None:
        response = client.get(target, headers=headers())
        response.raise_for_status()
        check(response.content)

    return one, client.close


AsyncOne = Callable[[], Awaitable[None]]
AsyncSetup = Callable[[str], Awaitable[tuple[AsyncOne, Callable[[], Awaitable[None]]]]]


async def _workers(one: AsyncOne, requests: int, concurrency: int, deadline: float) -> int:
    remaining = requests
    done = 0

    async def worker() -> None:
        nonlocal remaining, done
        while remaining > 0 and time.perf_counter() < deadline:
            remaining -= 1
            await one()
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


def run_async(
    setup: AsyncSetup, url: str, requests: int, warmup: int, cap: float, concurrency: int
) -> tuple[int, float]:
    async def main() -> tuple[int, float]:
        one, close = await setup(url)
        try:
            await _workers(one, warmup, concurrency, time.perf_counter() + cap)
            start = time.perf_counter()
            done = await _workers(one, requests, concurrency, start + cap)
            return done, time.perf_counter() - start
        finally:
            await close()

    return asyncio.run(main())


async def toolkit_async(url: str) -> tuple[AsyncOne, Callable[[], Awaitable[None]]]:
    client = AsyncClient(base_url=url, api_key=API_KEY, timeout=10.0, max_retries=0)

    async def one() -> None:
        subscription = await client.get_subscription(SUBSCRIPTION_ID)
        if subscription.subscriptionId != SUBSCRIPTION_ID:
            raise RuntimeError(subscription)

    return one, client.aclose


async def aiohttp_async(url: str) -> tuple[AsyncOne, Callable[[], Awaitable[None]]]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
    target = f"{url}/subscription/{SUBSCRIPTION_ID}"

    async def one() -> None:
        async with session.get(target, headers=headers()) as response:
            body = await response.read()
            if response.status != 200:
                raise RuntimeError(response.status)
            check(body)

    return one, session.close


async def httpx_async(url: str) -> tuple[AsyncOne, Callable[[], Awaitable[None]]]:
    client = httpx.AsyncClient(timeout=10.0, limits=httpx.Limits(max_connections=100))
    return _httpx_one(client, url), client.aclose


def _httpx_one(client: httpx.AsyncClient, url: str) -> AsyncOne:
    target = f"{url}/subscription/{SUBSCRIPTION_ID}"

    async def one() -> None:
        response = await client.get(target, headers=headers())
        response.raise_for_status()
        check(response.content)

    return one


# -- running and reporting ------------------------------------------------------------------------

SYNC_CASES: dict[str, Callable[[str], tuple[Callable[[], None], Callable[[], None]]]] = {
    "toolkit Client (sequential)": toolkit_sync,
    "bare httpx.Client (sequential)": httpx_sync,
}
ASYNC_CASES: dict[str, AsyncSetup] = {
    "toolkit AsyncClient (32 concurrent)": toolkit_async,
    "bare aiohttp ClientSession (32 concurrent)": aiohttp_async,
    "bare httpx.AsyncClient (32 concurrent, reference)": httpx_async,
}


def measure(case: str, url: str, args: argparse.Namespace) -> Result:
    if case in SYNC_CASES:
        done, seconds = run_sync(SYNC_CASES[case], url, args.requests, args.warmup, args.time_cap)
    else:
        done, seconds = run_async(
            ASYNC_CASES[case], url, args.requests, args.warmup, args.time_cap, args.concurrency
        )
    return Result(case, done, seconds)


def report(results: dict[str, list[Result]], args: argparse.Namespace) -> bool:
    median = {case: statistics.median(r.rate for r in rounds) for case, rounds in results.items()}
    width = max(len(case) for case in median)
    print(f"\n{'case'.ljust(width)}  {'req/s (median)':>14}  {'min':>8}  {'max':>8}  requests x rounds")
    for case, rounds in results.items():
        rates = [r.rate for r in rounds]
        print(
            f"{case.ljust(width)}  {median[case]:>14,.0f}  {min(rates):>8,.0f}  {max(rates):>8,.0f}"
            f"  {rounds[0].requests} x {len(rounds)}"
        )
    ok = True
    print("\ntargets (issue 2):")
    for ours, bare in [
        ("toolkit AsyncClient (32 concurrent)", "bare aiohttp ClientSession (32 concurrent)"),
        ("toolkit Client (sequential)", "bare httpx.Client (sequential)"),
    ]:
        if ours not in median or bare not in median:
            continue
        ratio = median[ours] / median[bare]
        verdict = "MET" if ratio >= TARGET else "MISSED"
        ok = ok and ratio >= TARGET
        print(f"  {ours} / {bare}: {ratio:.0%} (target >= {TARGET:.0%}) {verdict}")
    reference = "bare httpx.AsyncClient (32 concurrent, reference)"
    if reference in median and "bare aiohttp ClientSession (32 concurrent)" in median:
        print(
            f"  reference: bare httpx.AsyncClient / bare aiohttp: "
            f"{median[reference] / median['bare aiohttp ClientSession (32 concurrent)']:.0%}"
        )
    return ok


def profile(url: str, args: argparse.Namespace) -> None:
    for case in ("toolkit Client (sequential)", "toolkit AsyncClient (32 concurrent)"):
        profiler = cProfile.Profile()
        profiler.enable()
        measure(case, url, args)
        profiler.disable()
        for order in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(25)
            print(f"\n===== cProfile {case}, by {order} =====")
            print("\n".join(out.getvalue().splitlines()[:45]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=3000, help="requests per case and round")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--time-cap", type=float, default=20.0, help="seconds per case and round, at most")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names to run")
    parser.add_argument("--profile", action="store_true", help="also cProfile the toolkit cases")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve())
        return 0

    cases = [*SYNC_CASES, *ASYNC_CASES]
    if args.cases:
        wanted = [w.strip().lower() for w in args.cases.split(",")]
        cases = [c for c in cases if any(w in c.lower() for w in wanted)]
    process, url = start_server()
    print(
        f"server pid {process.pid} at {url}; client pid {os.getpid()}; {os.cpu_count()} CPUs; "
        f"{args.requests} requests x {args.rounds} rounds per case, warm-up {args.warmup}, "
        f"cap {args.time_cap:.0f} s",
        flush=True,
    )
    try:
        results: dict[str, list[Result]] = {case: [] for case in cases}
        for round_ in range(args.rounds):
            for case in cases:
                result = measure(case, url, args)
                results[case].append(result)
                print(
                    f"  round {round_ + 1}: {case}: {result.requests} in {result.seconds:.2f} s "
                    f"= {result.rate:,.0f} req/s",
                    flush=True,
                )
        ok = report(results, args)
        if args.profile:
            profile(url, args)
    finally:
        stop_server(process)
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
