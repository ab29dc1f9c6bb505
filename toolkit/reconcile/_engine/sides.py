"""Step 1: each side read and checked in the backend (``inputs.py``), dated for the cut-off, and a
period's boundary payments placed (``align_period``).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import ibis
import ibis.expr.types as ir

from toolkit.reconcile._engine.model import SLIM, Side, is_usable
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import (
    PRICING_COLUMNS,
    Dated,
    LoadedInput,
)
from toolkit.reconcile.period import period_seconds
from toolkit.reconcile.timing import Timing


def dated(loaded: LoadedInput, clock: Timing | None, *, rated: bool = False) -> LoadedInput:
    """``loaded`` dated for the cut-off (and for the rate of a payment's day when ``rated``): the
    ledger by ``date`` (else ``createTime``), the processor by ``createTime`` (where empty, by
    ``requestTime``: the journal's payments frame, whose answers carry no time); as it is when
    neither is asked for, or without such a column (its rows then take part whatever their
    date, and none of them is in transit)."""
    if (clock is None and not rated) or loaded.dated is not None:
        return loaded
    names = ("date", "createTime") if loaded.side == "ledger" else ("createTime",)
    column = next((name for name in names if name in loaded.columns()), None)
    if column is None:
        return loaded
    cutoff = None if clock is None else clock.cutoff_seconds
    fallback = "requestTime" if loaded.side == "processor" and "requestTime" in loaded.columns() else None
    return dataclasses.replace(loaded, dated=Dated(column, cutoff, fallback))


def checked_rows(engine: Backend, name: str, loaded: LoadedInput) -> Side:
    """Read and check one side in the backend; keep the columns the next steps need."""
    written = loaded.read(engine)
    constant = _constant_columns(loaded)
    # Only what the check reads goes through its stages (fewer columns to compile and move).
    read = loaded.checked_columns()
    narrow = written.select(*(c for c in written.columns if c in read or c.startswith("_")))
    stored = engine.keep(loaded.check(narrow).select(*(c for c in SLIM if c not in constant)), staged=True)
    rows = stored.mutate(**constant).select(*SLIM)
    return Side(name, loaded, written, rows, rows.filter(is_usable(rows)))


def _constant_columns(loaded: LoadedInput) -> dict[str, ir.Value]:
    """The slim columns a side cannot have (no period, no date, no price), as the constants the
    check gives them: added when read instead of written out and read back for every row."""
    constant: dict[str, ir.Value] = {}
    if loaded.period is None:
        constant |= {"_outside": ibis.literal(False), "_day": ibis.null("int64")}
    if loaded.dated is None:
        constant |= {"_after": ibis.literal(False), "_when": ibis.null("int64")}
    if loaded.side != "processor" or not set(PRICING_COLUMNS) <= loaded.columns():
        constant |= {"_pminor": ibis.null("int64"), "_pcur": ibis.null("int16")}
    return constant


def align_period(engine: Backend, led: Side, pro: Side, grace: timedelta) -> Side:
    """The processor's rows of a period as the books place them: a payment booked on the 31st and
    recorded by the processor on the 1st belongs to the books' period on both sides.

    With a period on both sides, a processor row dated within ``grace`` outside the period is
    taken in when its key is booked inside it, and a processor row dated within ``grace`` inside
    the period is left out when its key is booked outside it (and not inside): it is
    reconciled in the books' period. Other rows keep their own dates."""
    if led.loaded.period is None or pro.loaded.period is None:
        return pro
    lower, upper = period_seconds(pro.loaded.period)
    window = int(grace.total_seconds())
    ledger = led.rows.filter(~led.rows._rejected)
    inside = ledger.filter(~ledger._outside).select(_in_key=ledger._key).distinct()
    outside = ledger.filter(ledger._outside).select(_out_key=ledger._key).distinct()
    rows = pro.rows.left_join(inside, pro.rows._key == inside._in_key)
    rows = rows.left_join(outside, rows._key == outside._out_key)
    booked_in, booked_out = rows._in_key.notnull(), rows._out_key.notnull() & rows._in_key.isnull()
    day = rows._day
    near_outside, near_inside = ibis.literal(False), ibis.literal(False)
    if lower is not None:
        near_outside |= (day >= lower - window) & (day < lower)
        near_inside |= (day >= lower) & (day < lower + window)
    if upper is not None:
        near_outside |= (day >= upper) & (day < upper + window)
        near_inside |= (day >= upper - window) & (day < upper)
    usable = ~rows._rejected & ~rows._after
    taken_in = usable & rows._outside & booked_in & near_outside
    left_out = usable & ~rows._outside & booked_out & near_inside
    moved = (rows._outside & ~taken_in.fill_null(False)) | left_out.fill_null(False)
    aligned = engine.keep(rows.mutate(_outside=moved).select(*SLIM))
    return dataclasses.replace(pro, rows=aligned, usable=aligned.filter(is_usable(aligned)))
