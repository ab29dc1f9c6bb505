"""The sandbox's database holds its generated API key and customers' e-mails: under the usual umask
(0o022) it, its -wal and -shm files are made 0600 and a folder made for it 0700 (issue 34); SQLite
alone made them 0644 and 0755, readable by every user of the machine."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from tests.sandbox.conftest import SandboxAuth
from toolkit.models import to_json_bytes
from toolkit.sandbox.db import Database
from toolkit.sandbox.embedded import start_server

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most accounts have (files 0644, folders 0755 unless asked otherwise)."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_served_sandbox_keeps_its_key_and_customers_to_its_owner(tmp_path: Path, usual_umask: None) -> None:
    folder = tmp_path / "made" / "for-it"
    database = folder / "sandbox.sqlite"
    running = start_server(db_path=database)  # no key given: one is generated and stored
    try:
        body = {
            "customerEmail": "private@example.com",
            "paymentMethodType": "CARD",
            "paymentInstrumentId": "pi_test_success",
            "amount": Decimal("10.00"),
            "currency": "USD",
            "returnUrl": "https://shop.example/r",
        }
        auth = SandboxAuth(running.api_key.get_secret_value())
        with httpx.Client(base_url=running.base_url, auth=auth) as http:
            answer = http.post(
                "/payment", content=to_json_bytes(body), headers={"Content-Type": "application/json"}
            )
        assert answer.status_code == 200, answer.text
        files = {name: Path(f"{database}{name}") for name in ("", "-wal", "-shm")}
        assert all(path.exists() for path in files.values())  # WAL mode, connections open
        assert {name: oct(mode(path)) for name, path in files.items()} == {
            "": "0o600",
            "-wal": "0o600",
            "-shm": "0o600",
        }
        assert oct(mode(folder)) == oct(mode(folder.parent)) == "0o700"
    finally:
        running.stop()


def test_opening_the_store_makes_a_private_file_and_leaves_an_existing_folder_as_it_is(
    tmp_path: Path, usual_umask: None
) -> None:
    tmp_path.chmod(0o755)
    database = tmp_path / "store.sqlite"
    db = Database(database)
    try:
        with db.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES ('probe', 'x')")
        assert oct(mode(database)) == oct(mode(Path(f"{database}-wal"))) == "0o600"
        assert oct(mode(tmp_path)) == "0o755"  # not a folder it made
    finally:
        db.close()


def test_an_existing_database_keeps_the_mode_it_was_given(tmp_path: Path, usual_umask: None) -> None:
    database = tmp_path / "shared.sqlite"
    Database(database).close()
    database.chmod(0o640)  # given to a group on purpose
    Database(database).close()
    assert oct(mode(database)) == "0o640"
