"""Frames as a reader (and the HTML export of a run) should see them in a notebook cell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler


def _cell_text(value: object) -> str:
    """A cell as words: blank for missing, JSON-free text for dicts and lists, exact text else."""
    import pandas as pd

    if value is None or (not isinstance(value, dict | list | tuple) and pd.isna(value)):  # type: ignore[call-overload]
        return ""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_cell_text(v) for v in value)
    return str(value)


def table(frame: pd.DataFrame, *, money: Mapping[str, str] | None = None) -> Styler:
    """A frame for a notebook cell: blanks for missing values, no truncated cells, no 0..n index,
    and each money column (``money``: amount column -> currency column) shown with its currency.

    Returns a pandas Styler, which renders as HTML in the notebook and in its HTML export.
    """
    shown = frame.copy()
    for amount, currency in (money or {}).items():
        if amount in shown.columns and currency in shown.columns:
            shown[amount] = [
                f"{_cell_text(a)} {_cell_text(c)}".strip() if _cell_text(a) else ""
                for a, c in zip(shown[amount], shown[currency], strict=True)
            ]
    shown = shown.drop(columns=[c for c in set((money or {}).values()) if c in shown.columns])
    unnamed = shown.index.name is None  # positions (0..n), meaningless to a reader
    if unnamed and "merchantReferenceId" in shown.columns:
        shown, unnamed = shown.set_index("merchantReferenceId"), False
    text = shown.astype(object).map(_cell_text)
    text.index = [_cell_text(v) for v in text.index]
    text.index.name = shown.index.name
    styler = text.style.set_table_styles(
        [{"selector": "td", "props": "white-space: pre-wrap; text-align: left;"}]
    )
    return styler.hide(axis="index") if unnamed else styler


def errors_table(errors: pd.DataFrame) -> Styler | None:
    """The rows that failed, or one line saying there were none (an empty table says nothing)."""
    if errors.empty:
        print("no errors: every row went through")
        return None
    return table(errors)


def exceptions_table(exceptions: pd.DataFrame) -> Styler:
    """One category's exceptions: amounts with their currencies, keyed by merchantReferenceId."""
    return table(
        exceptions.drop(columns=["category"], errors="ignore"),
        money={
            "ledger_amount": "ledger_currency",
            "processor_amount": "processor_currency",
            "processor_fee": "processor_currency",
            "processor_net": "processor_currency",
        },
    )


def first_rows_note(category: str, shown: int, count: int) -> str:
    """What a notebook says under a category it shows only the first rows of, and how to see more."""
    return (
        f"the first {shown:,} of {count:,}; more: report.exceptions_page({category!r}, {shown}, {shown}); "
        "exceptions.csv and report.xlsx hold every one"
    )


def count_words(counts: Mapping[str, int] | pd.Series) -> str:
    """``{'new': 4, 'changed': 1}`` as ``4 new, 1 changed`` (a dict printed raw reads as code)."""
    return ", ".join(f"{int(n)} {name}" for name, n in dict(counts).items()) or "none"
