"""Are two report folders the same? ``python scripts/compare_reports.py BEFORE AFTER``.

A change that only moves code (issue 35) must leave every output as it was. Run the same
reconciliation, on the same inputs and the same cut-off, with the code before and after, then
compare here: CSV, Parquet and HTML byte for byte, and workbooks cell by cell (an .xlsx is a zip
whose bytes carry times too). What differs between two runs of the same code is masked first: the
time a report was generated, and a tracked run's audit-log head (a hash over entries that carry
the time they were recorded). Exits 0 when every file of either folder is the same in the other,
else 1, naming each difference.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import openpyxl

#: The files a run writes that are compared; the executed notebook and run.json carry timings.
COMPARED = ("*.csv", "*.parquet", "report.html", "*.xlsx")
_GENERATED = re.compile(rb"(<strong>Generated:</strong>|Generated) [0-9-]+ [0-9:]+ UTC")
_AUDIT_HEAD = re.compile(rb"(id=\"audit-head\">[^#<]+#[0-9]+:)[0-9a-f]{64}")


def _masked(data: bytes) -> bytes:
    return _AUDIT_HEAD.sub(rb"\1(head)", _GENERATED.sub(rb"\1 (time)", data))


def _files(folder: Path) -> set[str]:
    return {path.name for pattern in COMPARED for path in folder.glob(pattern)}


def _content(path: Path) -> bytes:
    data = path.read_bytes()
    return _masked(data) if path.suffix == ".html" else data


def _cells(path: Path) -> Iterator[tuple[str, str, object]]:
    book = openpyxl.load_workbook(path)
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if cell.value is not None:
                    value = cell.value
                    if isinstance(value, str):
                        value = _masked(value.encode()).decode()
                    yield sheet.title, cell.coordinate, value


def differences(before: Path, after: Path) -> list[str]:
    """What differs between the two folders' compared files, one line each."""
    found = [f"{name}: only in {before}" for name in sorted(_files(before) - _files(after))]
    found += [f"{name}: only in {after}" for name in sorted(_files(after) - _files(before))]
    for name in sorted(_files(before) & _files(after)):
        old, new = before / name, after / name
        if name.endswith(".xlsx"):
            old_cells, new_cells = list(_cells(old)), list(_cells(new))
            if old_cells != new_cells:
                changed = next(
                    (a, b) for a, b in zip([*old_cells, None], [*new_cells, None], strict=False) if a != b
                )
                found.append(f"{name}: cells differ, first {changed[0]} -> {changed[1]}")
        elif _content(old) != _content(new):
            found.append(
                f"{name}: bytes differ" + (" (times and audit heads aside)" if name.endswith(".html") else "")
            )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    found = differences(args.before, args.after)
    for line in found:
        print(line)
    print(f"{len(_files(args.before))} files compared: {'same' if not found else f'{len(found)} differ'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
