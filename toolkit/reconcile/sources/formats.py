"""What a CSV file is: its encoding, its delimiter, the line of its header (below a title), and
the decimal mark of its amounts, from its first lines, within bounds (``MAX_LINE``,
``MAX_COLUMNS``). The patterns of amounts here are read by the checks too (``inputs``)."""

from __future__ import annotations

import codecs
import csv
import re
from collections.abc import Iterator
from pathlib import Path

from toolkit.errors import InputError
from toolkit.reconcile.sources.described import Described, _columns_of
from toolkit.reconcile.sources.options import ReadOptions

# Files are scanned for line breaks in blocks of this size (bounded memory for any file size).
_BLOCK = 1 << 24
#: The columns a CSV header or a sheet may have. Payment exports have tens; Excel allows 16,384.
#: 10,000 keeps every real export (a file that wide reads in seconds) and refuses at once what is
#: no header (100,000 columns took the engine 45 s, then a memory limit that was never the cause).
MAX_COLUMNS = 10_000
#: The longest line read to find a CSV file's header and delimiter, in characters: the longest line
#: the engine reads anyway (DuckDB's ``max_line_size``, 2,000,000 bytes). A file without line
#: breaks is refused after that much, not read whole.
MAX_LINE = 2_000_000
#: The delimiters a CSV file is looked at for, in order of preference when counts are equal.
_DELIMITERS = (",", ";", "\t", "|")
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
#: The whitespace around a value that the check trims (``inputs.checks.trimmed``).
WHITESPACE = " \t\n\r"
#: A character that is not such whitespace: a field holding one is written. The characters
#: themselves, no backslash, for Spark's sake (``trimmed`` says why).
WRITTEN = f"[^{WHITESPACE}]"


def _describe_csv(path: Path, options: ReadOptions, amount_columns: frozenset[str]) -> Described:
    encoding, bom = (options.encoding, False) if options.encoding else _detect_encoding(path)
    if options.encoding and options.encoding.replace("_", "-").lower() in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # a BOM, if there is one, is not part of the first column's name
    lines = _head_lines(path, encoding, options.header_row)
    titled = options.header_row is not None
    if titled:
        header_line = options.header_row or 1
        delimiter = options.delimiter or _detect_delimiter(lines[header_line - 1])
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
        decimal=_detect_decimal([row[i] for row in rows for i in amounts if i < len(row)]),
    )


def is_comma_decimal(amount: str) -> bool:
    """Whether ``amount`` is written with a decimal comma (``12,50``, ``1.234,56``; not ``1,000.00``)."""
    return _COMMA_DECIMAL.fullmatch(amount.strip()) is not None


def _detect_decimal(amounts: list[str]) -> str:
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


def _detect_encoding(path: Path) -> tuple[str, bool]:
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
    for rank, candidate in enumerate([delimiter] if delimiter else _DELIMITERS):
        counts = [_fields(line, candidate) for _, line in filled]
        split = [c for c in counts if c > 1]
        if not split:
            continue
        mode = max(set(split), key=lambda c: (split.count(c), c))
        score = (split.count(mode), mode, -rank, candidate)
        if best is None or score > best:
            best = score
    if best is None:
        return filled[0][0], delimiter or _detect_delimiter(filled[0][1])
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


def _detect_delimiter(header: str) -> str:
    """The candidate the header line holds most of outside quotes (``,`` when it holds none).

    The header alone decides: data rows may hold commas in amounts (``12,50``) or text.
    """
    outside = re.sub(r'"[^"]*"', "", header)
    counts = [(outside.count(d), -i, d) for i, d in enumerate(_DELIMITERS)]
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
