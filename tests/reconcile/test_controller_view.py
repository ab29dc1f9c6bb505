"""The controller's view in report.html: period, sources and categories in words, exact totals,
exact sort ranks, escaping, and a script the page's own Content-Security-Policy lets run."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from tests.reconcile.information import CUTOFF, GRACE, MISSING_RATE, with_information
from tests.reconcile.planted import COLUMNS, PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import (
    CATEGORIES,
    load_ledger,
    load_processor,
    load_subscription_ledger,
    reconcile,
    reconcile_subscriptions,
    render_html,
)
from toolkit.reconcile.render.figures import currency_lines, information_line, verdict
from toolkit.reconcile.render.sections import exception_rows, fx_view, info_sections
from toolkit.reconcile.render.words import (
    CATEGORY_WORDS,
    NO_PERIOD,
    Period,
    period_text,
    source_words,
    timing_text,
)
from toolkit.reconcile.result import INFO_CATEGORIES
from toolkit.reconcile.timing import duration_text

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_every_category_has_plain_words_and_an_action() -> None:
    assert set(CATEGORY_WORDS) == set(CATEGORIES)
    for code, (label, action) in CATEGORY_WORDS.items():
        assert "_" not in label and label[0].isupper(), code
        assert action.endswith(".") and len(action) > 40, code


@pytest.mark.parametrize(
    ("period", "text"),
    [
        (None, NO_PERIOD),
        (("", ""), NO_PERIOD),
        (("2024-05-01", "2024-05-31"), "1 May 2024 to 31 May 2024 (UTC, both days included)"),
        ((date(2024, 5, 31), date(2024, 5, 31)), "31 May 2024 (UTC)"),
        (("2024-05-01", None), "from 1 May 2024 onwards (UTC)"),
        (("", "2024-12-31"), "up to and including 31 December 2024 (UTC)"),
        ("May 2024, as closed on 3 June", "May 2024, as closed on 3 June"),
        (("last month", ""), "from last month onwards (UTC)"),  # not a date: said as written
    ],
)
def test_period_in_words(period: Period, text: str) -> None:
    assert period_text(period) == text


def test_sources_in_words() -> None:
    assert source_words("/home/ana/exports/ledger-2024-05.csv") == "ledger-2024-05.csv"
    assert source_words(r"C:\Users\ana\settlement.xlsx") == "settlement.xlsx"
    assert source_words("<processor frame>") == "processor data passed in from Python"
    assert source_words("<ledger frame>", short=True) == "ledger (from Python)"


def test_headline_totals_per_currency_are_exact() -> None:
    lines = {line.currency: line for line in currency_lines(run(PLANTED_LEDGER, PLANTED_PROCESSOR))}
    assert sorted(lines) == ["EUR", "JPY", "KWD", "USD"]
    usd = lines["USD"]
    assert (usd.matched_count, usd.matched) == (2, "$123,456,789,022.44")
    # At risk: 0.01 + 1.00 (amounts) + 7.00 + 1.00 (statuses) + 4.00 + 3.00 (duplicates) + 9.99.
    assert (usd.at_risk_count, usd.at_risk) == (7, "$26.00")
    # Net: every usable USD ledger row minus every usable USD processor row, failed payments apart
    # (the processor's "status" 7.00 and "two-problems" 2.00 took no money).
    assert usd.net == "-$93.01"
    assert lines["JPY"].net == "+¥100"  # the JPY payment the processor charged in USD
    assert lines["KWD"].net.replace("\xa0", "") == "-KWD0.001"
    assert (lines["EUR"].matched_count, lines["EUR"].matched, lines["EUR"].net) == (0, "", "-€1.00")


def page(tmp_path: Path, period: Period = None) -> str:
    ledger = tmp_path / "exports" / "ledger-2024-05.csv"
    ledger.parent.mkdir(parents=True)
    pd.DataFrame(PLANTED_LEDGER, columns=COLUMNS).to_csv(ledger, index=False)
    result = reconcile(load_ledger(ledger), load_processor(pd.DataFrame(PLANTED_PROCESSOR, columns=COLUMNS)))
    return render_html(result, title="May", environment="live", generated_at=WHEN, period=period)


def test_page_says_period_sources_and_findings_in_words(tmp_path: Path) -> None:
    html = page(tmp_path, period=("2024-05-01", "2024-05-31"))
    assert "<strong>Period:</strong> 1 May 2024 to 31 May 2024" in html
    assert "<td>ledger-2024-05.csv</td>" in html and str(tmp_path) not in html  # no local path
    assert "processor data passed in from Python" in html and "&lt;processor frame&gt;" not in html
    assert "15 exceptions to review, 4 of them rows that could not be read; 4 payments matched." in html
    assert "Charged more than once" in html and "refund the extra charge" in html
    assert "net difference (ledger \u2212 processor)" in html and "Net difference: all usable" in html
    assert "Plus 4 rows that could not be read" in html
    assert "data:image" not in html and "http" not in html.split("<body>", 1)[1]  # nothing to fetch
    assert NO_PERIOD in page(tmp_path / "again")


def test_categories_without_exceptions_are_listed_as_checked(tmp_path: Path) -> None:
    html = render_html(
        run([("a", "1.00", "USD", "success")], [("a", "1.00", "USD", "success")]),
        title="t",
        environment="live",
        generated_at=WHEN,
    )
    assert "Nothing to review: all 1 payment matched." in html
    assert "Also checked, none found: In the books, not at the processor; " in html
    assert 'id="exceptions"' not in html


def test_subscription_findings_in_words() -> None:
    ledger = pd.DataFrame(
        {
            "subscriptionId": ["sub_1", "sub_2"],
            "merchantReferenceId": ["S-1", "S-2"],
            "priceId": ["price_a", "price_a"],
            "quantity": ["2", "1"],
            "amount": ["10.00", "5.00"],
            "currency": ["USD", "USD"],
            "state": ["active", "active"],
        }
    )
    seen = pd.DataFrame(
        {
            "subscriptionId": ["sub_1", "sub_2"],
            "priceId": ["price_a", "price_a"],
            "quantity": [3, 1],
            "state": ["active", "active"],
            "upcomingInvoiceAmount": ["10.00", "5.00"],
            "currency": ["USD", "USD"],
        }
    )
    result = run(PLANTED_LEDGER, PLANTED_PROCESSOR).merged(
        reconcile_subscriptions(load_subscription_ledger(ledger), seen)
    )
    html = render_html(result, title="t", environment="live", generated_at=WHEN)
    assert "Subscription quantity differs" in html and "Subscription ledger" in html
    assert "Also checked, none found: " in html and "Next invoice differs" in html


def test_sort_ranks_are_exact_beyond_float_precision() -> None:
    """Two amounts a float cannot tell apart still sort in their exact order."""
    result = run(
        [
            ("big-1", "9999999999999999.99", "USD", "success"),
            ("big-2", "9999999999999999.98", "USD", "success"),
            ("small", "0.01", "USD", "success"),
        ],
        [],
    )
    assert float("9999999999999999.99") == float("9999999999999999.98")
    rows, cut = exception_rows(result, 20)
    ranks = {row.cells[0].text: row.cells[2].rank for row in rows}
    assert ranks == {"small": 0, "big-2": 1, "big-1": 2} and not cut
    assert all(row.cells[3].rank == -1 for row in rows)  # no processor amount: sorted last


def test_text_is_escaped_and_the_script_is_allowed_by_hash(tmp_path: Path) -> None:
    key = "<img src=x onerror=alert(1)>"
    result = run([(key, "1.00", "USD", "success")], [])
    html = render_html(result, title="<b>t</b>", environment="<i>live</i>", generated_at=WHEN)
    assert key not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>t</b>" not in html and "<i>live</i>" not in html
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in policy.group(1)  # the browser runs only this script
    assert "default-src 'none'" in policy.group(1)


# ---------------------------------------------------------------------------------------------
# Informational rows, cut-off, reference rates (issue 11)


def test_information_is_never_counted_as_exceptions_nor_at_risk() -> None:
    plain = run(PLANTED_LEDGER, PLANTED_PROCESSOR)
    result = with_information(plain)
    assert result.info_count == 5 and result.exception_count == plain.exception_count
    assert verdict(result) == verdict(plain)  # the headline counts exceptions only
    assert information_line(result) == (
        "For information, not exceptions: 2 payments in transit and 3 matched within tolerance."
    )
    assert information_line(plain) == ""
    # At risk per currency is unchanged although the summary has in-transit and variance rows.
    assert currency_lines(result) == currency_lines(plain)
    table, _ = exception_rows(result, 20)
    assert {row.category for row in table} & set(INFO_CATEGORIES) == set()
    # What the findings table and the charts count (``toolkit.charts.category_chart``).
    assert result.category_counts == plain.category_counts


def test_informational_sections_total_per_currency_and_show_the_oldest_first() -> None:
    sections = {s.code: s for s in info_sections(with_information(), 20)}
    assert list(sections) == ["in_transit", "within_tolerance"]
    transit, tolerance = sections["in_transit"], sections["within_tolerance"]
    assert (transit.heading, transit.count, transit.amounts) == (
        "For information: in transit",
        2,
        "€40.00 · $25.00",
    )
    assert [r[0].text for r in transit.rows] == ["transit-old", "transit-new"]  # 2 days, then 0
    assert [r[4].text for r in transit.rows] == ["2", "0"]
    assert (tolerance.heading, tolerance.count) == ("Matched within tolerance", 3)
    assert tolerance.amounts == "+¥1 · -$0.01"  # the net variance, signed, from the summary
    # Each row's variance, ledger minus processor, exact; the one without an age is last.
    assert [(r[0].text, r[3].text, r[4].text) for r in tolerance.rows] == [
        ("tol-usd-1", "-$0.02", "5"),
        ("tol-usd-2", "+$0.01", "1"),
        ("tol-jpy", "+¥1", ""),
    ]
    assert info_sections(with_information(), 1)[0].rows[0][0].text == "transit-old"


def test_fx_pairs_are_exact_and_missing_rates_listed() -> None:
    view = fx_view(with_information(), 2)
    assert view is not None
    assert view["pairs"] == [("CHF → USD", 1, "$0.00"), ("EUR → USD", 2, "-$0.02")]  # +0.01 - 0.03
    assert view["rows"][0] == (
        "fx-1",
        "2026-11-18",
        "€10.00",
        "1.0842",
        "$10.84",
        "$10.85",
        "+$0.01",
        "Matched within tolerance",
    )
    assert (view["count"], view["cut"], len(view["rows"])) == (3, True, 2)
    assert view["missing"] == [MISSING_RATE]
    assert fx_view(run(PLANTED_LEDGER, PLANTED_PROCESSOR), 20) is None


def test_cut_off_and_settlement_window_in_words() -> None:
    assert duration_text(timedelta(days=3)) == "3 days"
    assert duration_text(timedelta(days=1, hours=12)) == "1 day 12 hours"
    assert duration_text(timedelta(minutes=90)) == "1 hour 30 minutes"
    assert timing_text(None, None) == ""
    assert (
        timing_text(CUTOFF, None)
        == "20 November 2026, 00:00 UTC; rows dated after it are left for the next run"
    )
    assert "payments dated from 17 November 2026, 00:00 UTC that have not settled yet are in transit" in (
        timing_text(CUTOFF, GRACE)
    )


def test_page_with_information_cut_off_and_rates(tmp_path: Path) -> None:
    result = with_information()
    html = render_html(result, title="Nov", environment="live", generated_at=WHEN)
    head, details = html.split('<section class="details">')
    assert (
        "<strong>Cut-off:</strong> 20 November 2026, 00:00 UTC" in head and "settlement window 3 days" in head
    )
    assert "differences of up to 0.5% (at least 2 minor units) count as matching" in head
    assert "15 exceptions to review, 4 of them rows that could not be read" in head
    # The row accounting gains the in-transit and after-cut-off columns, and still adds up.
    assert '<th class="num">in transit</th>' in head and '<th class="num">after cut-off</th>' in head
    assert "rows = matched + in exceptions + in transit + rejected + after the cut-off." in head
    ledger_row = re.search(r"<tr><td>Ledger \(the books\)</td>.*?</tr>", head)
    assert ledger_row is not None
    numbers = [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', ledger_row.group(0))]
    assert numbers == [24, 7, 10, 2, 4, 1] and numbers[0] == sum(numbers[1:])
    assert "For information (not exceptions)" in head and "€40.00 · $25.00" in head
    assert '<td>EUR → USD</td><td class="num">2</td><td class="num">-$0.02</td>' in head
    assert f"<li>{MISSING_RATE}</li>" in head
    # The details: the exceptions table holds no informational row; each has its own table.
    exceptions = details.split('<table id="exceptions"', 1)[1].split("</table>", 1)[0]
    assert "transit-" not in exceptions and "tol-" not in exceptions
    assert '<option value="in_transit">' not in html  # the finding filter lists exceptions only
    transit = details.split('<table class="info" id="in_transit">', 1)[1].split("</table>", 1)[0]
    assert transit.index("transit-old") < transit.index("transit-new")
    assert "For information: in transit" in details and "Matched within tolerance" in details
    assert '<table class="fx" id="fx-payments">' in details and "Exact at the rate" in details


def test_page_without_the_new_parts_says_nothing_of_them() -> None:
    html = render_html(
        run(PLANTED_LEDGER, PLANTED_PROCESSOR), title="t", environment="live", generated_at=WHEN
    )
    for absent in ("Cut-off:", "in transit", "For information", "reference rates", "after cut-off"):
        assert absent not in html, absent
