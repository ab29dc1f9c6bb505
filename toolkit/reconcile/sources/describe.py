"""``describe``: a source looked at once, cheaply, by its kind (a frame, a table of Spark's
catalog, a CSV file, a workbook, Parquet files, a folder or a glob of them), and refused if it
cannot be read."""

from __future__ import annotations

import glob
import stat
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from toolkit.errors import InputError
from toolkit.reconcile.sources.described import Described, ParquetPart, Source, _columns_of
from toolkit.reconcile.sources.files import _mode, _regular_file
from toolkit.reconcile.sources.formats import _describe_csv
from toolkit.reconcile.sources.frames import _describe_frame
from toolkit.reconcile.sources.options import ReadOptions
from toolkit.reconcile.sources.sheets import _describe_xlsx

_TABLE_PREFIX = "table:"
_GLOB_CHARS = frozenset("*?[")


def describe(
    source: Source, side: str, amount_columns: frozenset[str], options: ReadOptions | None = None
) -> Described:
    """Look at ``source`` and refuse what cannot be read; ``amount_columns`` must not be floats
    (in any case: ``Amount`` may be taken for ``amount``)."""
    options = options or ReadOptions()
    amount_columns = frozenset(c.strip().lower() for c in amount_columns)
    described = _describe(source, side, amount_columns, options)
    if options.decimal is not None:
        described = replace(described, decimal=options.decimal)
    given = {name: getattr(options, name) for name in ("date_format", "timezone", "currency")}
    return replace(described, **{name: value for name, value in given.items() if value is not None})


def _describe(source: Source, side: str, amount_columns: frozenset[str], options: ReadOptions) -> Described:
    if isinstance(source, pd.DataFrame):
        return _describe_frame(source, side, amount_columns)
    text = str(source)
    if text.startswith(_TABLE_PREFIX):
        table_name = text[len(_TABLE_PREFIX) :].strip()
        if not table_name:
            raise InputError(f"{text!r}: name the table after {_TABLE_PREFIX!r}")
        return _describe_table(text, table_name, amount_columns)
    path = Path(source)
    mode = _mode(path)
    # A folder or a glob is a set of Parquet files; a file named like a glob (``settlement[1].csv``)
    # is the file.
    if (mode is not None and stat.S_ISDIR(mode)) or (mode is None and _GLOB_CHARS & set(text)):
        return _describe_parquet_set(text, path, amount_columns)
    _regular_file(path, mode)
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt", ".tsv"):
            return _describe_csv(path, options, amount_columns)
        if suffix in (".xlsx", ".xlsm"):
            return _describe_xlsx(path, options, amount_columns)
        if suffix in (".parquet", ".pq"):
            return _describe_parquet(str(path), [path], amount_columns)
    except InputError:
        raise
    except Exception as exc:  # the readers raise many types; all mean "cannot read this file"
        raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise InputError(f"{path}: unsupported file type {suffix!r} (use .csv, .xlsx or .parquet)")


def _describe_table(name: str, table_name: str, amount_columns: frozenset[str]) -> Described:
    """A table of the Spark session's catalog, by its schema: the session is the process's own,
    or one started from the environment (``backends.spark_session``)."""
    from toolkit.reconcile.backends import spark_session

    session = spark_session()
    try:
        fields = session.table(table_name).schema.fields
    except Exception as exc:  # Spark's AnalysisException: no such table or view
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name}: not a table of the Spark session's catalog ({first})") from None
    for column in fields:
        if column.name.strip().lower() in amount_columns and column.dataType.typeName() in (
            "float",
            "double",
        ):
            raise InputError(
                f"{name}: column {column.name.strip()!r} holds floats; store amounts as decimal or text"
            )
    return Described(name, "table", _columns_of([f.name for f in fields], name), table_name=table_name)


def _describe_parquet_set(text: str, path: Path, amount_columns: frozenset[str]) -> Described:
    """A folder of Parquet files, or a glob of them."""
    pattern = str(path / "**" / "*.parquet") if path.is_dir() else text
    files = sorted(Path(f) for f in glob.glob(pattern, recursive=True) if Path(f).is_file())
    if not files and not path.is_dir():
        raise InputError(f"{text}: file not found, and no Parquet file matches it as a pattern")
    if not files:
        raise InputError(f"{text}: no Parquet files found")
    return _describe_parquet(text, files, amount_columns)


def _describe_parquet(name: str, files: list[Path], amount_columns: frozenset[str]) -> Described:
    """Every file's schema is read (a footer each), so that a file that cannot be read or holds
    float amounts is named before the engine starts, wherever it sorts in the set."""
    import pyarrow.parquet as pq

    by_schema: dict[pa.Schema, list[Path]] = {}
    for path in files:
        try:
            schema = pq.read_schema(path)
        except Exception as exc:
            raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
        for column in schema:
            if column.name.strip().lower() in amount_columns and pa.types.is_floating(column.type):
                raise InputError(
                    f"{name}: column {column.name.strip()!r} holds floats"
                    f"{f' in {path}' if len(files) > 1 else ''}; write amounts as text or decimal"
                )
        by_schema.setdefault(schema.remove_metadata(), []).append(path)
    names = list(dict.fromkeys(n for schema in by_schema for n in schema.names))
    parts = tuple(ParquetPart(tuple(paths), tuple(schema.names)) for schema, paths in by_schema.items())
    return Described(name, "parquet", _columns_of(names, name), paths=tuple(files), parts=parts)
