"""The engine's first step: each side of a reconciliation, read and validated, in the backend.

``load_ledger`` and friends look at the source at once (a missing file or column is an error
there and then) and return a ``LoadedInput``: a description of the side, not its rows. The rows
are read and checked inside the backend the engine runs on (``LoadedInput.rows``), so a file
larger than memory is never held by Python. Every row ends up usable, rejected (with every reason
it cannot be used) or outside the period: rows in = usable + rejected + outside.

Amounts are read as text and turned into exact integer minor units of their ISO 4217 currency by
string operations (the digits before and after the point, padded to the currency's digits), never
through float: ``10.1`` and ``10.10`` USD are both 1010; ``12.300`` USD is 1230 (extra zeros are
accepted); ``12.345`` USD is refused, not rounded. ``frame`` and ``rejected`` give the rows as
pandas frames for a notebook (computed on the default DuckDB backend, once).

The checks are SQL (``checks.py``), the reasons of a rejected row words (``reasons.py``), and a
side's columns found by their required names (``columns.py``); every name the module
``inputs.py`` had still imports from here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.inputs.checks import check_payments, check_subscriptions, dated_by, in_period, trimmed
from toolkit.reconcile.inputs.checks import currency_codes as currency_codes
from toolkit.reconcile.inputs.checks import currency_table as currency_table
from toolkit.reconcile.inputs.checks import parse_amounts as parse_amounts
from toolkit.reconcile.inputs.checks import with_epoch_seconds as with_epoch_seconds
from toolkit.reconcile.inputs.columns import closest_column as closest_column
from toolkit.reconcile.inputs.columns import column_error as column_error
from toolkit.reconcile.inputs.columns import map_option as map_option
from toolkit.reconcile.inputs.columns import mapping_text as mapping_text
from toolkit.reconcile.inputs.columns import parse_mapping as parse_mapping
from toolkit.reconcile.inputs.columns import renames_of
from toolkit.reconcile.inputs.reasons import rejected_frame as rejected_frame
from toolkit.reconcile.period import Period
from toolkit.reconcile.period import period_seconds as period_seconds
from toolkit.reconcile.period import select_period as select_period
from toolkit.reconcile.relation import Relation, count_if, ident
from toolkit.reconcile.schema import MAX_DIGITS as MAX_DIGITS
from toolkit.reconcile.schema import PRICING_COLUMNS as PRICING_COLUMNS
from toolkit.reconcile.schema import REJECTED_COLUMNS as REJECTED_COLUMNS
from toolkit.reconcile.schema import REQUIRED_COLUMNS as REQUIRED_COLUMNS
from toolkit.reconcile.schema import SUBSCRIPTION_COLUMNS as SUBSCRIPTION_COLUMNS
from toolkit.reconcile.schema import SUBSCRIPTION_STATES as SUBSCRIPTION_STATES
from toolkit.reconcile.sources import Described, Source


@dataclass(frozen=True)
class Dated:
    """The column a side's rows are dated by, and the cut-off (epoch seconds; None: dated for
    the rate of a payment's day only)."""

    column: str
    cutoff: int | None
    #: Read where ``column`` is empty: the journal's ``requestTime`` (when the payment was sent)
    #: for its payments, whose answers carry no ``createTime``.
    fallback: str | None = None


@dataclass(frozen=True)
class LoadedInput:
    """One side of a reconciliation: where its rows are and how they are read and checked.

    ``kind`` is ``payments`` or ``subscriptions``; ``renames`` maps the source's own column
    names to canonical ones; ``carry`` keeps the columns the engine does not need; ``period``,
    when set, leaves out the rows dated outside it (``select_period``).
    """

    side: str
    described: Described
    kind: str = "payments"
    renames: tuple[tuple[str, str], ...] = ()
    carry: bool = True
    period: Period | None = None
    dated: Dated | None = None

    @property
    def source(self) -> str:
        """The input's name for people (a path, ``<ledger frame>``, ``table:NAME``)."""
        return self.described.name

    @property
    def in_memory(self) -> bool:
        """Whether the rows are in memory already (a frame, a workbook), not in files or a table:
        then the engine keeps what it computes from them in memory too."""
        return self.described.table is not None

    def __repr__(self) -> str:
        """Where the side is; its counts once ``frame`` has been computed (a repr never reads a
        large input into memory)."""
        counts = ""
        if "_view" in self.__dict__:
            view = self._view
            outside = f", outside={view.outside}" if view.outside else ""
            counts = (
                f", rows={view.row_count}, usable={len(view.frame)}, rejected={len(view.rejected)}{outside}"
            )
        period = f", period={self.period.start or '...'}..{self.period.end or '...'}" if (self.period) else ""
        return f"LoadedInput(source={self.source!r}, side={self.side!r}{period}{counts})"

    # -- in a backend --------------------------------------------------------------------------

    def rows(self, backend: Backend) -> Relation:
        """Every row, checked: the canonical columns and ``_key``, ``_minor``, ``_currency``,
        ``_digits``, ``_status``, ``_cur`` and ``_st`` (their codes), ``_problem`` (null when usable)
        and ``_rejected``, ``_outside``, ``_ord``,
        ``source_row``, ``_source``, the ``_bad_*`` flags, and the carried columns as text."""
        return self.check(backend, self.read(backend))

    def read(self, backend: Backend) -> Relation:
        """The rows as written (canonical names, text), with ``_ord`` and ``source_row``."""
        own = {canonical: column for column, canonical in self.renames}
        needed = None
        if not self.carry:
            needed = frozenset(own.get(c, c) for c in self.checked_columns()) & set(self.described.columns)
        table = sources.read(backend, self.described, needed)
        renamed = {canonical: column for column, canonical in self.renames if column in table.columns}
        return table.rename(renamed) if renamed else table

    def checked_columns(self) -> frozenset[str]:
        """The canonical columns the check reads (the others are only carried)."""
        canonical = set(REQUIRED_COLUMNS if self.kind == "payments" else SUBSCRIPTION_COLUMNS)
        if self.period is not None:
            canonical.add(self.period.column)
        if self.dated is not None:
            canonical.update(c for c in (self.dated.column, self.dated.fallback) if c)
        if self.side == "processor":
            canonical.update(PRICING_COLUMNS)
        return frozenset(canonical)

    def check(self, backend: Backend, table: Relation) -> Relation:
        """The rows ``read`` gave, checked (see ``rows``)."""
        decimal = self.described.decimal
        if self.kind == "payments":
            checked = check_payments(backend, table, priced=self.side == "processor", decimal=decimal)
        else:
            checked = check_subscriptions(backend, table, decimal=decimal)
        checked = in_period(checked, self.period, self.source)
        checked = dated_by(checked, self.dated)
        return checked.mutate(_rejected="_problem IS NOT NULL")

    def columns(self) -> frozenset[str]:
        """The canonical names of the columns the source has."""
        own = {column for column, _ in self.renames}
        return frozenset({canonical for _, canonical in self.renames} | (set(self.described.columns) - own))

    # -- as pandas, for a notebook -------------------------------------------------------------

    @functools.cached_property
    def _view(self) -> _Evaluated:
        return _evaluate(self, connect("duckdb", in_memory=self.in_memory))

    @property
    def frame(self) -> pd.DataFrame:
        """The usable rows (see ``usable_frame``), computed once on the default backend."""
        return self._view.frame

    @property
    def rejected(self) -> pd.DataFrame:
        """The rows that cannot be used, ``REJECTED_COLUMNS``, in file order."""
        return self._view.rejected

    @property
    def row_count(self) -> int:
        """Every row of the input."""
        return self._view.row_count

    @property
    def outside(self) -> int:
        """Rows a period left out."""
        return self._view.outside


@dataclass(frozen=True)
class _Evaluated:
    frame: pd.DataFrame
    rejected: pd.DataFrame
    row_count: int
    outside: int


def _evaluate(loaded: LoadedInput, backend: Backend) -> _Evaluated:
    query = loaded.rows(backend)
    rows = backend.keep(query, stem="checked")
    checked = Relation(f"SELECT * FROM {rows}", query.columns, (rows,))
    counts = backend.arrow(
        f"SELECT COUNT(*) AS n, {count_if('_outside')} AS outside FROM {rows}"
    ).to_pylist()[0]
    return _Evaluated(
        frame=usable_frame(loaded, backend, checked),
        rejected=rejected_frame(loaded, backend, checked),
        row_count=int(counts["n"]),
        outside=int(counts["outside"] or 0),
    )


def usable_frame(loaded: LoadedInput, backend: Backend, rows: Relation) -> pd.DataFrame:
    """The usable rows as pandas: ``merchantReferenceId`` (trimmed), ``amount`` (as written),
    ``amountMinor`` (int64), ``currency`` (categorical), ``status`` (categorical of
    ``PAYMENT_STATUS_NAMES``; ``state`` for subscriptions), ``source_row``, and carried text."""
    usable = rows.filter("NOT _rejected AND NOT _outside")
    internal = {c for c in rows.columns if c.startswith("_")}
    if loaded.kind == "payments":
        usable = usable.mutate(merchantReferenceId="_key", currency="_currency", status="_status")
    else:
        usable = usable.mutate(
            currency="_currency", state=f"LOWER({trimmed(ident('state'))})", quantity="_quantity"
        )
    usable = usable.mutate(amountMinor="_minor")
    first = ["merchantReferenceId", "amount", "amountMinor", "currency", "status", "source_row"]
    if loaded.kind != "payments":
        first = [*SUBSCRIPTION_COLUMNS, "amountMinor", "source_row"]
    rest = [c for c in usable.columns if c not in internal and c not in first]
    shown = ", ".join(ident(c) for c in (*first, *rest))
    table = backend.arrow(f"SELECT {shown} FROM ({usable}) ORDER BY _ord")
    frame = pd.DataFrame(
        {
            name: (
                table.column(name).to_numpy()
                if name in ("amountMinor", "source_row", "quantity")
                else pd.array(table.column(name), dtype=pd.ArrowDtype(pa.string()))
            )
            for name in table.column_names
        }
    )
    for name in ("amountMinor", "source_row", "quantity"):
        if name in frame.columns:
            frame[name] = frame[name].astype(np.int64)
    frame["currency"] = pd.Categorical(
        frame["currency"].astype(object), categories=sorted(set(frame["currency"].astype(str)))
    )
    if loaded.kind == "payments":
        frame["status"] = pd.Categorical(
            frame["status"].astype(object), categories=list(PAYMENT_STATUS_NAMES)
        )
    else:
        frame["currency"] = frame["currency"].astype(str)
        frame["state"] = frame["state"].astype(str)
    return frame


class Reading(TypedDict, total=False):
    """How to read a file where detection is not enough (``sources.ReadOptions``): ``delimiter``,
    ``encoding`` (CSV), ``sheet`` (Excel: name or 1-based number), ``header_row`` (1-based) and
    ``decimal`` (the amounts' decimal mark, ``.`` or ``,``)."""

    delimiter: str | None
    encoding: str | None
    sheet: str | int | None
    header_row: int | None
    decimal: str | None


def load_payments(
    source: Source,
    *,
    side: str,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """One side of a payments reconciliation (``side`` is ``ledger`` or ``processor``).

    ``carry=False`` reads only the columns the engine needs (faster; nothing is carried).
    ``reading`` says how to read the file where detection is not enough (``Reading``).
    """
    # A float in either amount is refused, under its own name or the one mapped to it.
    amounts = frozenset(
        name
        for canonical in ("amount", "pricingAmount")
        for name in (canonical, (mapping or {}).get(canonical, canonical))
    )
    described = sources.describe(source, side, amounts, sources.ReadOptions(**reading))
    renames = renames_of(described, mapping, REQUIRED_COLUMNS, side)
    return LoadedInput(side=side, described=described, renames=renames, carry=carry)


def load_ledger(
    source: Source,
    *,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """The merchant's books: CSV, .xlsx, Parquet (a file, folder or glob) or a frame."""
    return load_payments(source, side="ledger", mapping=mapping, carry=carry, **reading)


def load_processor(
    source: Source,
    *,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """The processor side: a settlement export, the journal's payments frame, or a table."""
    return load_payments(source, side="processor", mapping=mapping, carry=carry, **reading)


def load_subscription_ledger(
    source: Source, *, mapping: Mapping[str, str] | None = None, **reading: Unpack[Reading]
) -> LoadedInput:
    """A subscription ledger; ``frame`` has ``SUBSCRIPTION_COLUMNS`` plus ``amountMinor``.

    ``quantity`` becomes int64; ``state`` is lowercased. Rows without a subscriptionId, with a
    bad amount, currency, quantity or state are rejected with the reason. ``reading`` as for
    ``load_payments``.
    """
    amounts = frozenset({"amount", "quantity", (mapping or {}).get("amount", "amount")})
    described = sources.describe(source, "subscription ledger", amounts, sources.ReadOptions(**reading))
    renames = renames_of(described, mapping, SUBSCRIPTION_COLUMNS, "subscription ledger")
    return LoadedInput(side="subscription ledger", described=described, kind="subscriptions", renames=renames)
