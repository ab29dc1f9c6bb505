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

With ``--track NAME`` the run is recorded in the track's history (``tracking.py``): the report
shows each exception's state and age, ``--max-exceptions`` counts only ``new`` and ``open``
exceptions and ``--max-age DAYS`` exits 1 when an unacknowledged one is older. A tracked run that
fails with code 2 records nothing. It also writes ``run.json`` beside its report and updates
``reports/index.html`` (``toolkit.runlog``). The sub-commands ``ack``, ``reopen``, ``verify``,
``history`` and ``signoffs`` work on a track's store; the inputs being options (``--ledger``,
``--processor``), a file named like a sub-command is never taken for one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit import runlog
from toolkit.errors import EngineError, InputError, OutputError, TrackError
from toolkit.outputs import fresh_folder, refuse_folders
from toolkit.reconcile.backends import BACKENDS, connect
from toolkit.reconcile.controller_view import not_final_text
from toolkit.reconcile.engine import reconcile
from toolkit.reconcile.fx import load_rates
from toolkit.reconcile.inputs import (
    REQUIRED_COLUMNS,
    LoadedInput,
    closest_column,
    load_ledger,
    load_processor,
    map_option,
    mapping_text,
    parse_mapping,
    select_period,
)
from toolkit.reconcile.report import summary_text, write_report
from toolkit.reconcile.result import ReconciliationResult
from toolkit.reconcile.sources import (
    POINT_UNDECIDED,
    READ_OPTIONS,
    Described,
    ReadOptions,
    describe,
    sample,
)
from toolkit.reconcile.timing import timing
from toolkit.reconcile.tolerance import Tolerance
from toolkit.reconcile.tracking import (
    acknowledge,
    check_can_run,
    findings,
    history,
    recording,
    reopen,
    signoffs,
    verify,
)

EXIT_OK, EXIT_TOO_MANY, EXIT_INPUT = 0, 1, 2
#: Infrastructure (the output) shares code 2 with bad input: neither is a finding for finance.
EXIT_OUTPUT = EXIT_INPUT


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
        metavar="{inspect,ack,reopen,verify,history,signoffs}",
        help="look at an input file, or work on a track (without: run a reconciliation)",
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
    for name, words in (
        ("ack", "acknowledge exceptions of a track's latest run, with a note"),
        ("reopen", "take acknowledgements back, with a note"),
    ):
        sub = actions.add_parser(name, help=words, description=words)
        sub.add_argument("--track", required=True, metavar="NAME", dest="action_track")
        sub.add_argument("ids", nargs="+", metavar="EXCEPTION_ID")
        sub.add_argument("--note", required=True, help="why (kept in the audit log)")
        sub.add_argument("--by", default=None, help="who (default: the login name)")
    for name, words in (
        ("verify", "check a track's audit log; exit 2 naming the first entry that does not match"),
        ("history", "list a track's runs with their counts"),
        ("signoffs", "list a track's acknowledgements and reopenings: who, when, what, why"),
    ):
        sub = actions.add_parser(name, help=words, description=words)
        sub.add_argument("--track", required=True, metavar="NAME", dest="action_track")


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
    """``--delimiter``, ``--encoding``, ``--sheet``, ``--header-row``, ``--decimal`` for both sides
    (``side`` is empty), or for one (``ledger-``, ``processor-``: these win over the ones for both)."""
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
    }
    for option, words in helps.items():
        dest = dest_prefix + (side + option).replace("-", "_")
        metavar = option.split("-")[0].upper()
        parser.add_argument(f"--{side}{option}", dest=dest, default=None, metavar=metavar, help=words)


def _read_options(args: argparse.Namespace, side: str) -> dict[str, Any]:
    """The reading options of one side: its own, else those given for both; checked here, so that a
    bad value exits 2 naming the option before any file is read."""
    chosen: dict[str, Any] = {}
    for name in READ_OPTIONS:
        own = getattr(args, f"{side}_{name}", None)
        value = own if own is not None else getattr(args, name, None)
        option = f"--{side}-{name}" if own is not None else f"--{name}"
        chosen[name] = value
        try:
            ReadOptions(**{name: value})
        except InputError as exc:
            detail = str(exc).split(": ", 1)[-1]
            raise InputError(f"{option.replace('_', '-')}: {detail}") from None
    return chosen


def _loaded_inputs(args: argparse.Namespace) -> tuple[LoadedInput, LoadedInput]:
    """Both sides as the options say, each with the period selected. The reports use only the
    canonical columns (and the dates, for a period): nothing else is read."""
    ledger_map = parse_mapping(args.ledger_map, "--ledger-map")
    processor_map = parse_mapping(args.processor_map, "--processor-map")
    ledger_options, processor_options = _read_options(args, "ledger"), _read_options(args, "processor")
    if args.backend == "pyspark":  # started as asked before a table input is looked up in it
        connect("pyspark", memory_limit=args.memory_limit, spill_dir=args.spill_dir)
    ledger = load_ledger(args.ledger, mapping=ledger_map, carry=False, **ledger_options)
    processor = load_processor(args.processor, mapping=processor_map, carry=False, **processor_options)
    _refuse_options_that_do_not_apply(args, ledger, processor)
    period = (args.period_start, args.period_end)
    return select_period(ledger, "date", *period), select_period(processor, "createTime", *period)


def run(args: argparse.Namespace) -> int:
    """Run the reconciliation (or a track's sub-command); returns the exit code."""
    if args.action == "inspect":
        return _inspect(args)
    if args.action is not None:
        return _run_action(args)
    if args.ledger is None or args.processor is None:
        missing = [o for o, v in (("--ledger", args.ledger), ("--processor", args.processor)) if v is None]
        args.reconcile_parser.error(f"the following arguments are required: {', '.join(missing)}")
    if args.track is None and args.max_age is not None:
        print("error: --max-age needs --track NAME", file=sys.stderr)
        return EXIT_INPUT
    if args.track is not None:
        try:
            check_can_run(args.track, args.as_of)
        except TrackError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INPUT
    try:
        tolerance = Tolerance.parse(args.amount_tolerance)
        clock = timing(args.as_of, args.grace)
        rates = None if args.fx_rates is None else load_rates(args.fx_rates)
        period = (args.period_start, args.period_end)
        ledger, processor = _loaded_inputs(args)
        result = reconcile(
            ledger,
            processor,
            amount_tolerance=tolerance,
            as_of=clock.as_of,
            grace=clock.grace,
            fx_rates=rates,
            backend=args.backend,
            memory_limit=args.memory_limit,
            spill_dir=args.spill_dir,
        )
    except (InputError, EngineError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    environment = args.environment or f"processor file {Path(args.processor).name}"  # not a local path
    if args.track is not None:
        return _run_tracked(args, result, (ledger, processor), environment, period)
    try:
        paths = write_report(
            result,
            _output_folder(args),
            title=args.title,
            environment=environment,
            period=period if any(period) else None,
        )
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    _print_summary(result, environment, period)
    rejected = sum(c.rejected for c in result.counts)
    found = f"{result.exception_count:,} exceptions" + (
        f" ({rejected:,} rejected row(s))" if rejected else ""
    )
    if result.info_count:
        found += f", {result.info_count:,} for information (in transit or within tolerance)"
    # The last line is the run's result, for a scheduler to forward.
    if args.max_exceptions is not None and result.exception_count > args.max_exceptions:
        print(
            f"findings: {found}, more than --max-exceptions {args.max_exceptions}; "
            f"report: {paths['report.html']}",
            file=sys.stderr,
        )
        return EXIT_TOO_MANY
    print(f"ok: {found}; report: {paths['report.html']}")
    return EXIT_OK


#: The kinds of file each reading option reads (``--decimal`` reads them all).
_OPTION_KINDS = {
    "delimiter": ("csv",),
    "encoding": ("csv",),
    "sheet": ("xlsx",),
    "header_row": ("csv", "xlsx"),
}
_KIND_WORDS = {"csv": "CSV files", "xlsx": "Excel workbooks", "csv-xlsx": "CSV files and Excel workbooks"}


def _refuse_options_that_do_not_apply(
    args: argparse.Namespace, ledger: LoadedInput, processor: LoadedInput
) -> None:
    """A reading option that reads no file given is a mistake to say, not to ignore: a side's own
    option for a file of another kind, or an option for both sides that neither file takes."""
    sides = {"ledger": ledger, "processor": processor}
    for name, kinds in _OPTION_KINDS.items():
        what = _KIND_WORDS["-".join(kinds)]
        dashed = name.replace("_", "-")
        for side, loaded in sides.items():
            if getattr(args, f"{side}_{name}", None) is not None and loaded.described.kind not in kinds:
                raise InputError(
                    f"--{side}-{dashed}: {loaded.source} is not one of the {what} it reads "
                    f"({loaded.described.kind})"
                )
        shared = [s for s in sides if getattr(args, f"{s}_{name}", None) is None]
        read = any(sides[s].described.kind in kinds for s in shared)
        if getattr(args, name, None) is not None and shared and not read:
            raise InputError(f"--{dashed}: it reads {what}, and neither file given is one")


def _print_summary(
    result: ReconciliationResult, environment: str, period: tuple[str | None, str | None]
) -> None:
    """Where the data came from, the summary, the rates missing and, for a period with payments
    in transit, when it is final."""
    print(f"Data from: {environment}")
    print(summary_text(result))
    _print_missing_rates(result)
    not_final = not_final_text(result, period)
    if not_final:
        print(not_final)


def _print_missing_rates(result: ReconciliationResult) -> None:
    """Every rate a payment needed and the rate file lacked, once each (on stderr)."""
    for text in result.missing_rates:
        print(f"warning: {text} (--fx-rates): those payments are currency_mismatch", file=sys.stderr)


def _output_folder(args: argparse.Namespace) -> Path:
    """``--output-dir``, else a fresh ``reports/reconcile/<UTC time>`` (two runs in one second
    each get their own)."""
    return Path(args.output_dir) if args.output_dir else fresh_folder(Path("reports", "reconcile"))


def _run_tracked(
    args: argparse.Namespace,
    result: ReconciliationResult,
    inputs: tuple[LoadedInput, LoadedInput],
    environment: str,
    period: tuple[str | None, str | None],
) -> int:
    """Record the run, write its report and its run.json in one transaction: all or nothing."""
    started = runlog.now_text()
    try:
        output = _output_folder(args)
        # A run.json that cannot be replaced is found before the report replaces the last one's.
        refuse_folders([output / runlog.MANIFEST])
        with recording(result, args.track, as_of=args.as_of, inputs=inputs) as tracked:
            paths = write_report(
                tracked,
                output,
                title=args.title,
                environment=environment,
                period=period if any(period) else None,
            )
            failed = findings(tracked, args.max_exceptions, args.max_age)
            code = EXIT_TOO_MANY if failed is not None else EXIT_OK
            runlog.write_manifest(output, _manifest(args, tracked, started, code, failed))
    except (OutputError, TrackError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    tracking = tracked.tracking
    assert tracking is not None
    _print_summary(tracked, environment, period)
    print(tracking.summary_text())
    warning = runlog.index_warning(output)
    if warning:
        print(warning, file=sys.stderr)
    counts = tracking.state_counts()
    rejected = sum(c.rejected for c in tracked.counts)
    found = (
        f"{tracked.exception_count:,} exceptions ({counts['new']:,} new, {counts['open']:,} open, "
        f"{counts['acknowledged']:,} acknowledged; {counts['resolved']:,} resolved"
        + (f"; {rejected:,} rejected row(s)" if rejected else "")
        + f"), track {tracking.track} run {tracking.run}"
    )
    if failed is not None:
        print(f"findings: {found}: {failed}; report: {paths['report.html']}", file=sys.stderr)
        return EXIT_TOO_MANY
    print(f"ok: {found}; report: {paths['report.html']}")
    return EXIT_OK


def _manifest(
    args: argparse.Namespace, tracked: ReconciliationResult, started: str, code: int, failed: str | None
) -> dict[str, Any]:
    """run.json of a tracked run (``toolkit.runlog``): parameters, input hashes, counts, outcome."""
    tracking = tracked.tracking
    assert tracking is not None
    names = (
        "ledger",
        "processor",
        "output_dir",
        "ledger_map",
        "processor_map",
        "amount_tolerance",
        "grace",
        "fx_rates",
        "max_exceptions",
        "max_age",
        "track",
        "as_of",
        "period_start",
        "period_end",
        "backend",
        "environment",
        "title",
    )
    return {
        "kind": "command",
        "name": "reconcile",
        "parameters": {name: getattr(args, name) for name in names if getattr(args, name) is not None},
        "inputs": list(tracking.inputs),
        "started": started,
        "ended": runlog.now_text(),
        "exitCode": code,
        "status": runlog.STATUS[code],
        "reason": failed or "",
        "report": "report.html",
        "track": tracking.track,
        "run": tracking.run,
        "asOf": tracking.as_of_text,
        "counts": {"exceptions": tracked.exception_count, **tracking.state_counts()},
        "ageBuckets": tracking.age_buckets().to_dict(orient="records"),
    }


def _inspect(args: argparse.Namespace) -> int:
    """``toolkit reconcile inspect FILE``: what was detected, a sample, a proposed mapping."""
    values = {n: getattr(args, f"inspect_{n}") for n in READ_OPTIONS}
    try:
        try:
            options = ReadOptions(**values)
        except InputError as exc:
            option, _, detail = str(exc).partition(": ")
            raise InputError(f"--{option}: {detail}") from None
        mapping = parse_mapping(args.inspect_map, "--map") or {}
        described = describe(args.inspect_file, args.side, frozenset(), options)
        amount = mapping.get("amount") or closest_column("amount", described.columns)
        if amount is not None and amount.lower() not in {c.lower() for c in described.columns}:
            amount = None  # a map naming no column of the file: the run refuses it
        if described.kind == "csv" and amount is not None:  # the mark as the run detects it
            described = describe(args.inspect_file, args.side, frozenset({amount}), options)
        rows, count, exact = sample(described)
    except (InputError, OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    unknown = described.kind == "csv" and amount is None and options.decimal is None
    print(inspection_text(described, rows, count, exact, args.side, mark_unknown=unknown))
    return EXIT_OK


def inspection_text(
    described: Described,
    rows: list[list[str]],
    count: int,
    exact: bool,
    side: str,
    *,
    mark_unknown: bool = False,
) -> str:
    """What ``inspect`` prints: how the file is read, its columns, a sample and a mapping;
    ``mark_unknown``: no column is named like the amount, so the decimal mark is not detected
    (the run detects it from the column mapped to amount)."""
    lines = [f"file: {described.name} ({described.kind})"]
    if described.kind == "csv":
        names = {",": "comma ','", ";": "semicolon ';'", "\t": "tab '\\t'", "|": "pipe '|'"}
        encoding = {"utf-8-sig": "utf-8"}.get(described.encoding, described.encoding)
        lines.append(f"delimiter: {names.get(described.delimiter, repr(described.delimiter))}")
        lines.append(f"encoding: {encoding}" + (" (with BOM)" if described.bom else " (no BOM)"))
    if described.kind == "xlsx":
        others = ", ".join(name for name in described.sheets if name != described.sheet)
        lines.append(f"sheet: {described.sheet}" + (f" (others: {others}; --sheet NAME)" if others else ""))
    if described.kind in ("csv", "xlsx"):
        lines.append(f"header row: {described.header_line}")
        mark = {
            ",": "comma ',' (amounts such as 1.234,56: --decimal ,)",
            POINT_UNDECIDED: "point '.', undecided: no amount of the first rows says which mark; "
            "one like 1.500 (1500, or 1.5?) is refused unless --decimal , or --decimal . says",
        }.get(described.decimal, "point '.'")
        if mark_unknown:
            mark = "not detected: no column is named like the amount (--map amount=COLUMN names it)"
        lines.append(f"decimal mark: {mark}")
    lines.append(f"columns ({len(described.columns)}): {', '.join(described.columns)}")
    lines.append(f"rows: {count}" if exact else f"rows: about {count} (estimated from the file size)")
    if rows:
        frame = pd.DataFrame(rows, columns=list(described.columns))
        shown = frame.map(lambda v: v if len(v) <= 24 else v[:23] + "…")
        lines.append(f"first {len(rows)} row(s):")
        lines.extend("  " + line for line in shown.to_string(index=False).splitlines())
    proposed: dict[str, str] = {}
    unmatched = []
    for canonical in REQUIRED_COLUMNS:
        if canonical in described.columns:
            continue
        found = closest_column(canonical, described.columns)
        if found is None:
            unmatched.append(canonical)
        else:
            proposed[canonical] = found
    option = map_option(side)
    if proposed:
        lines.append(
            f"proposed mapping (required name = the file's column): {option} {mapping_text(proposed)}"
        )
    elif not unmatched:
        lines.append("mapping: the required columns are all there; none needed")
    if unmatched:
        lines.append(
            f"no column found for {', '.join(unmatched)}: add {option} "
            + mapping_text({c: "COLUMN" for c in unmatched})
            + " with the file's column for each"
        )
    return "\n".join(lines)


def _run_action(args: argparse.Namespace) -> int:
    """``ack``, ``reopen``, ``verify``, ``history``, ``signoffs``: 0 done, 2 refused (nothing changed)."""
    track = args.action_track
    try:
        if args.action in ("ack", "reopen"):
            sign = acknowledge if args.action == "ack" else reopen
            ids = sign(track, args.ids, note=args.note, by=args.by)
            done = "acknowledged" if args.action == "ack" else "reopened"
            print(f"ok: {len(ids)} exception(s) of track {track} {done}: {', '.join(ids)}")
        elif args.action == "verify":
            entries = verify(track)
            print(f"ok: track {track}: {entries} audit log entries verified")
        elif args.action == "history":
            runs = history(track)
            print(runs.to_string(index=False) if len(runs) else "(no runs)")
            print(f"ok: track {track}: {len(runs)} run(s)")
        else:
            signed = signoffs(track)
            print(signed.to_string(index=False) if len(signed) else "(no sign-offs)")
            print(f"ok: track {track}: {len(signed)} sign-off(s)")
    except TrackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_OK
