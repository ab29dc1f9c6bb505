"""Where the reconciliation engine runs: DuckDB, embedded (the default), or Spark.

The engine is written once, as SQL text in DuckDB's dialect, which sqlglot writes in Spark's
for Spark (``spark_sql``). A ``Backend`` gives the engine a connection, reads the sources into it
(``sources.py``), keeps the intermediate tables it reuses (``keep``), fetches small results
(``arrow``), and turns the backend's own failures (a memory limit, a full spill disk, no Java)
into one-line ``EngineError``.

DuckDB runs with a memory limit (default: ``MEMORY_SHARE`` of the machine's memory) and spills to
a directory beyond it, so inputs larger than memory reconcile on one machine: the tables it keeps
from files are tables of a database file there, and those it keeps from inputs already in memory
(frames, workbooks) stay in memory (``connect(..., in_memory=True)``). Spark comes from the
environment: ``TOOLKIT_SPARK_MASTER`` (``spark://host:7077``, ``yarn``, ``local[4]``) or
``SPARK_REMOTE`` (a Spark Connect address, ``sc://host:15002``); without either, a local session
on this machine. A session that already runs in the process (a
Databricks or Jupyter kernel with Spark) is used as it is.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit.errors import EngineError, InputError
from toolkit.reconcile.relation import Relation, literal
from toolkit.reconcile.schema import BACKENDS as BACKENDS
from toolkit.reconcile.schema import BackendName

#: DuckDB's default memory limit as a share of the machine's physical memory.
MEMORY_SHARE = 0.6
#: The share of the memory limit left to the rest of the process (Python, the Arrow results,
#: the report, what DuckDB allocates outside its buffer manager): DuckDB's own limit is the rest.
#: At 10M rows a side and a 1.5 GiB limit the process peaked at 2.1 GB without it, 1.7 with it.
RESERVE_SHARE = 0.25
#: Shuffle partitions of a local Spark session (Spark's 200 suit a cluster, not one machine).
LOCAL_SHUFFLE_PARTITIONS = 8

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory_limit(text: str) -> int:
    """``6GB``, ``500MB``, ``2g`` -> bytes, in binary units as Spark reads them (``6GB`` is 6 GiB;
    DuckDB would read it as 6 * 10**9 bytes, so it is given MiB)."""
    match = _SIZE.match(text)
    if not match:
        raise EngineError(f"--memory-limit {text!r}: write a size such as 6GB or 500MB")
    unit = (match.group(2) or "").upper()[:1]
    return int(float(match.group(1)) * _UNITS[unit])


def size_text(size: int) -> str:
    """Bytes as a person reads them, in the largest binary unit that is at least one: ``8 MiB``,
    ``1.5 GiB`` (a limit of 8MB is not ``0.0 GiB``)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def default_memory_limit() -> int:
    """``MEMORY_SHARE`` of the machine's physical memory, in bytes."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on every platform
        total = 8 << 30
    return int(total * MEMORY_SHARE)


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


@functools.lru_cache(maxsize=512)
def spark_sql(query: str) -> str:
    """A query of the engine (DuckDB's dialect) in Spark's, by sqlglot: the engine's queries are
    written once; the same query text is transpiled once per process."""
    import sqlglot

    return str(sqlglot.transpile(query, read="duckdb", write="spark")[0])


@dataclass
class Backend:
    """A connection the engine runs on, and what it needs to read and keep tables there."""

    name: BackendName
    con: Any  # DuckDB's connection, or the Spark session
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
    #: Spark's checkpointed frames of the kept tables, by name (their blocks live while they do).
    _frames: dict[str, Any] = field(default_factory=dict)
    _constants: dict[str, Kept] = field(default_factory=dict)
    _registered: set[str] = field(default_factory=set)

    def temp_name(self, stem: str) -> str:
        """A fresh name for a table or view of this connection."""
        with self._lock:
            self._counter += 1
            return f"toolkit_{stem}_{self._counter}"

    def keep(self, query: str | Relation, *, stem: str = "kept") -> Kept:
        """Compute ``query`` (DuckDB's dialect; Spark's by ``spark_sql``) once and keep it: a
        table of the DuckDB database (in memory, or in the spill directory's file), or a local
        checkpoint of Spark (its plan is its rows: no step's plan grows with the steps before)."""
        kept = Kept(self.temp_name(stem))
        with self._queries, self.failures():
            self._drop_released()
            if self.name == "pyspark":
                frame = self.con.sql(spark_sql(str(query)))
                try:
                    frame = frame.localCheckpoint(eager=True)
                except NotImplementedError:  # Spark Connect before 4.0: cached instead
                    frame = frame.cache()
                frame.createOrReplaceTempView(kept.name)
                self._frames[kept.name] = frame
            else:
                self.con.execute(f"CREATE TABLE {kept.name} AS {query}")
        weakref.finalize(kept, self._released.append, kept.name)
        return kept

    def register(self, table: pa.Table, *, stem: str = "memory") -> Kept:
        """An Arrow table (a few rows computed in Python: rates decided, code lists) as a table
        the engine's queries can read by name."""
        kept = Kept(self.temp_name(stem))
        with self._queries, self.failures():
            self._drop_released()
            if self.name == "pyspark":
                frame = self.con.createDataFrame(table)
                frame.createOrReplaceTempView(kept.name)
                self._frames[kept.name] = frame
            else:  # read where it is, not copied
                self.con.register(kept.name, table)
                self._registered.add(kept.name)
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
            if self.name == "pyspark":
                table: pa.Table = self.con.sql(spark_sql(str(query))).toArrow()
            else:
                table = self.con.sql(str(query)).to_arrow_table()
            return table

    def _drop_released(self) -> None:
        while self._released:
            name = self._released.pop()
            if self.name == "pyspark":
                self._frames.pop(name, None)
                self.con.catalog.dropTempView(name)
            elif name in self._registered:
                self._registered.discard(name)
                self.con.unregister(name)
            else:
                self.con.execute(f"DROP TABLE IF EXISTS {name}")

    @contextlib.contextmanager
    def failures(self) -> Iterator[None]:
        """Turn the backend's resource failures into ``EngineError`` naming what to change."""
        try:
            yield
        except EngineError:
            raise
        except Exception as exc:
            if _interrupted(exc):  # DuckDB took the Ctrl-C to stop its query: give it back
                raise KeyboardInterrupt from None
            malformed = _SPARK_MALFORMED.search(str(exc))
            if malformed:  # Spark reads a file when a query first needs it, not when it is named
                file, record = malformed.group(1), malformed.group(2).strip()
                raise InputError(
                    f"{file.removeprefix('file://')}: a row cannot be read (the row: {record!r}); "
                    "fix the row or export the file again"
                ) from None
            reason = _resource_failure(self, exc)
            if reason is None:
                raise
            raise EngineError(reason) from exc


def _interrupted(exc: Exception) -> bool:
    """Whether a query failed because the user interrupted it (DuckDB stops on SIGINT and raises
    its own error, sometimes as a ``RuntimeError``)."""
    return isinstance(exc, duckdb.InterruptException) or str(exc).startswith("Query interrupted")


def _resource_failure(backend: Backend, exc: Exception) -> str | None:
    """What ran out, in one line, or None for any other failure (a bug: shown as it is)."""
    text = f"{type(exc).__name__}: {exc}"
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


_CACHE: dict[tuple[str, int, str, bool], Backend] = {}
_CACHE_LOCK = threading.Lock()


def connect(
    name: str = "duckdb",
    *,
    memory_limit: str | int | None = None,
    spill_dir: str | Path | None = None,
    in_memory: bool = False,
) -> Backend:
    """A backend for the engine; one per (name, limit, spill directory, ``in_memory``) for the
    whole process.

    ``in_memory``: the inputs are in memory already (frames, workbooks), so DuckDB keeps its
    tables in memory too (spilling beyond the limit), not in the database file that only inputs
    larger than memory need. Spark ignores it.

    A Spark session takes seconds to start, so it is made once and reused; DuckDB connections
    are cheap but keep their temporary tables, so each settings combination has its own.
    """
    if name not in BACKENDS:
        raise EngineError(f"unknown backend {name!r}: use one of {', '.join(BACKENDS)}")
    limit = (
        parse_memory_limit(memory_limit)
        if isinstance(memory_limit, str)
        else memory_limit or default_memory_limit()
    )
    spill = Path(spill_dir).resolve() if spill_dir else None
    in_memory = in_memory and name == "duckdb"
    key = (name, limit, str(spill or ""), in_memory)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _duckdb(limit, spill, in_memory) if name == "duckdb" else _pyspark(limit, spill)
        return _CACHE[key]


def _duckdb(limit: int, spill: Path | None, in_memory: bool) -> Backend:
    if spill is None:  # a folder of its own, removed when the process ends
        spill = Path(tempfile.mkdtemp(prefix="toolkit-spill-"))
        atexit.register(shutil.rmtree, spill, True)
    try:
        spill.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EngineError(f"--spill-dir {spill}: cannot be created ({exc.strerror})") from None
    try:  # DuckDB finds out only when it first spills, with its own words
        tempfile.TemporaryFile(dir=spill).close()
    except OSError as exc:
        raise EngineError(f"--spill-dir {spill}: cannot be written ({exc.strerror})") from None
    raw = duckdb.connect() if in_memory else _kept_on_disk(spill)
    raw.execute(f"SET memory_limit = '{int(limit * (1 - RESERVE_SHARE)) // (1 << 20)}MiB'")
    raw.execute(f"SET temp_directory = {literal(str(spill))}")
    # DuckDB's bar, for a query that runs more than 2 s, goes to stdout: on a terminal only, not
    # into a log, a pipe or a notebook.
    raw.execute(f"SET enable_progress_bar = {'true' if sys.stdout.isatty() else 'false'}")
    raw.execute("SET TimeZone = 'UTC'")  # dates without a zone are UTC, as on Spark
    # Kept tables are written once and read a few times: plain columns write twice as fast as
    # compressed ones and read as fast (10M checked rows: 0.4 GB on disk).
    raw.execute("SET force_compression = 'uncompressed'")
    # Results are ordered explicitly where order matters; keeping the order of every
    # intermediate result costs memory and time (``sources`` turns it on to number CSV rows).
    raw.execute("SET preserve_insertion_order = false")
    return Backend("duckdb", raw, limit, spill_dir=spill)


def _kept_on_disk(spill: Path) -> duckdb.DuckDBPyConnection:
    """A connection whose kept tables (``Backend.keep``) are tables of a database file in
    ``spill`` (removed at exit): the buffer manager reads them back when it needs memory, instead
    of writing in-memory temporary tables out to its spill files first (a side's checked rows of
    10M payments take 1.6 GB as a temporary table, more than a 1.5 GB memory limit)."""
    kept = Path(tempfile.mkdtemp(prefix="toolkit-kept-", dir=spill))
    atexit.register(shutil.rmtree, kept, True)
    try:
        return duckdb.connect(str(kept / "kept.duckdb"))
    except duckdb.IOException as exc:
        written = _WRITE_FAILED.search(str(exc))
        reason = written.group(1) if written else str(exc)
        raise EngineError(_write_failure("duckdb", spill, reason)) from None


def _pyspark(limit: int, spill: Path | None) -> Backend:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineError("the pyspark backend needs pyspark: pip install 'pyspark>=4.0,<4.1'") from None
    session = SparkSession.getActiveSession()
    if session is None:
        session = _start_spark(SparkSession, limit, spill)
    return Backend("pyspark", session, limit, spill_dir=spill)


def spark_session() -> Any:
    """The process's Spark session, started from the environment when it has none (as
    ``connect("pyspark")`` does): a table named as an input is looked up in its catalog."""
    return connect("pyspark").con


def _spark_hint(remote: str | None, master: str | None) -> str:
    """What to change when Spark does not start: the Java it needs, first."""
    java_home = os.environ.get("JAVA_HOME")
    if remote:
        return "is the Spark Connect server reachable (pip install 'pyspark[connect]' for its client)?"
    if java_home and not (Path(java_home) / "bin" / "java").is_file():
        return f"JAVA_HOME {java_home} has no bin/java: point it at a Java 17."
    if not java_home and shutil.which("java") is None:
        return "no java on PATH and JAVA_HOME is not set: install Java 17."
    if master and not master.startswith("local"):
        return "is the cluster reachable at TOOLKIT_SPARK_MASTER?"
    return (
        "is TOOLKIT_SPARK_MASTER a master URL (local[4], spark://host:7077, yarn)?"
        if master
        else "is Java 17 installed?"
    )


def _start_spark(session_class: Any, limit: int, spill: Path | None) -> Any:
    """A Spark session from the environment: a master URL, Spark Connect, or local."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = session_class.builder.appName("toolkit-reconcile")
    remote = os.environ.get("SPARK_REMOTE")
    master = os.environ.get("TOOLKIT_SPARK_MASTER")
    if remote:
        builder = builder.remote(remote)
    else:
        builder = (
            builder.master(master or "local[*]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())  # a terminal's only
        )
        if not master or master.startswith("local"):
            # A local session stays on the loopback interface: Spark would otherwise bind to the
            # machine's first network address (and warn that it does).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Nothing is written where the command runs (Spark's default warehouse is ./).
            warehouse = Path(tempfile.mkdtemp(prefix="toolkit-spark-"))
            atexit.register(shutil.rmtree, warehouse, True)
            builder = (
                # The JVM's heap, like DuckDB's buffers, gets what RESERVE_SHARE leaves: the JVM
                # grows its heap to the full setting before collecting, and beside it the Python
                # process holds the results (a 14 GB heap of 24 GB was killed for memory in CI).
                builder.config("spark.driver.memory", f"{max(int(limit * (1 - RESERVE_SHARE)) >> 20, 512)}m")
                .config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
                .config("spark.sql.warehouse.dir", str(warehouse))
                .config("spark.sql.session.timeZone", "UTC")
            )
        if spill is not None:
            builder = builder.config("spark.local.dir", str(spill))
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        where = remote or master or "a local session"
        lines = str(exc).strip().splitlines()
        cause = lines[0][:200] if lines else type(exc).__name__
        hint = _spark_hint(remote, master)
        raise EngineError(
            f"Spark could not start ({where}): {cause}; {hint} Or run with --backend duckdb"
        ) from None
    if not remote:
        # Spark's warnings (a window over a whole table: the report order, by design) would fill
        # the command's output; its errors still show. A session of the user's keeps its level.
        session.sparkContext.setLogLevel("ERROR")
        _quiet_codegen_fallback(session)
    return session


#: Spark's logger of whole-stage code generation: a check's plan compiles to Java code past the
#: JVM's 64 KB method limit, and Spark then runs it interpreted, after logging the whole
#: generated class as an ERROR (400 lines on stderr for a run that succeeds).
_CODEGEN_LOGGER = "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator"


def _quiet_codegen_fallback(session: Any) -> None:
    """Turn off ``_CODEGEN_LOGGER`` (Spark goes on without the generated code, as it would)."""
    try:
        jvm = session.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(_CODEGEN_LOGGER, level)
    except Exception:  # another logging backend, or no JVM of ours (Spark Connect): its errors show
        return
