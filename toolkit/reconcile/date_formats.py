"""How a side's dates are written, as a person says it: a strftime-style ``date_format`` and a
``timezone``, checked once and turned into what the date check needs (``inputs/dates.py``).

A format becomes a regular expression with a group per field and the role of each group, so
that the check assembles ISO text from the groups in SQL on either backend (Spark has no
``STRPTIME`` through the dialect translation). Patterns hold no backslash (Spark SQL drops an
unknown escape's backslash): a separator is written in brackets, ``[.]``.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass

from toolkit.errors import InputError

#: Each directive a format may hold: the role of its group and what it matches.
_DIRECTIVES: dict[str, tuple[str, str]] = {
    "d": ("day", "([0-9]{1,2})"),
    "m": ("month", "([0-9]{1,2})"),
    "Y": ("year", "([0-9]{4})"),
    "y": ("year2", "([0-9]{2})"),
    "b": ("month_name", "([A-Za-z]{3,9})"),
    "B": ("month_name", "([A-Za-z]{3,9})"),
    "H": ("hour", "([01]?[0-9]|2[0-3])"),
    "I": ("hour12", "(0?[1-9]|1[0-2])"),
    "M": ("minute", "([0-5][0-9])"),
    "S": ("second", "([0-5][0-9])"),
    "p": ("half", "([AaPp][Mm])"),
}
SUPPORTED = " ".join(f"%{d}" for d in _DIRECTIVES)

#: The separators a format may hold besides letters and digits.
_SEPARATORS = " /.-,:;_"

#: A time after a date whose format has none (``31.05.2025 21:30``): kept as written.
OPTIONAL_TIME = "( ([01]?[0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?)?"

#: English month names, full and abbreviated (``Sept`` too), in lower case, to their number.
MONTHS: dict[str, int] = {
    name: number
    for number, full in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        1,
    )
    for name in {full, full[:3], *(["sept"] if number == 9 else [])}
}

#: The two orders of a slashed date (``05/01/2025``), as the formats that read them.
DAY_FIRST, MONTH_FIRST = "%d/%m/%Y", "%m/%d/%Y"


@dataclass(frozen=True)
class DateFormat:
    """A format as a regular expression and the group (1-based) of each role it has."""

    written: str
    pattern: str
    groups: tuple[tuple[str, int], ...]

    def group(self, role: str) -> int | None:
        """The group of ``role`` (``day``, ``month``, ``hour``...), None when the format has none."""
        return dict(self.groups).get(role)


@functools.cache
def date_format(written: str) -> DateFormat:
    """``written`` (``%d %b %Y``) as a ``DateFormat``; ``InputError`` naming ``date_format`` for a
    directive the toolkit does not read, a field given twice or missing, or an odd separator."""
    pieces: list[str] = []
    roles: list[str] = []
    groups: list[tuple[str, int]] = []
    count = 0
    chars = iter(written)
    for char in chars:
        if char == "%":
            directive = next(chars, "")
            if directive == "%":
                pieces.append("%")
                continue
            if directive not in _DIRECTIVES:
                raise InputError(
                    f"date_format: %{directive} in {written!r} is not a directive it reads (use {SUPPORTED})"
                )
            role, pattern = _DIRECTIVES[directive]
            if role in roles:
                raise InputError(f"date_format: {written!r} gives the {role.replace('_', ' ')} twice")
            roles.append(role)
            groups.append((role, count + 1))
            count += pattern.count("(")
            pieces.append(pattern)
        elif char.isalnum() or char in _SEPARATORS:
            pieces.append(char if char.isalnum() or char == " " else f"[{char}]")
        else:
            raise InputError(
                f"date_format: {char!r} in {written!r} cannot be read (separators: letters, digits, "
                f"space and {' '.join(_SEPARATORS.strip())})"
            )
    _check_fields(written, set(roles))
    if "hour" not in roles and "hour12" not in roles:
        groups.append(("time", count + 1))
        pieces.append(OPTIONAL_TIME)
    return DateFormat(written, "^" + "".join(pieces) + "$", tuple(groups))


def _check_fields(written: str, roles: set[str]) -> None:
    """A day, a month and a year, and a time that reads: a 12-hour clock with its AM/PM."""
    needed = {"day": {"day"}, "month": {"month", "month_name"}, "year": {"year", "year2"}}
    missing = [name for name, ways in needed.items() if not ways & roles]
    if missing:
        raise InputError(f"date_format: {written!r} has no {' or '.join(missing)} (e.g. '%d/%m/%Y')")
    if len(roles & {"month", "month_name"}) > 1 or len(roles & {"year", "year2"}) > 1:
        raise InputError(f"date_format: {written!r} gives the month or the year twice")
    if ("hour12" in roles) != ("half" in roles) or {"hour", "hour12"} <= roles:
        raise InputError(f"date_format: {written!r}: %I (12-hour clock) goes with %p (AM/PM), %H without")
    timed = bool(roles & {"hour", "hour12"})
    if ("minute" in roles) != timed or ("second" in roles and "minute" not in roles):
        raise InputError(f"date_format: {written!r}: a time is hours and minutes (%H:%M), seconds optional")


#: An offset from UTC: ``+02:00``, ``+0200``, ``-05``.
_OFFSET = re.compile(r"([+-])([01][0-9]|2[0-3]):?([0-5][0-9])?")


@functools.cache
def time_zone(written: str) -> str:
    """``written`` as the check appends it to a time written without a zone: an IANA name
    (``Europe/Berlin``, checked against the zone database) after a space, or an offset as
    ``+02:00``; ``InputError`` naming ``timezone`` for anything else."""
    text = written.strip()
    offset = _OFFSET.fullmatch(text)
    if offset:
        sign, hours, minutes = offset.groups()
        return f"{sign}{hours}:{minutes or '00'}"
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"timezone: {written!r} is not a time zone (an IANA name such as Europe/Berlin, or an offset "
            "such as +02:00)"
        ) from None
    return f" {text}"
