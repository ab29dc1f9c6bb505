"""Per payout an export names (Stripe's ``automatic_payout_id``, Adyen's ``Batch Number``): what
its items add up to, in their net amounts, and what the payout row paid out.

A processor pays out in batches, net of fees, refunds and chargebacks. Where the export ties each
row to its payout (its layout's ``[payout]``), the rows of one payout and currency are added up
exactly: the items (every row but the payout's own) and the payout. A payout adds up when its
items' net equals what it paid out; one whose payout row the file does not have (paid out in the
next file, or not yet) is shown with its items only. Every row of the file counts, whatever its
period, cut-off or check: the file says which payout paid it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from toolkit.money import from_minor
from toolkit.reconcile._engine.model import Side, exact_sum
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs.checks import currency_codes, exact_amounts, signed_amounts, trimmed
from toolkit.reconcile.movements import code
from toolkit.reconcile.relation import count_if, ident
from toolkit.reconcile.result import PayoutTotal
from toolkit.reconcile.sources.rows import FILE_SHIFT, PART_SHIFT


def payout_totals(engine: Backend, side: Side) -> tuple[PayoutTotal, ...]:
    """Each payout and currency of ``side``'s export (none where its layout names no payout):
    its items' count and net total, what its payout rows paid out (None: no such row), and when
    (the payout row's time, where the side is dated)."""
    layout = side.loaded.layout
    columns = None if layout is None else layout.payout
    if columns is None or not set(columns.columns()) <= set(side.written.columns):
        return ()
    # The rows as written, each once (not the movements split from them), with their kind.
    rows = side.written.filter(f"_ord % {1 << FILE_SHIFT} < {1 << PART_SHIFT}")
    currency = ident(columns.currency) if columns.currency else ident("currency")
    reference = trimmed(ident(columns.reference))
    if columns.own is not None:
        rows = rows.mutate(_own=trimmed(ident(columns.own)))
    own = ["_own"] if columns.own is not None else []
    if columns.net is not None:
        rows = rows.select("_ord", *own, _payout=reference, amount=ident(columns.net), currency=currency)
    else:
        rows = rows.select(
            "_ord",
            *own,
            _payout=reference,
            debit=ident(str(columns.net_debit)),
            credit=ident(str(columns.net_credit)),
            currency=currency,
        )
        rows = signed_amounts(rows, "pair", credit_positive=True)
    read = exact_amounts(engine, rows, decimal=side.loaded.described.decimal)
    kinded = read.left_join(f"({side.rows})", "_s._ord = _j._ord", _kind="_j._kind", _when="_j._when")
    paid = f"_kind = {code('payout')}"
    if columns.own is not None:  # a payout row's own id, where the reference names only items'
        kinded = kinded.mutate(_payout=f"CASE WHEN {paid} AND _payout = '' THEN _own ELSE _payout END")
    query = (
        f"SELECT _payout AS payout, _cur AS currency, {count_if(f'NOT ({paid})')} AS items, "
        f"COALESCE({exact_sum(f'CASE WHEN NOT ({paid}) THEN _minor ELSE 0 END')}, 0) AS items_total, "
        f"{count_if(paid)} AS payouts, "
        f"COALESCE({exact_sum(f'CASE WHEN {paid} THEN _minor ELSE 0 END')}, 0) AS paid, "
        f"{count_if('_minor IS NULL')} AS unread, MIN(CASE WHEN {paid} THEN _when END) AS paid_on "
        f"FROM ({kinded}) WHERE _payout <> '' GROUP BY _payout, _cur ORDER BY _payout, _cur"
    )
    codes = currency_codes()
    totals = []
    for row in engine.arrow(query).to_pylist():
        if row["currency"] is None:
            continue  # a currency that cannot be read: its rows are rejected rows of the run
        iso = codes[int(row["currency"])]
        paid_out = -from_minor(int(row["paid"]), iso) if int(row["payouts"]) else None
        totals.append(
            PayoutTotal(
                payout=str(row["payout"]),
                currency=iso,
                items=int(row["items"]),
                items_net=from_minor(int(row["items_total"]), iso),
                paid_out=paid_out,
                unread=int(row["unread"]),
                paid_on=None if row["paid_on"] is None else datetime.fromtimestamp(int(row["paid_on"]), UTC),
            )
        )
    return tuple(totals)
