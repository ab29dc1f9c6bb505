"""``toolkit journal``: list journaled create calls, and settle the ones whose outcome is unknown."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from toolkit.client import Client
from toolkit.config import load_settings
from toolkit.environment import resolve_environment
from toolkit.errors import JournalError, SandboxError, ToolkitError
from toolkit.journal import Journal, JournalRecord
from toolkit.models import PaymentResult, PaymentStatus, SettlementRecord, parse_json, to_json_bytes

if TYPE_CHECKING:
    from toolkit.controls import SandboxControls

#: What a resolution's confirmation says where the service cannot be asked what became of a call.
NOT_CHECKED = "not checked against the service: it offers no look-up"


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
        if args.action == "resolve":
            return _resolve(args)
        if _nothing_journaled():
            return 0
        with Journal.open() as journal:
            records = journal.unknown(args.kind) if args.unknown else journal.records(args.kind)
            print(f"journal: {journal.path}")
            print(f"environment: {journal.environment}")
            for r in records:
                shown = "unknown" if r.state in ("sending", "unknown") else r.state
                print(f"{r.kind:8} {r.key:32} {shown:10} {r.error or ''}")
            print(f"{len(records)} call(s)")
            return 0
    except (ToolkitError, json.JSONDecodeError) as exc:
        print(f"toolkit journal: {exc}", file=sys.stderr)
        return 2


def _resolve(args: argparse.Namespace) -> int:
    """Settle an unknown outcome, once the service (where it can be asked) does not contradict it:
    a payment marked failed that did happen would be sent, and charged, a second time."""
    try:
        response = parse_json(args.response) if args.response else None
    except ValueError as exc:
        raise JournalError(f"--response is not valid JSON ({exc})") from None
    settings = load_settings()
    environment = resolve_environment(settings)
    with (
        Journal.for_environment(environment, settings.home) as journal,
        Client(environment=environment, settings=settings) as client,
    ):
        check = ServiceCheck(client)
        record = journal.resolve(args.kind, args.key, failed=args.failed, response=response, confirm=check)
        if check.settled is not None and journal.record_settlement(check.settled):
            check.said += f"; it has settled since as {_status_label(check.settled.status)}: recorded"
        print(f"{record.kind} {record.key}: now {record.state} ({check.said})")
    return 0


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


class ServiceCheck:
    """The ``confirm`` of ``Journal.resolve``: asks the service what became of the call and refuses
    (``JournalError``) a resolution it contradicts; ``said`` is how the resolution was checked.

    Only a sandbox can be asked (its settlement export, ``GET /sandbox/payments``); the service of
    api-spec.md has no way to look a payment up, so there the resolution is recorded unchecked and
    the confirmation says so. A service that cannot be reached refuses: it may be a sandbox.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self.said = NOT_CHECKED
        #: The sandbox's record of a payment resolved with the answer it gave before it settled.
        self.settled: SettlementRecord | None = None

    def __call__(self, record: JournalRecord, response: dict[str, Any] | None) -> None:
        """Check ``record``'s resolution (``response``, or None for failed) against the service."""
        if record.kind != "payment":
            self.said = f"{NOT_CHECKED} of products"
            return
        controls = self._controls(record)
        if controls is None:
            return
        try:
            held = controls.payments_under(record.key)
        except ToolkitError as exc:
            raise _cannot_ask(record, exc) from None
        if response is None:
            self.said = _check_failed(record.key, held)
        else:
            self.said, self.settled = _check_response(
                record.key, PaymentResult.model_validate(response), held
            )

    def _controls(self, record: JournalRecord) -> SandboxControls | None:
        """The sandbox's controls, or None for a service that is not a sandbox."""
        from toolkit.controls import SandboxControls  # pandas: only for a resolution

        try:
            return SandboxControls(self.client)
        except SandboxError:
            return None
        except ToolkitError as exc:
            raise _cannot_ask(record, exc) from None


def _cannot_ask(record: JournalRecord, exc: ToolkitError) -> JournalError:
    return JournalError(
        f"{record.kind} {record.key!r}: cannot ask the service what became of it ({exc}); "
        "nothing was recorded"
    )


def _status_label(status: PaymentStatus | int | str | None) -> str:
    return status.label if isinstance(status, PaymentStatus) else str(status)


def _held_text(held: SettlementRecord) -> str:
    """One payment as the sandbox holds it: ``order ord_1 as success (25.00 USD)``."""
    return f"order {held.orderId} as {_status_label(held.status)} ({held.amount} {held.currency})"


def _check_failed(key: str, held: list[SettlementRecord]) -> str:
    """``--failed`` stands where the sandbox holds nothing under the key, or only failed payments
    (nothing was charged); a payment that succeeded, or still may, makes it a second charge."""
    if not held:
        return f"checked against the sandbox: it holds no payment under {key!r}"
    alive = [h for h in held if h.status != PaymentStatus.FAILURE]
    if not alive:
        return "checked against the sandbox: it holds " + ", ".join(_held_text(h) for h in held)
    first = alive[0]
    if first.status == PaymentStatus.NEXT_ACTION:
        then = "settle it first, then record what it did with --response"
    else:
        answer = {
            "orderId": first.orderId,
            "paymentInstrumentId": first.paymentInstrumentId,
            "status": first.status,
            "amount": first.amount,
            "currency": first.currency,
        }
        then = f"record what it did with --response '{to_json_bytes(answer).decode()}'"
    _refuse(f"payment {key!r} did happen: the sandbox holds {_held_text(first)}; {then}")


def _check_response(
    key: str, answer: PaymentResult, held: list[SettlementRecord]
) -> tuple[str, SettlementRecord | None]:
    """``--response`` stands where the sandbox holds that order under the key, with its amount,
    currency and instrument, and a status it had or has (a pending answer may have settled since).
    Returns how it was checked, and the sandbox's record when it settled after that answer."""
    if not held:
        _refuse(
            f"payment {key!r}: the sandbox holds no payment under it, so it did not happen there; "
            "resolve it with --failed"
        )
    match = next((h for h in held if h.orderId == answer.orderId), None)
    if match is None:
        holds = ", ".join(_held_text(h) for h in held)
        _refuse(f"payment {key!r}: the sandbox holds no order {answer.orderId} under it, but {holds}")
    differs = [
        f"{name} {given} (the sandbox: {found})"
        for name, given, found in (
            ("amount", answer.amount, match.amount),
            ("currency", answer.currency, match.currency),
            ("paymentInstrumentId", answer.paymentInstrumentId, match.paymentInstrumentId),
        )
        if given is not None and found is not None and given != found  # by value: 25.0 is 25.00
    ]
    settled_answer = answer.status in (PaymentStatus.SUCCESS, PaymentStatus.FAILURE)
    if settled_answer and answer.status != match.status:
        differs.insert(
            0, f"status {_status_label(answer.status)} (the sandbox: {_status_label(match.status)})"
        )
    if differs:
        _refuse(
            f"payment {key!r}: the response contradicts the sandbox's {_held_text(match)}: "
            + "; ".join(differs)
        )
    settled = match.status in (PaymentStatus.SUCCESS, PaymentStatus.FAILURE)
    later = match if settled and not settled_answer else None
    return f"checked against the sandbox: it holds {_held_text(match)}", later


def _refuse(reason: str) -> NoReturn:
    """Refuse a resolution the service contradicts (one line, exit 2)."""
    raise JournalError(f"{reason}; nothing was recorded")
