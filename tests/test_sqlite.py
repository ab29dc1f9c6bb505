"""The SQLite files the toolkit keeps (the journal, the tracking store) behave alike: made whole or
not at all, refused when they are not sound, written one writer at a time, rolled back on failure.

Each behaviour is checked through both the journal and the tracking store (``KINDS``), and the
mechanics once more through ``toolkit._sqlite`` where a failure has to be staged.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from toolkit import _sqlite
from toolkit.errors import JournalError, TrackError
from toolkit.journal import _SCHEMA as JOURNAL_SCHEMA
from toolkit.journal import Journal
from toolkit.reconcile import audit
from toolkit.reconcile.tracking import store as track_store
from toolkit.reconcile.tracking.store import Store, store_path


@dataclass(frozen=True)
class Kind:
    """One kind of file the toolkit keeps, seen the way its users see it."""

    path: Callable[[Path], Path]
    open: Callable[[Path], Any]
    connection: Callable[[Any], sqlite3.Connection]
    error: type[Exception]
    #: The schema a file of this kind had when it was made before WAL was the rule.
    schema: str
    #: One write, through the kind's own API; ``n`` makes each one different.
    write_one: Callable[[Any, int], None]
    #: The kind's write transaction, for a block that fails midway.
    transaction: Callable[[Any], AbstractContextManager[object]]
    #: One write inside a transaction already open (``transaction``).
    write_inside: Callable[[Any, int], None]
    #: What the kind's users see of the records written.
    records: Callable[[Any], list[str]]


def _journal_path(home: Path) -> Path:
    return home / "journal" / "test.sqlite"


def _journal_write(journal: Journal, n: int) -> None:
    journal.begin("payment", f"K-{n}", b'{"merchantReferenceId": "K-%d"}' % n)


def _store_write(store: Store, n: int) -> None:
    with store.writing():
        store.append(f"t{n}", "track", {"track": f"t{n}"}, [])


KINDS = {
    "journal": Kind(
        path=_journal_path,
        open=lambda home: Journal(_journal_path(home), environment="test"),
        connection=lambda journal: journal._db,
        error=JournalError,
        schema=JOURNAL_SCHEMA,
        write_one=_journal_write,
        transaction=lambda journal: journal._write(),
        write_inside=lambda journal, n: journal._db.execute(
            "INSERT INTO calls (kind, businessKey, requestHash, request, state, requestTime) "
            "VALUES ('payment', ?, '', '{}', 'sending', 0)",
            (f"K-{n}",),
        ),
        records=lambda journal: [r.key for r in journal.records()],
    ),
    "store": Kind(
        path=store_path,
        open=lambda home: Store.open(home, create=True),
        connection=lambda store: store.connection,
        error=TrackError,
        schema=track_store._SCHEMA,
        write_one=_store_write,
        transaction=lambda store: store.writing(),
        write_inside=lambda store, n: store.append(f"t{n}", "track", {"track": f"t{n}"}, []),
        records=lambda store: store.tracks(),
    ),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> Kind:
    return KINDS[request.param]


def one_line_naming(error: BaseException, path: Path) -> str:
    message = str(error)
    assert str(path) in message and "\n" not in message, message
    return message


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def tables(script: str) -> Callable[[sqlite3.Connection], None]:
    """A ``build`` for ``_sqlite.create`` that runs ``script``."""

    def build(db: sqlite3.Connection) -> None:
        db.executescript(script)

    return build


def journal_mode(path: Path) -> str:
    """The mode the file itself records (header bytes 18-19: 1 rollback journal, 2 WAL)."""
    header = path.read_bytes()[:20]
    return {(1, 1): "rollback", (2, 2): "wal"}.get((header[18], header[19]), "unknown")


# -- a new file appears whole, private, in WAL mode -----------------------------------------------


def test_a_new_file_is_whole_private_and_in_wal_mode(kind: Kind, tmp_path: Path) -> None:
    with closing(kind.open(tmp_path)) as opened:
        assert kind.connection(opened).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        kind.write_one(opened, 1)
    path = kind.path(tmp_path)
    assert journal_mode(path) == "wal"  # kept in the file: every later connection is in WAL too
    if sys.platform != "win32":
        assert path.stat().st_mode & 0o777 == 0o600  # payments and sign-offs are the user's own
    assert not [name for name in leftovers(path.parent) if name.endswith(".new")]
    with closing(kind.open(tmp_path)) as again:
        assert kind.records(again) != []


def test_a_file_made_before_wal_was_the_rule_is_moved_to_it(kind: Kind, tmp_path: Path) -> None:
    path = kind.path(tmp_path)
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as db:
        db.executescript(kind.schema)
    assert journal_mode(path) == "rollback"
    with closing(kind.open(tmp_path)) as opened:
        assert kind.connection(opened).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert journal_mode(path) == "wal"


def test_a_file_that_cannot_be_linked_into_place_leaves_nothing(
    kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step fails (a full disk, a file system that refuses): no file, whole or half."""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", refuse)
    with pytest.raises(kind.error) as raised:
        kind.open(tmp_path)
    path = kind.path(tmp_path)
    assert "No space left on device" in one_line_naming(raised.value, path)
    assert leftovers(path.parent) == []  # neither the file nor the one it was built in


def test_a_new_file_is_in_wal_mode_from_the_moment_it_appears(tmp_path: Path) -> None:
    """A reader that opens it read-only (a poll, ``toolkit journal list``) never has to convert it."""
    path = tmp_path / "store.sqlite"
    _sqlite.create(path, tables("CREATE TABLE t (a);"))
    assert journal_mode(path) == "wal" and leftovers(tmp_path) == ["store.sqlite"]


def test_a_build_that_fails_midway_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"

    def broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half (a)")
        db.execute("INSERT INTO nowhere VALUES (1)")

    with pytest.raises(_sqlite.CreateFailed) as raised:
        _sqlite.create(path, broken)
    assert raised.value.path == path and "nowhere" in raised.value.reason
    assert leftovers(tmp_path) == []

    def interrupted(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half (a)")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _sqlite.create(path, interrupted)
    assert leftovers(tmp_path) == []


def test_a_file_another_process_made_meanwhile_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"

    def loses_the_race(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE mine (a)")
        path.write_bytes(b"theirs")

    _sqlite.create(path, loses_the_race)
    assert path.read_bytes() == b"theirs"
    assert leftovers(tmp_path) == ["store.sqlite"]


@pytest.fixture
def immutable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder where no file can be made, even by root (``chattr +i``); undone after the test."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if shutil.which("chattr") is None:
        pytest.skip("no chattr here to make a folder unwritable for root")
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i refused here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


def test_a_folder_that_cannot_be_written_gets_no_file_and_one_line(
    kind: Kind, immutable_folder: Path
) -> None:
    home = immutable_folder  # the kind's own folder cannot be made in it either
    with pytest.raises(kind.error) as raised:
        kind.open(home)
    one_line_naming(raised.value, kind.path(home))
    assert leftovers(home) == []


# -- an existing file that is not a sound store is refused, and left as it was ---------------------


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _not_sqlite(path: Path) -> None:
    path.write_bytes(b"garbage " * 1000)


def _another_application(path: Path) -> None:
    """A sound SQLite database of something else, in rollback mode: opening it must not even
    switch it to WAL, which would write to it."""
    path.unlink()
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE something_else (a)")
        db.execute("INSERT INTO something_else VALUES (1)")
        db.commit()


def _damaged(path: Path) -> None:
    """A store whose first page (its tables) reads well and whose data pages do not: only SQLite's
    own check (quick_check) tells, before a single record is read or written."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE padding (n INTEGER PRIMARY KEY, text TEXT)")
        db.execute("CREATE INDEX padding_text ON padding (text)")
        db.executemany(
            "INSERT INTO padding (text) VALUES (?)", [(f"{n:05d}" + "x" * 200,) for n in range(400)]
        )
        db.commit()
    data = bytearray(path.read_bytes())
    page = 4096
    middle = (len(data) // page // 2) * page
    data[middle : middle + page] = random.Random(35).randbytes(page)
    path.write_bytes(bytes(data))
    assert not sound(path)  # the damage is real


def sound(path: Path) -> bool:
    """SQLite's own verdict on the file, read-only."""
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        try:
            return bool(db.execute("PRAGMA quick_check").fetchone()[0] == "ok")
        except sqlite3.DatabaseError:
            return False


@pytest.mark.parametrize("damage", [_empty, _not_sqlite, _another_application, _damaged])
def test_a_file_that_is_not_a_sound_store_is_refused_and_left_as_it_was(
    kind: Kind, damage: Callable[[Path], None], tmp_path: Path
) -> None:
    kind.open(tmp_path).close()
    path = kind.path(tmp_path)
    damage(path)
    before, inode = path.read_bytes(), path.stat().st_ino
    with pytest.raises(kind.error) as raised:
        kind.open(tmp_path)
    one_line_naming(raised.value, path)
    assert path.read_bytes() == before and path.stat().st_ino == inode  # not rebuilt, not converted


def test_a_damaged_store_is_refused_by_quick_check_whatever_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    _sqlite.create(path, tables(""))
    _damaged(path)
    with pytest.raises(_sqlite.Refused) as raised:
        _sqlite.open_existing(path, identify=lambda db: None, busy_seconds=1)
    assert raised.value.problem == "damaged" and "\n" not in raised.value.reason


def test_a_missing_file_is_refused_not_made(tmp_path: Path) -> None:
    path = tmp_path / "gone.sqlite"
    with pytest.raises(_sqlite.Refused) as raised:
        _sqlite.open_existing(path, identify=lambda db: None, busy_seconds=1)
    assert raised.value.problem == "unopenable" and not path.exists()


# -- one writer at a time; a failed write leaves nothing ---------------------------------------------


def test_a_second_writer_waits_for_the_first_from_the_start_of_its_transaction(
    kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is taken when the transaction begins (BEGIN IMMEDIATE), not at its first write:
    a writer that has not written yet already keeps the other one out."""
    monkeypatch.setattr(track_store, "BUSY_SECONDS", 0.2)
    monkeypatch.setattr("toolkit.journal.BUSY_SECONDS", 0.2)
    with closing(kind.open(tmp_path)) as first, closing(kind.open(tmp_path)) as second:
        with kind.transaction(first):
            with pytest.raises(kind.error) as raised:
                kind.write_one(second, 1)
            assert "locked" in one_line_naming(raised.value, kind.path(tmp_path))
        kind.write_one(second, 2)  # its turn now
        assert kind.records(first) == kind.records(second) != []


def test_two_writers_take_turns_and_lose_no_update(tmp_path: Path) -> None:
    """Read, then write, in each of two connections at once: with the lock taken up front they take
    turns; a transaction that took it only at its write would fail or lose an update."""
    path = tmp_path / "counter.sqlite"
    _sqlite.create(path, tables("CREATE TABLE counter (n); INSERT INTO counter VALUES (0);"))
    errors: list[BaseException] = []
    ready = threading.Barrier(2)

    def count(times: int) -> None:
        db = _sqlite.open_existing(path, identify=lambda db: None, busy_seconds=30)
        try:
            ready.wait()
            for _ in range(times):
                with _sqlite.write(db):
                    (n,) = db.execute("SELECT n FROM counter").fetchone()
                    threading.Event().wait(0.001)
                    db.execute("UPDATE counter SET n = ?", (n + 1,))
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=count, args=(40,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT n FROM counter").fetchone() == (80,)


def test_a_write_that_fails_midway_records_nothing(kind: Kind, tmp_path: Path) -> None:
    with closing(kind.open(tmp_path)) as opened:
        kind.write_one(opened, 1)
        with pytest.raises(RuntimeError, match="midway"), kind.transaction(opened):
            kind.write_inside(opened, 2)
            raise RuntimeError("midway")
        assert not kind.connection(opened).in_transaction
        kind.write_one(opened, 3)  # the lock was given back
    with closing(kind.open(tmp_path)) as again:
        assert sorted(kind.records(again)) in (["K-1", "K-3"], ["t1", "t3"])
    if kind is KINDS["store"]:
        assert audit.saved_head(kind.path(tmp_path), "t2") is None


class _RollbackFails(sqlite3.Connection):
    """A connection whose ROLLBACK fails, as it may on a disk gone bad."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "ROLLBACK":
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)


def test_a_failed_write_keeps_its_own_error_when_the_rollback_fails_too(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    _sqlite.create(path, tables("CREATE TABLE t (a);"))
    with (
        closing(sqlite3.connect(path, isolation_level=None, factory=_RollbackFails)) as db,
        pytest.raises(ValueError, match="the block's own"),
        _sqlite.write(db),
    ):
        db.execute("INSERT INTO t VALUES (1)")
        raise ValueError("the block's own error")


def test_a_failed_write_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    _sqlite.create(path, tables("CREATE TABLE t (a); CREATE TABLE u (a UNIQUE); INSERT INTO u VALUES (1);"))
    with closing(_sqlite.open_existing(path, identify=lambda db: None, busy_seconds=1)) as db:
        with pytest.raises(sqlite3.IntegrityError), _sqlite.write(db):
            db.execute("INSERT INTO t VALUES (1)")
            db.execute("INSERT INTO u VALUES (1)")  # u's UNIQUE refuses it: SQLite's own error
        assert db.execute("SELECT count(*) FROM t").fetchone() == (0,) and not db.in_transaction
