"""The files a notebook writes beside its run: where they go, and frames written as safe CSV."""

from __future__ import annotations

import json
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


def _csv_cell(value: object) -> object:
    """A cell as the CSV holds it: dicts and lists as JSON, text a spreadsheet would run neutralised."""
    from toolkit.outputs import neutralise_cell

    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return neutralise_cell(value) if isinstance(value, str) else value


def write_frame(frame: pd.DataFrame, output_dir: str | Path | None, name: str) -> Path | None:
    """Write a frame as CSV into ``output_dir`` (nothing when it is empty); amounts stay exact text.

    Columns holding dicts (actions with their QR images, localized names) are written as JSON. Text
    a spreadsheet would execute is neutralised, and the file appears whole or not at all.
    """
    import pandas as pd

    from toolkit.outputs import atomic_path

    path = output_file(output_dir, name)
    if path is None:
        return None
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(_csv_cell)
    if out.index.name is not None and pd.api.types.is_string_dtype(out.index.dtype):
        out.index = out.index.map(_csv_cell)
    with atomic_path(path) as temporary:
        out.to_csv(temporary, index=out.index.name is not None)
    return path
