"""Many exceptions: peak memory and time of a reconciliation and its report when the result holds
every exception row in memory, against the default, where the engine keeps them and the report
reads them back in batches (``ReconciliationResult.spilled``).

Each run is a process of its own reading the same CSV files (half of the payments an amount
mismatch), so that its peak RSS is its own. Run: ``.venv/bin/python benchmarks/spilled_exceptions.py
[--rows 2000000]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

CHILD = """
import json, resource, sys, time
from toolkit.reconcile import load_ledger, load_processor, reconcile, write_report
folder, held = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
result = reconcile(load_ledger(folder + "/ledger.csv"), load_processor(folder + "/processor.csv"),
                   held_rows=held)
write_report(result, folder + "/out-" + str(held), environment="benchmark")
print(json.dumps({"seconds": time.perf_counter() - start, "exceptions": result.exception_count,
                  "spilled": result.spilled is not None, "held": len(result.exceptions),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def generate(folder: Path, rows: int) -> None:
    """Ledger and processor CSV files of ``rows`` payments; every other one differs by a cent."""
    con = duckdb.connect()
    select = (
        "SELECT 'key-' || i AS merchantReferenceId, printf('%d.%02d', 10 + i % 1000, {cents}) AS amount, "
        "'USD' AS currency, 'success' AS status FROM range({rows}) t(i)"
    )
    ledger = select.format(cents="i % 100", rows=rows)
    processor = select.format(cents="CASE WHEN i % 2 = 0 THEN (i + 1) % 100 ELSE i % 100 END", rows=rows)
    con.execute(f"COPY ({ledger}) TO '{folder / 'ledger.csv'}' (HEADER)")
    con.execute(f"COPY ({processor}) TO '{folder / 'processor.csv'}' (HEADER)")


def run(folder: Path, held: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(held)],
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spilled-") as name:
        folder = Path(name)
        started = time.perf_counter()
        generate(folder, args.rows)
        took = time.perf_counter() - started
        print(f"{args.rows:,} payments a side, half an amount mismatch (made in {took:.1f} s)")
        spilled = run(folder, 250_000)  # the default
        held = run(folder, args.rows)  # every row held
        for label, figures in (("every row held", held), ("spilled (default)", spilled)):
            print(
                f"{label:18}: {figures['seconds']:6.1f} s, peak {figures['peak_mb']:7,.0f} MB, "
                f"{figures['exceptions']:,} exceptions, {figures['held']:,} held"
            )
        same = all(
            (folder / f"out-{args.rows}" / f).read_bytes() == (folder / "out-250000" / f).read_bytes()
            for f in ("exceptions.csv", "summary.csv")
        )
        ratio = spilled["peak_mb"] / held["peak_mb"]
        print(f"peak memory spilled / held: {ratio:.2f}; the same CSV files: {same}")


if __name__ == "__main__":
    main()
