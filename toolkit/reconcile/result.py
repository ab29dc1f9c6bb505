"""The outcome of a reconciliation, as data: categories, row accounting, totals, exceptions.

Rendering lives with the reports (``report.py``, ``workbook.py``, ``controller_view.py``); the
engine (``engine.py``) and the subscription checks (``subscriptions.py``) both produce this.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Context, Decimal, localcontext
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from toolkit.money import from_minor, is_currency

if TYPE_CHECKING:
    from toolkit.reconcile.tracking import Tracking

#: Payment categories, in report order.
PAYMENT_CATEGORIES: tuple[str, ...] = (
    "missing_in_processor",
    "missing_in_ledger",
    "amount_mismatch",
    "currency_mismatch",
    "status_mismatch",
    "duplicate_in_processor",
    "duplicate_in_ledger",
    "unknown_outcome",
    "rejected_row",
)
#: Subscription categories, in report order.
SUBSCRIPTION_CATEGORIES: tuple[str, ...] = (
    "subscription_missing",
    "subscription_price_mismatch",
    "subscription_quantity_mismatch",
    "subscription_amount_mismatch",
    "subscription_state_mismatch",
)
CATEGORIES: tuple[str, ...] = PAYMENT_CATEGORIES + SUBSCRIPTION_CATEGORIES
#: Columns of ``ReconciliationResult.exceptions`` and of exceptions.csv, in order.
EXCEPTION_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "category",
    "ledger_amount",
    "processor_amount",
    "ledger_currency",
    "processor_currency",
    "ledger_status",
    "processor_status",
    "source",
    "source_row",
    "detail",
)
#: Columns of ``ReconciliationResult.summary``.
SUMMARY_COLUMNS: tuple[str, ...] = ("category", "currency", "count", "amount")

#: Columns of ``ReconciliationResult.matched``.
MATCHED_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "amountMinor",
    "currency",
    "status",
    "ledger_row",
    "processor_row",
)
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RowCounts:
    """What became of the rows of one input: ``rows == matched + exceptions + rejected + outside``.

    ``outside``: rows dated outside the period that was asked for (counted, not reconciled).
    """

    side: str
    source: str
    rows: int
    matched: int
    exceptions: int
    rejected: int
    outside: int = 0

    @property
    def adds_up(self) -> bool:
        """True when every row is accounted for (it always should be)."""
        return self.rows == self.matched + self.exceptions + self.rejected + self.outside


@dataclass(frozen=True)
class SideTotal:
    """The exact sum of one side's usable rows in one currency (``rows`` of them)."""

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
class ReconciliationResult:
    """The outcome of a reconciliation, as data; rendering lives in ``report.py``.

    ``summary``: ``SUMMARY_COLUMNS``, one row per category and currency (``matched`` first), with
    exact ``Decimal`` amounts. ``exceptions``: ``EXCEPTION_COLUMNS``, one row per problem.
    ``matched``: one row per matched key (``MATCHED_COLUMNS``), fetched from ``matched_rows``
    when first asked for (``matched_count`` does not fetch them). ``rejected``: rows that could not be read,
    with ``side`` and ``source``. ``counts``: the row accounting of each input. ``totals``: what
    each side's usable rows add up to per currency (empty for subscription checks).
    ``tracking``: None for a one-off run; for a run of a track (``tracking.track_result``), the
    run, the resolved exceptions and the states, whose columns ``exceptions`` then also holds.
    """

    summary: pd.DataFrame
    exceptions: pd.DataFrame
    matched_rows: LazyRows
    rejected: pd.DataFrame
    counts: tuple[RowCounts, ...]
    amount_tolerance: int = 0
    sources: tuple[str, ...] = field(default=())
    totals: tuple[SideTotal, ...] = field(default=())
    tracking: Tracking | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def matched(self) -> pd.DataFrame:
        """One row per matched key (fetched from the engine once, on first use)."""
        return self.matched_rows.fetch()

    @property
    def matched_count(self) -> int:
        """Number of matched keys."""
        return self.matched_rows.count

    @property
    def exception_count(self) -> int:
        """Number of exceptions (rejected rows included)."""
        return len(self.exceptions)

    @property
    def category_counts(self) -> dict[str, int]:
        """Exceptions per category, every category of the result's kind listed (zeros included)."""
        counts = self.exceptions["category"].value_counts()  # by category: no text per row
        present = {str(name) for name, n in counts.items() if n}
        names = list(PAYMENT_CATEGORIES)
        if present & set(SUBSCRIPTION_CATEGORIES) or any(
            c.side == "subscription ledger" for c in self.counts
        ):
            names += list(SUBSCRIPTION_CATEGORIES)
        return {name: int(counts.get(name, 0)) for name in names}

    def merged(self, other: ReconciliationResult) -> ReconciliationResult:
        """One result holding both (for a report of payments and subscriptions together)."""
        return ReconciliationResult(
            summary=_sort_summary(pd.concat([self.summary, other.summary], ignore_index=True)),
            exceptions=_sort_exceptions(pd.concat([self.exceptions, other.exceptions], ignore_index=True)),
            matched_rows=self.matched_rows + other.matched_rows,
            rejected=pd.concat(
                [f for f in (self.rejected, other.rejected) if len(f)] or [self.rejected], ignore_index=True
            ),
            counts=self.counts + other.counts,
            amount_tolerance=self.amount_tolerance,
            sources=self.sources + other.sources,
            totals=self.totals + other.totals,
        )

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.category_counts.items() if v)
        return (
            f"ReconciliationResult(matched={self.matched_count}, "
            f"exceptions={self.exception_count}{', ' + parts if parts else ''})"
        )

    def _repr_html_(self) -> str:
        """A readable summary in a notebook: row accounting, then counts and amounts."""
        period = any(c.outside for c in self.counts)  # the column only when a period left rows out
        rows = "".join(
            f"<tr><td>{html.escape(c.side)}</td><td>{html.escape(c.source)}</td>"
            f"<td>{c.rows:,}</td><td>{c.matched:,}</td><td>{c.exceptions:,}</td>"
            f"<td>{c.rejected:,}</td>" + (f"<td>{c.outside:,}</td>" if period else "") + "</tr>"
            for c in self.counts
        )
        accounting = (
            "<table><thead><tr><th>side</th><th>source</th><th>rows</th><th>matched</th>"
            "<th>in exceptions</th><th>rejected</th>"
            + ("<th>outside period</th>" if period else "")
            + f"</tr></thead><tbody>{rows}</tbody></table>"
        )
        summary = self.summary.assign(
            amount=[("" if a is None else str(a)) for a in self.summary["amount"]]
        ).to_html(index=False, na_rep="")
        tracked = ""
        if self.tracking is not None:
            tracked = f"<p>{html.escape(self.tracking.summary_text().splitlines()[0])}</p>"
        return (
            f"<div><strong>Reconciliation</strong>: {self.matched_count:,} matched, "
            f"{self.exception_count:,} exceptions (amount tolerance {self.amount_tolerance} "
            f"minor units){tracked}{accounting}{summary}</div>"
        )


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
    if frame.empty:
        return pd.DataFrame({c: [] for c in SUMMARY_COLUMNS})
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


def rejected_exceptions(rejected: pd.DataFrame, side: str, source: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rejected rows of one input as exceptions (category ``rejected_row``) and as a side frame."""
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
            f"{prefix_own}_amount": nothing,
            f"{prefix_other}_amount": nothing,
            f"{prefix_own}_currency": currencies,
            f"{prefix_other}_currency": nothing,
            f"{prefix_own}_status": rejected["status"].astype(object).to_numpy(),
            f"{prefix_other}_status": nothing,
            "source": np.full(n, source, dtype=object),
            "source_row": rejected["source_row"].to_numpy(dtype=np.int64),
            "detail": rejected["detail"].astype(object).to_numpy(),
        }
    )
    side_frame = rejected.assign(side=side, source=source)
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
