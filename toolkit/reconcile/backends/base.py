"""What every backend offers the engine, and the words for what went wrong in one.

``Backend`` holds what the backends share: the names of their tables (``temp_name``), the kept
tables dropped once nothing holds them, one query at a time, and ``failures``, which turns a
backend's resource failures into one-line ``EngineError``. Each backend's class (``duckdb.py``,
``spark.py``) says how a table is kept, registered, fetched, dropped and read from a file.
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
import pyarrow as pa

from toolkit.errors import EngineError, InputError, error_text
from toolkit.reconcile.backends.memory import size_text
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.schema import BackendName

if TYPE_CHECKING:
    from toolkit.reconcile.sources.described import Described


class Kept:
    """A table the engine computed once and reads again, by its name in the backend's SQL; it is
    dropped once nothing holds it (``Backend.keep``)."""

    __slots__ = ("__weakref__", "name")

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Kept({self.name!r})"


@dataclass
class Backend(ABC):
    """A connection the engine runs on, and what it needs to read and keep tables there."""

    #: The backend's name, as ``connect`` takes it and messages give it.
    name: ClassVar[BackendName]
    #: Whether ``connect(..., in_memory=True)`` changes where the backend keeps its tables.
    _takes_in_memory: ClassVar[bool] = False

    con: Any  # the backend's own connection (DuckDB's connection, the Spark session)
    memory_limit: int
    spill_dir: Path | None = None
    _counter: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: One query at a time: a result's rows read back later (``SpilledRows``) may be read from
    #: the report's threads, and neither connection serves two queries at once.
    _queries: threading.RLock = field(default_factory=threading.RLock)

    #: Kept tables no longer held, dropped before the next query (not in the garbage collector,
    #: which may run while a query of the same connection is under way).
    _released: list[str] = field(default_factory=list)
    _constants: dict[str, Kept] = field(default_factory=dict)

    @classmethod
    @abstractmethod
    def start(cls, limit: int, spill: Path | None, in_memory: bool) -> Backend:
        """A new connection with a memory limit of ``limit`` bytes, spilling to ``spill``."""

    def temp_name(self, stem: str) -> str:
        """A fresh name for a table or view of this connection."""
        with self._lock:
            self._counter += 1
            return f"toolkit_{stem}_{self._counter}"

    def keep(self, query: str | Relation, *, stem: str = "kept") -> Kept:
        """Compute ``query`` (DuckDB's dialect) once and keep it, as each backend keeps a table
        (``_keep``), until nothing holds it."""
        kept = Kept(self.temp_name(stem))
        with self._queries, self.failures():
            self._drop_released()
            self._keep(kept.name, str(query))
        weakref.finalize(kept, self._released.append, kept.name)
        return kept

    def register(self, table: pa.Table, *, stem: str = "memory") -> Kept:
        """An Arrow table (a few rows computed in Python: rates decided, code lists) as a table
        the engine's queries can read by name."""
        kept = Kept(self.temp_name(stem))
        with self._queries, self.failures():
            self._drop_released()
            self._register(kept.name, table)
        weakref.finalize(kept, self._released.append, kept.name)
        return kept

    def constant(self, stem: str, make: Callable[[], pa.Table]) -> Kept:
        """A table of constants (the currency codes) registered once per connection."""
        with self._lock:
            kept = self._constants.get(stem)
        if kept is None:
            kept = self.register(make(), stem=stem)
            with self._lock:
                kept = self._constants.setdefault(stem, kept)
        return kept

    def arrow(self, query: str | Relation) -> pa.Table:
        """The rows of ``query`` (DuckDB's dialect) as an Arrow table: for results small by nature."""
        with self._queries, self.failures():
            self._drop_released()
            return self._arrow(str(query))

    @abstractmethod
    def fit(self, input_bytes: int | None) -> None:
        """Settle the run's settings for inputs of ``input_bytes`` (None: unknown) before its
        first query."""

    def _drop_released(self) -> None:
        while self._released:
            self._drop(self._released.pop())

    @abstractmethod
    def read(self, described: Described, wanted: list[str]) -> Relation:
        """A file (or a table of the backend's catalog) as ``sources.read`` needs it: the columns
        ``wanted`` as the source has them, with ``_ord`` and ``source_row`` (and ``_source``, for
        a set of files)."""

    @abstractmethod
    def _keep(self, name: str, query: str) -> None:
        """Compute ``query`` into the table ``name``."""

    @abstractmethod
    def _register(self, name: str, table: pa.Table) -> None:
        """``table`` under ``name``."""

    @abstractmethod
    def _arrow(self, query: str) -> pa.Table:
        """The rows of ``query``."""

    @abstractmethod
    def _drop(self, name: str) -> None:
        """Drop the table ``name``, no longer held."""

    @contextlib.contextmanager
    def failures(self) -> Iterator[None]:
        """Turn the backend's resource failures into ``EngineError`` naming what to change."""
        try:
            yield
        except EngineError:
            raise
        except Exception as exc:
            text = error_text(exc)
            if text is None:  # a JVM that died answers nothing (it printed its own error)
                raise EngineError(
                    f"the {self.name} engine stopped in the middle of a query and cannot say why "
                    "(Spark's JVM is gone: out of heap memory, or killed; its own error is above); "
                    "raise --memory-limit, or run with --backend duckdb"
                ) from None
            if _interrupted(exc, text):  # DuckDB took the Ctrl-C to stop its query: give it back
                raise KeyboardInterrupt from None
            malformed = _SPARK_MALFORMED.search(text)
            if malformed:  # Spark reads a file when a query first needs it, not when it is named
                file, record = malformed.group(1), malformed.group(2).strip()
                raise InputError(
                    f"{file.removeprefix('file://')}: a row cannot be read (the row: {record!r}); "
                    "fix the row or export the file again"
                ) from None
            reason = _resource_failure(self, exc, text)
            if reason is None:
                raise
            raise EngineError(reason) from exc


def _interrupted(exc: Exception, text: str) -> bool:
    """Whether a query failed because the user interrupted it (DuckDB stops on SIGINT and raises
    its own error, of text ``text``, sometimes as a ``RuntimeError``)."""
    return isinstance(exc, duckdb.InterruptException) or text.startswith("Query interrupted")


def _resource_failure(backend: Backend, exc: Exception, message: str) -> str | None:
    """What ran out, in one line, or None for any other failure (a bug: shown as it is)."""
    text = f"{type(exc).__name__}: {message}"
    if "No space left on device" in text or "ENOSPC" in text:
        where = backend.spill_dir or "the temporary directory"
        return (
            f"the {backend.name} engine ran out of disk space while spilling to {where}; "
            "free space there or give --spill-dir on a disk with room"
        )
    written = _WRITE_FAILED.search(text)
    if written:
        return _write_failure(backend.name, backend.spill_dir, written.group(1))
    if "OutOfMemory" in type(exc).__name__ or "Out of Memory" in text or "OutOfMemoryError" in text:
        limit = size_text(backend.memory_limit)
        return (
            f"the {backend.name} engine ran out of its memory limit ({limit}); raise "
            "--memory-limit, or give --spill-dir on a disk with room to spill to"
        )
    return None


#: Spark's words for a CSV row it cannot split into the header's columns (``mode`` FAILFAST).
_SPARK_MALFORMED = re.compile(
    r"error while reading file (\S+?)\.?\s+SQLSTATE.*?Malformed CSV record: ([^\n]*?)\s*SQLSTATE", re.DOTALL
)

#: DuckDB's words when the kernel refuses a write (a full disk, a file size limit).
_WRITE_FAILED = re.compile(r'Could not write file "[^"]*": ([^\n]+)')


def _write_failure(name: str, spill: Path | None, reason: str) -> str:
    where = spill or "the temporary directory"
    return (
        f"the {name} engine cannot write its working files in {where} ({reason.strip()}); "
        "free space there or give --spill-dir on a disk with room"
    )
