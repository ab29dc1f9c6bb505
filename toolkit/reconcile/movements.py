"""The kinds of movement an input row is, and the words files use for them.

A processor's export is not only charges: refunds, chargebacks (dispute withdrawals) and their
reversals, fees, payouts and adjustments are rows too; a ledger books credit notes. Each row is a
movement of one kind, from the file's own vocabulary (a ``type`` column: Stripe's
``reporting_category``, Adyen's ``Type``), else from its sign (a negative amount on an order's
key is money returned). A leaf, like ``schema.py``: the checks, the engine and the renderers read
it without loading each other.

- ``payment``, and the money returned on an order (``refund``, ``chargeback``,
  ``chargeback_reversal``, and ``returned``: a negative amount whose file does not say which),
  are reconciled by the order's key: payments as payments, the money returned as its own total
  per key and currency (``RETURNED``).
- ``fee``, ``payout`` and ``adjustment`` are not an order's: totalled per currency, never
  rejected for want of a key or a status (``APART``).
"""

from __future__ import annotations

import pyarrow as pa

#: Every kind, in the order of their ``_kind`` codes in the engine.
KINDS: tuple[str, ...] = (
    "payment",
    "refund",
    "chargeback",
    "chargeback_reversal",
    "returned",
    "fee",
    "payout",
    "adjustment",
)

#: The money returned on an order: reconciled as one total per key and currency, apart from its
#: payments (a ledger rarely says refund or chargeback: a credit note is money returned).
RETURNED: tuple[str, ...] = ("refund", "chargeback", "chargeback_reversal", "returned")

#: Movements that are no order's: totalled, not reconciled by key.
APART: tuple[str, ...] = ("fee", "payout", "adjustment")

#: Kinds whose amount is money out of the merchant's hands whatever sign the file writes it with
#: (a refund row of ``30.00`` in a ``Type`` column is ``-30.00``), and the one that is money back.
OUTGOING: tuple[str, ...] = ("refund", "chargeback")
INCOMING: tuple[str, ...] = ("chargeback_reversal",)


def code(kind: str) -> int:
    """The ``_kind`` code of ``kind`` in the engine."""
    return KINDS.index(kind)


def codes(kinds: tuple[str, ...]) -> str:
    """``kinds`` as a list of codes for a SQL ``IN``."""
    return ", ".join(str(code(kind)) for kind in kinds)


#: How files name each kind (compared in lower case, with spaces and dashes as underscores):
#: Stripe's ``reporting_category`` (docs.stripe.com/reports/reporting-categories), Adyen's record
#: types of the settlement details report, and the words of books (invoice, credit note).
VOCABULARY: dict[str, tuple[str, ...]] = {
    "payment": (
        "payment",
        "charge",
        "sale",
        "settled",
        "capture",
        "captured",
        "invoice",
        "sales_invoice",
        "receipt",
    ),
    "refund": ("refund", "refunded", "credit_note", "credit_memo", "refund_failure_reversal"),
    "chargeback": ("chargeback", "dispute", "disputed", "secondchargeback", "second_chargeback"),
    "chargeback_reversal": (
        "chargeback_reversal",
        "chargebackreversed",
        "dispute_reversal",
        "dispute_won",
    ),
    "returned": ("returned",),
    "fee": ("fee", "fees", "commission", "network_cost", "invoicededuction", "stripe_fee"),
    "payout": ("payout", "merchantpayout", "payout_reversal", "payout_failure", "transfer", "bank_transfer"),
    "adjustment": (
        "adjustment",
        "other_adjustment",
        "balance_adjustment",
        "depositcorrection",
        "balancetransfer",
        "reserveadjustment",
        "refundedreversed",
        "refund_failure",
        "chargebackreversedcorrection",
    ),
}

#: The names a file gives its column of movement kinds (compared in lower case).
TYPE_COLUMNS: tuple[str, ...] = (
    "type",
    "kind",
    "movement",
    "reporting_category",
    "record type",
    "transaction type",
)


def normalised(written: str) -> str:
    """A kind's name as ``VOCABULARY`` writes it: lower case, spaces and dashes as underscores."""
    return "_".join(written.strip().lower().replace("-", " ").split())


def vocabulary_table(own: dict[str, str] | None = None) -> pa.Table:
    """Each word of ``VOCABULARY`` with its kind's code, for the checks to join; ``own``: an
    export layout's words (normalised) and their kinds, over those."""
    words = {word: kind for kind, said in VOCABULARY.items() for word in said} | (own or {})
    return pa.table(
        {
            "_word": list(words),
            "_word_kind": pa.array([code(kind) for kind in words.values()], pa.int8()),
        }
    )


#: What a returned movement's key starts with in the engine (``checks.check_payments``): a space,
#: which no trimmed key starts with, then its currency's three letters, so that money returned on
#: an order pairs apart from its payments, a total per key and currency, with one join on the key.
RETURNED_MARK = " "

#: The length of the mark and the currency before the key of money returned.
_MARKED = len(RETURNED_MARK) + 3


def returned_key(key: str, currency: str) -> str:
    """SQL: the engine's key of money returned on ``key`` in ``currency`` (an ISO code)."""
    return f"'{RETURNED_MARK}' || {currency} || {key}"


def shown_key(key: str) -> str:
    """SQL: the order's key as written, of the engine's key ``key`` (the mark and currency of
    money returned taken off)."""
    return f"CASE WHEN {is_returned(key)} THEN SUBSTRING({key}, {_MARKED + 1}) ELSE {key} END"


def kind_name(kind: str) -> str:
    """SQL: the name of the ``_kind`` code ``kind``."""
    names = " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(KINDS))
    return f"CASE {kind} {names} END"


def shown(key: str) -> str:
    """The order's key as written, of an engine's key read into Python."""
    return key[_MARKED:] if key.startswith(RETURNED_MARK) else key


def is_returned(key: str) -> str:
    """SQL: whether the engine's key ``key`` is a key's money returned (not its payments)."""
    return f"STARTS_WITH({key}, '{RETURNED_MARK}')"
