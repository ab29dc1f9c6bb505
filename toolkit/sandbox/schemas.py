"""Bodies of the sandbox-only controls under /sandbox/ (not part of the service's API).

They use the shared strict request base of ``toolkit.models``: unknown fields are refused and
errors name the field, like the spec's own requests.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, StrictStr, model_validator
from pydantic_core import PydanticCustomError

from toolkit.models import AUTO_INSTRUMENT_METHODS, Method, PaymentMethodType, RequestModel

_INT32 = 2**31 - 1


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
                "instrument", "paymentInstrumentId: required for {method}",
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
        return (self.milliseconds + 1000 * self.seconds + 60_000 * self.minutes
                + 3_600_000 * self.hours + 86_400_000 * self.days)


class ResolveRequest(RequestModel):
    """POST /sandbox/payments/{orderId}/resolve: settle a pending or next-action payment."""

    status: Literal["success", "failure"]
