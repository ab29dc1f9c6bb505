"""The reconciliation engine: ledger vs processor, keyed by ``merchantReferenceId``, relational.

``reconcile`` reads as its steps, each a relational transformation written once in Ibis and run
by the backend (DuckDB by default, Spark on request; ``backends.py``):

1. ``checked_rows``: each side read and validated in the backend (``inputs.py``);
2. ``pair_keys``: one row per key of each side (how many rows, the first row's values), the two
   sides joined on the key;
3. ``classify``: the categories of each key, and only the keys with an exception kept;
4. ``exception_rows``: one row per exception, with its detail, in report order;
5. ``count_rows`` and ``summarise``: the row accounting, the totals, the summary.

Only what is small by nature leaves the backend (exceptions, totals, counts); matched keys are
counted there and fetched only when asked for (``ReconciliationResult.matched``).

Rules where the issue leaves a choice:

* A key present on both sides is compared on its first row of each side; further rows of the same
  key are reported once, as ``duplicate_in_ledger`` / ``duplicate_in_processor`` (one exception per
  key, every row number in ``detail``).
* Amounts are compared only in the same currency: a currency mismatch is reported as
  ``currency_mismatch`` alone, since amounts in two currencies cannot be compared.
* When the processor says ``unknown`` the key is ``unknown_outcome`` instead of ``status_mismatch``
  (the processor's status is not a fact yet); a processor-only key that is ``unknown`` is both
  ``missing_in_ledger`` and ``unknown_outcome``.
* The amount of an exception (in the summary) is the ledger amount when the ledger has the key,
  else the processor amount; for ``amount_mismatch`` it is the absolute difference.
* Each input row is counted once: ``matched`` when its key has no exception, else ``exception``,
  or ``rejected`` when it could not be read, or ``outside`` when a period left it out.
* ``totals`` adds up every usable row of each side per currency (duplicates included, rejected
  rows and rows outside the period not), so ledger minus processor is the books' net difference.
"""

from __future__ import annotations

from dataclasses import dataclass
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

from toolkit.models import PAYMENT_STATUS_NAMES
from toolkit.money import from_minor
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.inputs import (
    REJECTED_COLUMNS,
    LoadedInput,
    currency_codes,
    currency_table,
    minor_text,
    rejected_frame,
)
from toolkit.reconcile.result import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    MATCHED_COLUMNS,
    PAYMENT_CATEGORIES,
    SUBSCRIPTION_CATEGORIES,
    SUMMARY_COLUMNS,
    LazyRows,
    ReconciliationResult,
    RowCounts,
    SideTotal,
    _decimals,
    _sort_summary,
    rejected_exceptions,
)
from toolkit.reconcile.sources import source_of
from toolkit.reconcile.tolerance import Tolerance

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
#: Exact sums: int64 amounts widened before they are added (100M rows of 18 digits overflow).
_SUM_TYPE = dt.Decimal(38, 0)
#: The columns of one side's row kept for the steps after the check: the key, and numbers only
#: (currency and status as codes, ``_cur`` and ``_st``; the file from ``_ord``), so that every
#: step after it moves fixed-size values. Why a row is rejected is found again for the few
#: rejected rows only, from their text as written.
_SLIM = (
    "_key",
    "_minor",
    "_cur",
    "_st",
    "_ord",
    "source_row",
    "_rejected",
    "_outside",
)


#: The ``_st`` code of ``unknown``, the status that is not a fact yet.
_UNKNOWN = PAYMENT_STATUS_NAMES.index("unknown")
#: A currency's and a status's codes travel as one number, ``_cur * 8 + _st``.
_STATUS_CODES = 8
assert len(PAYMENT_STATUS_NAMES) <= _STATUS_CODES


@ibis.udf.agg.builtin(name="min_by")  # type: ignore[untyped-decorator]
def _first_by(value: int, order: int) -> int:  # type: ignore[empty-body]
    """The ``value`` of the row with the smallest ``order``: ``arg_min`` on DuckDB, ``min_by`` on
    Spark; a fixed-size state, where Ibis's ``argmin`` is an ordered ``FIRST`` on DuckDB."""


@dataclass(frozen=True)
class _Side:
    """One side in the backend: its checked rows and its usable rows, and where they came from."""

    name: str
    loaded: LoadedInput
    written: ir.Table  # the rows as written (``LoadedInput.read``)
    rows: ir.Table  # every row, slim (``_SLIM``), kept in the backend
    usable: ir.Table


def reconcile(
    ledger: LoadedInput,
    processor: LoadedInput,
    *,
    amount_tolerance: int = 0,
    backend: str | Backend = "duckdb",
    memory_limit: str | int | None = None,
    spill_dir: str | Path | None = None,
) -> ReconciliationResult:
    """Reconcile the ledger against the processor; see the module docstring for the rules.

    ``backend`` is ``duckdb`` (default; ``memory_limit`` such as ``"6GB"`` and ``spill_dir`` set
    how far it goes before spilling, and where) or ``pyspark``, or a ``Backend`` from
    ``backends.connect``.
    """
    if amount_tolerance < 0:
        raise ValueError("amount_tolerance must be >= 0 (minor units)")
    engine = (
        backend
        if isinstance(backend, Backend)
        else connect(backend, memory_limit=memory_limit, spill_dir=spill_dir)
    )
    with engine.failures():
        led, pro = (
            checked_rows(engine, name, loaded)
            for name, loaded in zip(_SIDES, (ledger, processor), strict=True)
        )
        keys = pair_keys(led, pro)
        flagged = engine.keep(classify(keys, amount_tolerance))
        stats = flag_stats(engine, flagged)
        duplicates = {
            side.name: duplicate_rows(engine, side, flagged)
            for side in (led, pro)
            if stats[f"duplicate_in_{side.name}"].sum()
        }
        exceptions = exception_rows(engine, (led, pro), flagged, duplicates, stats)
        side_sums = side_aggregates(engine, (led, pro))
        rejected = {side.name: rejected_rows(engine, side, side_sums[side.name]) for side in (led, pro)}
        counts = count_rows((led, pro), stats, side_sums, rejected)
        matched = matched_summary(engine, led, stats, duplicates.get("ledger"), side_sums["ledger"])
        return summarise(
            engine, keys, (led, pro), exceptions, rejected, side_sums, matched, counts, amount_tolerance
        )


# ---------------------------------------------------------------------------------------------
# 1. Each side, checked


def checked_rows(engine: Backend, name: str, loaded: LoadedInput) -> _Side:
    """Read and check one side in the backend; keep the columns the next steps need."""
    written = loaded.read(engine)
    rows = engine.keep(loaded.check(written).select(*_SLIM))
    usable = rows.filter(~rows._rejected & ~rows._outside)
    return _Side(name, loaded, written, rows, usable)


# ---------------------------------------------------------------------------------------------
# 2. One row per key, both sides side by side


def _per_key(side: _Side) -> ir.Table:
    """How many usable rows each key has, and the values of its first row (file order): one
    aggregate of fixed-size states, which the backend can spill."""
    rows = side.usable
    p = side.name[0]  # "l" or "p"
    codes = rows._cur.cast("int64") * _STATUS_CODES + rows._st.cast("int64")
    keys = rows.group_by(_key=rows._key).aggregate(
        _n=rows.count(),
        _first=rows._ord.min(),
        _minor=_first_by(rows._minor, rows._ord),
        _codes=_first_by(codes, rows._ord),
    )
    return keys.select(
        _key=keys._key,
        **{
            f"{p}_n": keys._n,
            f"{p}_ord": keys._first,
            f"{p}_minor": keys._minor,
            f"{p}_cur": keys._codes // _STATUS_CODES,  # exact: small integers
            f"{p}_st": keys._codes % _STATUS_CODES,
        },
    )


def pair_keys(led: _Side, pro: _Side) -> ir.Table:
    """Every key of either side, with both sides' counts and first rows (nulls where absent)."""
    left = _per_key(led).rename(l_key="_key")
    right = _per_key(pro).rename(p_key="_key")
    joined = left.outer_join(right, left.l_key == right.p_key)
    return joined.mutate(key=joined.l_key.fill_null(joined.p_key)).drop("l_key", "p_key")


# ---------------------------------------------------------------------------------------------
# 3. Categories of each key


def classify(keys: ir.Table, amount_tolerance: int) -> ir.Table:
    """A flag per payment category, and only the keys with at least one flag."""
    has_l, has_p = keys.l_n.notnull(), keys.p_n.notnull()
    both = has_l & has_p
    same_currency = keys.l_cur == keys.p_cur
    difference = keys.l_minor - keys.p_minor
    unknown = keys.p_st == _UNKNOWN
    flags = {
        "missing_in_processor": has_l & ~has_p,
        "missing_in_ledger": has_p & ~has_l,
        "amount_mismatch": both
        & same_currency
        & ((difference < 0).ifelse(-difference, difference) > amount_tolerance),
        "currency_mismatch": both & ~same_currency,
        "status_mismatch": both & (keys.l_st != keys.p_st) & ~unknown,
        "duplicate_in_processor": has_p & (keys.p_n > 1),
        "duplicate_in_ledger": has_l & (keys.l_n > 1),
        "unknown_outcome": has_p & unknown,
    }
    flags = {name: flag.fill_null(False) for name, flag in flags.items()}
    any_flag = ibis.literal(False)
    for flag in flags.values():
        any_flag |= flag
    return keys.mutate(**flags, l_minus_p=difference).filter(any_flag)


def flag_stats(engine: Backend, flagged: ir.Table) -> pd.DataFrame:
    """Per ledger currency of the flagged keys: how many keys of each category, how many rows of
    each side they hold, and the keys with one ledger row (count and exact sum)."""
    single = flagged.l_n == 1
    table = flagged.group_by(currency=flagged.l_cur).aggregate(
        **{name: flagged[name].ifelse(1, 0).sum() for name in PAYMENT_CATEGORIES if name != "rejected_row"},
        l_rows=flagged.l_n.fill_null(0).sum(),
        p_rows=flagged.p_n.fill_null(0).sum(),
        single_n=single.ifelse(1, 0).sum(),
        single_total=single.ifelse(flagged.l_minor, 0).cast(_SUM_TYPE).sum(),
    )
    return _named_currencies(engine.arrow(table).to_pandas())


def _named_currencies(frame: pd.DataFrame) -> pd.DataFrame:
    """A small frame's ``currency`` codes as ISO 4217 names (None where there was no code)."""
    codes = currency_codes()
    frame["currency"] = [None if pd.isna(c) else codes[int(c)] for c in frame["currency"]]
    return frame


def _named(table: ir.Table, p: str, side: _Side, *, row: bool = True) -> ir.Table:
    """``table`` with what people read of the row ``p`` (``l``, ``p``, ``l2``, ``p2``): the
    names of its codes (``{p}_currency``, ``{p}_digits``, ``{p}_status``), its file
    (``{p}_source``) and, with ``row``, its row number there (``{p}_row``, found by ``_ord``)."""
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
    if not row:
        return named
    rows = side.rows.select(**{f"_{p}_row_ord": side.rows._ord, f"{p}_row": side.rows.source_row})
    return named.left_join(rows, named[f"{p}_ord"] == rows[f"_{p}_row_ord"]).drop(f"_{p}_row_ord")


# ---------------------------------------------------------------------------------------------
# 4. Exceptions


def duplicate_rows(engine: Backend, side: _Side, flagged: ir.Table) -> ir.Table:
    """Per duplicated key of one side: its rows (``_rows_text``, in file order), how many, and the
    second row's values (the row that should not be there), as ``l2_*`` or ``p2_*``."""
    p = side.name[0]
    keys = flagged.filter(flagged[f"duplicate_in_{side.name}"]).select(_dup_key=flagged.key)
    rows = side.usable.join(keys, side.usable._key == keys._dup_key)
    rows = rows.mutate(_rank=ibis.row_number().over(group_by=rows._key, order_by=rows._ord))
    second = rows._rank == 1
    grouped = rows.group_by(_dup_key=rows._key).aggregate(
        _rows=rows.source_row.collect(),
        _count=rows.count(),
        **{
            f"{p}2_{name}": rows[column].max(where=second)
            for name, column in (
                ("minor", "_minor"),
                ("cur", "_cur"),
                ("st", "_st"),
                ("row", "source_row"),
                ("ord", "_ord"),
            )
        },
    )
    listed = grouped._rows.sort().map(lambda r: r.cast("string")).join(", ")
    return engine.keep(grouped.mutate(_rows_text=listed).drop("_rows"))


def exception_rows(
    engine: Backend,
    sides: tuple[_Side, _Side],
    flagged: ir.Table,
    duplicates: dict[str, ir.Table],
    stats: pd.DataFrame,
) -> pd.DataFrame:
    """One row per exception, ``EXCEPTION_COLUMNS`` plus the summary's ``_cur`` and ``_amount``,
    in report order (category, the ledger's before the processor's, row)."""
    led, pro = sides
    f = engine.keep(_named(_named(flagged, "l", led), "p", pro))  # a few rows; read once per part
    parts: list[ir.Table] = []

    def part(
        category: str,
        table: ir.Table,
        on_processor: bool,
        detail: ir.StringValue,
        amount: ir.IntegerValue,
        **sides: ir.Value,
    ) -> None:
        if not stats[category].sum():  # a smaller query: only the categories found
            return
        columns = {
            "merchantReferenceId": table.key,
            "category": ibis.literal(category),
            "_rank": ibis.literal(CATEGORIES.index(category)),
            "_on_processor": ibis.literal(on_processor),
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
        columns["detail"] = detail
        columns["_amount"] = amount
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
                    "_amount": "int64",
                }
            )
        )

    only_l = f.filter(f.missing_in_processor)
    part("missing_in_processor", only_l, False, ibis.literal("not found at the processor"), only_l.l_minor)
    only_p = f.filter(f.missing_in_ledger)
    part("missing_in_ledger", only_p, True, ibis.literal("not found in the ledger"), only_p.p_minor)
    amount = f.filter(f.amount_mismatch)
    difference = amount.l_minus_p
    part(
        "amount_mismatch",
        amount,
        False,
        "ledger "
        + minor_text(amount.l_minor, amount.l_digits)
        + " "
        + amount.l_currency
        + ", processor "
        + minor_text(amount.p_minor, amount.l_digits)
        + " "
        + amount.l_currency
        + " (difference "
        + minor_text(difference, amount.l_digits)
        + "); processor row "
        + amount.p_row.cast("string"),
        (difference < 0).ifelse(-difference, difference),
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
    for side in ("processor", "ledger"):
        p = side[0]
        if side not in duplicates:
            continue
        dups = duplicates[side]
        keyed = f.filter(f[f"duplicate_in_{side}"])
        joined = _named(
            keyed.join(dups, keyed.key == dups._dup_key), f"{p}2", sides[side == "processor"], row=False
        )
        # The row shown is the second occurrence: the one that should not be there.
        own = {
            f"{p}_{name}": joined[f"{p}2_{name}"]
            for name in ("minor", "currency", "digits", "status", "row", "source")
        }
        other_minor = joined["l_minor" if side == "processor" else "p_minor"]
        own_minor = joined[f"{p}2_minor"]
        led_minor = own_minor if side == "ledger" else other_minor
        part(
            f"duplicate_in_{side}",
            joined,
            side == "processor",
            "appears "
            + joined._count.cast("string")
            + f" times in the {side} (rows "
            + joined._rows_text
            + ")",
            led_minor.isnull().ifelse(own_minor, led_minor) if side == "processor" else own_minor,
            **own,
        )
    unknown = f.filter(f.unknown_outcome)
    part(
        "unknown_outcome",
        unknown,
        True,
        ibis.literal("the processor does not know the outcome of this payment"),
        unknown.l_minor.isnull().ifelse(unknown.p_minor, unknown.l_minor),
    )
    if not parts:
        return _exception_frame(None)
    union = parts[0]
    for more in parts[1:]:
        union = union.union(more)
    return _exception_frame(engine.arrow(union))


def _integers(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as int64 (0 where null) and where it is present: never through float."""
    values = pc.fill_null(column.cast(pa.int64()), 0).to_numpy()
    return values.astype(np.int64), column.is_valid().to_numpy(zero_copy_only=False)


def _texts(column: pa.ChunkedArray) -> pd.Series:
    return pd.Series(column.to_pylist(), dtype=object)  # a Series: pandas 3 infers no str dtype from it


def _exception_frame(table: pa.Table | None) -> pd.DataFrame:
    """The engine's exception rows as the result's frame: exact ``Decimal`` amounts, in order,
    plus ``_cur`` and ``_amount`` (the currency and minor units the summary adds up)."""
    if table is None or not table.num_rows:
        frame = pd.DataFrame({name: np.empty(0, dtype=object) for name in EXCEPTION_COLUMNS})
        frame["source_row"] = np.empty(0, dtype=np.int64)
        frame["age_days"] = pd.array([], dtype="Int64")
        return frame.assign(_cur=np.empty(0, dtype=object), _amount=np.empty(0, dtype=np.int64))
    on_processor = table.column("_on_processor").to_numpy().astype(bool)
    l_row, _ = _integers(table.column("l_row"))
    p_row, _ = _integers(table.column("p_row"))
    row = np.where(on_processor, p_row, l_row)
    rank, _ = _integers(table.column("_rank"))
    order = np.lexsort((row, on_processor, rank))
    table = table.take(pa.array(order))
    on_processor, row = on_processor[order], row[order]
    minors, digits, present = [], [], []
    for p in ("l", "p"):
        minor, has = _integers(table.column(f"{p}_minor"))
        places, _ = _integers(table.column(f"{p}_digits"))
        minors.append(minor)
        digits.append(np.where(has, places, -1))
        present.append(has)
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
            "severity": np.full(table.num_rows, "exception", dtype=object),
            "age_days": pd.array([None] * table.num_rows, dtype="Int64"),
            "_cur": np.where(
                present[0], _texts(table.column("l_currency")), _texts(table.column("p_currency"))
            ),
            "_amount": amount,
        }
    )


def rejected_rows(engine: Backend, side: _Side, sums: pd.DataFrame) -> pd.DataFrame:
    """The rows of one side that cannot be used, with their reasons (few, by nature): only those
    rows are read and checked again, with the columns the reasons quote."""
    if not int(sums["rejected"].sum()):
        return pd.DataFrame({name: [] for name in REJECTED_COLUMNS}).astype({"source_row": "int64"})
    bad = side.rows.filter(side.rows._rejected).select(_bad_ord=side.rows._ord)
    written = side.written
    return rejected_frame(
        side.loaded, engine, side.loaded.check(written.semi_join(bad, written._ord == bad._bad_ord))
    )


# ---------------------------------------------------------------------------------------------
# 5. Counts, totals, summary


def side_aggregates(engine: Backend, sides: tuple[_Side, _Side]) -> dict[str, pd.DataFrame]:
    """Per side and currency: rows, usable rows and their exact sum, rejected, outside."""
    parts = []
    for side in sides:
        rows = side.rows
        usable = ~rows._rejected & ~rows._outside
        parts.append(
            rows.group_by(currency=rows._cur)
            .aggregate(
                rows=rows.count(),
                usable=usable.ifelse(1, 0).sum(),
                total=usable.ifelse(rows._minor, 0).cast(_SUM_TYPE).sum(),
                rejected=rows._rejected.ifelse(1, 0).sum(),
                outside=rows._outside.ifelse(1, 0).sum(),
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
        flagged_rows = int(stats[f"{side.name[0]}_rows"].sum())
        counts.append(
            RowCounts(
                side=side.name,
                source=side.loaded.source,
                rows=int(sums["rows"].sum()),
                matched=int(sums["usable"].sum()) - flagged_rows,
                exceptions=flagged_rows,
                rejected=len(rejected[side.name]),
                outside=int(sums["outside"].sum()),
            )
        )
    return counts[0], counts[1]


def matched_summary(
    engine: Backend,
    led: _Side,
    stats: pd.DataFrame,
    duplicates: ir.Table | None,
    sums: pd.DataFrame,
) -> list[tuple[str, str, int, Decimal | None]]:
    """Matched keys per currency, without another pass over every key: a matched key has one
    ledger row, so the matched rows are the usable ledger rows minus the rows of flagged keys
    (the one row of each key that has one, every row of a key duplicated in the ledger)."""
    less: dict[str, tuple[int, int]] = {}
    for row in _records(stats):
        if isinstance(row["currency"], str) and row["single_n"]:
            less[row["currency"]] = (int(row["single_n"]), int(row["single_total"]))
    if duplicates is not None:
        rows = led.usable
        keys = duplicates.select("_dup_key")
        rows = rows.join(keys, rows._key == keys._dup_key)
        repeated = _named_currencies(
            engine.arrow(
                rows.group_by(currency=rows._cur).aggregate(
                    n=rows.count(), total=rows._minor.cast(_SUM_TYPE).sum()
                )
            ).to_pandas()
        )
        for currency, n, total in zip(
            *(repeated[c].tolist() for c in ("currency", "n", "total")), strict=True
        ):
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
    sides: tuple[_Side, _Side],
    exceptions: pd.DataFrame,
    rejected: dict[str, pd.DataFrame],
    side_sums: dict[str, pd.DataFrame],
    matched: list[tuple[str, str, int, Decimal | None]],
    counts: tuple[RowCounts, RowCounts],
    amount_tolerance: int,
) -> ReconciliationResult:
    """The result: exceptions with the rejected rows after them, the summary, totals, counts."""
    led, pro = sides
    rejected_parts = [rejected_exceptions(rejected[s.name], s.name, s.loaded.source) for s in sides]
    summary_rows = matched + _exception_summary(exceptions)
    rejected_count = sum(len(frame) for frame in rejected.values())
    if rejected_count:
        summary_rows.append(("rejected_row", "", rejected_count, None))
    summary = _sort_summary(pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS)))
    frames = [exceptions[list(EXCEPTION_COLUMNS)], *(exc for exc, _ in rejected_parts if len(exc))]
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()
    table["category"] = pd.Categorical(table["category"].astype(str), categories=list(CATEGORIES))
    totals = tuple(
        SideTotal(
            side.name,
            str(row["currency"]),
            int(row["usable"]),
            from_minor(int(row["total"]), str(row["currency"])),
        )
        for side in sides
        for row in _records(side_sums[side.name].sort_values("currency"))
        if row["usable"]
    )
    return ReconciliationResult(
        summary=summary,
        exceptions=table.reset_index(drop=True),
        matched_rows=LazyRows(
            counts[0].matched, lambda: _matched_frame(engine, matched_keys(keys, sides, amount_tolerance))
        ),
        rejected=pd.concat([side for _, side in rejected_parts], ignore_index=True),
        counts=counts,
        amount_tolerance=Tolerance.of(amount_tolerance),
        sources=(led.loaded.source, pro.loaded.source),
        totals=totals,
    )


def matched_keys(keys: ir.Table, sides: tuple[_Side, _Side], amount_tolerance: int) -> ir.Table:
    """The keys on both sides without an exception (``MATCHED_COLUMNS``), in ledger order."""
    flagged = classify(keys, amount_tolerance).select(_flagged_key=ibis._.key)
    both = keys.filter(keys.l_n.notnull() & keys.p_n.notnull())
    matched = both.anti_join(flagged, both.key == flagged._flagged_key)
    matched = _named(_named(matched, "l", sides[0]), "p", sides[1])
    return (
        matched.select(
            merchantReferenceId=matched.key,
            amountMinor=matched.l_minor,
            currency=matched.l_currency,
            status=matched.l_status,
            ledger_row=matched.l_row,
            processor_row=matched.p_row,
            _ord=matched.l_ord,
        )
        .order_by("_ord")
        .drop("_ord")
    )


def _matched_frame(engine: Backend, matched: ir.Table) -> pd.DataFrame:
    table = engine.arrow(matched)
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
        },
        columns=list(MATCHED_COLUMNS),
    )
    return frame


def _exception_summary(exceptions: pd.DataFrame) -> list[tuple[str, str, int, Decimal | None]]:
    """Count and exact sum of the exceptions per category and currency."""
    if exceptions.empty:
        return []
    grouped = exceptions.groupby(["category", "_cur"], observed=True, sort=False)["_amount"]
    rows: list[tuple[str, str, int, Decimal | None]] = []
    for (category, currency), values in grouped:
        total = sum(int(v) for v in values.tolist())
        rows.append((str(category), str(currency), len(values), from_minor(total, str(currency))))
    return rows
