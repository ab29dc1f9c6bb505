"""A side's columns by their required names: the user's mapping, the closest column to propose,
and the errors that name the option to pass (``--ledger-map``, ``ledger_map``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence

from toolkit.errors import InputError
from toolkit.reconcile.sources import Described

#: The columns that sign a ledger's amounts, with the names books give them: a Debit/Credit pair
#: (a ledger with no amount column; debit positive) and a Debit/Credit flag (``S``/``H``,
#: ``D``/``C``, ``Dr``/``Cr``, DATEV's ``Soll/Haben-Kennzeichen``).
SIGNED_COLUMNS: dict[str, tuple[str, ...]] = {
    "debit": ("debit", "soll", "debit amount"),
    "credit": ("credit", "haben", "credit amount"),
    "debitCredit": ("soll/haben-kennzeichen", "debit/credit", "d/c", "dr/cr"),
}


def usual_columns(
    names: Sequence[str], mapping: Mapping[str, str] | None, usual: Mapping[str, tuple[str, ...]]
) -> dict[str, str]:
    """The file's columns found by their usual names (``usual``: canonical name -> the names in
    lower case; ``SIGNED_COLUMNS``, ``movements.TYPE_COLUMNS``): canonical name -> the file's
    column, for those the mapping does not name already, and only where one column answers."""
    mapped = set((mapping or {}).values())
    found: dict[str, str] = {}
    for canonical, said in usual.items():
        matches = [n for n in names if n.strip().lower() in said and n not in mapped]
        if len(matches) == 1 and canonical not in (mapping or {}):
            found[canonical] = matches[0]
    return found


def renames_of(
    described: Described,
    mapping: Mapping[str, str] | None,
    required: tuple[str, ...],
    side: str,
    *,
    optional: tuple[str, ...] = (),
) -> tuple[tuple[str, str], ...]:
    """The user's column names -> canonical names; every required column must be there.

    A required column that is missing is taken from the one column whose name differs from it
    only in case (``Amount`` for ``amount``); otherwise the error lists the file's columns, the
    closest name and the mapping that would fix it. An ``optional`` column is found the same
    way, and may be missing.
    """
    names = list(described.columns)
    renames: dict[str, str] = {}
    if mapping:
        for canonical, own in mapping.items():
            if own not in names:
                raise InputError(
                    f"{described.name}: column {own!r} (mapped to {canonical!r}) not found"
                    f"{_closest_text(own, names)}; the file's columns are {_listed(names)}"
                )
            renames[own] = canonical
        for column in names:
            if column not in renames and column in mapping:  # a canonical name mapped elsewhere
                renames[column] = f"{column} (original)"
    final = [renames.get(n, n) for n in names]
    missing = []
    for column in (*required, *optional):
        if column in final:
            continue
        free = [n for n in names if n not in renames and n not in required and n not in optional]
        same = [n for n in free if n.strip().lower() == column.lower()]
        if len(same) == 1:
            renames[same[0]] = column
            final = [renames.get(n, n) for n in names]
        elif column in required:
            missing.append(column)
    if missing:
        raise InputError(column_error(described.name, missing, names, side) + _mistyped(mapping, missing))
    return tuple((own, canonical) for own, canonical in renames.items() if own != canonical)


def _mistyped(mapping: Mapping[str, str] | None, missing: list[str]) -> str:
    """A map's keys are the toolkit's names: a key close to a missing one is a typo, said as such
    (the map is not wrong about the file's column, which exists)."""
    for key in mapping or {}:
        close = difflib.get_close_matches(key, missing, n=1, cutoff=0.6)
        if close and key not in missing:
            return f"; the map's {key!r} is not a name the toolkit reads: did you mean {close[0]!r}?"
    return ""


def closest_column(canonical: str, names: Sequence[str]) -> str | None:
    """The file's column most like ``canonical``: the same but for case, else the closest (difflib)."""
    by_lower: dict[str, list[str]] = {}
    for name in names:
        by_lower.setdefault(name.strip().lower(), []).append(name)
    same = by_lower.get(canonical.lower(), [])
    if same:
        return same[0]
    close = difflib.get_close_matches(canonical.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]][0] if close else None


def map_option(side: str) -> str:
    """The command-line option that maps ``side``'s columns."""
    return {"ledger": "--ledger-map", "processor": "--processor-map"}.get(side, "mapping")


def mapping_text(pairs: Mapping[str, str]) -> str:
    """A mapping as ``--ledger-map`` takes it: ``amount=Total,currency=Cur``, or JSON for names
    with ``=``, ``,``, quotes or spaces at their ends."""
    plain = all(
        not set(k + v) & set("=,\"'") and k == k.strip() and v == v.strip() and v for k, v in pairs.items()
    )
    if plain:
        return ",".join(f"{k}={v}" for k, v in pairs.items())
    return "'" + json.dumps(dict(pairs)).replace("'", "'\\''") + "'"


def column_error(name: str, missing: Sequence[str], names: Sequence[str], side: str) -> str:
    """One line: what is missing, the file's columns, the closest names and the fixing mapping."""
    what = ", ".join(repr(c) for c in missing)
    plural = "s" if len(missing) > 1 else ""
    text = f"{name}: required column{plural} {what} missing; the file's columns are {_listed(names)}"
    ambiguous = [c for c in missing if sum(n.strip().lower() == c.lower() for n in names) > 1]
    if ambiguous:
        text += f"; {ambiguous[0]!r} matches several columns but for case"
    closest = {c: closest_column(c, names) for c in missing}
    found = {c: n for c, n in closest.items() if n is not None}
    if found:
        text += "; closest: " + ", ".join(f"{n!r} for {c!r}" for c, n in found.items())
    hint = {c: found.get(c, "COLUMN") for c in missing}
    text += (
        f"; to read the file's column as the required one, {map_option(side)} {mapping_text(hint)} "
        "(required name = the file's column name)"
    )
    if "currency" in missing and side in ("ledger", "processor") and "currency" not in found:
        text += f"; for a file in one currency, --{side}-currency CODE (e.g. EUR) gives every row's"
    return text


def _closest_text(own: str, names: Sequence[str]) -> str:
    close = closest_column(own, names)
    return f" (did you mean {close!r}?)" if close else ""


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "(none)"


def parse_mapping(text: str | None, option: str) -> dict[str, str] | None:
    """A mapping as the command and the notebook take it: ``amount=Total,currency=Cur`` or JSON
    (``{"amount": "Total"}``); None or blank: no mapping. ``option`` names it in the error."""
    if text is None or not text.strip():
        return None
    if not text.lstrip().startswith("{"):
        pairs = [p.partition("=") for p in text.split(",") if p.strip()]
        if pairs and all(sep and k.strip() and v.strip() for k, sep, v in pairs):
            return {k.strip(): v.strip() for k, _, v in pairs}
        raise InputError(
            f"{option}: give required=file column pairs, e.g. amount=Total,currency=Cur, "
            'or JSON, e.g. \'{"amount": "Total"}\''
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InputError(f'{option}: must be a JSON object of column names, e.g. {{"amount": "Total"}}')
    return value
