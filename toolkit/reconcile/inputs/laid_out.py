"""An export read as its layout says (``exports/``): the net amounts of a row without gross ones,
each row's time in its own time zone, its status words, the report's own lines left out, the
movements a row holds beside its own (``split_movements``), and the order key's column among the
metadata columns that may hold it.
"""

from __future__ import annotations

import csv
import re
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.errors import InputError
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.exports import Layout
from toolkit.reconcile.inputs.checks import ZERO, trimmed
from toolkit.reconcile.relation import Relation, count_if, ident, literal
from toolkit.reconcile.sources.rows import PART_SHIFT

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput
    from toolkit.reconcile.sources import Described


def laid_out(table: Relation, layout: Layout, facts: dict[str, str]) -> Relation:
    """``table`` (its columns renamed to the canonical ones) with the layout's ``fallback``
    columns where the amounts it maps are all empty (Adyen: a fee's or payout's net amount and
    currency), ``createTime`` with the offset of the row's time zone (``time``), and a ``date``
    written as day and month with its year (``extf_facts``: DATEV); ``status`` in the toolkit's
    words (``statuses``), and without the report's own lines (``skip``)."""
    for column, pattern in layout.skip:
        if column in table.columns:
            table = table.filter(f"NOT REGEXP_MATCHES({trimmed(ident(column))}, {literal(pattern)})")
    if layout.statuses and "status" in table.columns:
        said = f"LOWER({trimmed(ident('status'))})"
        cases = " ".join(f"WHEN {said} = {literal(w)} THEN {literal(s)}" for w, s in layout.statuses)
        table = table.mutate(status=f"CASE {cases} ELSE status END")
    fallback = [(canonical, own) for canonical, own in layout.fallback if own in table.columns]
    amounts = [c for c, _ in fallback if c in ("amount", "debit", "credit") and c in table.columns]
    if fallback and amounts:
        empty = " AND ".join(f"{trimmed(ident(c))} = ''" for c in amounts)
        table = table.mutate(
            **{c: f"CASE WHEN {empty} THEN {ident(own)} ELSE {ident(c)} END" for c, own in fallback}
        )
    if layout.zone and layout.zone in table.columns and "createTime" in table.columns:
        zone, when = f"UPPER({trimmed(ident(layout.zone))})", trimmed(ident("createTime"))
        offsets = " ".join(
            f"WHEN {zone} = {literal(name)} THEN {when} || {literal(offset)}"
            for name, offset in layout.offsets
        )
        # A zone the layout does not know is written after the time, for the date check to read
        # (a zone's name such as Europe/Paris) or refuse: never read as UTC.
        unknown = f"{when} || ' ' || {trimmed(ident(layout.zone))}"
        table = table.mutate(
            createTime=f"CASE WHEN {when} = '' OR {zone} = '' THEN {when} {offsets} ELSE {unknown} END"
        )
    if layout.date_written == "DDMM" and "date" in table.columns and facts:
        table = _day_and_month(table, facts)
    return table


def split_movements(backend: Backend, table: Relation, layout: Layout) -> Relation:
    """Every row, then once more as each movement it holds in a column of its own (the layout's
    ``[[split]]``: a charge's refunded or disputed amount, its fee) where that column is written
    and not zero: of the split's kind (``type``), its amount (a fee money out), currency and
    time. One pass over the rows, each joined with the numbers of its parts (``_part``, 0 the row
    itself) and kept where that part is written. A split row keeps the row's number
    (``source_row``), and its own ``_ord`` above the row's (``PART_SHIFT``). Rows of a file with
    no ``type`` column are typed by their sign."""
    if not layout.splits:
        return table
    base = table if "type" in table.columns else table.mutate(type="''")
    count = len(layout.splits) + 1
    numbers = pa.table({"_part": pa.array(range(count), pa.int64())})
    parts = backend.constant(f"parts_{count}", lambda: numbers)
    cases: dict[str, list[str]] = {}
    held = ["_part = 0"]
    for number, split in enumerate(layout.splits, start=1):
        written = trimmed(ident(split.amount))
        amount = written
        if split.kind == "fee":  # a fee is written as charged (positive): money out
            amount = (
                f"CASE WHEN STARTS_WITH({written}, '-') THEN SUBSTRING({written}, 2) "
                f"WHEN STARTS_WITH({written}, '+') THEN '-' || SUBSTRING({written}, 2) "
                f"ELSE '-' || {written} END"
            )
        values = {"amount": amount, "type": literal(split.kind)}
        if split.currency is not None and "currency" in base.columns:
            own = trimmed(ident(split.currency))
            values["currency"] = f"CASE WHEN {own} = '' THEN currency ELSE {own} END"
        if split.create_time is not None and "createTime" in base.columns:
            own = trimmed(ident(split.create_time))
            values["createTime"] = f"CASE WHEN {own} = '' THEN {ident('createTime')} ELSE {own} END"
        for column, value in values.items():
            cases.setdefault(column, []).append(f"WHEN {number} THEN {value}")
        conditions = [f"{written} <> ''", f"NOT REGEXP_MATCHES({written}, {literal(ZERO)})"]
        for column, said in split.unless:
            words = ", ".join(literal(w) for w in said)
            conditions.append(f"COALESCE(LOWER({trimmed(ident(column))}) NOT IN ({words}), TRUE)")
        held.append(f"(_part = {number} AND {' AND '.join(conditions)})")
    columns = [
        f"CASE _part {' '.join(cases[c])} ELSE {ident(c)} END AS {ident(c)}" if c in cases else ident(c)
        for c in base.columns
        if c != "_ord"
    ]
    sql = (
        f"SELECT {', '.join(columns)}, _ord + _part * {1 << PART_SHIFT} AS _ord "
        f"FROM ({base}) AS _s CROSS JOIN {parts} AS _p WHERE {' OR '.join(held)}"
    )
    names = (*(c for c in base.columns if c != "_ord"), "_ord")
    return Relation(sql, names, (*base.needs, parts))


def _day_and_month(table: Relation, facts: dict[str, str]) -> Relation:
    """``date`` written ``DDMM`` (``0105``, ``105``) as ``YYYY-MM-DD``, the year the one of the
    file's period (``start`` to ``end``, ``YYYYMMDD``) that holds that day; any other text as it
    is (the date check reads or refuses it). ``currency`` where empty: the file's."""
    start, end = facts["start"], facts["end"]
    written = trimmed(ident("date"))
    padded = f"LPAD({written}, 4, '0')"
    day, month = f"SUBSTRING({padded}, 1, 2)", f"SUBSTRING({padded}, 3, 2)"
    first_year, last_year = literal(start[:4]), literal(end[:4])
    year = f"CASE WHEN {month} || {day} >= {literal(start[4:8])} THEN {first_year} ELSE {last_year} END"
    short = f"REGEXP_MATCHES({written}, '^[0-9]{{3,4}}$')"
    table = table.mutate(
        date=f"CASE WHEN {short} THEN {year} || '-' || {month} || '-' || {day} ELSE {written} END"
    )
    if facts.get("currency") and "currency" in table.columns:
        currency = literal(facts["currency"])
        table = table.mutate(
            currency=f"CASE WHEN {trimmed(ident('currency'))} = '' THEN {currency} ELSE currency END"
        )
    return table


def extf_facts(described: Described) -> tuple[tuple[str, str], ...]:
    """The period (``start``, ``end``: fields 15 and 16, ``YYYYMMDD``) and the currency (field
    22) of a DATEV EXTF file's first line, which a booking's ``Belegdatum`` (day and month)
    needs for its year; ``InputError`` when the first line is no such header."""
    first = ""
    if described.paths:
        with described.paths[0].open(encoding=described.encoding, newline="") as handle:
            first = handle.readline()
    fields = next(csv.reader([first], delimiter=described.delimiter or ";"), [])
    fields = [field.strip().strip('"') for field in fields]
    dated = (
        len(fields) > 21
        and fields[0] in ("EXTF", "DTVF")
        and all(re.fullmatch(r"[0-9]{8}", fields[i]) for i in (14, 15))
    )
    if not dated:
        raise InputError(
            f"{described.name}: its first line is not a DATEV EXTF header with the batch's period "
            "(fields 15 and 16, YYYYMMDD), which gives Belegdatum (DDMM) its year"
        )
    return (("start", fields[14]), ("end", fields[15]), ("currency", fields[21].upper()))


def key_column_matching(backend: Backend, processor: LoadedInput, ledger: LoadedInput) -> str:
    """Of the processor's ``key_choices``, the column whose values match the most of the
    ledger's keys (the first on a tie)."""
    choices = processor.key_choices
    own = {canonical: column for column, canonical in ledger.renames}.get(
        "merchantReferenceId", "merchantReferenceId"
    )
    books = sources.read(backend, ledger.described, frozenset([own]))
    keys = f"SELECT DISTINCT {trimmed(ident(own))} AS _k FROM ({books})"
    rows = sources.read(backend, processor.described, frozenset(choices))
    picked = ", ".join(f"{count_if(f'_b{i}._k IS NOT NULL')} AS _m{i}" for i in range(len(choices)))
    joins = " ".join(
        f"LEFT JOIN ({keys}) AS _b{i} ON {trimmed(f'_r.{ident(c)}')} = _b{i}._k"
        for i, c in enumerate(choices)
    )
    counts = backend.arrow(f"SELECT {picked} FROM ({rows}) AS _r {joins}").to_pylist()[0]
    matches = [int(counts[f"_m{i}"] or 0) for i in range(len(choices))]
    return choices[matches.index(max(matches))]
