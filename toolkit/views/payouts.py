"""The payout reconciliation notebook's side: where its payouts and bank statements come from (the
files given, or the sandbox's own), its threshold, and the controller's tables.

On a sandbox the notebook reads what a controller would download: the processor's payout report
and the bank's daily camt.053 statements, written into the run's folder (so the report names real
files and a second look reads the same ones), from the first paid payout's day to the cut-off.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import InputError, NotebookFailure

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

    from toolkit.controls import SandboxControls
    from toolkit.reconcile.inputs import LoadedInput
    from toolkit.reconcile.payouts import PayoutReconciliation

#: The name the sandbox's bank gives the processor (``toolkit.sandbox.payouts.PROCESSOR_NAME``, kept
#: equal by a test): its payouts' and stray deposits' counterparty, which no list of processors knows.
SANDBOX_COUNTERPARTY = "SANDBOX PAYMENTS"
#: The sandbox's payout report as the run writes it (``payouts.csv`` is the report's own file).
PROCESSOR_FILE = "processor_payouts.csv"
#: The folder of the run where the sandbox's statements go.
STATEMENT_FOLDER = "statements"


@dataclass(frozen=True)
class PayoutInputs:
    """What a payout run reads: the processor's export, the bank's statements (files, folders or
    globs; none when the sandbox paid nothing out yet), where they came from, the cut-off and the
    names of the processor in the bank's text."""

    processor: str
    bank: tuple[str, ...]
    label: str
    as_of: datetime | str | None
    counterparties: tuple[str, ...]
    #: The temporary folder the sandbox's files went to when no report is written (removed once
    #: they are read).
    scratch: Path | None = None


def names(text: str) -> tuple[str, ...]:
    """``counterparty``: names, comma-separated (blank: none)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def holiday_dates(text: str) -> tuple[date, ...]:
    """``holidays``: as ``toolkit reconcile payouts --holidays`` reads them."""
    from toolkit.reconcile.payouts import holiday_dates as read

    return read(text, "holidays")


def payout_books(ledger_path: str, ledger_currency: str) -> LoadedInput | None:
    """``ledger_path``: the books whose payout bookings are compared too, read as ``toolkit
    reconcile payouts --ledger`` reads them, ``ledger_currency`` the currency of books that name
    none (``--ledger-currency``, checked as the payment notebook checks it); None when blank."""
    from toolkit.reconcile.inputs import load_ledger
    from toolkit.views.reading import reading_options

    if not ledger_path.strip():
        return None
    currency = reading_options(currency=ledger_currency)["currency"]
    return load_ledger(ledger_path.strip(), carry=False, currency=currency)


def payout_inputs(
    processor_path: str, bank_path: str, *, as_of: str, counterparty: str, output_dir: str | Path | None
) -> PayoutInputs:
    """The files given, or (both blank) the sandbox's payout report and statements written into
    ``output_dir`` (a temporary folder when it is blank)."""
    if processor_path.strip() and bank_path.strip():
        label = f"processor file {Path(processor_path).name}; bank statements {Path(bank_path).name}"
        return PayoutInputs(processor_path, (bank_path,), label, as_of.strip() or None, names(counterparty))
    if processor_path.strip() or bank_path.strip():
        raise InputError("processor_path and bank_path go together: give both, or neither (the sandbox's)")
    return _sandbox_inputs(as_of, names(counterparty), output_dir)


def _sandbox_inputs(
    as_of: str, counterparties: tuple[str, ...], output_dir: str | Path | None
) -> PayoutInputs:
    """The sandbox's payout report and the statements of every account it paid into (or booked a
    deposit in), one a day from the first paid payout's day to the cut-off (the sandbox's now
    when ``as_of`` is blank; no statement of a day after the sandbox's today exists)."""
    from toolkit.client import Client
    from toolkit.controls import SandboxControls
    from toolkit.errors import SandboxError
    from toolkit.reconcile.timing import parse_as_of

    with Client() as client:
        try:
            controls = SandboxControls(client)
        except SandboxError:
            raise InputError(
                f"{client.base_url} is no sandbox: give the processor's payout export (processor_path) "
                "and the bank's statements (bank_path)"
            ) from None
        now = controls.now()
        cutoff = parse_as_of(as_of) if as_of.strip() else now
        last = min(cutoff.date(), now.date())
        given = output_dir is not None and bool(str(output_dir).strip())
        folder = Path(str(output_dir)) if given else Path(tempfile.mkdtemp(prefix="toolkit-payouts-"))
        processor, bank = _download(controls, folder, last)
        label = f"{client.environment.label}: its payout report and bank statements"
    everyone = (SANDBOX_COUNTERPARTY, *counterparties)
    return PayoutInputs(str(processor), bank, label, cutoff, everyone, None if given else folder)


def _download(controls: SandboxControls, folder: Path, last: date) -> tuple[Path, tuple[str, ...]]:
    """Write the payout report and the statements into ``folder`` (only files the toolkit wrote
    there are replaced); returns their paths."""
    from toolkit.output_record import claim
    from toolkit.outputs import ensure_directory, write_bytes_atomic

    payouts = controls.payouts()
    paid = payouts[payouts["status"] == "paid"]
    deposits = [d for d in controls.bank_controls()["deposits"] if date.fromisoformat(d["day"]) <= last]
    currencies = sorted({*paid["currency"], *(str(d["currency"]) for d in deposits)})
    days = [*paid["payoutDate"], *(date.fromisoformat(d["day"]) for d in deposits)]
    first = min([*days, last])
    files = {PROCESSOR_FILE: controls.payout_report_csv()}
    for currency in currencies:
        for day, body in controls.bank_statements(currency, first, last).items():
            files[f"{STATEMENT_FOLDER}/camt053_{currency}_{day:%Y%m%d}.xml"] = body
    ensure_directory(folder)
    record = claim(folder, files)
    for name, body in files.items():
        ensure_directory((folder / name).parent)
        write_bytes_atomic(folder / name, body)
    record.updated(files)
    return folder / PROCESSOR_FILE, tuple(str(folder / name) for name in files if name != PROCESSOR_FILE)


def reconcile_inputs(
    inputs: PayoutInputs,
    *,
    window: str,
    holidays: Sequence[date],
    backend: str,
    books: LoadedInput | None = None,
) -> PayoutReconciliation:
    """``reconcile_payouts`` of the inputs (and of the books, given: ``payout_books``); a sandbox
    that paid nothing out yet (no statement to read) gives an empty reconciliation, which the
    threshold refuses to pass."""
    from toolkit.reconcile.payouts import PayoutReconciliation, business_days, reconcile_payouts
    from toolkit.reconcile.timing import parse_as_of

    try:
        if inputs.bank:
            return reconcile_payouts(
                inputs.processor,
                list(inputs.bank),
                window=window,
                as_of=inputs.as_of,
                holidays=holidays,
                counterparties=inputs.counterparties,
                backend=backend,
                ledger=books,
            )
    finally:
        if inputs.scratch is not None:
            shutil.rmtree(inputs.scratch, ignore_errors=True)
    return PayoutReconciliation(
        payouts=(),
        totals=(),
        unexplained=(),
        gaps=(),
        other_entries=0,
        bank_entries=0,
        as_of=parse_as_of(inputs.as_of or datetime.now(UTC)).date(),
        window=business_days(window, "window"),
        sources=(inputs.processor,),
    )


def check_payout_threshold(result: PayoutReconciliation, max_exceptions: int) -> str:
    """The run's result in words; ``NotebookFailure`` (exit 1) past ``max_exceptions`` (-1: no
    threshold), ``InputError`` (exit 2) when a threshold is set and there was nothing to compare."""
    found = result.result_text()
    if max_exceptions < 0:
        return f"{found}, no threshold set"
    if not result.payouts and not result.bank_entries:
        raise InputError(f"no payout and no bank entry; max_exceptions={max_exceptions} cannot pass it")
    if result.exception_count > max_exceptions:
        raise NotebookFailure(f"{found}, more than max_exceptions={max_exceptions}")
    return f"{found}, within max_exceptions={max_exceptions}"


# ---------------------------------------------------------------------------------------------
# The controller's tables

#: The payouts table's columns (``payouts.csv``'s names) and the words the notebook shows for them.
_PAYOUT_COLUMNS = {
    "payout": "payout",
    "currency": "currency",
    "paid_out": "paid out",
    "paid_on": "paid on",
    "items": "items",
    "outcome": "outcome",
    "bank_reference": "bank reference",
    "bank_booking_date": "booked",
    "bank_amount": "bank amount",
}
#: Its columns of the books, when they were compared.
_BOOKS_COLUMNS = {"books_outcome": "in the books", "books_date": "booked on", "books_amount": "booked amount"}


def payouts_table(result: PayoutReconciliation) -> Styler:
    """Every payout: what it paid out and when, whether its items add up, and where the bank shows
    it (the entry's reference and booking date, to tick it off); given the books, where they show
    it (``books_outcome``: booked, not booked, ...)."""
    from toolkit.reconcile.payouts import payout_table
    from toolkit.reconcile.payouts.report import OUTCOME_WORDS
    from toolkit.views.tables import table

    frame = payout_table(result).to_pandas()
    frame["outcome"] = [OUTCOME_WORDS.get(o, o) for o in frame["outcome"]]
    frame["items"] = [f"{n}, {state}" for n, state in zip(frame["items"], frame["items_state"], strict=True)]
    columns = _PAYOUT_COLUMNS | (_BOOKS_COLUMNS if result.books is not None else {})
    frame = frame[list(columns)].rename(columns=columns).set_index("payout")
    money = {name: "currency" for name in ("paid out", "bank amount", "booked amount") if name in frame}
    return table(frame, money=money)


#: The totals' columns: outcomes summed together, in the order a controller reads them.
_TOTALS = {
    "in the bank": ("matched",),
    "in transit": ("in_transit",),
    "exceptions": ("payout_missing_in_bank", "payout_amount_mismatch", "payout_ambiguous"),
    "failed": ("failed",),
}


def currency_totals(result: PayoutReconciliation) -> pd.DataFrame:
    """Per currency: how many payouts, what they paid out, and how much of it is in the bank, in
    transit or an exception; then the deposits no payout explains. Exact amounts."""
    import pandas as pd

    rows: dict[str, dict[str, object]] = {}
    for line in result.payouts:
        row = rows.setdefault(line.currency, _totals_row(line.currency))
        row["payouts"] = int(str(row["payouts"])) + 1
        row["paid out"] = Decimal(str(row["paid out"])) + line.paid_out
        column = next((c for c, outcomes in _TOTALS.items() if line.outcome in outcomes), "exceptions")
        row[column] = Decimal(str(row[column])) + line.paid_out
    for entry in result.unexplained:
        row = rows.setdefault(str(entry["currency"]), _totals_row(str(entry["currency"])))
        row["unexplained deposits"] = Decimal(str(row["unexplained deposits"])) + Decimal(
            str(entry["amount"])
        )
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=object).sort_index()
    frame.index.name = "currency"
    return frame


def _totals_row(currency: str) -> dict[str, object]:
    """A currency's row before its payouts are added: nothing, in its minor units (0.00 EUR)."""
    from toolkit.money import from_minor

    zero = from_minor(0, currency)
    return {"payouts": 0, "paid out": zero, **dict.fromkeys(_TOTALS, zero), "unexplained deposits": zero}


def exceptions_by_category(result: PayoutReconciliation) -> dict[str, pd.DataFrame]:
    """``exceptions.csv``'s rows by category (exceptions first, then the payouts in transit),
    keyed by their exception id."""
    import pandas as pd

    from toolkit.reconcile.payouts.report import exception_rows

    frame = pd.DataFrame(exception_rows(result))
    if frame.empty:
        return {}
    return {
        str(category): rows.drop(columns=["category"]).set_index("exception_id")
        for category, rows in frame.groupby("category", sort=False)
    }
