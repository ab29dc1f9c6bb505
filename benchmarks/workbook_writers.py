"""Benchmark: writers of report.xlsx on the 1M-row reconciliation benchmark's exceptions.

The workbook of ``benchmarks/reconcile.py`` (1M x 1M rows, ~1% of each discrepancy) holds about
100k exception rows x 11 columns plus a summary sheet. Each writer gets the same inputs the toolkit
has (the ``ReconciliationResult`` and the exceptions as a pyarrow table of exact text) and is asked
for the same workbook as far as it can make it: a sheet per category with exceptions, amounts as
numbers in their currency's number format, a frozen header row, an autofilter, column widths.
The ``features`` column says what each one could not do.

Each measurement runs in a fresh interpreter (so peak memory is the writer's own: the rise of peak
RSS over the loaded inputs), writers interleaved round by round, best of ``--repeat`` rounds:
the host is shared, and only candidates measured in the same run under the same load compare.

Candidates that are not runtime dependencies of the toolkit are imported only here, by name, when
installed; a missing one is reported with its pip name. To measure them all::

    pip install --target /tmp/xlsx-bench rustpy-xlsxwriter rvgsrust-xlsxwriter jetxl \\
        duckdb==1.5.5 duckdb-extension-excel==1.5.5
    PYTHONPATH=.:/tmp/xlsx-bench .venv/bin/python benchmarks/workbook_writers.py --baseline REV

``--baseline REV`` adds the toolkit's writer as it was at git revision ``REV``, loaded from
``git show`` into a scratch module: ``--baseline 4a0c795`` is the text-only writer that amounts as
numbers replaced.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parent.parent
AMOUNTS = (("ledger_amount", "ledger_currency"), ("processor_amount", "processor_currency"))
DIGITS = {"USD": 2, "EUR": 2, "JPY": 0, "KWD": 3}


def _module(name: str) -> Any:
    """An optional candidate, typed ``Any`` (most ship no stubs, and none is a dependency)."""
    return importlib.import_module(name)


def _format(currency: str) -> str:
    digits = DIGITS.get(currency, 2)
    return ("#,##0." + "0" * digits if digits else "#,##0") + f' "{currency}"'


def _floats(text: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray:
    """Amount text as float64, which every library below needs (the toolkit never does this)."""
    return pc.cast(pc.if_else(pc.equal(text, ""), None, text), pa.float64())


def _by_category(result: Any, table: pa.Table) -> list[tuple[str, pa.Table]]:
    categories = table.column("category")
    return [
        (name, table.filter(pc.equal(categories, name)))
        for name, count in result.category_counts.items()
        if count
    ]


def _numeric(table: pa.Table) -> pa.Table:
    """Amounts as float64 and ``source_row`` as int64, for the writers that type by column."""
    for column, _ in AMOUNTS:
        table = table.set_column(table.schema.get_field_index(column), column, _floats(table.column(column)))
    index = table.schema.get_field_index("source_row")
    return table.set_column(index, "source_row", pc.cast(table.column("source_row"), pa.int64()))


def _widths(table: pa.Table) -> dict[str, float]:
    return {
        name: float(min(60, max(len(name), pc.max(pc.utf8_length(table.column(name))).as_py() or 0) + 2))
        for name in table.column_names
    }


# ---------------------------------------------------------------------------------------------
# The writers: each writes ``path`` from (result, text table) and returns nothing.


def _toolkit(result: Any, table: pa.Table, path: Path) -> None:
    from toolkit.reconcile.render.workbook import write_xlsx

    write_xlsx(
        result,
        path,
        title="Reconciliation report",
        environment="benchmark",
        generated_at="2026-01-01 00:00:00 UTC",
        table=table,
    )


def _baseline(result: Any, table: pa.Table, path: Path) -> None:
    source = Path(os.environ["WORKBOOK_BASELINE_FILE"])
    spec = importlib.util.spec_from_file_location("baseline_report", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    module.write_xlsx(
        result,
        path,
        title="Reconciliation report",
        environment="benchmark",
        generated_at="2026-01-01 00:00:00 UTC",
        table=table,
    )


def _xlsxwriter(result: Any, table: pa.Table, path: Path) -> None:
    """xlsxwriter in constant-memory mode: a Python call per row, one per amount (its format)."""
    xlsxwriter = _module("xlsxwriter")
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    bold = workbook.add_format({"bold": True})
    formats = {c: workbook.add_format({"num_format": _format(c)}) for c in DIGITS}
    summary = workbook.add_worksheet("Summary")
    summary.write_row(0, 0, ["Data from: benchmark"], bold)
    for name, part in _by_category(result, table):
        sheet = workbook.add_worksheet(name)
        for col, width in enumerate(_widths(part).values()):
            sheet.set_column(col, col, width)
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, part.num_rows, part.num_columns - 1)
        sheet.write_row(0, 0, part.column_names, bold)
        columns = [part.column(c).to_pylist() for c in part.column_names]
        for row, values in enumerate(zip(*columns, strict=True), start=1):
            sheet.write_row(row, 0, values[:2])
            for col, currency in ((2, values[4]), (3, values[5])):
                if values[col]:
                    sheet.write_number(row, col, float(values[col]), formats.get(currency))
            sheet.write_row(row, 4, values[4:9])
            sheet.write_number(row, 9, int(values[9]))
            sheet.write_string(row, 10, values[10])
    workbook.close()


def _polars(result: Any, table: pa.Table, path: Path) -> None:
    """polars ``write_excel`` (xlsxwriter underneath), one format per amount column."""
    pl = _module("polars")
    xlsxwriter = _module("xlsxwriter")
    with xlsxwriter.Workbook(str(path)) as workbook:
        workbook.add_worksheet("Summary").write(0, 0, "Data from: benchmark")
        for name, part in _by_category(result, table):
            frame = pl.from_arrow(_numeric(part))
            frame.write_excel(
                workbook,
                name,
                autofilter=True,
                freeze_panes=(1, 0),
                column_widths={k: int(v * 7) for k, v in _widths(part).items()},
                column_formats={"ledger_amount": "#,##0.00", "processor_amount": "#,##0.00"},
            )


def _rustpy(result: Any, table: pa.Table, path: Path) -> None:
    """rustpy-xlsxwriter (rust_xlsxwriter): whole sheets from Arrow, one format per column."""
    module = _module("rustpy_xlsxwriter")
    parts = _by_category(result, table)
    amount = module.Format().set_num_format("#,##0.00")
    sheets = [("Summary", pa.table({"Data from: benchmark": pa.array([], pa.string())}))]
    sheets += [(name, _numeric(part)) for name, part in parts]
    module.write_worksheets(
        sheets,
        str(path),
        bold_headers=True,
        freeze_panes={name: {"row": 1, "col": 0} for name, _ in parts},
        autofilter={name: True for name, _ in parts},
        column_widths={name: _widths(part) for name, part in parts},
        column_formats={name: {"ledger_amount": amount, "processor_amount": amount} for name, _ in parts},
    )


def _rvgsrust(result: Any, table: pa.Table, path: Path, per_cell: bool = False) -> None:
    """rvgsrust-xlsxwriter (rust_xlsxwriter): ``write_dataframe`` from Arrow in Rust, one format per
    column; with ``per_cell`` the currency's format is then set cell by cell from Python."""
    module = _module("rvgsrust_xlsxwriter")
    workbook = module.Workbook(str(path))
    bold = workbook.add_format().set_bold()
    amount = workbook.add_format().set_num_format("#,##0.00")
    formats = {c: workbook.add_format().set_num_format(_format(c)) for c in DIGITS}
    workbook.add_worksheet("Summary").write(0, 0, "Data from: benchmark", bold)
    for name, part in _by_category(result, table):
        sheet = workbook.add_worksheet(name, constant_memory=not per_cell)
        data = _numeric(part)
        sheet.write_dataframe(
            0,
            0,
            data,
            header_format=bold,
            column_formats=None if per_cell else {"ledger_amount": amount, "processor_amount": amount},
        )
        if per_cell:
            for col, (column, currency) in ((2, AMOUNTS[0]), (3, AMOUNTS[1])):
                present = part.column(column).to_pylist()
                for row, (text, code) in enumerate(
                    zip(present, part.column(currency).to_pylist(), strict=True), start=1
                ):
                    if text:
                        sheet.set_cell_format(row, col, formats[code])
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, part.num_rows, part.num_columns - 1)
        for col, width in enumerate(_widths(part).values()):
            sheet.set_column_width(col, width)
    workbook.close()


def _rvgsrust_passes(result: Any, table: pa.Table, path: Path) -> None:
    """rvgsrust-xlsxwriter with the currency's format in Rust: the sheet is written column block by
    column block, the amounts once per currency with the other currencies' cells null (skipped).
    Cells may then come in any order, so the sheet is held in memory (no constant-memory mode)."""
    module = _module("rvgsrust_xlsxwriter")
    workbook = module.Workbook(str(path))
    bold = workbook.add_format().set_bold()
    formats = {c: workbook.add_format().set_num_format(_format(c)) for c in DIGITS}
    workbook.add_worksheet("Summary").write(0, 0, "Data from: benchmark", bold)
    names = table.column_names
    for name, part in _by_category(result, table):
        sheet = workbook.add_worksheet(name)
        data = _numeric(part)
        sheet.write_dataframe(0, 0, data.select(names[:2]), header_format=bold)
        sheet.write_dataframe(0, 4, data.select(names[4:]), header_format=bold)
        sheet.write_row(0, 2, names[2:4], bold)
        for currency, fmt in formats.items():
            amounts = {
                amount: pc.if_else(pc.equal(part.column(code), currency), data.column(amount), None)
                for amount, code in AMOUNTS
            }
            sheet.write_dataframe(
                1, 2, pa.table(amounts), write_header=False, column_formats=dict.fromkeys(amounts, fmt)
            )
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, part.num_rows, part.num_columns - 1)
        for col, width in enumerate(_widths(part).values()):
            sheet.set_column_width(col, width)
    workbook.close()


def _jetxl(result: Any, table: pa.Table, path: Path, per_cell: bool = False) -> None:
    """jetxl: sheets from Arrow in Rust (one thread, as the toolkit's writer), format per column;
    with ``per_cell`` the currency's format goes in a style entry (a dict) per amount cell."""
    module = _module("jetxl")
    sheets: list[dict[str, Any]] = [
        {"data": pa.table({"Data from": pa.array(["benchmark"])}), "name": "Summary"}
    ]
    for name, part in _by_category(result, table):
        sheet = {
            "data": _numeric(part),
            "name": name,
            "auto_filter": True,
            "freeze_rows": 1,
            "styled_headers": True,
            "column_widths": _widths(part),
            "column_formats": {"ledger_amount": "#,##0.00", "processor_amount": "#,##0.00"},
        }
        if per_cell:
            del sheet["column_formats"]
            sheet["cell_styles"] = [
                {"row": row, "col": col, "number_format": _format(code)}
                for col, (amount, currency) in ((2, AMOUNTS[0]), (3, AMOUNTS[1]))
                for row, (text, code) in enumerate(
                    zip(part.column(amount).to_pylist(), part.column(currency).to_pylist(), strict=True),
                    start=2,
                )
                if text
            ]
        sheets.append(sheet)
    module.write_sheets_arrow(sheets, str(path), 1)


def _duckdb(result: Any, table: pa.Table, path: Path) -> None:
    """DuckDB's excel extension, loaded from the wheel of ``duckdb-extension-excel`` (``INSTALL
    excel`` would download it). ``COPY ... (FORMAT xlsx)`` makes a file of one sheet: all exceptions
    go on it, without formats, pane or filter."""
    duckdb = _module("duckdb")
    package = _module("duckdb_extension_excel")
    found = glob.glob(str(Path(package.__file__).parent / "extensions" / "*" / "excel.duckdb_extension"))
    connection = duckdb.connect(
        config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    )
    connection.execute(f"LOAD '{found[0]}'")
    connection.register("exceptions", _numeric(table))
    connection.execute(f"COPY exceptions TO '{path}' (FORMAT xlsx, HEADER true, SHEET 'exceptions')")
    connection.close()


@dataclass(frozen=True)
class Writer:
    name: str
    write: Callable[[Any, pa.Table, Path], None]
    needs: str  # pip name(s) of what it imports, for the "not installed" line
    features: str


_ALL = "numbers, currency formats, pane, filter, widths"
WRITERS = (
    Writer("toolkit (hand-written OOXML)", _toolkit, "", _ALL + " (exact decimal text in <v>)"),
    Writer("xlsxwriter constant_memory", _xlsxwriter, "xlsxwriter", _ALL + "; floats"),
    Writer(
        "polars write_excel",
        _polars,
        "polars xlsxwriter",
        "numbers (floats), pane, filter, widths; one format per column",
    ),
    Writer(
        "rustpy-xlsxwriter",
        _rustpy,
        "rustpy-xlsxwriter",
        "numbers (floats), pane, filter, widths; one format per column",
    ),
    Writer(
        "rvgsrust-xlsxwriter",
        _rvgsrust,
        "rvgsrust-xlsxwriter",
        "numbers (floats), pane, filter, widths; one format per column",
    ),
    Writer(
        "rvgsrust-xlsxwriter per-cell",
        lambda r, t, p: _rvgsrust(r, t, p, per_cell=True),
        "rvgsrust-xlsxwriter",
        _ALL + "; floats; a Python call per amount",
    ),
    Writer(
        "rvgsrust-xlsxwriter column passes",
        _rvgsrust_passes,
        "rvgsrust-xlsxwriter",
        _ALL + "; floats; sheets held in memory",
    ),
    Writer("jetxl", _jetxl, "jetxl", "numbers (floats), pane, filter, widths; one format per column"),
    Writer(
        "jetxl per-cell",
        lambda r, t, p: _jetxl(r, t, p, per_cell=True),
        "jetxl",
        _ALL + "; floats; a Python dict per amount",
    ),
    Writer(
        "duckdb excel extension",
        _duckdb,
        "duckdb duckdb-extension-excel",
        "numbers (floats); one sheet per file, no formats, pane, filter or widths",
    ),
)
BASELINE = Writer("toolkit @{rev}", _baseline, "", "the writer at that revision")


def _child(name: str, data: Path, out: Path) -> None:
    """Run one writer once in this fresh interpreter and print its figures as JSON."""
    writers = {w.name: w for w in (*WRITERS, BASELINE)}
    writer = writers[name]
    with (data / "result.pkl").open("rb") as handle:
        result = pickle.load(handle)  # noqa: S301 - our own file, written by the parent
    with pa.memory_map(str(data / "exceptions.arrow")) as source:
        table = pa.ipc.open_file(source).read_all()
    table = pa.table({c: table.column(c).combine_chunks() for c in table.column_names})
    before = _rss_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # peak RSS := current RSS (Linux >= 4.0)
    start = time.perf_counter()
    writer.write(result, table, out)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {"seconds": seconds, "peak_mb": (_rss_kb("VmHWM") - before) / 1024, "bytes": out.stat().st_size}
        )
    )


def _rss_kb(field: str) -> int:
    """Resident memory (``VmRSS``) or its peak since the last reset (``VmHWM``), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _available(writer: Writer) -> str | None:
    """None when the writer's modules import here, else why not."""
    modules = {
        "xlsxwriter": "xlsxwriter",
        "polars": "polars",
        "rustpy-xlsxwriter": "rustpy_xlsxwriter",
        "rvgsrust-xlsxwriter": "rvgsrust_xlsxwriter",
        "jetxl": "jetxl",
        "duckdb": "duckdb",
        "duckdb-extension-excel": "duckdb_extension_excel",
    }
    for need in writer.needs.split():
        if importlib.util.find_spec(modules[need]) is None:
            return f"not installed (pip install {need})"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", help="git revision of today's writer to compare with")
    parser.add_argument("--only", action="append", help="measure only writers whose name has this")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.data, args.out)
        return

    from reconcile import generate  # benchmarks/reconcile.py, beside this script

    from toolkit.reconcile import load_ledger, load_processor, reconcile
    from toolkit.reconcile.render.report import exceptions_text_table

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        ledger, processor, _ = generate(data, args.rows)
        result = reconcile(load_ledger(ledger), load_processor(processor))
        table = exceptions_text_table(result)
        cells = table.num_rows * table.num_columns
        sheets = sum(1 for count in result.category_counts.values() if count)
        print(
            f"{args.rows:,} x ~{args.rows:,} rows -> {table.num_rows:,} exceptions x "
            f"{table.num_columns} columns = {cells:,} cells, {sheets} category sheets"
        )
        with (data / "result.pkl").open("wb") as handle:
            pickle.dump(result, handle)
        with (
            pa.OSFile(str(data / "exceptions.arrow"), "wb") as sink,
            pa.ipc.new_file(sink, table.schema) as ipc,
        ):
            ipc.write_table(table)
        del result, table

        writers = list(WRITERS)
        env = dict(os.environ)
        if args.baseline:
            source = subprocess.run(
                ["git", "show", f"{args.baseline}:toolkit/reconcile/report.py"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            (data / "baseline_report.py").write_text(source, encoding="utf-8")
            env["WORKBOOK_BASELINE_FILE"] = str(data / "baseline_report.py")
            writers.insert(0, BASELINE)
        if args.only:
            writers = [w for w in writers if any(o in w.name for o in args.only)]
        figures: dict[str, list[dict[str, float]]] = {w.name: [] for w in writers}
        missing = {w.name: why for w in writers if (why := _available(w))}
        for _ in range(args.repeat):
            for writer in writers:
                if writer.name in missing:
                    continue
                out = data / "out.xlsx"
                proc = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        writer.name,
                        "--data",
                        str(data),
                        "--out",
                        str(out),
                    ],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=ROOT,
                )
                if proc.returncode:
                    missing[writer.name] = "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
                    continue
                figures[writer.name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                out.unlink()

    reference = next((min(f["seconds"] for f in figures[w.name]) for w in writers if figures[w.name]), None)
    print(f"\n{'writer':40} {'best s':>7} {'peak MB':>8} {'size MB':>8} {'ratio':>6}  features")
    for writer in writers:
        name = writer.name.format(rev=args.baseline)
        if writer.name in missing or not figures[writer.name]:
            print(f"{name:40} {missing.get(writer.name, 'no result')}")
            continue
        best = min(f["seconds"] for f in figures[writer.name])
        peak = max(f["peak_mb"] for f in figures[writer.name])
        size = figures[writer.name][0]["bytes"] / 1e6
        ratio = f"{best / reference:.1f}x" if reference else "-"
        print(f"{name:40} {best:7.2f} {peak:8.0f} {size:8.1f} {ratio:>6}  {writer.features}")
    print(
        f"\nbest of {args.repeat}, each run in a fresh interpreter, writers interleaved; peak MB: "
        f"rise of peak RSS over the loaded inputs; ratio: time / time of "
        f"{writers[0].name.format(rev=args.baseline)}"
    )


if __name__ == "__main__":
    main()
