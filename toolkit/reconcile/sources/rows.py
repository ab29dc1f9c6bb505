"""The rows of a source as people find them, and the CSV file the backends read.

A CSV file not in UTF-8, or with a title above its header, is read through a UTF-8 copy
(``readable``), so that both backends read the same bytes; each row's line is then counted, or
looked up where blank lines or values spanning lines shift them (``with_csv_lines``). A row's
number and file are computed from its ``_ord`` for the rows reported (``row_sql``,
``source_sql``).
"""

from __future__ import annotations

import atexit
import csv
import functools
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pacsv

from toolkit.errors import InputError
from toolkit.reconcile.relation import Relation, literal
from toolkit.reconcile.sources.described import named_cells
from toolkit.reconcile.sources.formats import _BLOCK

if TYPE_CHECKING:
    from toolkit.reconcile.backends import Backend
    from toolkit.reconcile.sources.described import Described


_RowNumbers = npt.NDArray[np.int64]
#: The bits of ``_ord`` below a file's place in a set of files: the row number in that file.
FILE_SHIFT = 40
#: The bits of ``_ord`` below the part of a row read as several movements (an export's row with
#: its refund or fee beside the charge: ``laid_out.split_movements``): the row number.
PART_SHIFT = 36


def row_sql(ord: str) -> str:
    """A row's ``source_row`` from its ``_ord`` (the column ``ord``): what the engine keeps of a
    row is its ``_ord``, and the number people read is computed for the rows it reports."""
    return f"({ord} % {1 << PART_SHIFT})"


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


def csv_header(path: Path, delimiter: str) -> tuple[list[str], int]:
    """The header record, and how many blank lines come before it."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        for record in reader:
            if record:
                return named_cells(record), reader.line_num - 1
    return [], 0


def with_csv_lines(
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
    counted by numpy in one pass of blocks (twice as fast as ``bytes.count``: 0.09 s for the
    160 MB of a million rows a side): what ``_csv_row_lines`` and ``_refuse_extra_fields``
    decide by before walking any record."""
    breaks = delimiters = 0
    mark = delimiter.encode()
    one_byte = len(mark) == 1  # else a character of several bytes in UTF-8
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            octets = np.frombuffer(block, dtype=np.uint8)
            breaks += int(np.count_nonzero(octets == ord("\n")))
            delimiters += int(np.count_nonzero(octets == mark[0])) if one_byte else block.count(mark)
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
                    raise unreadable_line(described, line + 1 + offset, reason, text)
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


def unreadable_line(described: Described, line: int, reason: str, text: str) -> InputError:
    """The file refused for the row at ``line`` (``reason``; ``text``, the row, shortened)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return InputError(
        f"{described.name}: line {line} cannot be read ({reason}; the line: {shown!r}); "
        "fix the row or export the file again"
    )


def _csv_row_lines(path: Path, count: int, delimiter: str, lines: int) -> _RowNumbers | None:
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
