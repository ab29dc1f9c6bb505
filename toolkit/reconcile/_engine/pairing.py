"""Step 2: one row per key of each side (how many rows, the first row's values), the two sides
joined on the key; the keys of more than one row, and their rows.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir

from toolkit.reconcile._engine.model import PAIRED, Rules, Side, is_usable
from toolkit.reconcile.backends import Backend


def _per_key(side: Side, *, when: bool, price: bool) -> ir.Table:
    """How many usable rows each key has, and the values of its first row (file order).

    Keys are almost always unique, so the first rows are found without an aggregate of values:
    one count per key (a fixed-size state the backend can spill) names the few repeated keys,
    and every row of an unrepeated key, or the first row of a repeated one, is its key's row.
    ``when`` and ``price`` add the first row's date and price (only when the rules need them).
    """
    rows = side.usable
    p = side.name[0]  # "l" or "p"
    # Counted from the kept rows by a query of its own: a second use of ``usable`` would be a
    # common table expression, which DuckDB writes out in full before reading it.
    keyed = side.rows.select("_key", "_ord", "_rejected", "_outside", "_after")
    keyed = keyed.filter(is_usable(keyed))
    counts = keyed.group_by(_rkey=keyed._key).aggregate(_n=keyed.count(), _first=keyed._ord.min())
    repeated = counts.filter(counts._n > 1)
    joined = rows.left_join(repeated, rows._key == repeated._rkey)
    first = joined.filter(joined._rkey.isnull() | (joined._ord == joined._first))
    # Only the columns the rules read, in their stored types: the join that pairs the sides
    # holds every key's row in a hash table, so each byte less is one less to spill.
    values = {
        "n": first._n.fill_null(1),
        "ord": first._ord,
        "minor": first._minor,
        "cur": first._cur,
        "st": first._st,
    }
    if when:
        values["when"] = first._when
    if price:
        values |= {"pminor": first._pminor, "pcur": first._pcur}
    return first.select(_key=first._key, **{f"{p}_{name}": value for name, value in values.items()})


def pair_keys(led: Side, pro: Side, rules: Rules) -> ir.Table:
    """Every key of either side, with both sides' counts and first rows (nulls where absent)."""
    left = _per_key(led, when=rules.ledger_dated, price=False).rename(l_key="_key")
    right = _per_key(pro, when=rules.processor_dated, price=rules.priced).rename(p_key="_key")
    joined = left.outer_join(right, left.l_key == right.p_key)
    paired = {
        f"{p}_{name}": joined[f"{p}_{name}"].cast("int64")
        if f"{p}_{name}" in joined.columns
        else ibis.null("int64")
        for p in "lp"
        for name in PAIRED
    }
    return joined.select(**paired, key=joined.l_key.fill_null(joined.p_key))


def repeats(engine: Backend, classified: ir.Table, sides: tuple[Side, Side]) -> list[Side]:
    """The sides with a key of more than one row (every such key is among the classified)."""
    counts = engine.arrow(
        classified.aggregate(
            l=(classified.l_n > 1).fill_null(False).ifelse(1, 0).sum(),
            p=(classified.p_n > 1).fill_null(False).ifelse(1, 0).sum(),
        )
    ).to_pylist()[0]
    return [side for side in sides if counts[side.name[0]]]


def repeated_rows(engine: Backend, side: Side, classified: ir.Table) -> ir.Table:
    """The usable rows of one side's keys of more than one row (few): found in one pass over the
    side, then read by ``settle_repeats``, ``duplicate_rows`` and ``matched_summary``."""
    n = classified[f"{side.name[0]}_n"]
    keys = classified.filter((n > 1).fill_null(False)).select(_dup_key=classified.key)
    rows = side.usable.join(keys, side.usable._key == keys._dup_key)
    return engine.keep(rows.select("_key", *(f"_{name}" for name in PAIRED[1:])))
