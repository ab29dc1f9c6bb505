"""Reference exchange rates (``--fx-rates FILE``): amounts in different currencies compared exactly.

The file is CSV, UTF-8 (a BOM is fine), with the header ``date,base,quote,rate`` (any order and
case, spaces around names ignored, no other column); each row says that on ``date`` (``YYYY-MM-DD``)
1 ``base`` = ``rate`` ``quote``, the rate written as a plain positive decimal (``0.92``,
``56.125``; no sign, exponent or thousands separator, at most 18 significant digits). Blank
lines are skipped. The same pair and day twice is fine with the same rate and an error with
another. The first problem stops the reading, as ``"{file}, line {n}: {what}"`` with the line an
editor shows; a file that cannot be used at all is named alone (``"{file}: file not found"``). The
file is read whole: a regular file of at most ``MAX_RATE_FILE`` bytes (64 MiB), so that a named
pipe or ``/dev/zero`` given by mistake is refused rather than waited on or read without end.

A rate is that of the payment's own day: no day falls back on another, so a missing rate is
reported (``no rate for EUR/USD on 2026-11-18``), never guessed. A pair the file has only the
other way round is used inverted, as the exact fraction ``1/rate``, so no digit is invented; when
the file has both directions (rarely exact inverses of each other), the direct one is used.

Conversion is exact (``fractions.Fraction``): minor units x rate x 10**(digits of the target -
digits of the source), rounded once to a whole minor unit, **half away from zero** (0.5 -> 1,
-0.5 -> -1, 0.49... -> 0): the rule of the euro conversion regulation (EC No 1103/97, art. 5) and
what most processors apply, rather than ``round_to_currency``'s half-to-even. A converted amount
must fit where every amount fits, in ``MAX_DIGITS`` digits of minor units (1e15 USD at 16,000 IDR
is 22): one that does not is an error naming the amount, the rate and the file, never an overflow.
"""

from __future__ import annotations

import csv
import io
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from toolkit.errors import InputError
from toolkit.money import from_minor, is_currency, minor_digits
from toolkit.reconcile.inputs import MAX_DIGITS
from toolkit.reconcile.sources import read_whole

#: The columns of a rate file, in the order messages name them.
COLUMNS: tuple[str, ...] = ("date", "base", "quote", "rate")
#: Significant digits a rate may have: more is not a rate anyone publishes (and stays exact anyway).
MAX_RATE_DIGITS = 18
#: The largest rate file read: it is read whole, into memory. Ten years of daily rates of 500 pairs
#: are 1.8 million rows, about 50 MiB; 64 MiB leaves room for those and bounds the cost of a wrong
#: path (a log file, a device).
MAX_RATE_FILE = 64 << 20

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_RATE = re.compile(r"(?P<whole>[0-9]+)(?:[.](?P<fraction>[0-9]+))?")
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_EXPECTED_HEADER = ",".join(COLUMNS)


class Rate(NamedTuple):
    """One row of a rate file: on ``day``, 1 ``base`` = ``rate`` ``quote`` (as written)."""

    day: date
    base: str
    quote: str
    rate: Decimal


@dataclass(frozen=True)
class Conversion:
    """An amount converted at a reference rate, and the rate that was used, to show beside it.

    ``rate`` is the rate as the file writes it; with ``inverse`` it is the rate of the reverse pair
    (1 ``to_currency`` = ``rate`` ``from_currency``), and the amount was divided by it.
    """

    expected_minor: int
    rate: Decimal
    inverse: bool
    from_currency: str
    to_currency: str

    def rate_text(self) -> str:
        """The rate as used, exactly: ``1 USD = 0.92 EUR``, or for a pair the file has only the
        other way round ``1 USD = 1/1.087 EUR (inverse of 1 EUR = 1.087 USD)``: a fraction
        rather than a rounded decimal, so the text shows no digit the file did not give."""
        written = _plain(self.rate)
        if not self.inverse:
            return f"1 {self.from_currency} = {written} {self.to_currency}"
        return (
            f"1 {self.from_currency} = 1/{written} {self.to_currency} "
            f"(inverse of 1 {self.to_currency} = {written} {self.from_currency})"
        )


@dataclass(frozen=True)
class Rates:
    """The rates of one file: ``source`` is the path as given, ``rows`` one per pair and day."""

    source: str
    rows: tuple[Rate, ...]
    _table: dict[tuple[date, str, str], Decimal] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table: dict[tuple[date, str, str], Decimal] = {}
        for row in self.rows:
            key = (row.day, row.base, row.quote)
            if table.setdefault(key, row.rate) != row.rate:
                raise InputError(
                    f"{self.source}: two rates for {row.base}/{row.quote} on {row.day.isoformat()}"
                )
        object.__setattr__(self, "_table", table)

    def __len__(self) -> int:
        """Rates held: one per pair and day (a row repeated with the same rate counts once)."""
        return len(self._table)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The (base, quote) pairs the file has, sorted, for a line such as ``EUR/USD, USD/PHP``."""
        return tuple(sorted({(base, quote) for _, base, quote in self._table}))

    def rate(self, base: str, quote: str, day: date) -> Decimal | Fraction | None:
        """1 ``base`` = r ``quote`` on ``day``: the written rate, else the exact inverse of the
        reverse pair's (a ``Fraction``), else None. Only that day: a rate is never borrowed."""
        found = self._lookup(base.upper(), quote.upper(), day)
        if found is None:
            return None
        written, inverse = found
        return 1 / Fraction(written) if inverse else written

    def convert(self, minor: int, from_currency: str, to_currency: str, day: date) -> Conversion | None:
        """``minor`` units of ``from_currency`` in whole minor units of ``to_currency`` at the rate
        of ``day``, rounded half away from zero (see the module docstring); None without a rate."""
        minor = operator.index(minor)  # numpy integers pass; floats never hold money
        source, target = from_currency.upper(), to_currency.upper()
        found = self._lookup(source, target, day)
        if found is None:
            return None
        written, inverse = found
        rate = 1 / Fraction(written) if inverse else Fraction(written)
        exact = minor * rate * Fraction(10) ** (minor_digits(target) - minor_digits(source))
        conversion = Conversion(_round_half_away(exact), written, inverse, source, target)
        digits = len(str(abs(conversion.expected_minor)))
        if digits > MAX_DIGITS:  # beyond int64, where every amount of the run is kept
            raise InputError(
                f"{self.source}: {from_minor(minor, source)} {source} at {conversion.rate_text()} on "
                f"{day.isoformat()} is an amount of {digits} digits in {target} minor units, more than "
                f"the {MAX_DIGITS} an amount may have: is the rate (or the amount) right?"
            )
        return conversion

    @staticmethod
    def missing_text(base: str, quote: str, day: date) -> str:
        """What a report says of a rate the file lacks: ``no rate for EUR/USD on 2026-11-18``."""
        return f"no rate for {base}/{quote} on {day.isoformat()}"

    def _lookup(self, base: str, quote: str, day: date) -> tuple[Decimal, bool] | None:
        if base == quote:
            return Decimal(1), False
        direct = self._table.get((day, base, quote))
        if direct is not None:
            return direct, False
        reverse = self._table.get((day, quote, base))
        return None if reverse is None else (reverse, True)


def load_rates(path: str | Path) -> Rates:
    """Read a rate file (format in the module docstring); ``InputError`` at the first problem."""
    source = str(path)
    rows: list[Rate] = []
    seen: dict[tuple[date, str, str], tuple[Decimal, int]] = {}
    positions: list[int] | None = None
    for line, cells in _records(source, _read_text(source)):
        if positions is None:
            positions = _header(source, line, cells)
            continue
        if len(cells) != len(COLUMNS):
            raise InputError(
                f"{source}, line {line}: {len(cells)} field(s), the header has {len(COLUMNS)}; "
                "quote a value that holds a comma"
            )
        try:
            row = _row(*(cells[i] for i in positions))
        except _BadValue as exc:
            raise InputError(f"{source}, line {line}: {exc}") from None
        first = seen.setdefault((row.day, row.base, row.quote), (row.rate, line))
        if first[0] != row.rate:
            raise InputError(
                f"{source}, line {line}: {row.base}/{row.quote} on {row.day.isoformat()} is "
                f"{_plain(row.rate)} here and {_plain(first[0])} on line {first[1]}; "
                "give one rate per pair and day"
            )
        if first[1] == line:
            rows.append(row)
    if positions is None:
        raise InputError(f"{source}: empty file; expected the header {_EXPECTED_HEADER} and one row per rate")
    if not rows:
        raise InputError(
            f"{source}: no rates after the header; expected one row per rate ({_EXPECTED_HEADER})"
        )
    return Rates(source, tuple(rows))


class _BadValue(Exception):
    """A cell that cannot be used; the message says what is wrong and what is expected."""


def _read_text(source: str) -> str:
    data = read_whole(Path(source), MAX_RATE_FILE, "rate file").removeprefix(_BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = len(_LINE_BREAK.split(data[: exc.start]))
        raise InputError(
            f"{source}, line {line}: not UTF-8 (byte {data[exc.start]:#04x}); save the file as UTF-8"
        ) from None


def _records(source: str, text: str) -> Iterator[tuple[int, list[str]]]:
    """Non-blank records with the line each starts on (a quoted value may span lines)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"{source}, line {line}: not valid CSV ({exc})") from None
        if any(cell.strip() for cell in cells):
            yield line, cells


def _header(source: str, line: int, cells: list[str]) -> list[int]:
    """Where each of ``COLUMNS`` is in the file's header."""
    names = [cell.strip().lower() for cell in cells]
    extra = [repr(cells[i].strip()) for i, name in enumerate(names) if name not in COLUMNS]
    missing = [name for name in COLUMNS if name not in names]
    twice = sorted({name for name in names if name in COLUMNS and names.count(name) > 1})
    problems = [
        *([f"unexpected column(s) {', '.join(extra)}"] if extra else []),
        *([f"missing column(s) {', '.join(missing)}"] if missing else []),
        *([f"column(s) {', '.join(twice)} given twice"] if twice else []),
    ]
    if problems:
        raise InputError(
            f"{source}, line {line}: {'; '.join(problems)}; "
            f"expected the header {_EXPECTED_HEADER} (any order)"
        )
    return [names.index(name) for name in COLUMNS]


def _row(day: str, base: str, quote: str, rate: str) -> Rate:
    row = Rate(_date(day.strip()), _currency("base", base), _currency("quote", quote), _rate(rate.strip()))
    if row.base == row.quote:
        raise _BadValue(f"base and quote are both {row.base}; a rate converts one currency into another")
    return row


def _date(text: str) -> date:
    expected = "expected YYYY-MM-DD, such as 2026-11-18"
    if not text:
        raise _BadValue(f"date is empty; {expected}")
    if _DATE.fullmatch(text) is None:
        raise _BadValue(f"date {text!r} is not an ISO date; {expected}")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise _BadValue(f"date {text!r} does not exist; {expected}") from None


def _currency(column: str, text: str) -> str:
    code = text.strip().upper()
    if not code:
        raise _BadValue(f"{column} is empty; expected an ISO 4217 currency code such as EUR")
    if not is_currency(code):
        raise _BadValue(
            f"{column} {text.strip()!r} is not an ISO 4217 currency code; expected one such as EUR"
        )
    return code


def _rate(text: str) -> Decimal:
    expected = "expected a positive decimal such as 0.92 or 56.125"
    if not text:
        raise _BadValue(f"rate is empty; {expected}")
    found = _RATE.fullmatch(text)
    if found is None:
        raise _BadValue(
            f"rate {text!r} is not a plain decimal; {expected}, with a point and without sign, "
            "exponent or thousands separator"
        )
    significant = (found["whole"] + (found["fraction"] or "").rstrip("0")).lstrip("0")
    if not significant:
        raise _BadValue(f"rate {text!r} is zero; {expected}")
    if len(significant) > MAX_RATE_DIGITS:
        raise _BadValue(f"rate {text!r} has {len(significant)} significant digits; at most {MAX_RATE_DIGITS}")
    return Decimal(text)


def _round_half_away(value: Fraction) -> int:
    """The nearest integer; a tie goes away from zero (2.5 -> 3, -2.5 -> -3)."""
    magnitude = abs(value)
    rounded = (2 * magnitude.numerator + magnitude.denominator) // (2 * magnitude.denominator)
    return rounded if value >= 0 else -rounded


def _plain(rate: Decimal) -> str:
    """The rate as written in the file (``Decimal`` keeps its digits), never in exponent form."""
    return f"{rate:f}"
