"""Spark: the engine's queries, written in DuckDB's dialect, in Spark's by sqlglot (``spark_sql``).

Spark comes from the environment: ``TOOLKIT_SPARK_MASTER`` (``spark://host:7077``, ``yarn``,
``local[4]``) or ``SPARK_REMOTE`` (a Spark Connect address, ``sc://host:15002``); without either,
a local session on this machine. A session that already runs in the process (a Databricks or
Jupyter kernel with Spark) is used as it is. pyspark and sqlglot are imported when Spark is first
used, never by a run on DuckDB.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from toolkit.errors import EngineError
from toolkit.reconcile.backends.base import Backend
from toolkit.reconcile.backends.memory import RESERVE_SHARE
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.schema import BackendName
from toolkit.reconcile.sources.formats import WRITTEN
from toolkit.reconcile.sources.rows import FILE_SHIFT, csv_header, readable, with_csv_lines

if TYPE_CHECKING:
    from toolkit.reconcile.sources.described import Described

#: Shuffle partitions of a local Spark session at most (Spark's 200 suit a cluster, not one
#: machine), and the bytes of input that take one (``SparkBackend.fit``).
LOCAL_SHUFFLE_PARTITIONS = 8
BYTES_PER_PARTITION = 32 << 20


#: How Spark evaluates an expression outside whole-stage code generation: ``FALLBACK`` (its
#: default) compiles Java for each projection and filter, ``NO_CODEGEN`` evaluates the expression
#: tree as it is, with the same results (Spark's own tests run both).
_FACTORY_MODE = "spark.sql.codegen.factoryMode"

#: The names a connection gives its tables and views (``Backend.temp_name``).
_TEMP_NAME = re.compile(r"\btoolkit_([a-z]+(?:_[a-z]+)*)_([0-9]+)\b")


def spark_sql(query: str) -> str:
    """A query of the engine (DuckDB's dialect) in Spark's, by sqlglot. The engine writes the same
    queries for the same options, in every run, but for the numbers of the tables it keeps
    (``toolkit_kept_17``): those are numbered in order of appearance before the query is
    transpiled, so that a query is transpiled once per process whatever run sends it again."""
    names: dict[str, str] = {}

    def placeholder(found: re.Match[str]) -> str:
        return names.setdefault(found.group(0), f"toolkit_{found.group(1)}_p{len(names)}")

    written = _transpiled(_TEMP_NAME.sub(placeholder, query))
    if not names:
        return written
    back = {shown: name for name, shown in names.items()}
    return re.sub(
        r"\btoolkit_[a-z_]+_p[0-9]+\b", lambda found: back.get(found.group(0), found.group(0)), written
    )


@functools.lru_cache(maxsize=512)
def _transpiled(query: str) -> str:
    import sqlglot

    return str(sqlglot.transpile(query, read="duckdb", write="spark")[0])


@dataclass
class SparkBackend(Backend):
    """A Spark session: kept tables are local checkpoints, registered ones frames, both temporary
    views; files are read by Spark's readers."""

    name: ClassVar[BackendName] = "pyspark"

    #: Spark's checkpointed frames of the kept tables, by name (their blocks live while they do).
    _frames: dict[str, Any] = field(default_factory=dict)
    #: Whether the toolkit started this local session, so its settings are the toolkit's to fit
    #: (a cluster's, Spark Connect's or a session of the user's are left as they are).
    _ours: bool = False
    #: Whether kept tables go to disk only (``fit``: input of more than one partition).
    _on_disk: bool = False

    @classmethod
    def start(cls, limit: int, spill: Path | None, in_memory: bool) -> SparkBackend:
        """The process's session, or one started from the environment (``in_memory`` is
        DuckDB's only: Spark ignores it)."""
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise EngineError("the pyspark backend needs pyspark: pip install 'pyspark>=4.0,<4.1'") from None
        session = SparkSession.getActiveSession()
        if session is not None:
            return cls(session, limit, spill_dir=spill)
        session, local = _start_spark(SparkSession, limit, spill)
        return cls(session, limit, spill_dir=spill, _ours=local)

    def fit(self, input_bytes: int | None) -> None:
        """A local session of the toolkit's shuffles into one partition per ``BYTES_PER_PARTITION``
        of input (None: unknown), up to ``LOCAL_SHUFFLE_PARTITIONS``. Input that fits one
        partition (a month of a few thousand payments) runs without adaptive execution and
        whole-stage code generation too: with one partition there is nothing to re-plan, and
        compiling each stage's Java takes longer than running it over a few rows (a 1,000-row
        month: 7.4 s instead of 10.5 s in eight partitions, median of four). Nor does it compile
        its expressions one by one (``_FACTORY_MODE``): the same run on a warm session, 6.8 s
        instead of 11.9 s.

        Larger input keeps its tables on disk only (``_keep``): held in the JVM's memory, the
        checked rows of 10M payments a side left too little of a 1.5 GB limit to pair them with
        10% in exception (of five runs, three ran out of memory pairing and one more failed; on
        disk, both runs finished)."""
        if not self._ours:
            return
        wanted = LOCAL_SHUFFLE_PARTITIONS  # a table of unknown size: as the session started
        if input_bytes is not None:
            wanted = min(wanted, max(1, -(-input_bytes // BYTES_PER_PARTITION)))
        large = wanted > 1
        self.con.conf.set("spark.sql.shuffle.partitions", str(wanted))
        self.con.conf.set("spark.sql.adaptive.enabled", str(large).lower())
        self.con.conf.set("spark.sql.codegen.wholeStage", str(large).lower())
        self.con.conf.set(_FACTORY_MODE, "FALLBACK" if large else "NO_CODEGEN")
        self._on_disk = large

    def _keep(self, name: str, query: str) -> None:
        """A local checkpoint: its plan is its rows, so no step's plan grows with the steps before;
        in memory and on disk, or on disk only (``fit``)."""
        from pyspark import StorageLevel

        frame = self.con.sql(spark_sql(query))
        try:
            frame = frame.localCheckpoint(
                eager=True, storageLevel=StorageLevel.DISK_ONLY if self._on_disk else None
            )
        except NotImplementedError:  # Spark Connect before 4.0: cached instead
            frame = frame.cache()
        frame.createOrReplaceTempView(name)
        self._frames[name] = frame

    def _register(self, name: str, table: pa.Table) -> None:
        frame = self.con.createDataFrame(table)
        frame.createOrReplaceTempView(name)
        self._frames[name] = frame

    def _arrow(self, query: str) -> pa.Table:
        table: pa.Table = self.con.sql(spark_sql(query)).toArrow()
        return table

    def _drop(self, name: str) -> None:
        self._frames.pop(name, None)
        self.con.catalog.dropTempView(name)

    def read(self, described: Described, wanted: list[str]) -> Relation:
        """A CSV file, Parquet files or a table of the session's catalog, by Spark's readers."""
        view = self.temp_name("rows")
        if described.kind == "csv":
            return self._read_csv(described, wanted, view)
        if described.kind == "parquet":
            return self._read_parquet(described, wanted, view)
        return self._read_table(described, wanted, view)

    def _read_csv(self, described: Described, wanted: list[str], view: str) -> Relation:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        path, offset = readable(described)
        header = csv_header(path, described.delimiter)[0]
        schema = StructType([StructField(n, StringType()) for n in header])
        # A CSV read with values spanning lines is one partition per file, so the increasing
        # id is the row's place in the file.
        frame = (
            self.con.read.option("header", True)
            .option("multiLine", True)
            .option("escape", '"')
            .option("sep", described.delimiter)
            .option(
                "mode", "PERMISSIVE" if described.ragged else "FAILFAST"
            )  # permissive: short lines padded
            .schema(schema)
            .csv(str(path))
        )
        written = functools.reduce(
            lambda a, b: a | b, (F.coalesce(F.col(f"`{n}`").rlike(WRITTEN), F.lit(False)) for n in header)
        )
        frame = frame.select(
            *[F.col(f"`{n}`").alias(n.strip()) for n in header if n.strip() in wanted],
            (~written).alias("_blank"),
            F.monotonically_increasing_id().alias("_ord"),
        )
        frame.createOrReplaceTempView(view)
        rows = Relation(f"SELECT * FROM {view}", tuple(frame.columns))
        return with_csv_lines(self, rows, described, header, (path, offset))

    def _read_parquet(self, described: Described, wanted: list[str], view: str) -> Relation:
        """One read per file, numbered by its place in the sorted list: a file's own path as Spark
        reports it need not be the path it was given. Files of different schemas come together
        as text (``ParquetPart``)."""
        from pyspark.sql import Column
        from pyspark.sql import functions as F

        as_text = len(described.parts) > 1
        raw = {path: {c.strip(): c for c in part.columns} for part in described.parts for path in part.paths}

        def column(path: Path, name: str) -> Column:
            value = F.col(f"`{raw[path][name]}`") if name in raw[path] else F.lit(None)
            return (value.cast("string") if as_text else value).alias(name)

        parts = [
            self.con.read.parquet(str(path)).select(
                *[column(path, c) for c in wanted],
                (F.col("_metadata.row_index") + 1).alias("source_row"),
                F.lit(str(path) if len(described.paths) > 1 else described.name).alias("_source"),
                (F.lit(index << FILE_SHIFT) + F.col("_metadata.row_index") + 1).alias("_ord"),
            )
            for index, path in enumerate(described.paths)
        ]
        frame = functools.reduce(lambda a, b: a.unionByName(b), parts)
        frame.createOrReplaceTempView(view)
        return Relation(f"SELECT * FROM {view}", tuple(frame.columns))

    def _read_table(self, described: Described, wanted: list[str], view: str) -> Relation:
        """A table of the session's catalog, numbered in the order Spark gives its rows."""
        from pyspark.sql import functions as F

        frame = self.con.table(described.table_name)
        columns = [c for c in frame.columns if c.strip() in wanted] if wanted else frame.columns
        frame = frame.select(
            *[F.col(f"`{c}`").alias(c.strip()) for c in columns],
            F.monotonically_increasing_id().alias("_ord"),
        )
        frame.createOrReplaceTempView(view)
        number = "ROW_NUMBER() OVER (ORDER BY _ord)"
        return Relation(f"SELECT * FROM {view}", tuple(frame.columns)).mutate(source_row=number, _ord=number)


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


#: What a local session's JVM takes outside its heap, measured (Native Memory Tracking and RSS)
#: at 10M payments a side: metaspace 127 MB, G1's tables 83, code and symbols 76, threads and the
#: rest about 100, and Arrow's buffers of the rows read back by the report: 1,688 MB of RSS on a
#: 1,152 MB heap.
JVM_OUTSIDE_HEAP = 512 << 20
#: The least heap a local session gets, whatever the limit (Spark itself needs 450 MB of it).
MIN_DRIVER_HEAP = 512 << 20


def driver_memory(limit: int) -> str:
    """The heap of a local session's JVM (``spark.driver.memory``) for a memory limit of ``limit``
    bytes. The JVM, like DuckDB's buffers, gets what ``RESERVE_SHARE`` leaves to the Python
    process (which holds the results), and its memory outside the heap counts in that share:
    it grows its heap to the full setting before collecting (a 14 GB heap of 24 GB was killed for
    memory in CI), and a heap of the whole share took 2.4 GB at a limit of 1.5 GB."""
    heap = max(int(limit * (1 - RESERVE_SHARE)) - JVM_OUTSIDE_HEAP, MIN_DRIVER_HEAP)
    return f"{heap >> 20}m"


def _start_spark(session_class: Any, limit: int, spill: Path | None) -> tuple[Any, bool]:
    """A Spark session from the environment (a master URL, Spark Connect, or local), and whether
    it is a local one with the toolkit's settings."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = session_class.builder.appName("toolkit-reconcile")
    remote = os.environ.get("SPARK_REMOTE")
    master = os.environ.get("TOOLKIT_SPARK_MASTER")
    local = not remote and (not master or master.startswith("local"))
    if remote:
        builder = builder.remote(remote)
    else:
        builder = (
            builder.master(master or "local[*]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())  # a terminal's only
        )
        if local:
            # A local session stays on the loopback interface: Spark would otherwise bind to the
            # machine's first network address (and warn that it does).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Nothing is written where the command runs (Spark's default warehouse is ./).
            warehouse = Path(tempfile.mkdtemp(prefix="toolkit-spark-"))
            atexit.register(shutil.rmtree, warehouse, True)
            builder = (
                builder.config("spark.driver.memory", driver_memory(limit))
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
    return session, local


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
