"""Exports as processors and bookkeeping tools write them, each described by a data file: which
columns it has, what its row types mean, how its amounts are signed and its times zoned.

A layout is a TOML file (this folder has Stripe's, Adyen's, DATEV's, QuickBooks' and Xero's; a
user passes their own with ``--processor-format my_psp.toml``): ``recognise`` (the header names
that identify it), ``columns`` (canonical name = the file's column, or a list of them, the first
present), ``key.columns`` (patterns of the columns that may hold the order key, such as Stripe's
``payment_metadata[order_id]``; the one whose values match the ledger's keys is taken), ``kinds``
(the file's row types as kinds of ``movements.KINDS``), ``sign.positive`` (``credit`` for an
unsigned Debit/Credit pair where a credit is money in), ``fallback`` (columns read where the
mapped ones are all empty: Adyen's net amounts of a fee or payout row), ``time.zone`` and
``time.offsets`` (a column naming each row's time zone, and the offsets of its names),
``references`` (the processor's own references), ``statuses`` (the file's status words as the
toolkit's), ``[[split]]`` (movements a row holds in columns of their own: a payments export's
refunded and disputed amounts, a row's fee), ``skip`` (a report's own lines, such as headings,
totals and balances, which are not bookings), ``payout`` (the payout each row was paid out in,
and its net amount) and ``date`` (how dates are written). docs/reference/export-layouts.md is the
guide.
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
from toolkit.payment_status import PAYMENT_STATUS_NAMES
from toolkit.reconcile.date_formats import date_format
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
    "pricingAmount",
    "pricingCurrency",
)


@dataclass(frozen=True)
class Split:
    """A movement a row holds in a column of its own (``[[split]]``): Stripe's payments export
    writes a charge's refunded and disputed amounts beside it, a balance report a charge's fee.
    Where ``amount`` is written and not zero (and ``unless`` does not hold), the row is read a
    second time as a movement of ``kind``: that amount (a fee as money out whatever its sign),
    in the currency of the column ``currency`` (else the row's), dated by ``createTime`` where
    written (else the row's)."""

    kind: str
    amount: str
    currency: str | None = None
    create_time: str | None = None
    #: (column, its values in lower case): the row holds no such movement where the column says
    #: one of them (a dispute won returned the money).
    unless: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def columns(self) -> tuple[str, ...]:
        """The file's columns this split reads."""
        named = (self.amount, self.currency, self.create_time, *(c for c, _ in self.unless))
        return tuple(c for c in named if c)


@dataclass(frozen=True)
class PayoutColumns:
    """Where an export ties each row to the payout that paid it out (``[payout]``): the payout's
    ``reference`` (Stripe's ``automatic_payout_id``, Adyen's ``Batch Number``) and each row's net
    amount, in the currency of ``currency`` (else the row's): signed in ``net``, or an unsigned
    pair ``net_credit`` (money in) and ``net_debit``. The items of a payout add up to it in their
    net amounts, fees taken off (``_engine/payouts.py``)."""

    reference: str
    #: The column of a payout row's own id, where ``reference`` names only the payout an item
    #: was paid out in (Stripe: a payout row's ``source_id`` is its ``po_`` id).
    own: str | None = None
    net: str | None = None
    net_credit: str | None = None
    net_debit: str | None = None
    currency: str | None = None

    def columns(self) -> tuple[str, ...]:
        """The file's columns the payout totals read."""
        named = (self.reference, self.own, self.net, self.net_credit, self.net_debit, self.currency)
        return tuple(c for c in named if c)


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
    #: How the file writes its dates (``[date] format``, strftime-style): the profile's order of a
    #: slashed date, where the rows cannot decide it and no option says it.
    date_format: str | None = None
    #: The file's status words (lower case) and the toolkit's statuses they are (``statuses``).
    statuses: tuple[tuple[str, str], ...] = ()
    splits: tuple[Split, ...] = ()
    #: (canonical column, regular expression): a row whose trimmed text matches is one of the
    #: report's own lines (a heading, a total, an opening balance), not a booking (``skip``).
    skip: tuple[tuple[str, str], ...] = ()
    payout: PayoutColumns | None = None
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

    def read_columns(self) -> frozenset[str]:
        """The file's columns the layout reads besides those it maps: references, fallbacks,
        the time zone and the columns of its splits."""
        split = {c for s in self.splits for c in s.columns()}
        zone = {self.zone} if self.zone else set()
        payout = set(self.payout.columns()) if self.payout else set()
        return frozenset({*self.references, *(own for _, own in self.fallback), *zone, *split, *payout})


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
    "statuses",
    "split",
    "skip",
    "payout",
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
        statuses=_statuses(_table(data, "statuses", where), where),
        splits=_splits(data.get("split", []), where),
        skip=_skip(_table(data, "skip", where), where),
        payout=_payout(_table(data, "payout", where), where),
        **({"key_help": str(key["help"])} if "help" in key else {}),
        **_date_rule(_table(data, "date", where), where),
    )


def _statuses(words: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """``[statuses]``: the file's status words as the toolkit's (``PAYMENT_STATUS_NAMES``)."""
    wrong = sorted({str(v) for v in words.values() if v not in PAYMENT_STATUS_NAMES})
    if wrong:
        statuses = ", ".join(PAYMENT_STATUS_NAMES)
        raise InputError(f"{where}: [statuses] names {', '.join(wrong)}; the statuses are {statuses}")
    return tuple((str(word).strip().lower(), str(status)) for word, status in words.items())


def _payout(table: Mapping[str, Any], where: str) -> PayoutColumns | None:
    """``[payout]``: ``reference`` and ``net``, or ``net_credit`` and ``net_debit``, and
    optionally ``own`` and ``currency`` (see ``PayoutColumns``)."""
    if not table:
        return None
    keys = {"reference", "own", "net", "net_credit", "net_debit", "currency"}
    texts = all(isinstance(v, str) for v in table.values())
    signed, pair = "net" in table, {"net_credit", "net_debit"} <= set(table)
    if set(table) - keys or not texts or "reference" not in table or signed == pair:
        raise InputError(
            f"{where}: [payout] names the columns reference and net (signed), or reference, net_credit "
            "and net_debit, and optionally own and currency"
        )
    return PayoutColumns(**{k: str(v) for k, v in table.items()})


def _skip(rules: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """``[skip]``: canonical column = the regular expression of a report line's text in it."""
    for column, pattern in rules.items():
        if column not in MAPPABLE or not isinstance(pattern, str):
            raise InputError(
                f"{where}: [skip] maps a column of {', '.join(MAPPABLE)} to a regular expression"
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InputError(f"{where}: [skip] {column}: not a regular expression: {exc}") from None
    return tuple((str(c), str(p)) for c, p in rules.items())


def _splits(entries: Any, where: str) -> tuple[Split, ...]:
    """``[[split]]``: each a table of ``kind``, ``amount`` and optionally ``currency``,
    ``createTime`` and ``unless`` (a column and the values that mean no such movement)."""
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise InputError(f"{where}: [[split]] must be tables (one [[split]] per movement a row holds)")
    splits = []
    for entry in entries:
        unknown = set(entry) - {"kind", "amount", "currency", "createTime", "unless"}
        if unknown or entry.get("kind") not in KINDS or not isinstance(entry.get("amount"), str):
            raise InputError(
                f"{where}: a [[split]] has kind (one of {', '.join(KINDS)}), amount (a column), and "
                f"optionally currency, createTime and unless; not {dict(entry)!r}"
            )
        unless = _table(entry, "unless", f"{where}: [[split]]")
        splits.append(
            Split(
                kind=str(entry["kind"]),
                amount=str(entry["amount"]),
                currency=str(entry["currency"]) if "currency" in entry else None,
                create_time=str(entry["createTime"]) if "createTime" in entry else None,
                unless=tuple(
                    (str(c), tuple(v.strip().lower() for v in _texts(values, f"{where}: unless.{c}")))
                    for c, values in unless.items()
                ),
            )
        )
    return tuple(splits)


def _date_rule(rule: Mapping[str, Any], where: str) -> dict[str, str]:
    """``[date]``: ``format`` (how the file writes its dates, strftime-style: ``%m/%d/%Y``), or a
    date written as ``DDMM`` with its year from a DATEV ``extf-header``."""
    if not rule:
        return {}
    if set(rule) == {"format"} and isinstance(rule["format"], str):
        try:
            date_format(rule["format"])
        except InputError as exc:
            raise InputError(f"{where}: [date] format: {str(exc).split(': ', 1)[-1]}") from None
        return {"date_format": rule["format"]}
    if rule.get("written") != "DDMM" or rule.get("year") != "extf-header":
        raise InputError(
            f'{where}: [date] reads format = "%d/%m/%Y" (strftime-style), or written = "DDMM" with '
            'year = "extf-header"'
        )
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
