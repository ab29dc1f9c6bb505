"""The engine: every planted discrepancy found, nothing else, counts add up; properties."""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reconcile.planted import EXPECTED, PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.errors import InputError
from toolkit.reconcile import (
    EXCEPTION_COLUMNS,
    PAYMENT_CATEGORIES,
    ReconciliationResult,
)
from toolkit.reconcile.result import _decimals


def found(result: ReconciliationResult) -> set[tuple[str, str]]:
    return {
        (str(k), str(c))
        for k, c in zip(result.exceptions["merchantReferenceId"], result.exceptions["category"], strict=True)
    }


def assert_adds_up(result: ReconciliationResult) -> None:
    assert all(c.adds_up for c in result.counts), result.counts


def test_planted_discrepancies_all_found_nothing_else() -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    assert found(result) == EXPECTED
    assert len(result.exceptions) == len(EXPECTED)
    assert set(result.exceptions["category"].astype(str)) == set(PAYMENT_CATEGORIES)
    assert list(result.exceptions.columns) == list(EXCEPTION_COLUMNS)
    assert sorted(result.matched["merchantReferenceId"]) == ["ok-big", "ok-jpy", "ok-kwd", "ok-usd"]
    assert_adds_up(result)
    ledger, processor = result.counts
    assert (ledger.rows, ledger.matched, ledger.rejected) == (18, 4, 4)
    assert (processor.rows, processor.matched, processor.rejected) == (14, 4, 0)


def test_exception_values_side_by_side() -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    exc = result.exceptions
    row = exc[(exc["merchantReferenceId"] == "amount-kwd") & (exc["category"] == "amount_mismatch")].iloc[0]
    assert (row["ledger_amount"], row["processor_amount"]) == (Decimal("0.001"), Decimal("0.002"))
    assert str(row["ledger_amount"]) == "0.001"
    assert row["source_row"] == 7  # frames have no header row
    assert "difference -0.001" in row["detail"]
    dup = result.exceptions[result.exceptions["category"] == "duplicate_in_processor"].iloc[0]
    assert dup["source_row"] == 12 and "rows 11, 12" in dup["detail"]
    rejected = result.exceptions[result.exceptions["merchantReferenceId"] == "bad-amount"].iloc[0]
    assert rejected["source_row"] == 15 and "more decimals than USD" in rejected["detail"]


def test_exception_amounts_are_exact_with_the_currency_exponent() -> None:
    ledger = [
        ("a", "123456789012.30", "USD", "success"),
        ("b", "1200", "JPY", "success"),
        ("c", "-0.050", "KWD", "success"),
        ("d", "0.00", "EUR", "success"),
    ]
    processor = [(k, a, c, "failure") for k, a, c, _ in ledger]
    exc = run(ledger, processor).exceptions
    texts = dict(zip(exc["merchantReferenceId"], exc["ledger_amount"].map(str), strict=True))
    assert texts == {"a": "123456789012.30", "b": "1200", "c": "-0.050", "d": "0.00"}
    assert list(exc["ledger_amount"]) == list(exc["processor_amount"])


def test_exception_decimals_ignore_the_callers_context() -> None:
    # Built as 1E-digits * minor: exact even when the caller lowered the context's precision.
    minor = np.array([12345678901230, -50, 1200, 0], dtype=np.int64)
    with localcontext() as context:
        context.prec = 3
        (amounts,) = _decimals([minor], [np.array([2, 3, 0, -1], dtype=np.int64)])
    assert [None if a is None else str(a) for a in amounts] == [
        "123456789012.30",
        "-0.050",
        "1200",
        None,
    ]


def test_summary_counts_and_exact_amounts() -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    summary = result.summary.set_index(["category", "currency"])
    assert summary.loc[("amount_mismatch", "USD"), "amount"] == Decimal("1.01")  # 0.01 + 1.00
    assert summary.loc[("amount_mismatch", "KWD"), "amount"] == Decimal("0.001")
    assert summary.loc[("matched", "USD"), "amount"] == Decimal("123456789022.44")
    assert summary.loc[("rejected_row", ""), "count"] == 4
    frame = result.summary
    assert int(frame.loc[frame["category"] != "matched", "count"].sum()) == len(EXPECTED)


def test_side_totals_add_every_usable_row_exactly() -> None:
    """Duplicates count in full, rejected rows and failed payments not: ledger minus processor is
    the money the books and the processor say moved."""
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    totals = {(t.side, t.currency): (t.rows, t.amount) for t in result.totals}
    # USD ledger: 10.1 + 123456789012.34 + 10 + 7 + 3 + 3 + 4 + 9.99 + 1 (dup-led twice).
    assert totals[("ledger", "USD")] == (9, Decimal("123456789060.43"))
    # USD processor: 10.10 + ...012.34 + 10.01 + 100.00 (the JPY key) + 3 + 4 + 4 + 9.99; "status"
    # (7.00) and "two-problems" (2.00) failed, and took no money.
    assert totals[("processor", "USD")] == (8, Decimal("123456789153.44"))
    assert totals[("ledger", "KWD")] == (2, Decimal("1.251"))
    assert totals[("ledger", "JPY")] == (2, Decimal("1300"))
    assert ("processor", "JPY") in totals and ("ledger", "EUR") in totals
    assert sum(t.rows for t in result.totals if t.side == "ledger") == 14  # 18 rows - 4 rejected


def test_side_totals_do_not_overflow() -> None:
    """Eighteen-digit amounts: an int64 sum would wrap around; the total stays exact."""
    big = "9999999999999999.99"
    result = run([(f"k{i}", big, "USD", "success") for i in range(1000)], [])
    (total,) = result.totals
    assert total.amount == Decimal(big) * 1000 and total.rows == 1000


def test_amount_tolerance_in_minor_units() -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR, amount_tolerance=1)
    assert ("amount", "amount_mismatch") not in found(result)
    assert ("amount-kwd", "amount_mismatch") not in found(result)
    assert ("two-problems", "amount_mismatch") in found(result)  # 100 minor units apart


def test_notebook_html_and_repr() -> None:
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    html = result._repr_html_()
    assert "amount_mismatch" in html and "<table" in html and "rejected" in html
    assert "amount_mismatch=3" in repr(result)


def test_the_notebook_view_charts_each_category_and_shows_its_rows_as_the_report_does() -> None:
    """A bar per category against the largest (rejected rows: 4), and each row in the report's
    words: money with its currency, the status under it, where the row is."""
    html = run(PLANTED_LEDGER, PLANTED_PROCESSOR)._repr_html_()
    bar = r'<td style="width: 12em"><div style="background: #b36b00; height: .8em; width: {}%"></div></td>'
    assert re.search(
        r"Amounts differ <code>amount_mismatch</code></td><td[^>]*>3</td>" + bar.format(75), html
    )
    assert re.search(r"<code>rejected_row</code></td><td[^>]*>4</td>" + bar.format(100), html)
    row = re.search(r"<tr><td[^>]*>amount</td>.*?</tr>", html)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
    assert [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells] == [
        "amount",
        "$10.00 success",
        "$10.01 success",
        "ledger (from Python) row 6",
        "ledger 10.00 USD, processor 10.01 USD (difference -0.01); processor row 6",
    ]
    assert "<h4>Row could not be read <code>rejected_row</code>: 4 exceptions</h4>" in html
    one = run([("a", "1.00", "USD", "success")], [])._repr_html_()
    assert "0 matched, 1 exception (" in one  # not "1 exceptions"
    assert "<td>Ledger (the books)</td><td>ledger data passed in from Python</td>" in one  # as the report


def test_empty_sides() -> None:
    result = run([], [("a", "1", "USD", "1")])
    assert found(result) == {("a", "missing_in_ledger")}
    assert_adds_up(result)
    assert run([], []).exceptions.empty


# ---------------------------------------------------------------------------------------------
# Properties

CURRENCIES = {"USD": 2, "JPY": 0, "KWD": 3, "BHD": 3, "EUR": 2}
STATUSES = ["success", "pending", "failure", "next_action", "1", "2", "3", "5"]


@st.composite
def payments(draw: st.DrawFn) -> list[tuple[str, str, str, str]]:
    keys = draw(
        st.lists(
            st.text("abcdefghij0123456789", min_size=1, max_size=8), min_size=1, max_size=25, unique=True
        )
    )
    rows = []
    for key in keys:
        currency = draw(st.sampled_from(sorted(CURRENCIES)))
        minor = draw(st.integers(0, 10**14))  # charges (a negative amount is money returned: test_movements)
        digits = CURRENCIES[currency]
        text = str(Decimal(minor).scaleb(-digits).quantize(Decimal(1).scaleb(-digits)))
        rows.append((key, text, currency, draw(st.sampled_from(STATUSES))))
    return rows


@settings(max_examples=30, deadline=None)
@given(payments())
def test_self_reconciliation_only_matches(rows: list[tuple[str, str, str, str]]) -> None:
    result = run(rows, rows)
    assert result.exceptions.empty
    assert len(result.matched) == len(rows)
    assert_adds_up(result)


@settings(max_examples=30, deadline=None)
@given(payments(), st.data())
def test_one_change_gives_exactly_the_expected_exception(
    rows: list[tuple[str, str, str, str]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(rows) - 1))
    key, amount, currency, status = rows[index]
    change = data.draw(
        st.sampled_from(
            [
                "remove_ledger",
                "remove_processor",
                "duplicate_processor",
                "duplicate_ledger",
                "amount",
                "currency",
                "status",
                "unknown",
                "malformed",
            ]
        )
    )
    ledger, processor = list(rows), list(rows)
    expected = {
        "remove_ledger": "missing_in_ledger",
        "remove_processor": "missing_in_processor",
        "duplicate_processor": "duplicate_in_processor",
        "duplicate_ledger": "duplicate_in_ledger",
        "amount": "amount_mismatch",
        "currency": "currency_mismatch",
        "status": "status_mismatch",
        "unknown": "unknown_outcome",
    }
    if change == "remove_ledger":
        del ledger[index]
    elif change == "remove_processor":
        del processor[index]
    elif change == "duplicate_processor":
        processor.append(rows[index])
    elif change == "duplicate_ledger":
        ledger.insert(0, rows[index])
    elif change == "amount":
        processor[index] = (key, str(Decimal(amount) + 1), currency, status)
    elif change == "currency":
        other = next(c for c in CURRENCIES if c != currency and CURRENCIES[c] >= CURRENCIES[currency])
        processor[index] = (key, amount, other, status)
    elif change == "status":
        canonical = {"1": "success", "2": "pending", "3": "failure", "5": "next_action"}
        name = canonical.get(status, status)
        processor[index] = (key, amount, currency, "failure" if name != "failure" else "success")
    elif change == "unknown":
        processor[index] = (key, amount, currency, "unknown")
    else:
        ledger[index] = (key, amount + "x", currency, status)
    if change == "malformed" and len(rows) == 1:  # the ledger's only row: no reconciliation, exit 2
        with pytest.raises(InputError, match="none of the ledger's 1 rows can be used"):
            run(ledger, processor)
        return
    result = run(ledger, processor)
    assert_adds_up(result)
    if change == "malformed":
        # The rejected ledger row leaves the processor's row without a partner.
        assert Counter(found(result)) == Counter({(key, "rejected_row"), (key, "missing_in_ledger")})
    elif change.startswith("duplicate") and status in ("failure", "3"):
        # A failed payment twice took no money twice: no double charge, no double booking.
        assert result.exceptions.empty and len(result.matched) == len(rows)
        return
    else:
        assert found(result) == {(key, expected[change])}
        assert len(result.exceptions) == 1
    assert len(result.matched) == len(rows) - 1


@pytest.mark.slow
def test_larger_random_set_adds_up() -> None:
    rows = [(f"k{i}", f"{i}.{i % 100:02d}", "USD", "success") for i in range(50_000)]
    processor = rows[1000:] + rows[1000:1010] + [(f"x{i}", "1", "EUR", "unknown") for i in range(500)]
    result = run(rows, processor)
    counts = result.category_counts
    assert counts["missing_in_processor"] == 1000 and counts["duplicate_in_processor"] == 10
    assert counts["missing_in_ledger"] == 500 and counts["unknown_outcome"] == 500
    assert_adds_up(result)
