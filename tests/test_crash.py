"""Crash safety across processes: kill -9 mid-batch, re-run, and nothing is charged twice or lost;
two processes writing one journal at once neither lock up nor duplicate."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, wait_until_answering
from toolkit.journal import UNKNOWN_STATES, Journal

pytestmark = pytest.mark.slow

KEY = "sk_test_crash_harness"
WORKER = str(Path(__file__).with_name("crash_worker.py"))

#: Polling for a kill point: short sleeps, bounded both in count and in wall-clock time.
POLL_SECONDS = 0.005
MAX_POLLS = 20_000
ROUND_SECONDS = 120.0


@pytest.fixture
def sandbox_process(tmp_path: Path) -> Iterator[str]:
    """``toolkit sandbox`` in its own process, so killing a client leaves the server running."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolkit.cli",
            "sandbox",
            "--port",
            str(port),
            "--db",
            str(tmp_path / "sandbox.sqlite"),
            "--api-key",
            KEY,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(url + "/openapi.json")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def exported(url: str) -> list[str]:
    """The merchantReferenceIds the server holds, from its export: what was really charged."""
    headers = {"X-API-KEY": KEY, "X-Timestamp": str(int(time.time() * 1000))}
    data = httpx.get(url + "/sandbox/payments", params={"format": "json"}, headers=headers).json()["data"]
    return [str(p["merchantReferenceId"]) for p in data["payments"]]


def worker(url: str, home: Path, count: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TOOLKIT_BASE_URL": url, "TOOLKIT_API_KEY": KEY, "TOOLKIT_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, WORKER, str(count)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def journal_of(home: Path) -> Journal:
    (path,) = (home / "journal").glob("*.sqlite")
    return Journal(path, environment="crash test")


def journaled(home: Path) -> int | None:
    """How many payments the journal holds (each is written before it is sent); 0 before the file exists.

    Read with plain sqlite3, read-only, never through ``Journal``: polling must not create or alter
    the file the worker is writing. None when this look could not read it (the worker holds a lock).
    """
    paths = sorted((home / "journal").glob("*.sqlite"))
    if not paths:
        return 0
    try:
        with closing(sqlite3.connect(f"{paths[0].as_uri()}?mode=ro", uri=True, timeout=1)) as db:
            row = db.execute("SELECT count(*) FROM calls WHERE kind = 'payment'").fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0])


def kill_at(process: subprocess.Popen[bytes], home: Path, target: int) -> int | None:
    """SIGKILL the worker as soon as the journal holds ``target`` payments, not at a wall-clock moment,
    so the kill lands mid-batch on any machine. Returns the count seen, or None if it never got there."""
    deadline = time.monotonic() + ROUND_SECONDS
    for _ in range(MAX_POLLS):
        if process.poll() is not None or time.monotonic() > deadline:
            return None
        seen = journaled(home)
        if seen is not None and seen >= target:
            process.send_signal(signal.SIGKILL)
            return seen
        time.sleep(POLL_SECONDS)
    return None


def test_kill_9_at_random_points_then_rerun(sandbox_process: str, tmp_path: Path) -> None:
    home, count, rng = tmp_path / "home", 500, random.Random(7)
    for round_ in range(4):
        before = journaled(home)
        assert before is not None and before < count, (round_, before)
        # At most half of what remains, so four rounds still leave a batch to interrupt.
        target = before + max(1, round(rng.uniform(0.05, 0.5) * (count - before)))
        process = worker(sandbox_process, home, count)
        seen = kill_at(process, home, target)
        _, err = process.communicate(timeout=60)
        where = f"round {round_}: target {target}, seen {seen}, {err.decode()[-2000:]}"
        # Died of this SIGKILL: it was still running, not finished or failed on its own.
        assert seen is not None and process.returncode == -signal.SIGKILL, where
        after = journaled(home)
        assert after is not None and after < count, (after, where)
        assert len(set(exported(sandbox_process))) < count, where

    final = worker(sandbox_process, home, count)
    _, err = final.communicate(timeout=240)
    assert final.returncode == 0, err.decode()[-2000:]

    at_server = Counter(exported(sandbox_process))
    assert [key for key, n in at_server.items() if n > 1] == []
    with journal_of(home) as journal:
        assert journal.integrity_check() == "ok"
        records = {r.key: r for r in journal.records("payment")}
    assert len(records) == count
    for key, record in records.items():
        assert record.state in ("succeeded", *UNKNOWN_STATES), (key, record.state)
        if key not in at_server:
            assert record.state in UNKNOWN_STATES, key
    assert set(at_server) <= set(records)


def test_two_processes_writing_one_journal(sandbox_process: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    processes = [worker(sandbox_process, home, 200) for _ in range(2)]
    outputs = [p.communicate(timeout=240) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err.decode()[-2000:]
        assert b"database is locked" not in err
    at_server = Counter(exported(sandbox_process))
    assert len(at_server) == 200 and max(at_server.values()) == 1
    with journal_of(home) as journal:
        assert len(journal.records("payment")) == 200
