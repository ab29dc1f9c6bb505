"""``toolkit journal``: list journaled create calls, and settle the ones whose outcome is unknown."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from toolkit.config import load_settings
from toolkit.environment import resolve_environment
from toolkit.errors import JournalError, ToolkitError
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
        if args.action == "list" and _nothing_journaled():
            return 0
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
            try:
                response = parse_json(args.response) if args.response else None
            except ValueError as exc:
                raise JournalError(f"--response is not valid JSON ({exc})") from None
            record = journal.resolve(args.kind, args.key, failed=args.failed, response=response)
            print(f"{record.kind} {record.key}: now {record.state}")
            return 0
    except (ToolkitError, json.JSONDecodeError) as exc:
        print(f"toolkit journal: {exc}", file=sys.stderr)
        return 2


def _nothing_journaled() -> bool:
    """Say so where the environment has no journal under this ``TOOLKIT_HOME``: a listing made an
    empty one and said "0 call(s)", an all-clear from the wrong home."""
    settings = load_settings()
    environment = resolve_environment(settings)
    path = Journal.path_for(environment, settings.home)
    former = (
        environment.former_key is not None
        and Journal.path_for(replace(environment, key=environment.former_key), settings.home).exists()
    )
    if path.exists() or former:  # a former one is refused by Journal.open, saying where it is
        return False
    print(f"journal: {path} (none: nothing journaled for the {environment.label} under this TOOLKIT_HOME)")
    print("0 call(s)")
    return True
