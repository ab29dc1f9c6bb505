"""``SandboxControls``: the sandbox-only endpoints, typed, for scripting scenarios without raw HTTP.

Besides subscriptions, the clock, settlement and reset, it drives faults on demand (``add_fault``,
``faults``, ``clear_faults``) and reads the request log (``requests``), both as frames for notebooks.

It checks ``GET /sandbox/info`` first and refuses anything that is not a sandbox, so a scenario
script pointed at the live service by mistake stops before it does anything. It is client code:
it reaches the sandbox over HTTP through ``Client`` and shares only the models with it
(``toolkit.models``, ``toolkit.control_models``); the sandbox package never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel

from toolkit.client import Client, path_segment
from toolkit.config import load_settings
from toolkit.control_models import (
    PAYOUT_COLUMNS,
    BankChangeRequest,
    BankDelayRequest,
    BankDepositRequest,
    CancelRequest,
    ClockAdvanceRequest,
    FaultRule,
    FaultRuleRequest,
    ResolveRequest,
    SubscriptionCreateRequest,
)
from toolkit.errors import APIError, AuthenticationError, SandboxError
from toolkit.journal import Journal
from toolkit.models import (
    EXPORT_COLUMNS,
    PaymentResult,
    PaymentStatus,
    SettlementRecord,
    Subscription,
    merge_fields,
)

EXPORT_TIME_COLUMNS = ("createTime", "updateTime")
FAULT_COLUMNS: tuple[str, ...] = tuple(FaultRule.model_fields)
REQUEST_COLUMNS: tuple[str, ...] = (
    "time",
    "method",
    "path",
    "status",
    "latencyMs",
    "merchantReferenceId",
    "fault",
    "faultId",
)


class SandboxControls:
    """Subscriptions, the clock, payment settlement, the settlement export and reset of a sandbox."""

    def __init__(self, client: Client | None = None) -> None:
        self.client = client or Client()
        try:
            info = self.client.call("GET", "/sandbox/info")
        except AuthenticationError:
            raise  # a refused key says nothing about what the service is
        except APIError as exc:
            raise SandboxError(
                f"{self.client.base_url} is not a sandbox (GET /sandbox/info: HTTP {exc.http_status}); "
                "sandbox controls refuse to run against it"
            ) from None
        if not (isinstance(info, Mapping) and info.get("sandbox") is True):
            raise SandboxError(f"{self.client.base_url} did not identify itself as a sandbox")

    def now(self) -> datetime:
        """The sandbox clock (it only moves forward: with wall time, unless frozen, and ``advance_clock``)."""
        info = self.client.call("GET", "/sandbox/info")
        return _utc(info["now"])

    def freeze_clock(self) -> datetime:
        """Stop the clock where it stands, so that a scenario tells the same story whenever it runs:
        open payments do not expire and periods do not renew by themselves. Returns the instant."""
        return _utc(self.client.call("POST", "/sandbox/clock/freeze")["now"])

    def resume_clock(self) -> datetime:
        """Let a frozen clock run again from its instant (it never goes back). Returns the instant."""
        return _utc(self.client.call("POST", "/sandbox/clock/resume")["now"])

    def create_subscription(
        self, request: SubscriptionCreateRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Subscription:
        """Subscribe a customer (given as in POST /payment) to a recurring price."""
        body = SubscriptionCreateRequest.build(merge_fields(request, fields))
        data = self.client.call("POST", "/sandbox/subscriptions", json=_wire(body))
        return Subscription.model_validate(data)

    def cancel_subscription(
        self, subscription_id: str, *, at_period_end: bool = True, reason: str | None = None
    ) -> Subscription:
        """Cancel now, or at the end of the current period (the default)."""
        body = CancelRequest.build({"atPeriodEnd": at_period_end, "reason": reason})
        segment = path_segment(subscription_id, "subscription id")
        data = self.client.call("POST", f"/sandbox/subscriptions/{segment}/cancel", json=_wire(body))
        return Subscription.model_validate(data)

    def advance_clock(
        self, *, days: int = 0, hours: int = 0, minutes: int = 0, seconds: int = 0, milliseconds: int = 0
    ) -> int:
        """Move the clock forward; returns how many open payments expired on the way."""
        body = ClockAdvanceRequest.build(
            {
                "days": days,
                "hours": hours,
                "minutes": minutes,
                "seconds": seconds,
                "milliseconds": milliseconds,
            }
        )
        return int(self.client.call("POST", "/sandbox/clock/advance", json=_wire(body))["expiredPayments"])

    def resolve_payment(
        self, order_id: str, status: Literal["success", "failure"], *, journal: Journal | None = None
    ) -> SettlementRecord:
        """Settle a pending or next-action payment; returns its settlement record.

        The settlement is recorded in ``journal`` (by default the journal of the client's
        environment, where ``create_payment`` and ``create_payments`` journal) when that journal
        made the payment, so that ``payments_frame`` shows the settled status.
        """
        body = ResolveRequest.build({"status": status})
        segment = path_segment(order_id, "order id")
        data = self.client.call("POST", f"/sandbox/payments/{segment}/resolve", json=_wire(body))
        settled = SettlementRecord.model_validate(data)
        if journal is not None:
            journal.record_settlement(settled)
            return settled
        home = load_settings().home
        if Journal.path_for(self.client.environment, home).exists():  # else no payment was journaled
            with Journal.for_environment(self.client.environment, home) as own:
                own.record_settlement(settled)
        return settled

    def export_payments(self, merchant_reference_id: str | None = None) -> pd.DataFrame:
        """The settlement export as a frame keyed by merchantReferenceId (amounts exact Decimals)."""
        params = {"format": "json"}
        if merchant_reference_id is not None:
            params["merchantReferenceId"] = merchant_reference_id
        records = self.client.call("GET", "/sandbox/payments", params=params)["payments"]
        frame = pd.DataFrame.from_records(records, columns=list(EXPORT_COLUMNS))
        for column in ("amount", "pricingAmount"):  # JSON gives 1000 JPY as an int, 12.30 as a Decimal
            frame[column] = pd.Series(
                [None if pd.isna(v) else Decimal(str(v)) for v in frame[column]],
                index=frame.index,
                dtype=object,
            )
        for column in EXPORT_TIME_COLUMNS:
            frame[column] = pd.to_datetime(frame[column].astype("Int64"), unit="ms", utc=True)
        return frame.set_index("merchantReferenceId")

    def export_csv(self) -> bytes:
        """The settlement export as the CSV file a processor would send."""
        return self.client.get_bytes("/sandbox/payments", params={"format": "csv"})

    def payments_under(self, merchant_reference_id: str) -> list[SettlementRecord]:
        """Every payment the settlement export holds under a reference (none, one or several), as
        typed records: what ``toolkit journal resolve`` checks a resolution against."""
        params = {"format": "json", "merchantReferenceId": merchant_reference_id}
        found = self.client.call("GET", "/sandbox/payments", params=params)["payments"]
        return [SettlementRecord.model_validate(record) for record in found]

    def find_payment(self, merchant_reference_id: str) -> PaymentResult:
        """The one payment the settlement export holds under a reference, as POST /payment would have
        answered it: what to record with ``toolkit journal resolve --response`` after an unknown outcome.
        """
        params = {"format": "json", "merchantReferenceId": merchant_reference_id}
        found = self.client.call("GET", "/sandbox/payments", params=params)["payments"]
        if len(found) != 1:
            raise SandboxError(
                f"the settlement export holds {len(found)} payments with merchantReferenceId "
                f"{merchant_reference_id!r}, not exactly one"
            )
        record = found[0]
        status = next(s for s in PaymentStatus if s.label == record["status"])
        return PaymentResult.model_validate(
            {
                "orderId": record["orderId"],
                "paymentInstrumentId": record["paymentInstrumentId"],
                "status": status,
                "amount": record["amount"],
                "currency": record["currency"],
            }
        )

    def reset(self) -> None:
        """Empty the sandbox (the API key is kept); fault rules and bank controls go too."""
        self.client.call("POST", "/sandbox/reset")

    # -- payouts and the bank ---------------------------------------------------------------------

    def payouts(self) -> pd.DataFrame:
        """Every payout as of the sandbox clock (``paid`` or ``pending``), keyed by payoutId;
        gross, fee and net exact Decimals."""
        records = self.client.call("GET", "/sandbox/payouts")["payouts"]
        frame = pd.DataFrame.from_records(records, columns=list(PAYOUT_COLUMNS))
        for column in ("gross", "fee", "net"):
            frame[column] = pd.Series(
                [Decimal(str(v)) for v in frame[column]], index=frame.index, dtype=object
            )
        frame["payoutDate"] = pd.Series(
            [date.fromisoformat(v) for v in frame["payoutDate"]], index=frame.index, dtype=object
        )
        return frame.set_index("payoutId")

    def payout_report_csv(self) -> bytes:
        """The paid payouts itemized, as Stripe's payout reconciliation report: what
        ``toolkit reconcile payouts --processor`` reads."""
        return self.client.get_bytes("/sandbox/payouts/report")

    def bank_statement(self, day: date, currency: str) -> bytes:
        """The camt.053 statement of the sandbox's ``currency`` account for ``day``."""
        return self.client.get_bytes(
            "/sandbox/bank/statement", params={"currency": currency, "day": day.isoformat()}
        )

    def bank_statements(self, currency: str, first: date, last: date) -> dict[date, bytes]:
        """One camt.053 statement per day from ``first`` to ``last``, each opening where the one
        before closed (a folder of them is what ``--bank`` reads)."""
        days = (last - first).days + 1
        return {
            day: self.bank_statement(day, currency) for day in (first + timedelta(n) for n in range(days))
        }

    def write_bank_statements(self, folder: str | Path, currency: str, first: date, last: date) -> list[Path]:
        """``bank_statements`` written to ``folder`` as ``camt053_<CUR>_<YYYYMMDD>.xml``."""
        target = Path(folder)
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for day, body in self.bank_statements(currency, first, last).items():
            path = target / f"camt053_{currency}_{day:%Y%m%d}.xml"
            path.write_bytes(body)
            written.append(path)
        return written

    def lose_payout(self, payout_id: str) -> dict[str, Any]:
        """The bank loses the payout: no statement ever shows it. Returns the payout's control."""
        return self._bank_payout(payout_id, "lose", None)

    def delay_payout(self, payout_id: str, days: int) -> dict[str, Any]:
        """The bank books the payout ``days`` business days after its payout day."""
        return self._bank_payout(payout_id, "delay", BankDelayRequest.build({"days": days}))

    def change_payout(self, payout_id: str, amount: Decimal | str | int) -> dict[str, Any]:
        """The bank books the payout for ``amount`` (in its currency) instead."""
        body = BankChangeRequest.build({"amount": Decimal(str(amount))})
        return self._bank_payout(payout_id, "change", body)

    def add_bank_deposit(
        self,
        currency: str,
        amount: Decimal | str | int,
        *,
        day: date | None = None,
        counterparty: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any]:
        """The bank books a credit no payout explains (from the processor's name by default)."""
        fields = {
            "currency": currency,
            "amount": Decimal(str(amount)),
            "counterparty": counterparty,
            "text": text,
        }
        fields["day"] = None if day is None else day.isoformat()
        body = BankDepositRequest.build(fields)
        data: dict[str, Any] = self.client.call("POST", "/sandbox/bank/deposits", json=_wire(body))
        return data

    def bank_controls(self) -> dict[str, Any]:
        """The payouts the bank loses, delays or changes, and the deposits it books."""
        data: dict[str, Any] = self.client.call("GET", "/sandbox/bank/controls")
        return data

    def clear_bank_controls(self) -> int:
        """Every payout arrives as paid out again, and the deposits go; returns how many there were."""
        return int(self.client.call("DELETE", "/sandbox/bank/controls")["cleared"])

    def _bank_payout(self, payout_id: str, action: str, body: BaseModel | None) -> dict[str, Any]:
        segment = path_segment(payout_id, "payout id")
        path = f"/sandbox/bank/payouts/{segment}/{action}"
        data: dict[str, Any] = self.client.call("POST", path, json=None if body is None else _wire(body))
        return data

    # -- faults on demand and the request log -----------------------------------------------------

    def add_fault(
        self, request: FaultRuleRequest | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> FaultRule:
        """Add a fault rule (``route``, ``mode``, ``count`` or ``probability`` + ``seed``, ``delayMs``,
        ``status``, ``retryAfter``); checked here before it is sent."""
        body = FaultRuleRequest.build(merge_fields(request, fields))
        return FaultRule.model_validate(self.client.call("POST", "/sandbox/faults", json=_wire(body)))

    def faults(self) -> pd.DataFrame:
        """The fault rules in the order they are tried, with how often each was tried and has fired."""
        rules = [FaultRule.model_validate(r) for r in self.client.call("GET", "/sandbox/faults")["faults"]]
        frame = pd.DataFrame([r.model_dump() for r in rules], columns=list(FAULT_COLUMNS))
        for column in ("count", "remaining", "seed", "delayMs", "status", "retryAfter", "matched", "fired"):
            frame[column] = frame[column].astype("Int64")
        frame["createTime"] = pd.to_datetime(frame["createTime"].astype("Int64"), unit="ms", utc=True)
        return frame.set_index("id")

    def clear_faults(self) -> int:
        """Remove every fault rule; returns how many there were."""
        return int(self.client.call("DELETE", "/sandbox/faults")["cleared"])

    def requests(self, limit: int = 100) -> pd.DataFrame:
        """The request log, newest first: method, path, status, latency, merchantReferenceId, fault."""
        records = self.client.call("GET", "/sandbox/requests", params={"limit": str(limit)})["requests"]
        frame = pd.DataFrame.from_records(records, columns=list(REQUEST_COLUMNS))
        frame["time"] = pd.to_datetime(frame["time"].astype("Int64"), unit="ms", utc=True)
        frame["status"] = frame["status"].astype("Int64")
        frame["latencyMs"] = frame["latencyMs"].astype("float64")
        for column in ("method", "path", "merchantReferenceId", "fault", "faultId"):
            frame[column] = frame[column].astype("string")
        return frame


def _utc(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


def _wire(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="python", exclude_none=True)
    return data
