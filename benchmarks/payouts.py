"""Benchmark: a month of payments in daily payouts reconciled against the bank (issue 38).

Generates, in a temporary directory, the month as Stripe's itemized balance change report
(``balance_change_from_activity.itemized``: each charge with its fee, tied to the day's automatic
payout; a payout row per day) and 30 daily camt.053 statements of the bank account the payouts
reach (written by the sandbox's bank, ``toolkit.sandbox.statements``), one payout missing and one
arriving a cent short; and the books of the month (one row per order). Then measures, in one run,
each command in a subprocess (wall time, CPU time, peak RSS):

* ``toolkit reconcile payouts --processor REPORT --bank STATEMENTS/``: the payout reconciliation;
* ``toolkit reconcile --ledger BOOKS --processor REPORT``: the payment reconciliation of the same
  month, the reference the issue asks the payout run to be set against.

Run: ``.venv/bin/python benchmarks/payouts.py [--payments N] [--days D]`` (default 1,000,000 in 30).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reconcile import _timed

from toolkit.sandbox.statements import StatementEntry, camt053

FIRST_DAY = date(2025, 5, 1)
FEE_MINOR = 45  # each charge's fee, 0.45 EUR


def _money(minor: npt.NDArray[np.int64]) -> list[str]:
    """Exact EUR text of signed minor units."""
    return [f"{'-' if m < 0 else ''}{abs(m) // 100}.{abs(m) % 100:02d}" for m in minor.tolist()]


def generate(folder: Path, payments: int, days: int) -> tuple[Path, Path, Path, dict[str, int]]:
    """The report, the statements' folder and the books; and each day's payout in minor units."""
    rng = np.random.default_rng(11)
    day = np.sort(rng.integers(0, days, payments))
    gross = rng.integers(500, 50_000, payments)
    keys = pd.Series(np.arange(payments)).astype(str).radd("ORD-")
    when = pd.Series([f"{FIRST_DAY + timedelta(days=int(d))} 10:00:00" for d in range(days)])[day].to_numpy()
    payout_of = pd.Series([f"po_{d:04d}" for d in range(days)])[day].to_numpy()
    charges = pd.DataFrame(
        {
            "balance_transaction_id": keys.str.replace("ORD-", "txn_", regex=False),
            "created_utc": when,
            "currency": "eur",
            "gross": _money(gross),
            "fee": _money(np.full(payments, FEE_MINOR)),
            "net": _money(gross - FEE_MINOR),
            "reporting_category": "charge",
            "source_id": keys.str.replace("ORD-", "ch_", regex=False),
            "automatic_payout_id": payout_of,
            "payment_metadata[order_id]": keys,
        }
    )
    paid = pd.Series(gross - FEE_MINOR).groupby(day).sum()
    payouts = pd.DataFrame(
        {
            "balance_transaction_id": [f"txn_po_{d}" for d in paid.index],
            "created_utc": [f"{FIRST_DAY + timedelta(days=int(d))} 23:00:00" for d in paid.index],
            "currency": "eur",
            "gross": _money(-paid.to_numpy()),
            "fee": "0.00",
            "net": _money(-paid.to_numpy()),
            "reporting_category": "payout",
            "source_id": [f"po_{d:04d}" for d in paid.index],
            "automatic_payout_id": "",
            "payment_metadata[order_id]": "",
        }
    )
    report = folder / "balance_change_from_activity.csv"
    table = pa.Table.from_pandas(pd.concat([charges, payouts], ignore_index=True), preserve_index=False)
    pacsv.write_csv(table, report)
    books = folder / "books.csv"
    pacsv.write_csv(
        pa.table({"merchantReferenceId": keys, "amount": _money(gross), "currency": ["EUR"] * payments}),
        books,
    )
    statements = folder / "statements"
    statements.mkdir()
    balance = 0
    for d in range(days):
        arriving = FIRST_DAY + timedelta(days=d + 1)
        entries = []
        if d in paid.index and d != 3:  # the 4th day's payout never arrives
            amount = int(paid[d]) - (1 if d == 7 else 0)  # the 8th arrives a cent short
            reference = f"STRIPE PAYOUT po_{d:04d}"
            entries.append(StatementEntry(amount, arriving, arriving, f"B{d:04d}", "STRIPE", reference))
        body = camt053(
            iban="DE89370400440532013000",
            currency="EUR",
            day=arriving,
            opening_minor=balance,
            entries=entries,
        )
        balance += sum(e.amount_minor for e in entries)
        (statements / f"camt053_{arriving:%Y%m%d}.xml").write_bytes(body)
    return report, statements, books, {"payments": payments, "payouts": len(paid)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        report, statements, books, sizes = generate(folder, args.payments, args.days)
        print(
            f"generated {sizes['payments']:,} payments in {sizes['payouts']} payouts and {args.days} "
            f"statements in {time.perf_counter() - start:.1f} s"
        )
        as_of = str(FIRST_DAY + timedelta(days=args.days + 10))
        payouts = (
            "import sys; from toolkit.cli import command; "
            f"sys.argv = ['toolkit', 'reconcile', 'payouts', '--processor', {str(report)!r}, '--bank', "
            f"{str(statements)!r}, '--as-of', {as_of!r}, '--output-dir', {str(folder / 'payouts')!r}]; "
            "command()"
        )
        wall, cpu, peak, out = _timed(payouts, Path.cwd(), ok=(0, 1))
        print(f"toolkit reconcile payouts: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {peak:.0f} MB")
        print("  " + out.strip().splitlines()[-1])
        payments = (
            "import sys; from toolkit.cli import command; "
            f"sys.argv = ['toolkit', 'reconcile', '--ledger', {str(books)!r}, "
            f"'--processor', {str(report)!r}, '--as-of', {as_of!r}, "
            f"'--output-dir', {str(folder / 'payments')!r}]; command()"
        )
        p_wall, p_cpu, p_peak, p_out = _timed(payments, Path.cwd(), ok=(0, 1))
        print(
            f"toolkit reconcile (the payments of the same month): {p_wall:.2f} s wall, {p_cpu:.2f} s CPU, "
            f"peak RSS {p_peak:.0f} MB"
        )
        print("  " + p_out.strip().splitlines()[-1])
        print(f"payouts against payments: {wall / p_wall:.2f}x wall, {peak / p_peak:.2f}x peak memory")


if __name__ == "__main__":
    main()
