"""Benchmark: the commands that read no payments, against a bare ``python -c 'import sqlite3'``.

Issue 36's target: ``toolkit reconcile ack``, ``reopen``, ``verify``, ``history``, ``signoffs``,
``toolkit --help`` and ``--version`` each at most 0.2 s above the floor, a Python process that
imports sqlite3 and does nothing (the least any of them can cost), on a store of 400 tracked runs;
none imports pandas or Ibis; and ``verify`` grows with the size of the runs' entries no faster
than reading them (printed: verify's time over a plain ``SELECT`` of every payload, at 40 and at
400 exceptions a run).

The store is built with the store's own API (``tracking.store.Store.append``), entries shaped as a
run writes them, so that building it costs seconds, not 400 reconciliations. Every command runs as
its own process, alternated with the floor in the same loop; medians of ``--repeat`` runs.

Run: ``.venv/bin/python benchmarks/light_commands.py [--runs 400] [--exceptions 40] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_ABOVE_FLOOR_S = 0.2


def build_store(home: Path, runs: int, exceptions: int) -> str:
    """A track ``bench`` of ``runs`` runs of ``exceptions`` exceptions each, one acknowledged;
    returns the id of an exception of the latest run."""
    os.environ["TOOLKIT_HOME"] = str(home)
    from toolkit.reconcile.tracking.store import Store

    with Store.open(home, create=True) as store, store.writing():
        chain = [store.append("bench", "track", {"track": "bench"}, [])]
        for run in range(1, runs + 1):
            rows = [
                [
                    f"E{run % 7:01x}{i:015x}",
                    "amount_mismatch",
                    f"ORDER-{i}",
                    ["12.30", "12.31", "USD", "USD"],
                    "open",
                    "2026-01-01T23:59:59Z",
                    "",
                ]
                for i in range(exceptions)
            ]
            counts = {
                "exceptions": exceptions,
                "matched": 1000,
                "new": 0,
                "open": exceptions,
                "acknowledged": 0,
                "resolved": 0,
            }
            payload = {
                "run": run,
                "asOf": f"2026-01-{1 + run % 28:02d}T23:59:59Z",
                "counts": counts,
                "exceptions": rows,
                "resolved": [],
            }
            chain.append(store.append("bench", "run", payload, chain))
    return str(rows[0][0])


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed


def imports_heavy(argv: list[str], env: dict[str, str]) -> list[str]:
    """Which of pandas, ibis, duckdb the command imports (run under ``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    loaded = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return sorted(name for name in ("pandas", "ibis", "duckdb") if name in loaded)


def verify_over_reading(home: Path) -> tuple[float, float]:
    """verify's time in-process over a bare read of every payload of the store (best of 5)."""
    from toolkit.reconcile.tracking.store import store_path, verify

    def read() -> None:
        with sqlite3.connect(store_path(home)) as connection:
            for (payload,) in connection.execute("SELECT payload FROM entries"):
                len(payload)

    def best(call: object) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            call()  # type: ignore[operator]
            times.append(time.perf_counter() - started)
        return min(times)

    return best(lambda: verify("bench", home=home)), best(read)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--exceptions", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    toolkit = [sys.executable, "-m", "toolkit.cli"]
    with tempfile.TemporaryDirectory(prefix="toolkit-bench-") as folder:
        home = Path(folder) / "home"
        exception_id = build_store(home, args.runs, args.exceptions)
        env = {**os.environ, "TOOLKIT_HOME": str(home)}
        signed = ["--note", "n", "--by", "b"]
        commands = {
            "verify": [*toolkit, "reconcile", "verify", "--track", "bench"],
            "history": [*toolkit, "reconcile", "history", "--track", "bench"],
            "signoffs": [*toolkit, "reconcile", "signoffs", "--track", "bench"],
            **{
                action: [*toolkit, "reconcile", action, "--track", "bench", exception_id, *signed]
                for action in ("ack", "reopen")
            },
            "--help": [*toolkit, "--help"],
            "--version": [*toolkit, "--version"],
        }
        floor_argv = [sys.executable, "-c", "import sqlite3"]
        times: dict[str, list[float]] = {name: [] for name in ["floor", *commands]}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                times["floor"].append(timed(floor_argv, env))
                times[name].append(timed(argv, env))  # ack then reopen: each leaves the other possible
        floor = statistics.median(times["floor"])
        print(f"store: {args.runs} runs of {args.exceptions} exceptions; medians of {args.repeat} runs each")
        print(f"floor  python -c 'import sqlite3': {floor:.3f} s")
        for name, argv in commands.items():
            median = statistics.median(times[name])
            above = median - floor
            verdict = "meets" if above <= TARGET_ABOVE_FLOOR_S else "misses"
            heavy = imports_heavy(argv, env)
            print(
                f"{name:10} {median:.3f} s, {above:+.3f} s above the floor "
                f"(target +{TARGET_ABOVE_FLOOR_S:.1f} s: {verdict}); "
                f"imports {', '.join(heavy) if heavy else 'none of pandas, ibis, duckdb'}"
            )
        verify_s, read_s = verify_over_reading(home)
        print(
            f"verify in-process {verify_s:.3f} s over a bare read of every entry {read_s:.3f} s: "
            f"{verify_s / read_s:.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
