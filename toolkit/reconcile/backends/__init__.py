"""Where the reconciliation engine runs: DuckDB, embedded (the default), or Spark.

The engine is written once, as SQL text in DuckDB's dialect, which sqlglot writes in Spark's
for Spark (``spark.spark_sql``). A ``Backend`` (``base.py``) gives the engine a connection, reads
the sources into it (``read``, for ``sources.read``), keeps the intermediate tables it reuses
(``keep``), fetches small results (``arrow``), and turns the backend's own failures (a memory
limit, a full spill disk, no Java) into one-line ``EngineError``. Each backend is a class of its
own: ``DuckDBBackend`` (``duckdb.py``) and ``SparkBackend`` (``spark.py``), which alone imports
pyspark and sqlglot, when Spark is first used. ``connect`` gives the one a run asks for.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from toolkit.errors import EngineError
from toolkit.reconcile.backends.base import Backend, Kept
from toolkit.reconcile.backends.duckdb import DuckDBBackend
from toolkit.reconcile.backends.memory import (
    MEMORY_SHARE,
    RESERVE_SHARE,
    default_memory_limit,
    parse_memory_limit,
    size_text,
)
from toolkit.reconcile.backends.spark import LOCAL_SHUFFLE_PARTITIONS, SparkBackend, spark_sql
from toolkit.reconcile.schema import BACKENDS

__all__ = [
    "BACKENDS",
    "LOCAL_SHUFFLE_PARTITIONS",
    "MEMORY_SHARE",
    "RESERVE_SHARE",
    "Backend",
    "DuckDBBackend",
    "Kept",
    "SparkBackend",
    "connect",
    "default_memory_limit",
    "parse_memory_limit",
    "size_text",
    "spark_session",
    "spark_sql",
]

#: Each backend's class, by the name ``connect`` takes (``schema.BACKENDS``).
_CLASSES: dict[str, type[Backend]] = {kind.name: kind for kind in (DuckDBBackend, SparkBackend)}

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
    kind = _CLASSES[name]
    limit = (
        parse_memory_limit(memory_limit)
        if isinstance(memory_limit, str)
        else memory_limit or default_memory_limit()
    )
    spill = Path(spill_dir).resolve() if spill_dir else None
    in_memory = in_memory and kind._takes_in_memory
    key = (name, limit, str(spill or ""), in_memory)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = kind.start(limit, spill, in_memory)
        return _CACHE[key]


def spark_session() -> Any:
    """The process's Spark session, started from the environment when it has none (as
    ``connect("pyspark")`` does): a table named as an input is looked up in its catalog."""
    return connect("pyspark").con
