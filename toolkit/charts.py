"""The charts the notebooks show: matplotlib figures that display themselves as PNG.

Figures are built without pyplot, so drawing one never switches the kernel's matplotlib backend
and leaves no global figure behind; ``Chart`` gives each a notebook display of its own (which the
HTML export of a run keeps).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from toolkit.reconcile.result import ReconciliationResult

#: Bar colours of payment statuses, the same in every chart.
STATUS_COLOURS: dict[str, str] = {
    "success": "#2e7d32",
    "pending": "#f9a825",
    "failure": "#c62828",
    "next_action": "#1565c0",
    "unknown": "#6d6d6d",
}
EXCEPTION_COLOUR = "#b36b00"


class Chart:
    """A matplotlib figure that shows itself as a PNG in a notebook (and in its HTML export)."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
        return buffer.getvalue()

    def __repr__(self) -> str:
        return "<Chart: " + (self.figure.axes[0].get_title() if self.figure.axes else "empty") + ">"


def category_chart(result: ReconciliationResult, title: str = "Exceptions by category") -> Chart:
    """A horizontal bar chart of the exceptions per category (categories with none left out)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    counts = {name: count for name, count in result.category_counts.items() if count}
    figure = Figure(figsize=(7, 0.45 * max(len(counts), 1) + 1.2))
    axes = figure.subplots()
    names = list(counts)[::-1]
    bars = axes.barh(names, [counts[n] for n in names], color=EXCEPTION_COLOUR)
    axes.bar_label(bars, padding=3)
    axes.set_xlabel("exceptions")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.25 ticks
    axes.set_title(title if counts else f"{title}: none")
    figure.tight_layout()
    return Chart(figure)


def outcomes_chart(table: pd.DataFrame) -> Chart:
    """A stacked bar chart of ``toolkit.scenarios.outcomes_by_method``: methods by status."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 3.5))
    axes = figure.subplots()
    bottom = [0] * len(table)
    for status in table.columns:
        values = [int(v) for v in table[status]]
        if any(values):
            axes.bar(list(table.index), values, bottom=bottom, label=status, color=STATUS_COLOURS.get(status))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axes.set_ylabel("payments")
    axes.set_title("Outcomes by payment method")
    axes.legend(loc="upper right", fontsize="small")
    axes.tick_params(axis="x", labelrotation=45)
    figure.tight_layout()
    return Chart(figure)
