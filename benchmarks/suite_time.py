"""Benchmark: ``make test`` on a fresh clone, against issue 36's target of 10 minutes.

Clones the repository's committed ``HEAD`` into a temporary folder, installs it there
(``make .venv/.installed``: the venv and its packages, timed and reported but not counted), then
runs ``make test`` (lint, mypy, pytest with coverage, nbval) and prints its wall time against the
target, the time of each of its commands (make runs each through a shell that records it, so
nothing of the Makefile is repeated here), pytest's summary and the suite's 20 slowest steps.

The target is for this machine with nothing else running: the run first waits (``--quiet-wait``
seconds at most) for other jobs to finish, and says how busy the machine's CPUs were meanwhile.
Run: ``.venv/bin/python benchmarks/suite_time.py`` (about 15 minutes on 2 cores).
The exit code is 1 when installing or ``make test`` fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reconcile_large import Measured, measure, wait_quiet

#: Issue 36: ``make test`` in at most 10 minutes once the environment is installed.
TARGET_S = 600.0
#: Each step at most (an hour: a hung step ends the benchmark, not the machine's day).
TIMEOUT_S = 3600.0

#: make's shell for each recipe line: runs it with /bin/sh and appends its start, end, exit status
#: and first line to ``$SUITE_TIME_LOG`` (tab-separated).
RECORDING_SHELL = """#!/bin/sh
start=$(date +%s.%N)
/bin/sh "$@"
status=$?
printf '%s\\t%s\\t%s\\t%s\\n' "$start" "$(date +%s.%N)" "$status" \
    "$(printf '%s' "$2" | head -n 1 | cut -c 1-90)" >> "$SUITE_TIME_LOG"
exit $status
"""

_SUMMARY = re.compile(r"^=+ (.* in [0-9.]+s.*) =+$", re.MULTILINE)
_SLOWEST = re.compile(r"^=+ slowest \d+ durations =+\n((?:[0-9.]+s .*\n)+)", re.MULTILINE)


def _make(target: str, clone: Path, shell: Path, log: Path) -> Measured:
    env = {**os.environ, "SUITE_TIME_LOG": str(log)}
    for name in ("VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(name, None)  # the clone's own venv, not this process's
    return measure(["make", target, f"SHELL={shell}"], env=env, cwd=clone, timeout=TIMEOUT_S)


def _steps(log: Path) -> list[tuple[float, int, str]]:
    """Each recipe line make ran: its seconds, exit status and first line (none when make ran
    none: a Makefile without the target)."""
    steps = []
    for line in (log.read_text() if log.exists() else "").splitlines():
        start, end, status, command = line.split("\t", 3)
        steps.append((float(end) - float(start), int(status), command))
    return steps


def _report(name: str, run: Measured, log: Path) -> None:
    """The run's wall time and how busy the machine was meanwhile (every process: the suite's
    Spark JVMs are not children make waits for), then each of its steps."""
    busy = run.cpu + run.others_cpu
    share = busy / run.wall / (os.cpu_count() or 1)
    print(f"{name}: {run.wall:.1f} s wall, exit {run.returncode}; CPUs busy {busy:.0f} s ({share:.0%})")
    for seconds, status, command in _steps(log):
        failed = "" if status == 0 else f"  (exit {status})"
        print(f"    {seconds:7.1f} s  {command}{failed}")
    log.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--quiet-wait", type=float, default=300.0)
    parser.add_argument("--keep", action="store_true", help="keep the clone (its venv is ~2 GB)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="toolkit-suite-"))
    clone, shell, log = folder / "clone", folder / "recording-sh", folder / "steps.tsv"
    shell.write_text(RECORDING_SHELL)
    shell.chmod(0o755)
    head = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"make test on a fresh clone of {args.repo} at {head} ({os.cpu_count()} CPUs), in {clone}")
    try:
        subprocess.run(["git", "clone", "--quiet", str(args.repo), str(clone)], check=True)
        install = _make(".venv/.installed", clone, shell, log)
        _report("installing (not counted)", install, log)
        if install.returncode:
            print(install.stderr[-2000:], file=sys.stderr)
            return 1
        wait_quiet(args.quiet_wait)
        test = _make("test", clone, shell, log)
        _report("make test", test, log)
        for summary in _SUMMARY.findall(test.stdout):
            print(f"  {summary}")
        slowest = _SLOWEST.search(test.stdout)
        if slowest:
            print("  the suite's slowest steps:")
            for line in slowest.group(1).splitlines():
                print(f"    {line}")
        met = test.returncode == 0 and test.wall <= TARGET_S
        verdict = "met" if met else "MISSED"
        print(f"target: make test at most {TARGET_S:.0f} s once installed: {test.wall:.0f} s  {verdict}")
        if test.returncode:
            print(test.stdout[-3000:] + test.stderr[-2000:], file=sys.stderr)
            return 1
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
