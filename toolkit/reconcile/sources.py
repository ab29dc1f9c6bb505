"""The inputs of a reconciliation as tables of text in the engine's backend, rows numbered.

``describe`` looks at a source once, cheaply (a CSV header, a Parquet schema; an Excel sheet or
a frame, which are small by nature, are read whole) and refuses what cannot be used. ``read``
brings it into a backend as a table whose columns are the source's own, as text (missing cells
empty), plus ``_ord`` (the row's place in the input) and ``source_row`` (its number as a person
finds it) and ``_source`` (the file it came from). Large files are read by the backend itself,
never through pandas.

Row numbers are as in the file: for CSV, the line an editor shows the row on (the header is line
1 unless blank lines precede it; blank lines and values spanning lines are counted); for Excel,
the sheet's row with the header as row 1; for Parquet files, frames and tables, which have no
header row, the first row is row 1 (of its own file, for a folder or glob of Parquet files).
"""

from __future__ import annotations

import csv
import functools
import glob
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import ibis
import ibis.expr.types as ir
import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.reconcile.backends import Backend

#: A source: a file path (CSV, XLSX, Parquet file, folder or glob), a pandas frame, or
#: ``table:NAME`` for a table of the backend's catalog (Spark).
Source = str | Path | pd.DataFrame
Kind = Literal["csv", "xlsx", "parquet", "frame", "table"]
TABLE_PREFIX = "table:"
RowNumbers = npt.NDArray[np.int64]

# Files are scanned for line breaks in blocks of this size (bounded memory for any file size).
_BLOCK = 1 << 24
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Described:
    """What a source is: its kind, its name for people, its columns, and how to read it."""

    name: str
    kind: Kind
    columns: tuple[str, ...]  # as in the source, trimmed
    paths: tuple[Path, ...] = ()
    table: pa.Table | None = field(default=None, compare=False)  # frames and sheets, as text
    table_name: str = ""


# ---------------------------------------------------------------------------------------------
# Describing


def describe(source: Source, side: str, amount_columns: frozenset[str]) -> Described:
    """Look at ``source`` and refuse what cannot be read; ``amount_columns`` must not be floats."""
    if isinstance(source, pd.DataFrame):
        return _describe_frame(source, side, amount_columns)
    text = str(source)
    if text.startswith(TABLE_PREFIX):
        table_name = text[len(TABLE_PREFIX) :].strip()
        if not table_name:
            raise InputError(f"{text!r}: name the table after {TABLE_PREFIX!r}")
        return Described(text, "table", (), table_name=table_name)
    path = Path(source)
    if _GLOB_CHARS & set(text) or path.is_dir():
        return _describe_parquet_set(text, path, amount_columns)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt"):
            header = _read_csv_header(path)
            if not header:
                raise InputError(f"{path}: empty file (no header row)")
            return Described(str(path), "csv", _columns_of(header, str(path)), paths=(path,))
        if suffix in (".xlsx", ".xlsm"):
            sheet = pd.read_excel(path, dtype=str, keep_default_na=False, engine="openpyxl")
            table = _numbered_table(_frame_to_table(sheet, str(path), amount_columns), first=2)
            return Described(str(path), "xlsx", _columns(table, str(path)), paths=(path,), table=table)
        if suffix in (".parquet", ".pq"):
            return _describe_parquet(str(path), [path], amount_columns)
    except InputError:
        raise
    except Exception as exc:  # the readers raise many types; all mean "cannot read this file"
        raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise InputError(f"{path}: unsupported file type {suffix!r} (use .csv, .xlsx or .parquet)")


def _describe_frame(frame: pd.DataFrame, side: str, amount_columns: frozenset[str]) -> Described:
    """A pandas frame (its named index becomes a column), as an Arrow table numbered from 1."""
    if frame.index.name is not None or isinstance(frame.index, pd.MultiIndex):
        frame = frame.reset_index()
    name = f"<{side} frame>"
    table = _numbered_table(_frame_to_table(frame, name, amount_columns), first=1)
    return Described(name, "frame", _columns(table, name), table=table)


def _describe_parquet_set(text: str, path: Path, amount_columns: frozenset[str]) -> Described:
    """A folder of Parquet files, or a glob of them."""
    pattern = str(path / "**" / "*.parquet") if path.is_dir() else text
    files = sorted(Path(f) for f in glob.glob(pattern, recursive=True) if Path(f).is_file())
    if not files:
        raise InputError(f"{text}: no Parquet files found")
    return _describe_parquet(text, files, amount_columns)


def _describe_parquet(name: str, files: list[Path], amount_columns: frozenset[str]) -> Described:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(files[0])
    except Exception as exc:
        raise InputError(f"{files[0]}: cannot be read ({type(exc).__name__}: {exc})") from exc
    for column in schema:
        if column.name.strip() in amount_columns and pa.types.is_floating(column.type):
            raise InputError(
                f"{name}: column {column.name.strip()!r} holds floats; write amounts as text or decimal"
            )
    return Described(name, "parquet", _columns_of(schema.names, name), paths=tuple(files))


def _columns_of(names: list[str], name: str) -> tuple[str, ...]:
    trimmed = tuple(str(n).strip() for n in names)
    seen: set[str] = set()
    for column in trimmed:
        if column in seen:
            raise InputError(f"{name}: column {column!r} appears twice")
        seen.add(column)
    return trimmed


def _columns(table: pa.Table, name: str) -> tuple[str, ...]:
    return _columns_of([c for c in table.column_names if c not in ("_ord", "source_row")], name)


def _read_csv_header(path: Path) -> list[str]:
    """The first record that is not a blank line (the CSV readers skip those too)."""
    return _csv_header_and_skip(path)[0]


def _csv_header_and_skip(path: Path) -> tuple[list[str], int]:
    """The header record, and how many blank lines come before it."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        for record in reader:
            if record:
                return record, reader.line_num - 1
    return [], 0


def _text_of(value: Any) -> str:
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        return "" if value != value else repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _frame_to_table(frame: pd.DataFrame, name: str, amount_columns: frozenset[str]) -> pa.Table:
    """A frame -> a table of strings; Decimals written exactly, float amounts refused."""
    columns: dict[str, pa.Array] = {}
    for column in frame.columns:
        series = frame[column]
        label = str(column)
        if label in amount_columns and (
            pd.api.types.is_float_dtype(series)
            or (series.dtype == object and any(isinstance(v, float) for v in series.tolist()))
        ):
            raise InputError(f"{name}: column {label!r} holds floats; pass text or Decimal amounts")
        string_like = isinstance(series.dtype, pd.StringDtype) or (
            isinstance(series.dtype, pd.ArrowDtype) and pa.types.is_string(series.dtype.pyarrow_dtype)
        )
        if string_like:
            values = series.to_numpy(dtype=object, na_value="")
            columns[label] = pa.array(values, type=pa.string())
        else:
            columns[label] = pa.array([_text_of(v) for v in series.tolist()], type=pa.string())
    return pa.table(columns) if columns else pa.table({})


def _numbered_table(table: pa.Table, first: int) -> pa.Table:
    """``table`` with ``_ord`` (0, 1, ...) and ``source_row`` (``first``, ``first + 1``, ...)."""
    order = np.arange(table.num_rows, dtype=np.int64)
    return table.append_column("_ord", pa.array(order)).append_column("source_row", pa.array(order + first))


# ---------------------------------------------------------------------------------------------
# Reading into a backend


def read(backend: Backend, described: Described, only: frozenset[str] | None = None) -> ir.Table:
    """The source as a table of text in ``backend``, with ``_ord``, ``source_row``, ``_source``.

    ``only`` limits the columns read (trimmed names); the others are not read at all.
    """
    wanted = [c for c in described.columns if only is None or c in only]
    with backend.failures():
        if described.table is not None:
            table = described.table.select([*_raw_names(described.table, wanted), "_ord", "source_row"])
            expr = ibis.memtable(table.rename_columns([*wanted, "_ord", "source_row"]))
        elif backend.name == "duckdb":
            expr = _read_duckdb(backend, described, wanted)
        else:
            expr = _read_spark(backend, described, wanted)
    if "_source" not in expr.columns:
        expr = expr.mutate(_source=ibis.literal(described.name))
    texts = {
        c: expr[c].cast("string").fill_null("")
        for c in expr.columns
        if not c.startswith("_") and c != "source_row"
    }
    return expr.mutate(**texts)


def _raw_names(table: pa.Table, wanted: list[str]) -> list[str]:
    by_trimmed = {str(n).strip(): n for n in table.column_names}
    return [by_trimmed[c] for c in wanted]


def _read_duckdb(backend: Backend, described: Described, wanted: list[str]) -> ir.Table:
    raw = backend.con.con
    if described.kind == "csv":
        path = described.paths[0]
        header, skip = _csv_header_and_skip(path)
        columns = ", ".join(f"{_ident(n)} AS {_ident(n.strip())}" for n in header if n.strip() in wanted)
        stored = backend.temp_name("csv")
        # A table keeps the file's order: its rowid is the row's place in the file.
        types = ", ".join(f"{_quote_literal(n)}: 'VARCHAR'" for n in header)
        raw.execute("SET preserve_insertion_order = true")
        try:
            raw.execute(
                f"CREATE TEMP TABLE {stored} AS SELECT {columns} FROM read_csv("
                f"{_quote_literal(str(path))}, header = true, skip = {skip}, auto_detect = false, "
                f"delim = ',', quote = '\"', escape = '\"', columns = {{{types}}}, "
                "strict_mode = false)"
            )
        finally:
            raw.execute("SET preserve_insertion_order = false")
        view = backend.temp_name("rows")
        raw.execute(f"CREATE TEMP VIEW {view} AS SELECT *, rowid AS _ord FROM {stored}")
        table = backend.con.table(view)
        return _with_csv_lines(backend, table, path)
    if described.kind == "parquet":
        files = ", ".join(_quote_literal(str(p)) for p in described.paths)
        selected = ", ".join(f"{_ident(c)}" for c in wanted) if wanted else "1 AS _none"
        names = backend.temp_name("parquet")
        raw.execute(
            f"CREATE TEMP VIEW {names} AS SELECT {selected}, file_row_number + 1 AS source_row, "
            f"filename AS _source FROM read_parquet([{files}], filename = true, "
            "file_row_number = true, union_by_name = true)"
        )
        table = backend.con.table(names)
        return _ordered_by_file(table, described)
    raise InputError(f"{described.name}: tables by name are read by the pyspark backend only")


def _ordered_by_file(table: ir.Table, described: Described) -> ir.Table:
    """``_ord`` for rows of several files: the file's place in the sorted list, then the row."""
    if len(described.paths) == 1:
        return table.mutate(_ord=table.source_row - 1, _source=ibis.literal(described.name))
    index = ibis.cases(*((table._source == str(p), i) for i, p in enumerate(described.paths)), else_=0)
    return table.mutate(_ord=index.cast("int64") * (1 << 40) + table.source_row - 1)


def source_of(described: Described, ord: ir.IntegerValue) -> ir.StringValue:
    """The file a row came from, from its ``_ord`` (a glob's files are numbered in ``_ord``'s
    high bits): the engine carries the number, and names the file only for rows it reports."""
    if len(described.paths) <= 1:
        return ibis.literal(described.name)
    return ibis.cases(
        *((ord < ((i + 1) << 40), str(p)) for i, p in enumerate(described.paths)),
        else_=ibis.literal(described.name),
    )


def _read_spark(backend: Backend, described: Described, wanted: list[str]) -> ir.Table:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    session = backend.con._session
    view = backend.temp_name("rows")
    if described.kind == "csv":
        path = described.paths[0]
        header = _read_csv_header(path)
        schema = StructType([StructField(n, StringType()) for n in header])
        # A CSV read with values spanning lines is one partition per file, so the increasing
        # id is the row's place in the file.
        frame = (
            session.read.option("header", True)
            .option("multiLine", True)
            .option("escape", '"')
            .option("mode", "FAILFAST")
            .schema(schema)
            .csv(str(path))
        )
        frame = frame.select(
            *[F.col(f"`{n}`").alias(n.strip()) for n in header if n.strip() in wanted],
            F.monotonically_increasing_id().alias("_ord"),
        )
        frame.createOrReplaceTempView(view)
        return _with_csv_lines(backend, backend.con.table(view), path)
    if described.kind == "parquet":
        # One read per file, numbered by its place in the sorted list: a file's own path as Spark
        # reports it need not be the path it was given.
        parts = [
            session.read.parquet(str(path)).select(
                *[F.col(f"`{c}`") for c in wanted],
                (F.col("_metadata.row_index") + 1).alias("source_row"),
                F.lit(str(path) if len(described.paths) > 1 else described.name).alias("_source"),
                (F.lit(index << 40) + F.col("_metadata.row_index")).alias("_ord"),
            )
            for index, path in enumerate(described.paths)
        ]
        frame = functools.reduce(lambda a, b: a.unionByName(b), parts)
        frame.createOrReplaceTempView(view)
        return backend.con.table(view)
    frame = session.table(described.table_name)
    floats = [f.name for f in frame.schema.fields if f.dataType.typeName() in ("float", "double")]
    if floats:  # a table's columns are not known before the session starts: refuse them here
        raise InputError(
            f"{described.name}: column {floats[0]!r} holds floats; store amounts as decimal or text"
        )
    columns = [c for c in frame.columns if c.strip() in wanted] if wanted else frame.columns
    frame = frame.select(
        *[F.col(f"`{c}`").alias(c.strip()) for c in columns], F.monotonically_increasing_id().alias("_ord")
    )
    frame.createOrReplaceTempView(view)
    table = backend.con.table(view)
    number = ibis.row_number().over(order_by=table._ord)
    return table.mutate(source_row=number + 1)


def _with_csv_lines(backend: Backend, table: ir.Table, path: Path) -> ir.Table:
    """``source_row`` from ``_ord``: line ``_ord + 2`` unless blank lines or values spanning
    lines shift the rows, in which case each row's line is looked up."""
    count = int(backend.scalar(table.count()))
    lines = _csv_row_lines(path, count)
    if lines is None:
        return table.mutate(source_row=table._ord + 2)
    numbers = ibis.memtable(pa.table({"_line_ord": np.arange(count, dtype=np.int64), "source_row": lines}))
    joined = table.join(numbers, table._ord == numbers._line_ord)
    return joined.drop("_line_ord")


def _csv_row_lines(path: Path, count: int) -> RowNumbers | None:
    """The line each of the ``count`` data rows starts on, or None when it is ``row + 2``.

    Counting the line breaks (in C, block by block) tells cheaply whether the file has neither
    blank lines nor values spanning lines; only when it has are the records walked with the csv
    module, which numbers lines as an editor does. Blank lines at the end shift nothing.
    """
    breaks = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            breaks += block.count(b"\n")
        handle.seek(max(handle.tell() - 65536, 0))
        tail = handle.read()
    trailing = tail[len(tail.rstrip(b"\r\n")) :].count(b"\n")
    if count == 0 or breaks - trailing == count:  # header and rows: one line each, nothing between
        return None
    starts: list[int] = []
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle)
            line = 0
            for record in reader:
                if record:  # a blank line is an empty record
                    starts.append(line + 1)
                line = reader.line_num
    except csv.Error:  # a field past the csv module's size limit: number the rows as read
        return None
    if len(starts) != count + 1:  # the two readers disagree: keep the plain numbering
        return None
    return np.array(starts[1:], dtype=np.int64)


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
