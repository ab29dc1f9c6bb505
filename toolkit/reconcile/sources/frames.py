"""A pandas frame as a table of text numbered from 1 (Decimals written exactly, float amounts
refused), and a value as text."""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import InputError
from toolkit.reconcile.sources.described import Described, _columns, named_cells
from toolkit.reconcile.sources.formats import WRITTEN


def _describe_frame(frame: pd.DataFrame, side: str, amount_columns: frozenset[str]) -> Described:
    """A pandas frame (its named index becomes a column), as an Arrow table numbered from 1."""
    if frame.index.name is not None or isinstance(frame.index, pd.MultiIndex):
        frame = frame.reset_index()
    name = f"<{side} frame>"
    table = _numbered_table(_frame_to_table(frame, name, amount_columns), first=1)
    table = table.rename_columns(named_cells(table.column_names))
    return Described(name, "frame", _columns(table, name), table=table)


def _raw_names(table: pa.Table, wanted: list[str]) -> list[str]:
    by_trimmed = {str(n).strip(): n for n in table.column_names}
    return [by_trimmed[c] for c in wanted]


def _text_of(value: Any) -> str:
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        return "" if value != value else repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _frame_to_table(frame: pd.DataFrame, name: str, amount_columns: frozenset[str]) -> pa.Table:
    """A frame -> a table of strings; Decimals written exactly, float amounts refused."""
    columns: dict[str, pa.Array] = {}
    for column in frame.columns:
        series = frame[column]
        label = str(column)
        if label.strip().lower() in amount_columns and (
            pd.api.types.is_float_dtype(series)
            or (series.dtype == object and any(isinstance(v, float) for v in series.tolist()))
        ):
            raise InputError(f"{name}: column {label!r} holds floats; pass text or Decimal amounts")
        string_like = isinstance(series.dtype, pd.StringDtype) or (
            isinstance(series.dtype, pd.ArrowDtype) and pa.types.is_string(series.dtype.pyarrow_dtype)
        )
        if string_like:
            values = series.to_numpy(dtype=object, na_value="")
            columns[label] = pa.array(values, type=pa.string())
        else:
            columns[label] = pa.array([_text_of(v) for v in series.tolist()], type=pa.string())
    return pa.table(columns) if columns else pa.table({})


def _numbered_table(table: pa.Table, first: int) -> pa.Table:
    """``table`` with ``source_row`` (``first``, ``first + 1``, ...) and ``_ord``, the same, less
    its blank rows (every cell empty, as a blank line of a CSV file): not rows at all, where a
    person sees nothing to reconcile."""
    rows = pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    numbered = table.append_column("_ord", rows).append_column("source_row", rows)
    if not table.num_columns:
        return numbered
    cells = (pc.fill_null(table.column(i), "") for i in range(table.num_columns))
    return numbered.filter(functools.reduce(pc.or_, (pc.match_substring_regex(c, WRITTEN) for c in cells)))
