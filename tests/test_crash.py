"""Crash safety across processes: kill -9 mid-batch, re-run, and nothing is charged twice or lost;
two processes writing one journal at once neither lock up nor duplicate."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, wait_until_answering
from toolkit.journal import UNKNOWN_STATES, Journal

pytestmark = pytest.mark.slow

KEY = "sk_test_crash_harness"
WORKER = str(Path(__file__).with_name("crash_worker.py"))


@pytest.fixture
def sandbox_process(tmp_path: Path) -> Iterator[str]:
    """``toolkit sandbox`` in its own process, so killing a client leaves the server running."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "toolkit.cli", "sandbox", "--port", str(port), "--db",
         str(tmp_path / "sandbox.sqlite"), "--api-key", KEY],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(url + "/openapi.json")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def exported(url: str) -> list[str]:
    headers = {"X-API-KEY": KEY, "X-Timestamp": str(int(time.time() * 1000))}
    data = httpx.get(url + "/sandbox/payments", params={"format": "json"}, headers=headers).json()["data"]
    return [str(p["merchantReferenceId"]) for p in data["payments"]]


def worker(url: str, home: Path, count: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TOOLKIT_BASE_URL": url, "TOOLKIT_API_KEY": KEY, "TOOLKIT_HOME": str(home)}
    return subprocess.Popen([sys.executable, WORKER, str(count)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def journal_of(home: Path) -> Journal:
    (path,) = (home / "journal").glob("*.sqlite")
    return Journal(path, environment="crash test")


def test_kill_9_at_random_points_then_rerun(sandbox_process: str, tmp_path: Path) -> None:
    home, count, rng = tmp_path / "home", 500, random.Random(7)
    kills = 0
    for _ in range(4):
        process = worker(sandbox_process, home, count)
        time.sleep(rng.uniform(1.0, 3.0))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.communicate(timeout=60)
    final = worker(sandbox_process, home, count)
    _, err = final.communicate(timeout=240)
    assert final.returncode == 0, err.decode()[-2000:]
    assert kills >= 1

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
