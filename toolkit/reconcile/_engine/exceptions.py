"""Step 4: one row per exception, with its detail, in report order; a duplicate's extra rows; the
rejected rows of each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from toolkit.errors import InputError
from toolkit.reconcile._engine.details import (
    compared_detail,
    duplicate_detail_parts,
    fx_detail,
    minor_text,
    missing_detail,
    returned_words,
    text,
    transit_detail,
)
from toolkit.reconcile._engine.model import DAY, FAILURE, SUM_TYPE, Run, Side, exact_sum, select, with_names
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.inputs import (
    REJECTED_COLUMNS,
    rejected_frame,
)
from toolkit.reconcile.inputs.checks import trimmed
from toolkit.reconcile.movements import code, kind_name, shown_key
from toolkit.reconcile.relation import Relation, count_if, ident, literal
from toolkit.reconcile.schema import (
    CATEGORIES,
    HELD_ROWS,
)
from toolkit.reconcile.sources.rows import FILE_SHIFT, PART_SHIFT
from toolkit.reconcile.timing import Timing


def duplicate_rows(engine: Backend, side: Side, rows: Kept, flagged: Kept) -> Kept:
    """Per duplicated key of ``side``: its rows (``_rows_text``, in file order; each with its
    amount, currency and status when they differ), how many, and the values of the row shown
    (the first that took or may take money besides the row compared, the one that should not be
    there), as ``l2_*`` or ``p2_*``."""
    p = side.name[0]
    compared = f"SELECT key AS _ck, {p}_ord AS _cord FROM {flagged} WHERE duplicate_in_{side.name}"
    extra = f"(_st <> {FAILURE} AND _ord <> _cord)"
    ranked = (
        f"SELECT *, {extra} AS _is_extra, _ord AS r_ord, _cur AS r_cur, _st AS r_st, "
        f"ROW_NUMBER() OVER (PARTITION BY _key ORDER BY CASE WHEN {extra} THEN 0 ELSE 1 END, _ord) AS _rank "
        f"FROM {rows} AS _r JOIN ({compared}) AS _c ON _r._key = _c._ck"
    )
    named = with_names(engine, ranked, "r", side)
    each = (
        f"{text('r_row')} || ': ' || {minor_text('_minor', 'r_digits')} "
        "|| ' ' || r_currency || ' ' || r_status"
    )
    numbers = (
        "ARRAY_TO_STRING(LIST_TRANSFORM(LIST_SORT(ARRAY_AGG(r_row)), lambda _x: CAST(_x AS VARCHAR)), ', ')"
    )
    described = (
        f"ARRAY_TO_STRING(LIST_TRANSFORM(LIST_SORT(ARRAY_AGG({{'row': r_row, 'text': {each}}})), "
        "lambda _x: _x.text), ', ')"
    )
    alike = "MIN(_minor) = MAX(_minor) AND MIN(_cur) = MAX(_cur) AND MIN(_st) = MAX(_st)"
    shown = [
        f"MAX(CASE WHEN _rank = 1 THEN _{name} END) AS {p}2_{name}" for name in ("minor", "cur", "st", "ord")
    ]
    grouped = (
        f"SELECT _key AS _dup_key, CASE WHEN {alike} THEN {numbers} ELSE {described} END AS _rows_text, "
        f"COUNT(*) AS _count, {', '.join(shown)} FROM ({named}) GROUP BY _key"
    )
    # What is at risk: every extra row that took or may take money, in the shown row's currency.
    extras = (
        f"SELECT _key AS _ek, _cur AS _ecur, SUM(CAST(ABS(_minor) AS {SUM_TYPE})) AS _extra "
        f"FROM ({ranked}) WHERE _is_extra GROUP BY _key, _cur"
    )
    joined = (
        f"SELECT _g.*, _e._extra FROM ({grouped}) AS _g LEFT JOIN ({extras}) AS _e "
        f"ON _g._dup_key = _e._ek AND _g.{p}2_cur = _e._ecur"
    )
    return engine.keep(joined, stem="duplicates")


#: The values of each side's row an exception row shows.
_SHOWN = ("minor", "digits", "currency", "status", "row", "source")


#: The columns of an exception row in the backend, with their types: what ``EXCEPTION_COLUMNS``
#: shows, the summary's ``_cur`` and ``_amount``, and the report order's ``_rank`` (category),
#: ``_on_processor`` (the ledger's rows first) and ``_row``.
LISTED = {
    "merchantReferenceId": "VARCHAR",
    "category": "VARCHAR",
    "kind": "VARCHAR",
    "_rank": "BIGINT",
    "_on_processor": "BOOLEAN",
    "l_minor": "BIGINT",
    "l_digits": "BIGINT",
    "l_currency": "VARCHAR",
    "l_status": "VARCHAR",
    "l_row": "BIGINT",
    "l_source": "VARCHAR",
    "p_minor": "BIGINT",
    "p_digits": "BIGINT",
    "p_currency": "VARCHAR",
    "p_status": "VARCHAR",
    "p_row": "BIGINT",
    "p_source": "VARCHAR",
    "_row": "BIGINT",
    "detail": "VARCHAR",
    "age_days": "BIGINT",
    "_amount": "BIGINT",
    "_cur": "VARCHAR",
    "_p_ord": "BIGINT",
}


@dataclass
class _Parts:
    """The exception rows' queries, a category at a time: only the categories found (a smaller
    query), each row with the columns of ``LISTED``."""

    stats: pd.DataFrame
    cutoff: int | None
    queries: list[str] = field(default_factory=list)

    def add(
        self,
        category: str,
        table: str,
        on_processor: bool | str,
        detail: str,
        amount: str,
        currency: str | None = None,
        dated_by: str | None = None,
        **shown: str,
    ) -> None:
        """The rows of ``category`` in ``table``: shown on the processor's row when
        ``on_processor`` (a condition, or always or never), their ``detail`` and ``amount``
        (expressions), the amount's currency (default: the currency of the rows shown), the date
        their age counts from, and any of the side's values shown otherwise (``shown``)."""
        if not self.stats[category].sum():
            return
        when = "COALESCE(l_when, p_when)" if dated_by is None else dated_by
        processor = on_processor if isinstance(on_processor, str) else ("TRUE" if on_processor else "FALSE")
        columns = {
            "merchantReferenceId": shown_key("key"),
            "category": f"'{category}'",
            "kind": kind_name("COALESCE(p_kind, l_kind)"),
            "_rank": str(CATEGORIES.index(category)),
            "_on_processor": processor,
            **{f"{p}_{name}": f"{p}_{name}" for p in "lp" for name in _SHOWN},
        }
        columns |= shown
        columns["_row"] = f"CASE WHEN {processor} THEN {columns['p_row']} ELSE {columns['l_row']} END"
        columns["_p_ord"] = columns.get("p_ord", "p_ord")  # the processor's row shown, for its references
        columns["detail"] = returned_words(category, "COALESCE(p_kind, l_kind)", detail)
        columns["age_days"] = "NULL" if self.cutoff is None else f"FLOOR(({self.cutoff} - {when}) / {DAY})"
        # At risk or at stake, a refund's as much as a charge's; only a variance keeps its sign.
        columns["_amount"] = amount if category == "within_tolerance" else f"ABS({amount})"
        shown_currency = f"COALESCE({columns['l_currency']}, {columns['p_currency']})"  # the rows shown
        columns["_cur"] = shown_currency if currency is None else currency
        self.queries.append(
            select([f"CAST({columns[c]} AS {kind}) AS {c}" for c, kind in LISTED.items()], table)
        )


def exception_rows(run: Run, duplicates: dict[str, Kept]) -> Relation | None:
    """One row per exception or informational row (None: there is none), in the backend
    (``LISTED``), in the order of ``CATEGORIES``."""
    engine, (led, pro) = run.engine, run.sides
    named = with_names(engine, with_names(engine, str(run.flagged), "l", led), "p", pro)
    f = engine.keep(named, stem="named")  # a few rows; read once per part
    timing = run.rules.timing
    parts = _Parts(run.stats, None if timing is None else timing.cutoff_seconds)
    _compared_parts(parts, f, run.sides)
    duplicate_detail_parts(parts.add, engine, f, duplicates, run.sides)
    _outcome_parts(parts, f, timing)
    if not parts.queries:
        return None
    listed = Relation(" UNION ALL ".join(parts.queries), tuple(LISTED), (f, *duplicates.values()))
    shown = ""  # the processor rows listed, by ``_ord``, where their references or fees are read
    if _reference_columns(pro) or _has_fees(pro):
        # The references and the fees each join the rows listed and read which processor rows
        # they show: kept once, the union is computed once, not four times in one query (84 KB
        # of SQL for a month's Stripe export, its slowest query: 2.2 s of a warm 6.2 s on Spark).
        kept = engine.keep(listed, stem="listed")
        listed = Relation(f"SELECT * FROM {kept}", tuple(LISTED), (kept,))
        shown = f"SELECT DISTINCT _p_ord FROM {kept} WHERE _p_ord IS NOT NULL"
    return with_fees(with_references(listed, pro, shown), pro, shown)


def _reference_columns(pro: Side) -> list[str]:
    """The processor's own reference columns its export layout names, of those its file has."""
    layout = pro.loaded.layout
    return [c for c in (layout.references if layout else ()) if c in pro.written.columns]


def _has_fees(pro: Side) -> bool:
    """Whether the processor's export layout splits fees off its rows (``[[split]]`` of kind fee)."""
    layout = pro.loaded.layout
    return layout is not None and any(split.kind == "fee" for split in layout.splits)


def with_references(listed: Relation, pro: Side, shown: str) -> Relation:
    """``listed`` with ``processor_reference``: the processor's own references of the row shown
    (``Psp Reference 8800...; Batch Number 7``), read again for those few rows (``shown``, their
    ``_ord``) from the file as written, where its export layout names them (``exports/``); null
    otherwise."""
    own = _reference_columns(pro)
    if not own:
        return listed.mutate(processor_reference="CAST(NULL AS VARCHAR)")
    said = ", ".join(
        f"CASE WHEN {trimmed(ident(c))} <> '' THEN {literal(c + ' ')} || {trimmed(ident(c))} END" for c in own
    )
    written = pro.written.filter(f"_ord IN ({shown})")
    references = f"SELECT _ord AS _ref_ord, CONCAT_WS('; ', {said}) AS _ref FROM ({written})"
    joined = (
        f"SELECT _l.*, _r._ref AS processor_reference FROM ({listed}) AS _l "
        f"LEFT JOIN ({references}) AS _r ON _l._p_ord = _r._ref_ord"
    )
    return Relation(joined, (*listed.columns, "processor_reference"), (*listed.needs, *written.needs))


def with_fees(listed: Relation, pro: Side, shown: str) -> Relation:
    """``listed`` with ``_fee_minor``: the fee the processor took on the row shown, in its minor
    units (positive when charged), so that the gross amount compared is shown with its fee and
    net. It is the row's fee movements (its export layout's ``[[split]]`` of kind ``fee``: Stripe's
    ``fee``, Adyen's commission, markup, scheme fees and interchange) added up; null where the row
    has none, where one cannot be read, or where one is in another currency than the row's."""
    if not _has_fees(pro):
        return listed.mutate(_fee_minor="CAST(NULL AS BIGINT)")
    # A split movement's ``_ord`` is its row's with the part in the bits above the row number.
    row_of = f"(_ord - _ord % {1 << FILE_SHIFT} + _ord % {1 << PART_SHIFT})"
    split_fees = (
        f"SELECT {row_of} AS _of, _minor AS _fminor, _cur AS _fcur, _rejected AS _frejected "
        f"FROM ({pro.rows}) WHERE _kind = {code('fee')} AND _ord % {1 << FILE_SHIFT} >= {1 << PART_SHIFT}"
    )
    shown_rows = f"SELECT _ord AS _sord, _cur AS _scur FROM ({pro.rows}) WHERE _ord IN ({shown})"
    unusable = "_f._frejected OR _f._fcur IS NULL OR _f._fcur <> _s._scur"
    fees = (
        f"SELECT _s._sord AS _fee_ord, CASE WHEN {count_if(unusable)} = 0 "
        f"THEN CAST(-{exact_sum('_f._fminor')} AS BIGINT) END AS _fee "
        f"FROM ({shown_rows}) AS _s JOIN ({split_fees}) AS _f ON _f._of = _s._sord GROUP BY _s._sord"
    )
    joined = (
        f"SELECT _l.*, _fe._fee AS _fee_minor FROM ({listed}) AS _l "
        f"LEFT JOIN ({fees}) AS _fe ON _l._p_ord = _fe._fee_ord"
    )
    return Relation(joined, (*listed.columns, "_fee_minor"), listed.needs)


#: A key's amount was compared at a reference rate (``rates.py``).
_AT_A_RATE = "fx_state IS NOT NULL"


def _compared_parts(parts: _Parts, f: Kept, sides: tuple[Side, Side]) -> None:
    """A key missing from a side, and a key on both whose amount, currency or status differ."""
    led, pro = sides
    for category, on_processor, other in (
        ("missing_in_processor", False, pro),
        ("missing_in_ledger", True, led),
    ):
        if parts.stats[category].sum():
            only, detail = missing_detail(select(["*"], str(f), category), other)
            parts.add(category, only, on_processor, detail, "p_minor" if on_processor else "l_minor")
    fx = _AT_A_RATE
    parts.add(
        "amount_mismatch",
        select(["*"], str(f), "amount_mismatch"),
        False,
        f"CASE WHEN {fx} THEN {fx_detail('beyond')} ELSE {compared_detail('difference')} END",
        f"CASE WHEN {fx} THEN ABS(p_minor - fx_expected) ELSE ABS(l_minus_p) END",
        currency=f"CASE WHEN {fx} THEN p_currency ELSE l_currency END",
    )
    parts.add(
        "currency_mismatch",
        select(["*"], str(f), "currency_mismatch"),
        False,
        "'ledger ' || l_currency || ', processor ' || p_currency "
        "|| CASE WHEN fx_text IS NULL THEN '' ELSE '; ' || fx_text END "
        f"|| '; processor row ' || {text('p_row')}",
        "l_minor",
    )
    parts.add(
        "status_mismatch",
        select(["*"], str(f), "status_mismatch"),
        False,
        f"'ledger ' || l_status || ', processor ' || p_status || '; processor row ' || {text('p_row')}",
        "l_minor",
    )


def _outcome_parts(parts: _Parts, f: Kept, timing: Timing | None) -> None:
    """An outcome the processor does not know yet, a payment in transit, a match within tolerance."""
    parts.add(
        "unknown_outcome",
        select(["*"], str(f), "unknown_outcome"),
        True,
        "'the processor does not know the outcome of this payment'",
        "CASE WHEN l_minor IS NULL THEN p_minor ELSE l_minor END",
    )
    if timing is not None:
        parts.add(
            "in_transit",
            select(["*"], str(f), "in_transit"),
            "l_n IS NULL",
            transit_detail(timing),
            "CASE WHEN l_minor IS NULL THEN p_minor ELSE l_minor END",
            dated_by="COALESCE(p_when, l_when)",
        )
    fx = _AT_A_RATE
    parts.add(
        "within_tolerance",
        select(["*"], str(f), "within_tolerance"),
        False,
        f"CASE WHEN {fx} THEN {fx_detail('within')} "
        f"ELSE {compared_detail('variance', ', within tolerance')} END",
        f"CASE WHEN {fx} THEN fx_expected - p_minor ELSE l_minus_p END",
        currency=f"CASE WHEN {fx} THEN p_currency ELSE l_currency END",
    )


#: Rejected rows of one side a run lists (each held in memory with its reasons), and those
#: quoted when there are more.
REJECTED_ROWS = HELD_ROWS


_QUOTED_REJECTED = 3


def rejected_rows(engine: Backend, side: Side, sums: pd.DataFrame) -> pd.DataFrame:
    """The rows of one side that cannot be used, with their reasons (few, by nature): only those
    rows are read again as written, with the problems the check kept of each. A side none of whose
    rows taking part can be used stops the run (``InputError``, exit 2): the file is not read as
    payments, and a report of it as rejected rows would say "ok".

    More than ``REJECTED_ROWS`` of them (a whole file misread: a wrong decimal mark, a column
    mapped wrong) would take gigabytes with their reasons (3M: 8.7 GB): the run stops instead,
    quoting the first ones, so that the file can be read as it should be."""
    count = int(sums["rejected"].sum())
    if not count:
        return pd.DataFrame({name: [] for name in REJECTED_COLUMNS}).astype({"source_row": "int64"})
    bad = f"SELECT _ord AS _bad_ord, _why FROM {side.checked} WHERE _rejected"
    if count > REJECTED_ROWS:
        quoted = engine.arrow(f"{bad} ORDER BY _ord LIMIT {_QUOTED_REJECTED}").column("_bad_ord").to_pylist()
        bad += f" AND _ord IN ({', '.join(str(int(ord)) for ord in quoted)})"
    written = side.written
    rows = Relation(
        f"SELECT _w.*, _b._why FROM ({written}) AS _w JOIN ({bad}) AS _b ON _w._ord = _b._bad_ord",
        (*written.columns, "_why"),
        (*written.needs, side.checked),
    )
    frame = rejected_frame(side.loaded, engine, rows, side.flags)
    if count > REJECTED_ROWS:
        raise InputError(
            f"{side.loaded.source}: {count:,} rows cannot be used, more than a run lists "
            f"({REJECTED_ROWS:,}); the first: {_quoted(frame)}. Is the file read as it should be (--decimal, "
            "a column map)?"
        )
    taking_part = int(sums["rows"].sum()) - int(sums["outside"].sum()) - int(sums["after"].sum())
    if count == taking_part:  # not one usable row: no reconciliation to speak of, not an "ok"
        raise InputError(
            f"{side.loaded.source}: none of the {side.name}'s {count:,} rows can be used; the first: "
            f"{_quoted(frame)}. Does it hold payments, and is it read as it should be "
            f"(toolkit reconcile inspect; --{side.name}-map, --decimal, --header-row)?"
        )
    return frame


def _quoted(rejected: pd.DataFrame) -> str:
    """The first rejected rows with their reasons, for an error that stops the run."""
    first = rejected.head(_QUOTED_REJECTED)
    return "; ".join(f"row {r.source_row}: {r.detail}" for r in first.itertuples())
