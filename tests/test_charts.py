"""Charts: bars for what was found (nothing drawn for empty categories), shown as PNG."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.patches import Rectangle

from tests.reconcile.files import write
from toolkit.charts import Chart, category_chart, outcomes_chart
from toolkit.reconcile import load_ledger, load_processor, reconcile

LEDGER = (
    "merchantReferenceId,amount,currency,status\nA,10.00,USD,success\nB,5.00,USD,success\nC,x,USD,success\n"
)
PROCESSOR = "merchantReferenceId,amount,currency,status\nA,10.01,USD,success\nD,1.00,USD,success\n"


def rectangle(patch: object) -> Rectangle:
    """A bar of a bar chart (matplotlib types ``axes.patches`` as any Patch)."""
    assert isinstance(patch, Rectangle)
    return patch


def test_category_chart_draws_one_bar_per_category_found(tmp_path: Path) -> None:
    result = reconcile(
        load_ledger(write(tmp_path, "l.csv", LEDGER)), load_processor(write(tmp_path, "p.csv", PROCESSOR))
    )
    chart = category_chart(result)
    axes = chart.figure.axes[0]
    labels = [label.get_text() for label in axes.get_yticklabels()]
    bars = dict(zip(labels, [rectangle(patch).get_width() for patch in axes.patches], strict=True))
    assert bars == {
        "missing_in_processor": 1,
        "missing_in_ledger": 1,
        "amount_mismatch": 1,
        "rejected_row": 1,
    }
    assert repr(chart) == "<Chart: Exceptions by category>"
    assert chart._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")


def test_category_chart_of_a_clean_run_says_none(tmp_path: Path) -> None:
    same = "merchantReferenceId,amount,currency,status\nA,10.00,USD,success\n"
    result = reconcile(
        load_ledger(write(tmp_path, "l.csv", same)), load_processor(write(tmp_path, "p.csv", same))
    )
    chart = category_chart(result, "Subscription exceptions by category")
    assert chart.figure.axes[0].get_title() == "Subscription exceptions by category: none"
    assert len(chart.figure.axes[0].patches) == 0


def test_outcomes_chart_stacks_only_the_statuses_that_occur() -> None:
    table = pd.DataFrame(
        {"success": [2, 0], "pending": [0, 0], "failure": [1, 3]},
        index=pd.Index(["CARD", "PIX"], name="paymentMethodType"),
    )
    chart = outcomes_chart(table)
    axes = chart.figure.axes[0]
    legend = axes.get_legend()
    assert legend is not None and [text.get_text() for text in legend.get_texts()] == ["success", "failure"]
    bars = [rectangle(patch) for patch in axes.patches]
    assert [bar.get_height() for bar in bars] == [2, 0, 1, 3]  # success bars, then failure bars on them
    assert [bar.get_y() for bar in bars] == [0, 0, 2, 0]
    assert isinstance(chart, Chart) and repr(chart) == "<Chart: Outcomes by payment method>"
