"""What of the exception rows the result holds in memory (every one, or the first of each category,
the rest kept by the engine and read back in batches: ``SpilledRows``), as a frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.reconcile._engine.model import exact_sum
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.result import (
    SpilledRows,
    _decimals,
)
from toolkit.reconcile.schema import (
    CATEGORIES,
    EXCEPTION_COLUMNS,
    INFO_CATEGORIES,
)

#: Exception rows read back from the engine at a time (``SpilledRows``).
BATCH_ROWS = 50_000
#: The kept rows' ``_seq`` of a category starts at its place in ``CATEGORIES`` times this.
CATEGORY_SEQ = 1 << 40


@dataclass(frozen=True)
class Held:
    """The exception rows of ``exception_rows``: those the result holds (every one, or the first
    of each category), their count and exact sum per category and currency (``tally``), and the
    rows the engine keeps when they are too many to hold (None when all are held)."""

    frame: pd.DataFrame
    tally: list[tuple[str, str, int, int]]
    spilled: SpilledRows | None = None
    preview_rows: int = 0


def held_exceptions(
    engine: Backend,
    listed: Relation | None,
    *,
    listed_rows: int,
    rejected_rows: int,
    held_rows: int,
    preview_rows: int,
) -> Held:
    """The exception rows as the result holds them: every one when there are at most
    ``held_rows`` with the ``rejected_rows`` (held apart, always); else the first
    ``preview_rows`` of each category (an informational category's oldest), the engine keeping
    them all in report order (``_seq``) to read back in batches.

    ``listed_rows``, the rows the flag counts say ``listed`` has, picks the way: rows that fit
    are read once, in report order, and counted here; only more are kept in the engine."""
    if listed is None:
        return Held(_exception_frame(None), [])
    within = '_on_processor, _row, "merchantReferenceId"'  # a category's rows in report order
    order = f"_rank, {within}"
    held_rows -= rejected_rows
    if listed_rows <= held_rows:
        table = engine.arrow(f"SELECT * FROM ({listed}) ORDER BY {order}")
        return Held(_exception_frame(table), _tally(table))
    # Numbered within each category (``_rank``), from its own place in ``_seq``: a window over
    # one category at a time fits where one over every row did not (10.5M exception rows of 100M
    # payments ran out of a 6 GB limit).
    number = f"ROW_NUMBER() OVER (PARTITION BY _rank ORDER BY {within}) - 1"
    kept = engine.keep(f"SELECT *, _rank * {CATEGORY_SEQ} + {number} AS _seq FROM ({listed})", stem="spilled")
    return _kept_in_engine(engine, kept, held_rows, preview_rows)


def _kept_in_engine(engine: Backend, kept: Kept, held_rows: int, preview_rows: int) -> Held:
    """The exception rows ``kept`` in report order (``_seq``): every one when they fit after all,
    else the first ``preview_rows`` of each category, the rest read back in batches."""
    tally_table = engine.arrow(
        f"SELECT category, _cur, COUNT(*) AS n, {exact_sum('_amount')} AS total "
        f"FROM {kept} GROUP BY category, _cur"
    )
    tally = [
        (str(r["category"]), str(r["_cur"]), int(r["n"]), int(r["total"])) for r in tally_table.to_pylist()
    ]
    sizes: dict[str, int] = {}  # in report order, as ``_seq`` has them
    for category, _, n, _ in sorted(tally, key=lambda t: CATEGORIES.index(t[0])):
        sizes[category] = sizes.get(category, 0) + n
    if sum(sizes.values()) <= held_rows:
        return Held(_exception_frame(engine.arrow(f"SELECT * FROM {kept} ORDER BY _seq")), tally)
    # An informational category's first rows are its oldest (the next to become a break).
    info = ", ".join(f"'{name}'" for name in INFO_CATEGORIES)
    oldest = f"CASE WHEN category IN ({info}) THEN COALESCE(age_days, -1) ELSE 0 END"
    place = f"ROW_NUMBER() OVER (PARTITION BY category ORDER BY {oldest} DESC, _seq)"
    preview = (
        f"SELECT * FROM (SELECT *, {place} AS _place FROM {kept}) "
        f"WHERE _place <= {preview_rows} ORDER BY _seq"
    )
    frame = _exception_frame(engine.arrow(preview))
    return Held(frame, tally, SpilledRows(sizes, _batches(engine, kept, sizes)), preview_rows)


def _batches(
    engine: Backend, kept: Kept, sizes: dict[str, int]
) -> Callable[[str, int, int | None], Iterator[pd.DataFrame]]:
    """How ``SpilledRows`` reads rows of a category back from ``kept``, whose categories follow
    each other in report order with ``sizes`` rows each."""
    starts = {category: CATEGORIES.index(category) * CATEGORY_SEQ for category in sizes}

    def read(category: str, start: int, count: int | None) -> Iterator[pd.DataFrame]:
        """Rows ``start`` to ``start + count`` of ``category`` in report order, a batch at a
        time; each batch is a query of its own (``_seq`` in a range), so that nothing stays
        open on the connection between batches."""
        size = sizes.get(category, 0)
        end = size if count is None else min(size, start + count)
        for first in range(start, end, BATCH_ROWS):
            low = starts[category] + first
            high = starts[category] + min(end, first + BATCH_ROWS)
            rows = f"SELECT * FROM {kept} WHERE _seq >= {low} AND _seq < {high} ORDER BY _seq"
            yield _exception_frame(engine.arrow(rows))[list(EXCEPTION_COLUMNS)]

    return read


def _tally(table: pa.Table) -> list[tuple[str, str, int, int]]:
    """Rows read whole: how many and their exact sum (Python integers) per category and currency."""
    sums: dict[tuple[str, str], list[int]] = {}
    columns = (table.column(name).to_pylist() for name in ("category", "_cur", "_amount"))
    for category, currency, amount in zip(*columns, strict=True):
        entry = sums.setdefault((str(category), str(currency)), [0, 0])
        entry[0] += 1
        entry[1] += amount or 0
    return [(category, currency, n, total) for (category, currency), (n, total) in sums.items()]


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
    fee, has_fee = _integers(table.column("_fee_minor"))
    fee_digits = np.where(has_fee, digits[1], -1)
    minors += [fee, minors[1] - fee]
    digits += [fee_digits, fee_digits]
    ledger_amount, processor_amount, processor_fee, processor_net = _decimals(minors, digits)
    source = np.where(on_processor, _texts(table.column("p_source")), _texts(table.column("l_source")))
    amount, _ = _integers(table.column("_amount"))
    return pd.DataFrame(
        {
            "merchantReferenceId": _texts(table.column("merchantReferenceId")),
            "category": pd.Categorical(_texts(table.column("category")), categories=list(CATEGORIES)),
            "kind": _texts(table.column("kind")),
            "ledger_amount": ledger_amount,
            "processor_amount": processor_amount,
            "processor_fee": processor_fee,
            "processor_net": processor_net,
            "ledger_currency": _texts(table.column("l_currency")),
            "processor_currency": _texts(table.column("p_currency")),
            "ledger_status": _texts(table.column("l_status")),
            "processor_status": _texts(table.column("p_status")),
            "processor_reference": _texts(table.column("processor_reference")),
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
