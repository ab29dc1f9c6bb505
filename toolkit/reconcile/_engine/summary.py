"""Step 5: the row accounting, the totals of each side, the matched keys and the summary."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.money import from_minor
from toolkit.outputs import frame_records
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile._engine.held import Held
from toolkit.reconcile._engine.model import (
    APART_ROW,
    FAILURE,
    PAIRED,
    USABLE,
    Run,
    Side,
    count_if,
    exact_sum,
    key_outcome,
    named_currencies,
    select,
    with_names,
)
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.inputs import (
    currency_codes,
)
from toolkit.reconcile.movements import KINDS, shown_key
from toolkit.reconcile.result import (
    LazyRows,
    MovementTotal,
    ReconciliationResult,
    RowCounts,
    SideTotal,
    SpilledRows,
    _sort_summary,
    rejected_exceptions,
)
from toolkit.reconcile.schema import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    MATCHED_COLUMNS,
    SUMMARY_COLUMNS,
)


def side_aggregates(engine: Backend, sides: tuple[Side, Side]) -> dict[str, pd.DataFrame]:
    """Per side, currency and kind of movement (``kind``): rows, usable rows and their exact sum,
    those of them that are not a failed attempt (``moved``: money taken or that may be) and their
    sum, rejected, outside the period, after the cut-off, and the fees, payouts and adjustments
    (``apart``, and ``apart_total`` of those not failed). ``per_currency`` adds the kinds up."""
    moved = f"{USABLE} AND _st <> {FAILURE}"
    aggregates = (
        "COUNT(*) AS rows",
        f"{count_if(USABLE)} AS usable",
        f"{exact_sum(f'CASE WHEN {USABLE} THEN _minor ELSE 0 END')} AS total",
        f"{count_if(moved)} AS moved",
        f"{exact_sum(f'CASE WHEN {moved} THEN _minor ELSE 0 END')} AS moved_total",
        f"{count_if('_rejected')} AS rejected",
        f"{count_if('_outside')} AS outside",
        f"{count_if('_after')} AS after",
        f"{count_if(APART_ROW)} AS apart",
        f"{exact_sum(f'CASE WHEN {APART_ROW} AND _st <> {FAILURE} THEN _minor ELSE 0 END')} AS apart_total",
    )
    parts = [
        f"SELECT _cur AS currency, CAST(_kind AS BIGINT) AS kind, {', '.join(aggregates)}, "
        f"'{side.name}' AS side FROM ({side.rows}) GROUP BY _cur, _kind"
        for side in sides
    ]
    frame = named_currencies(engine.arrow(" UNION ALL ".join(parts)).to_pandas())
    return {side.name: frame[frame["side"] == side.name].reset_index(drop=True) for side in sides}


def per_currency(sums: pd.DataFrame) -> pd.DataFrame:
    """One side's ``side_aggregates`` added up over the kinds: a row per currency."""
    numbers = [c for c in sums.columns if c not in ("currency", "kind", "side")]
    if sums.empty:
        return sums.drop(columns="kind")
    return sums.groupby("currency", sort=True, dropna=False)[numbers].sum().reset_index()


def movement_totals(
    sides: tuple[Side, Side], side_sums: dict[str, pd.DataFrame]
) -> tuple[MovementTotal, ...]:
    """Each side's movements per kind and currency that are not a failed attempt (``moved`` and
    ``apart``: a kind is one or the other), in the order of ``KINDS``."""
    totals = []
    for side in sides:
        for row in frame_records(side_sums[side.name].sort_values(["kind", "currency"])):
            rows = int(row["moved"]) + int(row["apart"])
            if rows and isinstance(row["currency"], str):
                amount = int(row["moved_total"]) + int(row["apart_total"])
                currency = str(row["currency"])
                totals.append(
                    MovementTotal(
                        side.name, KINDS[int(row["kind"])], currency, rows, from_minor(amount, currency)
                    )
                )
    return tuple(totals)


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
                movements=int(sums["apart"].sum()),
            )
        )
    return counts[0], counts[1]


def matched_summary(run: Run, sums: pd.DataFrame) -> list[tuple[str, str, int, Decimal | None]]:
    """Matched keys per currency (the ledger row compared), without another pass over every key:
    the usable ledger rows minus the rows of flagged keys that are not matched (the one row of
    each key that has one) and the ledger's ``repeated_rows`` but the row compared of a matched
    key."""
    engine, flagged, repeated = run.engine, run.flagged, run.repeated.get("ledger")
    less: dict[str, tuple[int, int]] = {}
    for row in frame_records(run.stats):
        if isinstance(row["currency"], str) and (row["single_n"] or row["returned_extra"]):
            n = int(row["single_n"]) + int(row["returned_extra"])
            less[row["currency"]] = (n, int(row["single_total"] or 0))
    if repeated is not None:
        exception, transit = key_outcome()
        outcome = f"SELECT key AS _fk, l_ord AS _lord, ({exception} OR {transit}) AS _out FROM {flagged}"
        apart = (
            f"SELECT _cur AS currency, COUNT(*) AS n, {exact_sum('_minor')} AS total "
            f"FROM {repeated} AS _r JOIN ({outcome}) AS _o ON _r._key = _o._fk "
            "WHERE _out OR _ord <> _lord GROUP BY _cur"
        )
        totals = named_currencies(engine.arrow(apart).to_pandas())
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
    run: Run,
    exceptions: Held,
    rejected: dict[str, pd.DataFrame],
    side_sums: dict[str, pd.DataFrame],
) -> ReconciliationResult:
    """The result: exceptions with the rejected rows after them, the summary, totals, counts."""
    engine, sides = run.engine, run.sides
    led, pro = sides
    counts = count_rows(sides, run.stats, side_sums, rejected)
    matched = matched_summary(run, per_currency(side_sums["ledger"]))
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
        for row in frame_records(per_currency(side_sums[side.name]))
        if row["moved"]
    )
    return ReconciliationResult(
        summary=summary,
        exceptions=table.reset_index(drop=True),
        matched_rows=LazyRows(  # a key per ledger row compared (a repeat's other rows are matched rows too)
            sum(n for _, _, n, _ in matched),
            lambda: _matched_frame(engine, matched_keys(run)),
        ),
        rejected=pd.concat([side for _, side in rejected_parts], ignore_index=True),
        counts=counts,
        sources=(led.loaded.source, pro.loaded.source),
        totals=totals,
        movements=movement_totals(sides, side_sums),
        spilled=spilled,
    )


def price_moves(engine: Backend, flagged: Kept) -> tuple[SideTotal, ...]:
    """Per currency, what the payments matched through their price were charged (``charged``)
    and priced (``priced``): exact sums, for a net difference in the books' currencies (failed
    attempts apart, as in the totals)."""
    exception, transit = key_outcome()
    moved = f"price_match AND NOT {exception} AND NOT {transit} AND p_st <> {FAILURE}"
    parts = [
        f"SELECT CAST({cur} AS BIGINT) AS currency, COUNT(*) AS rows, {exact_sum(minor)} AS total, "
        f"'{side}' AS side FROM {flagged} WHERE {moved} GROUP BY {cur}"
        for side, cur, minor in (("charged", "p_cur", "p_minor"), ("priced", "p_pcur", "p_pminor"))
    ]
    frame = named_currencies(engine.arrow(" UNION ALL ".join(parts)).to_pandas())
    return tuple(
        SideTotal(side, currency, int(rows), from_minor(int(total), currency))
        for side, currency, rows, total in sorted(
            zip(*(frame[c].tolist() for c in ("side", "currency", "rows", "total")), strict=True)
        )
    )


def matched_keys(run: Run) -> str:
    """The keys on both sides that are neither an exception nor in transit (``MATCHED_COLUMNS``),
    in ledger order."""
    engine, keys, flagged, sides = run.engine, run.keys, run.flagged, run.sides
    exception, transit = key_outcome()
    columns = ["key", *(f"{p}_{name}" for p in "lp" for name in PAIRED)]
    both = "l_n IS NOT NULL AND p_n IS NOT NULL"
    unflagged = (
        f"SELECT {', '.join(f'_k.{c}' for c in columns)} FROM ({keys}) AS _k "
        f"LEFT JOIN (SELECT key AS _fk FROM {flagged}) AS _f ON _k.key = _f._fk "
        f"WHERE _f._fk IS NULL AND _k.l_n IS NOT NULL AND _k.p_n IS NOT NULL"
    )
    # A flagged key matched (within tolerance, at a rate, a repeat) as ``settle_repeats`` compared it.
    kept = select(columns, str(flagged), f"NOT {exception} AND NOT {transit} AND {both}")
    matched = f"{unflagged} UNION ALL {kept}"
    matched = with_names(engine, with_names(engine, matched, "l", sides[0]), "p", sides[1])
    return (
        f'SELECT {shown_key("key")} AS "merchantReferenceId", l_minor AS "amountMinor", '
        "l_currency AS currency, "
        'l_status AS status, l_row AS ledger_row, p_row AS processor_row, p_minor AS "charged_amountMinor", '
        'p_currency AS charged_currency, p_pminor AS "pricing_amountMinor", p_pcur AS _pcur '
        f"FROM ({matched}) ORDER BY l_ord"
    )


def _matched_frame(engine: Backend, matched: str) -> pd.DataFrame:
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
