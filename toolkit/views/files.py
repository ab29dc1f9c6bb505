"""The files a notebook writes beside its run: where they go, and frames written as safe CSV."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def output_file(output_dir: str | Path | None, name: str) -> Path | None:
    """Where a notebook writes ``name``: inside ``output_dir``, or nowhere when it is empty."""
    if output_dir is None or not str(output_dir).strip():
        return None
    from toolkit.outputs import ensure_directory

    return ensure_directory(output_dir) / name


def _csv_cell(value: object, *, row_start: bool = False) -> object:
    """A cell as the CSV holds it: dicts and lists as JSON, text a spreadsheet would run neutralised
    (``row_start`` for the first cell of a row, where a reader's field runs on past it)."""
    from toolkit.outputs import neutralise_cell

    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return neutralise_cell(value, row_start=row_start) if isinstance(value, str) else value


def _neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` as the CSV holds it (``_csv_cell``), the labels of the header too; the
    first column written (the index when it is written) begins every row."""
    import pandas as pd

    out = frame.copy()
    with_index = out.index.name is not None
    for position, column in enumerate(out.columns):
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            first = position == 0 and not with_index
            out[column] = out[column].map(functools.partial(_csv_cell, row_start=first))
    if not isinstance(out.columns, pd.MultiIndex):
        out.columns = pd.Index(
            [_csv_cell(c, row_start=i == 0 and not with_index) for i, c in enumerate(out.columns)]
        )
    if with_index:
        if pd.api.types.is_string_dtype(out.index.dtype):
            out.index = out.index.map(functools.partial(_csv_cell, row_start=True))
        out.index = out.index.rename(_csv_cell(out.index.name, row_start=True))
    return out


def write_frame(
    frame: pd.DataFrame, output_dir: str | Path | None, name: str, *, inputs: Iterable[str | Path | None] = ()
) -> Path | None:
    """Write a frame as CSV into ``output_dir`` (nothing when it is empty); amounts stay exact text.

    Columns holding dicts (actions with their QR images, localized names) are written as JSON. Text
    a spreadsheet would execute is neutralised, and the file appears whole or not at all. A file of
    that name that the toolkit did not write there, or that is one of ``inputs``, is never replaced
    (``toolkit.output_record``: ``OutputError`` naming it).
    """
    from toolkit.output_record import claim
    from toolkit.outputs import atomic_path

    path = output_file(output_dir, name)
    if path is None:
        return None
    record = claim(path.parent, [name], inputs=inputs)
    out = _neutralised(frame)
    with atomic_path(path) as temporary:
        out.to_csv(temporary, index=out.index.name is not None)
    record.updated([name])
    return path
