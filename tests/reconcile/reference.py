"""A brute-force reference of the payments reconciliation, for the differential test.

It reads the engine's rules (the module docstring of ``toolkit/reconcile/_engine/__init__.py``)
and the input rules (``toolkit/reconcile/inputs/``) literally, one row and one key at a time,
with ``Decimal``, plain Python integers, dicts and loops: no numpy, pandas or arrow, and nothing
imported from ``toolkit``, so that it cannot share a bug with the code it checks. It is slow and
meant to be: a few dozen rows per example.

``reference_reconcile(ledger_rows, processor_rows, amount_tolerance)`` takes each side as
``(merchantReferenceId, amount, currency, status)`` tuples of text, as they would come from a file
or a frame (the first row is row 1), and returns an ``Expected``: every part of a
``ReconciliationResult`` as lists of plain tuples, in the engine's order where the engine
documents one.

Movements (``toolkit/reconcile/movements.py``): with no type column, a usable row with a negative
amount is money returned on its key (kind ``returned``), reconciled apart from the key's payments
per currency, as one movement: its rows' total, its first row's status and row number; never a
duplicate; counted once in the summary and in the matched keys, each of its rows in the row
accounting; a missing one is "not found" on the other side (a row that cannot be read has no sign).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext

#: One input row as text: (merchantReferenceId, amount, currency, status).
Row = tuple[str, str, str, str]
#: merchantReferenceId, category, kind, ledger_amount, processor_amount, processor_fee and
#: processor_net (none: no export layout here), ledger_currency, processor_currency, ledger_status,
#: processor_status, processor_reference (none, likewise), source, source_row, detail, severity, age_days (none here: the reference has no
#: cut-off).
ExceptionRow = tuple[
    str,
    str,
    str,
    Decimal | None,
    Decimal | None,
    None,
    None,
    str | None,
    str | None,
    str | None,
    str | None,
    None,
    str,
    int,
    str,
    str,
    int | None,
]
#: category, currency ("" for rejected rows), count, amount (None for rejected rows).
SummaryRow = tuple[str, str, int, Decimal | None]
#: merchantReferenceId, amountMinor, currency, status, ledger_row, processor_row, then what the
#: processor charged (minor units, currency) and priced (none here).
MatchedRow = tuple[str, int, str, str, int, int, int, str, None, None]
#: merchantReferenceId, amount, currency, status (all as written), source_row, detail, side, source.
RejectedRow = tuple[str, str, str, str, int, str, str, str]
#: side, source, rows, matched, exceptions, rejected, outside.
CountRow = tuple[str, str, int, int, int, int, int]
#: side, currency, rows, amount.
TotalRow = tuple[str, str, int, Decimal]

#: ISO 4217 minor digits of the currencies the tests write. The reference refuses to guess about
#: any other three-letter code (see ``currency_digits``).
ISO_DIGITS: dict[str, int] = {
    "USD": 2,
    "EUR": 2,
    "JPY": 0,
    "ISK": 0,
    "KWD": 3,
    "BHD": 3,
    "TND": 3,
    "CLF": 4,
}
#: Three-letter codes the tests write that are not ISO 4217 currencies.
NOT_ISO: frozenset[str] = frozenset({"ZZZ", "ABC", "QQQ"})

STATUS_NAMES: tuple[str, ...] = ("success", "pending", "failure", "next_action", "unknown")
STATUS_CODES: dict[str, str] = {"1": "success", "2": "pending", "3": "failure", "5": "next_action"}
#: Payment categories in report order, and the summary's order ("matched" first).
CATEGORIES: tuple[str, ...] = (
    "missing_in_processor",
    "missing_in_ledger",
    "amount_mismatch",
    "currency_mismatch",
    "status_mismatch",
    "duplicate_in_processor",
    "duplicate_in_ledger",
    "unknown_outcome",
    "rejected_row",
    "in_transit",
    "within_tolerance",
)
#: Categories shown for information, never counted as exceptions.
INFO: frozenset[str] = frozenset({"in_transit", "within_tolerance"})
SUMMARY_ORDER: tuple[str, ...] = ("matched", *CATEGORIES)
EXCEPTION_COLUMNS: tuple[str, ...] = (
    "merchantReferenceId",
    "category",
    "kind",
    "ledger_amount",
    "processor_amount",
    "processor_fee",
    "processor_net",
    "ledger_currency",
    "processor_currency",
    "ledger_status",
    "processor_status",
    "processor_reference",
    "source",
    "source_row",
    "detail",
    "severity",
    "age_days",
)
SIDES: tuple[str, str] = ("ledger", "processor")
#: An amount may have at most this many digits, and so may its integer part plus the currency's
#: minor digits (minor units must fit a signed 64-bit integer).
MAX_DIGITS = 18
#: A CSV writer's formula guard: an apostrophe before one of these first characters is dropped.
GUARDED = frozenset("=+-@\t\r")


@dataclass(frozen=True)
class Expected:
    """What ``reconcile`` must return, as plain data."""

    exceptions: list[ExceptionRow]  # report order: category, side (ledger first), source row
    summary: list[SummaryRow]  # "matched" first, then categories in report order; by currency
    matched: list[MatchedRow]  # sorted by merchantReferenceId
    rejected: list[RejectedRow]  # the ledger's in row order, then the processor's
    counts: list[CountRow]  # ledger, processor
    totals: list[TotalRow]  # ledger then processor, each by currency
    sources: tuple[str, str]
    amount_tolerance: int


@dataclass(frozen=True)
class Payment:
    """A usable row: its key, exact minor units, currency, status and row number."""

    key: str
    minor: int
    currency: str
    status: str
    row: int


# ---------------------------------------------------------------------------------------------
# Reading one row


def currency_digits(text: str) -> int | None:
    """Minor digits of the currency written (trimmed, any case), or None when it is not ISO 4217."""
    code = text.strip().upper()
    if code in ISO_DIGITS:
        return ISO_DIGITS[code]
    if len(code) == 3 and code.isascii() and code.isalpha() and code not in NOT_ISO:
        raise ValueError(f"the reference does not know whether {code!r} is an ISO 4217 code")
    return None


def read_status(text: str) -> str | None:
    """The status name of a status written as a name or a code (trimmed, any case), else None."""
    value = text.strip().lower()
    if value in STATUS_NAMES:
        return value
    return STATUS_CODES.get(value)


def read_key(text: str) -> str:
    """The key as the engine compares it: formula guard removed, then trimmed."""
    if text.startswith("'") and text[1:2] in GUARDED:
        text = text[1:]
    return text.strip()


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _grouped(whole: str, marks: str) -> bool:
    """Whether ``whole`` is grouped in threes by one of ``marks`` (the same throughout), its
    first group not starting with 0."""
    for mark in marks:
        first, *rest = whole.split(mark)
        leading = 1 <= len(first) <= 3 and _digits(first) and first[0] != "0"
        if rest and leading and all(len(g) == 3 and _digits(g) for g in rest):
            return True
    return False


def _ungrouped(text: str, marks: str) -> str | None:
    """``text`` (a point decimal) without its thousands grouping when its whole part is
    grouped (``_grouped``), else None."""
    sign = text[:1] if text[:1] in ("+", "-") else ""
    whole, point, fraction = text[len(sign) :].partition(".")
    if (fraction and not _digits(fraction)) or not _grouped(whole, marks):
        return None
    return sign + whole.translate({ord(m): None for m in marks}) + point + fraction


def read_amount(text: str, digits: int | None, currency: str) -> int | str:
    """The exact minor units of an amount, or the sentence saying why it cannot be read.

    An optional sign (or a negative amount as accounting writes it: ``(12.50)``, SAP's
    ``12.50-``), ASCII digits with at most one decimal point, at least one digit. Extra
    decimals are accepted only when they are zeros (never rounded); at most 18 digits in minor
    units, zeros that change nothing left out. An unknown currency leaves the
    amount unjudged beyond "is it a number" (the currency's own reason says enough): then the sentence is empty.
    """
    body = text.strip()
    if len(body) > 2 and body[0] == "(" and body[-1] == ")":
        body = "-" + body[1:-1]
    elif len(body) > 1 and body[-1] == "-" and body[0] not in "+-":
        body = "-" + body[:-1]
    # Thousands grouped (1,234.56), unless 1,234 of three decimals: 1.234 with a decimal comma?
    ambiguous = _ungrouped(body, ",") is not None and body.count(",") == 1 and "." not in body
    ungrouped = _ungrouped(body, ", \u00a0\u202f'")
    if ungrouped is not None and not (ambiguous and (digits or 0) >= 3):
        body = ungrouped
    sign = ""
    if body[:1] in ("+", "-"):
        sign, body = body[0], body[1:]
    whole, _, fraction = body.partition(".")
    written = whole + fraction
    if not written or any(c not in "0123456789" for c in written):
        if ambiguous:
            thousand, decimal = text.strip().replace(",", ""), text.strip().replace(",", ".")
            return f"amount {text!r} is not a number ({thousand} or {decimal} {currency}? write {thousand} or {decimal})"
        whole_part, comma, decimals = text.strip().partition(",")
        plain = whole_part[1:] if whole_part[:1] in ("+", "-") else whole_part
        if (
            comma
            and _digits(decimals)
            and (not plain or _digits(plain) or _grouped(plain, ". \u00a0\u202f'"))
        ):
            return f"amount {text!r} is not a number (a decimal comma? read the file with the decimal mark ',': --decimal ,)"
        return f"amount {text!r} is not a number"
    if digits is None:
        return ""
    with localcontext(Context(prec=100)):
        scaled = Decimal(f"{sign}{whole or '0'}.{fraction or '0'}").scaleb(digits)
        if scaled != scaled.to_integral_value():
            return f"amount {text!r} has more decimals than {currency} allows ({digits})"
        # Zeros that change nothing (leading, or decimals past the currency's) are not digits.
        if len(whole.lstrip("0")) + digits > MAX_DIGITS:
            return f"amount {text!r} has too many digits"
        return int(scaled)


def read_row(raw: Row, row: int) -> Payment | str:
    """A usable payment, or every reason the row cannot be used, joined by "; "."""
    key_text, amount_text, currency_text, status_text = raw
    key = read_key(key_text)
    digits = currency_digits(currency_text)
    status = read_status(status_text)
    amount = read_amount(amount_text, digits, currency_text.strip().upper())
    reasons = []
    if not key:
        reasons.append("merchantReferenceId is empty")
    if digits is None:
        reasons.append(f"currency {currency_text!r} is not an ISO 4217 code")
    if status is None:
        reasons.append(f"status {status_text!r} is not one of {', '.join(STATUS_NAMES)} or 1/2/3/5")
    if isinstance(amount, str) and amount:
        reasons.append(amount)
    if reasons or status is None or not isinstance(amount, int):
        return "; ".join(reasons)
    return Payment(key, amount, currency_text.strip().upper(), status, row)


# ---------------------------------------------------------------------------------------------
# Money as text


def major_text(minor: int, currency: str) -> str:
    """Minor units as the major-unit text with the currency's decimals (1230 USD -> "12.30")."""
    digits = ISO_DIGITS[currency]
    whole, fraction = divmod(abs(minor), 10**digits)
    text = f"{whole}.{fraction:0{digits}d}" if digits else str(whole)
    return f"-{text}" if minor < 0 else text


def major(minor: int, currency: str) -> Decimal:
    """Minor units as an exact Decimal with the currency's exponent (Decimal("12.30"))."""
    return Decimal(major_text(minor, currency))


# ---------------------------------------------------------------------------------------------
# Reconciling


@dataclass
class _Found:
    """One exception before it becomes a row; ``amount`` is the minor units the summary adds."""

    key: str
    category: str
    ledger: Payment | None
    processor: Payment | None
    side: str
    row: int
    detail: str
    amount: int  # at risk: unsigned, but for a variance
    currency: str | None = None  # the summary's currency, when not the ledger row's
    returned: bool = False  # of the key's money returned, not of its payments


#: The words before the detail of an exception of money returned, by category.
RETURNED_WORDS: dict[str, str] = {
    "missing_in_ledger": "money returned at the processor (refunds and chargebacks) the books do not show: book it",
    "missing_in_processor": "a refund or credit note in the books the processor never made: refund the "
    "customer at the processor, or reverse the credit note",
    "amount_mismatch": "the money returned differs between the books and the processor: book the refunds "
    "and chargebacks as the processor made them",
}


def _group(payment: Payment) -> tuple[str, bool, str]:
    """What a row is reconciled with: its key's payments, or its key's money returned in its currency."""
    returned = payment.minor < 0
    return payment.key, returned, payment.currency if returned else ""


def _as_one(rows: list[Payment]) -> list[Payment]:
    """The money returned on a key as one movement (see the module docstring)."""
    if not rows:
        return []
    first = rows[0]
    return [Payment(first.key, sum(p.minor for p in rows), first.currency, first.status, first.row)]


def _compared(rows: list[Payment], other: Payment | None) -> Payment | None:
    """A side's row compared with the other side's: the first that agrees in amount, currency and
    status, else the first with the same status, else the first."""
    if not rows:
        return None
    if other is not None:
        for alike in (
            lambda p: (p.minor, p.currency, p.status) == (other.minor, other.currency, other.status),
            lambda p: p.status == other.status,
        ):
            for payment in rows:
                if alike(payment):
                    return payment
    return rows[0]


def _rows_text(rows: list[Payment]) -> str:
    """A duplicate's row numbers, each with its amount, currency and status when they differ."""
    if len({(p.minor, p.currency, p.status) for p in rows}) == 1:
        return ", ".join(str(p.row) for p in rows)
    return ", ".join(f"{p.row}: {major_text(p.minor, p.currency)} {p.currency} {p.status}" for p in rows)


def _duplicate(
    key: str, side: str, rows: list[Payment], own: Payment | None, other_first: Payment | None
) -> list[_Found]:
    """A side's duplicate: more than one row that is not a failed attempt (which charged nothing)."""
    charges = [p for p in rows if p.status != "failure"]
    if len(charges) < 2:
        return []
    second = next(p for p in charges if p is not own)  # the row that should not be there
    ledger_row, processor_row = (second, other_first) if side == "ledger" else (other_first, second)
    return [
        _Found(
            key,
            f"duplicate_in_{side}",
            ledger_row,
            processor_row,
            side,
            second.row,
            f"appears {len(rows)} times in the {side} (rows {_rows_text(rows)})",
            # At risk: every extra charge in the shown row's currency.
            sum(abs(p.minor) for p in charges if p is not own and p.currency == second.currency),
            second.currency,
        )
    ]


def _not_found(side: str, unread: int | None) -> str:
    """Why a key is missing from ``side``: nowhere, or only in its row ``unread``, which cannot
    be read (the first such row)."""
    where = "at the processor" if side == "processor" else "in the ledger"
    if unread is None:
        return f"not found {where}"
    return (
        f"not read {where}; {side} row {unread} has this key but cannot be read (its rejected_row says why)"
    )


def _exceptions_of_key(
    key: str,
    led: list[Payment],
    pro: list[Payment],
    tolerance: int,
    unread: dict[str, dict[str, int]],
    returned: bool = False,
) -> list[_Found]:
    if returned:
        # A row that cannot be read has no sign: it is no money returned that a missing refund's
        # detail points to (only its payment's does).
        found = _payment_exceptions(key, _as_one(led), _as_one(pro), tolerance, {side: {} for side in SIDES})
        for f in found:
            words = RETURNED_WORDS.get(f.category)
            f.detail = f"{words}; {f.detail}" if words else f.detail
            f.returned = True
        return found
    return _payment_exceptions(key, led, pro, tolerance, unread)


def _payment_exceptions(
    key: str, led: list[Payment], pro: list[Payment], tolerance: int, unread: dict[str, dict[str, int]]
) -> list[_Found]:
    found: list[_Found] = []
    first_p = _compared(pro, led[0] if led else None)
    first_l = _compared(led, first_p)
    if first_l is not None and first_p is None:
        found.append(
            _Found(
                key,
                "missing_in_processor",
                first_l,
                None,
                "ledger",
                first_l.row,
                _not_found("processor", unread["processor"].get(key)),
                abs(first_l.minor),
            )
        )
    if first_p is not None and first_l is None:
        found.append(
            _Found(
                key,
                "missing_in_ledger",
                None,
                first_p,
                "processor",
                first_p.row,
                _not_found("ledger", unread["ledger"].get(key)),
                abs(first_p.minor),
            )
        )
    if first_l is not None and first_p is not None:
        where = f"; processor row {first_p.row}"
        if first_l.currency != first_p.currency:
            found.append(
                _Found(
                    key,
                    "currency_mismatch",
                    first_l,
                    first_p,
                    "ledger",
                    first_l.row,
                    f"ledger {first_l.currency}, processor {first_p.currency}{where}",
                    abs(first_l.minor),
                )
            )
        elif first_l.minor != first_p.minor and abs(first_l.minor - first_p.minor) <= tolerance:
            cur = first_l.currency
            found.append(
                _Found(
                    key,
                    "within_tolerance",
                    first_l,
                    first_p,
                    "ledger",
                    first_l.row,
                    f"ledger {major_text(first_l.minor, cur)} {cur}, processor "
                    f"{major_text(first_p.minor, cur)} {cur} (variance "
                    f"{major_text(first_l.minor - first_p.minor, cur)}, within tolerance){where}",
                    first_l.minor - first_p.minor,
                )
            )
        elif abs(first_l.minor - first_p.minor) > tolerance:
            cur = first_l.currency
            found.append(
                _Found(
                    key,
                    "amount_mismatch",
                    first_l,
                    first_p,
                    "ledger",
                    first_l.row,
                    f"ledger {major_text(first_l.minor, cur)} {cur}, processor "
                    f"{major_text(first_p.minor, cur)} {cur} (difference "
                    f"{major_text(first_l.minor - first_p.minor, cur)}){where}",
                    abs(first_l.minor - first_p.minor),
                )
            )
        if first_l.status != first_p.status and first_p.status != "unknown":
            found.append(
                _Found(
                    key,
                    "status_mismatch",
                    first_l,
                    first_p,
                    "ledger",
                    first_l.row,
                    f"ledger {first_l.status}, processor {first_p.status}{where}",
                    abs(first_l.minor),
                )
            )
    for side, rows, own, other_first in (
        ("ledger", led, first_l, first_p),
        ("processor", pro, first_p, first_l),
    ):
        found.extend(_duplicate(key, side, rows, own, other_first))
    if first_p is not None and first_p.status == "unknown":
        found.append(
            _Found(
                key,
                "unknown_outcome",
                first_l,
                first_p,
                "processor",
                first_p.row,
                "the processor does not know the outcome of this payment",
                abs(first_l.minor if first_l is not None else first_p.minor),
            )
        )
    if any(f.category not in INFO for f in found):  # an exception is that exception only
        found = [f for f in found if f.category not in INFO]
    return found


def _exception_row(found: _Found, sources: dict[str, str]) -> ExceptionRow:
    led, pro = found.ledger, found.processor
    return (
        found.key,
        found.category,
        "returned" if found.returned else "payment",
        major(led.minor, led.currency) if led else None,
        major(pro.minor, pro.currency) if pro else None,
        None,
        None,
        led.currency if led else None,
        pro.currency if pro else None,
        led.status if led else None,
        pro.status if pro else None,
        None,
        sources[found.side],
        found.row,
        found.detail,
        "info" if found.category in INFO else "exception",
        None,
    )


def _summary(groups: Iterable[tuple[str, str, int]]) -> list[SummaryRow]:
    """Count and exact sum per (category, currency) of (category, currency, minor) items."""
    count: dict[tuple[str, str], int] = {}
    total: dict[tuple[str, str], int] = {}
    for category, currency, minor in groups:
        count[category, currency] = count.get((category, currency), 0) + 1
        total[category, currency] = total.get((category, currency), 0) + minor
    rows: list[SummaryRow] = [
        (category, currency, n, major(total[category, currency], currency))
        for (category, currency), n in count.items()
    ]
    return rows


def _matched_row(key: str, led: list[Payment], pro: list[Payment], returned: bool) -> MatchedRow:
    """A matched key as ``ReconciliationResult.matched`` lists it, on the rows compared."""
    if returned:
        led, pro = _as_one(led), _as_one(pro)
    first_p = _compared(pro, led[0])
    first_l = _compared(led, first_p)
    assert first_l is not None and first_p is not None
    return (
        key,
        first_l.minor,
        first_l.currency,
        first_l.status,
        first_l.row,
        first_p.row,
        first_p.minor,
        first_p.currency,
        None,
        None,
    )


class NoUsableRows(Exception):
    """A side has rows and not one of them can be used: the run stops (exit 2), naming it."""

    def __init__(self, side: str) -> None:
        super().__init__(side)
        self.side = side


def _refuse_no_usable_rows(
    sides: tuple[Sequence[Row], Sequence[Row]], usable: dict[str, dict[tuple[str, bool, str], list[Payment]]]
) -> None:
    for side, rows in zip(SIDES, sides, strict=True):
        if rows and not usable[side]:
            raise NoUsableRows(side)


def reference_reconcile(
    ledger_rows: Sequence[Row],
    processor_rows: Sequence[Row],
    amount_tolerance: int = 0,
    *,
    sources: tuple[str, str] = ("<ledger frame>", "<processor frame>"),
) -> Expected:
    """Reconcile two lists of text rows by brute force; see the module docstring."""
    source_of = dict(zip(SIDES, sources, strict=True))
    #: Each side's usable rows by (key, money returned?, its currency): a key's payments, and its
    #: money returned in each currency.
    usable: dict[str, dict[tuple[str, bool, str], list[Payment]]] = {side: {} for side in SIDES}
    rejected: list[RejectedRow] = []
    rejected_exceptions: list[ExceptionRow] = []
    unread: dict[str, dict[str, int]] = {side: {} for side in SIDES}  # key -> its first rejected row
    for side, rows in zip(SIDES, (ledger_rows, processor_rows), strict=True):
        for number, raw in enumerate(rows, start=1):
            read = read_row(raw, number)
            if isinstance(read, Payment):
                usable[side].setdefault(_group(read), []).append(read)
                continue
            key_text, amount_text, currency_text, status_text = raw
            unread[side].setdefault(read_key(key_text), number)
            rejected.append(
                (key_text, amount_text, currency_text, status_text, number, read, side, source_of[side])
            )
            own_currency, own_status = currency_text.strip().upper(), status_text
            ledger_side = side == "ledger"
            rejected_exceptions.append(
                (
                    key_text,
                    "rejected_row",
                    "",
                    None,
                    None,
                    None,
                    None,
                    own_currency if ledger_side else None,
                    None if ledger_side else own_currency,
                    own_status if ledger_side else None,
                    None if ledger_side else own_status,
                    None,
                    source_of[side],
                    number,
                    read,
                    "exception",
                    None,
                )
            )

    _refuse_no_usable_rows((ledger_rows, processor_rows), usable)
    led_keys, pro_keys = usable["ledger"], usable["processor"]
    found: list[_Found] = []
    matched: list[MatchedRow] = []
    flagged: set[tuple[str, bool, str]] = set()
    for group in sorted(set(led_keys) | set(pro_keys)):
        key, returned, _ = group
        led, pro = led_keys.get(group, []), pro_keys.get(group, [])
        mine = _exceptions_of_key(key, led, pro, amount_tolerance, unread, returned)
        found.extend(mine)
        if any(f.category not in INFO for f in mine):
            flagged.add(group)
        else:  # matched, within tolerance or exactly, on the rows compared
            matched.append(_matched_row(key, led, pro, returned))

    side_rank = {side: i for i, side in enumerate(SIDES)}
    category_rank = {category: i for i, category in enumerate(CATEGORIES)}
    found.sort(key=lambda f: (category_rank[f.category], side_rank[f.side], f.row))
    exceptions = [_exception_row(f, source_of) for f in found] + rejected_exceptions

    def currency_of(f: _Found) -> str:
        if f.currency is not None:
            return f.currency
        payment = f.ledger if f.ledger is not None else f.processor
        assert payment is not None
        return payment.currency

    summary = _summary(
        [("matched", m[2], m[1]) for m in matched] + [(f.category, currency_of(f), f.amount) for f in found]
    )
    if rejected:
        summary.append(("rejected_row", "", len(rejected), None))
    summary.sort(key=lambda s: (SUMMARY_ORDER.index(s[0]), s[1]))

    counts: list[CountRow] = []
    totals: list[TotalRow] = []
    for side, rows in zip(SIDES, (ledger_rows, processor_rows), strict=True):
        payments = [p for per_key in usable[side].values() for p in per_key]
        in_exceptions = sum(1 for p in payments if _group(p) in flagged)
        counts.append(
            (
                side,
                source_of[side],
                len(rows),
                len(payments) - in_exceptions,
                in_exceptions,
                sum(1 for r in rejected if r[6] == side),
                0,
            )
        )
        moved = [p for p in payments if p.status != "failure"]  # a failed attempt took no money
        for currency in sorted({p.currency for p in moved}):
            amounts = [p.minor for p in moved if p.currency == currency]
            totals.append((side, currency, len(amounts), major(sum(amounts), currency)))

    return Expected(
        exceptions=exceptions,
        summary=summary,
        matched=matched,
        rejected=rejected,
        counts=counts,
        totals=totals,
        sources=sources,
        amount_tolerance=amount_tolerance,
    )
