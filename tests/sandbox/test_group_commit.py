"""Group commit (``Database.write_soon``): the writes asked for on one turn of the event loop are
done together in one transaction; each is answered only once it is committed, and one that fails
takes back only its own rows."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from toolkit.sandbox.db import Database


def _insert(key: str) -> Callable[[sqlite3.Connection], str]:
    def work(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, 'x')", (key,))
        return key

    return work


def _committed(db: Database, prefix: str) -> set[str]:
    """The keys another connection sees: what is committed."""
    with closing(sqlite3.connect(db.path)) as other:
        return {row[0] for row in other.execute("SELECT key FROM meta WHERE key LIKE ?", (f"{prefix}%",))}


def test_writes_ready_together_share_one_commit(tmp_path: Path) -> None:
    db = Database(tmp_path / "g.sqlite")
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)

    async def main() -> list[str]:
        return await asyncio.gather(*(db.write_soon(_insert(f"k{i}")) for i in range(20)))

    assert asyncio.run(main()) == [f"k{i}" for i in range(20)]
    assert statements.count("COMMIT") == 1 and statements.count("BEGIN IMMEDIATE") == 1
    assert _committed(db, "k") == {f"k{i}" for i in range(20)}
    db.close()


def test_a_failing_write_takes_back_only_its_own_rows(tmp_path: Path) -> None:
    db = Database(tmp_path / "g.sqlite")

    def failing(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO meta(key, value) VALUES ('bad', 'x')")
        raise ValueError("refused")

    async def main() -> tuple[str | BaseException, ...]:
        return await asyncio.gather(
            db.write_soon(_insert("a")),
            db.write_soon(failing),
            db.write_soon(_insert("b")),
            return_exceptions=True,
        )

    first, second, third = asyncio.run(main())
    assert (first, third) == ("a", "b") and isinstance(second, ValueError)
    assert _committed(db, "") >= {"a", "b"} and "bad" not in _committed(db, "")
    db.close()


def test_a_write_is_answered_only_once_committed(tmp_path: Path) -> None:
    """Until its group is done, nothing sees the row (the read cache's connection included);
    taking the connection for anything else does the waiting writes first."""
    db = Database(tmp_path / "g.sqlite")

    async def main() -> None:
        pending = asyncio.ensure_future(db.write_soon(_insert("late")))
        await asyncio.sleep(0)  # the write is asked for; its group is done after this turn
        assert not pending.done()
        assert _committed(db, "late") == set()
        assert db.reader.execute("SELECT count(*) FROM meta WHERE key = 'late'").fetchone()[0] == 0
        assert db.conn.execute("SELECT count(*) FROM meta WHERE key = 'late'").fetchone()[0] == 1
        assert _committed(db, "late") == {"late"}  # taking ``conn`` committed the group
        assert await pending == "late"

    asyncio.run(main())
    db.close()


def test_a_write_whose_caller_is_gone_is_not_done(tmp_path: Path) -> None:
    """A caller cancelled before its group's turn (a client that hung up) writes nothing; the
    other writes of the group are done and answered."""
    db = Database(tmp_path / "g.sqlite")

    async def main() -> str:
        first = asyncio.ensure_future(db.write_soon(_insert("w1")))
        second = asyncio.ensure_future(db.write_soon(_insert("w2")))
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second

    assert asyncio.run(main()) == "w2"
    assert _committed(db, "w") == {"w2"}
    db.close()
