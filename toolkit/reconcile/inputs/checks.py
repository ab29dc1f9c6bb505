"""The checks of a side's rows as SQL: amounts to exact minor units, currencies, statuses,
prices, dates, the period and the cut-off; each problem a code in ``_problem`` (``reasons.py`` words it).
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.errors import InputError
from toolkit.money import minor_digits
from toolkit.payment_status import PAYMENT_STATUS_LABELS, PAYMENT_STATUS_NAMES
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.inputs.dates import with_epoch_seconds
from toolkit.reconcile.movements import (
    APART,
    INCOMING,
    OUTGOING,
    RETURNED,
    code,
    codes,
    returned_key,
    vocabulary_table,
)
from toolkit.reconcile.period import Period, period_bounds
from toolkit.reconcile.relation import Relation, ident, literal
from toolkit.reconcile.schema import MAX_DIGITS, PRICING_COLUMNS, SUBSCRIPTION_STATES

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import Dated


# Amount problems, as codes computed in the engine and words said in Python.
NOT_A_NUMBER, TOO_MANY_DECIMALS, TOO_MANY_DIGITS = 1, 2, 3


AMOUNT_ERRORS: dict[int, str] = {
    NOT_A_NUMBER: "amount {amount!r} is not a number",
    TOO_MANY_DECIMALS: "amount {amount!r} has more decimals than {currency} allows ({digits})",
    TOO_MANY_DIGITS: "amount {amount!r} has too many digits",
}


# Whitespace trimmed from every value (what a spreadsheet or an editor leaves around text).
SPACE = sources.WHITESPACE


#: A number as the engine reads it: a sign, digits and a decimal point, nothing else.
NUMBER = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)$"


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


def trimmed(value: str) -> str:
    """Without the whitespace around it (spaces, tabs, line breaks).

    The regular expression runs only on the few values that start or end with whitespace.
    Patterns hold no backslash (Spark SQL drops an unknown escape's backslash): ``[.]``, not
    ``\\.``; the whitespace characters themselves are written, and sqlglot escapes them for Spark.
    """
    # Strings compare by their bytes on both backends: a value (or its last character) below "!"
    # is empty or starts (ends) with a control character or a space, every character of
    # ``SPACE`` among them: two comparisons, where one and a suffix test per character of
    # ``SPACE`` took 0.42 s over 10M values instead of 0.29 s (the regular expression then trims
    # only whitespace, as before).
    padded = f"{value} < '!' OR RIGHT({value}, 1) < '!'"
    trim = f"REGEXP_REPLACE({value}, '^[{SPACE}]+|[{SPACE}]+$', '', 'g')"
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
    computed once. Almost every amount is plain (``_plain_minor``): read in the first stage, the
    stages after it see no text for it (they cost a third of a side's check at 10M rows).
    """
    t = table.mutate(_plain=_plain_minor(ident(text), ident(digits), decimal))
    t = t.mutate(_t=f"CASE WHEN _plain IS NULL THEN {trimmed(ident(text))} END")
    t = t.mutate(_t=_without_currency_sign("_t"))
    written = _accounting_sign("_t")
    point = decimal in (".", sources.POINT_UNDECIDED)
    t = t.mutate(_w=written if point else _point_decimal(written)).drop("_t")
    is_number = _matches("_w", NUMBER)
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
    t = t.mutate(_problem_code=_amount_problem(d))
    # DECIMAL(18, n) times 10 ** n keeps n decimals: at most 18 - 2n integer digits fit it.
    by_decimal = " ".join(
        f"WHEN {d} = {n} AND _fraction_len <= {n} AND _whole_len <= {MAX_DIGITS - 2 * n} "
        f"THEN CAST(TRY_CAST(_w AS DECIMAL({MAX_DIGITS}, {n})) * {10**n} AS BIGINT)"
        for n in range(_MOST_DIGITS + 1)
    )
    value = (
        f"CASE WHEN _problem_code <> 0 THEN CAST(NULL AS BIGINT) {by_decimal} ELSE {_minor_by_text(d)} END"
    )
    return t.mutate(
        **{
            minor: f"COALESCE(_plain, {value})",
            problem: "CASE WHEN _plain IS NULL THEN _problem_code ELSE 0 END",
        }
    ).drop("_plain", "_problem_code", "_w", "_is_number", "_dot", "_signed", "_whole_len", "_fraction_len")


def _plain_minor(text: str, digits: str, decimal: str) -> str:
    """SQL: the minor units of ``text`` when it is a plain amount, else null: digits, a minus
    sign, and no more decimals than the currency's ``digits`` after the file's decimal mark,
    nothing around them (what every later stage of ``parse_amounts`` would read the same way).

    Undecided files (``POINT_UNDECIDED``) take only currencies of up to two decimals here: a
    ``1.234`` there is refused as ambiguous, which takes the stages after."""
    mark = "," if decimal == "," else "[.]"
    places = range(_MOST_DIGITS + 1) if decimal in (".", ",") else range(3)
    number = text if decimal != "," else f"REPLACE({text}, ',', '.')"
    cases = " ".join(
        f"WHEN {digits} = {n} AND "
        + _matches(text, f"^-?[0-9]{{1,{MAX_DIGITS - 2 * n}}}" + (f"({mark}[0-9]{{1,{n}}})?$" if n else "$"))
        + f" THEN CAST(TRY_CAST({number} AS DECIMAL({MAX_DIGITS}, {n})) * {10**n} AS BIGINT)"
        for n in places
    )
    return f"CASE {cases} END"


#: A Debit/Credit flag's values (compared in upper case): debit positive, credit negative.
DEBIT_FLAGS = ("S", "D", "DR", "DEBIT", "SOLL")
CREDIT_FLAGS = ("H", "C", "CR", "CREDIT", "HABEN")
#: An amount that is zero, however written.
ZERO = "^[+-]?0*([.,]0*)?$"


def signed_amounts(table: Relation, signed: str, *, credit_positive: bool = False) -> Relation:
    """``amount`` as written, signed from a Debit/Credit ``pair`` of columns (the one written,
    the credit negative, or with ``credit_positive`` the debit: a processor's account of the
    merchant's money; both written and not zero cannot be read) or a Debit/Credit ``flag`` (an
    unknown flag cannot be read): the check then reads it as any amount."""
    if signed == "pair" and credit_positive:
        return signed_amounts(table.rename({"credit": "debit", "debit": "credit"}), "pair")
    if signed == "pair":
        t = table.mutate(_dt=trimmed(ident("debit")), _ct=trimmed(ident("credit")))
        debit_only = f"(_ct = '' OR {_matches('_ct', ZERO)})"
        credit_only = f"(_dt = '' OR {_matches('_dt', ZERO)})"
        amount = (
            f"CASE WHEN _ct <> '' AND {credit_only} AND NOT {_matches('_ct', ZERO)} THEN '-' || _ct "
            f"WHEN {debit_only} THEN _dt ELSE 'debit ' || _dt || ' and credit ' || _ct END"
        )
        return t.mutate(amount=amount).drop("_dt", "_ct")
    t = table.mutate(_flag=f"UPPER({trimmed(ident('debitCredit'))})", _at=trimmed(ident("amount")))
    debit, credit = (", ".join(literal(v) for v in flags) for flags in (DEBIT_FLAGS, CREDIT_FLAGS))
    amount = (
        f"CASE WHEN _flag IN ({debit}) THEN _at WHEN _flag IN ({credit}) THEN '-' || _at "
        f"ELSE _at || ' (debit or credit? ' || {ident('debitCredit')} || ')' END"
    )
    return t.mutate(amount=amount).drop("_flag", "_at")


#: The currency signs a bookkeeping export writes before or after an amount (QuickBooks'
#: ``$(180.50)``, ``-$30.00``, ``12,50 €``): dropped, the currency column saying which it is.
_SIGNS = "$€£¥"


def _without_currency_sign(text: str) -> str:
    """The amount ``text`` without a currency sign before or after it (``$(180.50)``,
    ``-$30.00``, ``12.50 €``); looked at only where the text does not start and end with a digit."""
    first, second = f"SUBSTRING({text}, 1, 1)", f"SUBSTRING({text}, 2, 1)"
    last = f"SUBSTRING({text}, LENGTH({text}), 1)"
    signs = ", ".join(f"'{sign}'" for sign in _SIGNS)
    plain = f"({text} = '' OR ({first} >= '0' AND {first} <= '9' AND {last} >= '0' AND {last} <= '9'))"
    return (
        f"CASE WHEN {plain} THEN {text} "
        f"WHEN {last} IN ({signs}) THEN RTRIM(SUBSTRING({text}, 1, LENGTH({text}) - 1)) "
        f"WHEN {first} IN ({signs}) THEN LTRIM(SUBSTRING({text}, 2)) "
        f"WHEN {first} IN ('-', '+', '(') AND {second} IN ({signs}) "
        f"THEN {first} || LTRIM(SUBSTRING({text}, 3)) ELSE {text} END"
    )


def _accounting_sign(written: str) -> str:
    """A negative amount as accounting writes it, with its sign in front: ``(12.50)`` and SAP's
    trailing minus ``12.50-`` are ``-12.50``; any other text as it is."""
    return (
        f"CASE WHEN LENGTH({written}) > 2 AND STARTS_WITH({written}, '(') AND ENDS_WITH({written}, ')') "
        f"THEN '-' || SUBSTRING({written}, 2, LENGTH({written}) - 2) "
        f"WHEN LENGTH({written}) > 1 AND ENDS_WITH({written}, '-') AND NOT STARTS_WITH({written}, '-') "
        f"AND NOT STARTS_WITH({written}, '+') THEN '-' || SUBSTRING({written}, 1, LENGTH({written}) - 1) "
        f"ELSE {written} END"
    )


def _amount_problem(d: str) -> str:
    """The problem code of the amount text ``_w`` (``parse_amounts``' stages) for a currency of
    ``d`` minor digits: 0 when it reads exactly."""
    cut = f"LENGTH(REPLACE(SUBSTRING(_w, LENGTH(_w) - (_fraction_len - {d}) + 1), '0', ''))"
    # Zeros that change nothing (``0012``, ``12.300000000000000000``, as a DECIMAL(38, 18) is
    # written) do not count as digits; they are looked for only in the rare long amounts.
    leading_zeros = "(LENGTH(_w) - _signed - LENGTH(REGEXP_REPLACE(_w, '^[+-]?0*', '', 'g')))"
    significant = f"(_whole_len - {leading_zeros} + {d} > {MAX_DIGITS})"
    longer = (
        f"(CASE WHEN {cut} > 0 THEN {TOO_MANY_DECIMALS} WHEN {significant} THEN {TOO_MANY_DIGITS} ELSE 0 END)"
    )
    return (
        f"CASE WHEN NOT _is_number THEN {NOT_A_NUMBER} "
        f"WHEN _whole_len + GREATEST(_fraction_len, {d}) <= {MAX_DIGITS} THEN "
        f"(CASE WHEN _fraction_len <= {d} THEN 0 WHEN {cut} > 0 THEN {TOO_MANY_DECIMALS} ELSE 0 END) "
        f"WHEN _fraction_len > {d} THEN {longer} "
        f"WHEN {significant} THEN {TOO_MANY_DIGITS} ELSE 0 END"
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


def exact_amounts(backend: Backend, table: Relation, *, decimal: str = ".") -> Relation:
    """``table`` (text columns ``amount`` and ``currency``) with ``_currency``, its ``_cur`` code
    and ``_digits``, and ``_minor`` (exact minor units; null where the amount or the currency
    cannot be read): the reading of a payment's amount, for other amounts of a row (a payout's
    net)."""
    table = _with_currency(table, backend.constant("iso", currency_table))
    table = parse_amounts(table.mutate(_places="COALESCE(_digits, 0)"), "amount", "_places", decimal=decimal)
    ok = "(_digits IS NOT NULL AND _amount_problem = 0)"
    return table.mutate(_minor=f"CASE WHEN {ok} THEN _minor END").drop("_places", "_amount_problem")


def _with_currency(table: Relation, iso: Kept) -> Relation:
    """``_currency`` (trimmed, uppercase), its ``_cur`` code and ``_digits`` (both null for a code
    that is not ISO 4217)."""
    table = table.mutate(_currency=f"UPPER({trimmed(ident('currency'))})")
    return _currency_codes(table, iso, "_currency", code="_cur", digits="_digits")


def _currency_codes(table: Relation, iso: Kept, column: str, *, code: str, digits: str) -> Relation:
    """``table`` with the ``_cur`` code and the minor digits of the ISO 4217 code in ``column``
    (as ``code`` and ``digits``; both null for a code that is not ISO 4217)."""
    return table.left_join(iso, f"_s.{column} = _j._iso", **{code: "_j._iso_code", digits: "_j._iso_digits"})


def check_payments(
    backend: Backend,
    table: Relation,
    *,
    priced: bool = False,
    decimal: str = ".",
    typed: bool = False,
    words: tuple[tuple[str, str], ...] = (),
    by_sign: bool = False,
) -> Relation:
    """Key, amount, currency and status of every row, each checked; with ``priced`` (the
    processor's side) also its price, where it has one; with ``typed``, its kind of movement from
    the ``type`` column (else from its sign), in the words of ``movements.VOCABULARY`` and an
    export layout's own ``words`` (its row types, normalised, and their kinds); ``by_sign`` (a
    ledger's): a type that says payment or money returned is decided by the sign all the same."""
    raw_key = ident("merchantReferenceId")
    # The toolkit's CSV files guard a cell a spreadsheet would run ('=1+1): read back the key.
    # Compared one by one behind the quote: a list (``IN``) becomes a join on DuckDB.
    second = f"SUBSTRING({raw_key}, 2, 1)"
    spreadsheet = " OR ".join(f"{second} = '{mark}'" for mark in ("=", "+", "-", "@", "\t", "\r"))
    guarded = f"CASE WHEN STARTS_WITH({raw_key}, '''') THEN {spreadsheet} ELSE FALSE END"
    table = table.mutate(_unguarded=f"CASE WHEN {guarded} THEN SUBSTRING({raw_key}, 2) ELSE {raw_key} END")
    iso = backend.constant("iso", currency_table)
    table = _with_currency(table.mutate(_key=trimmed("_unguarded")).drop("_unguarded"), iso)
    statuses = backend.constant("statuses", _status_table)
    table = table.mutate(_written=f"LOWER({trimmed(ident('status'))})")
    table = table.left_join(statuses, "_s._written = _j._written", _status="_j._name", _st="_j._code")
    table = parse_amounts(
        table.drop("_written").mutate(_places="COALESCE(_digits, 0)"), "amount", "_places", decimal=decimal
    )
    table = _with_pricing(backend, table.drop("_places"), priced=priced, decimal=decimal)
    table = _with_kind(backend, table, typed=typed, words=words, by_sign=by_sign)
    apart = f"(_kind IN ({codes(APART)}))"
    table = table.mutate(
        _bad_key=f"LENGTH(_key) = 0 AND NOT {apart}",
        _bad_currency="_digits IS NULL",
        _bad_status=f"_status IS NULL AND NOT {apart}",
        _amount_error=_amount_error(),
    )
    bad = "(_bad_key OR _bad_currency OR _bad_status OR _bad_type OR _amount_error <> 0 OR _bad_pricing)"
    # Money returned on an order pairs apart from its payments, per currency (``returned_key``).
    returned = f"_kind IN ({codes(RETURNED)})"
    settled = PAYMENT_STATUS_NAMES.index("success")
    return table.mutate(
        _problem=f"CASE WHEN {bad} THEN 'rejected' END",
        _minor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE {_signed_by_kind('_minor')} END",
        _pminor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE {_signed_by_kind('_pminor')} END",
        _key=f"CASE WHEN NOT {bad} AND {returned} THEN {returned_key('_key', '_currency')} ELSE _key END",
        _st=f"CASE WHEN _status IS NULL AND {apart} THEN CAST({settled} AS TINYINT) ELSE _st END",
        _status=f"CASE WHEN _status IS NULL AND {apart} THEN 'success' ELSE _status END",
    ).drop("_amount_problem")


def _with_kind(
    backend: Backend,
    table: Relation,
    *,
    typed: bool,
    words: tuple[tuple[str, str], ...] = (),
    by_sign: bool = False,
) -> Relation:
    """``_kind`` (a code of ``movements.KINDS``): from the ``type`` column where it has a word of
    ``movements.VOCABULARY``, else from the sign (a negative amount is money ``returned``);
    ``_bad_type`` where the type is written but no kind the toolkit knows (refused, not guessed).
    With ``by_sign`` (books), a word of a payment (or of money returned, not saying which) is read
    by the sign: a bookkeeping export's ``Payment`` on a clearing account is money in, a negative
    one money returned; the type decides a refund or chargeback, and what is no order's (a fee, a
    payout, an adjustment)."""
    sign = f"CASE WHEN _minor < 0 THEN {code('returned')} ELSE {code('payment')} END"
    if not typed:
        return table.mutate(_kind=f"CAST({sign} AS TINYINT)", _bad_type="FALSE")
    stem = "kinds" if not words else "kinds_" + hashlib.sha256(repr(words).encode()).hexdigest()[:8]
    vocabulary = backend.constant(stem, lambda: vocabulary_table(dict(words)))
    spaced = f"LOWER(REPLACE({trimmed(ident('type'))}, '-', ' '))"
    table = table.mutate(_typed=f"REGEXP_REPLACE({spaced}, '[ ]+', '_', 'g')")
    table = table.left_join(vocabulary, "_s._typed = _j._word", _word_kind="_j._word_kind")
    written = "COALESCE(LENGTH(_typed) > 0, FALSE)"
    signed = f"_word_kind IN ({codes(('payment', 'returned'))})" if by_sign else "FALSE"
    kind = f"CASE WHEN {written} AND _word_kind IS NOT NULL AND NOT {signed} THEN _word_kind ELSE {sign} END"
    return table.mutate(
        _kind=f"CAST({kind} AS TINYINT)",
        _bad_type=f"{written} AND _word_kind IS NULL",
    ).drop("_typed", "_word_kind")


def _signed_by_kind(minor: str) -> str:
    """``minor`` signed as its kind moves money: a refund or chargeback out (negative), a
    chargeback reversal in, whatever sign the file wrote (a ``Type`` column says the direction)."""
    return (
        f"CASE WHEN _kind IN ({codes(OUTGOING)}) THEN -ABS({minor}) "
        f"WHEN _kind IN ({codes(INCOMING)}) THEN ABS({minor}) ELSE {minor} END"
    )


def _amount_error() -> str:
    """The amount's problem; without a currency, only whether it is a number."""
    return (
        f"CAST(CASE WHEN _digits IS NULL THEN (CASE WHEN _amount_problem = {NOT_A_NUMBER} "
        f"THEN {NOT_A_NUMBER} ELSE 0 END) ELSE _amount_problem END AS TINYINT)"
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
        _pcurrency=f"UPPER({trimmed(ident('pricingCurrency'))})", _ptext=trimmed(ident("pricingAmount"))
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


def check_subscriptions(backend: Backend, table: Relation, *, decimal: str = ".") -> Relation:
    """A subscription ledger's rows: id, amount, currency, quantity and state checked."""
    table = _with_currency(table, backend.constant("iso", currency_table))
    table = parse_amounts(table.mutate(_places="COALESCE(_digits, 0)"), "amount", "_places", decimal=decimal)
    quantity = trimmed(ident("quantity"))
    good_quantity = _matches(quantity, "^[0-9]{1,18}$")
    states = ", ".join(literal(state) for state in SUBSCRIPTION_STATES)
    table = table.drop("_places").mutate(
        _quantity=f"CAST(CASE WHEN {good_quantity} THEN {quantity} ELSE '0' END AS BIGINT)",
        _bad_subscription=f"LENGTH({trimmed(ident('subscriptionId'))}) = 0",
        _bad_currency="_digits IS NULL",
        _bad_quantity=f"NOT {good_quantity}",
        _bad_state=f"NOT LOWER({trimmed(ident('state'))}) IN ({states})",
    )
    table = table.mutate(_amount_error=_amount_error())
    bad = "(_bad_subscription OR _bad_currency OR _bad_quantity OR _bad_state OR _amount_error <> 0)"
    return table.mutate(
        _problem=f"CASE WHEN {bad} THEN 'rejected' END",
        _minor=f"CASE WHEN {bad} THEN CAST(NULL AS BIGINT) ELSE _minor END",
    ).drop("_amount_problem")


def in_period(
    table: Relation, period: Period | None, name: str, *, written: str | None = None, zone: str | None = None
) -> Relation:
    """``_outside`` and the date check of usable rows (a row without a readable date cannot be
    placed in or out of the period: it is rejected), the dates read as ``with_epoch_seconds``
    reads them (``written``: the side's date format, ``zone``: its time zone). A row dated
    outside the period is outside whatever else is wrong with it: the run of its own period lists
    it, and an old bad row of a ledger that grows does not fail every later run."""
    if period is None:
        return table.mutate(_outside="FALSE", _bad_date="FALSE", _date_text="''", _day="CAST(NULL AS BIGINT)")
    if period.column not in table.columns:
        raise InputError(
            f"{name}: no {period.column!r} column to select the period "
            f"{period.start or '...'} to {period.end or '...'} by"
        )
    lower, upper = period_bounds(period.start, period.end)
    table = table.mutate(_period_text=trimmed(ident(period.column)))
    table = with_epoch_seconds(table, "_period_text", "_period_when", written=written, zone=zone)
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


def dated_by(
    table: Relation, dated: Dated | None, *, written: str | None = None, zone: str | None = None
) -> Relation:
    """``_when`` (epoch seconds, null when the row has no date), ``_after`` (usable and dated
    after the cut-off) and ``_bad_when``: a date that is written but cannot be read rejects the
    row (it cannot be placed before or after the cut-off); an empty one leaves it undated, so
    that the timing rules leave it as it was (an unknown payment has no processor time); read
    as ``in_period`` reads them."""
    if dated is None:
        return table.mutate(_when="CAST(NULL AS BIGINT)", _after="FALSE", _bad_when="FALSE")
    table = table.mutate(_when_text=trimmed(ident(dated.column)))
    if dated.fallback is not None and dated.fallback in table.columns:
        empty = "(_when_text IS NULL OR LENGTH(_when_text) = 0)"
        fallback = trimmed(ident(dated.fallback))
        table = table.mutate(_when_text=f"CASE WHEN {empty} THEN {fallback} ELSE _when_text END")
    table = with_epoch_seconds(table, "_when_text", "_when_read", written=written, zone=zone)
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
