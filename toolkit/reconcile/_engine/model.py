"""What the steps pass between them: a side's kept rows, the rules of a run, the flag columns,
and the expressions more than one step reads (a usable row, a key's outcome, named currencies).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

import ibis
import ibis.expr.datatypes as dt
import ibis.expr.types as ir
import pandas as pd

from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile.fx import Rates
from toolkit.reconcile.inputs import (
    LoadedInput,
    currency_codes,
    currency_table,
)
from toolkit.reconcile.schema import (
    INFO_CATEGORIES,
    PAYMENT_CATEGORIES,
)
from toolkit.reconcile.sources import row_of, source_of
from toolkit.reconcile.timing import DEFAULT_GRACE, Timing
from toolkit.reconcile.tolerance import Tolerance

SIDES = ("ledger", "processor")


#: Exact sums: int64 amounts widened before they are added (100M rows of 18 digits overflow).
SUM_TYPE = dt.Decimal(38, 0)


#: The columns of one side's row kept for the steps after the check: the key, and numbers only
#: (currency and status as codes, ``_cur`` and ``_st``; the file and the row number from
#: ``_ord``, by ``source_of`` and ``row_of``), so that every step after it moves fixed-size
#: values. Why a row is rejected is found again for the few rejected rows only, from their text
#: as written.
SLIM = (
    "_key",
    "_minor",
    "_cur",
    "_st",
    "_ord",
    "_rejected",
    "_outside",
    "_after",
    "_when",
    "_day",
    "_pminor",
    "_pcur",
)


#: The ``_st`` code of ``unknown``, the status that is not a fact yet.
UNKNOWN = PAYMENT_STATUS_NAMES.index("unknown")


#: The ``_st`` codes of a payment not settled yet: pending, or waiting for the customer.
UNSETTLED = (PAYMENT_STATUS_NAMES.index("pending"), PAYMENT_STATUS_NAMES.index("next_action"))


#: The ``_st`` code of ``failure``: a payment that took no money (no double charge).
FAILURE = PAYMENT_STATUS_NAMES.index("failure")


DAY = 86400


#: The flags that are exceptions (the others, ``INFO_CATEGORIES``, are for information).
EXCEPTION_FLAGS = tuple(name for name in PAYMENT_CATEGORIES if name != "rejected_row")


@dataclass(frozen=True)
class Side:
    """One side in the backend: its checked rows and its usable rows, and where they came from."""

    name: str
    loaded: LoadedInput
    written: ir.Table  # the rows as written (``LoadedInput.read``)
    rows: ir.Table  # every row, slim (``SLIM``), kept in the backend
    usable: ir.Table


@dataclass(frozen=True)
class Rules:
    """What a match allows: the amount tolerance, the cut-off and settlement window (None: no
    timing), the reference rates (None: no comparison across currencies), and what the sides
    carry (dates for the cut-off, the processor's prices)."""

    tolerance: Tolerance = dataclasses.field(default_factory=Tolerance)
    timing: Timing | None = None
    rates: Rates | None = None
    ledger_dated: bool = False
    processor_dated: bool = False
    priced: bool = False
    grace: timedelta = DEFAULT_GRACE


def is_usable(rows: ir.Table) -> ir.BooleanValue:
    """A row that takes part: readable, inside the period, not after the cut-off."""
    return ~rows._rejected & ~rows._outside & ~rows._after


#: The per-key columns of each side after pairing, as ``classify`` reads them.
PAIRED = ("n", "ord", "minor", "cur", "st", "when", "pminor", "pcur")


#: The flags ``classify`` computes (``price_match`` is kept for ``price_moves``).
FLAGS = (*EXCEPTION_FLAGS, *INFO_CATEGORIES, "fx_check", "price_match")


def is_exception(flagged: ir.Table) -> ir.BooleanValue:
    """Whether each flagged key has an exception flag."""
    exception = ibis.literal(False)
    for name in EXCEPTION_FLAGS:
        exception |= flagged[name]
    return exception


def key_outcome(flagged: ir.Table) -> tuple[ir.BooleanValue, ir.BooleanValue]:
    """Whether each flagged key is an exception (any exception flag) or, failing that, in transit
    (its rows then counted apart); any other flagged key is matched (within tolerance, or
    exact at a reference rate)."""
    return is_exception(flagged), flagged.in_transit


def named_currencies(frame: pd.DataFrame) -> pd.DataFrame:
    """A small frame's ``currency`` codes as ISO 4217 names (None where there was no code)."""
    codes = currency_codes()
    frame["currency"] = [None if pd.isna(c) else codes[int(c)] for c in frame["currency"]]
    return frame


def with_names(table: ir.Table, p: str, side: Side) -> ir.Table:
    """``table`` with what people read of the row ``p`` (``l``, ``p``, ``l2``, ``p2``): the
    names of its codes (``{p}_currency``, ``{p}_digits``, ``{p}_status``), its file
    (``{p}_source``) and its row number there (``{p}_row``)."""
    iso = ibis.memtable(currency_table()).rename(
        **{f"{p}_currency": "_iso", f"_{p}_code": "_iso_code", f"{p}_digits": "_iso_digits"}
    )
    joined = table.left_join(iso, table[f"{p}_cur"] == iso[f"_{p}_code"]).drop(f"_{p}_code")
    code = joined[f"{p}_st"]
    named = joined.mutate(
        **{
            f"{p}_status": ibis.cases(*((code == i, name) for i, name in enumerate(PAYMENT_STATUS_NAMES))),
            f"{p}_source": source_of(side.loaded.described, joined[f"{p}_ord"]),
        }
    )
    return named.mutate(**{f"{p}_row": row_of(named[f"{p}_ord"])})
