"""Benchmark: sqlglot writing the engine's queries in Spark's dialect, compiled (``sqlglot[c]``:
sqlglotc's mypyc-built modules) against the same sqlglot as pure Python, in the same run.

Every Spark run transpiles each of its queries once (``backends.spark.spark_sql``); a month of the
committed sample exports (``notebooks/data/exports``: the ledger against Adyen's settlement
details) makes 16 queries of about 310,000 characters. The queries are taken from a DuckDB run of
that month (the engine writes the same SQL for both backends); each way transpiles them in a
process of its own, alternated, medians of ``--repeat``. Pure Python is had by importing sqlglot's
``.py`` modules where sqlglotc put compiled ones beside them.

Run: ``.venv/bin/python benchmarks/spark_transpile.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "notebooks" / "data" / "exports"

#: Run in a process of its own: transpile the queries of a JSON file, print the seconds it took.
_TRANSPILE = """
import json, sys, time
{pure}
import sqlglot
queries = json.load(open(sys.argv[1]))
start = time.perf_counter()
for query in queries:
    sqlglot.transpile(query, read="duckdb", write="spark")
print(time.perf_counter() - start)
"""

#: Makes sqlglot's modules load from their ``.py`` files where compiled ones sit beside them.
_PURE_PYTHON = """
import importlib.abc, importlib.machinery, importlib.util, os
class _PurePython(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "sqlglot" and not name.startswith("sqlglot."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not (spec.origin or "").endswith(".so"):
            return spec
        source = os.path.join(os.path.dirname(spec.origin), name.rsplit(".", 1)[-1] + ".py")
        return importlib.util.spec_from_file_location(name, source) if os.path.exists(source) else spec
sys.meta_path.insert(0, _PurePython())
"""


def engine_queries() -> list[str]:
    """The queries a reconciliation of the sample month sends to the backend."""
    from toolkit.reconcile import load_ledger, load_processor, reconcile
    from toolkit.reconcile.backends import connect
    from toolkit.reconcile.backends.base import Backend

    sent: list[str] = []
    engine = connect("duckdb")
    for name in ("_keep", "_arrow"):
        original = getattr(type(engine), name)

        def recorded(self: Backend, *args: str, _original=original) -> object:  # type: ignore[no-untyped-def]
            sent.append(args[-1])
            return _original(self, *args)

        setattr(type(engine), name, recorded)
    ledger = load_ledger(SAMPLES / "ledger_2025-05.csv")
    processor = load_processor(SAMPLES / "adyen_settlement_detail_report_batch_7.csv")
    reconcile(ledger, processor, backend=engine, as_of="2025-05-31")
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    queries = engine_queries()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "queries.json"
        path.write_text(json.dumps(queries), encoding="utf-8")
        times: dict[str, list[float]] = {"compiled": [], "pure Python": []}
        for _ in range(args.repeat):
            for way, hook in (("compiled", ""), ("pure Python", _PURE_PYTHON)):
                code = _TRANSPILE.format(pure=hook)
                out = subprocess.run(
                    [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
                )
                times[way].append(float(out.stdout.strip()))
    compiled, pure = (statistics.median(times[w]) for w in ("compiled", "pure Python"))
    print(f"{len(queries)} queries, {sum(map(len, queries)):,} characters (the sample month on Spark)")
    print(f"compiled (sqlglot[c])   {compiled:6.2f} s")
    print(f"pure Python sqlglot     {pure:6.2f} s")
    print(f"compiled is {pure / compiled:.1f}x as fast")


if __name__ == "__main__":
    main()
