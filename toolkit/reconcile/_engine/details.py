"""The ``detail`` of each exception, worded as expressions in the backend: what differs, where the
other side has the key, how long a payment has been in transit.
"""

from __future__ import annotations

from collections.abc import Callable

from toolkit.reconcile._engine.model import USABLE, Side, with_names
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.movements import RETURNED, code
from toolkit.reconcile.relation import literal
from toolkit.reconcile.sources import row_sql
from toolkit.reconcile.timing import Timing, duration_text


def minor_text(minor: str, digits: str) -> str:
    """Exact major-unit text (``12.30``, ``-0.050``, ``1200``) of minor units."""
    plain = f"CAST(ABS({minor}) AS VARCHAR)"
    padded = f"LPAD({plain}, CAST(GREATEST(LENGTH({plain}), {digits} + 1) AS INTEGER), '0')"
    cut = f"(LENGTH({padded}) - {digits})"
    text = (
        f"CASE WHEN {digits} > 0 THEN SUBSTRING({padded}, 1, {cut}) || '.' || SUBSTRING({padded}, {cut} + 1) "
        f"ELSE {padded} END"
    )
    return f"(CASE WHEN {minor} < 0 THEN '-' ELSE '' END || {text})"


def text(value: str) -> str:
    """A number as text, in a detail."""
    return f"CAST({value} AS VARCHAR)"


def duplicate_detail_parts(
    part: Callable[..., None],
    engine: Backend,
    f: Kept,
    duplicates: dict[str, Kept],
    sides: tuple[Side, Side],
) -> None:
    """The ``duplicate_in_*`` rows: the extra row of each duplicated key (``duplicate_rows``), with
    every row."""
    for side in ("processor", "ledger"):
        p = side[0]
        if side not in duplicates:
            continue
        keyed = (
            f"SELECT * FROM {f} AS _f JOIN {duplicates[side]} AS _d ON _f.key = _d._dup_key "
            f"WHERE duplicate_in_{side}"
        )
        joined = with_names(engine, keyed, f"{p}2", sides[side == "processor"])
        # The row shown is the extra one: the one that should not be there.
        shown = ("minor", "currency", "digits", "status", "row", "source", "ord")
        own = {f"{p}_{name}": f"{p}2_{name}" for name in shown}
        part(
            f"duplicate_in_{side}",
            joined,
            side == "processor",
            f"'appears ' || {text('_count')} || ' times in the {side} (rows ' || _rows_text || ')'",
            "CAST(_extra AS BIGINT)",
            currency=f"{p}2_currency",
            **own,
        )


#: What a key's money returned lacks, and what to do, by category and kind (the words before the
#: detail of a refund's exception: never "charged more than once").
RETURNED_WORDS: dict[str, dict[str, str]] = {
    "missing_in_ledger": {
        "refund": "a refund at the processor the books do not show: book the refund (a credit note)",
        "chargeback": "a chargeback at the processor the books do not show: book the chargeback and its fee",
        "chargeback_reversal": "a dispute won at the processor the books do not show: book the money back",
        "returned": "money returned at the processor (refunds and chargebacks) the books do not "
        "show: book it",
    },
    "missing_in_processor": {
        "returned": "a refund or credit note in the books the processor never made: refund the "
        "customer at the processor, or reverse the credit note",
    },
    "amount_mismatch": {
        "returned": "the money returned differs between the books and the processor: book the "
        "refunds and chargebacks as the processor made them",
    },
}


def returned_words(category: str, kind: str, detail: str) -> str:
    """``detail`` led by what the money returned on a key lacks (``RETURNED_WORDS``), for a key of
    money returned whose kind is the code ``kind``; as it is for a payment."""
    words = RETURNED_WORDS.get(category)
    if not words:
        return detail
    cases = " ".join(
        f"WHEN {code(name)} THEN {literal(words.get(name, words['returned']) + '; ')}" for name in RETURNED
    )
    return f"(CASE {kind} {cases} ELSE '' END || {detail})"


def missing_detail(table: str, other: Side) -> tuple[str, str]:
    """``table``'s keys that ``other`` does not have among its usable rows, and why in words: not
    found there at all, or there only in a row that takes no part (its first), so that whoever
    looks for the payment is told where it is instead of searching for one that is there:
    ``not read in the ledger; ledger row 12 has this key but cannot be read (its rejected_row
    says why)``, ``not in the ledger in the period; ledger row 12 is dated 2026-10-20 00:00 UTC,
    outside it``, ``not in the ledger by the cut-off; ledger row 12 is dated 2026-11-20 00:00
    UTC, after it``."""
    where = "at the processor" if other.name == "processor" else "in the ledger"
    apart_rows = f"SELECT * FROM ({other.rows}) WHERE NOT {USABLE}"
    first = f"SELECT _key AS _apart_key, MIN(_ord) AS _apart_ord FROM ({apart_rows}) GROUP BY _key"
    apart = (
        "SELECT _a._apart_key, _a._apart_ord, _r._rejected AS _apart_rejected, "
        "_r._outside AS _apart_outside, "
        "CASE WHEN _r._outside THEN _r._day ELSE _r._when END AS _apart_when "
        f"FROM ({first}) AS _a JOIN ({apart_rows}) AS _r "
        "ON _a._apart_key = _r._key AND _a._apart_ord = _r._ord"
    )
    joined = f"SELECT * FROM ({table}) AS _t LEFT JOIN ({apart}) AS _p ON _t.key = _p._apart_key"
    row = f"'; {other.name} row ' || {text(row_sql('_apart_ord'))}"
    day = moment_text("_apart_when")
    detail = (
        f"CASE WHEN _apart_ord IS NULL THEN 'not found {where}' "
        f"WHEN _apart_rejected THEN 'not read {where}' || {row} "
        "|| ' has this key but cannot be read (its rejected_row says why)' "
        f"WHEN _apart_outside THEN 'not {where} in the period' || {row} "
        f"|| ' is dated ' || {day} || ', outside it' "
        f"ELSE 'not {where} by the cut-off' || {row} || ' is dated ' || {day} || ', after it' END"
    )
    return joined, detail


def moment_text(seconds: str) -> str:
    """A row's date (epoch seconds) as the details write it: ``2026-11-21 00:00 UTC``."""
    return f"(STRFTIME(TO_TIMESTAMP({seconds}), '%Y-%m-%d %H:%M') || ' UTC')"


def compared_detail(word: str, note: str = "") -> str:
    """``ledger 10.00 USD, processor 9.98 USD (difference 0.02); processor row 3``; for a price in
    the ledger's currency: ``processor priced 9.98 USD (charged 560.00 PHP)``."""
    other = "CASE WHEN priced THEN p_pminor ELSE p_minor END"
    charged = f"{minor_text('p_minor', 'p_digits')} || ' ' || p_currency"
    return (
        f"'ledger ' || {minor_text('l_minor', 'l_digits')} || ' ' || l_currency "
        "|| CASE WHEN priced THEN ', processor priced ' ELSE ', processor ' END "
        f"|| {minor_text(other, 'l_digits')} || ' ' || l_currency "
        f"|| CASE WHEN priced THEN ' (charged ' || {charged} || ')' ELSE '' END "
        f"|| ' ({word} ' || {minor_text('l_minus_p', 'l_digits')} "
        f"|| '{note}); processor row ' || {text('p_row')}"
    )


def fx_detail(word: str) -> str:
    """``ledger 20.00 USD = 18.52 EUR at 1 USD = 0.926 EUR on 2026-11-18, processor 18.40 EUR
    (variance 0.12 EUR, beyond tolerance); processor row 3``: the variance expected minus
    charged, signed as a same-currency one (ledger minus processor)."""
    return (
        f"'ledger ' || {minor_text('l_minor', 'l_digits')} || ' ' || l_currency "
        f"|| ' = ' || {minor_text('fx_expected', 'p_digits')} || ' ' || p_currency "
        f"|| ' at ' || fx_text || ', processor ' || {minor_text('p_minor', 'p_digits')} || ' ' || p_currency "
        f"|| ' (variance ' || {minor_text('fx_expected - p_minor', 'p_digits')} || ' ' || p_currency "
        f"|| ', {word} tolerance); processor row ' || {text('p_row')}"
    )


def transit_detail(clock: Timing) -> str:
    """Why a payment is in transit, and since when, in words."""
    window = f"inside the settlement window ({duration_text(clock.grace)} before the cut-off)"
    day = moment_text("COALESCE(p_when, l_when)")
    return (
        "CASE WHEN l_n IS NOT NULL AND p_n IS NOT NULL THEN "
        f"'ledger ' || l_status || ', processor ' || p_status || ' since ' || {day} || '; {window}' "
        f"WHEN p_n IS NULL THEN 'not at the processor yet; booked ' || {day} || ', {window}' "
        f"ELSE 'not in the ledger yet; at the processor since ' || {day} || ', {window}' END"
    )
