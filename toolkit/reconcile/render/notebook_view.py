"""A result as a notebook cell shows it (``ReconciliationResult._repr_html_``).

Typing ``result`` in a cell should answer what report.html answers, in a cell's space: how many
matched and how many are exceptions, how every row of each input is accounted for, a bar per
category, the summary, and the first rows of each category with the call that loads more
(``exceptions_page``), since a result may hold more rows than a page should. The words and the
money come from ``words``, ``figures`` and ``sections``, as the page's do, so the cell and the page
never say a row differently.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolkit.charts import EXCEPTION_COLOUR
from toolkit.outputs import frame_records
from toolkit.reconcile.render.figures import category_lines, source_lines
from toolkit.reconcile.render.sections import Cell, info_sections, row_cells
from toolkit.reconcile.render.words import category_label
from toolkit.reconcile.schema import INFO_CATEGORIES, in_report_order

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult

#: Rows of each category the cell shows; ``exceptions_page`` loads the rest on demand.
NOTEBOOK_ROWS = 5

#: The optional accounting columns, each shown only when some row is there.
_ACCOUNTING_EXTRA = (
    ("in_transit", "in transit"),
    ("outside", "outside period"),
    ("after_cutoff", "after cut-off"),
)


@dataclass(frozen=True)
class NotebookView:
    """A result as a cell shows it, with ``rows`` rows of each category (``result.view``)."""

    result: ReconciliationResult
    rows: int = NOTEBOOK_ROWS

    def _repr_html_(self) -> str:
        return notebook_html(self.result, self.rows)


def notebook_html(result: ReconciliationResult, rows: int = NOTEBOOK_ROWS) -> str:
    """The whole cell: headline, accounting, a bar per category, summary, first rows (none
    when ``rows`` is 0)."""
    return (
        f"<div>{_headline(result)}{_accounting(result)}{_category_bars(result)}"
        f"{_summary(result)}{_first_rows(result, rows)}{_information_rows(result, rows)}</div>"
    )


def _headline(result: ReconciliationResult) -> str:
    """Matched and exceptions; the informational rows on a line of their own, never among the
    exceptions; a tracked run's first summary line."""
    info = ", ".join(f"{n:,} {name.replace('_', ' ')}" for name, n in result.info_counts.items() if n)
    information = f"<p>For information, not exceptions: {info}</p>" if info else ""
    tracked = ""
    if result.tracking is not None:
        tracked = f"<p>{html.escape(result.tracking.summary_text().splitlines()[0])}</p>"
    count = result.exception_count
    return (
        f"<strong>Reconciliation</strong>: {result.matched_count:,} matched, {count:,} "
        f"exception{'' if count == 1 else 's'} (amount tolerance {result.amount_tolerance.text()})"
        f"{information}{tracked}"
    )


def _accounting(result: ReconciliationResult) -> str:
    """Each input's rows, its side and source in the report's words (a file by its name, not its
    local path): matched, in exceptions, rejected (and the optional columns)."""
    extra = [(n, label) for n, label in _ACCOUNTING_EXTRA if any(getattr(c, n) for c in result.counts)]
    rows = "".join(
        f"<tr><td>{html.escape(c.side)}</td><td>{html.escape(c.source)}</td>"
        f"<td>{c.rows:,}</td><td>{c.matched:,}</td><td>{c.exceptions:,}</td>"
        f"<td>{c.rejected:,}</td>" + "".join(f"<td>{getattr(c, name):,}</td>" for name, _ in extra) + "</tr>"
        for c in source_lines(result)
    )
    return (
        "<table><thead><tr><th>side</th><th>source</th><th>rows</th><th>matched</th>"
        "<th>in exceptions</th><th>rejected</th>"
        + "".join(f"<th>{label}</th>" for _, label in extra)
        + f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _category_bars(result: ReconciliationResult) -> str:
    """The chart: each category with exceptions, its count as a bar against the largest."""
    found, _ = category_lines(result)
    if not found:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(line.label)} <code>{line.code}</code></td>"
        f'<td style="text-align: right">{line.count:,}</td>'
        f'<td style="width: 12em"><div style="background: {EXCEPTION_COLOUR}; height: .8em; '
        f'width: {line.bar}%"></div></td><td>{html.escape(line.amounts)}</td></tr>'
        for line in found
    )
    return (
        "<table><thead><tr><th>exceptions by category</th><th>count</th><th></th><th>amount</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _summary(result: ReconciliationResult) -> str:
    """Counts and exact amounts per category and currency, ``matched`` first."""
    amounts = ["" if a is None else str(a) for a in result.summary["amount"]]
    return str(result.summary.assign(amount=amounts).to_html(index=False, na_rep=""))


def _first_rows(result: ReconciliationResult, rows: int) -> str:
    """Each category's first ``rows`` exceptions under its name, and how to load the rest."""
    if rows <= 0:
        return ""
    counts = result.row_counts()
    tracked = result.tracking is not None
    state = ("state",) if tracked else ()
    header = _header(("merchantReferenceId", "ledger", "processor", "where", *state, "detail"))
    parts = []
    for category in in_report_order(c for c, n in counts.items() if n and c not in INFO_CATEGORIES):
        count = counts[category]
        page = result.exceptions_page(category, 0, rows)
        body = "".join(_row(row_cells(r, tracked=tracked)) for r in frame_records(page))
        more = ""
        if count > len(page):
            more = (
                f"<p>The first {len(page):,} of {count:,}; this result's "
                f"<code>exceptions_page({category!r}, {len(page)}, 1000)</code> loads more.</p>"
            )
        kind = "exception" if count == 1 else "exceptions"
        parts.append(
            f"<h4>{html.escape(category_label(category))} <code>{category}</code>: {count:,} {kind}</h4>"
            f"<table>{header}<tbody>{body}</tbody></table>{more}"
        )
    return "".join(parts)


def _information_rows(result: ReconciliationResult, rows: int) -> str:
    """The informational categories as the report lists them: the oldest first (an in-transit
    payment near the end of its window is the next break), with their age or variance."""
    if rows <= 0:
        return ""
    parts = []
    for section in info_sections(result, rows):
        names = ("merchantReferenceId", "ledger", "processor", section.fifth_column, "age (days)", "detail")
        body = "".join(_row(cells) for cells in section.rows)
        more = ""
        if section.count > len(section.rows):
            more = (
                f"<p>The {len(section.rows):,} oldest of {section.count:,}; this result's "
                f"<code>exceptions_page({section.code!r}, 0, 1000)</code> lists them in report order.</p>"
            )
        parts.append(
            f"<h4>{html.escape(section.label)} <code>{section.code}</code>: {section.count:,} "
            f"for information, not exceptions</h4><table>{_header(names)}<tbody>{body}</tbody></table>{more}"
        )
    return "".join(parts)


def _header(names: tuple[str, ...]) -> str:
    return "<thead><tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in names) + "</tr></thead>"


def _row(cells: tuple[Cell, ...]) -> str:
    return "<tr>" + "".join(_cell(c) for c in cells) + "</tr>"


def _cell(cell: Cell) -> str:
    sub = f'<br><small style="opacity: .7">{html.escape(cell.sub)}</small>' if cell.sub else ""
    return f'<td style="text-align: left; overflow-wrap: anywhere">{html.escape(cell.text)}{sub}</td>'
