"""Bank statements as banks send them: ISO 20022 camt.053, SWIFT MT940, BAI2 and OFX.

The first step of reconciling payouts against the bank (issue 38): ``read_statements`` reads any
mix of files, recognises each format from its content, and returns the booked entries once each
(repeats set apart), the statements with their balances, and the gaps where one statement's
closing balance is not the next one's opening balance. Money is exact throughout: minor units
signed from the file's own credit/debit mark, never a float.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from toolkit.errors import InputError
from toolkit.reconcile.bank._combine import combine
from toolkit.reconcile.bank._files import BAI2, CAMT, MT940, OFX, Sources, recognise, statement_files
from toolkit.reconcile.bank._model import Statement

__all__ = ["BankStatements", "read_statements"]


@dataclass(frozen=True)
class BankStatements:
    """What a set of statement files says, as tables.

    ``entries``: one row per booked entry, each counted once (columns in the reference,
    ``docs/reference/bank-statements.md``). ``repeated``: the entries left out as repeats of one
    in ``entries``, with where that one was read, so rows read = ``entries`` + ``repeated``.
    ``statements``: one row per statement, its balances in minor units. ``gaps``: each break in an
    account's chain of balances (a missing statement shows here).
    """

    entries: pa.Table
    repeated: pa.Table
    statements: pa.Table
    gaps: pa.Table


def read_statements(sources: Sources) -> BankStatements:
    """Read bank statement files (a path, a folder, a glob, or a list of them) as one set.

    Raises ``InputError`` naming the file and the place (line, tag or element) of the first
    thing that cannot be read.
    """
    statements: list[Statement] = []
    for path in statement_files(sources):
        statements.extend(_read_file(path))
    combined = combine(statements)
    return BankStatements(
        entries=combined.entries,
        repeated=combined.repeated,
        statements=combined.statements,
        gaps=combined.gaps,
    )


def _read_file(path: Path) -> list[Statement]:
    """One file's statements, by the reader of the format its content shows."""
    name = path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{name}: cannot be read ({exc.strerror})") from None
    kind = recognise(data, name)
    if kind == CAMT:
        from toolkit.reconcile.bank.camt import read_camt

        return read_camt(data, name)
    if kind == OFX:
        from toolkit.reconcile.bank.ofx import read_ofx

        return read_ofx(data, name)
    text = _text(data)
    if kind == MT940:
        from toolkit.reconcile.bank.swift import read_mt940

        return read_mt940(text, name)
    assert kind == BAI2
    from toolkit.reconcile.bank.bai import read_bai2

    return read_bai2(text, name)


def _text(data: bytes) -> str:
    """MT940 and BAI2 are plain text: UTF-8 when it is, else Latin-1 (which every byte is)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")
