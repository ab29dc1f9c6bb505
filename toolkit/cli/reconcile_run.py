"""``toolkit reconcile`` itself: load both sides, reconcile, write the report, print the summary;
and ``inspect``. Imported only when one of them runs (``toolkit.cli.reconcile``: options, exit codes).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit import runlog
from toolkit.cli.exit_codes import EXIT_INPUT, EXIT_OK, EXIT_OUTPUT, EXIT_TOO_MANY
from toolkit.cli.progress import steps_on_terminal
from toolkit.errors import EngineError, InputError, OutputError, TrackError
from toolkit.output_record import claim
from toolkit.outputs import fresh_folder
from toolkit.reconcile._engine import reconcile
from toolkit.reconcile.backends import connect
from toolkit.reconcile.date_formats import DAY_FIRST, MONTH_FIRST
from toolkit.reconcile.exports import Layout, recognised
from toolkit.reconcile.fx import load_rates
from toolkit.reconcile.inputs import (
    BOOKED,
    REQUIRED_COLUMNS,
    LoadedInput,
    closest_column,
    load_ledger,
    load_processor,
    map_option,
    mapping_text,
    parse_mapping,
)
from toolkit.reconcile.inputs.dates import SLASHED, both_ways, slashed_dates
from toolkit.reconcile.period import select_period
from toolkit.reconcile.render.figures import not_final_text
from toolkit.reconcile.render.report import summary_text, write_report
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
from toolkit.reconcile.tracking.model import findings
from toolkit.reconcile.tracking.record import check_can_run, recording, with_earlier_date_formats


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
    ledger = load_ledger(
        args.ledger, mapping=ledger_map, carry=False, export_format=args.ledger_format, **ledger_options
    )
    processor = load_processor(
        args.processor,
        mapping=processor_map,
        carry=False,
        export_format=args.processor_format,
        **processor_options,
    )
    _refuse_options_that_do_not_apply(args, ledger, processor)
    if args.track is not None:  # a file whose dates cannot say their order: as the track read it
        ledger, processor = with_earlier_date_formats(args.track, (ledger, processor))
    period = (args.period_start, args.period_end)
    return select_period(ledger, "date", *period), select_period(processor, "createTime", *period)


def reconcile_command(args: argparse.Namespace) -> int:
    """Run the reconciliation; returns the exit code. On a terminal, a long run shows its steps."""
    with steps_on_terminal(sys.stderr):
        return _reconcile(args)


def _reconcile(args: argparse.Namespace) -> int:
    if args.ledger is None or args.processor is None:
        missing = [o for o, v in (("--ledger", args.ledger), ("--processor", args.processor)) if v is None]
        args.reconcile_parser.error(f"the following arguments are required: {', '.join(missing)}")
    if _refused_track_options(args):
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
    if _refused_for_comparing_nothing(args, result):
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
            inputs=_input_paths(args, (ledger, processor)),
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


def _refused_track_options(args: argparse.Namespace) -> bool:
    """Refuse (True, said on stderr) before the engine works what a tracked run would refuse."""
    if args.track is None and args.max_age is not None:
        print("error: --max-age needs --track NAME", file=sys.stderr)
        return True
    if args.track is not None:
        try:
            check_can_run(args.track, args.as_of)
        except TrackError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return True
    return False


def _refused_for_comparing_nothing(args: argparse.Namespace, result: ReconciliationResult) -> bool:
    """Say when no row was compared (a past ``--as-of`` typed by mistake): a warning, or, where a
    threshold was set, an error (True): "0 exceptions" would pass it having looked at nothing."""
    nothing = result.nothing_compared
    if nothing is None:
        return False
    if args.max_exceptions is not None or args.max_age is not None:
        print(f"error: {nothing}: a threshold cannot pass a run that compared nothing", file=sys.stderr)
        return True
    print(f"warning: {nothing}", file=sys.stderr)
    return False


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


def _input_paths(args: argparse.Namespace, inputs: tuple[LoadedInput, LoadedInput]) -> list[str | Path]:
    """Every file the run reads (each file of a glob, the rates file), which no output may replace."""
    return [
        *(p for loaded in inputs for p in (*loaded.described.paths, loaded.source)),
        *([args.fx_rates] if args.fx_rates else []),
    ]


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
        read = _input_paths(args, inputs)
        # A run.json that cannot be replaced is found before the report replaces the last one's.
        claim(output, [runlog.MANIFEST], inputs=read)
        with recording(result, args.track, as_of=args.as_of, inputs=inputs, output_dir=output) as tracked:
            paths = write_report(
                tracked,
                output,
                title=args.title,
                environment=environment,
                period=period if any(period) else None,
                inputs=read,
            )
            failed = findings(tracked, args.max_exceptions, args.max_age)
            code = EXIT_TOO_MANY if failed is not None else EXIT_OK
            runlog.write_manifest(output, _manifest(args, tracked, started, code, failed), inputs=read)
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
        "ledger_format",
        "processor_format",
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
        "auditHead": tracking.audit_head,
        "asOf": tracking.as_of_text,
        "counts": {"exceptions": tracked.exception_count, **tracking.state_counts()},
        "ageBuckets": tracking.age_buckets().to_dict(orient="records"),
    }


def inspect_command(args: argparse.Namespace) -> int:
    """``toolkit reconcile inspect FILE``: what was detected, a sample, a proposed mapping."""
    values = {n: getattr(args, f"inspect_{n}") for n in READ_OPTIONS}
    try:
        try:
            options = ReadOptions(**values)
        except InputError as exc:
            option, _, detail = str(exc).partition(": ")
            raise InputError(f"--{option.replace('_', '-')}: {detail}") from None
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
    dates = _dates_line(described, rows)
    print(inspection_text(described, rows, count, exact, args.side, mark_unknown=unknown, dates=dates))
    return EXIT_OK


def _dates_line(described: Described, rows: list[list[str]]) -> str:
    """How the file's dates are read: the format given, or the order of its slashed dates as its
    rows decide it (in the columns whose first rows hold one), or undecided."""
    if described.date_format is not None:
        return f"dates: {described.date_format} (--date-format)"
    slashed = [any(re.match(SLASHED, row[i].strip()) for row in rows) for i in range(len(described.columns))]
    columns = [c for c, has in zip(described.columns, slashed, strict=True) if has]
    found = slashed_dates(connect("duckdb"), described, columns) if columns else None
    if found is None:
        return "dates: as written (ISO 8601, 31.05.2025, 01 May 2025, May 1, 2025, epoch milliseconds)"
    if found.format is not None:
        order = "day first" if found.format == DAY_FIRST else "month first"
        return f"dates: {order}, {found.format} (decided from the rows)"
    if found.day_first and found.month_first:
        return (
            f"dates: written both day first ({found.day_first}) and month first ({found.month_first}): "
            "a run that reads the dates refuses the file"
        )
    return (
        f"dates: day/month order undecided: {both_ways(found.first)}; a run that reads the dates refuses "
        f"the file unless --date-format '{DAY_FIRST}' or '{MONTH_FIRST}' says which"
    )


def _mapping_lines(described: Described, side: str) -> list[str]:
    """The mapping ``inspect`` proposes for the required columns the file names otherwise, and
    the columns it finds no candidate for."""
    lines = []
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
    if side == "ledger" and "status" in unmatched:  # a booking is a payment that happened
        unmatched.remove("status")
        lines.append(f"status: no column; every row is taken as booked ({BOOKED})")
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
    return lines


def inspection_text(
    described: Described,
    rows: list[list[str]],
    count: int,
    exact: bool,
    side: str,
    *,
    mark_unknown: bool = False,
    dates: str = "",
) -> str:
    """What ``inspect`` prints: how the file is read, its columns, a sample and a mapping;
    ``mark_unknown``: no column is named like the amount, so the decimal mark is not detected
    (the run detects it from the column mapped to amount); ``dates``: how its dates are read."""
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
    lines.extend([dates] if dates else [])
    lines.append(f"columns ({len(described.columns)}): {', '.join(described.columns)}")
    lines.append(f"rows: {count}" if exact else f"rows: about {count} (estimated from the file size)")
    if rows:
        frame = pd.DataFrame(rows, columns=list(described.columns))
        shown = frame.map(lambda v: v if len(v) <= 24 else v[:23] + "…")
        lines.append(f"first {len(rows)} row(s):")
        lines.extend("  " + line for line in shown.to_string(index=False).splitlines())
    layout = recognised(described.columns, "processor") or recognised(described.columns, "ledger")
    lines.extend(_mapping_lines(described, side) if layout is None else _layout_lines(described, layout))
    return "\n".join(lines)


def _layout_lines(described: Described, layout: Layout) -> list[str]:
    """How a processor's export the toolkit recognises is read (``exports/``): its columns, its
    row types, the columns that may hold the order key."""
    mapping = layout.mapping(described.columns)
    lines = [
        f"export: {layout.title} ({layout.name}), recognised from its header: read as the {layout.side} "
        f"with no option (--{layout.side}-format NAME or FILE forces a layout)"
    ]
    for canonical, column in mapping.items():
        fallback = dict(layout.fallback).get(canonical)
        lines.append(f"  {canonical} = {column}" + (f" (where empty: {fallback})" if fallback else ""))
    if {"debit", "credit"} <= set(mapping):
        positive = "credit" if layout.credit_positive else "debit"
        lines.append(f"  amount = the Debit/Credit pair, the {positive} positive")
    if layout.zone:
        lines.append(f"  createTime in the time zone of column {layout.zone}")
    if layout.date_written:
        lines.append(
            f"  date written {layout.date_written}, its year from the file's first line (its period)"
        )
    if "merchantReferenceId" not in mapping:
        choices = layout.key_candidates(described.columns)
        lines.append(
            f"  merchantReferenceId = the one of {', '.join(choices)} whose values match the ledger's keys"
            if choices
            else f"  merchantReferenceId: no column; {layout.key_help}"
        )
    if layout.statuses:
        said = ", ".join(f"{word} = {status}" for word, status in layout.statuses[:6])
        lines.append(f"  status words: {said}{', ...' if len(layout.statuses) > 6 else ''}")
    for split in layout.splits:
        if split.amount in described.columns:
            where = f" in {split.currency}" if split.currency else ""
            lines.append(f"  {split.amount}: a {split.kind} of its own{where}, where written and not zero")
    for column, pattern in layout.skip:
        lines.append(f"  rows whose {column} matches {pattern!r}: left out, they move no money")
    if layout.references:
        lines.append(f"  the processor's references: {', '.join(layout.references)}")
    return lines
