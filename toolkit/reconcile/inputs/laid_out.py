"""A processor's export read as its layout says (``exports/``): the net amounts of a row without
gross ones, each row's time in its own time zone, and the order key's column among the metadata
columns that may hold it.
"""

from __future__ import annotations

import csv
import re
from typing import TYPE_CHECKING

from toolkit.errors import InputError
from toolkit.reconcile import sources
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.exports import Layout
from toolkit.reconcile.inputs.checks import trimmed
from toolkit.reconcile.relation import count_if, ident, literal

if TYPE_CHECKING:
    from toolkit.reconcile.inputs import LoadedInput
    from toolkit.reconcile.relation import Relation
    from toolkit.reconcile.sources import Described


def laid_out(table: Relation, layout: Layout, facts: dict[str, str]) -> Relation:
    """``table`` (its columns renamed to the canonical ones) with the layout's ``fallback``
    columns where the amounts it maps are all empty (Adyen: a fee's or payout's net amount and
    currency), ``createTime`` with the offset of the row's time zone (``time``), and a ``date``
    written as day and month with its year (``extf_facts``: DATEV)."""
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
