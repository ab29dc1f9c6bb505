"""The reconciliation engine: ledger vs processor, keyed by ``merchantReferenceId``, relational.

``reconcile`` reads as its steps, each a relational transformation written once in Ibis and run
by the backend (DuckDB by default, Spark on request; ``backends.py``):

1. ``checked_rows``: each side read and validated in the backend (``inputs.py``);
2. ``pair_keys``: one row per key of each side (how many rows, the first row's values), the two
   sides joined on the key (``align_period`` first places a period's boundary payments);
3. ``classify``: the categories of each key, and only the keys with a flag kept;
   ``settle_repeats`` classifies the few keys of more than one row again; ``resolve_fx``
   decides the keys in two currencies at reference rates; ``informational_apart`` leaves a key
   with an exception out of the informational categories;
4. ``exception_rows``: one row per exception, with its detail, in report order;
5. ``count_rows`` and ``summarise``: the row accounting, the totals, the summary.

Only what is small by nature leaves the backend (exceptions, totals, counts); matched keys are
counted there and fetched only when asked for (``ReconciliationResult.matched``).

Rules where the issue leaves a choice:

* A key present on both sides is compared on one row of each side: its only row, or of a key on
  more than one row (``settle_repeats``) the processor's row that agrees with the ledger's first
  row (amount, currency and status), else one with its status, else the first; then the ledger's
  row chosen the same way against that one. A side's key is ``duplicate_in_ledger`` /
  ``duplicate_in_processor`` when more than one of its rows is not ``failure`` (took or may take
  money: a failed attempt and its retry are no double charge); one exception per key, its extra
  row shown, every row number in ``detail`` (with amounts, currencies and statuses when they
  differ).
* Amounts are compared in one currency: the ledger's amount against what the processor charged
  when the currencies are the same, else against what it priced (``pricingAmount``,
  ``pricingCurrency``) when that is the ledger's currency (a payment charged in another
  currency). Neither: ``currency_mismatch``, unless reference rates are given (``fx.py``): then
  the ledger's amount is converted at the rate of the payment's day (the processor's
  ``createTime``, else the ledger's date) and compared with the charge; no rate for that day
  leaves it a ``currency_mismatch`` that names the missing rate.
* A difference within the amount tolerance (``tolerance.py``) is matched, and never silent: an
  informational ``within_tolerance`` row carries its variance (ledger minus processor; at a
  rate, expected minus charged in the charged currency), summed per currency in the summary.
* With a cut-off (``as_of``) and a settlement window (``grace``, ``timing.py``): rows dated after
  the cut-off take no part (``after_cutoff``); inside the window, a processor payment still
  pending or waiting for the customer, a ledger row with no processor row yet, and an unsettled
  processor payment not in the books yet are ``in_transit`` (informational) instead of
  ``status_mismatch`` / ``missing_in_processor`` / ``missing_in_ledger``. With a period on both
  sides, the books decide the period of a payment both sides have (``align_period``).
* A key missing from a side that the side has in a row taking no part (after the cut-off,
  outside the period, or that cannot be read) says so in its ``detail``, with that row.
* When the processor says ``unknown`` the key is ``unknown_outcome`` instead of ``status_mismatch``
  (the processor's status is not a fact yet); a processor-only key that is ``unknown`` is both
  ``missing_in_ledger`` and ``unknown_outcome``.
* The amount of an exception (in the summary) is the ledger amount when the ledger has the key,
  else the processor amount; for ``amount_mismatch`` it is the absolute difference; for a
  duplicate, its extra rows' amounts in the currency of the row shown. Amounts at risk or in
  transit are unsigned (a refund missing adds to a charge missing); a variance keeps its sign.
* A key with an exception is that exception only: it is neither ``in_transit`` nor
  ``within_tolerance`` as well (a payment that failed or was charged twice is no variance to
  post, and an amount at risk is not also at stake in transit); a key in transit is not
  ``within_tolerance`` as well (a pending payment's variance is not posted).
* Each input row is counted once: ``matched`` when its key has no exception (within tolerance
  included), else ``exception``, or ``in_transit``, or ``rejected`` when it could not be read,
  or ``outside`` when a period left it out, or ``after_cutoff``. Informational rows
  (``severity`` ``info``) never count as exceptions.
* ``totals`` adds up every usable row of each side per currency that is not ``failure``
  (duplicates included; rejected rows, rows outside the period and failed payments not), so
  ledger minus processor is the net difference of the money each side says moved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.datatypes as dt
import ibis.expr.types as ir
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import InputError
from toolkit.money import from_minor
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.fx import Rates, load_rates
from toolkit.reconcile.inputs import (
    PRICING_COLUMNS,
    REJECTED_COLUMNS,
    Dated,
    LoadedInput,
    currency_codes,
    currency_table,
    minor_text,
    period_seconds,
    rejected_frame,
)
from toolkit.reconcile.result import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    FX_COLUMNS,
    INFO_CATEGORIES,
    MATCHED_COLUMNS,
    PAYMENT_CATEGORIES,
    SUBSCRIPTION_CATEGORIES,
    SUMMARY_COLUMNS,
    LazyRows,
    ReconciliationResult,
    RowCounts,
    SideTotal,
    SpilledRows,
    _decimals,
    _sort_summary,
    rejected_exceptions,
)
from toolkit.reconcile.sources import row_of, source_of
from toolkit.reconcile.timing import DEFAULT_GRACE, Timing, duration_text, parse_grace, timing
from toolkit.reconcile.tolerance import Allowance, Tolerance

__all__ = [
    "CATEGORIES",
    "EXCEPTION_COLUMNS",
    "PAYMENT_CATEGORIES",
    "SUBSCRIPTION_CATEGORIES",
    "SUMMARY_COLUMNS",
    "ReconciliationResult",
    "RowCounts",
    "SideTotal",
    "_decimals",
    "reconcile",
]

_SIDES = ("ledger", "processor")
#: Exception rows a result holds in memory (as Python objects: about 1 KB each); beyond, the
#: engine keeps them and the result holds the first ``PREVIEW_ROWS`` of each category.
HELD_ROWS = 250_000
PREVIEW_ROWS = 1_000
#: Exception rows read back from the engine at a time (``SpilledRows``).
BATCH_ROWS = 50_000
#: Exact sums: int64 amounts widened before they are added (100M rows of 18 digits overflow).
_SUM_TYPE = dt.Decimal(38, 0)
#: The columns of one side's row kept for the steps after the check: the key, and numbers only
#: (currency and status as codes, ``_cur`` and ``_st``; the file and the row number from
#: ``_ord``, by ``source_of`` and ``row_of``), so that every step after it moves fixed-size
#: values. Why a row is rejected is found again for the few rejected rows only, from their text
#: as written.
_SLIM = (
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
_UNKNOWN = PAYMENT_STATUS_NAMES.index("unknown")
#: The ``_st`` codes of a payment not settled yet: pending, or waiting for the customer.
_UNSETTLED = (PAYMENT_STATUS_NAMES.index("pending"), PAYMENT_STATUS_NAMES.index("next_action"))
#: The ``_st`` code of ``failure``: a payment that took no money (no double charge).
_FAILURE = PAYMENT_STATUS_NAMES.index("failure")
_DAY = 86400
#: The flags that are exceptions (the others, ``INFO_CATEGORIES``, are for information).
_EXCEPTION_FLAGS = tuple(name for name in PAYMENT_CATEGORIES if name != "rejected_row")


@dataclass(frozen=True)
class _Side:
    """One side in the backend: its checked rows and its usable rows, and where they came from."""

    name: str
    loaded: LoadedInput
    written: ir.Table  # the rows as written (``LoadedInput.read``)
    rows: ir.Table  # every row, slim (``_SLIM``), kept in the backend
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


def reconcile(
    ledger: LoadedInput,
    processor: LoadedInput,
    *,
    amount_tolerance: int | str | Tolerance = 0,
    as_of: datetime | date | str | None = None,
    grace: timedelta | str | None = None,
    fx_rates: Rates | str | Path | None = None,
    backend: str | Backend = "duckdb",
    memory_limit: str | int | None = None,
    spill_dir: str | Path | None = None,
    held_rows: int = HELD_ROWS,
    preview_rows: int = PREVIEW_ROWS,
) -> ReconciliationResult:
    """Reconcile the ledger against the processor; see the module docstring for the rules.

    ``amount_tolerance``: minor units, or the text form of ``tolerance.py`` (``0.5%:10``).
    ``as_of``: the cut-off (a bare date is the end of that day, UTC), with ``grace`` the
    settlement window before it (default 3 days); None: no cut-off, no payment in transit.
    ``fx_rates``: a rate file (``fx.py``) to compare amounts across currencies.
    ``backend`` is ``duckdb`` (default; ``memory_limit`` such as ``"6GB"`` and ``spill_dir`` set
    how far it goes before spilling, and where) or ``pyspark``, or a ``Backend`` from
    ``backends.connect``. Up to ``held_rows`` exception rows are held in memory; beyond, the
    result holds the first ``preview_rows`` of each category and the engine keeps every row
    (``ReconciliationResult.spilled``), read back a batch at a time by the reports.
    """
    tolerance = Tolerance.of(amount_tolerance)
    window = DEFAULT_GRACE if grace is None else parse_grace(grace)
    clock = None if as_of is None else timing(as_of, window)
    rates = fx_rates if isinstance(fx_rates, Rates) or fx_rates is None else load_rates(fx_rates)
    ledger, processor = (dated(side, clock, rated=rates is not None) for side in (ledger, processor))
    rules = Rules(
        tolerance,
        clock,
        rates,
        ledger_dated=ledger.dated is not None,
        processor_dated=processor.dated is not None,
        priced=set(PRICING_COLUMNS) <= processor.columns(),
        grace=window,
    )
    engine = (
        backend
        if isinstance(backend, Backend)
        else connect(
            backend,
            memory_limit=memory_limit,
            spill_dir=spill_dir,
            in_memory=ledger.in_memory and processor.in_memory,
        )
    )
    with engine.failures():
        led, pro = (
            checked_rows(engine, name, loaded)
            for name, loaded in zip(_SIDES, (ledger, processor), strict=True)
        )
        pro = align_period(engine, led, pro, rules.grace)
        keys = pair_keys(led, pro, rules)
        classified = engine.keep(classify(keys, rules))
        repeated = {
            side.name: repeated_rows(engine, side, classified)
            for side in repeats(engine, classified, (led, pro))
        }
        if repeated:
            classified = engine.keep(settle_repeats(classified, repeated, rules))
        resolved, fx = resolve_fx(engine, classified, rules)
        flagged = engine.keep(informational_apart(resolved))
        stats = flag_stats(engine, flagged)
        duplicates = {
            side.name: duplicate_rows(engine, side, repeated[side.name], flagged)
            for side in (led, pro)
            if stats[f"duplicate_in_{side.name}"].sum()
        }
        listed = exception_rows(engine, (led, pro), flagged, duplicates, stats, rules)
        flags = stats[[*_EXCEPTION_FLAGS, *INFO_CATEGORIES]]
        side_sums = side_aggregates(engine, (led, pro))
        rejected = {side.name: rejected_rows(engine, side, side_sums[side.name]) for side in (led, pro)}
        exceptions = held_exceptions(
            engine,
            listed,
            listed_rows=int(flags.sum().sum()),
            rejected_rows=sum(len(frame) for frame in rejected.values()),
            held_rows=held_rows,
            preview_rows=preview_rows,
        )
        counts = count_rows((led, pro), stats, side_sums, rejected)
        matched = matched_summary(engine, stats, flagged, repeated.get("ledger"), side_sums["ledger"])
        result = summarise(
            engine, keys, flagged, (led, pro), exceptions, rejected, side_sums, matched, counts
        )
        return dataclasses.replace(
            result,
            price_moves=price_moves(engine, flagged) if rules.priced else (),
            amount_tolerance=tolerance,
            cutoff=None if clock is None else clock.as_of,
            grace=None if clock is None else clock.grace,
            fx=fx.frame,
            missing_rates=fx.missing,
        )


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


# ---------------------------------------------------------------------------------------------
# 1. Each side, checked


def checked_rows(engine: Backend, name: str, loaded: LoadedInput) -> _Side:
    """Read and check one side in the backend; keep the columns the next steps need."""
    written = loaded.read(engine)
    constant = _constant_columns(loaded)
    # Only what the check reads goes through its stages (fewer columns to compile and move).
    read = loaded.checked_columns()
    narrow = written.select(*(c for c in written.columns if c in read or c.startswith("_")))
    stored = engine.keep(loaded.check(narrow).select(*(c for c in _SLIM if c not in constant)), staged=True)
    rows = stored.mutate(**constant).select(*_SLIM)
    return _Side(name, loaded, written, rows, rows.filter(_usable(rows)))


def _usable(rows: ir.Table) -> ir.BooleanValue:
    """A row that takes part: readable, inside the period, not after the cut-off."""
    return ~rows._rejected & ~rows._outside & ~rows._after


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


def align_period(engine: Backend, led: _Side, pro: _Side, grace: timedelta) -> _Side:
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
    aligned = engine.keep(rows.mutate(_outside=moved).select(*_SLIM))
    return dataclasses.replace(pro, rows=aligned, usable=aligned.filter(_usable(aligned)))


# ---------------------------------------------------------------------------------------------
# 2. One row per key, both sides side by side


def _per_key(side: _Side, *, when: bool, price: bool) -> ir.Table:
    """How many usable rows each key has, and the values of its first row (file order).

    Keys are almost always unique, so the first rows are found without an aggregate of values:
    one count per key (a fixed-size state the backend can spill) names the few repeated keys,
    and every row of an unrepeated key, or the first row of a repeated one, is its key's row.
    ``when`` and ``price`` add the first row's date and price (only when the rules need them).
    """
    rows = side.usable
    p = side.name[0]  # "l" or "p"
    # Counted from the kept rows by a query of its own: a second use of ``usable`` would be a
    # common table expression, which DuckDB writes out in full before reading it.
    keyed = side.rows.select("_key", "_ord", "_rejected", "_outside", "_after")
    keyed = keyed.filter(_usable(keyed))
    counts = keyed.group_by(_rkey=keyed._key).aggregate(_n=keyed.count(), _first=keyed._ord.min())
    repeated = counts.filter(counts._n > 1)
    joined = rows.left_join(repeated, rows._key == repeated._rkey)
    first = joined.filter(joined._rkey.isnull() | (joined._ord == joined._first))
    # Only the columns the rules read, in their stored types: the join that pairs the sides
    # holds every key's row in a hash table, so each byte less is one less to spill.
    values = {
        "n": first._n.fill_null(1),
        "ord": first._ord,
        "minor": first._minor,
        "cur": first._cur,
        "st": first._st,
    }
    if when:
        values["when"] = first._when
    if price:
        values |= {"pminor": first._pminor, "pcur": first._pcur}
    return first.select(_key=first._key, **{f"{p}_{name}": value for name, value in values.items()})


#: The per-key columns of each side after pairing, as ``classify`` reads them.
_PAIRED = ("n", "ord", "minor", "cur", "st", "when", "pminor", "pcur")


def pair_keys(led: _Side, pro: _Side, rules: Rules) -> ir.Table:
    """Every key of either side, with both sides' counts and first rows (nulls where absent)."""
    left = _per_key(led, when=rules.ledger_dated, price=False).rename(l_key="_key")
    right = _per_key(pro, when=rules.processor_dated, price=rules.priced).rename(p_key="_key")
    joined = left.outer_join(right, left.l_key == right.p_key)
    paired = {
        f"{p}_{name}": joined[f"{p}_{name}"].cast("int64")
        if f"{p}_{name}" in joined.columns
        else ibis.null("int64")
        for p in "lp"
        for name in _PAIRED
    }
    return joined.select(**paired, key=joined.l_key.fill_null(joined.p_key))


# ---------------------------------------------------------------------------------------------
# 3. Categories of each key


def classify(keys: ir.Table, rules: Rules) -> ir.Table:
    """A flag per category, and only the keys with at least one flag.

    The ledger's amount is compared with what the processor charged when the currencies are the
    same, else with what it priced (``pricingAmount``) when that is in the ledger's currency.
    Keys in two currencies with neither are ``fx_check`` when there are reference rates (decided
    by ``resolve_fx``), else ``currency_mismatch``. Inside the settlement window, a payment
    still unsettled at the processor, or on one side only, is ``in_transit`` instead. A key
    with more than one row on a side is flagged a duplicate here and decided by
    ``settle_repeats``.
    """
    classes = _classes(keys, rules, l_charges=keys.l_n, p_charges=keys.p_n)
    any_flag = ibis.literal(False)
    for name in _FLAGS:
        any_flag |= classes[name]
    # Almost every key is a clean match (one row a side, same currency, amount and status, not
    # unknown), which no flag can take: the first filter drops those at the cost of a few
    # comparisons, and the flags are computed only on the keys left (filters are conjoined, and a
    # conjunction is evaluated on the rows its first term kept).
    clean = (
        keys.l_n.notnull()
        & keys.p_n.notnull()
        & (keys.l_n == 1)
        & (keys.p_n == 1)
        & (keys.l_cur == keys.p_cur)
        & (keys.l_minor == keys.p_minor)
        & (keys.l_st == keys.p_st)
        & (keys.p_st != _UNKNOWN)
    )
    return keys.filter(~clean.fill_null(False)).mutate(**classes).filter(any_flag)


#: The flags ``classify`` computes (``price_match`` is kept for ``price_moves``).
_FLAGS = (*_EXCEPTION_FLAGS, *INFO_CATEGORIES, "fx_check", "price_match")


def _classes(
    keys: ir.Table, rules: Rules, *, l_charges: ir.IntegerValue, p_charges: ir.IntegerValue
) -> dict[str, ir.Value]:
    """The flags of each key (``_FLAGS``), its difference ``l_minus_p`` and whether it is
    compared through its price (``priced``); a side is a duplicate when its ``*_charges`` (rows
    that took or may take money) are more than one."""
    has_l, has_p = keys.l_n.notnull(), keys.p_n.notnull()
    both = has_l & has_p
    charged = keys.l_cur == keys.p_cur
    priced = (keys.p_pcur == keys.l_cur) & ~charged if rules.priced else ibis.literal(False)
    priced = priced.fill_null(False)
    difference = keys.l_minor - priced.ifelse(keys.p_pminor, keys.p_minor)
    comparable = both & (charged | priced)
    within = _within(rules.tolerance, difference, keys.l_minor, keys.l_cur)
    cross = both & ~(charged | priced)
    unknown = keys.p_st == _UNKNOWN
    status_differs = both & (keys.l_st != keys.p_st) & ~unknown
    transit = _in_transit(keys, rules)
    status_transit = status_differs & transit["status"]
    only_l_transit = has_l & ~has_p & transit["ledger"]
    only_p_transit = has_p & ~has_l & transit["processor"]
    flags = {
        "missing_in_processor": has_l & ~has_p & ~only_l_transit,
        "missing_in_ledger": has_p & ~has_l & ~only_p_transit,
        "amount_mismatch": comparable & ~within,
        "currency_mismatch": cross & ibis.literal(rules.rates is None),
        "status_mismatch": status_differs & ~status_transit,
        "duplicate_in_processor": has_p & (p_charges > 1),
        "duplicate_in_ledger": has_l & (l_charges > 1),
        "unknown_outcome": has_p & unknown,
        "in_transit": status_transit | only_l_transit | only_p_transit,
        "within_tolerance": comparable & within & (difference != 0),
        "fx_check": cross & ibis.literal(rules.rates is not None),
        "price_match": comparable & priced,  # kept for ``price_moves``
    }
    flags = {name: flag.fill_null(False) for name, flag in flags.items()}
    return {**flags, "l_minus_p": difference, "priced": priced}


def repeats(engine: Backend, classified: ir.Table, sides: tuple[_Side, _Side]) -> list[_Side]:
    """The sides with a key of more than one row (every such key is among the classified)."""
    counts = engine.arrow(
        classified.aggregate(
            l=(classified.l_n > 1).fill_null(False).ifelse(1, 0).sum(),
            p=(classified.p_n > 1).fill_null(False).ifelse(1, 0).sum(),
        )
    ).to_pylist()[0]
    return [side for side in sides if counts[side.name[0]]]


def settle_repeats(classified: ir.Table, repeated: dict[str, ir.Table], rules: Rules) -> ir.Table:
    """The keys with more than one row on a side, classified again on the row that agrees with
    the other side (``_compared_row``), and a duplicate only when more than one of a side's rows
    took or may take money: a failed attempt before the payment that went through is no double
    charge, and the row that matches is no amount or status difference. Few keys; each stays
    (one without a flag is matched, its other rows with it)."""
    multi = (classified.l_n > 1).fill_null(False) | (classified.p_n > 1).fill_null(False)
    keys = classified.filter(multi).select("key", *(f"{p}_{name}" for p in "lp" for name in _PAIRED))
    for side, against in (("processor", "l"), ("ledger", "p")):  # the processor's row first
        keys = _compared_row(keys, repeated.get(side), side[0], against)
    classes = _classes(keys, rules, l_charges=keys.l_charges, p_charges=keys.p_charges)
    settled = keys.mutate(**classes).select(*classified.columns)
    return classified.filter(~multi).union(settled)


def _compared_row(keys: ir.Table, rows: ir.Table | None, p: str, against: str) -> ir.Table:
    """``keys`` with side ``p``'s compared row (``{p}_*``) of each key it repeats: the first row
    that agrees with row ``against`` in amount, currency and status, else the first with its
    status, else the first; and ``{p}_charges``, the rows that are not ``failure``."""
    if rows is None:
        return keys.mutate(**{f"{p}_charges": keys[f"{p}_n"]})
    other = keys.select(
        _ck=keys.key,
        _a_minor=keys[f"{against}_minor"],
        _a_cur=keys[f"{against}_cur"],
        _a_st=keys[f"{against}_st"],
    )
    rows = rows.join(other, rows._key == other._ck)
    agrees = (
        (rows._minor == rows._a_minor) & (rows._cur == rows._a_cur) & (rows._st == rows._a_st)
    ).fill_null(False)
    same_status = (rows._st == rows._a_st).fill_null(False)
    order = [agrees.ifelse(0, 1), same_status.ifelse(0, 1), rows._ord]
    rows = rows.mutate(_pick=ibis.row_number().over(group_by=rows._key, order_by=order))
    picked = rows.filter(rows._pick == 0)
    chosen = picked.select(
        _chosen=picked._key,
        **{f"_c_{name}": picked[f"_{name}"].cast("int64") for name in _PAIRED if name != "n"},
    )
    charges = rows.group_by(_charged_key=rows._key).aggregate(
        _c_charges=(rows._st != _FAILURE).ifelse(1, 0).sum()
    )
    chosen = chosen.join(charges, chosen._chosen == charges._charged_key).drop("_charged_key")
    joined = keys.left_join(chosen, keys.key == chosen._chosen)
    found = joined._chosen.notnull()
    replaced = {
        f"{p}_{name}": found.ifelse(joined[f"_c_{name}"], joined[f"{p}_{name}"])
        for name in _PAIRED
        if name != "n"
    }
    replaced[f"{p}_charges"] = found.ifelse(joined._c_charges.cast("int64"), joined[f"{p}_n"])
    return joined.mutate(**replaced).drop("_chosen", *(f"_c_{name}" for name in (*_PAIRED[1:], "charges")))


def _within(
    tolerance: Tolerance, difference: ir.IntegerValue, amount: ir.IntegerValue, cur: ir.IntegerValue
) -> ir.BooleanValue:
    """Whether ``difference`` is within the tolerance of the ledger ``amount`` in currency code
    ``cur``: exact, in integers (a percentage as ``|d| * den <= |amount| * num``, widened)."""
    if tolerance.is_zero:
        return difference == 0
    size = (difference < 0).ifelse(-difference, difference)

    def allowed(allowance: Allowance) -> ir.BooleanValue:
        test = size <= allowance.minor
        if allowance.percent:
            num, den = allowance.ratio()
            scaled = (amount < 0).ifelse(-amount, amount).cast(_SUM_TYPE) * num
            test |= size.cast(_SUM_TYPE) * den <= scaled
        return test

    codes = {name: code for code, name in enumerate(currency_codes())}
    by_currency = [(cur == codes[name], allowed(allowance)) for name, allowance in tolerance.per_currency]
    # Computed only where amounts differ (a CASE evaluates its branches on the rows that take them).
    return ibis.cases((difference == 0, True), *by_currency, else_=allowed(tolerance.default))


def _in_transit(keys: ir.Table, rules: Rules) -> dict[str, ir.BooleanValue]:
    """Inside the settlement window: ``status`` (the processor's payment is unsettled, pending or
    waiting for the customer, and dated in the window), ``ledger`` (a ledger row dated in the
    window), ``processor`` (an unsettled processor payment dated in the window: the books may
    wait for its outcome; a settled one missing from the books is an exception at once)."""
    no = ibis.literal(False)
    if rules.timing is None:
        return {"status": no, "ledger": no, "processor": no}
    start = rules.timing.window_seconds
    recent_p = (keys.p_when >= start).fill_null(False) if rules.processor_dated else no
    recent_l = (keys.l_when >= start).fill_null(False) if rules.ledger_dated else no
    unsettled = keys.p_st.isin(list(_UNSETTLED))
    return {"status": unsettled & recent_p, "ledger": recent_l, "processor": unsettled & recent_p}


@dataclass(frozen=True)
class _Fx:
    """The comparisons at reference rates: the per-payment frame (``FX_COLUMNS``) and every
    rate that was needed and missing."""

    frame: pd.DataFrame
    missing: tuple[str, ...] = ()


#: ``fx_state`` codes: compared exactly, within tolerance, beyond it, no rate or no date.
_FX_EXACT, _FX_WITHIN, _FX_BEYOND, _FX_NO_RATE = 0, 1, 2, 3


def _at_rates(
    rows: list[dict[str, Any]], rates: Rates, tolerance: Tolerance
) -> tuple[list[tuple[str, int, int, str]], list[dict[str, Any]], set[str]]:
    """Each key at the rate of its day: the decisions of the ``fx_check`` keys (key, state,
    expected minor units, the rate or the missing one in words), the FX section's lines, and
    the rates that were missing."""
    codes = currency_codes()
    decided: list[tuple[str, int, int, str]] = []
    lines: list[dict[str, Any]] = []
    missing: set[str] = set()
    for row in rows:
        base, quote = codes[int(row["l_cur"])], codes[int(row["p_cur"])]
        seconds = row["p_when"] if row["p_when"] is not None else row["l_when"]
        day = None if seconds is None else datetime.fromtimestamp(int(seconds), UTC).date()
        conversion = None if day is None else rates.convert(int(row["l_minor"]), base, quote, day)
        if conversion is None or day is None:
            if row["fx_check"]:  # a price match needs no rate: nothing is missing then
                text = _no_rate_text(rates, base, quote, day)
                missing.update([text] if day is not None else [])
                decided.append((row["key"], _FX_NO_RATE, 0, text))
            continue
        variance = int(row["p_minor"]) - conversion.expected_minor
        if row["fx_check"]:
            state = _fx_state(tolerance, variance, conversion.expected_minor, quote)
            decided.append(
                (row["key"], state, conversion.expected_minor, f"{conversion.rate_text()} on {day}")
            )
            category = ("matched", "within_tolerance", "amount_mismatch")[state]
        else:  # matched (or not) through its price: its outcome is the price's
            flags = ("amount_mismatch", "within_tolerance")
            category = next((name for name in flags if row[name]), "matched")
        lines.append(
            {
                "merchantReferenceId": row["key"],
                "date": day,
                "ledger_amount": from_minor(int(row["l_minor"]), base),
                "ledger_currency": base,
                "rate": conversion.rate_text(),
                "expected_amount": from_minor(conversion.expected_minor, quote),
                "charged_amount": from_minor(int(row["p_minor"]), quote),
                "charged_currency": quote,
                "variance": from_minor(variance, quote),
                "category": category,
            }
        )
    return decided, lines, missing


def _no_rate_text(rates: Rates, base: str, quote: str, day: date | None) -> str:
    """Why a payment in two currencies could not be compared, in words."""
    if day is None:
        return f"no date to take a {base}/{quote} rate for"
    return rates.missing_text(base, quote, day)


def _fx_state(tolerance: Tolerance, variance: int, expected: int, currency: str) -> int:
    """``_FX_EXACT``, ``_FX_WITHIN`` or ``_FX_BEYOND`` the tolerance of the expected amount."""
    if variance == 0:
        return _FX_EXACT
    return _FX_WITHIN if tolerance.allows(variance, expected, currency) else _FX_BEYOND


def resolve_fx(engine: Backend, flagged: ir.Table, rules: Rules) -> tuple[ir.Table, _Fx]:
    """Decide the keys in two currencies (``fx_check``) at the reference rate of the payment's
    day (the processor's ``createTime``, else the ledger's date), exactly, in Python (``fx.py``;
    few keys by nature): matched, ``within_tolerance``, ``amount_mismatch``, or
    ``currency_mismatch`` when there is no rate. The decisions go back into the flags. The
    payments matched through their price are compared at the rate too, for the FX section only
    (what the conversion cost); their outcome stays the price's."""
    empty = _Fx(pd.DataFrame({c: [] for c in FX_COLUMNS}))
    nothing = {
        "fx_state": ibis.null("int8"),
        "fx_expected": ibis.null("int64"),
        "fx_text": ibis.null("string"),
    }
    if rules.rates is None:
        return flagged.mutate(**nothing), empty
    checks = flagged.filter(flagged.fx_check | flagged.price_match)
    columns = ("key", "l_minor", "l_cur", "p_minor", "p_cur", "p_when", "l_when", "fx_check")
    table = engine.arrow(checks.select(*columns, "amount_mismatch", "within_tolerance").order_by("key"))
    if not table.num_rows:
        return flagged.mutate(**nothing), empty
    decided, lines, missing = _at_rates(table.to_pylist(), rules.rates, rules.tolerance)
    if not decided:
        return flagged.mutate(**nothing), _Fx(pd.DataFrame(lines, columns=list(FX_COLUMNS)))
    outcome = ibis.memtable(
        pa.table(
            {
                "_fx_key": [d[0] for d in decided],
                "fx_state": pa.array([d[1] for d in decided], pa.int8()),
                # 0 without a rate (never read then): Spark's tables from Arrow lose int64s beside nulls.
                "fx_expected": pa.array([d[2] for d in decided], pa.int64()),
                "fx_text": [d[3] for d in decided],
            }
        )
    )
    joined = flagged.left_join(outcome, flagged.key == outcome._fx_key).drop("_fx_key")
    state = joined.fx_state
    resolved = joined.mutate(
        currency_mismatch=joined.currency_mismatch | (state == _FX_NO_RATE).fill_null(False),
        amount_mismatch=joined.amount_mismatch | (state == _FX_BEYOND).fill_null(False),
        within_tolerance=joined.within_tolerance | (state == _FX_WITHIN).fill_null(False),
    )
    frame = pd.DataFrame(lines, columns=list(FX_COLUMNS))
    return resolved, _Fx(frame, tuple(sorted(missing)))


def _exception(flagged: ir.Table) -> ir.BooleanValue:
    """Whether each flagged key has an exception flag."""
    exception = ibis.literal(False)
    for name in _EXCEPTION_FLAGS:
        exception |= flagged[name]
    return exception


def informational_apart(flagged: ir.Table) -> ir.Table:
    """A key with an exception is that exception only, never also in transit or matched within
    tolerance: a payment that failed or was charged twice is no variance to post, and its
    amount is at risk, not at stake in transit (the rows are counted in exceptions). A key in
    transit is not within tolerance too: the variance of a payment still pending is not posted."""
    exception = _exception(flagged)
    transit = flagged.in_transit & ~exception
    return flagged.mutate(
        in_transit=transit, within_tolerance=flagged.within_tolerance & ~exception & ~transit
    )


def _outcome(flagged: ir.Table) -> tuple[ir.BooleanValue, ir.BooleanValue]:
    """Whether each flagged key is an exception (any exception flag) or, failing that, in transit
    (its rows then counted apart); any other flagged key is matched (within tolerance, or
    exact at a reference rate)."""
    return _exception(flagged), flagged.in_transit


def flag_stats(engine: Backend, flagged: ir.Table) -> pd.DataFrame:
    """Per ledger currency of the flagged keys: how many keys of each category, how many rows of
    each side the exception keys hold (``*_rows``) and the keys in transit (``*_transit``), and
    the keys not matched with one ledger row (count and exact sum)."""
    exception, transit = _outcome(flagged)
    single = (flagged.l_n == 1) & (exception | transit)
    table = flagged.group_by(currency=flagged.l_cur).aggregate(
        **{name: flagged[name].ifelse(1, 0).sum() for name in (*_EXCEPTION_FLAGS, *INFO_CATEGORIES)},
        l_rows=exception.ifelse(flagged.l_n.fill_null(0), 0).sum(),
        p_rows=exception.ifelse(flagged.p_n.fill_null(0), 0).sum(),
        l_transit=transit.ifelse(flagged.l_n.fill_null(0), 0).sum(),
        p_transit=transit.ifelse(flagged.p_n.fill_null(0), 0).sum(),
        single_n=single.ifelse(1, 0).sum(),
        single_total=single.ifelse(flagged.l_minor, 0).cast(_SUM_TYPE).sum(),
    )
    return _named_currencies(engine.arrow(table).to_pandas())


def _named_currencies(frame: pd.DataFrame) -> pd.DataFrame:
    """A small frame's ``currency`` codes as ISO 4217 names (None where there was no code)."""
    codes = currency_codes()
    frame["currency"] = [None if pd.isna(c) else codes[int(c)] for c in frame["currency"]]
    return frame


def _named(table: ir.Table, p: str, side: _Side) -> ir.Table:
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


# ---------------------------------------------------------------------------------------------
# 4. Exceptions


def repeated_rows(engine: Backend, side: _Side, classified: ir.Table) -> ir.Table:
    """The usable rows of one side's keys of more than one row (few): found in one pass over the
    side, then read by ``settle_repeats``, ``duplicate_rows`` and ``matched_summary``."""
    n = classified[f"{side.name[0]}_n"]
    keys = classified.filter((n > 1).fill_null(False)).select(_dup_key=classified.key)
    rows = side.usable.join(keys, side.usable._key == keys._dup_key)
    return engine.keep(rows.select("_key", *(f"_{name}" for name in _PAIRED[1:])))


def duplicate_rows(engine: Backend, side: _Side, rows: ir.Table, flagged: ir.Table) -> ir.Table:
    """Per duplicated key of ``side``: its rows (``_rows_text``, in file order; each with its
    amount, currency and status when they differ), how many, and the values of the row shown
    (the first that took or may take money besides the row compared, the one that should not be
    there), as ``l2_*`` or ``p2_*``."""
    p = side.name[0]
    compared = flagged.filter(flagged[f"duplicate_in_{side.name}"])
    compared = compared.select(_ck=compared.key, _cord=compared[f"{p}_ord"])
    rows = rows.join(compared, rows._key == compared._ck)
    extra = (rows._st != _FAILURE) & (rows._ord != rows._cord)
    rows = rows.mutate(
        _rank=ibis.row_number().over(group_by=rows._key, order_by=[extra.ifelse(0, 1), rows._ord])
    )
    named = _named(rows.mutate(r_ord=rows._ord, r_cur=rows._cur, r_st=rows._st), "r", side)
    each = (
        named.r_row.cast("string")
        + ": "
        + minor_text(named._minor, named.r_digits)
        + " "
        + named.r_currency
        + " "
        + named.r_status
    )
    shown = named._rank == 0
    grouped = named.group_by(_dup_key=named._key).aggregate(
        _rows=named.r_row.collect(),
        _each=ibis.struct({"row": named.r_row, "text": each}).collect(),
        _count=named.count(),
        _alike=(named._minor.min() == named._minor.max())
        & (named._cur.min() == named._cur.max())
        & (named._st.min() == named._st.max()),
        **{f"{p}2_{name}": named[f"_{name}"].max(where=shown) for name in ("minor", "cur", "st", "ord")},
    )
    numbers = grouped._rows.sort().map(lambda r: r.cast("string")).join(", ")
    described = grouped._each.sort().map(lambda r: r.text).join(", ")
    grouped = grouped.mutate(_rows_text=grouped._alike.ifelse(numbers, described)).drop(
        "_rows", "_each", "_alike"
    )
    # What is at risk: every extra row that took or may take money, in the shown row's currency.
    extras = named.filter((named._st != _FAILURE) & (named._ord != named._cord))
    extras = extras.group_by(_ek=extras._key, _ecur=extras._cur).aggregate(
        _extra=extras._minor.abs().cast(_SUM_TYPE).sum()
    )
    cur = grouped[f"{p}2_cur"]
    joined = grouped.left_join(extras, (grouped._dup_key == extras._ek) & (cur == extras._ecur))
    return engine.keep(joined.drop("_ek", "_ecur"))


def exception_rows(
    engine: Backend,
    sides: tuple[_Side, _Side],
    flagged: ir.Table,
    duplicates: dict[str, ir.Table],
    stats: pd.DataFrame,
    rules: Rules,
) -> ir.Table | None:
    """One row per exception or informational row (None: there is none), in the backend: what
    ``EXCEPTION_COLUMNS`` shows, the summary's ``_cur`` and ``_amount``, and the report order's
    ``_rank`` (category), ``_on_processor`` (the ledger's rows first) and ``_row``."""
    led, pro = sides
    f = engine.keep(_named(_named(flagged, "l", led), "p", pro))  # a few rows; read once per part
    parts: list[ir.Table] = []
    cutoff = None if rules.timing is None else rules.timing.cutoff_seconds

    def part(
        category: str,
        table: ir.Table,
        on_processor: bool | ir.BooleanValue,
        detail: ir.StringValue,
        amount: ir.IntegerValue,
        currency: ir.StringValue | None = None,
        dated_by: ir.IntegerValue | None = None,
        **sides: ir.Value,
    ) -> None:
        if not stats[category].sum():  # a smaller query: only the categories found
            return
        when = table.l_when.fill_null(table.p_when) if dated_by is None else dated_by
        age = ibis.null("int64") if cutoff is None else ((cutoff - when) / _DAY).floor().cast("int64")
        columns = {
            "merchantReferenceId": table.key,
            "category": ibis.literal(category),
            "_rank": ibis.literal(CATEGORIES.index(category)),
            "_on_processor": ibis.literal(on_processor) if isinstance(on_processor, bool) else on_processor,
            "l_minor": table.l_minor,
            "l_digits": table.l_digits,
            "l_currency": table.l_currency,
            "l_status": table.l_status,
            "l_row": table.l_row,
            "l_source": table.l_source,
            "p_minor": table.p_minor,
            "p_digits": table.p_digits,
            "p_currency": table.p_currency,
            "p_status": table.p_status,
            "p_row": table.p_row,
            "p_source": table.p_source,
        }
        columns |= sides
        columns["_row"] = (  # the row shown: the processor's or the ledger's
            columns["p_row" if on_processor else "l_row"]
            if isinstance(on_processor, bool)
            else on_processor.ifelse(columns["p_row"], columns["l_row"])
        )
        columns["detail"] = detail
        columns["age_days"] = age
        # At risk or at stake, a refund's as much as a charge's; only a variance keeps its sign.
        columns["_amount"] = amount if category == "within_tolerance" else amount.abs()
        shown = columns["l_currency"].fill_null(columns["p_currency"])  # the rows shown
        columns["_cur"] = shown if currency is None else currency
        selected = table.select(**columns)
        parts.append(
            selected.cast(
                {
                    "l_minor": "int64",
                    "p_minor": "int64",
                    "l_digits": "int64",
                    "p_digits": "int64",
                    "l_row": "int64",
                    "p_row": "int64",
                    "age_days": "int64",
                    "_row": "int64",
                    "_amount": "int64",
                    "_cur": "string",
                }
            )
        )

    missing = (("missing_in_processor", False, pro), ("missing_in_ledger", True, led))
    for category, on_processor, other in missing:
        only, detail = _missing(f.filter(f[category]), other)
        part(category, only, on_processor, detail, only.p_minor if on_processor else only.l_minor)
    amount = f.filter(f.amount_mismatch)
    fx = amount.fx_state.notnull()
    fx_variance = amount.p_minor - amount.fx_expected
    part(
        "amount_mismatch",
        amount,
        False,
        fx.ifelse(_fx_text(amount, "beyond"), _compared_text(amount, "difference")),
        fx.ifelse(fx_variance.abs(), amount.l_minus_p.abs()),
        currency=fx.ifelse(amount.p_currency, amount.l_currency),
    )
    currency = f.filter(f.currency_mismatch)
    part(
        "currency_mismatch",
        currency,
        False,
        "ledger "
        + currency.l_currency
        + ", processor "
        + currency.p_currency
        + currency.fx_text.isnull().ifelse("", "; " + currency.fx_text)
        + "; processor row "
        + currency.p_row.cast("string"),
        currency.l_minor,
    )
    status = f.filter(f.status_mismatch)
    part(
        "status_mismatch",
        status,
        False,
        "ledger "
        + status.l_status
        + ", processor "
        + status.p_status
        + "; processor row "
        + status.p_row.cast("string"),
        status.l_minor,
    )
    _duplicate_parts(part, f, duplicates, sides)
    unknown = f.filter(f.unknown_outcome)
    part(
        "unknown_outcome",
        unknown,
        True,
        ibis.literal("the processor does not know the outcome of this payment"),
        unknown.l_minor.isnull().ifelse(unknown.p_minor, unknown.l_minor),
    )
    if rules.timing is not None:
        transit = f.filter(f.in_transit)
        part(
            "in_transit",
            transit,
            transit.l_n.isnull(),
            _transit_text(transit, rules.timing),
            transit.l_minor.isnull().ifelse(transit.p_minor, transit.l_minor),
            dated_by=transit.p_when.fill_null(transit.l_when),
        )
    within = f.filter(f.within_tolerance)
    fx = within.fx_state.notnull()
    part(
        "within_tolerance",
        within,
        False,
        fx.ifelse(_fx_text(within, "within"), _compared_text(within, "variance", ", within tolerance")),
        fx.ifelse(within.fx_expected - within.p_minor, within.l_minus_p),
        currency=fx.ifelse(within.p_currency, within.l_currency),
    )
    if not parts:
        return None
    union = parts[0]
    for more in parts[1:]:
        union = union.union(more)
    return union


@dataclass(frozen=True)
class _Held:
    """The exception rows of ``exception_rows``: those the result holds (every one, or the first
    of each category), their count and exact sum per category and currency (``tally``), and the
    rows the engine keeps when they are too many to hold (None when all are held)."""

    frame: pd.DataFrame
    tally: list[tuple[str, str, int, int]]
    spilled: SpilledRows | None = None
    preview_rows: int = 0


def held_exceptions(
    engine: Backend,
    listed: ir.Table | None,
    *,
    listed_rows: int,
    rejected_rows: int,
    held_rows: int,
    preview_rows: int,
) -> _Held:
    """The exception rows as the result holds them: every one when there are at most
    ``held_rows`` with the ``rejected_rows`` (held apart, always); else the first
    ``preview_rows`` of each category (an informational category's oldest), the engine keeping
    them all in report order (``_seq``) to read back in batches.

    ``listed_rows``, the rows the flag counts say ``listed`` has, picks the way: rows that fit
    are read once, in report order, and counted here; only more are kept in the engine."""
    if listed is None:
        return _Held(_exception_frame(None), [])
    order = [listed._rank, listed._on_processor, listed._row, listed.merchantReferenceId]
    held_rows -= rejected_rows
    if listed_rows <= held_rows:
        table = engine.arrow(listed.order_by(order))
        return _Held(_exception_frame(table), _tally(table))
    kept = engine.keep(listed.mutate(_seq=ibis.row_number().over(order_by=order)))
    tally_table = kept.group_by(["category", "_cur"]).aggregate(
        n=kept.count(), total=kept._amount.cast(_SUM_TYPE).sum()
    )
    tally = [
        (str(r["category"]), str(r["_cur"]), int(r["n"]), int(r["total"]))
        for r in engine.arrow(tally_table).to_pylist()
    ]
    sizes: dict[str, int] = {}  # in report order, as ``_seq`` has them
    for category, _, n, _ in sorted(tally, key=lambda t: CATEGORIES.index(t[0])):
        sizes[category] = sizes.get(category, 0) + n
    if sum(sizes.values()) <= held_rows:
        return _Held(_exception_frame(engine.arrow(kept.order_by("_seq"))), tally)
    # An informational category's first rows are its oldest (the next to become a break).
    oldest = kept.category.isin(list(INFO_CATEGORIES)).ifelse(kept.age_days.fill_null(-1), 0)
    place = ibis.row_number().over(group_by=kept.category, order_by=[ibis.desc(oldest), kept._seq])
    preview = kept.mutate(_place=place)
    preview = preview.filter(preview._place < preview_rows).drop("_place").order_by("_seq")
    starts: dict[str, int] = {}  # the first ``_seq`` (from 0) of each category
    position = 0
    for category in sizes:
        starts[category] = position
        position += sizes[category]

    def read(category: str, start: int, count: int | None) -> Iterator[pd.DataFrame]:
        """Rows ``start`` to ``start + count`` of ``category`` in report order, a batch at a
        time; each batch is a query of its own (``_seq`` in a range), so that nothing stays
        open on the connection between batches."""
        size = sizes.get(category, 0)
        end = size if count is None else min(size, start + count)
        for first in range(start, end, BATCH_ROWS):
            low = starts[category] + first
            high = starts[category] + min(end, first + BATCH_ROWS)
            rows = kept.filter((kept._seq >= low) & (kept._seq < high)).order_by("_seq")
            yield _exception_frame(engine.arrow(rows))[list(EXCEPTION_COLUMNS)]

    frame = _exception_frame(engine.arrow(preview))
    return _Held(frame, tally, SpilledRows(sizes, read), preview_rows)


def _tally(table: pa.Table) -> list[tuple[str, str, int, int]]:
    """Rows read whole: how many and their exact sum (Python integers) per category and currency."""
    sums: dict[tuple[str, str], list[int]] = {}
    columns = (table.column(name).to_pylist() for name in ("category", "_cur", "_amount"))
    for category, currency, amount in zip(*columns, strict=True):
        entry = sums.setdefault((str(category), str(currency)), [0, 0])
        entry[0] += 1
        entry[1] += amount or 0
    return [(category, currency, n, total) for (category, currency), (n, total) in sums.items()]


def _duplicate_parts(
    part: Callable[..., None], f: ir.Table, duplicates: dict[str, ir.Table], sides: tuple[_Side, _Side]
) -> None:
    """The ``duplicate_in_*`` rows: the extra row of each duplicated key (``duplicate_rows``), with
    every row."""
    for side in ("processor", "ledger"):
        p = side[0]
        if side not in duplicates:
            continue
        dups = duplicates[side]
        keyed = f.filter(f[f"duplicate_in_{side}"])
        joined = _named(keyed.join(dups, keyed.key == dups._dup_key), f"{p}2", sides[side == "processor"])
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


def _missing(table: ir.Table, other: _Side) -> tuple[ir.Table, ir.StringValue]:
    """``table``'s keys that ``other`` does not have among its usable rows, and why in words: not
    found there at all, or there only in a row that takes no part (its first), so that whoever
    looks for the payment is told where it is instead of searching for one that is there:
    ``not read in the ledger; ledger row 12 has this key but cannot be read (its rejected_row
    says why)``, ``not in the ledger in the period; ledger row 12 is dated 2026-10-20 00:00 UTC,
    outside it``, ``not in the ledger by the cut-off; ledger row 12 is dated 2026-11-20 00:00
    UTC, after it``."""
    where = "at the processor" if other.name == "processor" else "in the ledger"
    rows = other.rows.filter(~_usable(other.rows))
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


def _compared_text(table: ir.Table, word: str, note: str = "") -> ir.StringValue:
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


def _fx_text(table: ir.Table, word: str) -> ir.StringValue:
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


def _transit_text(table: ir.Table, clock: Timing) -> ir.StringValue:
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


def _integers(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as int64 (0 where null) and where it is present: never through float."""
    values = pc.fill_null(column.cast(pa.int64()), 0).to_numpy()
    return values.astype(np.int64), column.is_valid().to_numpy(zero_copy_only=False)


def _texts(column: pa.ChunkedArray) -> pd.Series:
    return pd.Series(column.to_pylist(), dtype=object)  # a Series: pandas 3 infers no str dtype from it


def _exception_frame(table: pa.Table | None) -> pd.DataFrame:
    """The engine's exception rows (in report order) as the result's frame: exact ``Decimal``
    amounts, plus ``_cur`` and ``_amount`` (the currency and minor units the summary adds up)."""
    if table is None or not table.num_rows:
        frame = pd.DataFrame({name: np.empty(0, dtype=object) for name in EXCEPTION_COLUMNS})
        frame["source_row"] = np.empty(0, dtype=np.int64)
        frame["age_days"] = pd.array([], dtype="Int64")
        return frame.assign(_cur=np.empty(0, dtype=object), _amount=np.empty(0, dtype=np.int64))
    on_processor = table.column("_on_processor").to_numpy().astype(bool)
    row, _ = _integers(table.column("_row"))
    minors, digits = [], []
    for p in ("l", "p"):
        minor, has = _integers(table.column(f"{p}_minor"))
        places, _ = _integers(table.column(f"{p}_digits"))
        minors.append(minor)
        digits.append(np.where(has, places, -1))
    ledger_amount, processor_amount = _decimals(minors, digits)
    source = np.where(on_processor, _texts(table.column("p_source")), _texts(table.column("l_source")))
    amount, _ = _integers(table.column("_amount"))
    return pd.DataFrame(
        {
            "merchantReferenceId": _texts(table.column("merchantReferenceId")),
            "category": pd.Categorical(_texts(table.column("category")), categories=list(CATEGORIES)),
            "ledger_amount": ledger_amount,
            "processor_amount": processor_amount,
            "ledger_currency": _texts(table.column("l_currency")),
            "processor_currency": _texts(table.column("p_currency")),
            "ledger_status": _texts(table.column("l_status")),
            "processor_status": _texts(table.column("p_status")),
            "source": source,
            "source_row": row,
            "detail": _texts(table.column("detail")),
            "severity": np.where(
                np.isin(_texts(table.column("category")).to_numpy(), INFO_CATEGORIES), "info", "exception"
            ).astype(object),
            "age_days": pd.array(table.column("age_days").to_pylist(), dtype="Int64"),
            "_cur": _texts(table.column("_cur")),
            "_amount": amount,
        }
    )


#: Rejected rows of one side a run lists (each held in memory with its reasons), and those
#: quoted when there are more.
REJECTED_ROWS = HELD_ROWS
_QUOTED_REJECTED = 3


def rejected_rows(engine: Backend, side: _Side, sums: pd.DataFrame) -> pd.DataFrame:
    """The rows of one side that cannot be used, with their reasons (few, by nature): only those
    rows are read and checked again, with the columns the reasons quote.

    More than ``REJECTED_ROWS`` of them (a whole file misread: a wrong decimal mark, a column
    mapped wrong) would take gigabytes with their reasons (3M: 8.7 GB): the run stops instead,
    quoting the first ones, so that the file can be read as it should be."""
    count = int(sums["rejected"].sum())
    if not count:
        return pd.DataFrame({name: [] for name in REJECTED_COLUMNS}).astype({"source_row": "int64"})
    bad = side.rows.filter(side.rows._rejected)
    if count > REJECTED_ROWS:
        bad = bad.order_by(bad._ord).limit(_QUOTED_REJECTED)
    bad = bad.select(_bad_ord=bad._ord)
    written = side.written
    frame = rejected_frame(
        side.loaded, engine, side.loaded.check(written.semi_join(bad, written._ord == bad._bad_ord))
    )
    if count > REJECTED_ROWS:
        quoted = "; ".join(f"row {r.source_row}: {r.detail}" for r in frame.itertuples())
        raise InputError(
            f"{side.loaded.source}: {count:,} rows cannot be used, more than a run lists "
            f"({REJECTED_ROWS:,}); the first: {quoted}. Is the file read as it should be (--decimal, "
            "a column map)?"
        )
    return frame


# ---------------------------------------------------------------------------------------------
# 5. Counts, totals, summary


def side_aggregates(engine: Backend, sides: tuple[_Side, _Side]) -> dict[str, pd.DataFrame]:
    """Per side and currency: rows, usable rows and their exact sum, those of them that are not a
    failed attempt (``moved``: money taken or that may be) and their sum, rejected, outside the
    period, after the cut-off."""
    parts = []
    for side in sides:
        rows = side.rows
        usable = _usable(rows)
        parts.append(
            rows.group_by(currency=rows._cur)
            .aggregate(
                rows=rows.count(),
                usable=usable.ifelse(1, 0).sum(),
                total=usable.ifelse(rows._minor, 0).cast(_SUM_TYPE).sum(),
                moved=(usable & (rows._st != _FAILURE)).ifelse(1, 0).sum(),
                moved_total=(usable & (rows._st != _FAILURE)).ifelse(rows._minor, 0).cast(_SUM_TYPE).sum(),
                rejected=rows._rejected.ifelse(1, 0).sum(),
                outside=rows._outside.ifelse(1, 0).sum(),
                after=rows._after.ifelse(1, 0).sum(),
            )
            .mutate(side=ibis.literal(side.name))
        )
    frame = _named_currencies(engine.arrow(parts[0].union(parts[1])).to_pandas())
    return {side.name: frame[frame["side"] == side.name].reset_index(drop=True) for side in sides}


def count_rows(
    sides: tuple[_Side, _Side],
    stats: pd.DataFrame,
    side_sums: dict[str, pd.DataFrame],
    rejected: dict[str, pd.DataFrame],
) -> tuple[RowCounts, RowCounts]:
    """What became of every row of each side: the rows of flagged keys are in exceptions."""
    counts = []
    for side in sides:
        sums = side_sums[side.name]
        exception_rows = int(stats[f"{side.name[0]}_rows"].sum())
        transit_rows = int(stats[f"{side.name[0]}_transit"].sum())
        counts.append(
            RowCounts(
                side=side.name,
                source=side.loaded.source,
                rows=int(sums["rows"].sum()),
                matched=int(sums["usable"].sum()) - exception_rows - transit_rows,
                exceptions=exception_rows,
                rejected=len(rejected[side.name]),
                outside=int(sums["outside"].sum()),
                in_transit=transit_rows,
                after_cutoff=int(sums["after"].sum()),
            )
        )
    return counts[0], counts[1]


def matched_summary(
    engine: Backend,
    stats: pd.DataFrame,
    flagged: ir.Table,
    repeated: ir.Table | None,
    sums: pd.DataFrame,
) -> list[tuple[str, str, int, Decimal | None]]:
    """Matched keys per currency (the ledger row compared), without another pass over every key:
    the usable ledger rows minus the rows of flagged keys that are not matched (the one row of
    each key that has one) and the ledger's ``repeated_rows`` but the row compared of a matched
    key."""
    less: dict[str, tuple[int, int]] = {}
    for row in _records(stats):
        if isinstance(row["currency"], str) and row["single_n"]:
            less[row["currency"]] = (int(row["single_n"]), int(row["single_total"]))
    if repeated is not None:
        exception, transit = _outcome(flagged)
        outcome = flagged.select(_fk=flagged.key, _lord=flagged.l_ord, _out=exception | transit)
        joined = repeated.join(outcome, repeated._key == outcome._fk)
        apart = joined.filter(joined._out | (joined._ord != joined._lord))
        totals = _named_currencies(
            engine.arrow(
                apart.group_by(currency=apart._cur).aggregate(
                    n=apart.count(), total=apart._minor.cast(_SUM_TYPE).sum()
                )
            ).to_pandas()
        )
        for currency, n, total in zip(*(totals[c].tolist() for c in ("currency", "n", "total")), strict=True):
            had_n, had_total = less.get(currency, (0, 0))
            less[currency] = (had_n + int(n), had_total + int(total))
    out: list[tuple[str, str, int, Decimal | None]] = []
    for row in _records(sums.sort_values("currency")):
        currency = str(row["currency"])
        minus_n, minus_total = less.get(currency, (0, 0))
        n, total = int(row["usable"]) - minus_n, int(row["total"]) - minus_total
        if n:
            out.append(("matched", currency, n, from_minor(total, currency)))
    return out


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A small frame's rows as dicts (exact values: ints, Decimals, strings)."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def summarise(
    engine: Backend,
    keys: ir.Table,
    flagged: ir.Table,
    sides: tuple[_Side, _Side],
    exceptions: _Held,
    rejected: dict[str, pd.DataFrame],
    side_sums: dict[str, pd.DataFrame],
    matched: list[tuple[str, str, int, Decimal | None]],
    counts: tuple[RowCounts, RowCounts],
) -> ReconciliationResult:
    """The result: exceptions with the rejected rows after them, the summary, totals, counts."""
    led, pro = sides
    rejected_parts = [rejected_exceptions(rejected[s.name], s.name) for s in sides]
    summary_rows = matched + [
        (category, currency, n, from_minor(total, currency))
        for category, currency, n, total in exceptions.tally
    ]
    rejected_count = sum(len(frame) for frame in rejected.values())
    if rejected_count:
        summary_rows.append(("rejected_row", "", rejected_count, None))
    summary = _sort_summary(pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS)))
    unreadable = [exc for exc, _ in rejected_parts if len(exc)]
    spilled = exceptions.spilled
    if spilled is not None and unreadable:  # held besides, and only their first in the result's frame
        spilled = spilled.joined(SpilledRows.held(pd.concat(unreadable, ignore_index=True)))
        unreadable = [pd.concat(unreadable, ignore_index=True).head(exceptions.preview_rows)]
    frames = [exceptions.frame[list(EXCEPTION_COLUMNS)], *unreadable]
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()
    table["category"] = pd.Categorical(table["category"].astype(str), categories=list(CATEGORIES))
    totals = tuple(  # money only: a failed attempt took none
        SideTotal(
            side.name,
            str(row["currency"]),
            int(row["moved"]),
            from_minor(int(row["moved_total"]), str(row["currency"])),
        )
        for side in sides
        for row in _records(side_sums[side.name].sort_values("currency"))
        if row["moved"]
    )
    return ReconciliationResult(
        summary=summary,
        exceptions=table.reset_index(drop=True),
        matched_rows=LazyRows(  # a key per ledger row compared (a repeat's other rows are matched rows too)
            sum(n for _, _, n, _ in matched),
            lambda: _matched_frame(engine, matched_keys(keys, flagged, sides)),
        ),
        rejected=pd.concat([side for _, side in rejected_parts], ignore_index=True),
        counts=counts,
        sources=(led.loaded.source, pro.loaded.source),
        totals=totals,
        spilled=spilled,
    )


def price_moves(engine: Backend, flagged: ir.Table) -> tuple[SideTotal, ...]:
    """Per currency, what the payments matched through their price were charged (``charged``)
    and priced (``priced``): exact sums, for a net difference in the books' currencies (failed
    attempts apart, as in the totals)."""
    exception, transit = _outcome(flagged)
    moved = flagged.filter(flagged.price_match & ~exception & ~transit & (flagged.p_st != _FAILURE))
    parts = [
        moved.group_by(currency=moved[cur].cast("int64"))
        .aggregate(rows=moved.count(), total=moved[minor].cast(_SUM_TYPE).sum())
        .mutate(side=ibis.literal(side))
        for side, cur, minor in (("charged", "p_cur", "p_minor"), ("priced", "p_pcur", "p_pminor"))
    ]
    frame = _named_currencies(engine.arrow(parts[0].union(parts[1])).to_pandas())
    return tuple(
        SideTotal(side, currency, int(rows), from_minor(int(total), currency))
        for side, currency, rows, total in sorted(
            zip(*(frame[c].tolist() for c in ("side", "currency", "rows", "total")), strict=True)
        )
    )


def matched_keys(keys: ir.Table, flagged: ir.Table, sides: tuple[_Side, _Side]) -> ir.Table:
    """The keys on both sides that are neither an exception nor in transit (``MATCHED_COLUMNS``),
    in ledger order."""
    exception, transit = _outcome(flagged)
    columns = ["key", *(f"{p}_{name}" for p in "lp" for name in _PAIRED)]
    both = keys.filter(keys.l_n.notnull() & keys.p_n.notnull())
    unflagged = both.anti_join(flagged, both.key == flagged.key).select(*columns)
    # A flagged key matched (within tolerance, at a rate, a repeat) as ``settle_repeats`` compared it.
    kept = flagged.filter(~exception & ~transit & flagged.l_n.notnull() & flagged.p_n.notnull())
    matched = unflagged.union(kept.select(*columns).cast(dict(unflagged.schema().items())))
    matched = _named(_named(matched, "l", sides[0]), "p", sides[1])
    return (
        matched.select(
            merchantReferenceId=matched.key,
            amountMinor=matched.l_minor,
            currency=matched.l_currency,
            status=matched.l_status,
            ledger_row=matched.l_row,
            processor_row=matched.p_row,
            charged_amountMinor=matched.p_minor,
            charged_currency=matched.p_currency,
            pricing_amountMinor=matched.p_pminor,
            _pcur=matched.p_pcur,
            _ord=matched.l_ord,
        )
        .order_by("_ord")
        .drop("_ord")
    )


def _matched_frame(engine: Backend, matched: ir.Table) -> pd.DataFrame:
    table = engine.arrow(matched)
    codes = currency_codes()
    pricing_minor = table.column("pricing_amountMinor")
    frame = pd.DataFrame(
        {
            "merchantReferenceId": pd.array(
                table.column("merchantReferenceId"), dtype=pd.ArrowDtype(pa.large_string())
            ),
            "amountMinor": table.column("amountMinor").to_numpy().astype(np.int64),
            "currency": pd.Categorical(table.column("currency").to_pylist()),
            "status": pd.Categorical(
                table.column("status").to_pylist(), categories=list(PAYMENT_STATUS_NAMES)
            ),
            "ledger_row": table.column("ledger_row").to_numpy().astype(np.int64),
            "processor_row": table.column("processor_row").to_numpy().astype(np.int64),
            "charged_amountMinor": table.column("charged_amountMinor").to_numpy().astype(np.int64),
            "charged_currency": pd.Categorical(table.column("charged_currency").to_pylist()),
            "pricing_amountMinor": pd.array(pricing_minor.to_pylist(), dtype="Int64"),
            "pricing_currency": pd.Series(
                pa.array([None if c is None else codes[int(c)] for c in table.column("_pcur").to_pylist()]),
                dtype=pd.ArrowDtype(pa.string()),
            ),
        },
        columns=list(MATCHED_COLUMNS),
    )
    return frame
