"""Step 3: the categories of each key, only the keys with a flag kept; the keys of more than one
row classified again on their compared row; the informational categories left to keys without an
exception.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir
import pandas as pd

from toolkit.reconcile._engine.model import (
    EXCEPTION_FLAGS,
    FAILURE,
    FLAGS,
    PAIRED,
    SUM_TYPE,
    UNKNOWN,
    UNSETTLED,
    Rules,
    is_exception,
    key_outcome,
    named_currencies,
)
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import (
    currency_codes,
)
from toolkit.reconcile.schema import (
    INFO_CATEGORIES,
)
from toolkit.reconcile.tolerance import Allowance, Tolerance


def classify(keys: ir.Table, rules: Rules) -> ir.Table:
    """A flag per category, and only the keys with at least one flag.

    The ledger's amount is compared with what the processor charged when the currencies are the
    same, else with what it priced (``pricingAmount``) when that is in the ledger's currency.
    Keys in two currencies with neither are ``fx_check`` when there are reference rates (decided
    by ``resolve_fx``), else ``currency_mismatch``. Inside the settlement window, a payment
    still unsettled at the processor, or on one side only, is ``in_transit`` instead. A key
    with more than one row on a side is flagged a duplicate here and decided by
    ``settle_repeats``.
    """
    classes = _classes(keys, rules, l_charges=keys.l_n, p_charges=keys.p_n)
    any_flag = ibis.literal(False)
    for name in FLAGS:
        any_flag |= classes[name]
    # Almost every key is a clean match (one row a side, same currency, amount and status, not
    # unknown), which no flag can take: the first filter drops those at the cost of a few
    # comparisons, and the flags are computed only on the keys left (filters are conjoined, and a
    # conjunction is evaluated on the rows its first term kept).
    clean = (
        keys.l_n.notnull()
        & keys.p_n.notnull()
        & (keys.l_n == 1)
        & (keys.p_n == 1)
        & (keys.l_cur == keys.p_cur)
        & (keys.l_minor == keys.p_minor)
        & (keys.l_st == keys.p_st)
        & (keys.p_st != UNKNOWN)
    )
    return keys.filter(~clean.fill_null(False)).mutate(**classes).filter(any_flag)


def _classes(
    keys: ir.Table, rules: Rules, *, l_charges: ir.IntegerValue, p_charges: ir.IntegerValue
) -> dict[str, ir.Value]:
    """The flags of each key (``FLAGS``), its difference ``l_minus_p`` and whether it is
    compared through its price (``priced``); a side is a duplicate when its ``*_charges`` (rows
    that took or may take money) are more than one."""
    has_l, has_p = keys.l_n.notnull(), keys.p_n.notnull()
    both = has_l & has_p
    charged = keys.l_cur == keys.p_cur
    priced = (keys.p_pcur == keys.l_cur) & ~charged if rules.priced else ibis.literal(False)
    priced = priced.fill_null(False)
    difference = keys.l_minor - priced.ifelse(keys.p_pminor, keys.p_minor)
    comparable = both & (charged | priced)
    within = _within(rules.tolerance, difference, keys.l_minor, keys.l_cur)
    cross = both & ~(charged | priced)
    unknown = keys.p_st == UNKNOWN
    status_differs = both & (keys.l_st != keys.p_st) & ~unknown
    transit = _in_transit(keys, rules)
    status_transit = status_differs & transit["status"]
    only_l_transit = has_l & ~has_p & transit["ledger"]
    only_p_transit = has_p & ~has_l & transit["processor"]
    flags = {
        "missing_in_processor": has_l & ~has_p & ~only_l_transit,
        "missing_in_ledger": has_p & ~has_l & ~only_p_transit,
        "amount_mismatch": comparable & ~within,
        "currency_mismatch": cross & ibis.literal(rules.rates is None),
        "status_mismatch": status_differs & ~status_transit,
        "duplicate_in_processor": has_p & (p_charges > 1),
        "duplicate_in_ledger": has_l & (l_charges > 1),
        "unknown_outcome": has_p & unknown,
        "in_transit": status_transit | only_l_transit | only_p_transit,
        "within_tolerance": comparable & within & (difference != 0),
        "fx_check": cross & ibis.literal(rules.rates is not None),
        "price_match": comparable & priced,  # kept for ``price_moves``
    }
    flags = {name: flag.fill_null(False) for name, flag in flags.items()}
    return {**flags, "l_minus_p": difference, "priced": priced}


def settle_repeats(classified: ir.Table, repeated: dict[str, ir.Table], rules: Rules) -> ir.Table:
    """The keys with more than one row on a side, classified again on the row that agrees with
    the other side (``_compared_row``), and a duplicate only when more than one of a side's rows
    took or may take money: a failed attempt before the payment that went through is no double
    charge, and the row that matches is no amount or status difference. Few keys; each stays
    (one without a flag is matched, its other rows with it)."""
    multi = (classified.l_n > 1).fill_null(False) | (classified.p_n > 1).fill_null(False)
    keys = classified.filter(multi).select("key", *(f"{p}_{name}" for p in "lp" for name in PAIRED))
    for side, against in (("processor", "l"), ("ledger", "p")):  # the processor's row first
        keys = _compared_row(keys, repeated.get(side), side[0], against)
    classes = _classes(keys, rules, l_charges=keys.l_charges, p_charges=keys.p_charges)
    settled = keys.mutate(**classes).select(*classified.columns)
    return classified.filter(~multi).union(settled)


def _compared_row(keys: ir.Table, rows: ir.Table | None, p: str, against: str) -> ir.Table:
    """``keys`` with side ``p``'s compared row (``{p}_*``) of each key it repeats: the first row
    that agrees with row ``against`` in amount, currency and status, else the first with its
    status, else the first; and ``{p}_charges``, the rows that are not ``failure``."""
    if rows is None:
        return keys.mutate(**{f"{p}_charges": keys[f"{p}_n"]})
    other = keys.select(
        _ck=keys.key,
        _a_minor=keys[f"{against}_minor"],
        _a_cur=keys[f"{against}_cur"],
        _a_st=keys[f"{against}_st"],
    )
    rows = rows.join(other, rows._key == other._ck)
    agrees = (
        (rows._minor == rows._a_minor) & (rows._cur == rows._a_cur) & (rows._st == rows._a_st)
    ).fill_null(False)
    same_status = (rows._st == rows._a_st).fill_null(False)
    order = [agrees.ifelse(0, 1), same_status.ifelse(0, 1), rows._ord]
    rows = rows.mutate(_pick=ibis.row_number().over(group_by=rows._key, order_by=order))
    picked = rows.filter(rows._pick == 0)
    chosen = picked.select(
        _chosen=picked._key,
        **{f"_c_{name}": picked[f"_{name}"].cast("int64") for name in PAIRED if name != "n"},
    )
    charges = rows.group_by(_charged_key=rows._key).aggregate(
        _c_charges=(rows._st != FAILURE).ifelse(1, 0).sum()
    )
    chosen = chosen.join(charges, chosen._chosen == charges._charged_key).drop("_charged_key")
    joined = keys.left_join(chosen, keys.key == chosen._chosen)
    found = joined._chosen.notnull()
    replaced = {
        f"{p}_{name}": found.ifelse(joined[f"_c_{name}"], joined[f"{p}_{name}"])
        for name in PAIRED
        if name != "n"
    }
    replaced[f"{p}_charges"] = found.ifelse(joined._c_charges.cast("int64"), joined[f"{p}_n"])
    return joined.mutate(**replaced).drop("_chosen", *(f"_c_{name}" for name in (*PAIRED[1:], "charges")))


def _within(
    tolerance: Tolerance, difference: ir.IntegerValue, amount: ir.IntegerValue, cur: ir.IntegerValue
) -> ir.BooleanValue:
    """Whether ``difference`` is within the tolerance of the ledger ``amount`` in currency code
    ``cur``: exact, in integers (a percentage as ``|d| * den <= |amount| * num``, widened)."""
    if tolerance.is_zero:
        return difference == 0
    size = (difference < 0).ifelse(-difference, difference)

    def allowed(allowance: Allowance) -> ir.BooleanValue:
        test = size <= allowance.minor
        if allowance.percent:
            num, den = allowance.ratio()
            scaled = (amount < 0).ifelse(-amount, amount).cast(SUM_TYPE) * num
            test |= size.cast(SUM_TYPE) * den <= scaled
        return test

    codes = {name: code for code, name in enumerate(currency_codes())}
    by_currency = [(cur == codes[name], allowed(allowance)) for name, allowance in tolerance.per_currency]
    # Computed only where amounts differ (a CASE evaluates its branches on the rows that take them).
    return ibis.cases((difference == 0, True), *by_currency, else_=allowed(tolerance.default))


def _in_transit(keys: ir.Table, rules: Rules) -> dict[str, ir.BooleanValue]:
    """Inside the settlement window: ``status`` (the processor's payment is unsettled, pending or
    waiting for the customer, and dated in the window), ``ledger`` (a ledger row dated in the
    window), ``processor`` (an unsettled processor payment dated in the window: the books may
    wait for its outcome; a settled one missing from the books is an exception at once)."""
    no = ibis.literal(False)
    if rules.timing is None:
        return {"status": no, "ledger": no, "processor": no}
    start = rules.timing.window_seconds
    recent_p = (keys.p_when >= start).fill_null(False) if rules.processor_dated else no
    recent_l = (keys.l_when >= start).fill_null(False) if rules.ledger_dated else no
    unsettled = keys.p_st.isin(list(UNSETTLED))
    return {"status": unsettled & recent_p, "ledger": recent_l, "processor": unsettled & recent_p}


def informational_apart(flagged: ir.Table) -> ir.Table:
    """A key with an exception is that exception only, never also in transit or matched within
    tolerance: a payment that failed or was charged twice is no variance to post, and its
    amount is at risk, not at stake in transit (the rows are counted in exceptions). A key in
    transit is not within tolerance too: the variance of a payment still pending is not posted."""
    exception = is_exception(flagged)
    transit = flagged.in_transit & ~exception
    return flagged.mutate(
        in_transit=transit, within_tolerance=flagged.within_tolerance & ~exception & ~transit
    )


def flag_stats(engine: Backend, flagged: ir.Table) -> pd.DataFrame:
    """Per ledger currency of the flagged keys: how many keys of each category, how many rows of
    each side the exception keys hold (``*_rows``) and the keys in transit (``*_transit``), and
    the keys not matched with one ledger row (count and exact sum)."""
    exception, transit = key_outcome(flagged)
    single = (flagged.l_n == 1) & (exception | transit)
    table = flagged.group_by(currency=flagged.l_cur).aggregate(
        **{name: flagged[name].ifelse(1, 0).sum() for name in (*EXCEPTION_FLAGS, *INFO_CATEGORIES)},
        l_rows=exception.ifelse(flagged.l_n.fill_null(0), 0).sum(),
        p_rows=exception.ifelse(flagged.p_n.fill_null(0), 0).sum(),
        l_transit=transit.ifelse(flagged.l_n.fill_null(0), 0).sum(),
        p_transit=transit.ifelse(flagged.p_n.fill_null(0), 0).sum(),
        single_n=single.ifelse(1, 0).sum(),
        single_total=single.ifelse(flagged.l_minor, 0).cast(SUM_TYPE).sum(),
    )
    return named_currencies(engine.arrow(table).to_pandas())
