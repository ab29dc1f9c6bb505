"""The reconciliation engine: ledger vs processor, keyed by ``merchantReferenceId``, relational.

``reconcile`` reads as its steps, each a relational transformation written once as SQL text in
DuckDB's dialect and run by the backend (DuckDB by default; Spark on request, as sqlglot writes
it in Spark's; ``backends/``), each step a module here (what they pass between them:
``model.py``):

1. ``sides.checked_rows``: each side read and validated in the backend (``inputs/``);
   ``sides.align_period`` places a period's boundary payments;
2. ``pairing.pair_keys``: one row per key of each side (how many rows, the first row's values),
   the two sides joined on the key;
3. ``classify.classify``: the categories of each key, and only the keys with a flag kept;
   ``classify.settle_repeats`` classifies the few keys of more than one row again;
   ``rates.resolve_fx`` decides the keys in two currencies at reference rates;
   ``classify.informational_apart`` leaves a key with an exception out of the informational
   categories;
4. ``exceptions.exception_rows``: one row per exception, with its detail (``details.py``), in
   report order; ``held.held_exceptions``: those the result holds;
5. ``summary.summarise``: the row accounting (``count_rows``), the totals, the summary.

Steps 1 to 3 are ``_flagged``, which leaves a ``model.Run`` that steps 4 and 5 (``_listed``) read.

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
import logging
from datetime import date, datetime, timedelta
from pathlib import Path

from toolkit.reconcile._engine.classify import classify, flag_stats, informational_apart, settle_repeats
from toolkit.reconcile._engine.exceptions import duplicate_rows, exception_rows, rejected_rows
from toolkit.reconcile._engine.held import held_exceptions
from toolkit.reconcile._engine.model import EXCEPTION_FLAGS, SIDES, Rules, Run
from toolkit.reconcile._engine.pairing import pair_keys, repeated_rows, repeats
from toolkit.reconcile._engine.payouts import payout_totals
from toolkit.reconcile._engine.rates import FxDecisions, resolve_fx
from toolkit.reconcile._engine.sides import align_period, checked_rows, dated
from toolkit.reconcile._engine.summary import (
    price_moves,
    side_aggregates,
    summarise,
)
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.fx import Rates, load_rates
from toolkit.reconcile.inputs import (
    PRICING_COLUMNS,
    LoadedInput,
)
from toolkit.reconcile.result import (
    ReconciliationResult,
)
from toolkit.reconcile.schema import (
    HELD_ROWS,
    INFO_CATEGORIES,
    PREVIEW_ROWS,
)
from toolkit.reconcile.timing import DEFAULT_GRACE, parse_grace, timing
from toolkit.reconcile.tolerance import Tolerance

__all__ = ["reconcile"]


#: Each step is logged at INFO as it starts: on a terminal the command shows them once a run takes
#: more than a couple of seconds (``toolkit.cli.progress``); a notebook or a log shows nothing.
logger = logging.getLogger("toolkit.reconcile")


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
    rules, ledger, processor = _rules(ledger, processor, amount_tolerance, as_of, grace, fx_rates)
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
        sizes = [side.described.size for side in (ledger, processor)]
        engine.fit(None if None in sizes else sum(size or 0 for size in sizes))
        # The order of each side's slashed dates, decided from its rows, before any row is checked.
        ledger, processor = (side.with_dates_read(engine) for side in (ledger, processor))
        processor = processor.with_key_of(engine, ledger)  # of an export's metadata columns
        run, fx = _flagged(engine, rules, (ledger, processor))
        result = _listed(run, held_rows, preview_rows)
        clock = rules.timing
        return dataclasses.replace(
            result,
            price_moves=price_moves(engine, run.flagged) if rules.priced else (),
            payouts=payout_totals(engine, run.sides[1]),
            date_formats=(ledger.described.date_format, processor.described.date_format),
            amount_tolerance=rules.tolerance,
            cutoff=None if clock is None else clock.as_of,
            grace=None if clock is None else clock.grace,
            fx=fx.frame,
            missing_rates=fx.missing,
        )


def _rules(
    ledger: LoadedInput,
    processor: LoadedInput,
    amount_tolerance: int | str | Tolerance,
    as_of: datetime | date | str | None,
    grace: timedelta | str | None,
    fx_rates: Rates | str | Path | None,
) -> tuple[Rules, LoadedInput, LoadedInput]:
    """The run's rules from its options, and both sides with the dates the rules read."""
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
    return rules, ledger, processor


def _flagged(
    engine: Backend, rules: Rules, inputs: tuple[LoadedInput, LoadedInput]
) -> tuple[Run, FxDecisions]:
    """Steps 1 to 3: both sides read and checked, their keys paired and classified, a key on more
    than one row settled, the keys in two currencies decided at their rates; the flagged keys kept."""
    sides = []
    for name, loaded in zip(SIDES, inputs, strict=True):
        logger.info("reading and checking the %s (%s)", name, loaded.source)
        sides.append(checked_rows(engine, name, loaded))
    led, pro = sides
    logger.info("pairing and classifying the keys")
    pro = align_period(engine, led, pro, rules.grace)
    keys = pair_keys(led, pro, rules)
    classified = engine.keep(classify(keys, rules), stem="classified")
    repeated = {
        side.name: repeated_rows(engine, side, classified) for side in repeats(engine, classified, (led, pro))
    }
    if repeated:
        classified = engine.keep(settle_repeats(engine, classified, repeated, rules), stem="settled")
    resolved, fx = resolve_fx(engine, classified, rules)
    flagged = engine.keep(informational_apart(resolved), stem="flagged")
    return Run(engine, rules, (led, pro), keys, flagged, repeated, flag_stats(engine, flagged)), fx


def _listed(run: Run, held_rows: int, preview_rows: int) -> ReconciliationResult:
    """Steps 4 and 5: the exception rows listed and held, the rows accounted for, the totals."""
    engine, sides = run.engine, run.sides
    logger.info("listing the exceptions")
    duplicates = {
        side.name: duplicate_rows(engine, side, run.repeated[side.name], run.flagged)
        for side in sides
        if run.stats[f"duplicate_in_{side.name}"].sum()
    }
    listed = exception_rows(run, duplicates)
    flags = run.stats[[*EXCEPTION_FLAGS, *INFO_CATEGORIES]]
    logger.info("adding up the rows and the totals")
    side_sums = side_aggregates(engine, sides)
    rejected = {side.name: rejected_rows(engine, side, side_sums[side.name]) for side in sides}
    exceptions = held_exceptions(
        engine,
        listed,
        listed_rows=int(flags.sum().sum()),
        rejected_rows=sum(len(frame) for frame in rejected.values()),
        held_rows=held_rows,
        preview_rows=preview_rows,
    )
    return summarise(run, exceptions, rejected, side_sums)
