"""A payout reconciliation recorded as a run of a track: its exceptions get ids, states (new,
open, acknowledged) and ages, and what left them is resolved, as a payment run's do
(``tracking``), in a track of its own.

The payout run's exceptions are rows of ``exceptions.csv`` (``report.exception_rows``), each
known by its own id: the payout and its currency (``payout:po_...:EUR``), the bank's entry
reference (``bank:...``), the books' row (``books:28``) or a statement gap. That id is the key the
track's ``exceptionId`` is made of, with the category, so an acknowledgement of a payout missing
in the bank never covers the same payout missing in the books. Its facts are the amount and the
currency: an acknowledged payout whose amount changes is open again. Payouts in transit are
information, not tracked, as a payment in transit is. A track keeps one kind of run: a payment
track refuses a payout run, and the other way round (``recording``'s ``kind``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from toolkit.reconcile.inputs import LoadedInput
from toolkit.reconcile.payouts import PayoutReconciliation
from toolkit.reconcile.payouts.report import exception_rows
from toolkit.reconcile.result import LazyRows, ReconciliationResult
from toolkit.reconcile.schema import EXCEPTION_COLUMNS, REJECTED_COLUMNS, SUMMARY_COLUMNS
from toolkit.reconcile.tracking.model import Tracking
from toolkit.reconcile.tracking.record import recording

#: The kind of run a payout track holds (a payment track's is ``payments``).
PAYOUT_RUNS = "payouts"


def as_exceptions(result: PayoutReconciliation) -> pd.DataFrame:
    """The payout run's exception rows (``exception_rows``, in their order) as a payment run's
    exceptions frame (``EXCEPTION_COLUMNS``): the row's own id as the key, the amount and currency
    on the processor's side, in transit as information."""
    rows = exception_rows(result)
    frame = pd.DataFrame(
        {
            "merchantReferenceId": [row["exception_id"] for row in rows],
            "category": [row["category"] for row in rows],
            "kind": "",
            "processor_amount": [Decimal(row["amount"]) if row["amount"] else None for row in rows],
            "processor_currency": [row["currency"] or None for row in rows],
            "source": "",
            "source_row": np.zeros(len(rows), dtype=np.int64),
            "detail": [row["detail"] for row in rows],
            "severity": ["info" if row["category"] == "in_transit" else "exception" for row in rows],
        },
        dtype=object,
    )
    return frame.reindex(columns=list(EXCEPTION_COLUMNS)).astype({"source_row": np.int64})


@contextmanager
def recording_payouts(
    result: PayoutReconciliation,
    track: str,
    *,
    inputs: Sequence[LoadedInput] = (),
    home: str | Path | None = None,
    output_dir: str | Path | None = None,
) -> Iterator[Tracking]:
    """Record ``result`` as a run of ``track`` (as of its cut-off, the end of that day) and yield
    the states of its exceptions; the run is committed when the block ends, and nothing is when
    it raises (a report that cannot be written)."""
    exceptions = as_exceptions(result)
    matched = result.counts()["matched"]
    as_run = ReconciliationResult(
        summary=pd.DataFrame({c: [] for c in SUMMARY_COLUMNS}),
        exceptions=exceptions,
        matched_rows=LazyRows(matched, lambda: pd.DataFrame()),
        rejected=pd.DataFrame({c: [] for c in REJECTED_COLUMNS}),
        counts=(),
    )
    cut_off = result.as_of.isoformat()  # a bare date: the end of that day, as for a payment run
    with recording(
        as_run, track, as_of=cut_off, inputs=inputs, home=home, output_dir=output_dir, kind=PAYOUT_RUNS
    ) as tracked:
        assert tracked.tracking is not None
        yield tracked.tracking
