"""``toolkit reconcile``: load both sides, reconcile, write the four report files, print the summary.

Exit codes: 0 completed; 1 completed with more than ``--max-exceptions`` exceptions; 2 unusable
input (the message names the file and the column), an engine that cannot run (its memory limit or
spill disk ran out, Spark cannot start: the message says what to change) or an output that cannot
be written (a file in the way, a read-only folder, a full disk: the message names the path).
Code 2 is one ``error:`` line on stderr, never a traceback, and leaves no partial report.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from toolkit.errors import EngineError, InputError, OutputError
from toolkit.reconcile.backends import BACKENDS, connect
from toolkit.reconcile.engine import reconcile
from toolkit.reconcile.inputs import load_ledger, load_processor, select_period
from toolkit.reconcile.report import summary_text, write_report

EXIT_OK, EXIT_TOO_MANY, EXIT_INPUT = 0, 1, 2
#: Infrastructure (the output) shares code 2 with bad input: neither is a finding for finance.
EXIT_OUTPUT = EXIT_INPUT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options on the subcommand parser."""
    parser.add_argument(
        "--ledger",
        required=True,
        help="ledger: .csv, .xlsx, .parquet (a file, a folder or a glob), or table:NAME on Spark",
    )
    parser.add_argument(
        "--processor", required=True, help="processor side, e.g. the sandbox's settlement export CSV"
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
        help='column mapping of the ledger, e.g. \'{"amount": "Total"}\'',
    )
    parser.add_argument(
        "--processor-map", default=None, metavar="JSON", help="column mapping of the processor file"
    )
    parser.add_argument(
        "--amount-tolerance",
        type=int,
        default=0,
        metavar="MINOR_UNITS",
        help="amount differences up to this many minor units are not mismatches",
    )
    parser.add_argument(
        "--max-exceptions",
        type=int,
        default=None,
        metavar="N",
        help="exit 1 when there are more than N exceptions",
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


def _mapping(text: str | None, option: str) -> dict[str, str] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InputError(f'{option}: must be a JSON object of column names, e.g. {{"amount": "Total"}}')
    return value


def run(args: argparse.Namespace) -> int:
    """Run the reconciliation; returns the exit code."""
    if args.amount_tolerance < 0:
        print("error: --amount-tolerance must be >= 0", file=sys.stderr)
        return EXIT_INPUT
    try:
        ledger_map = _mapping(args.ledger_map, "--ledger-map")
        processor_map = _mapping(args.processor_map, "--processor-map")
        # The reports use only the canonical columns (and the dates, for a period): read nothing
        # else.
        period = (args.period_start, args.period_end)
        ledger = load_ledger(args.ledger, mapping=ledger_map, carry=False)
        processor = load_processor(args.processor, mapping=processor_map, carry=False)
        ledger = select_period(ledger, "date", *period)
        processor = select_period(processor, "createTime", *period)
        engine = connect(args.backend, memory_limit=args.memory_limit, spill_dir=args.spill_dir)
        result = reconcile(ledger, processor, amount_tolerance=args.amount_tolerance, backend=engine)
    except (InputError, EngineError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    output = args.output_dir or Path("reports", "reconcile", datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
    environment = args.environment or f"processor file {args.processor}"
    try:
        paths = write_report(
            result, output, title=args.title, environment=environment, period=period if any(period) else None
        )
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    print(f"Data from: {environment}")
    print(summary_text(result))
    rejected = sum(c.rejected for c in result.counts)
    found = f"{result.exception_count} exceptions" + (f" ({rejected} rejected row(s))" if rejected else "")
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
