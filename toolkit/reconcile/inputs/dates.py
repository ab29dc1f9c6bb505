"""A side's dates and times read into epoch seconds by string operations in SQL (the same on
DuckDB and, translated, on Spark), and the order of its slashed dates decided from its rows.

Forms read: epoch milliseconds, ISO dates and times (``_ISO_WHEN``), the side's own
``date_format`` where given, and the forms ledgers and exports write (``BUILT_IN``: day-first
dotted dates, ``01 May 2025``, ``May 1, 2025``). A slashed date (``05/01/2025``) is read only in
the order the side's rows decide (``slashed_format``) or its ``date_format`` says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolkit.errors import InputError
from toolkit.reconcile import sources
from toolkit.reconcile.date_formats import (
    DAY_FIRST,
    MONTH_FIRST,
    MONTHS,
    OPTIONAL_TIME,
    DateFormat,
    date_format,
    time_zone,
)
from toolkit.reconcile.relation import Relation, ident, literal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolkit.reconcile.backends import Backend
    from toolkit.reconcile.sources import Described

#: The dates and times both backends read alike (each reads more, not the same more: DuckDB
#: takes 24:00 and Spark a zone written against the time, ``10:00UTC``, or a space before an
#: offset): a date, then a time with or without seconds and fractions, then, after seconds,
#: ``Z``, an offset (``+02:00``, ``+0200``, ``+02``) or, after a space, a zone's name (``UTC``,
#: ``Europe/Paris``).
_ISO_WHEN = (
    "^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    "([T ]([01]?[0-9]|2[0-3]):[0-9]{1,2}(:[0-9]{1,2}([.][0-9]+)?"
    "(Z|[+-][0-9]{2}(:?[0-9]{2})?| [A-Za-z][A-Za-z0-9_/+-]*)?)?)?$"
)

#: A time without seconds and with a zone (``2025-05-04 10:00 Europe/Paris``): Spark refuses it
#: where DuckDB reads it, so it is read with ``:00`` written in (group 1, then the zone, group 3).
_ISO_MINUTES_ZONED = (
    "^([0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[T ]([01]?[0-9]|2[0-3]):[0-9]{1,2})"
    "(Z|[+-][0-9]{2}(:?[0-9]{2})?| [A-Za-z][A-Za-z0-9_/+-]*)$"
)

#: The forms ledgers and exports write that the toolkit reads with no option: a date as German,
#: Swiss or Austrian Excel writes it, day first with dots (``31.05.2025``); Xero's and a bank's
#: ``01 May 2025``; QuickBooks' and an American export's ``May 1, 2025`` (English month names,
#: abbreviated or full, any case); each with a time after it or none. A date with slashes is not
#: among them: ``05/04`` is the 5th of April or the 4th of May, depending on who wrote it.
BUILT_IN = ("%d.%m.%Y", "%d %b %Y", "%b %d, %Y")

#: A naive time (no zone or offset) as ISO text: the date and hours and minutes (group 1), the
#: seconds (group 3, maybe empty).
_NAIVE = "^([0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[T ]([01]?[0-9]|2[0-3]):[0-9]{1,2})(:[0-9]{1,2}([.][0-9]+)?)?$"

#: A slashed date, day and month in either order, with a time or none.
SLASHED = "^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})" + OPTIONAL_TIME + "$"
_SLASHED = re.compile(SLASHED)

#: The rows of a side looked at (cheaply, by ``sources.sample``) for slashed dates.
SAMPLE_ROWS = 50


def _matches(value: str, pattern: str) -> str:
    return f"REGEXP_MATCHES({value}, {literal(pattern)})"


def _extract(value: str, pattern: str, group: int) -> str:
    return f"REGEXP_EXTRACT({value}, {literal(pattern)}, {group})"


def _month_number(name: str) -> str:
    """An English month's name (any case, full or abbreviated) as its number, ``01`` to ``12``."""
    cases = " ".join(f"WHEN {literal(n)} THEN '{m:02d}'" for n, m in sorted(MONTHS.items()))
    return f"CASE LOWER({name}) {cases} END"


def _iso_of(text: str, form: DateFormat) -> str:
    """The ISO text of ``text`` written as ``form`` says (seconds written in where a time has
    none): the year, the month, the day, then the time."""
    pattern = form.pattern

    def group(role: str) -> str:
        return _extract(text, pattern, form.group(role) or 0)

    year = group("year") if form.group("year") else f"'20' || {group('year2')}"
    month = f"LPAD({group('month')}, 2, '0')" if form.group("month") else _month_number(group("month_name"))
    date = f"{year} || '-' || {month} || '-' || LPAD({group('day')}, 2, '0')"
    if form.group("time"):
        return f"{date} || {group('time')}"
    hour = group("hour") if form.group("hour") else _twelve_hour(group("hour12"), group("half"))
    second = group("second") if form.group("second") else "'00'"
    return f"{date} || ' ' || LPAD({hour}, 2, '0') || ':' || {group('minute')} || ':' || {second}"


def _twelve_hour(hour: str, half: str) -> str:
    """A 12-hour clock's hour and its AM/PM as the hour of the day (12 AM is 0)."""
    pm = f"CASE WHEN UPPER({half}) = 'PM' THEN 12 ELSE 0 END"
    return f"CAST(TRY_CAST({hour} AS INT) % 12 + {pm} AS VARCHAR)"


def with_epoch_seconds(
    table: Relation, column: str, out: str, *, written: str | None = None, zone: str | None = None
) -> Relation:
    """``table`` with ``out``: the text of ``column``, trimmed by the caller (once per row), as
    seconds since the epoch, UTC (null when unreadable): the form ``written`` (a ``date_format``)
    first where given, then epoch milliseconds, ISO dates or times, and the ``BUILT_IN`` forms. A
    time written without a zone is in ``zone`` (a ``timezone`` option; default UTC); a date
    without a time is that day, UTC. Seconds, not a timestamp: Spark has no timestamp from
    milliseconds, and whole seconds compare and subtract alike everywhere. Cut, never rounded, to
    the second (milliseconds lose their last three digits as text).

    Built in stages (each a select of its own, as ``parse_amounts``), so that each value is
    computed once per row: ``_how`` says which form read the row, one CASE trying each form only
    on the rows the ones before did not read (a file is almost always written in one form, and
    each pattern tried costs every row a match; a stage for each form took 10M epoch times
    0.2 s more)."""
    text = ident(column)
    forms = [date_format(f) for f in ((written,) if written else ()) + BUILT_IN]
    patterns = [
        *(f.pattern for f in forms[: 1 if written else 0]),
        "^[0-9]{11,18}$",
        _ISO_WHEN,
        _ISO_MINUTES_ZONED,
        *(f.pattern for f in forms[1 if written else 0 :]),
    ]
    tried = " ".join(f"WHEN {_matches(text, pattern)} THEN {n}" for n, pattern in enumerate(patterns, 1))
    t = table.mutate(_how=f"CASE {tried} ELSE 0 END")
    epoch = patterns.index("^[0-9]{11,18}$") + 1
    assembled = {
        patterns.index(_ISO_WHEN) + 1: text,
        patterns.index(_ISO_MINUTES_ZONED) + 1: (
            f"{_extract(text, _ISO_MINUTES_ZONED, 1)} || ':00' || {_extract(text, _ISO_MINUTES_ZONED, 3)}"
        ),
        **{patterns.index(f.pattern) + 1: _iso_of(text, f) for f in forms},
    }
    iso = "CASE _how " + " ".join(f"WHEN {n} THEN {sql}" for n, sql in sorted(assembled.items())) + " END"
    t = t.mutate(_iso_text=iso)
    if zone:
        t = _in_zone(t, "_iso_text", time_zone(zone))
    millis = f"CAST(CASE WHEN _how = {epoch} THEN SUBSTRING({text}, 1, LENGTH({text}) - 3) END AS BIGINT)"
    whole = "CAST(EPOCH(DATE_TRUNC('SECOND', TRY_CAST(_iso_text AS TIMESTAMPTZ))) AS BIGINT)"
    return t.mutate(**{out: f"CASE WHEN _how = {epoch} THEN {millis} ELSE {whole} END"}).drop(
        "_how", "_iso_text"
    )


def _in_zone(table: Relation, iso: str, zone: str) -> Relation:
    """``iso`` with ``zone`` (`` Europe/Berlin`` or ``+02:00``) after a time written without one,
    its seconds written in (Spark reads a zone only after seconds); a date alone stays a day."""
    naive = _matches(iso, _NAIVE)
    seconds = f"CASE WHEN {_extract(iso, _NAIVE, 3)} = '' THEN ':00' ELSE {_extract(iso, _NAIVE, 3)} END"
    zoned = f"{_extract(iso, _NAIVE, 1)} || {seconds} || {literal(zone)}"
    return table.mutate(**{iso: f"CASE WHEN {naive} THEN {zoned} ELSE {iso} END"})


@dataclass(frozen=True)
class Slashed:
    """What a side's rows say of the order of its slashed dates: its first one, and a date whose
    first field is past 12 (a day: day first) and one whose second is (month first), if any."""

    first: str
    day_first: str | None
    month_first: str | None

    @property
    def format(self) -> str | None:
        """The order the rows decide, as a date format; None when they say both, or neither."""
        if bool(self.day_first) == bool(self.month_first):
            return None
        return DAY_FIRST if self.day_first else MONTH_FIRST


def slashed_format(
    backend: Backend, described: Described, columns: Sequence[str], option: str, *, earlier: str | None = None
) -> str | None:
    """The order of the slashed dates in ``columns`` of a side (``DAY_FIRST`` or ``MONTH_FIRST``),
    decided from its rows (``slashed_dates``); None when it writes none. Where the rows cannot
    decide (a month to date from the 1st to the 12th), the order an ``earlier`` run of the same
    track read this side in. ``InputError`` naming the file when its rows say both orders, or
    neither and nothing earlier does: ``option`` is the one that settles it."""
    found = slashed_dates(backend, described, columns)
    if found is None or found.format is not None:
        return None if found is None else found.format
    if earlier is not None and not (found.day_first and found.month_first):
        return earlier
    if found.day_first and found.month_first:
        raise InputError(
            f"{described.name}: its dates are written day first ({found.day_first}) and month first "
            f"({found.month_first}); one file holds one order: fix the rows, or give {option}"
        )
    notebook = f"{option[2:].replace('-', '_')} in the notebook, " if option.startswith("--ledger") else ""
    raise InputError(
        f"{described.name}: the order of its slashed dates is undecided: {both_ways(found.first)}, and "
        f"no date has a day past the 12th to say which; give {option} '{DAY_FIRST}' or '{MONTH_FIRST}' "
        f"({notebook}date_format= in Python)"
    )


def slashed_dates(backend: Backend, described: Described, columns: Sequence[str]) -> Slashed | None:
    """What the rows of ``columns`` say of the order of their slashed dates, in one aggregate
    query: a first field past 12 is a day, a second one past 12 a month's day. None, with no
    query, when the first rows (``SAMPLE_ROWS``, read cheaply) hold no slashed date: an ISO file
    pays nothing more."""
    first = _first_slashed(backend, described, columns)
    if first is None:
        return None
    rows = sources.read(backend, described, frozenset(columns))
    values = " UNION ALL ".join(f"SELECT TRIM({ident(c)}) AS _v FROM ({rows})" for c in columns)
    field = {n: f"TRY_CAST({_extract('_v', SLASHED, n)} AS INT)" for n in (1, 2)}
    slashed = _matches("_v", SLASHED)
    counts = backend.arrow(
        f"SELECT MIN(CASE WHEN {slashed} AND {field[1]} > 12 THEN _v END) AS day_first, "
        f"MIN(CASE WHEN {slashed} AND {field[2]} > 12 THEN _v END) AS month_first FROM ({values})"
    ).to_pylist()[0]
    return Slashed(first, counts["day_first"], counts["month_first"])


def _first_slashed(backend: Backend, described: Described, columns: Sequence[str]) -> str | None:
    """The first slashed date of the side's first rows, None when they hold none."""
    if described.kind == "table":  # no file to look at: the backend's first rows
        rows = sources.read(backend, described, frozenset(columns))
        shown = ", ".join(ident(c) for c in columns)
        head = backend.arrow(f"SELECT {shown} FROM ({rows}) LIMIT {SAMPLE_ROWS}")
        values = [str(v or "") for row in head.to_pylist() for v in row.values()]
    else:
        first, _, _ = sources.sample(described, SAMPLE_ROWS)
        places = [described.columns.index(c) for c in columns]
        values = [row[i] for row in first for i in places]
    return next((v.strip() for v in values if _SLASHED.match(v.strip())), None)


_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")  # fmt: skip


def both_ways(value: str) -> str:
    """``05/01/2025 is 5 January or May 1st``: a slashed date read day first and month first."""
    found = _SLASHED.match(value)
    one, two = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if not (1 <= one <= 12 and 1 <= two <= 12):
        return value
    suffix = "th" if 10 <= two % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(two % 10, "th")
    return f"{value} is {one} {_MONTH_NAMES[two - 1]} or {_MONTH_NAMES[one - 1]} {two}{suffix}"
