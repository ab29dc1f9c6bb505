"""The controller's view in report.html: period, sources and categories in words, exact totals,
exact sort ranks, escaping, and a script the page's own Content-Security-Policy lets run."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, date, datetime
from pathlib import Path

import pandas as pd
import pytest

from tests.reconcile.test_engine import COLUMNS, PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import (
    CATEGORIES,
    load_ledger,
    load_processor,
    load_subscription_ledger,
    reconcile,
    reconcile_subscriptions,
    render_html,
)
from toolkit.reconcile.controller_view import (
    CATEGORY_WORDS,
    NO_PERIOD,
    Period,
    currency_lines,
    exception_rows,
    period_text,
    source_words,
)

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
    # Net: every usable USD ledger row minus every usable USD processor row.
    assert usd.net == "-$102.01"
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
