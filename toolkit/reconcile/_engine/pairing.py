"""Step 2: one row per key of each side (how many rows, the first row's values), the two sides
joined on the key; the keys of more than one row, and their rows.
"""

from __future__ import annotations

from toolkit.reconcile._engine.model import PAIRED, Rules, Side, count_if, select
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.movements import code, is_returned


def _per_key(side: Side, *, when: bool, price: bool) -> str:
    """How many usable rows each key has, and the values of its first row (file order).

    Keys are almost always unique, so the first rows are found without an aggregate of values:
    one count per key (a fixed-size state the backend can spill) names the few repeated keys,
    and every row of an unrepeated key, or the first row of a repeated one, is its key's row.
    ``when`` and ``price`` add the first row's date and price (only when the rules need them).
    The money returned on a key (in one currency: ``movements.returned_key``) is its total: two
    partial refunds are one credit note's worth; returned rows of more than one kind are
    ``returned``.
    """
    p = side.name[0]  # "l" or "p"
    # The repeated keys are found by a count alone (the smallest state a group of every key can
    # have: 10M keys a side group a third faster than with the four aggregates below), and
    # only their few rows are aggregated.
    repeated = f"SELECT _key AS _dkey FROM ({side.usable}) GROUP BY _key HAVING COUNT(*) > 1"
    counts = (
        f"SELECT _key AS _rkey, COUNT(*) AS _n, MIN(_ord) AS _first, SUM(_minor) AS _sum, "
        "MIN(_kind) = MAX(_kind) AS _one_kind "
        f"FROM ({side.usable}) AS _a JOIN ({repeated}) AS _d ON _a._key = _d._dkey GROUP BY _key"
    )
    # Only the columns the rules read, in their stored types: the join that pairs the sides
    # holds every key's row in a hash table, so each byte less is one less to spill.
    names = [
        "ord",
        "minor",
        "cur",
        "st",
        "kind",
        *(["when"] if when else []),
        *(["pminor", "pcur"] if price else []),
    ]
    repeated_returned = f"(_c._rkey IS NOT NULL AND {is_returned('_u._key')})"
    mixed = f"{repeated_returned} AND NOT _c._one_kind"  # refunds and chargebacks on one key
    special = {
        "minor": f"CASE WHEN {repeated_returned} THEN CAST(_c._sum AS BIGINT) ELSE _u._minor END",
        "kind": f"CASE WHEN {mixed} THEN {code('returned')} ELSE _u._kind END",
    }
    values = [
        f"COALESCE(_c._n, 1) AS {p}_n",
        *(f"{special.get(name, f'_u._{name}')} AS {p}_{name}" for name in names),
    ]
    return (
        f"SELECT _u._key AS {p}_key, {', '.join(values)} FROM ({side.usable}) AS _u "
        f"LEFT JOIN ({counts}) AS _c ON _u._key = _c._rkey "
        "WHERE _c._rkey IS NULL OR _u._ord = _c._first"
    )


def pair_keys(led: Side, pro: Side, rules: Rules) -> str:
    """Every key of either side, with both sides' counts and first rows (nulls where absent)."""
    left = _per_key(led, when=rules.ledger_dated, price=False)
    right = _per_key(pro, when=rules.processor_dated, price=rules.priced)
    present = {
        "l": {"n", "ord", "minor", "cur", "st", "kind", *(["when"] if rules.ledger_dated else [])},
        "p": {"n", "ord", "minor", "cur", "st", "kind"}
        | ({"when"} if rules.processor_dated else set())
        | ({"pminor", "pcur"} if rules.priced else set()),
    }
    paired = [
        f"CAST({p}_{name} AS BIGINT) AS {p}_{name}"
        if name in present[p]
        else f"CAST(NULL AS BIGINT) AS {p}_{name}"
        for p in "lp"
        for name in PAIRED
    ]
    return (
        f"SELECT {', '.join(paired)}, COALESCE(l_key, p_key) AS key "
        f"FROM ({left}) AS _l FULL OUTER JOIN ({right}) AS _p ON _l.l_key = _p.p_key"
    )


def repeats(engine: Backend, classified: Kept, sides: tuple[Side, Side]) -> list[Side]:
    """The sides with a key of more than one row (every such key is among the classified)."""
    payments = f"NOT {is_returned('key')}"
    counts = engine.arrow(
        f"SELECT {count_if(f'l_n > 1 AND {payments}')} AS l, {count_if(f'p_n > 1 AND {payments}')} AS p "
        f"FROM {classified}"
    ).to_pylist()[0]
    return [side for side in sides if counts[side.name[0]]]


def repeated_rows(engine: Backend, side: Side, classified: Kept) -> Kept:
    """The usable rows of one side's payment keys of more than one row (few): found in one pass
    over the side, then read by ``settle_repeats``, ``duplicate_rows`` and ``matched_summary``
    (the money returned on a key is its total, ``_per_key``)."""
    keys = f"SELECT key AS _dup_key FROM {classified} WHERE {side.name[0]}_n > 1 AND NOT {is_returned('key')}"
    rows = f"SELECT * FROM ({side.usable}) AS _u JOIN ({keys}) AS _k ON _u._key = _k._dup_key"
    return engine.keep(select(["_key", *(f"_{name}" for name in PAIRED[1:])], rows), stem="repeated")
