"""How a notebook reads the files it is given: its reading parameters as the loaders' options."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import Reading


def reading_options(
    *,
    delimiter: str = "",
    encoding: str = "",
    sheet: str = "",
    header_row: int = 0,
    decimal: str = "",
    date_format: str = "",
    timezone: str = "",
    currency: str = "",
) -> Reading:
    """``load_ledger``'s reading options from the notebook's parameters, checked (``InputError``
    naming the parameter): blank text or a 0 header row means detect (dates: the forms read with
    no option; time zone: UTC; currency: the file's column); a sheet written as a number is the
    sheet's 1-based number."""
    from toolkit.errors import InputError
    from toolkit.reconcile.sources import ReadOptions

    written = sheet.strip()
    options: Reading = {
        "delimiter": delimiter or None,
        "encoding": encoding.strip() or None,
        "sheet": int(written) if written.isdigit() else (written or None),
        "header_row": header_row or None,
        "decimal": decimal.strip() or None,
        "date_format": date_format.strip() or None,
        "timezone": timezone.strip() or None,
        "currency": currency.strip() or None,
    }
    for name, value in options.items():
        try:
            ReadOptions(**{name: value})  # type: ignore[arg-type]
        except InputError as exc:
            raise InputError(f"{name}: {str(exc).split(': ', 1)[-1]}") from None
    return options
