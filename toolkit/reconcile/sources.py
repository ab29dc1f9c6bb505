"""The inputs of a reconciliation as tables of text in the engine's backend, rows numbered.

``describe`` looks at a source once, cheaply (a CSV header, a Parquet schema; an Excel sheet or
a frame, which are small by nature, are read whole) and refuses what cannot be used: a path that
is not a regular file (a named pipe, a device), a header wider than ``MAX_COLUMNS`` or a line
longer than ``MAX_LINE``, a sheet beyond Excel's bounds (read a row at a time, never at the size
it declares). ``read`` brings it into a backend as a table whose columns are the source's own, as
text (missing cells empty), plus ``source_row`` (the row's number as a person finds it), ``_ord``
(its place in the input: ``source_row``, plus the file's place in the list shifted by
``FILE_SHIFT`` bits for a set of files, so that the row number is computed from ``_ord`` rather
than kept: ``row_sql``) and ``_source`` (the file it came from). Large files are read by the
backend itself, never through pandas.

CSV files are read as they come from spreadsheet exports: the encoding (UTF-8 with or without a
BOM, UTF-16 with a BOM or without one, else cp1252 or latin-1) and the delimiter (``,``, ``;``,
tab or ``|``: the one the header line holds most of, outside quotes) are detected, or given as
``ReadOptions``. A file that is not UTF-8, or whose header is below a title (``header_row``), is
read through a UTF-8 copy made in blocks in a temporary folder, so that DuckDB and Spark read the
same bytes the same way and line numbers are counted once; the copy starts at the header line, and
the lines left out are added back to the row numbers.

Row numbers are as in the file: for CSV, the line an editor shows the row on (the header is line
1 unless blank lines precede it; blank lines and values spanning lines are counted); for Excel,
the sheet's row with the header as row 1; for Parquet files, frames and tables, which have no
header row, the first row is row 1 (of its own file, for a folder or glob of Parquet files).
"""

from __future__ import annotations

import atexit
import codecs
import csv
import functools
import glob
import io
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb
import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from toolkit.errors import InputError
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.relation import Relation, ident, literal

if TYPE_CHECKING:
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

#: A source: a file path (CSV, XLSX, Parquet file, folder or glob), a pandas frame, or
#: ``table:NAME`` for a table of the backend's catalog (Spark).
Source = str | Path | pd.DataFrame
Kind = Literal["csv", "xlsx", "parquet", "frame", "table"]
TABLE_PREFIX = "table:"
RowNumbers = npt.NDArray[np.int64]

# Files are scanned for line breaks in blocks of this size (bounded memory for any file size).
_BLOCK = 1 << 24
_GLOB_CHARS = frozenset("*?[")

#: The columns a CSV header or a sheet may have. Payment exports have tens; Excel allows 16,384.
#: 10,000 keeps every real export (a file that wide reads in seconds) and refuses at once what is
#: no header (100,000 columns took the engine 45 s, then a memory limit that was never the cause).
MAX_COLUMNS = 10_000
#: The longest line read to find a CSV file's header and delimiter, in characters: the longest line
#: the engine reads anyway (DuckDB's ``max_line_size``, 2,000,000 bytes). A file without line
#: breaks is refused after that much, not read whole.
MAX_LINE = 2_000_000
#: Excel's last row: a sheet that says it goes further was not written by Excel.
EXCEL_ROWS = 1_048_576
#: The cells with a value a sheet may have: 50 million is Excel's every row 47 columns wide (a
#: workbook is read into memory, at about 20 bytes a cell); a larger table belongs in CSV or Parquet.
MAX_CELLS = 50_000_000


#: The delimiters a CSV file is looked at for, in order of preference when counts are equal.
DELIMITERS = (",", ";", "\t", "|")
#: The decimal marks an amount may be written with (``ReadOptions.decimal``).
DECIMAL_MARKS = (".", ",")
#: ``Described.decimal`` of a CSV file whose amounts decide no mark: read with the point, but an
#: amount that may be a thousand grouped with a point (``1.500``) is refused, giving both readings.
POINT_UNDECIDED = ""
#: A thousand grouped with a point (``1.500``): with a decimal comma 1500, with a point 1.5.
ONE_POINT = re.compile("[+-]?[1-9][0-9]{0,2}[.][0-9]{3}")
#: What groups thousands besides the mark that is not the decimal one: spaces (no-break ones
#: too) and the apostrophe (``1 234,56``, ``1'234.56``).
GROUPING = " \u00a0\u202f'"


def grouped_whole(separators: str) -> str:
    """A regular expression (for both backends and Python: no backslash) of a whole number
    grouped in threes by one of ``separators``, the same one throughout (``1,234 567`` is not a
    number), its first group not starting with 0 (``0,500`` is a decimal, never a thousand)."""
    groups = "|".join(f"([{mark}][0-9]{{3}})+" for mark in separators)
    return f"[1-9][0-9]{{0,2}}({groups})"


_COMMA_DECIMAL = re.compile(rf"[+-]?({grouped_whole('.' + GROUPING)}|[0-9]*),[0-9]+")  # 12,50, 1.234,56
_POINT_DECIMAL = re.compile(rf"[+-]?({grouped_whole(',' + GROUPING)}|[0-9]*)[.][0-9]+")  # 12.50, 1,234.56
#: ``1,234``: a thousand grouped, or 1.234 with a decimal comma; like ``1.234`` it decides nothing.
ONE_COMMA = re.compile("[+-]?[1-9][0-9]{0,2},[0-9]{3}")
_GROUPED = re.compile(r"[+-]?\d{1,3}(\.\d{3})+")  # 1.234: a thousand, or a point decimal
_SAMPLE = 1 << 16
_HEAD_LINES = 30  # lines looked at for a title above the header


#: The reading options, as ``ReadOptions`` names them (and the command, with dashes).
READ_OPTIONS = ("delimiter", "encoding", "sheet", "header_row", "decimal")


@dataclass(frozen=True)
class ReadOptions:
    """How to read a file where detection is not enough; ``None`` means detect.

    ``delimiter``: one character (CSV); ``encoding``: a Python codec name (CSV); ``sheet``: an
    Excel sheet's name or its 1-based number; ``header_row``: the 1-based line (CSV) or row (Excel)
    the column names are on, for a file with a title above them; ``decimal``: the amounts' decimal
    mark, ``.`` or ``,`` (European exports write ``1.234,56``; default: detected in a CSV file).
    """

    delimiter: str | None = None
    encoding: str | None = None
    sheet: str | int | None = None
    header_row: int | None = None
    decimal: str | None = None

    def __post_init__(self) -> None:
        if self.decimal is not None and self.decimal not in DECIMAL_MARKS:
            raise InputError(f"decimal: {self.decimal!r} is not a decimal mark: use '.' or ','")
        if self.delimiter is not None:
            delimiter = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(self.delimiter, self.delimiter)
            if len(delimiter) != 1 or delimiter in '\r\n"':
                raise InputError(
                    f"delimiter: {self.delimiter!r} is not one character (e.g. ';', ',', tab as '\\t')"
                )
            object.__setattr__(self, "delimiter", delimiter)
        if self.encoding is not None:
            try:
                codecs.lookup(self.encoding)
            except LookupError:
                raise InputError(
                    f"encoding: unknown encoding {self.encoding!r} (e.g. utf-8, utf-16, cp1252, latin-1)"
                ) from None
        if isinstance(self.sheet, str) and self.sheet.strip().isdigit():
            object.__setattr__(self, "sheet", int(self.sheet))
        if isinstance(self.sheet, int) and (isinstance(self.sheet, bool) or self.sheet < 1):
            raise InputError(f"sheet: {self.sheet!r} must be a sheet name or a number from 1")
        if self.header_row is not None:
            try:
                row = int(self.header_row)
            except (TypeError, ValueError):
                row = 0
            if isinstance(self.header_row, bool) or row < 1 or str(row) != str(self.header_row).strip():
                raise InputError(f"header-row: {self.header_row!r} must be a number from 1")
            object.__setattr__(self, "header_row", row)


@dataclass(frozen=True)
class ParquetPart:
    """Parquet files with the same schema: their columns (as written) are read as they are; the
    parts of a set are brought together as text, since a backend widening one file's type to
    another's can round amounts (DuckDB makes ``DECIMAL(38,10)`` and ``DECIMAL(38,2)`` the
    latter) or make them floats."""

    paths: tuple[Path, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Described:
    """What a source is: its kind, its name for people, its columns, and how to read it."""

    name: str
    kind: Kind
    columns: tuple[str, ...]  # as in the source, trimmed
    paths: tuple[Path, ...] = ()
    table: pa.Table | None = field(default=None, compare=False)  # frames and sheets, as text
    table_name: str = ""
    # CSV: how the file is written, and the line its header is on (1-based).
    delimiter: str = ","
    encoding: str = "utf-8"
    bom: bool = False
    header_line: int = 1
    titled: bool = False  # the header was given below the first lines (a title above it)
    sheet: str = ""  # Excel: the sheet read
    sheets: tuple[str, ...] = ()  # Excel: the workbook's sheets, in order
    decimal: str = "."  # the amounts' decimal mark (``,``: ``1.234,56``), or ``POINT_UNDECIDED``
    parts: tuple[ParquetPart, ...] = ()  # Parquet: the files, grouped by their schema


# ---------------------------------------------------------------------------------------------
# Describing


def describe(
    source: Source, side: str, amount_columns: frozenset[str], options: ReadOptions | None = None
) -> Described:
    """Look at ``source`` and refuse what cannot be read; ``amount_columns`` must not be floats
    (in any case: ``Amount`` may be taken for ``amount``)."""
    options = options or ReadOptions()
    amount_columns = frozenset(c.strip().lower() for c in amount_columns)
    described = _describe(source, side, amount_columns, options)
    if options.decimal is not None:
        return replace(described, decimal=options.decimal)
    return described


def _describe(source: Source, side: str, amount_columns: frozenset[str], options: ReadOptions) -> Described:
    if isinstance(source, pd.DataFrame):
        return _describe_frame(source, side, amount_columns)
    text = str(source)
    if text.startswith(TABLE_PREFIX):
        table_name = text[len(TABLE_PREFIX) :].strip()
        if not table_name:
            raise InputError(f"{text!r}: name the table after {TABLE_PREFIX!r}")
        return _describe_table(text, table_name, amount_columns)
    path = Path(source)
    mode = _mode(path)
    # A folder or a glob is a set of Parquet files; a file named like a glob (``settlement[1].csv``)
    # is the file.
    if (mode is not None and stat.S_ISDIR(mode)) or (mode is None and _GLOB_CHARS & set(text)):
        return _describe_parquet_set(text, path, amount_columns)
    regular_file(path, mode)
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt", ".tsv"):
            return _describe_csv(path, options, amount_columns)
        if suffix in (".xlsx", ".xlsm"):
            return _describe_xlsx(path, options, amount_columns)
        if suffix in (".parquet", ".pq"):
            return _describe_parquet(str(path), [path], amount_columns)
    except InputError:
        raise
    except Exception as exc:  # the readers raise many types; all mean "cannot read this file"
        raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise InputError(f"{path}: unsupported file type {suffix!r} (use .csv, .xlsx or .parquet)")


def _mode(path: Path) -> int | None:
    """``path``'s file type and mode (following links), None when nothing is there."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a folder on the way that cannot be entered, a name too long
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


#: What a path that is not a regular file is, in words.
_FILE_TYPES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_type(mode: int) -> str:
    """What a file of ``mode`` is, in words: ``a named pipe``, ``a character device`` ..."""
    return next((words for test, words in _FILE_TYPES if test(mode)), "not a file")


def regular_file(path: Path, mode: int | None = None) -> None:
    """Refuse a path that is missing or not a regular file: a named pipe waits for a writer
    forever, and ``/dev/zero`` never ends; the readers measure and re-read what they are given.
    ``mode``: the path's mode, when the caller has it already (``_mode``)."""
    mode = _mode(path) if mode is None else mode
    if mode is None:
        raise InputError(f"{path}: file not found")
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)


def _not_regular(path: Path, mode: int) -> InputError:
    return InputError(f"{path}: cannot be read (it is not a regular file but {file_type(mode)})")


def read_whole(path: Path, limit: int, what: str) -> bytes:
    """A regular file's bytes, for a file that is read whole (``what``: a rate file): refused when
    it is missing, not a regular file or longer than ``limit`` bytes. It is opened without
    waiting (``O_NONBLOCK``: a named pipe is refused at once rather than waited on) and never
    read past ``limit``: ``/dev/zero`` or a file growing meanwhile costs ``limit`` bytes at most."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise InputError(f"{path}: cannot be read (larger than {size_text(limit)}, the most a {what} may be)")
    return data


def size_text(size: int) -> str:
    """A limit in bytes as people write it: ``64 MiB``, ``4 KiB``, ``512 bytes``."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size:,} bytes"


def _describe_table(name: str, table_name: str, amount_columns: frozenset[str]) -> Described:
    """A table of the Spark session's catalog, by its schema: the session is the process's own,
    or one started from the environment (``backends.spark_session``)."""
    from toolkit.reconcile.backends import spark_session

    session = spark_session()
    try:
        fields = session.table(table_name).schema.fields
    except Exception as exc:  # Spark's AnalysisException: no such table or view
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name}: not a table of the Spark session's catalog ({first})") from None
    for column in fields:
        if column.name.strip().lower() in amount_columns and column.dataType.typeName() in (
            "float",
            "double",
        ):
            raise InputError(
                f"{name}: column {column.name.strip()!r} holds floats; store amounts as decimal or text"
            )
    return Described(name, "table", _columns_of([f.name for f in fields], name), table_name=table_name)


def _describe_frame(frame: pd.DataFrame, side: str, amount_columns: frozenset[str]) -> Described:
    """A pandas frame (its named index becomes a column), as an Arrow table numbered from 1."""
    if frame.index.name is not None or isinstance(frame.index, pd.MultiIndex):
        frame = frame.reset_index()
    name = f"<{side} frame>"
    table = _numbered_table(_frame_to_table(frame, name, amount_columns), first=1)
    return Described(name, "frame", _columns(table, name), table=table)


def _describe_csv(path: Path, options: ReadOptions, amount_columns: frozenset[str]) -> Described:
    encoding, bom = (options.encoding, False) if options.encoding else detect_encoding(path)
    if options.encoding and options.encoding.replace("_", "-").lower() in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # a BOM, if there is one, is not part of the first column's name
    lines = _head_lines(path, encoding, options.header_row)
    titled = options.header_row is not None
    if titled:
        header_line = options.header_row or 1
        delimiter = options.delimiter or detect_delimiter(lines[header_line - 1])
    else:
        header_line, delimiter = _find_header(lines, options.delimiter)
        titled = any(line.strip() for line in lines[: header_line - 1])
    for number, line in enumerate(lines[: header_line - 1], 1):  # a "title" too long to be one
        _split(path, number, line, delimiter)
    header_text = lines[header_line - 1] if header_line <= len(lines) else ""
    header = _split(path, header_line, header_text, delimiter) if header_text.strip() else []
    if not header:
        where = f"line {options.header_row}" if options.header_row else "no header row"
        raise InputError(f"{path}: empty file ({where})")
    if len(header) > MAX_COLUMNS:
        raise InputError(
            f"{path}: the header (line {header_line}) has {len(header):,} columns split by "
            f"{delimiter!r}; at most {MAX_COLUMNS:,} are read (is the delimiter right? --delimiter)"
        )
    columns = _columns_of(header, str(path))
    amounts = [i for i, name in enumerate(columns) if name.lower() in amount_columns]
    rows = _records(lines[header_line:], delimiter)
    return Described(
        str(path),
        "csv",
        columns,
        paths=(path,),
        delimiter=delimiter,
        encoding=encoding,
        bom=bom,
        header_line=header_line,
        titled=titled,
        decimal=detect_decimal([row[i] for row in rows for i in amounts if i < len(row)]),
    )


def is_comma_decimal(amount: str) -> bool:
    """Whether ``amount`` is written with a decimal comma (``12,50``, ``1.234,56``; not ``1,000.00``)."""
    return _COMMA_DECIMAL.fullmatch(amount.strip()) is not None


def detect_decimal(amounts: list[str]) -> str:
    """``,`` when the sampled amounts are written with a decimal comma (``12,50``, ``1.234,56``)
    and none with a decimal point (``12.50``, ``1,234.56``); ``.`` when one is; else
    ``POINT_UNDECIDED``. A lone ``1.234`` or ``1,234`` decides nothing (a thousand, or 1.234
    dinars): such a file keeps the point unless ``decimal`` says otherwise, and the point
    reading refuses ``1,234`` where it is ambiguous, and ``1.500`` where nothing decided (a
    German export's 1500 EUR was read as 1.50, its third decimal a zero that changes nothing)."""
    values = [value.strip() for value in amounts]
    comma = any(is_comma_decimal(v) and not ONE_COMMA.fullmatch(v) for v in values)
    point = any(_POINT_DECIMAL.fullmatch(v) and not _GROUPED.fullmatch(v) for v in values)
    if comma and not point:
        return ","
    return "." if point else POINT_UNDECIDED


def detect_encoding(path: Path) -> tuple[str, bool]:
    """The file's encoding as a Python codec name, and whether it starts with a BOM.

    A BOM says it; without one, NUL bytes in every other place say UTF-16; a file that decodes as
    UTF-8 all through (read in blocks) is UTF-8; else cp1252 (Excel's Western European
    default), or latin-1 for the five bytes cp1252 leaves undefined.
    """
    with path.open("rb") as handle:
        head = handle.read(_SAMPLE)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", True
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", True
    pairs = head[: len(head) - len(head) % 2]
    if pairs and pairs.count(0) * 4 >= len(pairs):  # text of mostly ASCII letters, one NUL each
        return ("utf-16-le" if pairs[1::2].count(0) > pairs[0::2].count(0) else "utf-16-be"), False
    for encoding in ("utf-8", "cp1252"):
        decoder = codecs.getincrementaldecoder(encoding)()
        read = 0
        try:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(_BLOCK), b""):
                    read += len(block)
                    decoder.decode(block)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            if encoding == "utf-8":  # exc.object: the bytes held back, then the block; read ends it
                _refuse_utf8_but_for(path, read - len(exc.object) + exc.start)
            continue
        return encoding, False
    return "latin-1", False


#: A character of more than one byte in UTF-8 (a cp1252 text almost never holds one: Ã¼).
_UTF8_LETTER = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def _refuse_utf8_but_for(path: Path, offset: int) -> None:
    """A file that is UTF-8 (its letters beyond ASCII are) but for a byte at ``offset`` (one line
    pasted from elsewhere) is refused, naming that line: read as cp1252 it turned every Müller
    into MÃ¼ller, and each of those keys into two exceptions."""
    with path.open("rb") as handle:
        seen = b""  # the last bytes of the blocks before, for a letter across two blocks
        for block in iter(lambda: handle.read(_BLOCK), b""):
            if _UTF8_LETTER.search(seen + block):
                break
            seen = (seen + block)[-3:]
        else:
            return
        handle.seek(0)
        before = handle.read(offset)
        byte = handle.read(1)
    line = before.count(b"\n") + 1
    raise InputError(
        f"{path}: UTF-8 but for line {line} (byte 0x{byte.hex().upper()} is not UTF-8, perhaps pasted "
        "from a cp1252 file): correct that line, or give this file's encoding "
        "(--ledger-encoding or --processor-encoding cp1252)"
    )


def _find_header(lines: list[str], delimiter: str | None) -> tuple[int, str]:
    """The header line (1-based) and the delimiter, from the first lines of the file.

    The delimiter is the candidate that splits the most lines into the same number of fields
    (more than one), the larger number winning a tie; the header is the first line split into
    about that many (one fewer allows a data row's trailing delimiter), so a title above the
    header (``Books, May 2026``) is passed over. Without such lines: the first non-blank line.
    """
    filled = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if not filled:
        return 1, delimiter or ","
    best: tuple[int, int, int, str] | None = None
    for rank, candidate in enumerate([delimiter] if delimiter else DELIMITERS):
        counts = [_fields(line, candidate) for _, line in filled]
        split = [c for c in counts if c > 1]
        if not split:
            continue
        mode = max(set(split), key=lambda c: (split.count(c), c))
        score = (split.count(mode), mode, -rank, candidate)
        if best is None or score > best:
            best = score
    if best is None:
        return filled[0][0], delimiter or detect_delimiter(filled[0][1])
    mode, chosen = best[1], best[3]
    wide = [(n, line) for n, line in filled if _fields(line, chosen) >= max(mode - 1, 2)]
    # A title Excel pads with delimiters (``Books May 2026;;;;``) is as wide as the header, with
    # one cell filled.
    named = [n for n, line in wide if _fields(line, chosen, filled=True) >= 2]
    return (named or [n for n, _ in wide])[0], chosen


def _fields(line: str, delimiter: str, *, filled: bool = False) -> int:
    """The fields of ``line`` (``filled``: those not empty). A line that ``delimiter`` leaves a
    value longer than the csv module reads (128 KiB: a wide header split by another candidate)
    is not split by it: one field."""
    try:
        fields = next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:
        return 1
    return sum(1 for f in fields if f.strip()) if filled else len(fields)


def _records(lines: list[str], delimiter: str) -> Iterator[list[str]]:
    """The records of ``lines`` up to one the csv module cannot read (a value past its 128 KiB
    limit, which the backends read): the rows before it decide the decimal mark."""
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        yield from reader
    except csv.Error:
        return


def _split(path: Path, number: int, line: str, delimiter: str) -> list[str]:
    """The fields of line ``number`` of the file; a value longer than the csv module reads
    (``csv.field_size_limit``, 128 KiB) is refused for what it is, naming the line."""
    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error as exc:
        raise InputError(
            f"{path}: line {number} cannot be read with the delimiter {delimiter!r} ({exc}; the line "
            f"is {len(line):,} characters long): is the delimiter right? (--delimiter)"
        ) from None


def detect_delimiter(header: str) -> str:
    """The candidate the header line holds most of outside quotes (``,`` when it holds none).

    The header alone decides: data rows may hold commas in amounts (``12,50``) or text.
    """
    outside = re.sub(r'"[^"]*"', "", header)
    counts = [(outside.count(d), -i, d) for i, d in enumerate(DELIMITERS)]
    best = max(counts)
    return best[2] if best[0] > 0 else ","


def _head_lines(path: Path, encoding: str, header_row: int | None) -> list[str]:
    """The first lines of the file, decoded: up to the header row (those above it are not kept:
    empty), or the first 30; a line longer than ``MAX_LINE`` is refused, not read whole."""
    lines: list[str] = []
    wanted = header_row or _HEAD_LINES
    try:
        with path.open(encoding=encoding, newline="") as handle:
            while len(lines) < wanted:
                line = handle.readline(MAX_LINE + 2)  # the line and its break, or more
                if not line:
                    break
                text = line.rstrip("\r\n")
                if len(text) > MAX_LINE:
                    raise InputError(
                        f"{path}: line {len(lines) + 1} is longer than {MAX_LINE:,} characters, the "
                        "most a CSV line may have: is the file CSV (and the --encoding right)?"
                    )
                keep = header_row is None or len(lines) + 1 == header_row
                lines.append(text if keep else "")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: cannot be decoded as {encoding} ({exc.reason} at byte {exc.start}); "
            "give the file's --encoding, e.g. cp1252 or utf-16"
        ) from None
    if header_row is not None and len(lines) < header_row:
        raise InputError(f"{path}: --header-row {header_row}: the file has only {len(lines)} line(s)")
    return lines


def _describe_xlsx(path: Path, options: ReadOptions, amount_columns: frozenset[str]) -> Described:
    """A sheet: the one named or numbered, else the first visible one whose header names the
    amount (``amount_columns``, as mapped: a cover sheet before the data is passed over, even one
    that says "Amount" below its title), else the first visible one with data, else the first with
    data. Its header row the one given, else ``_header_row``. The sheet is read a row at a time
    (``_sheet_table``): its declared range (``A1:XFD1048576``, 4.9 KB on disk) is never allocated."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True, keep_links=False)
    try:
        names = list(book.sheetnames)
        declared = {name: _declared_range(book[name]) for name in names}
        for name in names:  # rows as long as their cells, whatever range the sheet declares
            book[name].reset_dimensions()
        if isinstance(options.sheet, int):
            if options.sheet > len(names):
                raise InputError(
                    f"{path}: --sheet {options.sheet}: the workbook has {len(names)} sheet(s): "
                    + ", ".join(names)
                )
            sheet = names[options.sheet - 1]
            top = _top_rows(book[sheet])
        elif isinstance(options.sheet, str):
            if options.sheet not in names:
                raise InputError(f"{path}: no sheet {options.sheet!r}; sheets are {', '.join(names)}")
            sheet = options.sheet
            top = _top_rows(book[sheet])
        else:
            sheet, top = _data_sheet(book, names, amount_columns or frozenset({"amount"}), options.header_row)
        header_row = options.header_row if options.header_row is not None else _header_row(top)
        where = _Sheet(path, sheet, declared[sheet])
        table = _sheet_table(where, book[sheet], header_row, options.decimal or ".")
    finally:
        book.close()
    return Described(
        str(path),
        "xlsx",
        _columns(table, str(path)),
        paths=(path,),
        table=table,
        header_line=header_row,
        sheet=sheet,
        sheets=tuple(names),
    )


@dataclass(frozen=True)
class _Sheet:
    """The sheet read, for messages: its workbook, its name and the range it declares."""

    path: Path
    name: str
    declared: str

    def refuse(self, what: str) -> InputError:
        """``what`` is wrong with the sheet: one line naming the file, the sheet and its range."""
        declares = f" (it declares the range {self.declared})" if self.declared else ""
        return InputError(
            f"{self.path}: sheet {self.name!r} {what}{declares}; a workbook is read into memory: "
            "clear the cells beyond the data, or save the sheet as CSV"
        )


def _declared_range(worksheet: ReadOnlyWorksheet) -> str:
    """The range the sheet says it spans (its ``dimension``, ``A1:D20``), or "" if it says none."""
    from openpyxl.utils import get_column_letter

    bounds = (worksheet.min_column, worksheet.min_row, worksheet.max_column, worksheet.max_row)
    if not all(isinstance(b, int) and b > 0 for b in bounds):
        return ""
    first_column, first_row, last_column, last_row = bounds
    return f"{get_column_letter(first_column)}{first_row}:{get_column_letter(last_column)}{last_row}"


#: Rows of a sheet turned into Arrow arrays at a time: Python strings cost about 60 bytes each.
_SHEET_CHUNK = 1 << 16


def _sheet_table(sheet: _Sheet, worksheet: ReadOnlyWorksheet, header_row: int, mark: str) -> pa.Table:
    """The rows below ``header_row`` as text under the header's names, numbered as on the sheet
    (``source_row``, ``_ord``), blank rows left out. Read a row at a time; kept are only the
    columns with a name, as Arrow strings. Cells are read as pandas read them (``_cell_value``,
    ``_header_names``).

    Refused at the first row that shows it: a value beyond ``MAX_COLUMNS`` columns, a row past
    Excel's last (``EXCEL_ROWS``), more than ``MAX_CELLS`` cells."""
    from openpyxl.utils import get_column_letter

    kept: list[int] = []
    names: list[str] = []
    texts: list[list[str]] = []
    numbers: list[int] = []
    chunks: list[list[pa.Array]] = []
    cells = last = 0  # the cells read; the last row with a value
    for number, row in enumerate(worksheet.iter_rows(), 1):
        if number > EXCEL_ROWS:
            raise sheet.refuse(f"has rows beyond Excel's last ({EXCEL_ROWS:,})")
        cells += len(row)
        if cells > MAX_CELLS:
            raise sheet.refuse(f"has more than {MAX_CELLS:,} cells (by row {number:,})")
        values = [_cell_value(cell) for cell in row]
        width = next((i + 1 for i in range(len(values) - 1, -1, -1) if values[i] != ""), 0)
        if width > MAX_COLUMNS:
            raise sheet.refuse(
                f"has a value in cell {get_column_letter(width)}{number} (column {width:,}); "
                f"at most {MAX_COLUMNS:,} columns are read"
            )
        last = number if width else last
        if number == header_row:
            names, kept = _header_names(values)
            texts = [[] for _ in kept]
        elif number > header_row and kept:
            row_texts = [_cell_text(values[i], mark) if i < len(values) else "" for i in kept]
            if any(text.strip(WHITESPACE) for text in row_texts):  # a blank row is no row
                numbers.append(number)
                for column, text in zip(texts, row_texts, strict=True):
                    column.append(text)
            if len(texts[0]) >= _SHEET_CHUNK:
                chunks.append([pa.array(column, type=pa.string()) for column in texts])
                texts = [[] for _ in kept]
    if 0 < last < header_row:  # an empty sheet is an empty table, whatever its header row
        raise InputError(
            f"{sheet.path}: --header-row {header_row}: sheet {sheet.name!r} has only {last} row(s)"
        )
    chunks.append([pa.array(column, type=pa.string()) for column in texts])
    ords = pa.array(np.array(numbers, dtype=np.int64))
    columns = {name: pa.chunked_array([c[i] for c in chunks], pa.string()) for i, name in enumerate(names)}
    return pa.table({**columns, "_ord": ords, "source_row": ords})


def _cell_value(cell: Any) -> Any:
    """A cell as pandas' reader gave it (the toolkit read workbooks with it): empty and error
    cells "", a whole number as an int (``12.0`` is ``12``), else the value."""
    value = cell.value
    if value is None or cell.data_type == "e":
        return ""
    if cell.data_type == "n" and not isinstance(value, bool):
        whole = int(value)
        return whole if whole == value else value
    return value


def _header_names(values: list[Any]) -> tuple[list[str], list[int]]:
    """The header's names and the columns they are in, as pandas named them: a cell without a
    name leaves its column out; a name given again is ``name.1``, ``name.2``, skipping a name the
    header has (``x``, ``x``, ``x.1`` are ``x``, ``x.2``, ``x.1``)."""
    kept = [i for i, value in enumerate(values) if value != ""]
    names = [str(values[i]) for i in kept]
    given = set(names)
    counts: dict[str, int] = {}
    for i, name in enumerate(names):
        count = counts.get(name, 0)
        label = name
        while count > 0:
            counts[name] = count + 1
            label = f"{name}.{count}"
            count = count + 1 if label in given else counts.get(label, 0)
        names[i] = label
        counts[label] = count + 1
    return names, kept


#: The fewest columns a sheet of payments has (merchantReferenceId, amount, currency, status): a
#: cover's small table of totals under "Amount" has fewer.
_FEWEST_COLUMNS = 4


def _data_sheet(
    book: Any, names: list[str], amounts: frozenset[str], header_row: int | None
) -> tuple[str, list[tuple[int, list[Any]]]]:
    """The sheet ``_describe_xlsx`` reads when none is given, and its top rows (each sheet's are
    read once, here)."""
    tops = {name: _top_rows(book[name]) for name in names}
    visible = [name for name in names if book[name].sheet_state == "visible"]

    def header(name: str) -> list[Any]:
        row = header_row if header_row is not None else _header_row(tops[name])
        return next((cells for number, cells in tops[name] if number == row), [])

    named = (
        n
        for n in visible
        if len(header(n)) >= _FEWEST_COLUMNS and any(str(c).strip().lower() in amounts for c in header(n))
    )
    with_data = (n for n in (*visible, *names) if tops[n])
    sheet = next(named, None) or next(with_data, names[0])
    return sheet, tops[sheet]


def _header_row(top: list[tuple[int, list[Any]]]) -> int:
    """The first of the top rows that fills about as many cells as the widest of them (one fewer
    allows a data column without a name; a title above the header fills fewer)."""
    widest = max((len(cells) for _, cells in top), default=0)
    return next((row for row, cells in top if len(cells) >= max(widest - 1, 2)), 1)


def _top_rows(worksheet: ReadOnlyWorksheet) -> list[tuple[int, list[Any]]]:
    """The first 30 rows of a sheet: (row number, its non-empty cells)."""
    rows = []
    for number, values in enumerate(worksheet.iter_rows(min_row=1, max_row=30, values_only=True), 1):
        cells = [v for v in values if v is not None and str(v).strip()]
        if cells:
            rows.append((number, cells))
    return rows


def _describe_parquet_set(text: str, path: Path, amount_columns: frozenset[str]) -> Described:
    """A folder of Parquet files, or a glob of them."""
    pattern = str(path / "**" / "*.parquet") if path.is_dir() else text
    files = sorted(Path(f) for f in glob.glob(pattern, recursive=True) if Path(f).is_file())
    if not files and not path.is_dir():
        raise InputError(f"{text}: file not found, and no Parquet file matches it as a pattern")
    if not files:
        raise InputError(f"{text}: no Parquet files found")
    return _describe_parquet(text, files, amount_columns)


def _describe_parquet(name: str, files: list[Path], amount_columns: frozenset[str]) -> Described:
    """Every file's schema is read (a footer each), so that a file that cannot be read or holds
    float amounts is named before the engine starts, wherever it sorts in the set."""
    import pyarrow.parquet as pq

    by_schema: dict[pa.Schema, list[Path]] = {}
    for path in files:
        try:
            schema = pq.read_schema(path)
        except Exception as exc:
            raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
        for column in schema:
            if column.name.strip().lower() in amount_columns and pa.types.is_floating(column.type):
                raise InputError(
                    f"{name}: column {column.name.strip()!r} holds floats"
                    f"{f' in {path}' if len(files) > 1 else ''}; write amounts as text or decimal"
                )
        by_schema.setdefault(schema.remove_metadata(), []).append(path)
    names = list(dict.fromkeys(n for schema in by_schema for n in schema.names))
    parts = tuple(ParquetPart(tuple(paths), tuple(schema.names)) for schema, paths in by_schema.items())
    return Described(name, "parquet", _columns_of(names, name), paths=tuple(files), parts=parts)


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


def readable(described: Described) -> tuple[Path, int]:
    """The file the backends read for a CSV source, and the lines before its first.

    A UTF-8 file without a title above its header is read as it is; any other is copied to UTF-8
    from its header line on, in blocks (bounded memory), once per process and file.
    """
    path = described.paths[0]
    if described.encoding in ("utf-8", "utf-8-sig") and not described.titled:
        return path, 0
    stat = path.stat()
    return _utf8_copy(path, stat.st_mtime_ns, stat.st_size, described.encoding, described.header_line), (
        described.header_line - 1
    )


@functools.cache
def _copies() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="toolkit-csv-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=16)
def _utf8_copy(path: Path, mtime: int, size: int, encoding: str, header_line: int) -> Path:
    del mtime, size  # part of the cache key only: a changed file is copied again
    target = _copies() / f"{len(list(_copies().iterdir()))}-{path.stem}.csv"
    try:
        with (
            path.open(encoding=encoding, newline="") as source,
            target.open("w", encoding="utf-8", newline="") as copy,
        ):
            for _ in range(header_line - 1):
                source.readline()
            shutil.copyfileobj(source, copy, _BLOCK)
    except UnicodeDecodeError as exc:
        target.unlink(missing_ok=True)
        raise InputError(
            f"{path}: cannot be decoded as {encoding} ({exc.reason}); give the file's --encoding, "
            "e.g. cp1252 or utf-16"
        ) from None
    return target


def _csv_header_and_skip(path: Path, delimiter: str) -> tuple[list[str], int]:
    """The header record, and how many blank lines come before it."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        for record in reader:
            if record:
                return record, reader.line_num - 1
    return [], 0


def _cell_text(value: Any, mark: str) -> str:
    """A workbook cell as Excel shows it: a number at Excel's 15 significant digits (``=0.1+0.2``
    is stored as 0.30000000000000004 and shown 0.3; read as stored, it was refused as having too
    many decimals), written with the decimal mark the sheet is read with (a number cell has none
    of its own: with ``--decimal ,`` its 12.5 was refused as no decimal-comma amount)."""
    if isinstance(value, float) and math.isfinite(value):
        text = format(Decimal(format(value, ".15g")), "f")
        return text.replace(".", ",") if mark == "," else text
    return _text_of(value)


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
        if label.strip().lower() in amount_columns and (
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
    """``table`` with ``source_row`` (``first``, ``first + 1``, ...) and ``_ord``, the same, less
    its blank rows (every cell empty, as a blank line of a CSV file): not rows at all, where a
    person sees nothing to reconcile."""
    rows = pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    numbered = table.append_column("_ord", rows).append_column("source_row", rows)
    if not table.num_columns:
        return numbered
    cells = (pc.fill_null(table.column(i), "") for i in range(table.num_columns))
    return numbered.filter(functools.reduce(pc.or_, (pc.match_substring_regex(c, _WRITTEN) for c in cells)))


# ---------------------------------------------------------------------------------------------
# Reading into a backend


def read(backend: Backend, described: Described, only: frozenset[str] | None = None) -> Relation:
    """The source as a table of text in ``backend``, with ``_ord``, ``source_row``, ``_source``.

    ``only`` limits the columns read (trimmed names); the others are not read at all.
    """
    wanted = [c for c in described.columns if only is None or c in only]
    with backend.failures():
        if described.table is not None:
            table = described.table.select([*_raw_names(described.table, wanted), "_ord", "source_row"])
            kept = backend.register(table.rename_columns([*wanted, "_ord", "source_row"]), stem="frame")
            rows = Relation(f"SELECT * FROM {kept}", (*wanted, "_ord", "source_row"), (kept,))
        elif backend.name == "duckdb":
            rows = _read_duckdb(backend, described, wanted)
        else:
            rows = _read_spark(backend, described, wanted)
    if "_source" not in rows:
        rows = rows.mutate(_source=literal(described.name))
    texts = {
        c: f"COALESCE(CAST({ident(c)} AS VARCHAR), '')"
        for c in rows.columns
        if not c.startswith("_") and c != "source_row"
    }
    return rows.mutate(**texts)


def _raw_names(table: pa.Table, wanted: list[str]) -> list[str]:
    by_trimmed = {str(n).strip(): n for n in table.column_names}
    return [by_trimmed[c] for c in wanted]


def _read_duckdb(backend: Backend, described: Described, wanted: list[str]) -> Relation:
    raw = backend.con
    if described.kind == "csv":
        path, offset = readable(described)
        header, skip = _csv_header_and_skip(path, described.delimiter)
        read = [n for n in header if n.strip() in wanted]
        columns = ", ".join([*(f"{ident(n)} AS {ident(n.strip())}" for n in read), _blank_sql(header)])
        stored = backend.temp_name("csv")
        # A table keeps the file's order: its rowid is the row's place in the file.
        types = ", ".join(f"{literal(n)}: 'VARCHAR'" for n in header)
        raw.execute("SET preserve_insertion_order = true")
        try:
            raw.execute(
                f"CREATE TEMP TABLE {stored} AS SELECT {columns} FROM read_csv("
                f"{literal(str(path))}, header = true, skip = {skip}, auto_detect = false, "
                f"delim = {literal(described.delimiter)}, quote = '\"', escape = '\"', "
                f"columns = {{{types}}}, strict_mode = false)"
            )
        except duckdb.InvalidInputException as exc:
            raise _malformed(described, str(exc), offset) from None
        finally:
            raw.execute("SET preserve_insertion_order = false")
        rows = Relation(
            f"SELECT *, rowid AS _ord FROM {stored}", (*(n.strip() for n in read), "_blank", "_ord")
        )
        return _with_csv_lines(backend, rows, described, header, (path, offset))
    if described.kind == "parquet":
        names = backend.temp_name("parquet")
        as_text = len(described.parts) > 1
        selects = " UNION ALL BY NAME ".join(
            _parquet_select(part, wanted, as_text) for part in described.parts
        )
        raw.execute(f"CREATE TEMP VIEW {names} AS {selects}")
        return _ordered_by_file(
            Relation(f"SELECT * FROM {names}", (*wanted, "source_row", "_source")), described
        )
    raise InputError(f"{described.name}: tables by name are read by the pyspark backend only")


_CSV_ERROR = re.compile(r"CSV Error on Line: (\d+)\s*\nOriginal Line: ([^\n]*)\n([^\n]*)")


def _malformed(described: Described, message: str, offset: int) -> InputError:
    """A row the CSV reader cannot split into the header's columns (an export cut short, a quote
    left open), with the line an editor shows it on: the whole file is refused, not the row, since
    where its fields start and end is unknown."""
    found = _CSV_ERROR.search(message)
    if found is None:
        return InputError(f"{described.name}: cannot be read as CSV ({message.splitlines()[0]})")
    line, text, reason = int(found.group(1)) + offset, found.group(2), found.group(3).strip()
    return _unreadable_line(described, line, reason, text)


def _unreadable_line(described: Described, line: int, reason: str, text: str) -> InputError:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return InputError(
        f"{described.name}: line {line} cannot be read ({reason}; the line: {shown!r}); "
        "fix the row or export the file again"
    )


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


#: The bits of ``_ord`` below a file's place in a set of files: the row number in that file.
FILE_SHIFT = 40


def row_sql(ord: str) -> str:
    """A row's ``source_row`` from its ``_ord`` (the column ``ord``): what the engine keeps of a
    row is its ``_ord``, and the number people read is computed for the rows it reports."""
    return f"({ord} % {1 << FILE_SHIFT})"


def source_sql(described: Described, ord: str) -> str:
    """The file a row came from, from its ``_ord`` (the column ``ord``; a glob's files are
    numbered in ``_ord``'s high bits): the engine carries the number, and names the file only for
    rows it reports."""
    if len(described.paths) <= 1:
        return literal(described.name)
    cases = " ".join(
        f"WHEN {ord} < {(i + 1) << FILE_SHIFT} THEN {literal(str(p))}" for i, p in enumerate(described.paths)
    )
    return f"CASE {cases} ELSE {literal(described.name)} END"


def _read_spark(backend: Backend, described: Described, wanted: list[str]) -> Relation:
    from pyspark.sql import Column
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    session = backend.con
    view = backend.temp_name("rows")
    if described.kind == "csv":
        path, offset = readable(described)
        header = _csv_header_and_skip(path, described.delimiter)[0]
        schema = StructType([StructField(n, StringType()) for n in header])
        # A CSV read with values spanning lines is one partition per file, so the increasing
        # id is the row's place in the file.
        frame = (
            session.read.option("header", True)
            .option("multiLine", True)
            .option("escape", '"')
            .option("sep", described.delimiter)
            .option("mode", "FAILFAST")
            .schema(schema)
            .csv(str(path))
        )
        written = functools.reduce(
            lambda a, b: a | b, (F.coalesce(F.col(f"`{n}`").rlike(_WRITTEN), F.lit(False)) for n in header)
        )
        frame = frame.select(
            *[F.col(f"`{n}`").alias(n.strip()) for n in header if n.strip() in wanted],
            (~written).alias("_blank"),
            F.monotonically_increasing_id().alias("_ord"),
        )
        frame.createOrReplaceTempView(view)
        rows = Relation(f"SELECT * FROM {view}", tuple(frame.columns))
        return _with_csv_lines(backend, rows, described, header, (path, offset))
    if described.kind == "parquet":
        # One read per file, numbered by its place in the sorted list: a file's own path as Spark
        # reports it need not be the path it was given. Files of different schemas come together
        # as text (``ParquetPart``).
        as_text = len(described.parts) > 1
        raw = {path: {c.strip(): c for c in part.columns} for part in described.parts for path in part.paths}

        def column(path: Path, name: str) -> Column:
            value = F.col(f"`{raw[path][name]}`") if name in raw[path] else F.lit(None)
            return (value.cast("string") if as_text else value).alias(name)

        parts = [
            session.read.parquet(str(path)).select(
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
    frame = session.table(described.table_name)
    columns = [c for c in frame.columns if c.strip() in wanted] if wanted else frame.columns
    frame = frame.select(
        *[F.col(f"`{c}`").alias(c.strip()) for c in columns], F.monotonically_increasing_id().alias("_ord")
    )
    frame.createOrReplaceTempView(view)
    number = "ROW_NUMBER() OVER (ORDER BY _ord)"
    return Relation(f"SELECT * FROM {view}", tuple(frame.columns)).mutate(source_row=number, _ord=number)


def _with_csv_lines(
    backend: Backend, table: Relation, described: Described, header: list[str], read: tuple[Path, int]
) -> Relation:
    """``source_row`` from ``_ord``, the row's place (0, 1, ...): line ``_ord + 2`` unless blank
    lines or values spanning lines shift the rows, in which case each row's line is looked up;
    ``offset`` lines come before the file read (a title above the header, left out of a copy).
    ``_ord`` then becomes the line too (``row_sql``). Rows whose every field is empty (``_blank``:
    ``;;;;``, as a spreadsheet writes an empty row) are left out, as blank lines are. ``read``
    is the file the backend read and the lines before it (``readable``)."""
    path, offset = read
    count = int(backend.arrow(f"SELECT COUNT(*) AS n FROM ({table})").column("n")[0].as_py())
    lines_read, delimiters = _counted(path, described.delimiter)
    _refuse_extra_fields(described, read, len(header), count, delimiters)
    lines = _csv_row_lines(path, count, described.delimiter, lines_read)
    if lines is None:
        line = f"_ord + {2 + offset}"
        numbered = table.mutate(source_row=line, _ord=line)
    else:
        numbers = backend.register(
            pa.table({"_line_ord": np.arange(count, dtype=np.int64), "source_row": lines + offset}),
            stem="lines",
        )
        joined = table.left_join(numbers, "_s._ord = _j._line_ord", source_row="_j.source_row")
        numbered = joined.mutate(_ord="source_row")
    return numbered.filter("NOT _blank").drop("_blank")


def _counted(path: Path, delimiter: str) -> tuple[int, int]:
    """The file's lines (line breaks, less those of blank lines at its end) and its delimiters,
    counted in C in one pass of blocks: what ``_csv_row_lines`` and ``_refuse_extra_fields``
    decide by before walking any record."""
    breaks = delimiters = 0
    mark = delimiter.encode()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            breaks += block.count(b"\n")
            delimiters += block.count(mark)
        handle.seek(max(handle.tell() - 65536, 0))
        tail = handle.read()
    return breaks - tail[len(tail.rstrip(b"\r\n")) :].count(b"\n"), delimiters


def _refuse_extra_fields(
    described: Described, read: tuple[Path, int], width: int, count: int, delimiters: int
) -> None:
    """Refuse a file with a row of more fields than its header: DuckDB would drop the field that
    is too many where Spark refuses the file, and a row whose fields shifted cannot be trusted.

    The header and the ``count`` rows of ``width`` fields hold ``width - 1`` delimiters each (a
    row of fewer fields is refused by the reader itself), so a file holding no more delimiters
    than that (``delimiters``, by ``_counted``) has no such row. When it holds more (a
    delimiter inside quotes, as in ``"1,234.56"``, or a field too many), Arrow's parser splits
    its records (``_fields_beyond_header``); only when it finds a record too wide are the
    records walked with the csv module, to name its line (about 0.5 s a million rows)."""
    path, offset = read
    if delimiters <= (width - 1) * (count + 1) or not _fields_beyond_header(path, described.delimiter):
        return
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
        reader = csv.reader(handle, delimiter=described.delimiter)
        line = 0
        try:
            for record in reader:
                if len(record) > width:
                    reason = f"{len(record)} fields where the header has {width}"
                    text = described.delimiter.join(record)
                    raise _unreadable_line(described, line + 1 + offset, reason, text)
                line = reader.line_num
        except csv.Error:  # a field past the csv module's size limit: the backend's reading stands
            return


def _fields_beyond_header(path: Path, delimiter: str) -> bool:
    """Whether a record of the CSV file has more fields than its first (the header), as Arrow's
    multi-threaded parser splits them: about 0.07 s a million rows, where the csv module's walk
    takes 0.3 s. No column is converted (one missing column is asked for). True too when Arrow
    cannot parse the file at all, for the walk to decide."""
    beyond = False

    def invalid(row: pacsv.InvalidRow) -> str:
        nonlocal beyond
        beyond = beyond or row.actual_columns > row.expected_columns
        return "error" if beyond else "skip"  # a record too short is the backend's to refuse

    try:
        pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter,
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,
                invalid_row_handler=invalid,
            ),
            convert_options=pacsv.ConvertOptions(include_columns=["_none"], include_missing_columns=True),
        )
    except pa.ArrowException:
        return True
    return beyond


def _blank_sql(header: Sequence[str]) -> str:
    """SQL: whether every field of a CSV row is empty (``_with_csv_lines``), a field at a time (a
    CASE stops at the first field written, where AND would match every field of every row)."""
    written = " ".join(f"WHEN regexp_matches({ident(n)}, '{_WRITTEN}') THEN false" for n in header)
    return f"CASE {written} ELSE true END AS _blank"


#: The whitespace around a value that the check trims (``inputs._trimmed``).
WHITESPACE = " \t\n\r"
#: A character that is not such whitespace: a field holding one is written. The characters
#: themselves, no backslash, for Spark's sake (``_trimmed`` says why).
_WRITTEN = f"[^{WHITESPACE}]"


def _csv_row_lines(path: Path, count: int, delimiter: str, lines: int) -> RowNumbers | None:
    """The line each of the ``count`` data rows starts on, or None when it is ``row + 2``.

    The file's ``lines`` (``_counted``: blank lines at the end shift nothing) tell cheaply whether
    it has neither blank lines nor values spanning lines; only when it has are the records walked
    with the csv module, which numbers lines as an editor does.
    """
    if count == 0 or lines == count:  # header and rows: one line each, nothing between
        return None
    starts: list[int] = []
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
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


# ---------------------------------------------------------------------------------------------
# A look at a file for people (``toolkit reconcile inspect``)


def _refuse_unclosed_quote(described: Described, text: str) -> None:
    """Refuse, as the run does, a file (``text``: all of it after the header) in which a quoted
    value opens and no quote closes it: every line after it would be read as that one value."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=described.delimiter, strict=True)
    start = 1
    while True:
        try:
            next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # strict also refuses what the run reads (``"12,5"0``): only this
            if "unexpected end of data" in str(exc):
                opened = io.StringIO(text, newline="").readlines()[start - 1].rstrip("\r\n")
                raise InputError(
                    f"{described.name}: line {described.header_line + start} cannot be read (a quote "
                    f"opens a value that no quote closes; the line: {opened!r}); fix the row or "
                    "export the file again"
                ) from None
        start = reader.line_num + 1


def sample(described: Described, rows: int = 5) -> tuple[list[list[str]], int, bool]:
    """The first ``rows`` data rows as text, and the number of rows (exact, or estimated from
    the size of a large CSV file: the third value says which)."""
    if described.table is not None:
        raw = _raw_names(described.table, list(described.columns))
        head = described.table.select(raw).slice(0, rows).to_pylist()
        return [[str(r[c]) for c in raw] for r in head], described.table.num_rows, True
    if described.kind == "parquet":
        import pyarrow.parquet as pq

        first: list[dict[str, Any]] = []
        total = 0
        for path in described.paths:  # the first rows, whichever files (or groups) hold them
            with pq.ParquetFile(path) as file:
                total += file.metadata.num_rows
                for group in range(file.num_row_groups):
                    if len(first) < rows:
                        first += file.read_row_group(group).slice(0, rows - len(first)).to_pylist()
        return [[_text_of(r.get(c)) for c in described.columns] for r in first], total, True
    if described.kind != "csv":
        return [], 0, False
    path = described.paths[0]
    with path.open(encoding=described.encoding, newline="") as handle:
        for _ in range(described.header_line):
            handle.readline()
        start = handle.tell() if described.encoding in ("utf-8", "utf-8-sig") else None
        text = handle.read(_SAMPLE)
        whole = not handle.read(1)
    width = len(described.columns)
    if whole:
        _refuse_unclosed_quote(described, text)
    records = [  # the rows the run reads: a blank line or row (``;;;``) is none
        r
        for r in csv.reader(io.StringIO(text, newline=""), delimiter=described.delimiter)
        if any(v.strip(WHITESPACE) for v in r[:width])
    ]
    found = [[*r[:width], *[""] * (width - len(r))] for r in records[:rows]]
    if whole:
        return found, len(records), True
    # The last record of the sample may be cut: estimate from the whole ones.
    size = path.stat().st_size - (start or 0)
    used = len(text.encode(described.encoding.replace("-sig", "")))
    return found, round(size / used * max(len(records) - 1, 1)) if used else 0, False
