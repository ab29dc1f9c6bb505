"""Shared fixtures: no test depends on the developer's shell, and each gets its own TOOLKIT_HOME.

``sandbox`` is a real sandbox server on 127.0.0.1 (one per test session, its own database);
tests that share it use unique merchantReferenceIds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from toolkit import AsyncClient, Client
from toolkit.notebooks import import_jsonschema_without_iri_grammar
from toolkit.sandbox.embedded import RunningSandbox, start_server

# jsonschema (schemathesis and nbformat check with it) without the RFC 3987 grammar it builds at
# import: 1.3 s of every xdist worker's collection, for the ``iri`` formats no schema here has.
import_jsonschema_without_iri_grammar()

# The Spark JVMs of the tests (each worker's session, and the commands they run) compile with the
# JIT's first tier only: a test's run is too short for the second tier's code to pay for its
# compiling, which took a third of their CPU (tests/reconcile/test_backends.py's planted and files
# tests: 99 s of JVM CPU with both tiers, 65 s with the first). A shell's own setting stays.
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell")


def _runs_spark(item: pytest.Item) -> bool:
    """Whether a test uses the worker's Spark session (or may: its name says Spark)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return (
        "spark" in item.name.lower()
        or "spark" in getattr(item, "fixturenames", ())
        # Only text is compared: == on an array or a frame given as a parameter is elementwise.
        or any(isinstance(value, str) and value == "pyspark" for value in params)
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Spark tests first, in their order (pytest's grouping by backend kept): under xdist's
    worksteal, the worker whose share begins with them runs them all, on one JVM, while the
    other steals from the end of that share. In collection order, a worker that ran dry stole
    Spark tests too and started a second JVM: about 20 s of CPU, and the first Spark run on a
    JVM takes 18-20 s against 5-8 s once it is warm."""
    items[:] = sorted(items, key=lambda item: not _runs_spark(item))


@pytest.fixture(autouse=True)
def _clean_toolkit_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("TOOLKIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TOOLKIT_HOME", str(tmp_path / "toolkit-home"))
    yield


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    server = start_server(db_path=tmp_path_factory.mktemp("sandbox") / "sandbox.sqlite")
    yield server
    server.stop()


@pytest.fixture
def client(sandbox: RunningSandbox) -> Iterator[Client]:
    with Client(base_url=sandbox.base_url, api_key=sandbox.api_key) as c:
        yield c


@pytest.fixture
async def aclient(sandbox: RunningSandbox) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(base_url=sandbox.base_url, api_key=sandbox.api_key) as c:
        yield c


@pytest.fixture
def unique() -> str:
    """A fresh suffix for merchantReferenceIds, so tests sharing the sandbox never collide."""
    return uuid.uuid4().hex[:10]


def exported_payments(sandbox: RunningSandbox) -> list[dict[str, object]]:
    """Every payment the sandbox holds, from its settlement export (what the server really received)."""
    import time

    response = httpx.get(
        f"{sandbox.base_url}/sandbox/payments",
        params={"format": "json"},
        headers={
            "X-API-KEY": sandbox.api_key.get_secret_value(),
            "X-Timestamp": str(int(time.time() * 1000)),
        },
    )
    response.raise_for_status()
    payments: list[dict[str, object]] = response.json()["data"]["payments"]
    return payments


def wait_until_answering(url: str, *, seconds: float = 30) -> None:
    """Block until an HTTP server at ``url`` answers at all (a sandbox started as a subprocess)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {seconds} s")


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
