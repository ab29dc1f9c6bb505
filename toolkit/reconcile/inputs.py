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
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import ibis
import ibis.expr.datatypes as dt
import ibis.expr.types as ir
import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.money import minor_digits
from toolkit.payment_status import PAYMENT_STATUS_LABELS, PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.period import Period, period_bounds
from toolkit.reconcile.period import period_seconds as period_seconds  # re-exported: its home before
from toolkit.reconcile.period import select_period as select_period  # re-exported: its home before
from toolkit.reconcile.sources import Described, Source

#: Columns every payments input must have (after the mapping is applied).
REQUIRED_COLUMNS: tuple[str, ...] = ("merchantReferenceId", "amount", "currency", "status")
#: Columns of a subscription ledger.
SUBSCRIPTION_COLUMNS: tuple[str, ...] = (
    "subscriptionId",
    "merchantReferenceId",
    "priceId",
    "quantity",
    "amount",
    "currency",
    "state",
)
#: Expected states in a subscription ledger.
SUBSCRIPTION_STATES: tuple[str, ...] = ("active", "canceled")
#: Columns of ``LoadedInput.rejected``: the raw text of the row, where it was and why it was refused.
REJECTED_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "amount",
    "currency",
    "status",
    "source_row",
    "detail",
    "source",  # the file, of a folder or glob of files
)
#: int64 holds 18 full decimal digits: integer digits + minor digits may not exceed that.
MAX_DIGITS = 18

# Amount problems, as codes computed in the engine and words said in Python.
_NOT_A_NUMBER, _TOO_MANY_DECIMALS, _TOO_MANY_DIGITS = 1, 2, 3
_AMOUNT_ERRORS: dict[int, str] = {
    _NOT_A_NUMBER: "amount {amount!r} is not a number",
    _TOO_MANY_DECIMALS: "amount {amount!r} has more decimals than {currency} allows ({digits})",
    _TOO_MANY_DIGITS: "amount {amount!r} has too many digits",
}
# Whitespace trimmed from every value (what a spreadsheet or an editor leaves around text).
_SPACE = sources.WHITESPACE
_WHITESPACE = tuple(_SPACE)
#: A number as the engine reads it: a sign, digits and a decimal point, nothing else.
_NUMBER = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)$"


@dataclass(frozen=True)
class Dated:
    """The column a side's rows are dated by, and the cut-off (epoch seconds; None: dated for
    the rate of a payment's day only)."""

    column: str
    cutoff: int | None
    #: Read where ``column`` is empty: the journal's ``requestTime`` (when the payment was sent)
    #: for its payments, whose answers carry no ``createTime``.
    fallback: str | None = None


#: Optional processor columns: what the payment was priced at, when it was charged in another
#: currency (the sandbox's export and the journal's payments frame carry them).
PRICING_COLUMNS: tuple[str, ...] = ("pricingAmount", "pricingCurrency")


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

    def rows(self, backend: Backend) -> ir.Table:
        """Every row, checked: the canonical columns and ``_key``, ``_minor``, ``_currency``,
        ``_digits``, ``_status``, ``_cur`` and ``_st`` (their codes), ``_problem`` (null when usable)
        and ``_rejected``, ``_outside``, ``_ord``,
        ``source_row``, ``_source``, the ``_bad_*`` flags, and the carried columns as text."""
        return self.check(self.read(backend))

    def read(self, backend: Backend) -> ir.Table:
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

    def check(self, table: ir.Table) -> ir.Table:
        """The rows ``read`` gave, checked (see ``rows``)."""
        if self.kind == "payments":
            checked = _check_payments(table, priced=self.side == "processor", decimal=self.described.decimal)
        else:
            checked = _check_subscriptions(table, decimal=self.described.decimal)
        checked = _in_period(checked, self.period, self.source)
        checked = _dated(checked, self.dated)
        return checked.mutate(_rejected=checked._problem.notnull())

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
    rows = backend.keep(loaded.rows(backend), staged=True)
    counts = backend.arrow(
        rows.aggregate(
            rows=rows.count(),
            outside=rows._outside.sum(),
        )
    ).to_pylist()[0]
    return _Evaluated(
        frame=usable_frame(loaded, backend, rows),
        rejected=rejected_frame(loaded, backend, rows),
        row_count=int(counts["rows"]),
        outside=int(counts["outside"] or 0),
    )


def usable_frame(loaded: LoadedInput, backend: Backend, rows: ir.Table) -> pd.DataFrame:
    """The usable rows as pandas: ``merchantReferenceId`` (trimmed), ``amount`` (as written),
    ``amountMinor`` (int64), ``currency`` (categorical), ``status`` (categorical of
    ``PAYMENT_STATUS_NAMES``; ``state`` for subscriptions), ``source_row``, and carried text."""
    usable = rows.filter(~rows._rejected & ~rows._outside).order_by("_ord")
    internal = {c for c in rows.columns if c.startswith("_")}
    if loaded.kind == "payments":
        usable = usable.mutate(
            merchantReferenceId=usable._key, currency=usable._currency, status=usable._status
        )
    else:
        usable = usable.mutate(
            currency=usable._currency, state=_trimmed(usable.state).lower(), quantity=usable._quantity
        )
    usable = usable.mutate(amountMinor=usable._minor)
    first = ["merchantReferenceId", "amount", "amountMinor", "currency", "status", "source_row"]
    if loaded.kind != "payments":
        first = [*SUBSCRIPTION_COLUMNS, "amountMinor", "source_row"]
    rest = [c for c in usable.columns if c not in internal and c not in first]
    table = backend.arrow(usable.select(*first, *rest))
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


def rejected_frame(loaded: LoadedInput, backend: Backend, rows: ir.Table) -> pd.DataFrame:
    """The rejected rows, as written, with every reason each one cannot be used."""
    status = "status" if loaded.kind == "payments" else "state"
    flags = [c for c in rows.columns if c.startswith("_bad_")]
    bad = rows.filter(rows._rejected).order_by("_ord")
    table = backend.arrow(  # the rows may be the checks' stages (``rejected_rows``)
        bad.select(
            "merchantReferenceId",
            "amount",
            "currency",
            status,
            "source_row",
            "_amount_error",
            "_date_text",
            *flags,
            *(["subscriptionId", "quantity"] if loaded.kind != "payments" else []),
            *(["_when_text"] if "_when_text" in rows.columns else []),
            *[c for c in PRICING_COLUMNS if c in rows.columns],
            sources.source_of(loaded.described, bad._ord).name("_file"),
        ),
        staged=True,
    )
    records = table.to_pylist()
    period = loaded.period.column if loaded.period else ""
    dated = loaded.dated.column if loaded.dated else ""
    frame = pd.DataFrame(
        {
            "merchantReferenceId": [r["merchantReferenceId"] for r in records],
            "amount": [r["amount"] for r in records],
            "currency": [r["currency"] for r in records],
            "status": [r[status] for r in records],
            "source_row": np.array([r["source_row"] for r in records], dtype=np.int64),
            "detail": [_reasons(r, status, period, dated, loaded.described.decimal) for r in records],
            "source": [r["_file"] for r in records],
        },
        columns=list(REJECTED_COLUMNS),
    )
    return frame


def _amount_reason(row: dict[str, Any], code: int, decimal: str) -> str:
    """Why an amount cannot be read, with the decimal mark the file was read with when it matters."""
    currency = str(row["currency"] or "").strip(_SPACE).upper()
    digits = minor_digits(currency) if code == _TOO_MANY_DECIMALS else None
    reason = _AMOUNT_ERRORS[code].format(amount=row["amount"], currency=currency, digits=digits)
    if code == _NOT_A_NUMBER and decimal == ",":
        return f"{reason} with a decimal comma (e.g. 1.234,56)"
    written = str(row["amount"] or "").strip(_SPACE)
    if code == _NOT_A_NUMBER and sources.ONE_COMMA.fullmatch(written):  # refused by ``_ungrouped``
        thousand, decimal_text = written.replace(",", ""), written.replace(",", ".")
        return f"{reason} ({thousand} or {decimal_text} {currency}? write {thousand} or {decimal_text})"
    if code == _NOT_A_NUMBER and decimal == sources.POINT_UNDECIDED and sources.ONE_POINT.fullmatch(written):
        return (
            f"amount {written!r} may be {written.replace('.', '')} or {written} {currency}: no amount "
            "of the file's first rows says which decimal mark it uses (--decimal , or --decimal .)"
        )
    if code == _NOT_A_NUMBER and sources.is_comma_decimal(written):
        return f"{reason} (a decimal comma? read the file with the decimal mark ',': --decimal ,)"
    return reason


def _price_problem(amount: str, currency: str) -> int:
    """The problem of a price the engine refused, found again from its text (a rejected row's
    reasons are worded in Python; a column of the check for it cost 10% of a run)."""
    if not re.fullmatch(_NUMBER, amount):
        return _NOT_A_NUMBER
    fraction = amount.partition(".")[2]
    return _TOO_MANY_DECIMALS if fraction[minor_digits(currency) :].strip("0") else _TOO_MANY_DIGITS


def _price_reason(row: dict[str, Any]) -> str:
    """Why a price (``pricingAmount``, ``pricingCurrency``) cannot be used, in the words the
    same fault of ``amount`` gets."""
    amount = str(row.get("pricingAmount") or "").strip(_SPACE)
    currency = str(row.get("pricingCurrency") or "").strip(_SPACE).upper()
    if not currency:
        return f"pricingAmount {amount!r} has no pricingCurrency"
    if not amount:
        return f"pricingCurrency {currency!r} has no pricingAmount"
    if currency not in currency_codes():
        return f"pricingCurrency {currency!r} is not an ISO 4217 code"
    code = _price_problem(amount, currency)
    digits = minor_digits(currency) if code == _TOO_MANY_DECIMALS else None
    reason = _AMOUNT_ERRORS.get(code, _AMOUNT_ERRORS[_NOT_A_NUMBER])
    said = reason.format(amount=amount, currency=currency, digits=digits)
    return said.replace("amount", "pricingAmount", 1)


def _reasons(row: dict[str, Any], status: str, period: str, dated: str = "", decimal: str = ".") -> str:
    """Every reason a row cannot be used, in words (few rows: Python is fine)."""
    parts: list[str] = []
    if row.get("_bad_subscription"):
        parts.append("subscriptionId is empty")
    if row.get("_bad_key"):
        parts.append("merchantReferenceId is empty")
    if row.get("_bad_currency"):
        parts.append(f"currency {row['currency']!r} is not an ISO 4217 code")
    if row.get("_bad_status"):
        parts.append(f"status {row[status]!r} is not one of {', '.join(PAYMENT_STATUS_NAMES)} or 1/2/3/5")
    code = int(row.get("_amount_error") or 0)
    if code in _AMOUNT_ERRORS:
        parts.append(_amount_reason(row, code, decimal))
    if row.get("_bad_quantity"):
        parts.append(f"quantity {row['quantity'].strip(_SPACE)!r} is not a whole number")
    if row.get("_bad_state"):
        parts.append(f"state {row[status].strip(_SPACE)!r} is not active or canceled")
    if row.get("_bad_pricing"):
        parts.append(_price_reason(row))
    if row.get("_bad_when"):
        parts.append(
            f"{dated} {str(row['_when_text']).strip(_SPACE)!r} is not a date or time (e.g. 2024-05-31, "
            "31.05.2024, or epoch milliseconds)"
        )
    if row.get("_bad_date"):
        text = str(row["_date_text"]).strip(_SPACE)
        parts.append(
            f"{period} {text!r} is not a date or time (e.g. 2024-05-31, 31.05.2024, or epoch milliseconds)"
            if text
            else f"{period} is empty"
        )
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Checks, as relational expressions (the same on every backend)


@functools.cache
def currency_codes() -> tuple[str, ...]:
    """Every ISO 4217 code, sorted: a currency's place here is its ``_cur`` code in the engine."""
    from toolkit.money import _known_currencies

    return tuple(sorted(c for c in _known_currencies() if len(c) == 3 and c.isalpha() and c.isupper()))


def currency_table() -> pa.Table:
    """Every ISO 4217 code with its ``_cur`` code and its minor digits."""
    codes = currency_codes()
    return pa.table(
        {
            "_iso": codes,
            "_iso_code": pa.array(range(len(codes)), pa.int16()),
            "_iso_digits": pa.array([minor_digits(c) for c in codes], pa.int64()),
        }
    )


#: The most minor digits of any currency (CLF, UYW: 4): a fraction is padded with this many zeros.
_MOST_DIGITS = max(minor_digits(c) for c in currency_codes())


def _status_table() -> pa.Table:
    """Each way a status may be written, with its name and its ``_st`` code (its place in
    ``PAYMENT_STATUS_NAMES``)."""
    names = {name: name for name in PAYMENT_STATUS_NAMES}
    names |= {str(code): name for code, name in PAYMENT_STATUS_LABELS.items()}
    return pa.table(
        {
            "_written": list(names),
            "_name": list(names.values()),
            "_code": pa.array([PAYMENT_STATUS_NAMES.index(n) for n in names.values()], pa.int8()),
        }
    )


def _trimmed(value: ir.StringValue) -> ir.StringValue:
    """Without the whitespace around it (spaces, tabs, line breaks).

    The regular expression runs only on the few values that start or end with whitespace.
    Not Ibis's ``strip``: on Spark it writes its characters as ``\\v\\f`` escapes that Spark SQL
    reads as the letters v and f. Patterns hold no backslash for the same reason (Spark SQL drops
    an unknown escape's backslash): ``[.]``, not ``\\.``.
    """
    # Strings compare by their bytes on both backends: a value below "!" is empty or starts with
    # a control character or a space, one comparison where four prefix tests took three times
    # as long (the regular expression then trims only whitespace, as before).
    padded = value < "!"
    for space in _WHITESPACE:  # suffix tests compare bytes: far cheaper than substr
        padded |= value.endswith(space)
    return padded.ifelse(value.re_replace(f"^[{_SPACE}]+|[{_SPACE}]+$", ""), value)


def parse_amounts(
    table: ir.Table,
    text: str,
    digits: str,
    *,
    minor: str = "_minor",
    problem: str = "_amount_problem",
    decimal: str = ".",
) -> ir.Table:
    """``table`` with the columns ``minor`` (exact integer minor units of the amount in column
    ``text``, or null) and ``problem`` (0 ok, 1 not a number, 2 more decimals than the currency's
    ``digits`` allow, 3 too many digits for exact integers).

    One regular expression says whether the text is a number. An amount with no more decimals
    than its currency has (almost all) is read as a ``DECIMAL(18, digits)``, which holds it
    exactly, and multiplied out into minor units. Any other (``12.300`` USD) is read by string
    operations: the digits before the point followed by those after it, padded with zeros (or
    cut, when the cut digits are zeros) to the currency's digits, as one integer. No float, no
    rounding, either way. Built in stages, each a select of its own (compiled unfused:
    ``Backend.keep``'s ``staged``), so that every value is computed once.
    """
    written = _trimmed(table[text])
    point = decimal in (".", sources.POINT_UNDECIDED)
    t = table.mutate(_w=written if point else _point_decimal(written))
    is_number = t._w.re_search(_NUMBER)
    if decimal == sources.POINT_UNDECIDED:
        is_number &= ~t._w.re_search(f"^{sources.ONE_POINT.pattern}$")
    t = t.mutate(_is_number=is_number)
    if point:
        t = _ungrouped(t, t[digits])
    t = t.mutate(_dot=t._w.find("."), _signed=(t._w.startswith("-") | t._w.startswith("+")).ifelse(1, 0))
    t = t.mutate(
        _whole_len=(t._dot >= 0).ifelse(t._dot, t._w.length()) - t._signed,
        _fraction_len=(t._dot >= 0).ifelse(t._w.length() - t._dot - 1, 0),
    )
    d = t[digits]
    cut = t._w.substr(t._w.length() - (t._fraction_len - d)).replace("0", "")
    # Zeros that change nothing (``0012``, ``12.300000000000000000``, as a DECIMAL(38, 18) is
    # written) do not count as digits; they are looked for only in the rare long amounts.
    leading_zeros = t._w.length() - t._signed - t._w.re_replace("^[+-]?0*", "").length()
    significant = t._whole_len - leading_zeros + d > MAX_DIGITS
    t = t.mutate(
        _problem_code=ibis.cases(
            (~t._is_number, _NOT_A_NUMBER),
            (
                t._whole_len + ibis.greatest(t._fraction_len, d) <= MAX_DIGITS,
                ibis.cases((t._fraction_len <= d, 0), (cut.length() > 0, _TOO_MANY_DECIMALS), else_=0),
            ),
            (
                t._fraction_len > d,
                ibis.cases((cut.length() > 0, _TOO_MANY_DECIMALS), (significant, _TOO_MANY_DIGITS), else_=0),
            ),
            (significant, _TOO_MANY_DIGITS),
            else_=0,
        ),
    )
    d = t[digits]
    # DECIMAL(18, n) times 10 ** n keeps n decimals: at most 18 - 2n integer digits fit it.
    by_decimal = [
        (
            (d == n) & (t._fraction_len <= n) & (t._whole_len <= MAX_DIGITS - 2 * n),
            (t._w.try_cast(dt.Decimal(MAX_DIGITS, n)) * 10**n).cast("int64"),
        )
        for n in range(_MOST_DIGITS + 1)
    ]
    return (
        t.mutate(
            **{
                minor: ibis.cases(
                    (t._problem_code != 0, ibis.null("int64")),
                    *by_decimal,
                    else_=_minor_by_text(t, d, t._problem_code == 0),
                )
            }
        )
        .rename(**{problem: "_problem_code"})
        .drop("_w", "_is_number", "_dot", "_signed", "_whole_len", "_fraction_len")
    )


def _ungrouped(t: ir.Table, digits: ir.IntegerValue) -> ir.Table:
    """Point-decimal amounts with their thousands grouped (``1,234.56``, ``1 234``, ``1'234.5``,
    as an English or Swiss export writes them) read as numbers, their grouping checked and
    dropped; looked at only where ``_is_number`` failed on some text. ``1,234`` alone stays
    refused for a currency of three decimals, where it may be 1.234 with a decimal comma."""
    grouping = "," + sources.GROUPING
    grouped = t._w.re_search(f"^[+-]?{sources.grouped_whole(grouping)}([.][0-9]*)?$")
    one_comma = t._w.re_search(f"^{sources.ONE_COMMA.pattern}$")  # 1,234: grouped, or a decimal comma
    readable = grouped & ~(one_comma & (digits >= 3))
    settled = t._is_number | (t._w == "")  # a number, or no text (an empty price): nothing to try
    return t.mutate(
        _w=settled.ifelse(t._w, readable.ifelse(t._w.re_replace(f"[{grouping}]", ""), t._w)),
        _is_number=settled.ifelse(t._is_number, readable),
    )


def _point_decimal(written: ir.StringValue) -> ir.StringValue:
    """A decimal-comma amount (``1.234,56``, ``1 234,5``, ``-12,50``) as the point-decimal text
    the parser reads: its grouping checked and dropped, its comma a point. Any other text (a
    ``12.50`` included: which mark is meant?) becomes one the parser refuses as not a number."""
    grouping = "." + sources.GROUPING
    pattern = f"^[+-]?({sources.grouped_whole(grouping)}|[0-9]*)(,[0-9]*)?$"
    plain = written.re_replace(f"[{grouping}]", "").replace(",", ".")
    return written.re_search(pattern).ifelse(plain, ibis.literal("?"))


def _minor_by_text(t: ir.Table, digits: ir.IntegerValue, readable: ir.BooleanValue) -> ir.IntegerValue:
    """Minor units of a number's text, by string operations (for the amounts the decimal path
    does not take): the integer digits and the decimals padded to ``digits``, as one integer.
    ``t`` has ``parse_amounts``'s stages: ``_w`` (the text), ``_signed``, ``_whole_len`` (its
    integer digits) and ``_fraction_len``."""
    whole = t._w.substr(t._signed, t._whole_len)
    decimals = t._w.substr(t._signed + t._whole_len + 1, t._fraction_len)
    kept = (decimals + "0" * _MOST_DIGITS).substr(0, digits)
    # Cast only what is known to fit: a long text would fail the cast on some backends.
    units = readable.ifelse("0" + whole + kept, "0").cast("int64")
    return t._w.startswith("-").ifelse(-units, units)


def _with_currency(table: ir.Table) -> ir.Table:
    """``_currency`` (trimmed, uppercase), its ``_cur`` code and ``_digits`` (both null for a code
    that is not ISO 4217)."""
    table = table.mutate(_currency=_trimmed(table.currency).upper())
    return _currency_codes(table, "_currency", code="_cur", digits="_digits")


def _currency_codes(table: ir.Table, column: str, *, code: str, digits: str) -> ir.Table:
    """``table`` with the ``_cur`` code and the minor digits of the ISO 4217 code in ``column``
    (as ``code`` and ``digits``; both null for a code that is not ISO 4217)."""
    iso = ibis.memtable(currency_table())
    joined = table.left_join(iso, table[column] == iso._iso)
    return joined.mutate(**{code: joined._iso_code, digits: joined._iso_digits}).drop(
        "_iso", "_iso_code", "_iso_digits"
    )


def _check_payments(table: ir.Table, *, priced: bool = False, decimal: str = ".") -> ir.Table:
    """Key, amount, currency and status of every row, each checked; with ``priced`` (the
    processor's side) also its price, where it has one."""
    raw_key = table.merchantReferenceId
    # The toolkit's CSV files guard a cell a spreadsheet would run ('=1+1): read back the key.
    # Compared one by one behind the quote: a list (``isin``) becomes a join on DuckDB.
    second = raw_key.substr(1, 1)
    spreadsheet = ibis.literal(False)
    for mark in ("=", "+", "-", "@", "\t", "\r"):
        spreadsheet |= second == mark
    guarded = ibis.cases((raw_key.startswith("'"), spreadsheet), else_=False)
    table = table.mutate(_unguarded=guarded.ifelse(raw_key.substr(1), raw_key))
    key = _trimmed(table._unguarded)
    table = _with_currency(table.mutate(_key=key).drop("_unguarded"))
    statuses = ibis.memtable(_status_table())
    table = _join_status(table.mutate(_written=_trimmed(table.status).lower()), statuses)
    table = parse_amounts(
        table.mutate(_places=table._digits.fill_null(0)), "amount", "_places", decimal=decimal
    )
    table = _with_pricing(table.drop("_places"), priced=priced, decimal=decimal)
    table = table.mutate(
        _bad_key=table._key.length() == 0,
        _bad_currency=table._digits.isnull(),
        _bad_status=table._status.isnull(),
        _amount_error=table._digits.isnull()
        .ifelse((table._amount_problem == _NOT_A_NUMBER).ifelse(_NOT_A_NUMBER, 0), table._amount_problem)
        .cast("int8"),
    )
    bad = (
        table._bad_key
        | table._bad_currency
        | table._bad_status
        | (table._amount_error != 0)
        | table._bad_pricing
    )
    return table.mutate(
        _problem=bad.ifelse(ibis.literal("rejected"), ibis.null("string")),
        _minor=bad.ifelse(ibis.null("int64"), table._minor),
        _pminor=bad.ifelse(ibis.null("int64"), table._pminor),
    ).drop("_amount_problem")


def _with_pricing(table: ir.Table, *, priced: bool, decimal: str = ".") -> ir.Table:
    """``_pminor`` and ``_pcur``: the price of a payment charged in another currency, from the
    optional ``pricingAmount`` and ``pricingCurrency`` (null when absent, empty, or the same
    currency as the charge, which adds nothing to compare). A price that is given but cannot be
    read rejects the row (``_bad_pricing``): a wrong price must not make a match. So does half a
    price: an amount without its currency, or a currency other than the charge's without an
    amount (an export cut short, not a payment without one)."""
    if not priced or not set(PRICING_COLUMNS) <= set(table.columns):
        return table.mutate(
            _pminor=ibis.null("int64"),
            _pcur=ibis.null("int16"),
            _bad_pricing=ibis.literal(False),
        )
    table = table.mutate(
        _pcurrency=_trimmed(table.pricingCurrency).upper(), _ptext=_trimmed(table.pricingAmount)
    )
    currency, written = table._pcurrency, table._ptext
    present = (currency.length() > 0) & (written.length() > 0) & (currency != table._currency)
    half = ((written.length() > 0) & (currency.length() == 0)) | (
        (currency.length() > 0) & (written.length() == 0) & (currency != table._currency)
    )
    with_price = table.mutate(
        _pcurrency=present.ifelse(currency, ibis.null("string")),
        _ptext=present.ifelse(written, ibis.null("string")),
        _half_price=half.fill_null(False),
    )
    joined = _currency_codes(with_price, "_pcurrency", code="_p_iso_code", digits="_p_digits")
    joined = joined.mutate(_pplaces=joined._p_digits.fill_null(0))
    parsed = parse_amounts(
        joined, "_ptext", "_pplaces", minor="_pminor", problem="_p_problem", decimal=decimal
    )
    unreadable = parsed._pcurrency.notnull() & (parsed._p_digits.isnull() | (parsed._p_problem != 0))
    bad = unreadable.fill_null(False) | parsed._half_price
    return parsed.mutate(
        _pcur=bad.ifelse(ibis.null("int16"), parsed._p_iso_code),
        _pminor=bad.ifelse(ibis.null("int64"), parsed._pminor),
        _bad_pricing=bad,
    ).drop("_pcurrency", "_ptext", "_p_iso_code", "_p_digits", "_pplaces", "_p_problem", "_half_price")


def _join_status(table: ir.Table, statuses: ir.Table) -> ir.Table:
    joined = table.left_join(statuses, table._written == statuses._written)
    return joined.mutate(_status=joined._name, _st=joined._code).drop(
        *[c for c in joined.columns if c in ("_written", "_written_right", "_name", "_code")]
    )


def _check_subscriptions(table: ir.Table, *, decimal: str = ".") -> ir.Table:
    """A subscription ledger's rows: id, amount, currency, quantity and state checked."""
    table = _with_currency(table)
    table = parse_amounts(
        table.mutate(_places=table._digits.fill_null(0)), "amount", "_places", decimal=decimal
    )
    quantity = _trimmed(table.quantity)
    good_quantity = quantity.re_search(r"^[0-9]{1,18}$")
    table = table.drop("_places").mutate(
        _quantity=good_quantity.ifelse(quantity, ibis.literal("0")).cast("int64"),
        _bad_subscription=_trimmed(table.subscriptionId).length() == 0,
        _bad_currency=table._digits.isnull(),
        _bad_quantity=~good_quantity,
        _bad_state=~_trimmed(table.state).lower().isin(list(SUBSCRIPTION_STATES)),
        merchantReferenceId=table.merchantReferenceId,
    )
    table = table.mutate(
        _amount_error=table._digits.isnull()
        .ifelse((table._amount_problem == _NOT_A_NUMBER).ifelse(_NOT_A_NUMBER, 0), table._amount_problem)
        .cast("int8")
    )
    bad = (
        table._bad_subscription
        | table._bad_currency
        | table._bad_quantity
        | table._bad_state
        | (table._amount_error != 0)
    )
    return table.mutate(
        _problem=bad.ifelse(ibis.literal("rejected"), ibis.null("string")),
        _minor=bad.ifelse(ibis.null("int64"), table._minor),
    ).drop("_amount_problem")


#: The dates and times both backends read alike (each reads more, not the same more: DuckDB
#: takes 24:00 and Spark a zone written against the time, ``10:00UTC``, or a space before an
#: offset): a date, then a time with or without seconds and fractions, then ``Z``, an offset
#: (``+02:00``, ``+0200``, ``+02``) or, after a space, a zone's name (``UTC``, ``Europe/Paris``).
_ISO_WHEN = (
    "^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    "([T ]([01]?[0-9]|2[0-3]):[0-9]{1,2}(:[0-9]{1,2}([.][0-9]+)?)?"
    "(Z|[+-][0-9]{2}(:?[0-9]{2})?| [A-Za-z][A-Za-z0-9_/+-]*)?)?$"
)


#: A date as German, Swiss or Austrian Excel writes it, day first with dots (``31.05.2025``, with
#: a time ``31.05.2025 21:30``): read as that day. A date with slashes stays refused: ``05/04``
#: is the 5th of April or the 4th of May, depending on who wrote it.
_DOTTED_WHEN = "^([0-9]{1,2})[.]([0-9]{1,2})[.]([0-9]{4})( ([01]?[0-9]|2[0-3]):[0-9]{1,2}(:[0-9]{1,2})?)?$"


def with_epoch_seconds(table: ir.Table, column: str, out: str) -> ir.Table:
    """``table`` with ``out``: the text of ``column``, trimmed by the caller (once per row), as
    seconds since the epoch, UTC (null when unreadable): ISO dates or times, day-first dotted
    dates (``_DOTTED_WHEN``), or epoch milliseconds. Seconds, not a timestamp: Spark has no
    timestamp from milliseconds, and whole seconds compare and subtract alike everywhere. Cut,
    never rounded, to the second (milliseconds lose their last three digits as text). Built in
    stages (each a select of its own, as ``parse_amounts``) so that each value is computed once
    per row. Each pattern is tried only on the rows the ones before did not read: a file is
    almost always written in one form, and each pattern tried costs every row a match."""
    t = table.mutate(_epoch=table[column].re_search(r"^[0-9]{11,18}$"))
    text = t[column]
    t = t.mutate(_iso=t._epoch.ifelse(False, text.re_search(_ISO_WHEN)))
    text = t[column]
    t = t.mutate(_dotted=(t._epoch | t._iso).ifelse(False, text.re_search(_DOTTED_WHEN)))
    text = t[column]
    millis = t._epoch.ifelse(text.substr(0, text.length() - 3), ibis.null("string")).cast("int64")
    day, month, year, time = (text.re_extract(_DOTTED_WHEN, group) for group in (1, 2, 3, 4))
    iso = t._dotted.ifelse(year + "-" + month + "-" + day + time, t._iso.ifelse(text, ibis.null("string")))
    parsed = iso.try_cast("timestamp('UTC')")
    whole = parsed.truncate("s").epoch_seconds().cast("int64")
    return t.mutate(**{out: t._epoch.ifelse(millis, whole)}).drop("_epoch", "_iso", "_dotted")


def _in_period(table: ir.Table, period: Period | None, name: str) -> ir.Table:
    """``_outside`` and the date check of usable rows (a row without a readable date cannot be
    placed in or out of the period: it is rejected). A row dated outside the period is outside
    whatever else is wrong with it: the run of its own period lists it, and an old bad row of a
    ledger that grows does not fail every later run."""
    if period is None:
        return table.mutate(
            _outside=ibis.literal(False),
            _bad_date=ibis.literal(False),
            _date_text=ibis.literal(""),
            _day=ibis.null("int64"),
        )
    if period.column not in table.columns:
        raise InputError(
            f"{name}: no {period.column!r} column to select the period "
            f"{period.start or '...'} to {period.end or '...'} by"
        )
    lower, upper = period_bounds(period.start, period.end)
    table = table.mutate(_period_text=_trimmed(table[period.column]))
    table = with_epoch_seconds(table, "_period_text", "_period_when")
    when = table._period_when
    usable = table._problem.isnull()
    inside = ibis.literal(True)
    if lower is not None:
        inside &= when >= int(lower.timestamp())
    if upper is not None:
        inside &= when < int(upper.timestamp())
    unreadable = usable & when.isnull()
    outside = (when.notnull() & ~inside).fill_null(False)
    problem = unreadable.ifelse(ibis.literal("rejected"), table._problem)
    return table.mutate(
        _bad_date=unreadable,
        _date_text=table[period.column],
        _problem=outside.ifelse(ibis.null("string"), problem),
        _outside=outside,
        _day=when,
    ).drop("_period_text", "_period_when")


def _dated(table: ir.Table, dated: Dated | None) -> ir.Table:
    """``_when`` (epoch seconds, null when the row has no date), ``_after`` (usable and dated
    after the cut-off) and ``_bad_when``: a date that is written but cannot be read rejects the
    row (it cannot be placed before or after the cut-off); an empty one leaves it undated, so
    that the timing rules leave it as it was (an unknown payment has no processor time)."""
    if dated is None:
        return table.mutate(
            _when=ibis.null("int64"), _after=ibis.literal(False), _bad_when=ibis.literal(False)
        )
    table = table.mutate(_when_text=_trimmed(table[dated.column]))
    if dated.fallback is not None and dated.fallback in table.columns:
        empty = table._when_text.isnull() | (table._when_text.length() == 0)
        fallback = _trimmed(table[dated.fallback])
        table = table.mutate(_when_text=empty.ifelse(fallback, table._when_text))
    table = with_epoch_seconds(table, "_when_text", "_when_read")
    usable = table._problem.isnull() & ~table._outside
    unreadable = usable & (table._when_text.length() > 0) & table._when_read.isnull()
    table = table.mutate(_usable=usable, _bad_when=unreadable.fill_null(False))
    when, usable = table._when_read, table._usable
    return table.mutate(
        _when=table._bad_when.ifelse(ibis.null("int64"), when),
        _problem=table._bad_when.ifelse(ibis.literal("rejected"), table._problem),
        _after=ibis.literal(False)
        if dated.cutoff is None
        else (usable & ~table._bad_when & (when > dated.cutoff)).fill_null(False),
    ).drop("_when_read", "_usable")


# ---------------------------------------------------------------------------------------------
# Loading


def _renames(
    described: Described, mapping: Mapping[str, str] | None, required: tuple[str, ...], side: str
) -> tuple[tuple[str, str], ...]:
    """The user's column names -> canonical names; every required column must be there.

    A required column that is missing is taken from the one column whose name differs from it
    only in case (``Amount`` for ``amount``); otherwise the error lists the file's columns, the
    closest name and the mapping that would fix it.
    """
    names = list(described.columns)
    renames: dict[str, str] = {}
    if mapping:
        for canonical, own in mapping.items():
            if own not in names:
                raise InputError(
                    f"{described.name}: column {own!r} (mapped to {canonical!r}) not found"
                    f"{_closest_text(own, names)}; the file's columns are {_listed(names)}"
                )
            renames[own] = canonical
        for column in names:
            if column not in renames and column in mapping:  # a canonical name mapped elsewhere
                renames[column] = f"{column} (original)"
    final = [renames.get(n, n) for n in names]
    missing = []
    for column in required:
        if column in final:
            continue
        free = [n for n in names if n not in renames and n not in required]
        same = [n for n in free if n.strip().lower() == column.lower()]
        if len(same) == 1:
            renames[same[0]] = column
            final = [renames.get(n, n) for n in names]
        else:
            missing.append(column)
    if missing:
        raise InputError(column_error(described.name, missing, names, side) + _mistyped(mapping, missing))
    return tuple((own, canonical) for own, canonical in renames.items() if own != canonical)


def _mistyped(mapping: Mapping[str, str] | None, missing: list[str]) -> str:
    """A map's keys are the toolkit's names: a key close to a missing one is a typo, said as such
    (the map is not wrong about the file's column, which exists)."""
    for key in mapping or {}:
        close = difflib.get_close_matches(key, missing, n=1, cutoff=0.6)
        if close and key not in missing:
            return f"; the map's {key!r} is not a name the toolkit reads: did you mean {close[0]!r}?"
    return ""


def closest_column(canonical: str, names: Sequence[str]) -> str | None:
    """The file's column most like ``canonical``: the same but for case, else the closest (difflib)."""
    by_lower: dict[str, list[str]] = {}
    for name in names:
        by_lower.setdefault(name.strip().lower(), []).append(name)
    same = by_lower.get(canonical.lower(), [])
    if same:
        return same[0]
    close = difflib.get_close_matches(canonical.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]][0] if close else None


def map_option(side: str) -> str:
    """The command-line option that maps ``side``'s columns."""
    return {"ledger": "--ledger-map", "processor": "--processor-map"}.get(side, "mapping")


def mapping_text(pairs: Mapping[str, str]) -> str:
    """A mapping as ``--ledger-map`` takes it: ``amount=Total,currency=Cur``, or JSON for names
    with ``=``, ``,``, quotes or spaces at their ends."""
    plain = all(
        not set(k + v) & set("=,\"'") and k == k.strip() and v == v.strip() and v for k, v in pairs.items()
    )
    if plain:
        return ",".join(f"{k}={v}" for k, v in pairs.items())
    return "'" + json.dumps(dict(pairs)).replace("'", "'\\''") + "'"


def column_error(name: str, missing: Sequence[str], names: Sequence[str], side: str) -> str:
    """One line: what is missing, the file's columns, the closest names and the fixing mapping."""
    what = ", ".join(repr(c) for c in missing)
    plural = "s" if len(missing) > 1 else ""
    text = f"{name}: required column{plural} {what} missing; the file's columns are {_listed(names)}"
    ambiguous = [c for c in missing if sum(n.strip().lower() == c.lower() for n in names) > 1]
    if ambiguous:
        text += f"; {ambiguous[0]!r} matches several columns but for case"
    closest = {c: closest_column(c, names) for c in missing}
    found = {c: n for c, n in closest.items() if n is not None}
    if found:
        text += "; closest: " + ", ".join(f"{n!r} for {c!r}" for c, n in found.items())
    hint = {c: found.get(c, "COLUMN") for c in missing}
    text += (
        f"; to read the file's column as the required one, {map_option(side)} {mapping_text(hint)} "
        "(required name = the file's column name)"
    )
    return text


def _closest_text(own: str, names: Sequence[str]) -> str:
    close = closest_column(own, names)
    return f" (did you mean {close!r}?)" if close else ""


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "(none)"


class Reading(TypedDict, total=False):
    """How to read a file where detection is not enough (``sources.ReadOptions``): ``delimiter``,
    ``encoding`` (CSV), ``sheet`` (Excel: name or 1-based number), ``header_row`` (1-based) and
    ``decimal`` (the amounts' decimal mark, ``.`` or ``,``)."""

    delimiter: str | None
    encoding: str | None
    sheet: str | int | None
    header_row: int | None
    decimal: str | None


def parse_mapping(text: str | None, option: str) -> dict[str, str] | None:
    """A mapping as the command and the notebook take it: ``amount=Total,currency=Cur`` or JSON
    (``{"amount": "Total"}``); None or blank: no mapping. ``option`` names it in the error."""
    if text is None or not text.strip():
        return None
    if not text.lstrip().startswith("{"):
        pairs = [p.partition("=") for p in text.split(",") if p.strip()]
        if pairs and all(sep and k.strip() and v.strip() for k, sep, v in pairs):
            return {k.strip(): v.strip() for k, _, v in pairs}
        raise InputError(
            f"{option}: give required=file column pairs, e.g. amount=Total,currency=Cur, "
            'or JSON, e.g. \'{"amount": "Total"}\''
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InputError(f'{option}: must be a JSON object of column names, e.g. {{"amount": "Total"}}')
    return value


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
    renames = _renames(described, mapping, REQUIRED_COLUMNS, side)
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
    renames = _renames(described, mapping, SUBSCRIPTION_COLUMNS, "subscription ledger")
    return LoadedInput(side="subscription ledger", described=described, kind="subscriptions", renames=renames)
