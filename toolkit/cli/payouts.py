"""``toolkit reconcile payouts``: the processor's payouts against the bank statements (issue 38),
with the payment reconciliation's exit codes (0 ok, 1 more exceptions than ``--max-exceptions``,
2 the run could not be done as asked) and one line of result."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.cli.exit_codes import EXIT_INPUT, EXIT_OK, EXIT_OUTPUT, EXIT_TOO_MANY

if TYPE_CHECKING:
    from datetime import date

    from toolkit.reconcile.payouts import PayoutReconciliation


# Long: the options of `toolkit reconcile payouts`, declared in the order --help lists them.
def add_arguments(sub: argparse.ArgumentParser) -> None:
    """The options of ``toolkit reconcile payouts`` (their ``dest`` apart from the payment run's)."""
    sub.add_argument(
        "--processor",
        dest="payouts_processor",
        required=True,
        metavar="EXPORT",
        help="the processor's export that says which payout paid each row (Stripe's balance or payout "
        "reconciliation report, Adyen's settlement details)",
    )
    sub.add_argument(
        "--bank",
        dest="payouts_bank",
        required=True,
        action="append",
        metavar="STATEMENT",
        help="bank statements: camt.053, MT940, BAI2 or OFX files, a folder or a glob (repeatable)",
    )
    sub.add_argument(
        "--ledger",
        dest="payouts_ledger",
        default=None,
        metavar="BOOKS",
        help="the books, whose payout bookings (transfers from the clearing account to the bank) are "
        "compared too: a bookkeeping report the toolkit knows (QuickBooks, Xero), or books with a type "
        "column",
    )
    sub.add_argument(
        "--ledger-currency",
        dest="payouts_ledger_currency",
        default=None,
        metavar="CODE",
        help="the currency of books that name none (QuickBooks' and Xero's reports)",
    )
    sub.add_argument(
        "--window",
        dest="payouts_window",
        default="3d",
        metavar="DAYS",
        help="business days a payout may take to reach the bank (default 3d)",
    )
    sub.add_argument(
        "--holidays",
        dest="payouts_holidays",
        default=None,
        metavar="DATES",
        help="bank holidays left out of the window: YYYY-MM-DD dates, comma-separated, or a file of them",
    )
    sub.add_argument(
        "--counterparty",
        dest="payouts_counterparty",
        action="append",
        default=[],
        metavar="NAME",
        help="another name of the processor in the bank's text, besides Stripe, Adyen, ... (repeatable)",
    )
    sub.add_argument(
        "--as-of",
        dest="payouts_as_of",
        default=None,
        metavar="YYYY-MM-DD",
        help="the cut-off: a payout whose window is open then is in transit (default today, UTC)",
    )
    sub.add_argument(
        "--output-dir",
        dest="payouts_output_dir",
        metavar="OUTPUT_DIR",
        type=Path,
        default=None,
        help="where to write the report (default reports/payouts/<UTC time>/)",
    )
    sub.add_argument(
        "--max-exceptions",
        dest="payouts_max_exceptions",
        type=int,
        default=None,
        metavar="N",
        help="exit 1 when there are more than N exceptions",
    )
    sub.add_argument(
        "--track",
        dest="payouts_track",
        default=None,
        metavar="NAME",
        help="record the run in this track (one of payout runs): its exceptions get ids and states (new, "
        "open, acknowledged), --max-exceptions counts the new and open ones",
    )
    sub.add_argument(
        "--backend",
        dest="payouts_backend",
        choices=("duckdb", "pyspark"),
        default="duckdb",
        help="where the export's payouts are added up",
    )
    sub.add_argument(
        "--environment",
        dest="payouts_environment",
        metavar="ENVIRONMENT",
        default=None,
        help="printed at the top of the report",
    )


def payouts_command(args: argparse.Namespace) -> int:
    """Run the payout reconciliation and write its report; returns the exit code."""
    from toolkit.errors import EngineError, InputError, OutputError, TrackError
    from toolkit.reconcile.payouts import holiday_dates

    try:
        holidays = holiday_dates(args.payouts_holidays)
        result = _reconciled(args, holidays)
    except (InputError, EngineError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    try:
        paths, counted, said = _written(args, result, holidays)
    except (OutputError, TrackError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    found = result.result_text(said)
    limit = args.payouts_max_exceptions
    if limit is not None and counted > limit:
        report = paths["report.html"]
        print(f"findings: {found}, more than --max-exceptions {limit}; report: {report}", file=sys.stderr)
        return EXIT_TOO_MANY
    print(f"ok: {found}; report: {paths['report.html']}")
    return EXIT_OK


def _reconciled(args: argparse.Namespace, holidays: tuple[date, ...]) -> PayoutReconciliation:
    """The payout reconciliation the options ask for (the books too, given ``--ledger``)."""
    from toolkit.reconcile.inputs import load_ledger
    from toolkit.reconcile.payouts import reconcile_payouts

    books = None
    if args.payouts_ledger is not None:
        books = load_ledger(args.payouts_ledger, carry=False, currency=args.payouts_ledger_currency)
    return reconcile_payouts(
        args.payouts_processor,
        args.payouts_bank,
        window=args.payouts_window,
        as_of=args.payouts_as_of,
        holidays=holidays,
        counterparties=args.payouts_counterparty,
        backend=args.payouts_backend,
        ledger=books,
    )


def _written(
    args: argparse.Namespace, result: PayoutReconciliation, holidays: tuple[date, ...]
) -> tuple[dict[str, Path], int, str]:
    """The report written (a tracked run's recorded with it, all or nothing): its files, the
    exceptions ``--max-exceptions`` counts (a tracked run's new and open ones), and what the
    track says of them."""
    from toolkit.outputs import fresh_folder
    from toolkit.reconcile.payouts.report import write_payout_report
    from toolkit.reconcile.payouts.tracked import recording_payouts

    environment = args.payouts_environment or f"processor file {Path(args.payouts_processor).name}"
    folder = args.payouts_output_dir or fresh_folder(Path("reports", "payouts"))
    write = functools.partial(write_payout_report, result, folder, environment=environment, holidays=holidays)
    if args.payouts_track is None:
        return write(), result.exception_count, ""
    with recording_payouts(result, args.payouts_track, output_dir=folder) as tracking:
        paths = write(tracking=tracking)
    states = tracking.state_counts()
    said = (
        f" ({states['new']:,} new, {states['open']:,} open, {states['acknowledged']:,} acknowledged; "
        f"{states['resolved']:,} resolved), track {tracking.track} run {tracking.run}"
    )
    return paths, tracking.unacknowledged_count, said
