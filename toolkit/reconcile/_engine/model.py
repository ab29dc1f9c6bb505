"""What the steps pass between them: a side's kept rows, the rules of a run, the flag columns,
and the expressions more than one step reads (a usable row, a key's outcome, named currencies).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

import pandas as pd

from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.fx import Rates
from toolkit.reconcile.inputs import (
    LoadedInput,
    currency_codes,
    currency_table,
)
from toolkit.reconcile.movements import APART, codes
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.relation import count_if as count_if  # the steps' aggregates
from toolkit.reconcile.schema import (
    INFO_CATEGORIES,
    PAYMENT_CATEGORIES,
)
from toolkit.reconcile.sources import row_sql, source_sql
from toolkit.reconcile.timing import DEFAULT_GRACE, Timing
from toolkit.reconcile.tolerance import Tolerance

SIDES = ("ledger", "processor")


#: Exact sums: int64 amounts widened before they are added (100M rows of 18 digits overflow).
SUM_TYPE = "DECIMAL(38, 0)"


#: The columns of one side's row kept for the steps after the check: the key, and numbers only
#: (currency and status as codes, ``_cur`` and ``_st``; the file and the row number from
#: ``_ord``, by ``source_sql`` and ``row_sql``), so that every step after it moves fixed-size
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
    "_kind",
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
    """One side in the backend: its checked rows (a query of ``SLIM`` over the table ``kept``)
    and its usable rows, and where they came from."""

    name: str
    loaded: LoadedInput
    written: Relation  # the rows as written (``LoadedInput.read``)
    kept: Kept  # the checked rows, as the backend keeps them
    rows: str  # every row, slim (``SLIM``): a query reading ``kept``
    #: The check's own table (``kept`` until ``align_period`` keeps the rows again) with each
    #: rejected row's problems (``_why``, ``inputs.rejection_code`` of the flags ``flags``).
    checked: Kept
    flags: tuple[str, ...]

    @property
    def usable(self) -> str:
        """The rows that take part (``USABLE``), as a query."""
        return f"SELECT * FROM ({self.rows}) WHERE {USABLE}"


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


@dataclass(frozen=True)
class Run:
    """What the steps after classifying read of one run: the backend, the rules, both sides, the
    keys paired (a query), the flagged keys (kept), each side's rows of keys on more than one row
    (kept; only the sides that have any), and how many keys of each flag per currency."""

    engine: Backend
    rules: Rules
    sides: tuple[Side, Side]
    keys: str
    flagged: Kept
    repeated: dict[str, Kept]
    stats: pd.DataFrame


#: A row that takes part: readable, inside the period, not after the cut-off, an order's movement
#: (a payment or money returned; fees, payouts and adjustments are totalled apart, ``APART_ROW``).
USABLE = f"(NOT _rejected AND NOT _outside AND NOT _after AND _kind NOT IN ({codes(APART)}))"


#: A fee, payout or adjustment that would take part: counted and totalled, not reconciled by key.
APART_ROW = f"(NOT _rejected AND NOT _outside AND NOT _after AND _kind IN ({codes(APART)}))"


#: The per-key columns of each side after pairing, as ``classify`` reads them.
PAIRED = ("n", "ord", "minor", "cur", "st", "when", "pminor", "pcur", "kind")


#: The flags ``classify`` computes (``price_match`` is kept for ``price_moves``).
FLAGS = (*EXCEPTION_FLAGS, *INFO_CATEGORIES, "fx_check", "price_match")


#: The columns of a classified key (``classify``), in order: both sides' ``PAIRED`` values, the
#: key, its flags, its difference and whether it was compared through its price.
CLASSIFIED = (
    *(f"{p}_{name}" for p in "lp" for name in PAIRED),
    "key",
    *FLAGS,
    "l_minus_p",
    "priced",
)


#: Whether a flagged key has an exception flag.
IS_EXCEPTION = "(" + " OR ".join(EXCEPTION_FLAGS) + ")"


def key_outcome() -> tuple[str, str]:
    """Whether each flagged key is an exception (any exception flag) or, failing that, in transit
    (its rows then counted apart); any other flagged key is matched (within tolerance, or
    exact at a reference rate)."""
    return IS_EXCEPTION, "in_transit"


def exact_sum(value: str) -> str:
    """The exact sum of integer ``value`` (an aggregate), widened first."""
    return f"SUM(CAST({value} AS {SUM_TYPE}))"


def select(columns: tuple[str, ...] | list[str], query: str, where: str = "") -> str:
    """``columns`` of ``query`` (a kept table's name, or a query), the rows ``where`` holds."""
    return f"SELECT {', '.join(columns)} FROM {relation(query)}" + (f" WHERE {where}" if where else "")


def relation(query: str | Kept) -> str:
    """``query`` as what a FROM or a JOIN reads: a kept table by its name, a query in brackets."""
    text = str(query)
    return text if all(part.isidentifier() for part in text.split(".")) else f"({text})"


def named_currencies(frame: pd.DataFrame) -> pd.DataFrame:
    """A small frame's ``currency`` codes as ISO 4217 names (None where there was no code)."""
    codes = currency_codes()
    frame["currency"] = [None if pd.isna(c) else codes[int(c)] for c in frame["currency"]]
    return frame


def with_names(engine: Backend, query: str, p: str, side: Side) -> str:
    """``query`` with what people read of the row ``p`` (``l``, ``p``, ``l2``, ``p2``, ``r``): the
    names of its codes (``{p}_currency``, ``{p}_digits``, ``{p}_status``), its file
    (``{p}_source``) and its row number there (``{p}_row``)."""
    iso = engine.constant("iso", currency_table)
    statuses = " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(PAYMENT_STATUS_NAMES))
    return (
        f"SELECT _t.*, _iso._iso AS {p}_currency, _iso._iso_digits AS {p}_digits, "
        f"CASE _t.{p}_st {statuses} END AS {p}_status, "
        f"{source_sql(side.loaded.described, f'_t.{p}_ord')} AS {p}_source, "
        f"{row_sql(f'_t.{p}_ord')} AS {p}_row "
        f"FROM {relation(query)} AS _t LEFT JOIN {iso} AS _iso ON _t.{p}_cur = _iso._iso_code"
    )
