"""``python -m toolkit.demo``: the three notebooks in order on the embedded sandbox, then the reports.

Catalog setup creates the sample products, test payments creates the sample scenario's payments
(every method, every status), and the reconciliation report compares the sample ledger (with its
planted discrepancies) against the sandbox's settlement export. Everything goes through the
journal, so a second run sends nothing new to the sandbox and still writes fresh reports.

The demo never talks to a live service: ``TOOLKIT_BASE_URL`` and ``TOOLKIT_API_KEY`` are ignored,
and the demo's sandbox and journal live in ``TOOLKIT_HOME`` if set, else in ``.toolkit`` of the
working directory (the checkout), apart from the user's own per-user home. The
reconciliation runs with ``max_exceptions=-1`` (no threshold), since the sample ledger is meant to
disagree (a scheduler would pass ``-p max_exceptions 0``), and ``amount_tolerance`` 1, so that the
report has a match within tolerance beside its payments in transit.

The demo's sandbox clock is frozen before the first notebook, and the reconciliation's cut-off
(``as_of``) is that instant: its open payments never expire and its in-transit window never closes,
so a run tomorrow tells the same story as the first (7 exceptions), on a new checkout or the same
``.toolkit``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.client import Client
from toolkit.controls import SandboxControls
from toolkit.environment import resolve_environment
from toolkit.errors import ToolkitError
from toolkit.notebooks import DEFAULT_REPORTS, EXIT_OK, RunResult, run_notebook

#: Where the demo's sandbox and journal live when ``TOOLKIT_HOME`` is not set: in the checkout.
DEMO_HOME = Path(".toolkit")

#: The demo's runs, in order, with the parameters that differ from the notebooks' defaults (and
#: the reconciliation's ``as_of``, the sandbox's frozen instant, added when the demo runs).
DEMO_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("catalog_setup", {}),
    ("test_payments", {}),
    ("reconciliation_report", {"max_exceptions": -1, "amount_tolerance": "1"}),
)


def run_demo(*, reports_root: Path = DEFAULT_REPORTS, home: Path | None = None) -> list[RunResult]:
    """Run the demo's notebooks in order; stop at the first that does not succeed."""
    for name in ("TOOLKIT_BASE_URL", "TOOLKIT_API_KEY"):
        if os.environ.pop(name, None) is not None:
            print(f"demo: ignoring {name}; the demo runs on the embedded sandbox only")
    os.environ["TOOLKIT_HOME"] = str((home or Path(os.environ.get("TOOLKIT_HOME") or DEMO_HOME)).resolve())
    print(f"demo: embedded sandbox under {os.environ['TOOLKIT_HOME']}")
    with Client(environment=resolve_environment(announce=False)) as client:  # said just above
        frozen_at = SandboxControls(client).freeze_clock().isoformat(timespec="milliseconds")
    print(f"demo: the sandbox clock stands still at {frozen_at}, the reconciliation's cut-off")
    results = []
    for notebook, parameters in DEMO_RUNS:
        print(f"demo: running {notebook} ...", flush=True)
        if notebook == "reconciliation_report":
            parameters = {**parameters, "as_of": frozen_at}
        result = run_notebook(notebook, parameters, reports_root=reports_root)
        results.append(result)
        print(f"demo:   {result.result_line()}")
        if not result.ok:
            break
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: returns 0 when all three notebooks succeeded, else the failing run's code."""
    parser = argparse.ArgumentParser(prog="python -m toolkit.demo", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reports", type=Path, default=DEFAULT_REPORTS, help="where the report folders go (default reports/)"
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help=f"TOOLKIT_HOME of the demo's sandbox and journal (default $TOOLKIT_HOME, else {DEMO_HOME} here)",
    )
    args = parser.parse_args(argv)
    try:
        results = run_demo(reports_root=args.reports, home=args.home)
    except ToolkitError as exc:  # an unwritable reports folder, a refused journal: infrastructure
        print(f"demo failed: {exc}", file=sys.stderr)
        return 2
    print()
    for result in results:
        shown = result.html or result.output_dir
        print(f"{result.notebook:<22} {'ok' if result.ok else 'FAILED':<7} {shown}")
        for file in result.files:
            if file.name == "report.html":
                print(f"{'':<22} {'':<7} {file}")
    failed = [r for r in results if not r.ok]
    if failed or len(results) != len(DEMO_RUNS):
        print(f"demo failed: {failed[0].notebook if failed else 'incomplete'}", file=sys.stderr)
        return failed[0].exit_code if failed else 2
    print(
        f"\nreports are in {args.reports.resolve()}/<notebook>/<UTC time>/ "
        "(open the .html files; the .ipynb files are the executed notebooks)"
    )
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
