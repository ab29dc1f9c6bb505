"""The cut-off of a reconciliation and its settlement window: when a payment is not a break yet.

A payment still pending at the processor, or booked with no processor row yet, is ``in_transit``
while it is dated inside the window ``grace`` before the cut-off ``as_of``; past the window it is
the exception it always was. Rows dated after the cut-off take no part in the run (counted as
``after_cutoff``). Times are compared to the second, in UTC.

``--as-of`` takes an ISO time (``2026-11-18T18:00:00Z``; without a zone, UTC) or a bare date,
which means the end of that day in UTC (the whole day is in); ``--grace`` a duration such as
``36h``, ``3d``, ``1d12h`` or ``90m``. Both are checked where they are given: a cut-off whose window
would start before the year 1 (``--as-of 0001-01-01``), or that is no time in UTC, is an
``InputError``, never an ``OverflowError`` in the middle of a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from toolkit.errors import InputError

#: The settlement window when none is given.
DEFAULT_GRACE = timedelta(days=3)
_DURATION = re.compile(r"^(?:(?P<d>[0-9]{1,4})d)?(?:(?P<h>[0-9]{1,6})h)?(?:(?P<m>[0-9]{1,8})m)?$")
_BARE_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


@dataclass(frozen=True)
class Timing:
    """A cut-off and the settlement window before it."""

    as_of: datetime
    grace: timedelta = DEFAULT_GRACE

    def __post_init__(self) -> None:
        """A cut-off too early for its window is refused when given, not in the middle of a run."""
        self._window_start()

    def _window_start(self) -> datetime:
        try:
            return self.as_of - self.grace
        except OverflowError:
            raise InputError(
                f"--as-of {_utc_text(self.as_of)}: the settlement window of "
                f"{duration_text(self.grace)} before it would start before the year 1; give a later "
                "cut-off (or a shorter --grace)"
            ) from None

    @property
    def cutoff_seconds(self) -> int:
        """The cut-off in seconds since the epoch (rows after it take no part)."""
        return int(self.as_of.timestamp())

    @property
    def window_seconds(self) -> int:
        """The start of the settlement window, in seconds since the epoch."""
        return int(self._window_start().timestamp())

    def text(self) -> str:
        """``cut-off 2026-11-18 23:59:59 UTC, settlement window 3 days``, for reports."""
        return f"cut-off {_utc_text(self.as_of)}, settlement window {duration_text(self.grace)}"


def _utc_text(when: datetime) -> str:
    """``2026-11-18 23:59:59 UTC``; the year in four digits (``%Y`` writes the year 1 as ``1``)."""
    return f"{when.year:04d}-{when:%m-%d %H:%M:%S} UTC"


def timing(as_of: datetime | date | str | None, grace: timedelta | str | None = None) -> Timing:
    """A ``Timing`` from what a caller gives; ``as_of`` None means now."""
    when = datetime.now(UTC).replace(microsecond=0) if as_of is None else parse_as_of(as_of)
    window = DEFAULT_GRACE if grace is None else parse_grace(grace)
    return Timing(when, window)


def parse_as_of(value: datetime | date | str) -> datetime:
    """A cut-off in UTC: an aware datetime as it is, a naive one as UTC, a bare date as the end
    of that day (23:59:59 UTC)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+01:00 is in the year 0 in UTC
            raise InputError(
                f"--as-of {value.isoformat()}: that time in UTC is outside years 1 to 9999"
            ) from None
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, 23, 59, 59, tzinfo=UTC)
    text = str(value).strip()
    try:
        if _BARE_DATE.match(text):
            return parse_as_of(date.fromisoformat(text))
        return parse_as_of(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise InputError(
            f"--as-of {text!r}: write a date (2026-11-18, the end of that day in UTC) or an ISO time "
            "(2026-11-18T18:00:00Z)"
        ) from None


def parse_grace(value: timedelta | str) -> timedelta:
    """A settlement window: ``36h``, ``3d``, ``1d12h``, ``90m``, ``0`` (no window)."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise InputError("--grace must not be negative")
        return value
    text = str(value).strip().lower()
    found = _DURATION.match(text)
    if text == "0":
        return timedelta(0)
    if not text or found is None:
        raise InputError(f"--grace {text!r}: write a duration such as 36h, 3d, 1d12h or 90m")
    return timedelta(days=int(found["d"] or 0), hours=int(found["h"] or 0), minutes=int(found["m"] or 0))


def duration_text(window: timedelta) -> str:
    """A settlement window in words: whole days and hours (``3 days``, ``1 day 12 hours``)."""
    days, rest = divmod(int(window.total_seconds()), 86_400)
    hours, rest = divmod(rest, 3_600)
    parts = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in ((days, "day"), (hours, "hour")) if n]
    if rest or not parts:
        minutes = rest // 60
        parts.append(f"{minutes} minute{'s' if minutes != 1 else ''}")
    return " ".join(parts)
