"""The ``detail`` of each exception, worded as expressions in the backend: what differs, where the
other side has the key, how long a payment has been in transit.
"""

from __future__ import annotations

from collections.abc import Callable

import ibis
import ibis.expr.types as ir

from toolkit.reconcile._engine.model import Side, is_usable, with_names
from toolkit.reconcile.inputs import (
    minor_text,
)
from toolkit.reconcile.sources import row_of
from toolkit.reconcile.timing import Timing, duration_text


def duplicate_detail_parts(
    part: Callable[..., None], f: ir.Table, duplicates: dict[str, ir.Table], sides: tuple[Side, Side]
) -> None:
    """The ``duplicate_in_*`` rows: the extra row of each duplicated key (``duplicate_rows``), with
    every row."""
    for side in ("processor", "ledger"):
        p = side[0]
        if side not in duplicates:
            continue
        dups = duplicates[side]
        keyed = f.filter(f[f"duplicate_in_{side}"])
        joined = with_names(keyed.join(dups, keyed.key == dups._dup_key), f"{p}2", sides[side == "processor"])
        # The row shown is the extra one: the one that should not be there.
        own = {
            f"{p}_{name}": joined[f"{p}2_{name}"]
            for name in ("minor", "currency", "digits", "status", "row", "source")
        }
        part(
            f"duplicate_in_{side}",
            joined,
            side == "processor",
            "appears "
            + joined._count.cast("string")
            + f" times in the {side} (rows "
            + joined._rows_text
            + ")",
            joined._extra.cast("int64"),
            currency=joined[f"{p}2_currency"],
            **own,
        )


def missing_detail(table: ir.Table, other: Side) -> tuple[ir.Table, ir.StringValue]:
    """``table``'s keys that ``other`` does not have among its usable rows, and why in words: not
    found there at all, or there only in a row that takes no part (its first), so that whoever
    looks for the payment is told where it is instead of searching for one that is there:
    ``not read in the ledger; ledger row 12 has this key but cannot be read (its rejected_row
    says why)``, ``not in the ledger in the period; ledger row 12 is dated 2026-10-20 00:00 UTC,
    outside it``, ``not in the ledger by the cut-off; ledger row 12 is dated 2026-11-20 00:00
    UTC, after it``."""
    where = "at the processor" if other.name == "processor" else "in the ledger"
    rows = other.rows.filter(~is_usable(other.rows))
    first = rows.group_by(_apart_key=rows._key).aggregate(_apart_ord=rows._ord.min())
    apart = first.join(rows, [first._apart_key == rows._key, first._apart_ord == rows._ord])
    apart = apart.select(
        first._apart_key,
        first._apart_ord,
        _apart_rejected=rows._rejected,
        _apart_outside=rows._outside,
        _apart_when=rows._outside.ifelse(rows._day, rows._when),
    )
    joined = table.left_join(apart, table.key == apart._apart_key)
    row = f"; {other.name} row " + row_of(joined._apart_ord).cast("string")
    day = _moment_text(joined._apart_when)
    detail = ibis.cases(
        (joined._apart_ord.isnull(), f"not found {where}"),
        (
            joined._apart_rejected,
            f"not read {where}" + row + " has this key but cannot be read (its rejected_row says why)",
        ),
        (joined._apart_outside, f"not {where} in the period" + row + " is dated " + day + ", outside it"),
        else_=f"not {where} by the cut-off" + row + " is dated " + day + ", after it",
    )
    return joined, detail


def _moment_text(seconds: ir.IntegerValue) -> ir.StringValue:
    """A row's date (epoch seconds) as the details write it: ``2026-11-21 00:00 UTC``."""
    return seconds.as_timestamp("s").strftime("%Y-%m-%d %H:%M") + " UTC"


def compared_detail(table: ir.Table, word: str, note: str = "") -> ir.StringValue:
    """``ledger 10.00 USD, processor 9.98 USD (difference 0.02); processor row 3``; for a price in
    the ledger's currency: ``processor priced 9.98 USD (charged 560.00 PHP)``."""
    digits, currency = table.l_digits, table.l_currency
    other = table.priced.ifelse(table.p_pminor, table.p_minor)
    charged = minor_text(table.p_minor, table.p_digits) + " " + table.p_currency
    return (
        "ledger "
        + minor_text(table.l_minor, digits)
        + " "
        + currency
        + table.priced.ifelse(", processor priced ", ", processor ")
        + minor_text(other, digits)
        + " "
        + currency
        + table.priced.ifelse(" (charged " + charged + ")", "")
        + f" ({word} "
        + minor_text(table.l_minus_p, digits)
        + f"{note}); processor row "
        + table.p_row.cast("string")
    )


def fx_detail(table: ir.Table, word: str) -> ir.StringValue:
    """``ledger 20.00 USD = 18.52 EUR at 1 USD = 0.926 EUR on 2026-11-18, processor 18.40 EUR
    (variance 0.12 EUR, beyond tolerance); processor row 3``: the variance expected minus
    charged, signed as a same-currency one (ledger minus processor)."""
    digits = table.p_digits
    return (
        "ledger "
        + minor_text(table.l_minor, table.l_digits)
        + " "
        + table.l_currency
        + " = "
        + minor_text(table.fx_expected, digits)
        + " "
        + table.p_currency
        + " at "
        + table.fx_text
        + ", processor "
        + minor_text(table.p_minor, digits)
        + " "
        + table.p_currency
        + " (variance "
        + minor_text(table.fx_expected - table.p_minor, digits)
        + " "
        + table.p_currency
        + f", {word} tolerance); processor row "
        + table.p_row.cast("string")
    )


def transit_detail(table: ir.Table, clock: Timing) -> ir.StringValue:
    """Why a payment is in transit, and since when, in words."""
    window = f"inside the settlement window ({duration_text(clock.grace)} before the cut-off)"
    since = table.p_when.fill_null(table.l_when)
    day = _moment_text(since)
    status = table.l_n.notnull() & table.p_n.notnull()
    return ibis.cases(
        (
            status,
            "ledger " + table.l_status + ", processor " + table.p_status + " since " + day + "; " + window,
        ),
        (table.p_n.isnull(), "not at the processor yet; booked " + day + ", " + window),
        else_="not in the ledger yet; at the processor since " + day + ", " + window,
    )
