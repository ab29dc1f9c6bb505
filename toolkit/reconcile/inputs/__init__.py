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

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.exports import Layout, layout_named, recognised
from toolkit.reconcile.inputs.checks import (
    check_payments,
    check_subscriptions,
    dated_by,
    in_period,
    signed_amounts,
    trimmed,
)
from toolkit.reconcile.inputs.checks import currency_codes as currency_codes
from toolkit.reconcile.inputs.checks import currency_table as currency_table
from toolkit.reconcile.inputs.checks import parse_amounts as parse_amounts
from toolkit.reconcile.inputs.columns import SIGNED_COLUMNS, renames_of, usual_columns
from toolkit.reconcile.inputs.columns import closest_column as closest_column
from toolkit.reconcile.inputs.columns import column_error as column_error
from toolkit.reconcile.inputs.columns import map_option as map_option
from toolkit.reconcile.inputs.columns import mapping_text as mapping_text
from toolkit.reconcile.inputs.columns import parse_mapping as parse_mapping
from toolkit.reconcile.inputs.dates import slashed_format
from toolkit.reconcile.inputs.dates import with_epoch_seconds as with_epoch_seconds
from toolkit.reconcile.inputs.laid_out import extf_facts, key_column_matching, laid_out, split_movements
from toolkit.reconcile.inputs.reasons import rejected_frame as rejected_frame
from toolkit.reconcile.inputs.reasons import rejection_code as rejection_code
from toolkit.reconcile.movements import TYPE_COLUMNS, shown_key
from toolkit.reconcile.period import Period
from toolkit.reconcile.period import period_seconds as period_seconds
from toolkit.reconcile.period import select_period as select_period
from toolkit.reconcile.relation import Relation, count_if, ident, literal
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


#: The status of a ledger's rows when it has no status column: a booking is a payment that happened.
BOOKED = "success"


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
    #: The status of every row of a side that has no status column (a ledger: ``BOOKED``).
    booked: str | None = None
    #: Where a ledger's sign is: a Debit/Credit ``pair`` of columns, or a Debit/Credit ``flag``.
    signed: str | None = None
    #: Whether the ``type`` column says each row's kind of movement (``movements.py``); else a
    #: negative amount is money returned.
    typed: bool = False
    #: The processor's export layout (``exports/``), when the file is one it knows.
    layout: Layout | None = None
    #: The file's columns that may hold the order key (a layout's metadata columns), when more
    #: than one does: ``with_key_of`` takes the one whose values match the ledger's keys.
    key_choices: tuple[str, ...] = ()
    #: What the file says of itself above its header that its layout reads (DATEV's period and
    #: currency: ``laid_out.extf_facts``).
    facts: tuple[tuple[str, str], ...] = ()
    #: The order of its slashed dates where its rows cannot decide it (a month to date from the
    #: 1st to the 12th): the one a track's earlier run read the side in (``tracking.record``).
    earlier_date_format: str | None = None

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
            laid = self.layout.read_columns() if self.layout is not None else frozenset()
            needed = frozenset({own.get(c, c) for c in self.checked_columns()} | laid) & set(
                self.described.columns
            )
        table = sources.read(backend, self.described, needed)
        renamed = {canonical: column for column, canonical in self.renames if column in table.columns}
        table = table.rename(renamed) if renamed else table
        table = table.mutate(status=literal(self.booked)) if self.booked else table
        table = _in_currency(table, self.described.currency)
        if self.layout is not None:
            table = laid_out(table, self.layout, dict(self.facts))
        credit_positive = self.layout is not None and self.layout.credit_positive
        table = signed_amounts(table, self.signed, credit_positive=credit_positive) if self.signed else table
        return split_movements(backend, table, self.layout) if self.layout is not None else table

    def checked_columns(self) -> frozenset[str]:
        """The canonical columns the check reads (the others are only carried)."""
        canonical = set(REQUIRED_COLUMNS if self.kind == "payments" else SUBSCRIPTION_COLUMNS)
        if self.period is not None:
            canonical.add(self.period.column)
        if self.dated is not None:
            canonical.update(c for c in (self.dated.column, self.dated.fallback) if c)
        if self.side == "processor":
            canonical.update(PRICING_COLUMNS)
        if self.signed:
            canonical.update(("debit", "credit") if self.signed == "pair" else ("debitCredit",))
        if self.typed:
            canonical.add("type")
        if self.layout is not None:
            canonical.update(self.layout.read_columns() - set(self.layout.references))
            canonical.update(column for column, _ in self.layout.skip)
        return frozenset(canonical)

    def check(self, backend: Backend, table: Relation) -> Relation:
        """The rows ``read`` gave, checked (see ``rows``)."""
        decimal = self.described.decimal
        if self.kind == "payments":
            checked = check_payments(
                backend,
                table,
                priced=self.side == "processor",
                decimal=decimal,
                typed=self.typed,
                words=self.layout.kinds if self.layout is not None else (),
                by_sign=self.side == "ledger",
            )
        else:
            checked = check_subscriptions(backend, table, decimal=decimal)
        written, zone = self.described.date_format, self.described.timezone
        checked = in_period(checked, self.period, self.source, written=written, zone=zone)
        checked = dated_by(checked, self.dated, written=written, zone=zone)
        return checked.mutate(_rejected="_problem IS NOT NULL")

    def columns(self) -> frozenset[str]:
        """The canonical names of the columns the source has (or is given: a status, a currency)."""
        own = {column for column, _ in self.renames}
        given = {"status"} if self.booked else set()
        given |= {"currency"} if self.described.currency else set()
        return frozenset(
            {canonical for _, canonical in self.renames} | (set(self.described.columns) - own) | given
        )

    def with_key_of(self, backend: Backend, ledger: LoadedInput) -> LoadedInput:
        """This side with its order key in the one of ``key_choices`` whose values match the most
        of the ledger's keys (the first on a tie); as it is without choices."""
        if not self.key_choices:
            return self
        best = key_column_matching(backend, self, ledger)
        renames = tuple(
            (best if canonical == "merchantReferenceId" else own, canonical)
            for own, canonical in self.renames
        )
        return dataclasses.replace(self, renames=renames, key_choices=())

    def with_dates_read(self, backend: Backend) -> LoadedInput:
        """This side with the order of its slashed dates decided from its rows (``dates.py``) as
        its date format, or where they cannot decide, ``earlier_date_format``; as it is when it has
        a format, reads no date, or writes none slashed."""
        own = {canonical: column for column, canonical in self.renames}
        period = (self.period.column,) if self.period else ()
        dated = (self.dated.column, self.dated.fallback) if self.dated else ()
        columns = [own.get(c, c) for c in dict.fromkeys((*period, *dated)) if c]
        columns = [c for c in columns if c in self.described.columns]
        if self.described.date_format is not None or not columns:
            return self
        option = f"--{self.side.replace(' ', '-')}-date-format"
        decided = slashed_format(backend, self.described, columns, option, earlier=self.earlier_date_format)
        if decided is None:
            return self
        return dataclasses.replace(self, described=dataclasses.replace(self.described, date_format=decided))

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


def _in_currency(table: Relation, currency: str | None) -> Relation:
    """``table`` with the ``currency`` a person gave for the file (``--ledger-currency``): every
    row's where the file has no currency column, else an empty cell's."""
    if currency is None:
        return table
    if "currency" not in table.columns:
        return table.mutate(currency=literal(currency))
    return table.mutate(
        currency=f"CASE WHEN {trimmed(ident('currency'))} = '' THEN {literal(currency)} ELSE currency END"
    )


@dataclass(frozen=True)
class _Evaluated:
    frame: pd.DataFrame
    rejected: pd.DataFrame
    row_count: int
    outside: int


def _evaluate(loaded: LoadedInput, backend: Backend) -> _Evaluated:
    loaded = loaded.with_dates_read(backend)
    query = loaded.rows(backend)
    why, flags = rejection_code(query)
    query = query.mutate(_why=why)
    rows = backend.keep(query, stem="checked")
    checked = Relation(f"SELECT * FROM {rows}", query.columns, (rows,))
    counts = backend.arrow(
        f"SELECT COUNT(*) AS n, {count_if('_outside')} AS outside FROM {rows}"
    ).to_pylist()[0]
    return _Evaluated(
        frame=usable_frame(loaded, backend, checked),
        rejected=rejected_frame(loaded, backend, checked, flags),
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
        usable = usable.mutate(merchantReferenceId=shown_key("_key"), currency="_currency", status="_status")
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
    ``decimal`` (the amounts' decimal mark, ``.`` or ``,``), ``date_format`` (``%d %b %Y``),
    ``timezone`` (of a time written without one) and ``currency`` (of a file without a column)."""

    delimiter: str | None
    encoding: str | None
    sheet: str | int | None
    header_row: int | None
    decimal: str | None
    date_format: str | None
    timezone: str | None
    currency: str | None


def load_payments(
    source: Source,
    *,
    side: str,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    export_format: str | Path | None = None,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """One side of a payments reconciliation (``side`` is ``ledger`` or ``processor``).

    ``carry=False`` reads only the columns the engine needs (faster; nothing is carried).
    ``export_format``: the export's layout by name or TOML file (``exports/``: Stripe, Adyen, DATEV);
    None: recognised from the header, where it is one the toolkit knows.
    ``reading`` says how to read the file where detection is not enough (``Reading``).
    """
    # A float in either amount is refused, under its own name or the one mapped to it.
    amounts = frozenset(
        name
        for canonical in ("amount", "pricingAmount", *SIGNED_COLUMNS)
        for name in (canonical, *SIGNED_COLUMNS.get(canonical, ()), (mapping or {}).get(canonical, canonical))
    )
    described = sources.describe(source, side, amounts, sources.ReadOptions(**reading))
    layout = layout_named(export_format) if export_format else recognised(described.columns, side)
    if layout is not None and layout.side != side:
        raise InputError(
            f"{described.name}: {layout.name} is a layout of a {layout.side}'s file, not a {side}'s"
        )
    laid_amount = layout.mapping(described.columns).get("amount", "") if layout else ""
    if laid_amount and laid_amount.lower() not in amounts:  # its decimal mark read from that column
        amounts |= {laid_amount, laid_amount.lower()}
        described = sources.describe(source, side, amounts, sources.ReadOptions(**reading))
    if layout is not None:
        described = dataclasses.replace(
            described,
            date_format=described.date_format or layout.date_format,
            # A report's own lines (a heading of one cell) may be shorter than its header.
            ragged=bool(layout.skip),
        )
    if side != "ledger":
        return _processor(described, mapping or {}, carry, side, layout)
    return _ledger(described, mapping or {}, carry, layout)


def _processor(
    described: Described, mapping: Mapping[str, str], carry: bool, side: str, layout: Layout | None
) -> LoadedInput:
    """A processor's export: its columns as its ``layout`` maps them (the user's mapping over
    them), its movement ``type`` column found by its usual names (``movements.TYPE_COLUMNS``);
    with one (a settlement or balance report, which lists money that moved) its status column is
    optional, every row then settled; an unsigned Debit/Credit pair signed as the layout says."""
    choices: tuple[str, ...] = ()
    if layout is not None:
        laid = _under(layout.mapping(described.columns), mapping)
        if "merchantReferenceId" not in laid and "merchantReferenceId" not in mapping:
            choices = tuple(layout.key_candidates(described.columns))
            laid |= {"merchantReferenceId": choices[0]} if choices else {}
        mapping = {**laid, **mapping}
    mapping = {**usual_columns(described.columns, mapping, {"type": TYPE_COLUMNS}), **mapping}
    typed = "type" in mapping
    pair = "amount" not in mapping and {"debit", "credit"} <= set(mapping)
    required = tuple(
        c
        for c in REQUIRED_COLUMNS
        if not (typed and c == "status")
        and not (pair and c == "amount")
        and not (c == "currency" and described.currency)
    )
    optional = ("type", *(["status"] if typed else []), *(["debit", "credit"] if pair else []))
    try:
        renames = renames_of(described, mapping, required, side, optional=optional)
    except InputError as exc:
        if layout is None or "merchantReferenceId" in mapping:
            raise
        raise InputError(f"{exc}. {layout.title}: {layout.key_help}") from None
    found = {canonical for _, canonical in renames} | set(described.columns)
    return LoadedInput(
        side=side,
        described=described,
        renames=renames,
        carry=carry,
        booked=None if "status" in found else BOOKED,
        signed="pair" if pair else None,
        typed="type" in found or bool(layout is not None and layout.splits),
        layout=layout,
        key_choices=choices if len(choices) > 1 else (),
    )


def _under(laid: Mapping[str, str], mapping: Mapping[str, str]) -> dict[str, str]:
    """A layout's mapping under the user's: a column the user maps is read as they say only."""
    taken = set(mapping.values())
    return {canonical: column for canonical, column in laid.items() if column not in taken}


def _ledger(
    described: Described, mapping: Mapping[str, str], carry: bool, layout: Layout | None = None
) -> LoadedInput:
    """A ledger as books are kept: without a status column every row is booked (``success``);
    the amount signed by a Debit/Credit pair of columns where it has no amount column, or by a
    Debit/Credit flag (``SIGNED_COLUMNS``, found by their usual names or mapped). Books rarely
    say a movement's kind the processor's way (QuickBooks' ``Transaction Type``): a ``type``
    column is read only when mapped, else a negative amount is money returned. A ``layout``
    (DATEV's booking batch) maps the columns of a bookkeeping export (the user's mapping over it)."""
    facts: tuple[tuple[str, str], ...] = ()
    if layout is not None:
        mapping = {**_under(layout.mapping(described.columns), mapping), **mapping}
        facts = extf_facts(described) if layout.date_year == "extf-header" else ()
    mapping = {**usual_columns(described.columns, mapping, SIGNED_COLUMNS), **mapping}
    own = {name.strip().lower() for name in described.columns}
    pair = "amount" not in mapping and "amount" not in own and {"debit", "credit"} <= set(mapping)
    required = tuple(
        c
        for c in REQUIRED_COLUMNS
        if c != "status" and not (pair and c == "amount") and not (c == "currency" and described.currency)
    )
    optional = ("status", *(SIGNED_COLUMNS if pair else ("debitCredit",)))
    renames = renames_of(described, mapping, required, "ledger", optional=optional)
    found = {canonical for _, canonical in renames} | set(described.columns)
    signed = "pair" if pair else ("flag" if "debitCredit" in found else None)
    return LoadedInput(
        side="ledger",
        described=described,
        renames=renames,
        carry=carry,
        booked=None if "status" in found else BOOKED,
        signed=signed,
        typed="type" in mapping,
        layout=layout,
        facts=facts,
    )


def load_ledger(
    source: Source,
    *,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    export_format: str | Path | None = None,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """The merchant's books: CSV, .xlsx, Parquet (a file, folder or glob) or a frame; a
    bookkeeping export the toolkit knows (DATEV's booking batch) recognised by its header."""
    return load_payments(
        source, side="ledger", mapping=mapping, carry=carry, export_format=export_format, **reading
    )


def load_processor(
    source: Source,
    *,
    mapping: Mapping[str, str] | None = None,
    carry: bool = True,
    export_format: str | Path | None = None,
    **reading: Unpack[Reading],
) -> LoadedInput:
    """The processor side: a settlement export (Stripe's and Adyen's recognised by their header,
    ``exports/``), the journal's payments frame, or a table."""
    return load_payments(
        source, side="processor", mapping=mapping, carry=carry, export_format=export_format, **reading
    )


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
