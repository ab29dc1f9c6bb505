"""``python -m toolkit.demo``: the whole chain on the embedded sandbox, notebook by notebook, then
the reports.

Catalog setup creates the sample products, test payments creates the sample scenario's payments
(every method, every status), the reconciliation report compares the sample ledger (with its
planted discrepancies) against the sandbox's settlement export, and the payout reconciliation
follows the successful payments' money to the bank. Everything goes through the journal, so a
second run sends nothing new to the sandbox and still writes fresh reports.

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

The payouts are paid two business days after the payments, and the bank books them then: days
the frozen clock never reaches, and moving it would expire the payments still open and change
the payment story. So the payout reconciliation runs on a copy of the sandbox (a temporary
folder, made afresh each run) whose clock is moved to the business day after the payouts' day,
its cut-off. There the bank is made to delay the EUR payout by two business days (in transit),
book the BRL payout for 1.00 less (``payout_amount_mismatch``) and book a USD deposit from the
processor that no payout explains (``bank_deposit_unexplained``); the other payouts arrive.
The notebook reads the copy's payout report and daily camt.053 statements as it would the
sandbox's own: the same story on every run, 2 exceptions and 1 payout in transit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from toolkit.client import Client
from toolkit.controls import SandboxControls
from toolkit.environment import resolve_environment
from toolkit.errors import SandboxError, ToolkitError
from toolkit.notebooks import (
    DEFAULT_REPORTS,
    EXIT_OK,
    RunResult,
    import_jsonschema_without_iri_grammar,
    run_notebook,
)

#: Where the demo's sandbox and journal live when ``TOOLKIT_HOME`` is not set: in the checkout.
DEMO_HOME = Path(".toolkit")

#: The demo's runs, in order, with the parameters that differ from the notebooks' defaults (and
#: the reconciliation's ``as_of``, the sandbox's frozen instant, added when the demo runs).
DEMO_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("catalog_setup", {}),
    ("test_payments", {}),
    ("reconciliation_report", {"max_exceptions": -1, "amount_tolerance": "1"}),
    ("payout_reconciliation", {"max_exceptions": -1}),
)
#: What the bank of the payout run's copy does: the payout of a currency delayed by these business
#: days, one booked for this much less, and a deposit from the processor no payout explains.
DELAYED, SHORT, DEPOSIT = ("EUR", 2), ("BRL", Decimal("1.00")), ("USD", Decimal("25.00"))


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
        if notebook == "payout_reconciliation":
            with _payout_day(datetime.fromisoformat(frozen_at)) as as_of:
                result = run_notebook(notebook, {**parameters, "as_of": as_of}, reports_root=reports_root)
        else:
            at = {"as_of": frozen_at} if notebook == "reconciliation_report" else {}
            result = run_notebook(notebook, {**parameters, **at}, reports_root=reports_root)
        results.append(result)
        print(f"demo:   {result.result_line()}")
        if not result.ok:
            break
    return results


@contextlib.contextmanager
def _payout_day(frozen: datetime) -> Iterator[str]:
    """``TOOLKIT_HOME`` on a fresh copy of the demo's sandbox, its clock moved to the cut-off of
    the payout run and its bank's outcomes planted (see the module docstring); yields the cut-off."""
    from toolkit.sandbox.db import DATABASE_NAME

    home = os.environ["TOOLKIT_HOME"]
    with tempfile.TemporaryDirectory(prefix="toolkit-demo-payouts-", ignore_cleanup_errors=True) as scratch:
        try:
            with (
                contextlib.closing(sqlite3.connect(Path(home, DATABASE_NAME))) as source,
                contextlib.closing(sqlite3.connect(Path(scratch, DATABASE_NAME))) as copy,
            ):
                source.backup(copy)  # a consistent copy while the demo's own sandbox has it open
        except sqlite3.Error as exc:
            raise SandboxError(f"cannot copy the demo's sandbox for its payouts: {exc}") from None
        os.environ["TOOLKIT_HOME"] = scratch
        try:
            with Client(environment=resolve_environment(announce=False)) as client:
                as_of = _plant(SandboxControls(client), frozen)
            yield as_of
        finally:
            os.environ["TOOLKIT_HOME"] = home


def _plant(controls: SandboxControls, frozen: datetime) -> str:
    """Move the copy's clock to the business day after the payouts' day and plant the bank's
    outcomes; returns that instant, the payout run's cut-off."""
    from toolkit.reconcile.payouts.matching import business_days_after

    controls.clear_bank_controls()  # the copy starts from the bank as the payouts leave it
    payouts = controls.payouts()
    if payouts.empty:
        raise SandboxError("the demo's sandbox has no successful payment to pay out")
    day: date = max(payouts["payoutDate"])  # every payment succeeded at the frozen instant
    ids = {
        str(c): str(i)
        for i, c, d in zip(payouts.index, payouts["currency"], payouts["payoutDate"], strict=True)
        if d == day
    }
    missing = sorted({DELAYED[0], SHORT[0], DEPOSIT[0]} - set(ids))
    if missing:
        raise SandboxError(
            f"the demo's sandbox has no {', '.join(missing)} payout on {day} to plant an outcome on"
        )
    cutoff = business_days_after(day, 1, frozenset())
    controls.advance_clock(days=(cutoff - frozen.date()).days)
    controls.delay_payout(ids[DELAYED[0]], DELAYED[1])
    controls.change_payout(ids[SHORT[0]], Decimal(str(payouts.at[ids[SHORT[0]], "net"])) - SHORT[1])
    controls.add_bank_deposit(DEPOSIT[0], DEPOSIT[1], day=day)
    as_of = controls.now().isoformat(timespec="milliseconds")
    print(
        f"demo: payouts of {day} read from a copy of the sandbox at {as_of}, whose bank delays "
        f"{ids[DELAYED[0]]} by {DELAYED[1]} business days, books {ids[SHORT[0]]} for {SHORT[1]} less "
        f"and a {DEPOSIT[0]} {DEPOSIT[1]} deposit no payout explains"
    )
    return as_of


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: returns 0 when every notebook succeeded, else the failing run's code."""
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
    import_jsonschema_without_iri_grammar()
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
