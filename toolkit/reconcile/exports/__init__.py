"""Exports as processors write them, each described by a data file: which columns it has, what
its row types mean, how its amounts are signed and its times zoned.

A layout is a TOML file (this folder has Stripe's and Adyen's; a user passes their own with
``--processor-format my_psp.toml``): ``recognise`` (the header names that identify it),
``columns`` (canonical name = the file's column, or a list of them, the first present),
``key.columns`` (patterns of the columns that may hold the order key, such as Stripe's
``payment_metadata[order_id]``; the one whose values match the ledger's keys is taken),
``kinds`` (the file's row types as kinds of ``movements.KINDS``), ``sign.positive`` (``credit``
for an unsigned Debit/Credit pair where a credit is money in), ``fallback`` (columns read where the
mapped ones are all empty: Adyen's net amounts of a fee or payout row), ``time.zone`` and
``time.offsets`` (a column naming each row's time zone, and the offsets of its names), and
``references`` (the processor's own references). docs/reference/export-layouts.md is the guide.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from toolkit.errors import InputError
from toolkit.reconcile.movements import KINDS, normalised

#: The canonical columns a layout may map.
MAPPABLE = (
    "merchantReferenceId",
    "amount",
    "currency",
    "status",
    "type",
    "createTime",
    "date",
    "debit",
    "credit",
    "debitCredit",
)


@dataclass(frozen=True)
class Layout:
    """One export's layout, read from its TOML file (see the module docstring)."""

    name: str
    title: str
    side: str
    recognise: tuple[str, ...]
    columns: tuple[tuple[str, tuple[str, ...]], ...]
    key_columns: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str], ...] = ()
    credit_positive: bool = False
    fallback: tuple[tuple[str, str], ...] = ()
    zone: str | None = None
    offsets: tuple[tuple[str, str], ...] = ()
    references: tuple[str, ...] = ()
    #: How ``date`` is written where it is not a full date: ``DDMM`` (``[date] written``), its year
    #: from ``date_year``: ``extf-header`` (the period of a DATEV EXTF file's first line).
    date_written: str | None = None
    date_year: str | None = None
    #: What to do when no column holds the order key (``key.help``).
    key_help: str = "map the column of the order key with --processor-map merchantReferenceId=COLUMN"

    def matches(self, header: Sequence[str]) -> bool:
        """Whether a file with this header is this export (its names compared without case)."""
        names = {name.strip().lower() for name in header}
        return all(name.lower() in names for name in self.recognise)

    def mapping(self, header: Sequence[str]) -> dict[str, str]:
        """Canonical name -> the file's column, for the columns the file has."""
        own = {name.strip().lower(): name for name in header}
        found: dict[str, str] = {}
        for canonical, names in self.columns:
            column = next((own[n.lower()] for n in names if n.lower() in own), None)
            if column is not None:
                found[canonical] = column
        return found

    def key_candidates(self, header: Sequence[str]) -> list[str]:
        """The file's columns that may hold the order key (``key.columns``), in file order."""
        patterns = [re.compile(p, re.IGNORECASE) for p in self.key_columns]
        return [name for name in header if any(p.fullmatch(name.strip()) for p in patterns)]


#: What a layout file may say (see the module docstring).
_SECTIONS = (
    "title",
    "side",
    "recognise",
    "references",
    "columns",
    "key",
    "kinds",
    "sign",
    "fallback",
    "time",
    "date",
)


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError(f"{where}: expected a column name or a list of them, not {value!r}")


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: [{key}] must be a table")
    return value


def parse_layout(text: str, name: str, where: str) -> Layout:
    """A layout from its TOML text; ``InputError`` naming ``where`` and the fault when it is not one."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not a layout file: {exc}") from None
    unknown = set(data) - set(_SECTIONS)
    if unknown:
        raise InputError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    columns = _table(data, "columns", where)
    bad = set(columns) - set(MAPPABLE)
    if bad:
        raise InputError(
            f"{where}: [columns] maps {', '.join(sorted(bad))}; a layout maps {', '.join(MAPPABLE)}"
        )
    kinds = {normalised(word): str(kind) for word, kind in _table(data, "kinds", where).items()}
    wrong = sorted({kind for kind in kinds.values() if kind not in KINDS})
    if wrong:
        raise InputError(f"{where}: [kinds] names {', '.join(wrong)}; the kinds are {', '.join(KINDS)}")
    recognise = _texts(data.get("recognise", []), f"{where}: recognise") if data.get("recognise") else ()
    time, key = _table(data, "time", where), _table(data, "key", where)
    positive = _table(data, "sign", where).get("positive", "debit")
    if positive not in ("debit", "credit"):
        raise InputError(f"{where}: [sign] positive is debit or credit, not {positive!r}")
    return Layout(
        name=name,
        title=str(data.get("title", name)),
        side=str(data.get("side", "processor")),
        recognise=recognise,
        columns=tuple((c, _texts(v, f"{where}: columns.{c}")) for c, v in columns.items()),
        key_columns=_texts(key["columns"], f"{where}: key.columns") if key.get("columns") else (),
        kinds=tuple(kinds.items()),
        credit_positive=positive == "credit",
        fallback=tuple((c, str(v)) for c, v in _table(data, "fallback", where).items()),
        zone=str(time["zone"]) if "zone" in time else None,
        offsets=tuple((str(k).upper(), str(v)) for k, v in _table(time, "offsets", where).items()),
        references=_texts(data["references"], f"{where}: references") if data.get("references") else (),
        **({"key_help": str(key["help"])} if "help" in key else {}),
        **_date_rule(_table(data, "date", where), where),
    )


def _date_rule(rule: Mapping[str, Any], where: str) -> dict[str, str]:
    """``[date]``: a date written as ``DDMM`` with its year from a DATEV ``extf-header``."""
    if not rule:
        return {}
    if rule.get("written") != "DDMM" or rule.get("year") != "extf-header":
        raise InputError(f'{where}: [date] reads written = "DDMM" with year = "extf-header" only')
    return {"date_written": "DDMM", "date_year": "extf-header"}


@functools.cache
def builtin() -> tuple[Layout, ...]:
    """The layouts this package ships, by name (their file's stem)."""
    folder = resources.files(__package__)
    return tuple(
        parse_layout(entry.read_text(encoding="utf-8"), entry.name.removesuffix(".toml"), entry.name)
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    )


def layout_named(name: str | Path) -> Layout:
    """A shipped layout by its name, or a user's layout file by its path."""
    text = str(name)
    for layout in builtin():
        if layout.name == text.replace("-", "_"):
            return layout
    path = Path(text)
    if path.suffix == ".toml" or path.exists():
        try:
            return parse_layout(path.read_text(encoding="utf-8"), path.stem, str(path))
        except OSError as exc:
            raise InputError(f"{path}: cannot read the layout file: {exc.strerror or exc}") from None
    names = ", ".join(layout.name for layout in builtin())
    raise InputError(f"no export layout {text!r}: the toolkit has {names}, or give a .toml file")


def recognised(header: Sequence[str], side: str) -> Layout | None:
    """The shipped layout whose ``recognise`` columns the header has (None: none does)."""
    return next((layout for layout in builtin() if layout.side == side and layout.matches(header)), None)
