"""``toolkit journal``: list journaled create calls, and settle the ones whose outcome is unknown."""

from __future__ import annotations

import argparse
import json
import sys

from toolkit.errors import ToolkitError
from toolkit.journal import Journal
from toolkit.models import parse_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``toolkit journal`` arguments: ``list`` and ``resolve``."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list journaled calls (all, or --unknown only)")
    listing.add_argument("--kind", choices=["payment", "product"])
    listing.add_argument("--unknown", action="store_true", help="only calls whose outcome is unknown")
    resolve = actions.add_parser("resolve", help="settle a call whose outcome is unknown")
    resolve.add_argument("key", help="the business key (merchantReferenceId)")
    resolve.add_argument("--kind", choices=["payment", "product"], default="payment")
    outcome = resolve.add_mutually_exclusive_group(required=True)
    outcome.add_argument(
        "--failed", action="store_true", help="it did not happen at the service: allow sending it again"
    )
    outcome.add_argument(
        "--response", metavar="JSON", help="what the service did, as the data object of its response"
    )


def run(args: argparse.Namespace) -> int:
    """List the journal or resolve an unknown outcome; returns the exit code."""
    try:
        with Journal.open() as journal:
            if args.action == "list":
                records = journal.unknown(args.kind) if args.unknown else journal.records(args.kind)
                print(f"journal: {journal.path}")
                print(f"environment: {journal.environment}")
                for r in records:
                    shown = "unknown" if r.state in ("sending", "unknown") else r.state
                    print(f"{r.kind:8} {r.key:32} {shown:10} {r.error or ''}")
                print(f"{len(records)} call(s)")
                return 0
            response = parse_json(args.response) if args.response else None
            record = journal.resolve(args.kind, args.key, failed=args.failed, response=response)
            print(f"{record.kind} {record.key}: now {record.state}")
            return 0
    except (ToolkitError, json.JSONDecodeError) as exc:
        print(f"toolkit journal: {exc}", file=sys.stderr)
        return 2
