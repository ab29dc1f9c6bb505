"""``toolkit reconcile``: load both sides, reconcile, write the four report files, print the summary.

Exit codes: 0 completed; 1 completed with more than ``--max-exceptions`` exceptions; 2 unusable
input (the message names the file and the column), an engine that cannot run (its memory limit or
spill disk ran out, Spark cannot start: the message says what to change) or an output that cannot
be written (a file in the way, a read-only folder, a full disk: the message names the path).
Code 2 is one ``error:`` line on stderr, never a traceback, and leaves no partial report.

The run has a cut-off (``--as-of``, default now) and a settlement window (``--grace``, default 3
days): rows dated after the cut-off take no part, and payments inside the window that are still
pending or on one side only are in transit. In-transit payments and matches within
``--amount-tolerance`` are shown for information and never count towards ``--max-exceptions``.
``--fx-rates`` compares amounts in two currencies at a reference rate; a rate the file lacks is
named on stderr and leaves those payments ``currency_mismatch``; a malformed rate file exits 2.

With ``--track NAME`` the run is recorded in the track's history (``reconcile/tracking/``): the report
shows each exception's state and age, ``--max-exceptions`` counts only ``new`` and ``open``
exceptions and ``--max-age DAYS`` exits 1 when an unacknowledged one is older. A tracked run that
fails with code 2 records nothing. It also writes ``run.json`` beside its report and updates
``reports/index.html`` (``toolkit.runlog``). The sub-commands ``ack``, ``reopen``, ``void``,
``verify``, ``history`` and ``signoffs`` work on a track's store (``tracking/store.py``, without
loading the engine); the inputs being options (``--ledger``,
``--processor``), a file named like a sub-command is never taken for one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolkit.cli.exit_codes import EXIT_INPUT, EXIT_OK
from toolkit.cli.payouts import add_arguments as add_payout_arguments
from toolkit.errors import TrackError
from toolkit.reconcile.schema import BACKENDS
from toolkit.reconcile.tracking.signing import acknowledge, reopen, void_run
from toolkit.reconcile.tracking.store import (
    HISTORY_COLUMNS,
    SIGNOFF_COLUMNS,
    history_rows,
    signoff_rows,
    text_table,
    verify,
)


# Long: the options of `toolkit reconcile`, declared in the order --help lists them.
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options on the subcommand parser."""
    parser.set_defaults(reconcile_parser=parser, action=None)
    parser.add_argument(
        "--ledger",
        help="ledger: .csv, .xlsx, .parquet (a file, a folder or a glob), or table:NAME on Spark (required)",
    )
    parser.add_argument(
        "--processor", help="processor side, e.g. the sandbox's settlement export CSV (required)"
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where to write the report (default reports/reconcile/<UTC time>/)",
    )
    parser.add_argument(
        "--ledger-map",
        default=None,
        metavar="JSON",
        help="column mapping of the ledger, required name = the file's column: amount=Total,currency=Cur "
        'or JSON \'{"amount": "Total"}\'',
    )
    parser.add_argument(
        "--processor-map", default=None, metavar="JSON", help="column mapping of the processor file"
    )
    parser.add_argument(
        "--ledger-format",
        default=None,
        metavar="LAYOUT",
        help="the ledger's export layout: datev_extf_buchungsstapel, quickbooks_transaction_detail, "
        "xero_account_transactions or a .toml file of your own (default: recognised from the header)",
    )
    parser.add_argument(
        "--processor-format",
        default=None,
        metavar="LAYOUT",
        help="the processor's export layout: stripe_balance_itemized, stripe_unified_payments, "
        "stripe_balance_history, adyen_settlement_details or a .toml file of your own "
        "(default: recognised from the header)",
    )
    parser.add_argument(
        "--amount-tolerance",
        default="0",
        metavar="TOLERANCE",
        help="differences allowed, listed with their variance: minor units (5), a percentage of "
        "the ledger amount (0.5%%), with a floor (0.5%%:10), per currency (JPY=1,EUR=0.1%%,5)",
    )
    parser.add_argument(
        "--grace",
        default=None,
        metavar="DURATION",
        help="the settlement window before the cut-off, e.g. 36h or 3d (default 3d): payments "
        "pending, or on one side only, dated inside it are in transit, not exceptions",
    )
    parser.add_argument(
        "--fx-rates",
        default=None,
        metavar="FILE",
        help="reference rates, a CSV of date,base,quote,rate (1 base = rate quote): amounts in two "
        "currencies are compared at the rate of the payment's day",
    )
    parser.add_argument(
        "--max-exceptions",
        type=_at_least_zero,
        default=None,
        metavar="N",
        help="exit 1 when there are more than N exceptions (with --track: N new or open ones)",
    )
    parser.add_argument(
        "--track",
        default=None,
        metavar="NAME",
        help="record the run in this track's history: states, ages, sign-offs (created on first use)",
    )
    parser.add_argument(
        "--as-of",
        default=None,
        metavar="WHEN",
        help="the cut-off: rows dated after it take no part; YYYY-MM-DD (the whole day, UTC) or an "
        "ISO time (default: now); with --track also the run's date for ages (a day counts from "
        "00:00 UTC), and the same cut-off again is a re-run of that day",
    )
    parser.add_argument(
        "--max-age",
        type=_at_least_zero,
        default=None,
        metavar="DAYS",
        help="with --track: exit 1 when an unacknowledged exception is older than DAYS days",
    )
    parser.add_argument(
        "--environment",
        default=None,
        help="where the processor data came from, printed at the top of the report",
    )
    parser.add_argument("--title", default="Reconciliation report")
    parser.add_argument(
        "--period-start",
        default=None,
        metavar="YYYY-MM-DD",
        help="reconcile only rows from this day (UTC): ledger rows by their date "
        "column, processor rows by createTime, as the notebook does",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="duckdb",
        help="where the engine runs: duckdb, embedded (default), or pyspark (a "
        "local session, or TOOLKIT_SPARK_MASTER / SPARK_REMOTE)",
    )
    parser.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help="DuckDB's memory limit, e.g. 6GB (default: 60%% of the machine's "
        "memory); beyond it the engine spills to --spill-dir",
    )
    parser.add_argument(
        "--spill-dir",
        type=Path,
        default=None,
        help="where the engine spills what does not fit in memory (default: a "
        "temporary folder, removed afterwards)",
    )
    parser.add_argument(
        "--period-end", default=None, metavar="YYYY-MM-DD", help="... up to and including this day (UTC)"
    )
    for side in ("", "ledger-", "processor-"):
        _add_read_options(parser, side)
    actions = parser.add_subparsers(
        dest="action",
        metavar="{inspect,payouts,ack,reopen,void,verify,history,signoffs}",
        help="look at an input file, reconcile payouts with the bank, or work on a track (without: run a "
        "reconciliation)",
    )
    words = (
        "show how a file is read (delimiter, encoding, sheet, header row, columns, a sample) and a mapping"
    )
    sub = actions.add_parser("inspect", help=words, description=words)
    sub.add_argument("inspect_file", metavar="FILE")
    sub.add_argument("--side", choices=("ledger", "processor"), default="ledger", help="whose map to propose")
    sub.add_argument(
        "--map",
        dest="inspect_map",
        metavar="MAP",
        help="the file's map, as --ledger-map (amount=Betrag): the decimal mark is then detected from "
        "its amount column, as the run detects it",
    )
    _add_read_options(sub, "", dest_prefix="inspect_")
    words = "the processor's payouts against the bank statements: do they add up, did they arrive"
    add_payout_arguments(actions.add_parser("payouts", help=words, description=words))
    for name, words in (
        ("ack", "acknowledge exceptions of a track's latest run, with a note"),
        ("reopen", "take acknowledgements back, with a note"),
    ):
        sub = actions.add_parser(name, help=words, description=words)
        sub.add_argument("--track", required=True, metavar="NAME", dest="action_track")
        sub.add_argument("ids", nargs="+", metavar="EXCEPTION_ID")
        sub.add_argument("--note", required=True, help="why (kept in the audit log)")
        sub.add_argument(
            "--by",
            default=None,
            help="who (default: the operating-system user, which is recorded beside it either way)",
        )
    words = "void a track's latest run (a cut-off given by mistake), with a note; kept in the audit log"
    sub = actions.add_parser("void", help=words, description=words)
    sub.add_argument("--track", required=True, metavar="NAME", dest="action_track")
    sub.add_argument("--run", required=True, type=int, metavar="N", dest="void_run")
    sub.add_argument("--note", required=True, help="why the run was wrong (kept in the audit log)")
    sub.add_argument("--by", default=None, help="who (default: the operating-system user)")
    for name, words in (
        ("verify", "check a track's audit log; exit 2 naming the first entry that does not match"),
        ("history", "list a track's runs with their counts"),
        ("signoffs", "list a track's acknowledgements and reopenings: who, when, what, why"),
    ):
        sub = actions.add_parser(name, help=words, description=words)
        sub.add_argument("--track", required=True, metavar="NAME", dest="action_track")
        if name == "verify":
            sub.add_argument(
                "--against",
                action="append",
                default=[],
                metavar="FILE",
                help="a report.html or run.json kept elsewhere: the log must still hold the head it "
                "shows (repeatable)",
            )


def _at_least_zero(text: str) -> int:
    """A threshold: -1 exited 1 with "more than --max-exceptions -1" whatever the run found."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 0 or more (leave it out for no limit)")
    return value


def _add_read_options(parser: argparse.ArgumentParser, side: str, dest_prefix: str = "") -> None:
    """``--delimiter``, ``--encoding``, ``--sheet``, ``--header-row``, ``--decimal``,
    ``--date-format``, ``--timezone``, ``--currency`` for both sides (``side`` is empty), or for
    one (``ledger-``, ``processor-``: these win over the ones for both)."""
    whose = f"the {side[:-1]} file" if side else "both files (--ledger-X, --processor-X: one)"
    helps = {
        "delimiter": f"CSV delimiter of {whose}, e.g. ';' or '\\t' (default: detected)",
        "encoding": f"text encoding of {whose}, e.g. utf-16, cp1252 (default: detected)",
        "sheet": f"Excel sheet of {whose}, a name or 1-based number "
        "(default: the first visible one whose header names the amount, else the first with data)",
        "header-row": f"1-based line (CSV) or row (Excel) of the column names in {whose}, "
        "for a title above them (default: the first line; Excel: detected)",
        "decimal": f"decimal mark of the amounts in {whose}, '.' or ',' for 1.234,56 "
        "(default: detected in CSV, else '.')",
        "date-format": f"how the dates of {whose} are written, strftime-style: %%d %%m %%Y %%y %%b %%B %%H "
        "%%M %%S %%I %%p, e.g. '%%d/%%m/%%Y' (default: ISO, 31.05.2025, 01 May 2025, May 1, 2025; "
        "slashed dates in the order the file decides)",
        "timezone": f"time zone of times written without one in {whose}, e.g. Europe/Berlin or +02:00 "
        "(default: UTC; a date alone is that day)",
        "currency": f"ISO 4217 currency of {whose}, for a file without a currency column (every row's) "
        "or the empty cells of one",
    }
    metavars = {"date-format": "FORMAT", "timezone": "ZONE", "currency": "CODE"}
    for option, words in helps.items():
        dest = dest_prefix + (side + option).replace("-", "_")
        metavar = metavars.get(option, option.split("-")[0].upper())
        parser.add_argument(f"--{side}{option}", dest=dest, default=None, metavar=metavar, help=words)


def run(args: argparse.Namespace) -> int:
    """Run the reconciliation (or a track's sub-command); returns the exit code. The engine is
    imported only for a reconciliation or ``inspect``: the track's sub-commands read the audit log
    alone, without pandas or DuckDB."""
    if args.action is None:
        from toolkit.cli.reconcile_run import reconcile_command

        return reconcile_command(args)
    if args.action == "inspect":
        from toolkit.cli.reconcile_run import inspect_command

        return inspect_command(args)
    if args.action == "payouts":
        from toolkit.cli.payouts import payouts_command

        return payouts_command(args)
    return _run_action(args)


def _run_action(args: argparse.Namespace) -> int:
    """``ack``, ``reopen``, ``void``, ``verify``, ``history``, ``signoffs``: 0 done, 2 refused."""
    track = args.action_track
    try:
        if args.action in ("ack", "reopen"):
            sign = acknowledge if args.action == "ack" else reopen
            ids = sign(track, args.ids, note=args.note, by=args.by)
            done = "acknowledged" if args.action == "ack" else "reopened"
            print(f"ok: {len(ids)} exception(s) of track {track} {done}: {', '.join(ids)}")
        elif args.action == "void":
            _, now_latest = void_run(track, args.void_run, note=args.note, by=args.by)
            compared = (
                f"run {now_latest.payload['run']} (as of {now_latest.payload['asOf']})"
                if now_latest is not None
                else "no earlier run, as the track's first"
            )
            print(
                f"ok: track {track}: run {args.void_run} voided (kept in the audit log). The next run is "
                f"compared with {compared}; what run {args.void_run} listed as resolved is looked at "
                "again, and acknowledgements hold where their facts are unchanged"
            )
        elif args.action == "verify":
            entries = verify(track, against=args.against)
            against = f", holding the head of {len(args.against)} saved file(s)" if args.against else ""
            print(f"ok: track {track}: {entries} audit log entries verified{against}")
        elif args.action == "history":
            runs = history_rows(track)
            print(text_table(HISTORY_COLUMNS, runs) if runs else "(no runs)")
            print(f"ok: track {track}: {len(runs)} run(s)")
        else:
            signed = signoff_rows(track)
            print(text_table(SIGNOFF_COLUMNS, signed) if signed else "(no sign-offs)")
            print(f"ok: track {track}: {len(signed)} sign-off(s)")
    except TrackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_OK
