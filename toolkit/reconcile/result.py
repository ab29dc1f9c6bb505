"""The outcome of a reconciliation, as data: categories, row accounting, totals, exceptions.

Rendering lives with the reports (``render/``: the page, the workbook, the notebook view); the
engine (``_engine/``) and the subscription checks (``subscriptions.py``) both produce this.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Context, Decimal, localcontext
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from toolkit.money import from_minor, is_currency
from toolkit.outputs import cell_text as cell_text  # re-exported (here before outputs.py had it)
from toolkit.reconcile.schema import (  # re-exported: their home before schema.py
    CATEGORIES as CATEGORIES,
)
from toolkit.reconcile.schema import (
    EXCEPTION_COLUMNS as EXCEPTION_COLUMNS,
)
from toolkit.reconcile.schema import (
    FX_COLUMNS as FX_COLUMNS,
)
from toolkit.reconcile.schema import (
    INFO_CATEGORIES as INFO_CATEGORIES,
)
from toolkit.reconcile.schema import (
    MATCHED_COLUMNS as MATCHED_COLUMNS,
)
from toolkit.reconcile.schema import (
    PAYMENT_CATEGORIES as PAYMENT_CATEGORIES,
)
from toolkit.reconcile.schema import (
    SUBSCRIPTION_CATEGORIES as SUBSCRIPTION_CATEGORIES,
)
from toolkit.reconcile.schema import (
    SUMMARY_COLUMNS as SUMMARY_COLUMNS,
)
from toolkit.reconcile.schema import (
    in_report_order as in_report_order,
)
from toolkit.reconcile.schema import (
    severity_of as severity_of,
)
from toolkit.reconcile.tolerance import Tolerance

if TYPE_CHECKING:
    from toolkit.reconcile.render.notebook_view import NotebookView
    from toolkit.reconcile.tracking.model import Tracking

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RowCounts:
    """What became of the rows of one input: ``rows == matched + exceptions + in_transit +
    rejected + outside + after_cutoff + movements``.

    ``matched`` includes matches within tolerance; ``in_transit``: rows of payments inside the
    settlement window (not a break yet); ``outside``: rows dated outside the period that was asked
    for; ``after_cutoff``: rows dated after the cut-off (both counted, not reconciled);
    ``movements``: fees, payouts and adjustments (no order's: totalled, ``ReconciliationResult.movements``).
    """

    side: str
    source: str
    rows: int
    matched: int
    exceptions: int
    rejected: int
    outside: int = 0
    in_transit: int = 0
    after_cutoff: int = 0
    movements: int = 0

    @property
    def adds_up(self) -> bool:
        """True when every row is accounted for (it always should be)."""
        return self.rows == (
            self.matched
            + self.exceptions
            + self.in_transit
            + self.rejected
            + self.outside
            + self.after_cutoff
            + self.movements
        )


@dataclass(frozen=True)
class MovementTotal:
    """One side's movements of one kind (``movements.KINDS``) in one currency that are not a
    failed attempt: how many, and their exact signed sum (a refund is negative)."""

    side: str
    kind: str
    currency: str
    rows: int
    amount: Decimal


@dataclass(frozen=True)
class PayoutTotal:
    """One payout of the processor's export in one currency (its layout's ``[payout]``): its
    items (the rows the export ties to it, each once) and their exact net total, and what its
    payout row paid out (None: the file has no such row); ``unread``: its rows whose net amount
    cannot be read (then it cannot be said to add up)."""

    payout: str
    currency: str
    items: int
    items_net: Decimal
    paid_out: Decimal | None
    unread: int = 0
    #: When the payout row says it paid out (None: no payout row, or the side is not dated).
    paid_on: datetime | None = None

    @property
    def difference(self) -> Decimal | None:
        """The items' net less what was paid out (None without a payout row)."""
        return None if self.paid_out is None else self.items_net - self.paid_out

    @property
    def state(self) -> str:
        """``adds up``, ``does not add up``, ``no payout row in the file``, ``items not checked`` (the
        file ties no item to the payout: an instant or manual payout), ``payout returned`` (paid
        out and returned: its items are paid out again later) or ``net unreadable``."""
        if self.unread:
            return "net unreadable"
        if not self.items:
            return "items not checked"
        if self.difference is None:
            return "no payout row in the file"
        if self.paid_out == 0:  # paid out, then returned: its items go to a later payout
            return "payout returned"
        return "adds up" if self.difference == 0 else "does not add up"


@dataclass(frozen=True)
class SideTotal:
    """The exact sum of one side's usable rows in one currency that are not a failed attempt
    (``rows`` of them): the money each side says moved."""

    side: str
    currency: str
    rows: int
    amount: Decimal


@dataclass(frozen=True)
class LazyRows:
    """Rows that may be too many to hold (every matched payment of a month): counted at once,
    fetched as a frame only when someone asks for them."""

    count: int
    fetch: Callable[[], pd.DataFrame] = field(repr=False, compare=False)

    @classmethod
    def of(cls, frame: pd.DataFrame) -> LazyRows:
        """Rows already at hand (nothing to fetch later)."""
        return cls(len(frame), lambda: frame)

    def __add__(self, other: LazyRows) -> LazyRows:
        def both() -> pd.DataFrame:
            frames = [f for f in (self.fetch(), other.fetch()) if len(f)]
            return (
                pd.concat(frames, ignore_index=True)
                if len(frames) > 1
                else (frames[0] if frames else self.fetch())
            )

        return LazyRows(self.count + other.count, both)


@dataclass(frozen=True)
class SpilledRows:
    """Exception rows too many to hold in memory (``ReconciliationResult.exceptions`` then holds
    the first of each category): counted per category, and read back in report order a batch at
    a time from where they are kept (the engine's tables)."""

    #: Rows per category, in the order ``frames`` reads them (``exceptions``' order).
    counts: dict[str, int]
    #: ``read(category, start, count)``: that category's rows ``start`` to ``start + count``
    #: (None: to its end), as frames of ``EXCEPTION_COLUMNS``.
    read: Callable[[str, int, int | None], Iterator[pd.DataFrame]] = field(repr=False, compare=False)

    @classmethod
    def held(cls, frame: pd.DataFrame) -> SpilledRows:
        """Rows in memory (a subscription check's, the rejected rows) read the same way."""
        names = frame["category"].astype(str)
        parts = {name: frame[names == name].reset_index(drop=True) for name in dict.fromkeys(names)}

        def read(category: str, start: int, count: int | None) -> Iterator[pd.DataFrame]:
            part = parts.get(category)
            if part is not None and start < len(part):
                yield part.iloc[start : None if count is None else start + count].reset_index(drop=True)

        return cls({name: len(part) for name, part in parts.items()}, read)

    def frames(self, category: str | None = None) -> Iterator[pd.DataFrame]:
        """Every row of ``category`` (None: of every category, in order), in batches."""
        for name in [category] if category is not None else list(self.counts):
            if self.counts.get(name):
                yield from self.read(name, 0, None)

    def joined(self, other: SpilledRows) -> SpilledRows:
        """These rows, then ``other``'s, in each category."""

        def read(category: str, start: int, count: int | None) -> Iterator[pd.DataFrame]:
            first = self.counts.get(category, 0)
            end = None if count is None else start + count
            if start < first:
                yield from self.read(category, start, None if end is None else min(end, first) - start)
            rest = max(start - first, 0)
            rest_count = None if end is None else max(end - first, 0) - rest
            if other.counts.get(category, 0) > rest and rest_count != 0:
                yield from other.read(category, rest, rest_count)

        counts = dict(self.counts)
        for name, n in other.counts.items():
            counts[name] = counts.get(name, 0) + n
        return SpilledRows(counts, read)


@dataclass(frozen=True)
class ReconciliationResult:
    """The outcome of a reconciliation, as data; rendering lives in ``render/``.

    ``summary``: ``SUMMARY_COLUMNS``, one row per category and currency (``matched`` first), with
    exact ``Decimal`` amounts. ``exceptions``: ``EXCEPTION_COLUMNS``, one row per problem.
    ``matched``: one row per matched key (``MATCHED_COLUMNS``), fetched from ``matched_rows``
    when first asked for (``matched_count`` does not fetch them). ``rejected``: rows that could not be read,
    with ``side`` and ``source``. ``counts``: the row accounting of each input. ``totals``: what
    each side's usable rows add up to per currency, failed attempts apart (empty for
    subscription checks).
    ``tracking``: None for a one-off run; for a run of a track (``tracking.track_result``), the
    run, the resolved exceptions and the states, whose columns ``exceptions`` then also holds.
    ``exceptions`` also holds the informational rows (``severity`` ``info``: ``in_transit``,
    ``within_tolerance``), which ``exception_count`` and the thresholds leave out. ``cutoff`` and
    ``grace``: the run's cut-off and settlement window (None when it had none); ``fx``: the
    payments compared at a reference rate (``FX_COLUMNS``); ``missing_rates``: each rate a payment
    needed and the rate file did not have (``EUR/USD on 2026-11-18``). ``spilled``: None when
    ``exceptions`` holds every row; else ``exceptions`` holds the first rows of each category and
    ``spilled`` reads them all back (``exception_frames``, ``exceptions_page``).
    """

    summary: pd.DataFrame
    exceptions: pd.DataFrame
    matched_rows: LazyRows
    rejected: pd.DataFrame
    counts: tuple[RowCounts, ...]
    amount_tolerance: Tolerance = field(default_factory=Tolerance)
    sources: tuple[str, ...] = field(default=())
    totals: tuple[SideTotal, ...] = field(default=())
    tracking: Tracking | None = field(default=None, repr=False, compare=False)
    cutoff: datetime | None = None
    grace: timedelta | None = None
    fx: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({c: [] for c in FX_COLUMNS}))
    missing_rates: tuple[str, ...] = ()
    #: The payments matched through their price, per currency: what the processor charged (side
    #: ``charged``) and priced (side ``priced``), so that a net difference per currency counts
    #: them in the books' currency (``net_by_currency``).
    price_moves: tuple[SideTotal, ...] = ()
    #: Each side's movements per kind and currency (charges, refunds, chargebacks, fees, payouts).
    movements: tuple[MovementTotal, ...] = ()
    #: Per payout and currency of the processor's export, where it says which payout paid each
    #: row: its items' net and what it paid out.
    payouts: tuple[PayoutTotal, ...] = ()
    #: The date format each side (``sources``' order) was read with, given or decided from its
    #: rows (the order of slashed dates); None where it needed none. A track records them, so
    #: that a later file whose rows cannot decide is read as the earlier ones were.
    date_formats: tuple[str | None, ...] = ()
    spilled: SpilledRows | None = field(default=None, repr=False, compare=False)

    def net_by_currency(self) -> dict[str, Decimal]:
        """Ledger minus processor per currency, over the usable rows that moved money
        (``totals``), with the payments matched through their price counted in the currency of
        their price."""
        sign = {"ledger": 1, "processor": -1, "charged": 1, "priced": -1}
        net: dict[str, Decimal] = {}
        for total in (*self.totals, *self.price_moves):
            if total.side in sign:
                net[total.currency] = net.get(total.currency, Decimal(0)) + sign[total.side] * total.amount
        return net

    @functools.cached_property
    def matched(self) -> pd.DataFrame:
        """One row per matched key (fetched from the engine once, on first use)."""
        return self.matched_rows.fetch()

    @property
    def matched_count(self) -> int:
        """Number of matched keys."""
        return self.matched_rows.count

    @property
    def nothing_compared(self) -> str | None:
        """Why no row of any side was compared (each after the cut-off, outside the period or
        rejected), or None: such a run found nothing because it looked at nothing, and a
        threshold must not read it as a pass (a past ``--as-of`` typed by mistake)."""
        if not self.counts or any(c.rows - c.after_cutoff - c.outside - c.rejected > 0 for c in self.counts):
            return None
        parts = (
            (sum(c.after_cutoff for c in self.counts), "after the cut-off"),
            (sum(c.outside for c in self.counts), "outside the period"),
            (sum(c.rejected for c in self.counts), "rejected"),
        )
        said = ", ".join(f"{n:,} {words}" for n, words in parts if n) or "no rows"
        return (
            "nothing was compared: every row of both sides is after the cut-off, outside the "
            f"period or rejected ({said})"
        )

    @property
    def exception_count(self) -> int:
        """Number of exceptions (rejected rows included; informational rows not)."""
        if self.spilled is not None:
            return sum(n for name, n in self.spilled.counts.items() if name not in INFO_CATEGORIES)
        return (
            int((self.exceptions["severity"] != "info").sum())
            if "severity" in self.exceptions
            else len(self.exceptions)
        )

    @property
    def info_count(self) -> int:
        """Number of informational rows (in transit, within tolerance)."""
        return sum(self.info_counts.values())

    @property
    def info_counts(self) -> dict[str, int]:
        """Informational rows per category, every informational category listed."""
        counts = self.row_counts()
        return {name: counts.get(name, 0) for name in INFO_CATEGORIES}

    def row_counts(self) -> dict[str, int]:
        """Rows per category of ``exceptions`` (of ``spilled`` when it holds them)."""
        if self.spilled is not None:
            return dict(self.spilled.counts)
        counts = self.exceptions["category"].value_counts()  # by category: no text per row
        return {str(name): int(n) for name, n in counts.items() if n}

    def exception_frames(self, category: str | None = None) -> Iterator[pd.DataFrame]:
        """Every row of ``category`` (None: every row) in report order, in frames of a bounded
        size: the way to read exceptions that may be too many to hold (``spilled``)."""
        if self.spilled is not None:
            yield from self.spilled.frames(category)
            return
        frame = self.exceptions
        yield frame if category is None else frame[frame["category"] == category].reset_index(drop=True)

    def exceptions_page(self, category: str, start: int = 0, count: int = 1_000) -> pd.DataFrame:
        """Rows ``start`` to ``start + count`` of ``category`` in report order: more of a category
        than ``exceptions`` holds, on demand (a notebook's "load more")."""
        if start < 0 or count < 0:
            raise ValueError("start and count are at least 0")
        if self.spilled is None:
            part = self.exceptions[self.exceptions["category"] == category]
            return part.iloc[start : start + count].reset_index(drop=True)
        frames = list(self.spilled.read(category, start, count))
        return pd.concat(frames, ignore_index=True) if frames else self.exceptions.iloc[:0]

    @property
    def fx_pairs(self) -> pd.DataFrame:
        """Per currency pair of ``fx``: payments and the total variance (charged - expected, in the
        processor's currency), exact."""
        columns = ["ledger_currency", "charged_currency", "payments", "variance"]
        if self.fx.empty:
            return pd.DataFrame({c: [] for c in columns})
        rows = [
            (base, quote, len(group), sum(group["variance"].tolist(), Decimal(0)))
            for (base, quote), group in self.fx.groupby(["ledger_currency", "charged_currency"], sort=True)
        ]
        return pd.DataFrame(rows, columns=columns)

    @property
    def category_counts(self) -> dict[str, int]:
        """Exceptions per category, every category of the result's kind listed (zeros included);
        informational categories are in ``info_counts``."""
        counts = self.row_counts()
        present = set(counts)
        names = list(PAYMENT_CATEGORIES)
        if present & set(SUBSCRIPTION_CATEGORIES) or any(
            c.side == "subscription ledger" for c in self.counts
        ):
            names += list(SUBSCRIPTION_CATEGORIES)
        return {name: int(counts.get(name, 0)) for name in names}

    def merged(self, other: ReconciliationResult) -> ReconciliationResult:
        """One result holding both (for a report of payments and subscriptions together)."""
        spilled = None
        if self.spilled is not None or other.spilled is not None:
            both = (self.spilled or SpilledRows.held(self.exceptions)).joined(
                other.spilled or SpilledRows.held(other.exceptions)
            )
            spilled = SpilledRows({c: both.counts[c] for c in in_report_order(both.counts)}, both.read)
        return ReconciliationResult(
            summary=_summed_summary(pd.concat([self.summary, other.summary], ignore_index=True)),
            exceptions=_sort_exceptions(pd.concat([self.exceptions, other.exceptions], ignore_index=True)),
            matched_rows=self.matched_rows + other.matched_rows,
            rejected=pd.concat(
                [f for f in (self.rejected, other.rejected) if len(f)] or [self.rejected], ignore_index=True
            ),
            counts=self.counts + other.counts,
            amount_tolerance=self.amount_tolerance,
            sources=self.sources + other.sources,
            totals=self.totals + other.totals,
            cutoff=self.cutoff,
            grace=self.grace,
            fx=self.fx,
            missing_rates=self.missing_rates,
            price_moves=self.price_moves + other.price_moves,
            movements=self.movements + other.movements,
            payouts=self.payouts + other.payouts,
            spilled=spilled,
        )

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.category_counts.items() if v)
        return (
            f"ReconciliationResult(matched={self.matched_count}, "
            f"exceptions={self.exception_count}{', ' + parts if parts else ''})"
        )

    def view(self, rows: int | None = None) -> NotebookView:
        """What a notebook cell shows of the result: the headline, the accounting, a bar per
        category, the summary, and ``rows`` rows of each category (None: a few; 0: none, for a
        notebook that lists them further down)."""
        from toolkit.reconcile.render.notebook_view import NotebookView

        return NotebookView(self) if rows is None else NotebookView(self, rows)

    def _repr_html_(self) -> str:
        return self.view()._repr_html_()


def _sort_exceptions(frame: pd.DataFrame) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(CATEGORIES)}
    rank = frame["category"].astype(str).map(order)
    keyed = frame.assign(_rank=rank.to_numpy())
    keyed = keyed.sort_values(["_rank"], kind="stable")
    out = keyed.drop(columns="_rank").reset_index(drop=True)
    out["category"] = pd.Categorical(out["category"].astype(str), categories=list(CATEGORIES))
    return out


def _sort_summary(frame: pd.DataFrame) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(("matched", *CATEGORIES))}
    keyed = frame.assign(_rank=frame["category"].map(order))
    keyed = keyed.sort_values(["_rank", "currency"], kind="stable")
    return keyed.drop(columns="_rank").reset_index(drop=True)


def _summed_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per category and currency: the rejected rows of payments and of subscriptions
    merged are one ``rejected_row`` line, as in a result of either (amounts added exactly; None
    where neither has one)."""
    lines: dict[tuple[str, str], tuple[int, Decimal | None]] = {}
    for category, currency, count, amount in frame[list(SUMMARY_COLUMNS)].itertuples(index=False):
        before, total = lines.get((category, currency), (0, None))
        if amount is not None and amount is not pd.NA:
            with localcontext(Context(prec=40)):  # exact: sums of DECIMAL(38) amounts
                total = Decimal(amount) + (total or 0)
        lines[(category, currency)] = (before + int(count), total)
    rows = [(category, currency, count, amount) for (category, currency), (count, amount) in lines.items()]
    summed = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)).astype({"count": "int64", "amount": object})
    return _sort_summary(summed)


def build_summary(categories: list[str], currencies: list[str], amounts: list[int | None]) -> pd.DataFrame:
    """Counts and exact amounts per category and currency (amount None where not applicable)."""
    has = np.array([a is not None for a in amounts], dtype=bool)
    frame = pd.DataFrame(
        {
            "category": categories,
            "currency": currencies,
            "minor": np.array([a if a is not None else 0 for a in amounts], dtype=np.int64),
            "has": has,
        }
    )
    if frame.empty:  # typed as a summary with rows is: a merged summary keeps whole counts
        return pd.DataFrame({c: [] for c in SUMMARY_COLUMNS}).astype({"count": "int64", "amount": object})
    totals = (
        frame.groupby(["category", "currency"], sort=False)
        .agg(size=("minor", "size"), total=("minor", "sum"), counted=("has", "sum"))
        .reset_index()
    )
    rows = []
    for category, currency, size, total, counted in totals.itertuples(index=False):
        amount = from_minor(int(total), str(currency)) if counted and is_currency(str(currency)) else None
        rows.append((category, currency, int(size), amount))
    return _sort_summary(pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)))


def rejected_exceptions(rejected: pd.DataFrame, side: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rejected rows of one input as exceptions (category ``rejected_row``) and as a side frame,
    each with the file it came from (``source``)."""
    on_ledger = side != "processor"
    prefix_own, prefix_other = ("ledger", "processor") if on_ledger else ("processor", "ledger")
    n = len(rejected)
    # Object arrays rather than lists: pandas converts long lists element by element.
    currencies = np.empty(n, dtype=object)
    currencies[:] = [str(c).strip().upper() for c in rejected["currency"]]
    nothing = np.full(n, None, dtype=object)
    exceptions = pd.DataFrame(
        {
            "merchantReferenceId": rejected["merchantReferenceId"].astype(object).to_numpy(),
            "category": np.full(n, "rejected_row", dtype=object),
            "kind": np.full(n, "", dtype=object),
            "processor_reference": nothing,
            "processor_fee": nothing,
            "processor_net": nothing,
            f"{prefix_own}_amount": nothing,
            f"{prefix_other}_amount": nothing,
            f"{prefix_own}_currency": currencies,
            f"{prefix_other}_currency": nothing,
            f"{prefix_own}_status": rejected["status"].astype(object).to_numpy(),
            f"{prefix_other}_status": nothing,
            "source": rejected["source"].astype(object).to_numpy(),
            "source_row": rejected["source_row"].to_numpy(dtype=np.int64),
            "detail": rejected["detail"].astype(object).to_numpy(),
            "severity": np.full(n, "exception", dtype=object),
            "age_days": pd.array([None] * n, dtype="Int64"),
        }
    )
    side_frame = rejected.drop(columns="source").assign(side=side, source=rejected["source"].to_numpy())
    return exceptions.reindex(columns=list(EXCEPTION_COLUMNS)), side_frame


def _decimals(minors: list[IntArray], digits: list[IntArray]) -> list[npt.NDArray[np.object_]]:
    """Exact ``Decimal`` amounts (``None`` where ``digits`` is -1) for several columns at once.

    Building a ``Decimal`` costs about a microsecond, and both sides of most exceptions carry the
    same amount, so one ``Decimal`` is built per distinct (amount, digits) and shared (they are
    immutable). ``1E-digits * minor`` keeps the exponent (``12.30``, like ``Decimal("12.30")``) and
    is exact under a 40-digit context (int64 has at most 19 digits), whatever the caller's context.
    """
    minor, places = np.concatenate(minors), np.concatenate(digits)
    out = np.full(len(minor), None, dtype=object)
    with localcontext(Context(prec=40)):
        for d in np.unique(places[places >= 0]).tolist():
            rows = np.flatnonzero(places == d)
            codes, uniques = pd.factorize(minor[rows])
            values = np.empty(len(uniques), dtype=object)
            values[:] = list(map(Decimal(1).scaleb(-d).__mul__, uniques.tolist()))
            out[rows] = values[codes]
    return np.split(out, np.cumsum([len(m) for m in minors])[:-1])
