"""``toolkit sandbox faults add|list|clear``: the fault rules of a running sandbox, from a shell.

It talks to the sandbox at ``--base-url`` or ``TOOLKIT_BASE_URL`` (never an embedded one of its
own: rules set there would vanish with this process), with the key from ``--api-key-file`` or
``TOOLKIT_API_KEY``. Exit codes: 0 done, 2 refused or unreachable.
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.client import Client
from toolkit.config import load_settings, read_key_file
from toolkit.control_models import FAULT_MODES, FAULT_ROUTES, MAX_DELAY_MS
from toolkit.controls import SandboxControls
from toolkit.errors import ConfigurationError, ToolkitError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``toolkit sandbox faults`` arguments: ``add``, ``list`` and ``clear``."""
    actions = parser.add_subparsers(dest="faults_action", required=True, metavar="ACTION")
    add = actions.add_parser(
        "add",
        help="add a rule: the next --count matching requests (default 1), or a seeded share",
        description="Add a fault rule to a running sandbox; prints its id.",
    )
    add.add_argument("--route", required=True, choices=FAULT_ROUTES, help="the requests it applies to")
    add.add_argument("--mode", required=True, choices=FAULT_MODES, help="what happens to them")
    which = add.add_mutually_exclusive_group()
    which.add_argument("--count", type=int, help="the next N matching requests (default 1)")
    which.add_argument("--probability", help="each matching request with this probability (needs --seed)")
    add.add_argument("--seed", type=int, help="fixes the sequence of --probability: same seed, same requests")
    add.add_argument(
        "--delay-ms", type=int, help=f"mode delay: milliseconds before answering (<= {MAX_DELAY_MS})"
    )
    add.add_argument(
        "--status", type=int, help="mode error: the status answered (408, 429, 500-599; default 500)"
    )
    add.add_argument(
        "--retry-after",
        type=int,
        help="mode error, status 429 or 503: Retry-After in seconds (429 default 1)",
    )
    actions.add_parser(
        "list",
        help="list the rules, with how often each has fired",
        description="List the fault rules of a running sandbox.",
    )
    actions.add_parser("clear", help="remove every rule", description="Remove every fault rule.")
    for sub in actions.choices.values():
        sub.add_argument("--base-url", help="the running sandbox (default $TOOLKIT_BASE_URL)")
        sub.add_argument(
            "--api-key-file", type=Path, help="file holding the sandbox's key (default: $TOOLKIT_API_KEY)"
        )


def run(args: argparse.Namespace) -> int:
    """Drive the fault rules of a running sandbox; returns the exit code."""
    try:
        with _client(args) as client:
            controls = SandboxControls(client)
            if args.faults_action == "add":
                added = controls.add_fault(_rule_fields(args))
                print(f"{added.id}  {_describe(added.model_dump())}")
            elif args.faults_action == "list":
                rules = controls.faults()
                for rule_id, row in rules.iterrows():
                    shown = {str(name): value for name, value in row.items()}
                    print(f"{rule_id}  {_describe(shown)}  fired {shown['fired']}/{shown['matched']} tried")
                print(f"{len(rules)} rule(s)")
            else:
                print(f"cleared {controls.clear_faults()} rule(s)")
    except ToolkitError as exc:
        print(f"toolkit sandbox faults: {exc}", file=sys.stderr)
        return 2
    return 0


def _client(args: argparse.Namespace) -> Client:
    settings = load_settings()
    base_url = args.base_url or settings.base_url
    if not base_url:
        raise ConfigurationError(
            "no sandbox to talk to: give --base-url or set TOOLKIT_BASE_URL to the address "
            "`toolkit sandbox` printed"
        )
    key = read_key_file(args.api_key_file) if args.api_key_file is not None else settings.api_key
    if key is None:
        raise ConfigurationError("no API key: set TOOLKIT_API_KEY or give --api-key-file")
    return Client(base_url=base_url, api_key=key, settings=settings)


def _rule_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The rule's body from the options given (the model checks it before anything is sent)."""
    fields: dict[str, Any] = {
        "route": args.route,
        "mode": args.mode,
        "count": args.count,
        "seed": args.seed,
        "delayMs": args.delay_ms,
        "status": args.status,
        "retryAfter": args.retry_after,
    }
    if args.probability is not None:
        fields["probability"] = _number(args.probability)
    return {name: value for name, value in fields.items() if value is not None}


def _number(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ConfigurationError(f"--probability: {text!r} is not a number") from None


def _describe(rule: dict[str, Any]) -> str:
    """One rule in words: ``POST /payment drop_after_commit next 1 (0 left)``."""

    def given(name: str) -> bool:
        value = rule.get(name)
        return value is not None and not pd.isna(value)

    parts = [str(rule["route"]), str(rule["mode"])]
    if given("probability"):
        parts.append(f"probability {rule['probability']} seed {rule['seed']}")
    elif given("count"):
        parts.append(f"next {rule['count']} ({rule['remaining']} left)")
    labels = (("delayMs", "delay {} ms"), ("status", "status {}"), ("retryAfter", "Retry-After {} s"))
    for name, label in labels:
        if given(name):
            parts.append(label.format(rule[name]))
    return " ".join(parts)
