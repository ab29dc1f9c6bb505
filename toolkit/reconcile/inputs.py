"""Loading the two sides of a reconciliation: files or frames -> validated, normalised frames.

Every input row ends up either in ``LoadedInput.frame`` (usable) or in ``LoadedInput.rejected``
(with the reason), so rows in = rows usable + rows rejected. Amounts are read as text and turned
into integer minor units with vectorised string and integer arithmetic: never through float, and
never one Python ``Decimal`` per row (a million rows must load in well under a second).

Row numbers are as in the file: for CSV, the line an editor shows the row on (the header is line
1 unless blank lines precede it; blank lines and values spanning lines are counted); for Excel,
the sheet's row number with the header as row 1; for Parquet files and frames, which have no
header row, the first row is row 1.

A period (``select_period``) keeps the rows dated inside it, rejects those whose date cannot be
read and counts the rest in ``LoadedInput.outside``: rows in = usable + rejected + outside.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import InputError
from toolkit.models import PAYMENT_STATUS_LABELS, PAYMENT_STATUS_NAMES
from toolkit.money import MoneyError, minor_digits

#: Columns every payments input must have (after the mapping is applied).
REQUIRED_COLUMNS: tuple[str, ...] = ("merchantReferenceId", "amount", "currency", "status")
#: Columns of a subscription ledger.
SUBSCRIPTION_COLUMNS: tuple[str, ...] = (
    "subscriptionId", "merchantReferenceId", "priceId", "quantity", "amount", "currency", "state",
)
#: Expected states in a subscription ledger.
SUBSCRIPTION_STATES: tuple[str, ...] = ("active", "canceled")
#: Columns of ``LoadedInput.rejected``: the raw text of the row, where it was and why it was refused.
REJECTED_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId", "amount", "currency", "status", "source_row", "detail",
)

# The payment status codes of the API (1/2/3/5) and the journal's own ``unknown`` (no code).
_STATUS_CODES: dict[str, str] = {str(code): name for code, name in PAYMENT_STATUS_LABELS.items()}
# int64 holds 18 full decimal digits: integer digits + minor digits may not exceed that.
_MAX_DIGITS = 18
_POW10 = np.array([10**i for i in range(_MAX_DIGITS + 1)], dtype=np.int64)
# Files are scanned for line breaks in blocks of this size (bounded memory for any file size).
_BLOCK = 1 << 24

Source = str | Path | pd.DataFrame
RowNumbers = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LoadedInput:
    """One side of a reconciliation, validated.

    ``frame`` holds the usable rows: ``merchantReferenceId`` (string), ``amount`` (the text as
    written), ``amountMinor`` (int64, exact minor units), ``currency`` (categorical, uppercase ISO
    4217), ``status`` (categorical of ``PAYMENT_STATUS_NAMES``), ``source_row`` (int64) and every
    other column carried along as text. ``rejected`` has ``REJECTED_COLUMNS``. ``outside``
    counts the rows a period left out (``select_period``), so that ``row_count`` (every row of
    the input) is always ``len(frame) + len(rejected) + outside``.
    """

    source: str
    side: str
    frame: pd.DataFrame
    rejected: pd.DataFrame
    row_count: int
    outside: int = 0

    def __repr__(self) -> str:
        outside = f", outside={self.outside}" if self.outside else ""
        return (
            f"LoadedInput(source={self.source!r}, side={self.side!r}, rows={self.row_count}, "
            f"usable={len(self.frame)}, rejected={len(self.rejected)}{outside})"
        )


# ---------------------------------------------------------------------------------------------
# Reading


def _read_csv_header(path: Path) -> list[str]:
    """The first record that is not a blank line (the CSV reader skips those too)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return next((record for record in csv.reader(handle) if record), [])


def _numbered(count: int, first: int) -> RowNumbers:
    return np.arange(first, first + count, dtype=np.int64)


def _csv_row_lines(path: Path, count: int) -> RowNumbers:
    """The line of the file each of the ``count`` data rows starts on.

    pyarrow skips blank lines and reads quoted values across lines, so row ``i`` is on line
    ``i + 2`` only when the file has neither. Counting the line breaks (in C, block by block) tells
    that cheaply; only when it does not hold are the records walked with the csv module, which
    numbers lines as an editor does. Blank lines at the end of the file shift nothing.
    """
    breaks = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            breaks += block.count(b"\n")
        handle.seek(max(handle.tell() - 65536, 0))
        tail = handle.read()
    trailing = tail[len(tail.rstrip(b"\r\n")):].count(b"\n")
    if count == 0 or breaks - trailing == count:  # header and rows: one line each, nothing between
        return _numbered(count, 2)
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
        return _numbered(count, 2)
    if len(starts) != count + 1:  # the two readers disagree: keep the plain numbering
        return _numbered(count, 2)
    return np.array(starts[1:], dtype=np.int64)


def _read_file(path: Path, only: frozenset[str] | None = None) -> tuple[pa.Table, RowNumbers]:
    """Read a file as a table of strings; returns the table and the row number of each row.

    ``only`` limits the columns read (the command does not need the carried ones).
    """
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt"):
            import pyarrow.csv as pacsv

            header = _read_csv_header(path)
            if not header:
                raise InputError(f"{path}: empty file (no header row)")
            convert = pacsv.ConvertOptions(
                column_types={name: pa.string() for name in header}, strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                include_columns=[h for h in header if h.strip() in only] if only else None,
            )
            # Quoted values may hold line breaks (a note over two lines): read them as values.
            parse = pacsv.ParseOptions(newlines_in_values=True)
            table = pacsv.read_csv(path, parse_options=parse, convert_options=convert)
            return table, _csv_row_lines(path, table.num_rows)
        if suffix in (".xlsx", ".xlsm"):
            frame = pd.read_excel(path, dtype=str, keep_default_na=False, engine="openpyxl")
            if only:
                frame = frame[[c for c in frame.columns if str(c).strip() in only]]
            return _frame_to_table(frame, str(path)), _numbered(len(frame), 2)
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            if only:
                names = pq.read_schema(path).names
                table = pq.read_table(path, columns=[n for n in names if n.strip() in only])
            else:
                table = pq.read_table(path)
            return table, _numbered(table.num_rows, 1)
    except InputError:
        raise
    except Exception as exc:  # the readers raise many types; all mean "cannot read this file"
        raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise InputError(f"{path}: unsupported file type {suffix!r} (use .csv, .xlsx or .parquet)")


def _text_of(value: Any) -> str:
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        return "" if value != value else repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _frame_to_table(
    frame: pd.DataFrame, name: str, amount_columns: frozenset[str] = frozenset({"amount"})
) -> pa.Table:
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


def _as_table(
    source: Source, side: str, mapping: Mapping[str, str] | None = None,
    only: frozenset[str] | None = None,
) -> tuple[pa.Table, RowNumbers, str]:
    """The source as a table of strings, the row number of each of its rows, and its name."""
    if isinstance(source, pd.DataFrame):
        frame = source
        if frame.index.name is not None or isinstance(frame.index, pd.MultiIndex):
            frame = frame.reset_index()
        name = f"<{side} frame>"
        amounts = frozenset({"amount", (mapping or {}).get("amount", "amount")})
        return _frame_to_table(frame, name, amounts), _numbered(len(frame), 1), name
    path = Path(source)
    table, rows = _read_file(path, only)
    return table, rows, str(path)


def _strings(table: pa.Table, column: str, name: str,
             raw: pa.ChunkedArray | None = None) -> pa.ChunkedArray:
    """A column as trimmed strings, missing cells empty."""
    array = _raw_strings(table, column, name) if raw is None else raw
    return pc.utf8_trim_whitespace(pc.fill_null(array, ""))


def _unguarded(keys: pa.ChunkedArray) -> pa.ChunkedArray:
    """Keys as they were before a CSV writer's formula guard (``'=...`` back to ``=...``).

    The toolkit's own CSV files (the sandbox's export, exceptions.csv) put an apostrophe before a
    cell a spreadsheet would execute; read back, the key must be the payment's own again.
    """
    if not pc.any(pc.starts_with(keys, "'")).as_py():
        return keys
    return pc.replace_substring_regex(keys, r"^'([=+\-@\t\r])", r"\1")


def _raw_strings(table: pa.Table, column: str, name: str) -> pa.ChunkedArray:
    """A column as strings, untrimmed; non-text Parquet columns are cast exactly, floats refused."""
    array = table.column(column)
    if pa.types.is_floating(array.type) and column in ("amount", "quantity"):
        raise InputError(f"{name}: column {column!r} holds floats; write amounts as text or decimal")
    if not pa.types.is_string(array.type):
        array = pc.cast(array, pa.string())
    return array


def _apply_mapping(
    table: pa.Table, mapping: Mapping[str, str] | None, required: Sequence[str], name: str
) -> pa.Table:
    """Rename the user's columns to canonical names and check the required ones are there."""
    names = [str(n).strip() for n in table.column_names]
    if mapping:
        reverse: dict[str, str] = {}
        for canonical, own in mapping.items():
            if own not in names:
                raise InputError(
                    f"{name}: column {own!r} (mapped to {canonical!r}) not found; "
                    f"columns are {', '.join(names)}"
                )
            reverse[own] = canonical
        names = [reverse.get(n, n if n not in mapping else f"{n} (original)") for n in names]
    table = table.rename_columns(names)
    for column in required:
        if column not in names:
            raise InputError(
                f"{name}: required column {column!r} is missing; columns are {', '.join(names)}"
            )
    return table


# ---------------------------------------------------------------------------------------------
# Vectorised conversions


def _lookup(
    values: pa.ChunkedArray, table: Mapping[str, int], normalise: Any = None
) -> npt.NDArray[np.int64]:
    """Map each string through ``table`` (missing -> -1), looking up each distinct value once.

    ``normalise`` (e.g. ``str.upper``) is applied to the distinct values only, so that trimming
    and case folding cost nothing per row.
    """
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks != 1 else encoded.chunk(0)
    dictionary = encoded.dictionary.to_pylist()
    if normalise is not None:
        dictionary = [normalise(v) if v is not None else "" for v in dictionary]
    lut = np.array([table.get(value, -1) for value in dictionary] or [-1], dtype=np.int64)
    indices = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)
    return lut[indices] if len(indices) else np.empty(0, dtype=np.int64)


def _known_digits(codes: list[str]) -> dict[str, int]:
    digits: dict[str, int] = {}
    for code in codes:
        with contextlib.suppress(MoneyError):
            digits[code] = minor_digits(code)
    return digits


def currency_digits(currencies: pa.ChunkedArray) -> tuple[pa.ChunkedArray, npt.NDArray[np.int64]]:
    """Uppercase the currencies and give each row its minor digits (-1 for an unknown code)."""
    upper = pc.utf8_upper(currencies)
    return upper, _lookup(upper, _known_digits(pc.unique(upper).to_pylist()))


def _currency_column(
    raw: pa.ChunkedArray,
) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.int64]]:
    """Per row: index into the list of valid uppercase codes (-1 if unknown), and the digits."""
    encoded = pc.dictionary_encode(raw)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks != 1 else encoded.chunk(0)
    normal = [str(v or "").strip().upper() for v in encoded.dictionary.to_pylist()]
    known = _known_digits(sorted(set(normal)))
    codes = sorted(known)
    position = {code: i for i, code in enumerate(codes)}
    lut_index = np.array([position.get(v, -1) for v in normal] or [-1], dtype=np.int64)
    lut_digits = np.array([known.get(v, -1) for v in normal] or [-1], dtype=np.int64)
    indices = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)
    if not len(indices):
        empty = np.empty(0, dtype=np.int64)
        return empty, codes, empty
    return lut_index[indices], codes, lut_digits[indices]


def parse_minor(
    amounts: pa.ChunkedArray, digits: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """Exact major-unit text -> integer minor units, vectorised (no regex, no float, no Decimal).

    Returns the minor units and an error code per row: 0 ok, 1 not a number, 2 more decimals
    than the currency allows, 3 too many digits for exact integer arithmetic, 4 currency unknown.
    ``10.1`` and ``10.10`` give the same minor units; trailing zeros beyond the currency's
    digits are accepted (``12.300`` USD is 1230), other extra decimals are refused, not rounded.

    The text without its sign and its one decimal point must be all digits: that integer ``N``
    is the amount times ``10**f`` (``f`` digits after the point), so the minor units are
    ``N * 10**(d - f)``, or ``N // 10**(f - d)`` when the extra digits are zeros.
    """
    n = len(amounts)
    errors = np.zeros(n, dtype=np.int8)
    if n == 0:
        return np.zeros(0, dtype=np.int64), errors
    text = pc.utf8_trim_whitespace(pc.fill_null(amounts, ""))
    negative = pc.starts_with(text, "-")
    signed = pc.or_(negative, pc.starts_with(text, "+"))
    body = pc.if_else(signed, pc.utf8_slice_codeunits(text, 1), text)
    dot = pc.find_substring(body, ".").to_numpy(zero_copy_only=False).astype(np.int64)
    size = pc.binary_length(body).to_numpy(zero_copy_only=False).astype(np.int64)
    digits_only = pc.replace_substring(body, ".", "", max_replacements=1)
    is_number = pc.ascii_is_decimal(digits_only).to_numpy(zero_copy_only=False)
    frac_len = np.where(dot >= 0, size - dot - 1, 0)
    int_len = np.where(dot >= 0, dot, size)
    errors[~is_number] = 1
    ok = errors == 0
    errors[ok & (digits < 0)] = 4
    ok = errors == 0
    errors[ok & ((int_len + frac_len > _MAX_DIGITS) | (int_len + digits > _MAX_DIGITS))] = 3
    ok = errors == 0
    safe = pc.if_else(pa.array(ok), digits_only, pa.scalar("0"))
    number = pc.cast(safe, pa.int64()).to_numpy(zero_copy_only=False)
    d = np.where(ok, digits, 0)
    f = np.where(ok, frac_len, 0)
    up = np.clip(d - f, 0, _MAX_DIGITS)
    down = np.clip(f - d, 0, _MAX_DIGITS)
    divisor = _POW10[down]
    extra = number % divisor
    errors[ok & (extra != 0)] = 2
    ok = errors == 0
    minor = np.where(f > d, number // divisor, number * _POW10[up])
    minor = np.where(negative.to_numpy(zero_copy_only=False), -minor, minor)
    minor[~ok] = 0
    return minor.astype(np.int64), errors


def minor_text(minor: npt.NDArray[np.int64], digits: npt.NDArray[np.int64]) -> pa.Array:
    """Exact major-unit text (``12.30``, ``-0.050``, ``1200``) from minor units, vectorised."""
    minor = np.asarray(minor, dtype=np.int64)
    digits = np.asarray(digits, dtype=np.int64)
    if not len(minor):
        return pa.array([], type=pa.string())
    magnitude = np.abs(minor)
    scale = _POW10[digits]
    whole = pc.cast(pa.array(magnitude // scale), pa.string())
    # scale + fraction = "1" followed by the zero-padded fraction: drop the leading "1".
    frac = pc.utf8_slice_codeunits(pc.cast(pa.array(magnitude % scale + scale), pa.string()), 1)
    text = pc.if_else(pa.array(digits > 0), pc.binary_join_element_wise(whole, frac, "."), whole)
    signed = pc.binary_join_element_wise(pa.scalar("-"), text, "")
    return pc.if_else(pa.array(minor < 0), signed, text)


def minor_to_text(minor: npt.NDArray[np.int64], digits: npt.NDArray[np.int64]) -> list[str]:
    """``minor_text`` as a list of Python strings."""
    return [str(t) for t in minor_text(minor, digits).to_pylist()]


def _status_lookup() -> dict[str, int]:
    table = {name: i for i, name in enumerate(PAYMENT_STATUS_NAMES)}
    for code, name in _STATUS_CODES.items():
        table[code] = PAYMENT_STATUS_NAMES.index(name)
    return table


_AMOUNT_ERRORS: dict[int, str] = {
    1: "amount {amount!r} is not a number",
    2: "amount {amount!r} has more decimals than {currency} allows ({digits})",
    3: "amount {amount!r} has too many digits",
}


# ---------------------------------------------------------------------------------------------
# Loading


def _rejected_frame(
    table: pa.Table, bad: npt.NDArray[np.bool_], row_numbers: RowNumbers, reasons: list[str]
) -> pd.DataFrame:
    rows = np.flatnonzero(bad)
    data: dict[str, Any] = {}
    for column in ("merchantReferenceId", "amount", "currency", "status"):
        if column in table.column_names:
            data[column] = table.column(column).take(pa.array(rows)).to_pylist()
        else:
            data[column] = [""] * len(rows)
    data["source_row"] = row_numbers[rows]
    data["detail"] = reasons
    return pd.DataFrame(data, columns=list(REJECTED_COLUMNS))


def load_payments(
    source: Source, *, side: str, mapping: Mapping[str, str] | None = None, carry: bool = True
) -> LoadedInput:
    """Load one side of a payments reconciliation (``side`` is ``ledger`` or ``processor``).

    ``carry=False`` reads only the required columns of a file (faster; nothing is carried).
    """
    only = None if carry else frozenset((mapping or {}).get(c, c) for c in REQUIRED_COLUMNS)
    raw, row_numbers, name = _as_table(source, side, mapping, only)
    table = _apply_mapping(raw, mapping, REQUIRED_COLUMNS, name)
    # Duplicate column names would make the lookups ambiguous.
    seen: set[str] = set()
    for column in table.column_names:
        if column in seen:
            raise InputError(f"{name}: column {column!r} appears twice")
        seen.add(column)
    n = table.num_rows
    raw_keys = _unguarded(_raw_strings(table, "merchantReferenceId", name))
    keys = _strings(table, "merchantReferenceId", name, raw=raw_keys)
    amounts = _raw_strings(table, "amount", name)
    currency_index, currency_codes, digits = _currency_column(_raw_strings(table, "currency", name))
    status_codes = _lookup(_raw_strings(table, "status", name), _status_lookup(),
                           normalise=lambda v: v.strip().lower())
    minor, amount_errors = parse_minor(amounts, digits)

    no_key = (pc.binary_length(keys).to_numpy(zero_copy_only=False) == 0) if n else np.zeros(0, bool)
    bad = no_key | (digits < 0) | (status_codes < 0) | (amount_errors != 0)
    reasons: list[str] = []
    good = ~bad
    good_rows = np.flatnonzero(good)
    if bad.any():
        reasons = _reasons(np.flatnonzero(bad), no_key, digits, status_codes, amount_errors, table)
        mask = pa.array(good)
        kept, keys = table.filter(mask), keys.filter(mask)
        minor, currency_index, status_codes = minor[good], currency_index[good], status_codes[good]
    else:
        kept = table

    def text(column: str) -> pd.api.extensions.ExtensionArray:
        array = kept.column(column)
        if not pa.types.is_string(array.type):
            array = pc.cast(array, pa.string())
        return pd.array(array, dtype=pd.ArrowDtype(pa.string()))

    frame_data: dict[str, Any] = {
        "merchantReferenceId": pd.array(keys, dtype=pd.ArrowDtype(pa.string())),
        "amount": text("amount"),
        "amountMinor": minor,
        "currency": pd.Categorical.from_codes(
            currency_index, categories=currency_codes  # type: ignore[call-overload]
        ),
        "status": pd.Categorical.from_codes(
            status_codes, categories=list(PAYMENT_STATUS_NAMES)  # type: ignore[call-overload]
        ),
        "source_row": row_numbers[good_rows],
    }
    for column in table.column_names:
        if column not in frame_data:
            frame_data[column] = text(column)
    frame = pd.DataFrame(frame_data)
    rejected = _rejected_frame(table, bad, row_numbers, reasons)
    return LoadedInput(source=name, side=side, frame=frame, rejected=rejected, row_count=n)


def _reasons(
    rows: npt.NDArray[np.int64],
    no_key: npt.NDArray[np.bool_],
    digits: npt.NDArray[np.int64],
    status_codes: npt.NDArray[np.int64],
    amount_errors: npt.NDArray[np.int8],
    table: pa.Table,
) -> list[str]:
    """Say, for each rejected row, every reason it cannot be used (few rows: Python is fine)."""
    take = pa.array(rows)
    amounts = table.column("amount").take(take).to_pylist()
    raw_currencies = table.column("currency").take(take).to_pylist()
    statuses = table.column("status").take(take).to_pylist()
    upper = [str(c or "").strip().upper() for c in raw_currencies]
    reasons: list[str] = []
    for i, row in enumerate(rows.tolist()):
        parts: list[str] = []
        if no_key[row]:
            parts.append("merchantReferenceId is empty")
        if digits[row] < 0:
            parts.append(f"currency {raw_currencies[i]!r} is not an ISO 4217 code")
        if status_codes[row] < 0:
            parts.append(
                f"status {statuses[i]!r} is not one of {', '.join(PAYMENT_STATUS_NAMES)} or 1/2/3/5"
            )
        code = int(amount_errors[row])
        if code in _AMOUNT_ERRORS:
            parts.append(
                _AMOUNT_ERRORS[code].format(
                    amount=amounts[i], currency=upper[i], digits=int(digits[row])
                )
            )
        reasons.append("; ".join(parts))
    return reasons


def load_ledger(
    source: Source, *, mapping: Mapping[str, str] | None = None, carry: bool = True
) -> LoadedInput:
    """Load the merchant's books (CSV, .xlsx, Parquet or a frame)."""
    return load_payments(source, side="ledger", mapping=mapping, carry=carry)


def load_processor(
    source: Source, *, mapping: Mapping[str, str] | None = None, carry: bool = True
) -> LoadedInput:
    """Load the processor side: a settlement export file or the journal's payments frame."""
    return load_payments(source, side="processor", mapping=mapping, carry=carry)


def load_subscription_ledger(
    source: Source, *, mapping: Mapping[str, str] | None = None
) -> LoadedInput:
    """Load a subscription ledger; ``frame`` has ``SUBSCRIPTION_COLUMNS`` plus ``amountMinor``.

    ``quantity`` becomes int64; ``state`` is lowercased. Rows without a subscriptionId, with a
    bad amount, currency, quantity or state are rejected with the reason.
    """
    raw, row_numbers, name = _as_table(source, "subscription ledger", mapping)
    table = _apply_mapping(raw, mapping, SUBSCRIPTION_COLUMNS, name)
    n = table.num_rows
    text = {column: _strings(table, column, name).to_pylist() for column in table.column_names}
    currencies, digits = currency_digits(_strings(table, "currency", name))
    minor, amount_errors = parse_minor(_strings(table, "amount", name), digits)
    upper = currencies.to_pylist()
    good_rows: list[int] = []
    quantities: list[int] = []
    bad_rows: list[int] = []
    reasons: list[str] = []
    for row in range(n):
        parts: list[str] = []
        if not text["subscriptionId"][row]:
            parts.append("subscriptionId is empty")
        if digits[row] < 0:
            parts.append(f"currency {text['currency'][row]!r} is not an ISO 4217 code")
        code = int(amount_errors[row])
        if code in _AMOUNT_ERRORS:
            parts.append(
                _AMOUNT_ERRORS[code].format(
                    amount=text["amount"][row], currency=upper[row], digits=int(digits[row])
                )
            )
        quantity_text = text["quantity"][row]
        if not quantity_text.isdigit():
            parts.append(f"quantity {quantity_text!r} is not a whole number")
        if text["state"][row].lower() not in SUBSCRIPTION_STATES:
            parts.append(f"state {text['state'][row]!r} is not active or canceled")
        if parts:
            bad_rows.append(row)
            reasons.append("; ".join(parts))
        else:
            good_rows.append(row)
            quantities.append(int(quantity_text))
    frame = pd.DataFrame({column: [values[r] for r in good_rows] for column, values in text.items()})
    frame["currency"] = [upper[r] for r in good_rows]
    if len(frame):
        frame["state"] = frame["state"].str.lower()
    frame["quantity"] = np.array(quantities, dtype=np.int64)
    frame["amountMinor"] = minor[good_rows] if good_rows else np.zeros(0, dtype=np.int64)
    frame["source_row"] = row_numbers[np.array(good_rows, dtype=np.intp)]
    if frame.empty:
        frame = frame.reindex(columns=[*text, "amountMinor", "source_row"])
    bad = np.zeros(n, dtype=bool)
    bad[bad_rows] = True
    rejected = _rejected_frame(table.rename_columns(
        [c if c != "state" else "status" for c in table.column_names]
    ), bad, row_numbers, reasons)
    return LoadedInput(source=name, side="subscription ledger", frame=frame, rejected=rejected,
                       row_count=n)


# ---------------------------------------------------------------------------------------------
# Periods


def _moments(values: pd.Series) -> pd.Series:
    """Text as written in a file (ISO dates or times, or epoch milliseconds) -> UTC timestamps.

    NaT where the text is empty or cannot be read; text without a digit (``today``, ``now``,
    which pandas would read as the current time) cannot be read either.
    """
    text = pd.Series(values.to_numpy(dtype=object, na_value=""), index=values.index)
    text = text.astype(str).str.strip()
    digits = text.str.fullmatch(r"\d{11,18}")  # epoch milliseconds (int64 holds 18 digits)
    out = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    if digits.any():
        out[digits] = pd.to_datetime(text[digits].astype("int64"), unit="ms", utc=True,
                                     errors="coerce")
    rest = ~digits & text.str.contains(r"\d")
    if rest.any():
        out[rest] = pd.to_datetime(text[rest], utc=True, errors="coerce", format="mixed")
    return out


def _period_bounds(start: str, end: str) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """[start, day after end) in UTC; whole days, so ``end`` is inclusive."""
    try:
        lower = pd.Timestamp(start, tz="UTC") if start else None
        upper = pd.Timestamp(end, tz="UTC").normalize() + pd.Timedelta(days=1) if end else None
    except ValueError as exc:
        raise InputError(f"period_start/period_end must be dates like 2024-05-31 ({exc})") from None
    if (lower is not None and pd.isna(lower)) or (upper is not None and pd.isna(upper)):
        raise InputError("period_start/period_end must be dates like 2024-05-31")
    return lower, upper


def _undated(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows whose ``column`` cannot be read as rejected rows, with the reason."""
    written = frame[column].to_numpy(dtype=object, na_value="")
    detail = [
        f"{column} {text!r} is not a date or time (e.g. 2024-05-31, or epoch milliseconds)"
        if str(text).strip() else f"{column} is empty"
        for text in written.tolist()
    ]
    data: dict[str, Any] = {}
    for name, own in (("merchantReferenceId", "merchantReferenceId"), ("amount", "amount"),
                      ("currency", "currency"), ("status", "status"), ("status", "state")):
        if own in frame.columns:
            data[name] = frame[own].to_numpy(dtype=object, na_value="").astype(str).tolist()
    data["source_row"] = frame["source_row"].to_numpy(dtype=np.int64)
    data["detail"] = detail
    return pd.DataFrame(data, columns=list(REJECTED_COLUMNS)).fillna("")


def select_period(
    loaded: LoadedInput, column: str, start: str | None, end: str | None
) -> LoadedInput:
    """The usable rows of ``loaded`` whose ``column`` falls in [start, end] (whole days, UTC).

    A row whose date is empty or cannot be read cannot be placed in or out of the period: it is
    rejected with the reason, like any row that cannot be used. Rows dated outside the period are
    counted in ``outside``, so the accounting still adds up. No bounds: ``loaded`` as it is.
    """
    first, last = str(start or "").strip(), str(end or "").strip()
    if not first and not last:
        return loaded
    frame = loaded.frame
    if column not in frame.columns:
        raise InputError(f"{loaded.source}: no {column!r} column to select the period "
                         f"{first or '...'} to {last or '...'} by")
    lower, upper = _period_bounds(first, last)
    when = _moments(frame[column])
    unreadable = when.isna().to_numpy()
    inside = ~unreadable
    if lower is not None:
        inside &= (when >= lower).to_numpy()
    if upper is not None:
        inside &= (when < upper).to_numpy()
    rejected = loaded.rejected
    if unreadable.any():
        undated = _undated(frame[unreadable], column)
        rejected = undated if rejected.empty else pd.concat([rejected, undated], ignore_index=True)
        rejected = rejected.sort_values("source_row", kind="stable", ignore_index=True)
    outside = int((~inside & ~unreadable).sum())
    return dataclasses.replace(
        loaded, frame=frame[inside].reset_index(drop=True), rejected=rejected,
        outside=loaded.outside + outside,
    )
