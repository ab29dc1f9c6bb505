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
backend itself (``Backend.read``), never through pandas.

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

The modules, by what they know: ``options`` (the reading options a person gives), ``described``
(``Described``: what a source is), ``files`` (regular files only), ``formats`` (a CSV file's
encoding, delimiter, header and decimal mark), ``sheets`` (Excel), ``frames`` (pandas frames),
``describe`` (a source by its kind), ``rows`` (the CSV file the backends read, and row numbers),
``reading`` (a source into a backend) and ``sample`` (what ``toolkit reconcile inspect`` shows).
The names other modules use are given here.
"""

from __future__ import annotations

from toolkit.reconcile.sources.describe import describe
from toolkit.reconcile.sources.described import Described, Source
from toolkit.reconcile.sources.files import read_whole, size_text
from toolkit.reconcile.sources.formats import (
    GROUPING,
    MAX_COLUMNS,
    MAX_LINE,
    ONE_COMMA,
    ONE_POINT,
    POINT_UNDECIDED,
    WHITESPACE,
    grouped_whole,
    is_comma_decimal,
)
from toolkit.reconcile.sources.options import READ_OPTIONS, ReadOptions
from toolkit.reconcile.sources.reading import read
from toolkit.reconcile.sources.rows import row_sql, source_sql
from toolkit.reconcile.sources.sample import sample

__all__ = [
    "GROUPING",
    "MAX_COLUMNS",
    "MAX_LINE",
    "ONE_COMMA",
    "ONE_POINT",
    "POINT_UNDECIDED",
    "READ_OPTIONS",
    "WHITESPACE",
    "Described",
    "ReadOptions",
    "Source",
    "describe",
    "grouped_whole",
    "is_comma_decimal",
    "read",
    "read_whole",
    "row_sql",
    "sample",
    "size_text",
    "source_sql",
]
