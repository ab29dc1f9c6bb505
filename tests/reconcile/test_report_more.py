"""report.html holds more exceptions of a finding than it shows: the first ``HTML_ROWS`` of each
shown, up to ``HTML_MORE_ROWS`` in the page but hidden until the reader asks for them (the page
is opened from disk and fetches nothing). In a browser: tests/reconcile/test_report_browser.py."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime

from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import render_html
from toolkit.reconcile.render.page import script
from toolkit.reconcile.render.sections import HTML_MORE_ROWS, HTML_ROWS, CutCategory, exception_rows

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
IN_BOOKS = "In the books, not at the processor"


def table_rows(html: str, category: str) -> list[str]:
    """The opening tags of the exceptions table's rows of one category."""
    return re.findall(rf'<tr data-category="{category}"[^>]*>', html)


def test_the_page_holds_45_rows_of_a_finding_and_shows_the_first_20() -> None:
    ledger = [(f"book-{i:02d}", "1.00", "USD", "success") for i in range(45)]
    result = run(ledger, [("charge-1", "2.00", "USD", "success")])
    html = render_html(result, title="t", environment="live", generated_at=WHEN)
    rows = table_rows(html, "missing_in_processor")
    assert len(rows) == 45
    assert [" hidden" in tag for tag in rows] == [False] * HTML_ROWS + [True] * 25  # report order
    assert len(table_rows(html, "missing_in_ledger")) == 1  # a finding of 1 row: shown, no button
    assert (
        '<button type="button" data-more="missing_in_processor" data-label="In the books, not at the '
        f'processor" data-count="45">Show 20 more: {IN_BOOKS}</button>'
    ) in html
    assert 'data-more="missing_in_ledger"' not in html
    assert f'<span id="note-missing_in_processor">{IN_BOOKS}: first 20 of 45.</span>' in html
    # One script, which reveals the held rows too, still allowed by its hash alone.
    (code,) = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert (code, f"sha256-{base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()}") == script(
        more=True
    )
    assert f"script-src '{script(more=True)[1]}'" in html and "default-src 'none'" in html


def test_a_finding_past_500_rows_holds_500_and_says_of_how_many() -> None:
    ledger = [(f"book-{i:03d}", "1.00", "USD", "success") for i in range(HTML_MORE_ROWS + 20)]
    result = run(ledger, [])
    html = render_html(result, title="t", environment="live", generated_at=WHEN)
    rows = table_rows(html, "missing_in_processor")
    assert len(rows) == HTML_MORE_ROWS == 500
    assert sum(" hidden" not in tag for tag in rows) == HTML_ROWS
    assert f"{IN_BOOKS}: first 20 of 520." in html and 'data-count="520"' in html
    assert "book-499" in html and "book-500" not in html  # the first 500, in report order


def test_held_rows_are_ranked_with_those_shown() -> None:
    """Ranks are over every row in the page, so a row revealed later sorts among the others."""
    ledger = [(f"book-{i:02d}", f"{45 - i}.00", "USD", "success") for i in range(45)]
    table, cut = exception_rows(run(ledger, []), HTML_ROWS)
    assert [row.held for row in table] == [False] * 20 + [True] * 25
    assert cut == [CutCategory("missing_in_processor", IN_BOOKS, 20, 45, 45)]
    assert [row.cells[2].rank for row in table] == list(range(44, -1, -1))  # 45.00 down to 1.00


def test_a_page_with_nothing_held_is_as_before() -> None:
    """No finding over 20 rows: no hidden row, no button, and the script of the sorting and
    filtering alone (the snapshots stay as they are)."""
    html = render_html(run(PLANTED_LEDGER, PLANTED_PROCESSOR), title="t", environment="l", generated_at=WHEN)
    assert "data-held" not in html and 'id="exception-more"' not in html
    assert script()[0] in html and script(more=True)[0] not in html
    assert (
        "The first 20 exceptions of each finding; exceptions.csv and report.xlsx hold every one.</p>" in html
    )
