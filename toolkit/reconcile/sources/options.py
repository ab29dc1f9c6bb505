"""How to read a file where detection is not enough: the options a person gives (``ReadOptions``,
``--delimiter``, ``--encoding``, ``--sheet``, ``--header-row``, ``--decimal``, ``--date-format``,
``--timezone``, ``--currency``), checked once."""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from toolkit.errors import InputError
from toolkit.money import is_currency
from toolkit.reconcile.date_formats import date_format, time_zone

#: The decimal marks an amount may be written with (``ReadOptions.decimal``).
_DECIMAL_MARKS = (".", ",")
#: The reading options, as ``ReadOptions`` names them (and the command, with dashes).
READ_OPTIONS = (
    "delimiter",
    "encoding",
    "sheet",
    "header_row",
    "decimal",
    "date_format",
    "timezone",
    "currency",
)


@dataclass(frozen=True)
class ReadOptions:
    """How to read a file where detection is not enough; ``None`` means detect.

    ``delimiter``: one character (CSV); ``encoding``: a Python codec name (CSV); ``sheet``: an
    Excel sheet's name or its 1-based number; ``header_row``: the 1-based line (CSV) or row (Excel)
    the column names are on, for a file with a title above them; ``decimal``: the amounts' decimal
    mark, ``.`` or ``,`` (European exports write ``1.234,56``; default: detected in a CSV file);
    ``date_format``: how the dates are written, strftime-style (``%d %b %Y``; ``date_formats.py``),
    tried before the forms the toolkit reads by itself; ``timezone``: the zone of a time written
    without one (an IANA name or an offset; default UTC); ``currency``: the ISO 4217 code of a
    file that has no currency column.
    """

    delimiter: str | None = None
    encoding: str | None = None
    sheet: str | int | None = None
    header_row: int | None = None
    decimal: str | None = None
    date_format: str | None = None
    timezone: str | None = None
    currency: str | None = None

    def __post_init__(self) -> None:
        self._check_dates_and_currency()
        if self.decimal is not None and self.decimal not in _DECIMAL_MARKS:
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

    def _check_dates_and_currency(self) -> None:
        """The date format and the time zone as the check reads them, the currency in upper case."""
        if self.date_format is not None:
            date_format(self.date_format)
        if self.timezone is not None:
            time_zone(self.timezone)
            object.__setattr__(self, "timezone", self.timezone.strip())
        if self.currency is not None:
            code = self.currency.strip().upper()
            if not is_currency(code):  # the codes of ``inputs.checks.currency_codes``
                raise InputError(f"currency: {self.currency!r} is not an ISO 4217 code (e.g. EUR, USD)")
            object.__setattr__(self, "currency", code)
