"""Step 4: one row per exception, with its detail, in report order; a duplicate's extra rows; the
rejected rows of each side.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir
import pandas as pd

from toolkit.errors import InputError
from toolkit.reconcile._engine.details import (
    compared_detail,
    duplicate_detail_parts,
    fx_detail,
    missing_detail,
    transit_detail,
)
from toolkit.reconcile._engine.model import DAY, FAILURE, SUM_TYPE, Rules, Side, with_names
from toolkit.reconcile.backends import Backend
from toolkit.reconcile.inputs import (
    REJECTED_COLUMNS,
    minor_text,
    rejected_frame,
)
from toolkit.reconcile.schema import (
    CATEGORIES,
    HELD_ROWS,
)


def duplicate_rows(engine: Backend, side: Side, rows: ir.Table, flagged: ir.Table) -> ir.Table:
    """Per duplicated key of ``side``: its rows (``_rows_text``, in file order; each with its
    amount, currency and status when they differ), how many, and the values of the row shown
    (the first that took or may take money besides the row compared, the one that should not be
    there), as ``l2_*`` or ``p2_*``."""
    p = side.name[0]
    compared = flagged.filter(flagged[f"duplicate_in_{side.name}"])
    compared = compared.select(_ck=compared.key, _cord=compared[f"{p}_ord"])
    rows = rows.join(compared, rows._key == compared._ck)
    extra = (rows._st != FAILURE) & (rows._ord != rows._cord)
    rows = rows.mutate(
        _rank=ibis.row_number().over(group_by=rows._key, order_by=[extra.ifelse(0, 1), rows._ord])
    )
    named = with_names(rows.mutate(r_ord=rows._ord, r_cur=rows._cur, r_st=rows._st), "r", side)
    each = (
        named.r_row.cast("string")
        + ": "
        + minor_text(named._minor, named.r_digits)
        + " "
        + named.r_currency
        + " "
        + named.r_status
    )
    shown = named._rank == 0
    grouped = named.group_by(_dup_key=named._key).aggregate(
        _rows=named.r_row.collect(),
        _each=ibis.struct({"row": named.r_row, "text": each}).collect(),
        _count=named.count(),
        _alike=(named._minor.min() == named._minor.max())
        & (named._cur.min() == named._cur.max())
        & (named._st.min() == named._st.max()),
        **{f"{p}2_{name}": named[f"_{name}"].max(where=shown) for name in ("minor", "cur", "st", "ord")},
    )
    numbers = grouped._rows.sort().map(lambda r: r.cast("string")).join(", ")
    described = grouped._each.sort().map(lambda r: r.text).join(", ")
    grouped = grouped.mutate(_rows_text=grouped._alike.ifelse(numbers, described)).drop(
        "_rows", "_each", "_alike"
    )
    # What is at risk: every extra row that took or may take money, in the shown row's currency.
    extras = named.filter((named._st != FAILURE) & (named._ord != named._cord))
    extras = extras.group_by(_ek=extras._key, _ecur=extras._cur).aggregate(
        _extra=extras._minor.abs().cast(SUM_TYPE).sum()
    )
    cur = grouped[f"{p}2_cur"]
    joined = grouped.left_join(extras, (grouped._dup_key == extras._ek) & (cur == extras._ecur))
    return engine.keep(joined.drop("_ek", "_ecur"))


def exception_rows(
    engine: Backend,
    sides: tuple[Side, Side],
    flagged: ir.Table,
    duplicates: dict[str, ir.Table],
    stats: pd.DataFrame,
    rules: Rules,
) -> ir.Table | None:
    """One row per exception or informational row (None: there is none), in the backend: what
    ``EXCEPTION_COLUMNS`` shows, the summary's ``_cur`` and ``_amount``, and the report order's
    ``_rank`` (category), ``_on_processor`` (the ledger's rows first) and ``_row``."""
    led, pro = sides
    f = engine.keep(with_names(with_names(flagged, "l", led), "p", pro))  # a few rows; read once per part
    parts: list[ir.Table] = []
    cutoff = None if rules.timing is None else rules.timing.cutoff_seconds

    def part(
        category: str,
        table: ir.Table,
        on_processor: bool | ir.BooleanValue,
        detail: ir.StringValue,
        amount: ir.IntegerValue,
        currency: ir.StringValue | None = None,
        dated_by: ir.IntegerValue | None = None,
        **sides: ir.Value,
    ) -> None:
        if not stats[category].sum():  # a smaller query: only the categories found
            return
        when = table.l_when.fill_null(table.p_when) if dated_by is None else dated_by
        age = ibis.null("int64") if cutoff is None else ((cutoff - when) / DAY).floor().cast("int64")
        columns = {
            "merchantReferenceId": table.key,
            "category": ibis.literal(category),
            "_rank": ibis.literal(CATEGORIES.index(category)),
            "_on_processor": ibis.literal(on_processor) if isinstance(on_processor, bool) else on_processor,
            "l_minor": table.l_minor,
            "l_digits": table.l_digits,
            "l_currency": table.l_currency,
            "l_status": table.l_status,
            "l_row": table.l_row,
            "l_source": table.l_source,
            "p_minor": table.p_minor,
            "p_digits": table.p_digits,
            "p_currency": table.p_currency,
            "p_status": table.p_status,
            "p_row": table.p_row,
            "p_source": table.p_source,
        }
        columns |= sides
        columns["_row"] = (  # the row shown: the processor's or the ledger's
            columns["p_row" if on_processor else "l_row"]
            if isinstance(on_processor, bool)
            else on_processor.ifelse(columns["p_row"], columns["l_row"])
        )
        columns["detail"] = detail
        columns["age_days"] = age
        # At risk or at stake, a refund's as much as a charge's; only a variance keeps its sign.
        columns["_amount"] = amount if category == "within_tolerance" else amount.abs()
        shown = columns["l_currency"].fill_null(columns["p_currency"])  # the rows shown
        columns["_cur"] = shown if currency is None else currency
        selected = table.select(**columns)
        parts.append(
            selected.cast(
                {
                    "l_minor": "int64",
                    "p_minor": "int64",
                    "l_digits": "int64",
                    "p_digits": "int64",
                    "l_row": "int64",
                    "p_row": "int64",
                    "age_days": "int64",
                    "_row": "int64",
                    "_amount": "int64",
                    "_cur": "string",
                }
            )
        )

    missing = (("missing_in_processor", False, pro), ("missing_in_ledger", True, led))
    for category, on_processor, other in missing:
        only, detail = missing_detail(f.filter(f[category]), other)
        part(category, only, on_processor, detail, only.p_minor if on_processor else only.l_minor)
    amount = f.filter(f.amount_mismatch)
    fx = amount.fx_state.notnull()
    fx_variance = amount.p_minor - amount.fx_expected
    part(
        "amount_mismatch",
        amount,
        False,
        fx.ifelse(fx_detail(amount, "beyond"), compared_detail(amount, "difference")),
        fx.ifelse(fx_variance.abs(), amount.l_minus_p.abs()),
        currency=fx.ifelse(amount.p_currency, amount.l_currency),
    )
    currency = f.filter(f.currency_mismatch)
    part(
        "currency_mismatch",
        currency,
        False,
        "ledger "
        + currency.l_currency
        + ", processor "
        + currency.p_currency
        + currency.fx_text.isnull().ifelse("", "; " + currency.fx_text)
        + "; processor row "
        + currency.p_row.cast("string"),
        currency.l_minor,
    )
    status = f.filter(f.status_mismatch)
    part(
        "status_mismatch",
        status,
        False,
        "ledger "
        + status.l_status
        + ", processor "
        + status.p_status
        + "; processor row "
        + status.p_row.cast("string"),
        status.l_minor,
    )
    duplicate_detail_parts(part, f, duplicates, sides)
    unknown = f.filter(f.unknown_outcome)
    part(
        "unknown_outcome",
        unknown,
        True,
        ibis.literal("the processor does not know the outcome of this payment"),
        unknown.l_minor.isnull().ifelse(unknown.p_minor, unknown.l_minor),
    )
    if rules.timing is not None:
        transit = f.filter(f.in_transit)
        part(
            "in_transit",
            transit,
            transit.l_n.isnull(),
            transit_detail(transit, rules.timing),
            transit.l_minor.isnull().ifelse(transit.p_minor, transit.l_minor),
            dated_by=transit.p_when.fill_null(transit.l_when),
        )
    within = f.filter(f.within_tolerance)
    fx = within.fx_state.notnull()
    part(
        "within_tolerance",
        within,
        False,
        fx.ifelse(fx_detail(within, "within"), compared_detail(within, "variance", ", within tolerance")),
        fx.ifelse(within.fx_expected - within.p_minor, within.l_minus_p),
        currency=fx.ifelse(within.p_currency, within.l_currency),
    )
    if not parts:
        return None
    union = parts[0]
    for more in parts[1:]:
        union = union.union(more)
    return union


#: Rejected rows of one side a run lists (each held in memory with its reasons), and those
#: quoted when there are more.
REJECTED_ROWS = HELD_ROWS


_QUOTED_REJECTED = 3


def rejected_rows(engine: Backend, side: Side, sums: pd.DataFrame) -> pd.DataFrame:
    """The rows of one side that cannot be used, with their reasons (few, by nature): only those
    rows are read and checked again, with the columns the reasons quote.

    More than ``REJECTED_ROWS`` of them (a whole file misread: a wrong decimal mark, a column
    mapped wrong) would take gigabytes with their reasons (3M: 8.7 GB): the run stops instead,
    quoting the first ones, so that the file can be read as it should be."""
    count = int(sums["rejected"].sum())
    if not count:
        return pd.DataFrame({name: [] for name in REJECTED_COLUMNS}).astype({"source_row": "int64"})
    bad = side.rows.filter(side.rows._rejected)
    if count > REJECTED_ROWS:
        bad = bad.order_by(bad._ord).limit(_QUOTED_REJECTED)
    bad = bad.select(_bad_ord=bad._ord)
    written = side.written
    frame = rejected_frame(
        side.loaded, engine, side.loaded.check(written.semi_join(bad, written._ord == bad._bad_ord))
    )
    if count > REJECTED_ROWS:
        quoted = "; ".join(f"row {r.source_row}: {r.detail}" for r in frame.itertuples())
        raise InputError(
            f"{side.loaded.source}: {count:,} rows cannot be used, more than a run lists "
            f"({REJECTED_ROWS:,}); the first: {quoted}. Is the file read as it should be (--decimal, "
            "a column map)?"
        )
    return frame
