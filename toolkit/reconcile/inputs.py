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

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.money import minor_digits
from toolkit.payment_status import PAYMENT_STATUS_LABELS, PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend, Kept, connect
from toolkit.reconcile.period import Period, period_bounds
from toolkit.reconcile.period import period_seconds as period_seconds  # re-exported: its home before
from toolkit.reconcile.period import select_period as select_period  # re-exported: its home before
from toolkit.reconcile.relation import Relation, count_if, ident, literal
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
            checked = _check_payments(backend, table, priced=self.side == "processor", decimal=decimal)
        else:
            checked = _check_subscriptions(backend, table, decimal=decimal)
        checked = _in_period(checked, self.period, self.source)
        checked = _dated(checked, self.dated)
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
            currency="_currency", state=f"LOWER({_trimmed(ident('state'))})", quantity="_quantity"
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


def rejected_frame(loaded: LoadedInput, backend: Backend, rows: Relation) -> pd.DataFrame:
    """The rejected rows, as written, with every reason each one cannot be used."""
    status = "status" if loaded.kind == "payments" else "state"
    flags = [c for c in rows.columns if c.startswith("_bad_")]
    columns = [
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
    ]
    file = sources.source_sql(loaded.described, "_ord")
    table = backend.arrow(  # the rows may be the checks' stages (``rejected_rows``)
        f"SELECT {', '.join(ident(c) for c in columns)}, {file} AS _file FROM ({rows}) "
        "WHERE _rejected ORDER BY _ord"
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


def _trimmed(value: str) -> str:
    """Without the whitespace around it (spaces, tabs, line breaks).

    The regular expression runs only on the few values that start or end with whitespace.
    Patterns hold no backslash (Spark SQL drops an unknown escape's backslash): ``[.]``, not
    ``\\.``; the whitespace characters themselves are written, and sqlglot escapes them for Spark.
    """
    # Strings compare by their bytes on both backends: a value below "!" is empty or starts with
    # a control character or a space, one comparison where four prefix tests took three times
    # as long (the regular expression then trims only whitespace, as before).
    padded = " OR ".join([f"{value} < '!'", *(f"ENDS_WITH({value}, '{space}')" for space in _WHITESPACE)])
    trim = f"REGEXP_REPLACE({value}, '^[{_SPACE}]+|[{_SPACE}]+$', '', 'g')"
    return f"CASE WHEN {padded} THEN {trim} ELSE {value} END"


def _matches(value: str, pattern: str) -> str:
    return f"REGEXP_MATCHES({value}, {literal(pattern)})"


def parse_amounts(
    table: Relation,
    text: str,
    digits: str,
    *,
    minor: str = "_minor",
    problem: str = "_amount_problem",
    decimal: str = ".",
) -> Relation:
    """``table`` with the columns ``minor`` (exact integer minor units of the amount in column
    ``text``, or null) and ``problem`` (0 ok, 1 not a number, 2 more decimals than the currency's
    ``digits`` allow, 3 too many digits for exact integers).

    One regular expression says whether the text is a number. An amount with no more decimals
    than its currency has (almost all) is read as a ``DECIMAL(18, digits)``, which holds it
    exactly, and multiplied out into minor units. Any other (``12.300`` USD) is read by string
    operations: the digits before the point followed by those after it, padded with zeros (or
    cut, when the cut digits are zeros) to the currency's digits, as one integer. No float, no
    rounding, either way. Built in stages, each a select of its own, so that every value is
    computed once.
    """
    written = _trimmed(ident(text))
    point = decimal in (".", sources.POINT_UNDECIDED)
    t = table.mutate(_w=written if point else _point_decimal(written))
    is_number = _matches("_w", _NUMBER)
    if decimal == sources.POINT_UNDECIDED:
        is_number = f"({is_number} AND NOT {_matches('_w', f'^{sources.ONE_POINT.pattern}$')})"
    t = t.mutate(_is_number=is_number)
    d = ident(digits)
    if point:
        t = _ungrouped(t, d)
    t = t.mutate(
        _dot="STRPOS(_w, '.') - 1",
        _signed="CASE WHEN STARTS_WITH(_w, '-') OR STARTS_WITH(_w, '+') THEN 1 ELSE 0 END",
    )
    t = t.mutate(
        _whole_len="CASE WHEN _dot >= 0 THEN _dot ELSE LENGTH(_w) END - _signed",
        _fraction_len="CASE WHEN _dot >= 0 THEN LENGTH(_w) - _dot - 1 ELSE 0 END",
    )
    cut = f"LENGTH(REPLACE(SUBSTRING(_w, LENGTH(_w) - (_fraction_len - {d}) + 1), '0', ''))"
    # Zeros that change nothing (``0012``, ``12.300000000000000000``, as a DECIMAL(38, 18) is
    # written) do not count as digits; they are looked for only in the rare long amounts.
    leading_zeros = "(LENGTH(_w) - _signed - LENGTH(REGEXP_REPLACE(_w, '^[+-]?0*', '', 'g')))"
    significant = f"(_whole_len - {leading_zeros} + {d} > {MAX_DIGITS})"
    longer = (
        f"(CASE WHEN {cut} > 0 THEN {_TOO_MANY_DECIMALS} WHEN {significant} THEN {_TOO_MANY_DIGITS} "
        "ELSE 0 END)"
    )
    t = t.mutate(
        _problem_code=(
            f"CASE WHEN NOT _is_number THEN {_NOT_A_NUMBER} "
            f"WHEN _whole_len + GREATEST(_fraction_len, {d}) <= {MAX_DIGITS} THEN "
            f"(CASE WHEN _fraction_len <= {d} THEN 0 WHEN {cut} > 0 THEN {_TOO_MANY_DECIMALS} ELSE 0 END) "
            f"WHEN _fraction_len > {d} THEN {longer} "
            f"WHEN {significant} THEN {_TOO_MANY_DIGITS} ELSE 0 END"
        )
    )
    # DECIMAL(18, n) times 10 ** n keeps n decimals: at most 18 - 2n integer digits fit it.
    by_decimal = " ".join(
        f"WHEN {d} = {n} AND _fraction_len <= {n} AND _whole_len <= {MAX_DIGITS - 2 * n} "
        f"THEN CAST(TRY_CAST(_w AS DECIMAL({MAX_DIGITS}, {n})) * {10**n} AS BIGINT)"
        for n in range(_MOST_DIGITS + 1)
    )
    value = (
        f"CASE WHEN _problem_code <> 0 THEN CAST(NULL AS BIGINT) {by_decimal} ELSE {_minor_by_text(d)} END"
    )
    return (
        t.mutate(**{minor: value})
        .rename({problem: "_problem_code"})
        .drop("_w", "_is_number", "_dot", "_signed", "_whole_len", "_fraction_len")
    )


def _ungrouped(t: Relation, digits: str) -> Relation:
    """Point-decimal amounts with their thousands grouped (``1,234.56``, ``1 234``, ``1'234.5``,
    as an English or Swiss export writes them) read as numbers, their grouping checked and
    dropped; looked at only where ``_is_number`` failed on some text. ``1,234`` alone stays
    refused for a currency of three decimals, where it may be 1.234 with a decimal comma."""
    grouping = "," + sources.GROUPING
    grouped = _matches("_w", f"^[+-]?{sources.grouped_whole(grouping)}([.][0-9]*)?$")
    one_comma = _matches("_w", f"^{sources.ONE_COMMA.pattern}$")  # 1,234: grouped, or a decimal comma
    readable = f"({grouped} AND NOT ({one_comma} AND {digits} >= 3))"
    settled = "(_is_number OR _w = '')"  # a number, or no text (an empty price): nothing to try
    plain = f"REGEXP_REPLACE(_w, {literal(f'[{grouping}]')}, '', 'g')"
    return t.mutate(
        _w=f"CASE WHEN {settled} THEN _w WHEN {readable} THEN {plain} ELSE _w END",
        _is_number=f"CASE WHEN {settled} THEN _is_number ELSE {readable} END",
    )


def _point_decimal(written: str) -> str:
    """A decimal-comma amount (``1.234,56``, ``1 234,5``, ``-12,50``) as the point-decimal text
    the parser reads: its grouping checked and dropped, its comma a point. Any other text (a
    ``12.50`` included: which mark is meant?) becomes one the parser refuses as not a number."""
    grouping = "." + sources.GROUPING
    pattern = f"^[+-]?({sources.grouped_whole(grouping)}|[0-9]*)(,[0-9]*)?$"
    plain = f"REPLACE(REGEXP_REPLACE({written}, {literal(f'[{grouping}]')}, '', 'g'), ',', '.')"
    return f"CASE WHEN {_matches(written, pattern)} THEN {plain} ELSE '?' END"


def _minor_by_text(digits: str) -> str:
    """Minor units of a number's text, by string operations (for the amounts the decimal path
    does not take): the integer digits and the decimals padded to ``digits``, as one integer,
    from ``parse_amounts``'s stages: ``_w`` (the text), ``_signed``, ``_whole_len`` (its
    integer digits) and ``_fraction_len``; only where ``_problem_code`` is 0."""
    whole = "SUBSTRING(_w, _signed + 1, _whole_len)"
    decimals = "SUBSTRING(_w, _signed + _whole_len + 2, _fraction_len)"
    kept = f"SUBSTRING({decimals} || '{'0' * _MOST_DIGITS}', 1, {digits})"
    # Cast only what is known to fit: a long text would fail the cast on some backends.
    units = f"CAST(CASE WHEN _problem_code = 0 THEN '0' || {whole} || {kept} ELSE '0' END AS BIGINT)"
    return f"CASE WHEN STARTS_WITH(_w, '-') THEN -{units} ELSE {units} END"


def _with_currency(table: Relation, iso: Kept) -> Relation:
    """``_currency`` (trimmed, uppercase), its ``_cur`` code and ``_digits`` (both null for a code
    that is not ISO 4217)."""
    table = table.mutate(_currency=f"UPPER({_trimmed(ident('currency'))})")
    return _currency_codes(table, iso, "_currency", code="_cur", digits="_digits")


def _currency_codes(table: Relation, iso: Kept, column: str, *, code: str, digits: str) -> Relation:
    """``table`` with the ``_cur`` code and the minor digits of the ISO 4217 code in ``column``
    (as ``code`` and ``digits``; both null for a code that is not ISO 4217)."""
    return table.left_join(iso, f"_s.{column} = _j._iso", **{code: "_j._iso_code", digits: "_j._iso_digits"})


def _check_payments(
    backend: Backend, table: Relation, *, priced: bool = False, decimal: str = "."
) -> Relation:
    """Key, amount, currency and status of every row, each checked; with ``priced`` (the
    processor's side) also its price, where it has one."""
    raw_key = ident("merchantReferenceId")
    # The toolkit's CSV files guard a cell a spreadsheet would run ('=1+1): read back the key.
    # Compared one by one behind the quote: a list (``IN``) becomes a join on DuckDB.
    second = f"SUBSTRING({raw_key}, 2, 1)"
    spreadsheet = " OR ".join(f"{second} = '{mark}'" for mark in ("=", "+", "-", "@", "\t", "\r"))
    guarded = f"CASE WHEN STARTS_WITH({raw_key}, '''') THEN {spreadsheet} ELSE FALSE END"
    table = table.mutate(_unguarded=f"CASE WHEN {guarded} THEN SUBSTRING({raw_key}, 2) ELSE {raw_key} END")
    iso = backend.constant("iso", currency_table)
    table = _with_currency(table.mutate(_key=_trimmed("_unguarded")).drop("_unguarded"), iso)
    statuses = backend.constant("statuses", _status_table)
    table = table.mutate(_written=f"LOWER({_trimmed(ident('status'))})")
    table = table.left_join(statuses, "_s._written = _j._written", _status="_j._name", _st="_j._code")
    table = parse_amounts(
        table.drop("_written").mutate(_places="COALESCE(_digits, 0)"), "amount", "_places", decimal=decimal
    )
    table = _with_pricing(backend, table.drop("_places"), priced=priced, decimal=decimal)
    table = table.mutate(
        _bad_key="LENGTH(_key) = 0",
        _bad_currency="_digits IS NULL",
        _bad_status="_status IS NULL",
        _amount_error=_amount_error(),
    )
    bad = "(_bad_key OR _bad_currency OR _bad_status OR _amount_error <> 0 OR _bad_pricing)"
    return table.mutate(
        _problem=f"CASE WHEN {bad} THEN 'rejected' END",
        _minor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE _minor END",
        _pminor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE _pminor END",
    ).drop("_amount_problem")


def _amount_error() -> str:
    """The amount's problem; without a currency, only whether it is a number."""
    return (
        f"CAST(CASE WHEN _digits IS NULL THEN (CASE WHEN _amount_problem = {_NOT_A_NUMBER} "
        f"THEN {_NOT_A_NUMBER} ELSE 0 END) ELSE _amount_problem END AS TINYINT)"
    )


def _with_pricing(backend: Backend, table: Relation, *, priced: bool, decimal: str = ".") -> Relation:
    """``_pminor`` and ``_pcur``: the price of a payment charged in another currency, from the
    optional ``pricingAmount`` and ``pricingCurrency`` (null when absent, empty, or the same
    currency as the charge, which adds nothing to compare). A price that is given but cannot be
    read rejects the row (``_bad_pricing``): a wrong price must not make a match. So does half a
    price: an amount without its currency, or a currency other than the charge's without an
    amount (an export cut short, not a payment without one)."""
    if not priced or not set(PRICING_COLUMNS) <= set(table.columns):
        return table.mutate(
            _pminor="CAST(NULL AS BIGINT)", _pcur="CAST(NULL AS SMALLINT)", _bad_pricing="FALSE"
        )
    table = table.mutate(
        _pcurrency=f"UPPER({_trimmed(ident('pricingCurrency'))})", _ptext=_trimmed(ident("pricingAmount"))
    )
    present = "(LENGTH(_pcurrency) > 0 AND LENGTH(_ptext) > 0 AND _pcurrency <> _currency)"
    half = (
        "((LENGTH(_ptext) > 0 AND LENGTH(_pcurrency) = 0) "
        "OR (LENGTH(_pcurrency) > 0 AND LENGTH(_ptext) = 0 AND _pcurrency <> _currency))"
    )
    with_price = table.mutate(
        _pcurrency=f"CASE WHEN {present} THEN _pcurrency END",
        _ptext=f"CASE WHEN {present} THEN _ptext END",
        _half_price=f"COALESCE({half}, FALSE)",
    )
    iso = backend.constant("iso", currency_table)
    joined = _currency_codes(with_price, iso, "_pcurrency", code="_p_iso_code", digits="_p_digits")
    joined = joined.mutate(_pplaces="COALESCE(_p_digits, 0)")
    parsed = parse_amounts(
        joined, "_ptext", "_pplaces", minor="_pminor", problem="_p_problem", decimal=decimal
    )
    unreadable = "(_pcurrency IS NOT NULL AND (_p_digits IS NULL OR _p_problem <> 0))"
    bad = f"(COALESCE({unreadable}, FALSE) OR _half_price)"
    return parsed.mutate(
        _pcur=f"CASE WHEN {bad} THEN CAST(NULL AS SMALLINT) ELSE _p_iso_code END",
        _pminor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE _pminor END",
        _bad_pricing=bad,
    ).drop("_pcurrency", "_ptext", "_p_iso_code", "_p_digits", "_pplaces", "_p_problem", "_half_price")


def _check_subscriptions(backend: Backend, table: Relation, *, decimal: str = ".") -> Relation:
    """A subscription ledger's rows: id, amount, currency, quantity and state checked."""
    table = _with_currency(table, backend.constant("iso", currency_table))
    table = parse_amounts(table.mutate(_places="COALESCE(_digits, 0)"), "amount", "_places", decimal=decimal)
    quantity = _trimmed(ident("quantity"))
    good_quantity = _matches(quantity, "^[0-9]{1,18}$")
    states = ", ".join(literal(state) for state in SUBSCRIPTION_STATES)
    table = table.drop("_places").mutate(
        _quantity=f"CAST(CASE WHEN {good_quantity} THEN {quantity} ELSE '0' END AS BIGINT)",
        _bad_subscription=f"LENGTH({_trimmed(ident('subscriptionId'))}) = 0",
        _bad_currency="_digits IS NULL",
        _bad_quantity=f"NOT {good_quantity}",
        _bad_state=f"NOT LOWER({_trimmed(ident('state'))}) IN ({states})",
    )
    table = table.mutate(_amount_error=_amount_error())
    bad = "(_bad_subscription OR _bad_currency OR _bad_quantity OR _bad_state OR _amount_error <> 0)"
    return table.mutate(
        _problem=f"CASE WHEN {bad} THEN 'rejected' END",
        _minor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE _minor END",
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


def with_epoch_seconds(table: Relation, column: str, out: str) -> Relation:
    """``table`` with ``out``: the text of ``column``, trimmed by the caller (once per row), as
    seconds since the epoch, UTC (null when unreadable): ISO dates or times, day-first dotted
    dates (``_DOTTED_WHEN``), or epoch milliseconds. Seconds, not a timestamp: Spark has no
    timestamp from milliseconds, and whole seconds compare and subtract alike everywhere. Cut,
    never rounded, to the second (milliseconds lose their last three digits as text). Built in
    stages (each a select of its own, as ``parse_amounts``) so that each value is computed once
    per row. Each pattern is tried only on the rows the ones before did not read: a file is
    almost always written in one form, and each pattern tried costs every row a match."""
    text = ident(column)
    t = table.mutate(_epoch=_matches(text, "^[0-9]{11,18}$"))
    t = t.mutate(_iso=f"CASE WHEN _epoch THEN FALSE ELSE {_matches(text, _ISO_WHEN)} END")
    t = t.mutate(_dotted=f"CASE WHEN _epoch OR _iso THEN FALSE ELSE {_matches(text, _DOTTED_WHEN)} END")
    millis = f"CAST(CASE WHEN _epoch THEN SUBSTRING({text}, 1, LENGTH({text}) - 3) END AS BIGINT)"
    day, month, year, time = (f"REGEXP_EXTRACT({text}, {literal(_DOTTED_WHEN)}, {g})" for g in (1, 2, 3, 4))
    iso = (
        f"CASE WHEN _dotted THEN {year} || '-' || {month} || '-' || {day} || {time} WHEN _iso THEN {text} END"
    )
    whole = f"CAST(EPOCH(DATE_TRUNC('SECOND', TRY_CAST({iso} AS TIMESTAMPTZ))) AS BIGINT)"
    return t.mutate(**{out: f"CASE WHEN _epoch THEN {millis} ELSE {whole} END"}).drop(
        "_epoch", "_iso", "_dotted"
    )


def _in_period(table: Relation, period: Period | None, name: str) -> Relation:
    """``_outside`` and the date check of usable rows (a row without a readable date cannot be
    placed in or out of the period: it is rejected). A row dated outside the period is outside
    whatever else is wrong with it: the run of its own period lists it, and an old bad row of a
    ledger that grows does not fail every later run."""
    if period is None:
        return table.mutate(_outside="FALSE", _bad_date="FALSE", _date_text="''", _day="CAST(NULL AS BIGINT)")
    if period.column not in table.columns:
        raise InputError(
            f"{name}: no {period.column!r} column to select the period "
            f"{period.start or '...'} to {period.end or '...'} by"
        )
    lower, upper = period_bounds(period.start, period.end)
    table = table.mutate(_period_text=_trimmed(ident(period.column)))
    table = with_epoch_seconds(table, "_period_text", "_period_when")
    inside = ["TRUE"]
    if lower is not None:
        inside.append(f"_period_when >= {int(lower.timestamp())}")
    if upper is not None:
        inside.append(f"_period_when < {int(upper.timestamp())}")
    unreadable = "(_problem IS NULL AND _period_when IS NULL)"
    outside = f"COALESCE(_period_when IS NOT NULL AND NOT ({' AND '.join(inside)}), FALSE)"
    problem = (
        f"CASE WHEN {outside} THEN CAST(NULL AS VARCHAR) WHEN {unreadable} THEN 'rejected' ELSE _problem END"
    )
    return table.mutate(
        _bad_date=unreadable,
        _date_text=ident(period.column),
        _problem=problem,
        _outside=outside,
        _day="_period_when",
    ).drop("_period_text", "_period_when")


def _dated(table: Relation, dated: Dated | None) -> Relation:
    """``_when`` (epoch seconds, null when the row has no date), ``_after`` (usable and dated
    after the cut-off) and ``_bad_when``: a date that is written but cannot be read rejects the
    row (it cannot be placed before or after the cut-off); an empty one leaves it undated, so
    that the timing rules leave it as it was (an unknown payment has no processor time)."""
    if dated is None:
        return table.mutate(_when="CAST(NULL AS BIGINT)", _after="FALSE", _bad_when="FALSE")
    table = table.mutate(_when_text=_trimmed(ident(dated.column)))
    if dated.fallback is not None and dated.fallback in table.columns:
        empty = "(_when_text IS NULL OR LENGTH(_when_text) = 0)"
        fallback = _trimmed(ident(dated.fallback))
        table = table.mutate(_when_text=f"CASE WHEN {empty} THEN {fallback} ELSE _when_text END")
    table = with_epoch_seconds(table, "_when_text", "_when_read")
    usable = "(_problem IS NULL AND NOT _outside)"
    unreadable = f"({usable} AND LENGTH(_when_text) > 0 AND _when_read IS NULL)"
    table = table.mutate(_usable=usable, _bad_when=f"COALESCE({unreadable}, FALSE)")
    after = (
        "FALSE"
        if dated.cutoff is None
        else f"COALESCE(_usable AND NOT _bad_when AND _when_read > {dated.cutoff}, FALSE)"
    )
    return table.mutate(
        _when="CASE WHEN _bad_when THEN CAST(NULL AS BIGINT) ELSE _when_read END",
        _problem="CASE WHEN _bad_when THEN 'rejected' ELSE _problem END",
        _after=after,
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
