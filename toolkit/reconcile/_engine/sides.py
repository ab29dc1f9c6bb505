"""Step 1: each side read and checked in the backend (``inputs/``), dated for the cut-off, and a
period's boundary payments placed (``align_period``).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from toolkit.reconcile._engine.model import SLIM, Side, select
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import (
    PRICING_COLUMNS,
    Dated,
    LoadedInput,
    rejection_code,
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
    checked = loaded.check(engine, narrow)
    why, flags = rejection_code(checked)
    slim = checked.mutate(_why=why).select(*(c for c in SLIM if c not in constant), "_why")
    kept = engine.keep(slim, stem=f"{name}_rows")
    rows = [constant.get(c, c) for c in SLIM]
    return Side(name, loaded, written, kept, f"SELECT {', '.join(rows)} FROM {kept}", kept, flags)


def _constant_columns(loaded: LoadedInput) -> dict[str, str]:
    """The slim columns a side cannot have (no period, no date, no price), as the constants the
    check gives them: added when read instead of written out and read back for every row."""
    constant: dict[str, str] = {}
    if loaded.period is None:
        constant |= {"_outside": "FALSE AS _outside", "_day": "CAST(NULL AS BIGINT) AS _day"}
    if loaded.dated is None:
        constant |= {"_after": "FALSE AS _after", "_when": "CAST(NULL AS BIGINT) AS _when"}
    if loaded.side != "processor" or not set(PRICING_COLUMNS) <= loaded.columns():
        constant |= {"_pminor": "CAST(NULL AS BIGINT) AS _pminor", "_pcur": "CAST(NULL AS SMALLINT) AS _pcur"}
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
    booked = f"SELECT DISTINCT _key AS {{k}} FROM ({led.rows}) WHERE NOT _rejected AND {{where}}"
    inside = booked.format(k="_in_key", where="NOT _outside")
    outside = booked.format(k="_out_key", where="_outside")
    near_outside, near_inside = ["FALSE"], ["FALSE"]
    if lower is not None:
        near_outside.append(f"(_day >= {lower - window} AND _day < {lower})")
        near_inside.append(f"(_day >= {lower} AND _day < {lower + window})")
    if upper is not None:
        near_outside.append(f"(_day >= {upper} AND _day < {upper + window})")
        near_inside.append(f"(_day >= {upper - window} AND _day < {upper})")
    usable = "NOT _rejected AND NOT _after"
    booked_in, booked_out = "_in_key IS NOT NULL", "_out_key IS NOT NULL AND _in_key IS NULL"
    taken_in = f"({usable} AND _outside AND {booked_in} AND ({' OR '.join(near_outside)}))"
    left_out = f"({usable} AND NOT _outside AND {booked_out} AND ({' OR '.join(near_inside)}))"
    moved = f"(_outside AND NOT COALESCE({taken_in}, FALSE)) OR COALESCE({left_out}, FALSE)"
    columns = [f"({moved}) AS _outside" if c == "_outside" else c for c in SLIM]
    joined = (
        f"SELECT * FROM ({pro.rows}) AS _r LEFT JOIN ({inside}) AS _i ON _r._key = _i._in_key "
        f"LEFT JOIN ({outside}) AS _o ON _r._key = _o._out_key"
    )
    aligned = engine.keep(select(columns, joined), stem="aligned")
    return dataclasses.replace(pro, kept=aligned, rows=select(SLIM, str(aligned)))
