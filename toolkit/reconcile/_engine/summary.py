"""Step 5: the row accounting, the totals of each side, the matched keys and the summary."""

from __future__ import annotations

from decimal import Decimal

import ibis
import ibis.expr.types as ir
import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.money import from_minor
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile._engine.held import Held
from toolkit.reconcile._engine.model import (
    FAILURE,
    PAIRED,
    SUM_TYPE,
    Side,
    is_usable,
    key_outcome,
    named_currencies,
    with_names,
)
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import (
    currency_codes,
)
from toolkit.reconcile.result import (
    LazyRows,
    ReconciliationResult,
    RowCounts,
    SideTotal,
    SpilledRows,
    _sort_summary,
    frame_records,
    rejected_exceptions,
)
from toolkit.reconcile.schema import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    MATCHED_COLUMNS,
    SUMMARY_COLUMNS,
)


def side_aggregates(engine: Backend, sides: tuple[Side, Side]) -> dict[str, pd.DataFrame]:
    """Per side and currency: rows, usable rows and their exact sum, those of them that are not a
    failed attempt (``moved``: money taken or that may be) and their sum, rejected, outside the
    period, after the cut-off."""
    parts = []
    for side in sides:
        rows = side.rows
        usable = is_usable(rows)
        parts.append(
            rows.group_by(currency=rows._cur)
            .aggregate(
                rows=rows.count(),
                usable=usable.ifelse(1, 0).sum(),
                total=usable.ifelse(rows._minor, 0).cast(SUM_TYPE).sum(),
                moved=(usable & (rows._st != FAILURE)).ifelse(1, 0).sum(),
                moved_total=(usable & (rows._st != FAILURE)).ifelse(rows._minor, 0).cast(SUM_TYPE).sum(),
                rejected=rows._rejected.ifelse(1, 0).sum(),
                outside=rows._outside.ifelse(1, 0).sum(),
                after=rows._after.ifelse(1, 0).sum(),
            )
            .mutate(side=ibis.literal(side.name))
        )
    frame = named_currencies(engine.arrow(parts[0].union(parts[1])).to_pandas())
    return {side.name: frame[frame["side"] == side.name].reset_index(drop=True) for side in sides}


def count_rows(
    sides: tuple[Side, Side],
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
    for row in frame_records(stats):
        if isinstance(row["currency"], str) and row["single_n"]:
            less[row["currency"]] = (int(row["single_n"]), int(row["single_total"]))
    if repeated is not None:
        exception, transit = key_outcome(flagged)
        outcome = flagged.select(_fk=flagged.key, _lord=flagged.l_ord, _out=exception | transit)
        joined = repeated.join(outcome, repeated._key == outcome._fk)
        apart = joined.filter(joined._out | (joined._ord != joined._lord))
        totals = named_currencies(
            engine.arrow(
                apart.group_by(currency=apart._cur).aggregate(
                    n=apart.count(), total=apart._minor.cast(SUM_TYPE).sum()
                )
            ).to_pandas()
        )
        for currency, n, total in zip(*(totals[c].tolist() for c in ("currency", "n", "total")), strict=True):
            had_n, had_total = less.get(currency, (0, 0))
            less[currency] = (had_n + int(n), had_total + int(total))
    out: list[tuple[str, str, int, Decimal | None]] = []
    for row in frame_records(sums.sort_values("currency")):
        currency = str(row["currency"])
        minus_n, minus_total = less.get(currency, (0, 0))
        n, total = int(row["usable"]) - minus_n, int(row["total"]) - minus_total
        if n:
            out.append(("matched", currency, n, from_minor(total, currency)))
    return out


def summarise(
    engine: Backend,
    keys: ir.Table,
    flagged: ir.Table,
    sides: tuple[Side, Side],
    exceptions: Held,
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
        for row in frame_records(side_sums[side.name].sort_values("currency"))
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
    exception, transit = key_outcome(flagged)
    moved = flagged.filter(flagged.price_match & ~exception & ~transit & (flagged.p_st != FAILURE))
    parts = [
        moved.group_by(currency=moved[cur].cast("int64"))
        .aggregate(rows=moved.count(), total=moved[minor].cast(SUM_TYPE).sum())
        .mutate(side=ibis.literal(side))
        for side, cur, minor in (("charged", "p_cur", "p_minor"), ("priced", "p_pcur", "p_pminor"))
    ]
    frame = named_currencies(engine.arrow(parts[0].union(parts[1])).to_pandas())
    return tuple(
        SideTotal(side, currency, int(rows), from_minor(int(total), currency))
        for side, currency, rows, total in sorted(
            zip(*(frame[c].tolist() for c in ("side", "currency", "rows", "total")), strict=True)
        )
    )


def matched_keys(keys: ir.Table, flagged: ir.Table, sides: tuple[Side, Side]) -> ir.Table:
    """The keys on both sides that are neither an exception nor in transit (``MATCHED_COLUMNS``),
    in ledger order."""
    exception, transit = key_outcome(flagged)
    columns = ["key", *(f"{p}_{name}" for p in "lp" for name in PAIRED)]
    both = keys.filter(keys.l_n.notnull() & keys.p_n.notnull())
    unflagged = both.anti_join(flagged, both.key == flagged.key).select(*columns)
    # A flagged key matched (within tolerance, at a rate, a repeat) as ``settle_repeats`` compared it.
    kept = flagged.filter(~exception & ~transit & flagged.l_n.notnull() & flagged.p_n.notnull())
    matched = unflagged.union(kept.select(*columns).cast(dict(unflagged.schema().items())))
    matched = with_names(with_names(matched, "l", sides[0]), "p", sides[1])
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
