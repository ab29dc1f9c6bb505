"""DuckDB, embedded: the default backend, and the one that reads inputs larger than memory.

It runs with a memory limit (default: ``MEMORY_SHARE`` of the machine's memory) and spills to a
directory beyond it: the tables it keeps from files are tables of a database file there, and
those it keeps from inputs already in memory (frames, workbooks) stay in memory
(``connect(..., in_memory=True)``). It reads CSV and Parquet files itself (``read``).
"""

from __future__ import annotations

import atexit
import re
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import duckdb
import pyarrow as pa

from toolkit.errors import EngineError, InputError
from toolkit.reconcile.backends.base import _WRITE_FAILED, Backend, _write_failure
from toolkit.reconcile.backends.memory import RESERVE_SHARE
from toolkit.reconcile.relation import Relation, ident, literal
from toolkit.reconcile.schema import BackendName
from toolkit.reconcile.sources.formats import WRITTEN
from toolkit.reconcile.sources.rows import FILE_SHIFT, csv_header, readable, unreadable_line, with_csv_lines

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolkit.reconcile.sources.described import Described, ParquetPart


@dataclass
class DuckDBBackend(Backend):
    """DuckDB's connection: kept tables are tables of its database, Arrow tables are read where
    they are, and files are read by its own readers."""

    name: ClassVar[BackendName] = "duckdb"
    _takes_in_memory: ClassVar[bool] = True

    #: The Arrow tables registered (``register``), unregistered rather than dropped.
    _registered: set[str] = field(default_factory=set)

    @classmethod
    def start(cls, limit: int, spill: Path | None, in_memory: bool) -> DuckDBBackend:
        """A connection spilling to ``spill`` (a folder of its own, removed when the process ends,
        when None), its kept tables in memory or (``in_memory`` False) in a database file there."""
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
        # intermediate result costs memory and time (``_read_csv`` turns it on to number CSV rows).
        raw.execute("SET preserve_insertion_order = false")
        return cls(raw, limit, spill_dir=spill)

    def fit(self, input_bytes: int | None) -> None:
        """Nothing to settle: DuckDB sizes its work to the input itself, query by query."""

    def _keep(self, name: str, query: str) -> None:
        """A table of the database (in memory, or in the spill directory's file)."""
        self.con.execute(f"CREATE TABLE {name} AS {query}")

    def _register(self, name: str, table: pa.Table) -> None:
        """Read where it is, not copied."""
        self.con.register(name, table)
        self._registered.add(name)

    def _arrow(self, query: str) -> pa.Table:
        """The result of a statement run once: a relation (``con.sql``) parses and binds its query
        to describe it, then again to run it (about 10 ms of each of a small run's nine results).
        The copy DuckDB warns of is of a result small by nature (a page of exceptions at most)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _DB_API_ARROW, UserWarning)
            table: pa.Table = self.con.execute(query).to_arrow_table()
        return table

    def _drop(self, name: str) -> None:
        if name in self._registered:
            self._registered.discard(name)
            self.con.unregister(name)
        else:
            self.con.execute(f"DROP TABLE IF EXISTS {name}")

    def read(self, described: Described, wanted: list[str]) -> Relation:
        """A CSV file or Parquet files, by DuckDB's readers; a table by name is Spark's only."""
        if described.kind == "csv":
            return self._read_csv(described, wanted)
        if described.kind == "parquet":
            names = self.temp_name("parquet")
            as_text = len(described.parts) > 1
            selects = " UNION ALL BY NAME ".join(
                _parquet_select(part, wanted, as_text) for part in described.parts
            )
            self.con.execute(f"CREATE TEMP VIEW {names} AS {selects}")
            return _ordered_by_file(
                Relation(f"SELECT * FROM {names}", (*wanted, "source_row", "_source")), described
            )
        raise InputError(f"{described.name}: tables by name are read by the pyspark backend only")

    def _read_csv(self, described: Described, wanted: list[str]) -> Relation:
        raw = self.con
        path, offset = readable(described)
        header, skip = csv_header(path, described.delimiter)
        read = [n for n in header if n.strip() in wanted]
        columns = ", ".join([*(f"{ident(n)} AS {ident(n.strip())}" for n in read), _blank_sql(header)])
        stored = self.temp_name("csv")
        # A table keeps the file's order: its rowid is the row's place in the file.
        types = ", ".join(f"{literal(n)}: 'VARCHAR'" for n in header)
        raw.execute("SET preserve_insertion_order = true")
        try:
            raw.execute(
                f"CREATE TEMP TABLE {stored} AS SELECT {columns} FROM read_csv("
                f"{literal(str(path))}, header = true, skip = {skip}, auto_detect = false, "
                f"delim = {literal(described.delimiter)}, quote = '\"', escape = '\"', "
                f"columns = {{{types}}}, strict_mode = false, null_padding = {str(described.ragged).lower()})"
            )
        except duckdb.InvalidInputException as exc:
            raise _malformed(described, str(exc), offset) from None
        finally:
            raw.execute("SET preserve_insertion_order = false")
        rows = Relation(
            f"SELECT *, rowid AS _ord FROM {stored}", (*(n.strip() for n in read), "_blank", "_ord")
        )
        return with_csv_lines(self, rows, described, header, (path, offset))


#: DuckDB's warning on Arrow from an executed statement (``DuckDBBackend._arrow``).
_DB_API_ARROW = "Arrow output on a DB-API result makes an extra copy"


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


def _blank_sql(header: Sequence[str]) -> str:
    """SQL: whether every field of a CSV row is empty (``with_csv_lines``), a field at a time (a
    CASE stops at the first field written, where AND would match every field of every row)."""
    written = " ".join(f"WHEN regexp_matches({ident(n)}, '{WRITTEN}') THEN false" for n in header)
    return f"CASE {written} ELSE true END AS _blank"


_CSV_ERROR = re.compile(r"CSV Error on Line: (\d+)\s*\nOriginal Line: ([^\n]*)\n([^\n]*)")


def _malformed(described: Described, message: str, offset: int) -> InputError:
    """A row the CSV reader cannot split into the header's columns (an export cut short, a quote
    left open), with the line an editor shows it on: the whole file is refused, not the row, since
    where its fields start and end is unknown."""
    found = _CSV_ERROR.search(message)
    if found is None:
        return InputError(f"{described.name}: cannot be read as CSV ({message.splitlines()[0]})")
    line, text, reason = int(found.group(1)) + offset, found.group(2), found.group(3).strip()
    return unreadable_line(described, line, reason, text)


def _parquet_select(part: ParquetPart, wanted: list[str], as_text: bool) -> str:
    """One part's rows; ``as_text``, its columns cast to text, so that parts of different types
    come together without a widening (a column a part lacks is empty)."""
    raw = {c.strip(): c for c in part.columns}
    columns = [
        f"{ident(raw[c]) if c in raw else 'NULL'}{'::VARCHAR' if as_text else ''} AS {ident(c)}"
        for c in wanted
    ]
    files = ", ".join(literal(str(p)) for p in part.paths)
    return (
        f"SELECT {', '.join(columns) or '1 AS _none'}, file_row_number + 1 AS source_row, "
        f"filename AS _source FROM read_parquet([{files}], filename = true, "
        "file_row_number = true, union_by_name = true)"
    )


def _ordered_by_file(table: Relation, described: Described) -> Relation:
    """``_ord`` for rows of several files: the file's place in the sorted list, then the row."""
    if len(described.paths) == 1:
        return table.mutate(_ord="source_row", _source=literal(described.name))
    index = " ".join(f"WHEN _source = {literal(str(p))} THEN {i}" for i, p in enumerate(described.paths))
    return table.mutate(_ord=f"CAST(CASE {index} ELSE 0 END AS BIGINT) * {1 << FILE_SHIFT} + source_row")
