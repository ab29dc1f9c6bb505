"""The SQLite file mechanics the journal and the tracking store share: made whole, refused when not
sound, written under the write lock.

Both files are records a user relies on (what was sent; what was acknowledged), so both fail
closed the same way: a new file appears under its name whole or not at all, an existing file is
used only when SQLite finds it sound (``quick_check``) and the caller recognises it as its own, and
every write takes the lock up front (``BEGIN IMMEDIATE``) and is committed or rolled back whole.

The errors here are small and worded by nobody: ``CreateFailed`` and ``Refused`` carry what went
wrong, and each caller raises its own error (``JournalError``, ``TrackError``) in its own words.
Standard library and ``outputs`` only: the tracking store imports this, and its commands start
without pandas.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Literal

from toolkit.outputs import new_file_beside

#: Why an existing file is refused: SQLite cannot open it, fails reading it, the caller's check
#: does not recognise it, or it is damaged (``quick_check`` finds fault, or a read finds it malformed).
Problem = Literal["unopenable", "unreadable", "foreign", "damaged"]

#: The files SQLite keeps beside a database while it is open (or after a crash).
_SIDE_FILES = ("-wal", "-shm", "-journal")


class CreateFailed(Exception):
    """A new file could not be made; nothing was left under its name.

    ``reason`` is the cause in words (the system's ``strerror`` when there is one); ``error`` is the
    exception itself, for a caller that words it otherwise.
    """

    def __init__(self, path: Path, error: OSError | sqlite3.Error) -> None:
        self.path = path
        self.error = error
        self.reason = (error.strerror if isinstance(error, OSError) else None) or str(error)
        super().__init__(f"{path}: {self.reason}")


class Refused(Exception):
    """An existing file that is not used: ``problem`` says which check refused it, ``reason`` why
    (SQLite's message, the caller's identity check's words, or ``quick_check``'s first finding),
    and ``error`` is SQLite's own exception when it raised one."""

    def __init__(self, path: Path, problem: Problem, reason: str, error: sqlite3.Error | None = None) -> None:
        self.path = path
        self.problem = problem
        self.reason = reason
        self.error = error
        super().__init__(f"{path}: {problem}: {reason}")


def create(path: Path, build: Callable[[sqlite3.Connection], None]) -> None:
    """Make a new database at ``path`` with ``build``, atomically; a file already there is kept.

    ``build`` runs in a uniquely named file beside ``path`` (mode 0600: records of payments and
    sign-offs are the user's own), which is synced and then hard-linked into place: the link never
    replaces an existing file, so a half-made database is never seen under ``path``, and another
    process that made it first simply wins. The new file is in WAL mode already.
    Raises ``CreateFailed``; an exception of ``build`` propagates; either way nothing is left behind.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = new_file_beside(path, mode=0o600, suffix="new")
    except OSError as exc:
        raise CreateFailed(path, exc) from None
    try:
        with closing(sqlite3.connect(temporary, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            build(db)
        _fsync(temporary)  # closing the last connection checkpointed the WAL into the file
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
        _fsync_folder(path.parent)
    except (OSError, sqlite3.Error) as exc:
        raise CreateFailed(path, exc) from None
    finally:
        for leftover in (temporary, *(Path(f"{temporary}{side}") for side in _SIDE_FILES)):
            leftover.unlink(missing_ok=True)


def open_existing(
    path: Path,
    *,
    identify: Callable[[sqlite3.Connection], str | None],
    busy_seconds: float,
    threads: bool = False,
) -> sqlite3.Connection:
    """Open the database at ``path``, which must exist (SQLite is never let to make an empty one),
    refusing it unless it is sound and the caller's own.

    ``identify`` returns None for a file of the caller's kind, else why not in words (a missing
    table, an empty file). Then ``quick_check`` must say ``ok``, and the file is put in WAL mode
    with full sync, the connection waiting ``busy_seconds`` for another writer's lock. ``threads``
    lets threads of one process share the connection (SQLite serialises them). Raises ``Refused``
    and closes the connection on any failure; the file is not written before it passed both checks.
    """
    try:
        db = sqlite3.connect(
            f"{path.absolute().as_uri()}?mode=rw",
            uri=True,
            timeout=busy_seconds,
            isolation_level=None,
            check_same_thread=not threads,
        )
    except sqlite3.Error as exc:
        raise Refused(path, "unopenable", str(exc), exc) from None
    try:
        _check_and_prepare(db, path, identify)
    except BaseException:
        db.close()
        raise
    return db


def _check_and_prepare(
    db: sqlite3.Connection, path: Path, identify: Callable[[sqlite3.Connection], str | None]
) -> None:
    try:
        foreign = identify(db)
        if foreign is not None:
            raise Refused(path, "foreign", foreign)
        damage = _first_finding(db.execute("PRAGMA quick_check").fetchall())
        if damage is not None:
            raise Refused(path, "damaged", damage)
        db.execute("PRAGMA journal_mode=WAL")  # a file made before WAL was the rule is moved to it
        db.execute("PRAGMA synchronous=FULL")  # a commit survives a power loss, not only a crash
    except sqlite3.Error as exc:
        damaged = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_CORRUPT  # "malformed", not "busy"
        raise Refused(path, "damaged" if damaged else "unreadable", str(exc), exc) from None


def _first_finding(rows: list[tuple[object, ...]]) -> str | None:
    """``quick_check``'s first finding on one line (it may list a hundred, under a heading line),
    with how many more; None when it says ``ok``."""
    findings = [
        line.strip()
        for (text, *_) in rows
        for line in str(text).splitlines()
        if line.strip() and not line.startswith("***")
    ]
    if findings == ["ok"]:
        return None
    if not findings:
        return "quick_check gave no answer"
    more = f" and {len(findings) - 1} more finding(s)" if len(findings) > 1 else ""
    return findings[0] + more


@contextmanager
def write(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the file's write lock from its start (``BEGIN IMMEDIATE``):
    two writers take turns instead of deadlocking midway. Committed when the block ends; rolled
    back when it raises, and the block's error is the one raised (a failed rollback is not: the
    failure may have ended the transaction already). SQLite's errors propagate as they are."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_folder(folder: Path) -> None:
    """Make the new name durable; where folders cannot be opened (Windows), the link stands as is."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
