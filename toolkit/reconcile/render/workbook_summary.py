"""report.xlsx's first sheet, ``Summary``: where the data came from, the run's settings, the row
accounting, the counts and amounts by category and currency (under an autofilter), the variance
per currency pair and a tracked run's states, then a note on how amounts are stored.
"""

from __future__ import annotations

import itertools

import pyarrow as pa

from toolkit.reconcile.render.words import moment_text, tolerance_text
from toolkit.reconcile.render.workbook_cells import (
    COUNT_STYLE,
    EXCEL_DIGITS,
    Currencies,
    Sheet,
    clean_texts,
    column_width,
    header_row,
    number_cells,
    row_xml,
    text_cells,
)
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.schema import SUMMARY_COLUMNS
from toolkit.reconcile.timing import duration_text

_NOTE = (
    "Amounts are numbers in their currency's format wherever Excel holds them exactly (at most "
    f"{EXCEL_DIGITS} significant digits at the currency's decimals); longer amounts are exact text."
)


def summary_sheet(
    result: ReconciliationResult,
    *,
    title: str,
    environment: str,
    generated_at: str,
    currencies: Currencies,
    as_text: int,
) -> Sheet:
    """Environment, the run's settings (tolerance, cut-off, settlement window), row accounting,
    counts and amounts by category and currency (the table under the autofilter), the variance
    per currency pair and the missing rates, then the note on amounts with the count of those
    kept as text."""
    accounting = _accounting(result)
    summary = _summary_columns(result)
    table, summary_as_text = _summary_table(summary, currencies)
    fx_lines, fx_as_text = _fx_lines(result, currencies)
    payout_lines, payouts_as_text = _payout_lines(result, currencies)
    as_text += summary_as_text + fx_as_text + payouts_as_text
    note = _NOTE + (f" {as_text:,} amount(s) in this workbook are text." if as_text else "")
    lines = [
        header_row([f"Data from: {environment}"]),
        *_text_rows([title, f"Generated {generated_at}", *_settings(result)]),
        "<row/>",
        *_accounting_lines(accounting),
        "<row/>",
    ]
    first = len(lines) + 1  # the summary table's header row, where the autofilter starts
    lines += [*table, "<row/>", *fx_lines, *payout_lines, *_tracking_lines(result), *_text_rows([note])]
    widths = [
        max(pair)
        for pair in itertools.zip_longest(_table_widths(accounting), _table_widths(summary), fillvalue=0.0)
    ]
    return Sheet(
        "Summary",
        "",
        "".join(lines),
        widths,
        table=(first, first + len(result.summary), len(SUMMARY_COLUMNS)),
    )


def _summary_columns(result: ReconciliationResult) -> dict[str, list[str]]:
    """The result's summary as text, a list per column ('' for an amount that does not apply)."""
    frame = result.summary
    return {
        "category": [str(c) for c in frame["category"]],
        "currency": [str(c) for c in frame["currency"]],
        "count": [str(int(c)) for c in frame["count"]],
        "amount": ["" if a is None or a != a else str(a) for a in frame["amount"]],
    }


def _summary_table(summary: dict[str, list[str]], currencies: Currencies) -> tuple[list[str], int]:
    """The counts and amounts by category and currency: the header, then a row per line of the
    summary (amounts in their currency's format); and how many amounts are kept as text."""
    text = {k: clean_texts(v) for k, v in summary.items()}
    amounts, as_text = currencies.amount_cells(text["amount"], text["currency"])
    rows = row_xml(
        [
            text_cells(text["category"]),
            text_cells(text["currency"]),
            number_cells(text["count"], COUNT_STYLE),
            amounts,
        ]
    ).to_pylist()
    return [header_row(list(SUMMARY_COLUMNS)), *rows], as_text


def _accounting_lines(accounting: dict[str, list[str]]) -> list[str]:
    """The row accounting's header, then a row per input: side and source as text, the counts
    as numbers."""
    cells = [
        text_cells(clean_texts(v)) if k in ("side", "source") else number_cells(clean_texts(v), COUNT_STYLE)
        for k, v in accounting.items()
    ]
    return [header_row(list(accounting)), *row_xml(cells).to_pylist()]


def _text_rows(texts: list[str]) -> list[str]:
    """One row of one text cell per text."""
    rows: list[str] = row_xml([text_cells(clean_texts(texts))]).to_pylist()
    return rows


def _accounting(result: ReconciliationResult) -> dict[str, list[str]]:
    """The row accounting of each input, as the page shows it: the in-transit, outside-period
    and after-cut-off columns only when some row is there."""
    counts = result.counts
    accounting = {
        "side": [c.side for c in counts],
        "source": [c.source for c in counts],
        "rows": [str(c.rows) for c in counts],
        "matched": [str(c.matched) for c in counts],
        "in exceptions": [str(c.exceptions) for c in counts],
    }
    if any(c.in_transit for c in counts):
        accounting["in transit"] = [str(c.in_transit) for c in counts]
    accounting["rejected"] = [str(c.rejected) for c in counts]
    if any(c.outside for c in counts):
        accounting["outside period"] = [str(c.outside) for c in counts]
    if any(c.after_cutoff for c in counts):
        accounting["after cut-off"] = [str(c.after_cutoff) for c in counts]
    return accounting


def _settings(result: ReconciliationResult) -> list[str]:
    """The run's amount tolerance, and its cut-off and settlement window where it had them."""
    lines = [f"Amount tolerance: {tolerance_text(result.amount_tolerance)}"]
    cutoff, grace = result.cutoff, result.grace
    if cutoff is not None:
        lines.append(f"Cut-off: {moment_text(cutoff)} (rows dated after it are left for the next run)")
    if grace:
        dated = f"dated from {moment_text(cutoff - grace)} " if cutoff is not None else ""
        lines.append(
            f"Settlement window: {duration_text(grace)} (payments {dated}that have not settled yet "
            "are in transit, not breaks)"
        )
    return lines


def _payout_lines(result: ReconciliationResult, currencies: Currencies) -> tuple[list[str], int]:
    """Per payout of the processor's export (payouts.csv): its items' net, what it paid out and
    the difference as numbers in its currency; none without payouts; and the amounts kept as text."""
    if not result.payouts:
        return [], 0
    currency = clean_texts([p.currency for p in result.payouts])
    cells, as_text = [], 0
    for values in (
        [str(p.items_net) for p in result.payouts],
        ["" if p.paid_out is None else str(p.paid_out) for p in result.payouts],
        ["" if p.difference is None else str(p.difference) for p in result.payouts],
    ):
        amounts, texts = currencies.amount_cells(clean_texts(values), currency)
        cells.append(amounts)
        as_text += texts
    names = ["payout", "currency", "items", "items' net", "paid out", "difference", "items add up?"]
    lines = [header_row(names)]
    lines += row_xml(
        [
            text_cells(clean_texts([p.payout for p in result.payouts])),
            text_cells(currency),
            number_cells(clean_texts([str(p.items) for p in result.payouts]), COUNT_STYLE),
            *cells,
            text_cells(clean_texts([p.state for p in result.payouts])),
        ]
    ).to_pylist()
    return [*lines, "<row/>"], as_text


def _fx_lines(result: ReconciliationResult, currencies: Currencies) -> tuple[list[str], int]:
    """The total variance per currency pair (numbers in the charged currency) and the rates the
    rate file lacked (none of it without reference rates), and the variances kept as text."""
    lines: list[str] = []
    pairs = result.fx_pairs
    as_text = 0
    if len(pairs):
        charged = clean_texts(pairs["charged_currency"])
        variance, as_text = currencies.amount_cells(clean_texts(pairs["variance"]), charged)
        lines.append(header_row(["booked", "charged", "payments at a reference rate", "total variance"]))
        lines += row_xml(
            [
                text_cells(clean_texts(pairs["ledger_currency"])),
                text_cells(charged),
                number_cells(
                    pa.array([str(int(n)) for n in pairs["payments"]], type=pa.string()), COUNT_STYLE
                ),
                variance,
            ]
        ).to_pylist()
        lines += _text_rows(
            ["Variance: charged - expected at the reference rate, in the charged currency (FX sheet)."]
        )
        lines.append("<row/>")
    if result.missing_rates:
        lines.append(
            header_row(["Rates missing from the rate file: payments that needed them were not compared"])
        )
        lines += [*_text_rows(list(result.missing_rates)), "<row/>"]
    return lines, as_text


def _tracking_lines(result: ReconciliationResult) -> list[str]:
    """For a tracked run: the run, then states per category and exceptions by age (empty else)."""
    tracking = result.tracking
    if tracking is None:
        return []
    counts = tracking.state_counts()
    previous = f"previous run {tracking.previous_run}" if tracking.previous_run else "first run of the track"
    heading = (
        f"Track {tracking.track}: run {tracking.run} as of {tracking.as_of_text} ({previous}): "
        + ", ".join(f"{counts[s]} {s}" for s in ("new", "open", "acknowledged", "resolved"))
    )
    lines = [*row_xml([text_cells(clean_texts([heading]))]).to_pylist()]
    for frame in (tracking.states(), tracking.age_buckets()):
        lines.append(header_row([str(c) for c in frame.columns]))
        cells = [
            text_cells(clean_texts(frame[c])) if i == 0 else number_cells(clean_texts(frame[c]), COUNT_STYLE)
            for i, c in enumerate(frame.columns)
        ]
        if len(frame):
            lines += row_xml(cells).to_pylist()
        lines.append("<row/>")
    return lines


def _table_widths(columns: dict[str, list[str]]) -> list[float]:
    return [
        column_width(name, max(map(len, values), default=0), amount=name == "amount")
        for name, values in columns.items()
    ]
