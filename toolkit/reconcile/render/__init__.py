"""Rendering a ``ReconciliationResult``: the result is data, these modules only say it.

For the controller who did not run the reconciliation:

- ``report``: the report's files in a folder, written together or not at all (``write_report``):
  report.html, report.xlsx, exceptions.csv and .parquet, summary.csv, fx.csv and a tracked run's
  CSV files; and the command's summary in plain text (``summary_text``).
- ``page``: report.html (``render_html``) from its template in ``templates/``, gathering what the
  headline (``figures``), the tables of rows (``sections``) and the words (``words``) say.
- ``workbook``: report.xlsx, written as Office Open XML by hand: its summary sheet
  (``workbook_summary``), its sheets of exceptions (``workbook_exceptions``), made of cells
  cleaned and formatted in ``workbook_cells``.

For the analyst in a notebook:

- ``notebook_view``: a result as a cell shows it (``result.view()``, ``_repr_html_``), in the
  words and figures of the page.

Names are imported on first use, as in ``toolkit.reconcile``: importing this package loads none
of its modules, so that ``result.view()`` loads neither the workbook nor the page's template.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_names

#: Each public name: its module under toolkit.reconcile.render.
_EXPORTS: dict[str, str] = {
    "NotebookView": "notebook_view",
    "render_html": "page",
    "FX_FILE": "report",
    "REPORT_FILES": "report",
    "TRACKED_FILES": "report",
    "summary_text": "report",
    "write_report": "report",
}


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from toolkit.reconcile.render.notebook_view import NotebookView
    from toolkit.reconcile.render.page import render_html
    from toolkit.reconcile.render.report import (
        FX_FILE,
        REPORT_FILES,
        TRACKED_FILES,
        summary_text,
        write_report,
    )

__all__ = [
    "FX_FILE",
    "REPORT_FILES",
    "TRACKED_FILES",
    "NotebookView",
    "render_html",
    "summary_text",
    "write_report",
]
