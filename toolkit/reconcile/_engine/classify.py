"""Step 3: the categories of each key, only the keys with a flag kept; the keys of more than one
row classified again on their compared row; the informational categories left to keys without an
exception.
"""

from __future__ import annotations

import pandas as pd

from toolkit.reconcile._engine.model import (
    CLASSIFIED,
    EXCEPTION_FLAGS,
    FAILURE,
    FLAGS,
    IS_EXCEPTION,
    PAIRED,
    SUM_TYPE,
    UNKNOWN,
    UNSETTLED,
    Rules,
    count_if,
    exact_sum,
    key_outcome,
    named_currencies,
    relation,
    select,
)
from toolkit.reconcile.backends import Backend, Kept
from toolkit.reconcile.inputs import (
    currency_codes,
)
from toolkit.reconcile.movements import is_returned
from toolkit.reconcile.relation import Relation
from toolkit.reconcile.schema import (
    INFO_CATEGORIES,
)
from toolkit.reconcile.tolerance import Allowance, Tolerance


def classify(keys: str, rules: Rules) -> str:
    """A flag per category, and only the keys with at least one flag.

    The ledger's amount is compared with what the processor charged when the currencies are the
    same, else with what it priced (``pricingAmount``) when that is in the ledger's currency.
    Keys in two currencies with neither are ``fx_check`` when there are reference rates (decided
    by ``resolve_fx``), else ``currency_mismatch``. Inside the settlement window, a payment
    still unsettled at the processor, or on one side only, is ``in_transit`` instead. A key
    with more than one row on a side is flagged a duplicate here and decided by
    ``settle_repeats``.
    """
    # Almost every key is a clean match (one row a side, same currency, amount and status, not
    # unknown), which no flag can take: the first filter drops those at the cost of a few
    # comparisons, and the flags are computed only on the keys left.
    clean = (
        f"l_n = 1 AND p_n = 1 AND l_cur = p_cur AND l_minor = p_minor AND l_st = p_st AND p_st <> {UNKNOWN}"
    )
    classes = _classes(rules, l_charges="l_n", p_charges="p_n")
    flagged = select([*_columns(CLASSIFIED, classes)], keys, f"NOT COALESCE({clean}, FALSE)")
    # The money returned on a key in more than one ledger row is kept even when it matches: the
    # summary counts it once (``flag_stats``' ``returned_extra``), as one matched key.
    summed = f"COALESCE({is_returned('key')} AND l_n > 1, FALSE)"
    return select(CLASSIFIED, flagged, " OR ".join([*FLAGS, summed]))


def _columns(names: tuple[str, ...], values: dict[str, str]) -> list[str]:
    """``names`` as the columns of a select: ``values`` where given, else as they are."""
    return [f"{values[name]} AS {name}" if name in values else name for name in names]


def _classes(rules: Rules, *, l_charges: str, p_charges: str) -> dict[str, str]:
    """The flags of each key (``FLAGS``), its difference ``l_minus_p`` and whether it is
    compared through its price (``priced``), as expressions over a key's paired columns; a side
    is a duplicate when its ``*_charges`` (rows that took or may take money) are more than one."""
    has_l, has_p = "l_n IS NOT NULL", "p_n IS NOT NULL"
    returned = is_returned("key")  # money returned is a total per key: never a duplicate
    both = f"({has_l} AND {has_p})"
    charged = "(l_cur = p_cur)"
    priced = f"COALESCE(p_pcur = l_cur AND NOT {charged}, FALSE)" if rules.priced else "FALSE"
    difference = f"(l_minor - CASE WHEN {priced} THEN p_pminor ELSE p_minor END)"
    comparable = f"({both} AND ({charged} OR {priced}))"
    within = _within(rules.tolerance, difference, "l_minor", "l_cur")
    cross = f"({both} AND NOT ({charged} OR {priced}))"
    unknown = f"(p_st = {UNKNOWN})"
    status_differs = f"({both} AND l_st <> p_st AND NOT {unknown})"
    transit = _in_transit(rules)
    status_transit = f"({status_differs} AND {transit['status']})"
    only_l_transit = f"({has_l} AND NOT {has_p} AND {transit['ledger']})"
    only_p_transit = f"({has_p} AND NOT {has_l} AND {transit['processor']})"
    flags = {
        "missing_in_processor": f"{has_l} AND NOT {has_p} AND NOT {only_l_transit}",
        "missing_in_ledger": f"{has_p} AND NOT {has_l} AND NOT {only_p_transit}",
        "amount_mismatch": f"{comparable} AND NOT {within}",
        "currency_mismatch": f"{cross} AND {'TRUE' if rules.rates is None else 'FALSE'}",
        "status_mismatch": f"{status_differs} AND NOT {status_transit}",
        "duplicate_in_processor": f"{has_p} AND {p_charges} > 1 AND NOT {returned}",
        "duplicate_in_ledger": f"{has_l} AND {l_charges} > 1 AND NOT {returned}",
        "unknown_outcome": f"{has_p} AND {unknown}",
        "in_transit": f"{status_transit} OR {only_l_transit} OR {only_p_transit}",
        "within_tolerance": f"{comparable} AND {within} AND {difference} <> 0",
        "fx_check": f"{cross} AND {'TRUE' if rules.rates is not None else 'FALSE'}",
        "price_match": f"{comparable} AND {priced}",  # kept for ``price_moves``
    }
    values = {name: f"COALESCE({flag}, FALSE)" for name, flag in flags.items()}
    return {**values, "l_minus_p": difference, "priced": priced}


def settle_repeats(engine: Backend, classified: Kept, repeated: dict[str, Kept], rules: Rules) -> Relation:
    """The keys with more than one row on a side, classified again on the row that agrees with
    the other side (``_compared_row``), and a duplicate only when more than one of a side's rows
    took or may take money: a failed attempt before the payment that went through is no double
    charge, and the row that matches is no amount or status difference. Few keys; each stays
    (one without a flag is matched, its other rows with it)."""
    multi = f"((COALESCE(l_n > 1, FALSE) OR COALESCE(p_n > 1, FALSE)) AND NOT {is_returned('key')})"
    columns = ("key", *(f"{p}_{name}" for p in "lp" for name in PAIRED))
    keys = engine.keep(select(columns, str(classified), multi), stem="multi")
    query, columns = str(keys), (*columns,)
    for side, against in (("processor", "l"), ("ledger", "p")):  # the processor's row first
        query, columns = _compared_row(query, columns, repeated.get(side), side[0], against)
    classes = _classes(rules, l_charges="l_charges", p_charges="p_charges")
    settled = select(_columns(CLASSIFIED, classes), query)
    unrepeated = select(CLASSIFIED, str(classified), f"NOT {multi}")
    return Relation(f"{unrepeated} UNION ALL {settled}", CLASSIFIED, (keys,))


def _compared_row(
    keys: str, columns: tuple[str, ...], rows: Kept | None, p: str, against: str
) -> tuple[str, tuple[str, ...]]:
    """``keys`` with side ``p``'s compared row (``{p}_*``) of each key it repeats: the first row
    that agrees with row ``against`` in amount, currency and status, else the first with its
    status, else the first; and ``{p}_charges``, the rows that are not ``failure``."""
    if rows is None:
        return select([*columns, f"{p}_n AS {p}_charges"], keys), (*columns, f"{p}_charges")
    other = (
        f"SELECT key AS _ck, {against}_minor AS _a_minor, {against}_cur AS _a_cur, "
        f"{against}_st AS _a_st FROM {relation(keys)}"
    )
    joined = f"SELECT * FROM {rows} AS _r JOIN ({other}) AS _o ON _r._key = _o._ck"
    agrees = "COALESCE(_minor = _a_minor AND _cur = _a_cur AND _st = _a_st, FALSE)"
    same_status = "COALESCE(_st = _a_st, FALSE)"
    order = f"CASE WHEN {agrees} THEN 0 ELSE 1 END, CASE WHEN {same_status} THEN 0 ELSE 1 END, _ord"
    picked = f"SELECT *, ROW_NUMBER() OVER (PARTITION BY _key ORDER BY {order}) AS _pick FROM ({joined})"
    values = [name for name in PAIRED if name != "n"]
    chosen = (
        f"SELECT _key AS _chosen, {', '.join(f'CAST(_{name} AS BIGINT) AS _c_{name}' for name in values)} "
        f"FROM ({picked}) WHERE _pick = 1"
    )
    charged = count_if(f"_st <> {FAILURE}")
    charges = f"SELECT _key AS _charged_key, {charged} AS _c_charges FROM ({joined}) GROUP BY _key"
    found = "_c._chosen IS NOT NULL"
    replaced = {
        f"{p}_{name}": f"CASE WHEN {found} THEN _c._c_{name} ELSE _k.{p}_{name} END" for name in values
    }
    replaced[f"{p}_charges"] = f"CASE WHEN {found} THEN _n._c_charges ELSE _k.{p}_n END"
    out = (*columns, f"{p}_charges")
    query = (
        f"SELECT {', '.join(f'{replaced[c]} AS {c}' if c in replaced else f'_k.{c}' for c in out)} "
        f"FROM {relation(keys)} AS _k LEFT JOIN ({chosen}) AS _c ON _k.key = _c._chosen "
        f"LEFT JOIN ({charges}) AS _n ON _k.key = _n._charged_key"
    )
    return query, out


def _within(tolerance: Tolerance, difference: str, amount: str, cur: str) -> str:
    """Whether ``difference`` is within the tolerance of the ledger ``amount`` in currency code
    ``cur``: exact, in integers (a percentage as ``|d| * den <= |amount| * num``, widened)."""
    if tolerance.is_zero:
        return f"({difference} = 0)"
    size = f"ABS({difference})"

    def allowed(allowance: Allowance) -> str:
        test = f"{size} <= {allowance.minor}"
        if allowance.percent:
            num, den = allowance.ratio()
            test += f" OR CAST({size} AS {SUM_TYPE}) * {den} <= CAST(ABS({amount}) AS {SUM_TYPE}) * {num}"
        return f"({test})"

    codes = {name: code for code, name in enumerate(currency_codes())}
    by_currency = " ".join(
        f"WHEN {cur} = {codes[name]} THEN {allowed(allowance)}" for name, allowance in tolerance.per_currency
    )
    # Computed only where amounts differ (a CASE evaluates its branches on the rows that take them).
    return f"(CASE WHEN {difference} = 0 THEN TRUE {by_currency} ELSE {allowed(tolerance.default)} END)"


def _in_transit(rules: Rules) -> dict[str, str]:
    """Inside the settlement window: ``status`` (the processor's payment is unsettled, pending or
    waiting for the customer, and dated in the window), ``ledger`` (a ledger row dated in the
    window), ``processor`` (an unsettled processor payment dated in the window: the books may
    wait for its outcome; a settled one missing from the books is an exception at once)."""
    if rules.timing is None:
        return {"status": "FALSE", "ledger": "FALSE", "processor": "FALSE"}
    start = rules.timing.window_seconds
    recent_p = f"COALESCE(p_when >= {start}, FALSE)" if rules.processor_dated else "FALSE"
    recent_l = f"COALESCE(l_when >= {start}, FALSE)" if rules.ledger_dated else "FALSE"
    unsettled = f"(p_st IN ({', '.join(str(code) for code in UNSETTLED)}))"
    both = f"({unsettled} AND {recent_p})"
    return {"status": both, "ledger": recent_l, "processor": both}


def informational_apart(flagged: Relation) -> Relation:
    """A key with an exception is that exception only, never also in transit or matched within
    tolerance: a payment that failed or was charged twice is no variance to post, and its
    amount is at risk, not at stake in transit (the rows are counted in exceptions). A key in
    transit is not within tolerance too: the variance of a payment still pending is not posted."""
    transit = f"(in_transit AND NOT {IS_EXCEPTION})"
    return flagged.mutate(
        in_transit=transit, within_tolerance=f"(within_tolerance AND NOT {IS_EXCEPTION} AND NOT {transit})"
    )


def flag_stats(engine: Backend, flagged: Kept) -> pd.DataFrame:
    """Per ledger currency of the flagged keys: how many keys of each category, how many rows of
    each side the exception keys hold (``*_rows``) and the keys in transit (``*_transit``), and
    the keys not matched with one ledger row (count and exact sum)."""
    exception, transit = key_outcome()
    # A key of one ledger row, or the money returned on a key (its rows' total, ``_per_key``).
    single = f"(l_n = 1 OR (l_n IS NOT NULL AND {is_returned('key')})) AND ({exception} OR {transit})"
    # The other ledger rows of money returned on a key that matched (one matched key).
    summed = f"COALESCE({is_returned('key')} AND l_n > 1 AND NOT ({exception} OR {transit}), FALSE)"

    def rows_of(outcome: str, p: str) -> str:
        return f"CAST(COALESCE(SUM(CASE WHEN {outcome} THEN COALESCE({p}_n, 0) ELSE 0 END), 0) AS BIGINT)"

    aggregates = [
        *(f"{count_if(name)} AS {name}" for name in (*EXCEPTION_FLAGS, *INFO_CATEGORIES)),
        f"{rows_of(exception, 'l')} AS l_rows",
        f"{rows_of(exception, 'p')} AS p_rows",
        f"{rows_of(transit, 'l')} AS l_transit",
        f"{rows_of(transit, 'p')} AS p_transit",
        f"CAST(COALESCE(SUM(CASE WHEN {single} THEN l_n ELSE 0 END), 0) AS BIGINT) AS single_n",
        f"{exact_sum(f'CASE WHEN {single} THEN l_minor ELSE 0 END')} AS single_total",
        f"CAST(COALESCE(SUM(CASE WHEN {summed} THEN l_n - 1 ELSE 0 END), 0) AS BIGINT) AS returned_extra",
    ]
    query = f"SELECT l_cur AS currency, {', '.join(aggregates)} FROM {flagged} GROUP BY l_cur"
    return named_currencies(engine.arrow(query).to_pandas())
