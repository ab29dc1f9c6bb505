"""The shapes of the sandbox-only controls under /sandbox/ (not part of the service's API): their
request bodies and the fault rule as they answer it.

Shared, like ``toolkit.models``, by the two sides: the sandbox, which checks them, and
``SandboxControls``, which checks them before sending. They use the strict request base of
``toolkit.models``: unknown fields are refused and errors name the field, like the spec's own
requests.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr, model_validator
from pydantic_core import PydanticCustomError

from toolkit.models import AUTO_INSTRUMENT_METHODS, Method, PaymentMethodType, RequestModel
from toolkit.money import MAX_DECIMALS, MAX_REQUEST_AMOUNT, decimal_places, fits_currency, is_currency

_INT32 = 2**31 - 1


#: A payout as GET /sandbox/payouts lists it (the sandbox's route and ``SandboxControls.payouts``).
PAYOUT_COLUMNS: tuple[str, ...] = (
    "payoutId",
    "currency",
    "payoutDate",
    "status",
    "payments",
    "gross",
    "fee",
    "net",
    "statementDescriptor",
)


class ScheduledPhaseRequest(RequestModel):
    """From cycle ``effectiveCycle`` on, bill ``priceSnapshotId`` and/or ``quantity`` instead."""

    effectiveCycle: int = Field(ge=1, le=100_000)
    priceSnapshotId: str | None = None
    quantity: int | None = Field(default=None, ge=1, le=1_000_000)
    sequence: int | None = Field(default=None, ge=0, le=_INT32)
    metadata: dict[str, StrictStr] | None = None


class SubscriptionCreateRequest(RequestModel):
    """POST /sandbox/subscriptions: the customer is given as in POST /payment."""

    customerId: str | None = None
    customerEmail: str | None = None
    referenceCustomerId: str | None = None
    productId: str = Field(min_length=1)
    priceId: str = Field(min_length=1)
    quantity: int = Field(default=1, ge=1, le=1_000_000)
    merchantReference: str | None = None
    paymentMethodType: Method = PaymentMethodType.CARD
    paymentInstrumentId: str | None = None
    metadata: dict[str, StrictStr] | None = None
    scheduledPhases: list[ScheduledPhaseRequest] | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if not (self.customerId or self.customerEmail or self.referenceCustomerId):
            raise PydanticCustomError(
                "customer", "customerId, customerEmail or referenceCustomerId: at least one is required"
            )
        if self.paymentInstrumentId is None and self.paymentMethodType not in AUTO_INSTRUMENT_METHODS:
            raise PydanticCustomError(
                "instrument",
                "paymentInstrumentId: required for {method}",
                {"method": self.paymentMethodType.value},
            )
        return self


class CancelRequest(RequestModel):
    """POST /sandbox/subscriptions/{id}/cancel: at the end of the current period (default) or now."""

    atPeriodEnd: bool = True
    reason: str | None = Field(default=None, max_length=500)


class ClockAdvanceRequest(RequestModel):
    """POST /sandbox/clock/advance: the parts are added up; the clock never goes back."""

    milliseconds: int = Field(default=0, ge=0, le=10**13)
    seconds: int = Field(default=0, ge=0, le=10**10)
    minutes: int = Field(default=0, ge=0, le=10**9)
    hours: int = Field(default=0, ge=0, le=10**8)
    days: int = Field(default=0, ge=0, le=10**6)

    @property
    def total_ms(self) -> int:
        """The whole advance in milliseconds."""
        return (
            self.milliseconds
            + 1000 * self.seconds
            + 60_000 * self.minutes
            + 3_600_000 * self.hours
            + 86_400_000 * self.days
        )


class ResolveRequest(RequestModel):
    """POST /sandbox/payments/{orderId}/resolve: settle a pending or next-action payment."""

    status: Literal["success", "failure"]


# ---------------------------------------------------------------------------------------------
# fault rules (``toolkit.sandbox.faults``)

FaultRoute = Literal["POST /payment", "POST /product", "GET /subscription", "*"]
FaultMode = Literal["delay", "error", "drop_before_commit", "drop_after_commit", "hang_after_commit"]
FAULT_ROUTES: tuple[str, ...] = FaultRoute.__args__  # type: ignore[attr-defined]
FAULT_MODES: tuple[str, ...] = FaultMode.__args__  # type: ignore[attr-defined]
#: Statuses an ``error`` rule may answer: the transient ones a client is expected to survive.
FAULT_STATUSES: tuple[int, ...] = (408, 429, *range(500, 600))
#: Statuses an ``error`` rule may give a ``retryAfter`` with.
RETRY_AFTER_STATUSES: tuple[int, ...] = (429, 503)
MAX_DELAY_MS = 60_000
MAX_RETRY_AFTER_S = 3600
#: The fields every mode takes besides ``route`` and ``mode``: which requests meet the fault.
SELECTION_FIELDS: tuple[str, ...] = ("count", "probability", "seed")
#: The fields only some modes take.
MODE_SPECIFIC_FIELDS: tuple[str, ...] = ("delayMs", "status", "retryAfter")
#: Which optional field each mode takes (``delayMs``: delay; ``status``, ``retryAfter``: error).
MODE_FIELDS: dict[str, frozenset[str]] = {
    "delay": frozenset({"delayMs"}),
    "error": frozenset({"status", "retryAfter"}),
    "drop_before_commit": frozenset(),
    "drop_after_commit": frozenset(),
    "hang_after_commit": frozenset(),
}
#: Which of them each mode requires.
MODE_REQUIRED: dict[str, frozenset[str]] = {mode: frozenset() for mode in MODE_FIELDS} | {
    "delay": frozenset({"delayMs"})
}
#: The largest exponent of an integer written as a number with a point (``3.0``, ``3E2``).
_MAX_INTEGER_EXPONENT = 18


def _json_integer(value: Any) -> Any:
    """Integers only, as JSON Schema reads them: ``3`` or ``3.0``, never true/false or "3"
    (pydantic's lax mode would take those); a number with a point must have no fraction."""
    if isinstance(value, float | Decimal) and not isinstance(value, bool):
        exact = Decimal(str(value)) if isinstance(value, float) else value
        if (
            exact.is_finite()
            and exact.adjusted() <= _MAX_INTEGER_EXPONENT
            and exact == exact.to_integral_value()
        ):
            return int(exact)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("integer", "must be a JSON integer")
    return value


def _json_number(value: Any) -> Any:
    """Numbers only (a float from Python is read as the decimal it prints as)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise PydanticCustomError("number", "must be a JSON number")
    return Decimal(str(value)) if isinstance(value, float) else value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
JsonNumber = Annotated[Decimal, BeforeValidator(_json_number), Field(allow_inf_nan=False)]


class FaultRuleRequest(RequestModel):
    """POST /sandbox/faults: which requests (``count`` next ones, else ``probability`` with ``seed``)
    meet which fault. With neither ``count`` nor ``probability``, the next matching request does."""

    route: FaultRoute
    mode: FaultMode
    count: JsonInt | None = Field(default=None, ge=1, le=1_000_000)
    probability: JsonNumber | None = Field(default=None, gt=0, le=1)
    seed: JsonInt | None = Field(default=None, ge=0, le=2**63 - 1)
    delayMs: JsonInt | None = Field(default=None, ge=0, le=MAX_DELAY_MS)
    status: JsonInt | None = None
    retryAfter: JsonInt | None = Field(default=None, ge=0, le=MAX_RETRY_AFTER_S)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.count is not None and self.probability is not None:
            raise PydanticCustomError("fault", "count, probability: give one of them, not both")
        if self.probability is not None and self.seed is None:
            raise PydanticCustomError("fault", "seed: required with probability (it fixes the sequence)")
        if self.seed is not None and self.probability is None:
            raise PydanticCustomError("fault", "seed: only taken with probability")
        taken = MODE_FIELDS[self.mode]
        for name in MODE_SPECIFIC_FIELDS:
            if getattr(self, name) is not None and name not in taken:
                raise PydanticCustomError(
                    "fault", "{field}: not taken by mode {mode}", {"field": name, "mode": self.mode}
                )
        for name in sorted(MODE_REQUIRED[self.mode]):
            if getattr(self, name) is None:
                raise PydanticCustomError(
                    "fault", "{field}: required by mode {mode}", {"field": name, "mode": self.mode}
                )
        if self.status is not None and self.status not in FAULT_STATUSES:
            raise PydanticCustomError("fault", "status: must be 408, 429 or 500-599")
        if self.retryAfter is not None and self.status not in RETRY_AFTER_STATUSES:
            raise PydanticCustomError("fault", "retryAfter: only taken with status 429 or 503")
        return self

    @property
    def answered_status(self) -> int | None:
        """The status an ``error`` rule answers (500 when none was given)."""
        return (self.status or 500) if self.mode == "error" else None

    @property
    def answered_retry_after(self) -> int | None:
        """Retry-After of an ``error`` rule: as given, else 1 s for a 429 (which always carries one)."""
        if self.retryAfter is None and self.answered_status == 429:
            return 1
        return self.retryAfter


class FaultRule(BaseModel):
    """A fault rule as GET /sandbox/faults lists it: what it does, and how often it has fired.

    ``count`` is what was asked, ``remaining`` what is left of it (both null for a ``probability``
    rule); ``matched`` counts the requests it was tried on, ``fired`` those it applied to.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    route: str
    mode: str
    count: int | None = None
    remaining: int | None = None
    probability: Decimal | None = None
    seed: int | None = None
    delayMs: int | None = None
    status: int | None = None
    retryAfter: int | None = None
    matched: int
    fired: int
    createTime: int


# ---------------------------------------------------------------------------------------------
# the sandbox's bank (``toolkit.sandbox.bank``): what a payout becomes on its way to the account

#: How many business days a payout may be held back at most.
MAX_BANK_DELAY_DAYS = 30
#: The longest remittance text a camt.053 entry carries (``Ustrd``: 140 characters).
MAX_REMITTANCE = 140
_DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _bank_amount_digits(amount: Decimal) -> None:
    if decimal_places(amount) > MAX_DECIMALS:
        raise PydanticCustomError("amount", "amount: at most {digits} decimals", {"digits": MAX_DECIMALS})


class BankDelayRequest(RequestModel):
    """POST /sandbox/bank/payouts/{payoutId}/delay: the payout is booked ``days`` business days
    (Monday to Friday) after its payout day instead of on it."""

    days: JsonInt = Field(ge=1, le=MAX_BANK_DELAY_DAYS)


class BankChangeRequest(RequestModel):
    """POST /sandbox/bank/payouts/{payoutId}/change: the bank books the payout for ``amount`` (in
    the payout's currency, with at most its decimals) instead of what the processor paid out."""

    amount: JsonNumber = Field(gt=0, lt=MAX_REQUEST_AMOUNT)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        _bank_amount_digits(self.amount)
        return self


class BankDepositRequest(RequestModel):
    """POST /sandbox/bank/deposits: a credit no payout explains, booked on ``day`` (default: the
    sandbox's today), from ``counterparty`` (default the sandbox's processor name) with ``text``."""

    currency: str = Field(pattern=r"^[A-Z]{3}$")
    amount: JsonNumber = Field(gt=0, lt=MAX_REQUEST_AMOUNT)
    day: str | None = Field(default=None, pattern=_DAY_PATTERN, json_schema_extra={"format": "date"})
    counterparty: str | None = Field(default=None, min_length=1, max_length=70)
    text: str | None = Field(default=None, min_length=1, max_length=MAX_REMITTANCE)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if not is_currency(self.currency):
            raise PydanticCustomError("currency", "currency: not an ISO 4217 code")
        if not fits_currency(self.amount, self.currency):
            raise PydanticCustomError(
                "amount", "amount: more decimals than {currency} has", {"currency": self.currency}
            )
        if self.day is not None:
            try:
                date.fromisoformat(self.day)
            except ValueError:
                raise PydanticCustomError("day", "day: not a date (YYYY-MM-DD)") from None
        return self

    @property
    def booking_day(self) -> date | None:
        """``day`` as a date (None: the sandbox's today)."""
        return None if self.day is None else date.fromisoformat(self.day)
