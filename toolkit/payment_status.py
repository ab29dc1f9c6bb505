"""The payment statuses of the API: codes and names, apart from the pydantic models.

The reconciliation engine reads statuses but never a model; keeping them here spares every
``toolkit reconcile`` the models' import (pydantic builds them at import, about 0.15 s).
``toolkit.models`` imports them from here, so both names keep working.
"""

from __future__ import annotations

from enum import IntEnum


class PaymentStatus(IntEnum):
    """Field ``status`` of the payment result."""

    SUCCESS = 1
    PENDING = 2
    FAILURE = 3
    NEXT_ACTION = 5

    @property
    def label(self) -> str:
        """The lowercase name used in frames and reports (``next_action``)."""
        return self.name.lower()

    def __str__(self) -> str:
        """``print(result.status)`` says ``next_action (5)``, not a bare ``5``; JSON keeps the number."""
        return f"{self.label} ({self.value})"


#: The API's status codes and their names, from ``PaymentStatus`` (the one place they are written).
PAYMENT_STATUS_LABELS: dict[int, str] = {status.value: status.label for status in PaymentStatus}

#: Status names used in frames, exports and reports; ``unknown`` is the journal's own (no outcome known).
PAYMENT_STATUS_NAMES: tuple[str, ...] = ("success", "pending", "failure", "next_action", "unknown")


__all__ = ["PAYMENT_STATUS_LABELS", "PAYMENT_STATUS_NAMES", "PaymentStatus"]
