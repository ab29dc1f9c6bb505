"""Statements read as one: each entry counted once, each account's statements checked end to end.

De-duplication. An entry's key is its account, currency, amount and the bank's own reference;
an entry without a reference (BAI2 and MT940 may omit it) is keyed by everything it says: its
booking and value dates, amount, counterparty and remittance text. Within one statement every
entry counts, even two with the same key (a statement lists each booking once). Across
statements a key counts as often as the statement that lists it most often: the copies in
other statements are repeats (a file delivered twice, or two statements that overlap). That is
safe for entries without a reference because a statement reports every entry booked on the days
it covers, so two statements that both hold a day hold the same entries for it.

Continuity. A statement identical to an earlier one (account, currency, balances and their
dates) is a repeat and is skipped. The others, per account and currency, are ordered by closing
date and then opening date, and each opening balance must equal the closing balance before it;
where it does not, or where a balance is missing, the pair is a gap.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

import pyarrow as pa

from toolkit.money import from_minor
from toolkit.reconcile.bank._model import Entry, Statement

ENTRY_SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("account", pa.string()),
        ("currency", pa.string()),
        ("amount_minor", pa.int64()),
        ("amount", pa.string()),
        ("booking_date", pa.date32()),
        ("value_date", pa.date32()),
        ("entry_reference", pa.string()),
        ("counterparty", pa.string()),
        ("remittance", pa.string()),
        ("reversal", pa.bool_()),
        ("source", pa.string()),
        ("source_place", pa.string()),
    ]
)
REPEAT_SCHEMA = ENTRY_SCHEMA.append(pa.field("kept_source", pa.string())).append(
    pa.field("kept_place", pa.string())
)
STATEMENT_SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("format", pa.string()),
        ("account", pa.string()),
        ("currency", pa.string()),
        ("opening_minor", pa.int64()),
        ("opening_date", pa.date32()),
        ("opening_derived", pa.bool_()),
        ("closing_minor", pa.int64()),
        ("closing_date", pa.date32()),
        ("entries", pa.int64()),
        ("repeat_of", pa.string()),
        ("source", pa.string()),
        ("source_place", pa.string()),
    ]
)
GAP_SCHEMA = pa.schema(
    [
        ("account", pa.string()),
        ("currency", pa.string()),
        ("before_statement", pa.string()),
        ("before_source", pa.string()),
        ("before_closing_minor", pa.int64()),
        ("before_closing_date", pa.date32()),
        ("after_statement", pa.string()),
        ("after_source", pa.string()),
        ("after_opening_minor", pa.int64()),
        ("after_opening_date", pa.date32()),
        ("difference_minor", pa.int64()),
        ("reason", pa.string()),
    ]
)


@dataclass(frozen=True)
class Combined:
    """The four tables of ``BankStatements``."""

    entries: pa.Table
    repeated: pa.Table
    statements: pa.Table
    gaps: pa.Table


def combine(statements: list[Statement]) -> Combined:
    """One set of tables from statements read from any number of files and formats."""
    ordered = sorted(statements, key=_order)
    repeat_of = _repeated_statements(ordered)
    kept: list[dict[str, object]] = []
    repeated: list[dict[str, object]] = []
    seen: dict[tuple[Hashable, ...], tuple[int, str, str]] = {}
    for index, statement in enumerate(ordered):
        counts: Counter[tuple[Hashable, ...]] = Counter()
        for entry in statement.entries:
            key = _key(statement, entry)
            counts[key] += 1
            row = _entry_row(statement, entry)
            first = seen.setdefault((*key, counts[key]), (index, statement.source, entry.place))
            if first[0] == index:
                kept.append(row)
            else:
                repeated.append({**row, "kept_source": first[1], "kept_place": first[2]})
    return Combined(
        entries=pa.Table.from_pylist(kept, schema=ENTRY_SCHEMA),
        repeated=pa.Table.from_pylist(repeated, schema=REPEAT_SCHEMA),
        statements=pa.Table.from_pylist(
            [_statement_row(s, repeat_of.get(id(s))) for s in ordered], schema=STATEMENT_SCHEMA
        ),
        gaps=pa.Table.from_pylist(_gaps([s for s in ordered if id(s) not in repeat_of]), schema=GAP_SCHEMA),
    )


def _order(statement: Statement) -> tuple[str, ...]:
    """Per account, by closing then opening date (undated last), then by file and place."""
    closing = statement.closing_date or statement.opening_date
    return (
        statement.account,
        statement.currency,
        closing.isoformat() if closing else "~",
        statement.opening_date.isoformat() if statement.opening_date else "~",
        statement.source,
        statement.place,
    )


def _key(statement: Statement, entry: Entry) -> tuple[Hashable, ...]:
    if entry.entry_reference:
        return ("reference", statement.account, statement.currency, entry.amount_minor, entry.entry_reference)
    return (
        "content",
        statement.account,
        statement.currency,
        entry.amount_minor,
        entry.booking_date,
        entry.value_date,
        entry.counterparty,
        entry.remittance,
    )


def _repeated_statements(ordered: list[Statement]) -> dict[int, str]:
    """Statements identical to an earlier one, by ``id``, with the earlier one's file and place."""
    first: dict[tuple[object, ...], Statement] = {}
    repeats: dict[int, str] = {}
    for s in ordered:
        identity = (s.account, s.currency, s.opening_minor, s.opening_date, s.closing_minor, s.closing_date)
        earlier = first.setdefault(identity, s)
        if earlier is not s:
            repeats[id(s)] = f"{earlier.source}: {earlier.place}"
    return repeats


def _gaps(ordered: list[Statement]) -> list[dict[str, object]]:
    gaps: list[dict[str, object]] = []
    for before, after in itertools.pairwise(ordered):
        if (before.account, before.currency) != (after.account, after.currency):
            continue
        if before.closing_minor is None or after.opening_minor is None:
            reason = "a balance is missing, so continuity cannot be checked"
        elif before.closing_minor != after.opening_minor:
            reason = "the opening balance differs from the closing balance before it"
        else:
            continue
        difference = (
            after.opening_minor - before.closing_minor
            if after.opening_minor is not None and before.closing_minor is not None
            else None
        )
        gaps.append(
            {
                "account": before.account,
                "currency": before.currency,
                "before_statement": before.statement_id,
                "before_source": before.source,
                "before_closing_minor": before.closing_minor,
                "before_closing_date": before.closing_date,
                "after_statement": after.statement_id,
                "after_source": after.source,
                "after_opening_minor": after.opening_minor,
                "after_opening_date": after.opening_date,
                "difference_minor": difference,
                "reason": reason,
            }
        )
    return gaps


def _entry_row(statement: Statement, entry: Entry) -> dict[str, object]:
    return {
        "statement_id": statement.statement_id,
        "account": statement.account,
        "currency": statement.currency,
        "amount_minor": entry.amount_minor,
        "amount": str(from_minor(entry.amount_minor, statement.currency)),
        "booking_date": entry.booking_date,
        "value_date": entry.value_date,
        "entry_reference": entry.entry_reference,
        "counterparty": entry.counterparty,
        "remittance": entry.remittance,
        "reversal": entry.reversal,
        "source": statement.source,
        "source_place": entry.place,
    }


def _statement_row(statement: Statement, repeat_of: str | None) -> dict[str, object]:
    return {
        "statement_id": statement.statement_id,
        "format": statement.format,
        "account": statement.account,
        "currency": statement.currency,
        "opening_minor": statement.opening_minor,
        "opening_date": statement.opening_date,
        "opening_derived": statement.opening_derived,
        "closing_minor": statement.closing_minor,
        "closing_date": statement.closing_date,
        "entries": len(statement.entries),
        "repeat_of": repeat_of,
        "source": statement.source,
        "source_place": statement.place,
    }
