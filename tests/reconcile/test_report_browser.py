"""report.html in a real browser (headless Chromium): it fits a laptop screen and A4 paper, and
the exceptions table sorts and filters offline, with nothing fetched and no script refused.

Skips, saying why, only where no Chromium or Playwright driver can start (see tests/browser.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser import BrowserUnavailable, chromium
from tests.reconcile.planted import PLANTED_LEDGER, PLANTED_PROCESSOR, run
from toolkit.reconcile import write_report

pytestmark = pytest.mark.slow  # starts a browser: several seconds

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

LAPTOP = {"width": 1280, "height": 800}
#: A4 less the page's 12 mm margins, in CSS pixels (96 per inch): 186 mm.
A4_PRINTABLE = {"width": 703, "height": 1032}
LONG_KEY = "ORDER-" + "7F3A9C" * 30  # one unbroken word of 186 characters
#: Two amounts a float cannot tell apart: the sort must still order them.
BIG = ("9999999999999999.99", "9999999999999999.98")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    stack = contextlib.ExitStack()
    try:
        launched = stack.enter_context(chromium())
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless Chromium to open report.html in: {exc}")
    with stack:
        yield launched


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The planted discrepancies, plus a very long key and two amounts beyond float precision."""
    ledger = [
        *PLANTED_LEDGER,
        (LONG_KEY, "12.00", "USD", "success"),
        ("big-1", BIG[0], "USD", "success"),
        ("big-2", BIG[1], "USD", "success"),
    ]
    result = run(ledger, PLANTED_PROCESSOR)
    folder = tmp_path_factory.mktemp("report")
    paths = write_report(
        result,
        folder,
        title="Daily reconciliation",
        environment="embedded sandbox",
        generated_at=datetime(2026, 1, 2, tzinfo=UTC),
        period=("2024-05-01", "2024-05-31"),
    )
    return paths["report.html"]


@contextlib.contextmanager
def opened_report(browser: Browser, path: Path) -> Iterator[Page]:
    """A report opened from disk at a laptop's size; fails the test on any script error, refused
    script (CSP) or request other than the file itself."""
    context = browser.new_context(viewport=LAPTOP)  # type: ignore[arg-type]
    opened = context.new_page()
    opened.set_default_timeout(5_000)  # a local file: anything slower is a failure
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    opened.on("pageerror", lambda e: problems.append(str(e)))
    opened.on("request", lambda r: problems.append(f"request {r.url}") if r.url != path.as_uri() else None)
    opened.goto(path.as_uri())
    yield opened
    context.close()
    assert problems == []


@pytest.fixture
def page(browser: Browser, report: Path) -> Iterator[Page]:
    """The planted report, opened (``opened_report``)."""
    with opened_report(browser, report) as opened:
        yield opened


def overflow(page: Page) -> dict[str, int]:
    result: dict[str, int] = page.evaluate(
        "({scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,"
        " inner: window.innerWidth})"
    )
    return result


def column(page: Page, index: int) -> list[str]:
    """The visible rows' main text in one column (the cell's first text, not its second line)."""
    texts: list[str] = page.eval_on_selector_all(
        "#exceptions tbody tr:not([hidden])",
        f"rows => rows.map(r => r.cells[{index}].firstChild ? r.cells[{index}].firstChild.textContent.trim() : '')",
    )
    return texts


def assert_fits_laptop(page: Page) -> None:
    """No horizontal overflow at a laptop's width."""
    sizes = overflow(page)
    assert sizes["scroll"] <= sizes["inner"] and sizes["body"] <= sizes["inner"], sizes


def assert_fits_a4(page: Page) -> None:
    """No horizontal overflow when printed on A4."""
    page.set_viewport_size(A4_PRINTABLE)  # type: ignore[arg-type]
    page.emulate_media(media="print")
    sizes = overflow(page)
    assert sizes["scroll"] <= sizes["inner"], sizes


def test_fits_a_laptop_screen_with_the_detail_column_visible(page: Page) -> None:
    assert_fits_laptop(page)
    detail = page.eval_on_selector(
        "#exceptions thead th:last-child",
        "th => { const r = th.getBoundingClientRect(); return [r.left, r.right]; }",
    )
    assert detail[1] <= LAPTOP["width"] and detail[1] - detail[0] >= 300, detail
    key = page.eval_on_selector(
        f'#exceptions td:text-is("{LONG_KEY}")', "td => td.getBoundingClientRect().right"
    )
    assert key <= LAPTOP["width"]  # the long key wraps inside its column


def test_fits_a4_paper_when_printed(page: Page) -> None:
    assert_fits_a4(page)
    assert page.is_hidden("#exception-controls")  # no filter box on paper
    assert page.eval_on_selector(".details", "s => getComputedStyle(s).breakBefore") == "page"


def test_clicking_a_heading_sorts_the_exceptions(page: Page) -> None:
    assert page.is_visible("#exception-controls")  # the script ran (the CSP allowed it)
    keys = column(page, 0)
    assert keys[:5] == ["miss-proc", LONG_KEY, "big-1", "big-2", "miss-led"]  # report order

    page.click("#exceptions th:nth-child(1) button")
    keys = column(page, 0)
    assert keys[:4] == ["amount", "amount-kwd", "bad-amount", "bad-currency"] and keys[-1] == ""
    assert page.get_attribute("#exceptions th:nth-child(1)", "aria-sort") == "ascending"

    page.click("#exceptions th:nth-child(1) button")
    keys = column(page, 0)
    assert keys[0] == "unknown" and keys[-1] == ""  # descending; the row without a key stays last

    page.click("#exceptions th:nth-child(3) button")  # ledger amount: by currency, then exactly
    ledger = [text.replace("\xa0", "") for text in column(page, 2)]
    assert ledger == [
        "€5.00",
        "¥100",
        "KWD0.001",
        "$1.00",
        "$1.00",
        "$3.00",
        "$4.00",
        "$7.00",
        "$9.99",
        "$10.00",
        "$12.00",
        "$9,999,999,999,999,999.98",
        "$9,999,999,999,999,999.99",
        # No ledger amount (missing in the ledger, rows that could not be read): last, in
        # report order, whichever way the column is sorted.
        "",
        "USD",
        "ZZZ",
        "USD",
        "USD",
    ]
    page.click("#exceptions th:nth-child(3) button")
    ledger = [text.replace("\xa0", "") for text in column(page, 2)]
    assert ledger[:3] == ["$9,999,999,999,999,999.99", "$9,999,999,999,999,999.98", "$12.00"]
    assert ledger[-5:] == ["", "USD", "ZZZ", "USD", "USD"]


def test_typing_and_choosing_a_finding_filter_the_rows(page: Page) -> None:
    total = len(column(page, 0))
    page.fill("#filter-text", "kwd")
    assert column(page, 0) == ["amount-kwd"]
    assert page.text_content("#filter-count") == f"1 of {total} rows shown"

    page.fill("#filter-text", "")
    page.select_option("#filter-category", "rejected_row")
    assert column(page, 0) == ["bad-amount", "bad-currency", "bad-status", ""]
    page.fill("#filter-text", "zzz")
    assert column(page, 0) == ["bad-currency"]

    page.select_option("#filter-category", "")
    page.fill("#filter-text", "")
    assert len(column(page, 0)) == total

    page.click('a[data-category="duplicate_in_processor"]')  # from the findings table
    assert column(page, 0) == ["dup-proc"]
    assert page.input_value("#filter-category") == "duplicate_in_processor"


@pytest.fixture(scope="module")
def tracked_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The planted discrepancies as the second run of a track: some open, one acknowledged, one
    new, one resolved (the state column and the tracking section on the page)."""
    from toolkit.reconcile import acknowledge, track_result

    home = tmp_path_factory.mktemp("home")
    first = track_result(run(PLANTED_LEDGER, PLANTED_PROCESSOR), "browser", as_of="2026-01-01", home=home)
    acknowledge("browser", first.exceptions.head(1), note="explained", by="ana", home=home)
    ledger = [*PLANTED_LEDGER[1:], (LONG_KEY, "12.00", "USD", "success")]
    second = track_result(run(ledger, PLANTED_PROCESSOR), "browser", as_of="2026-01-09", home=home)
    folder = tmp_path_factory.mktemp("tracked")
    paths = write_report(
        second,
        folder,
        title="Daily reconciliation",
        environment="embedded sandbox",
        generated_at=datetime(2026, 1, 9, tzinfo=UTC),
    )
    return paths["report.html"]


def test_a_tracked_report_fits_a_laptop_and_a4_and_sorts_by_state(
    browser: Browser, tracked_report: Path
) -> None:
    with opened_report(browser, tracked_report) as opened:
        assert_fits_laptop(opened)
        assert opened.is_visible("#states") and opened.is_visible("#ages") and opened.is_visible("#resolved")
        opened.click("#exceptions th:nth-child(6) button")  # state: new, open, acknowledged
        states = column(opened, 5)
        assert states[0] == "new" and states[-1] == "acknowledged" and "open" in states, states
        assert_fits_a4(opened)


@pytest.fixture(scope="module")
def information_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The planted discrepancies with informational rows (one with a very long key), a cut-off,
    payments compared at reference rates and a missing rate: every section of the page."""
    from dataclasses import replace

    from tests.reconcile.information import with_information

    result = with_information()
    keys = result.exceptions["merchantReferenceId"].replace({"transit-new": LONG_KEY})
    folder = tmp_path_factory.mktemp("information")
    paths = write_report(
        replace(result, exceptions=result.exceptions.assign(merchantReferenceId=keys)),
        folder,
        title="Daily reconciliation",
        environment="embedded sandbox",
        generated_at=datetime(2026, 11, 20, tzinfo=UTC),
    )
    return paths["report.html"]


def test_a_report_with_information_and_rates_fits_a_laptop_and_a4(
    browser: Browser, information_report: Path
) -> None:
    with opened_report(browser, information_report) as opened:
        assert_fits_laptop(opened)
        for table in ("#information", "#fx-pairs", "#in_transit", "#within_tolerance", "#fx-payments"):
            assert opened.is_visible(table), table
        right = opened.eval_on_selector(
            f'#in_transit td:text-is("{LONG_KEY}")', "td => td.getBoundingClientRect().right"
        )
        assert right <= LAPTOP["width"]  # the long key wraps inside its column
        # The exceptions table still filters, and holds no informational row.
        total = len(column(opened, 0))
        opened.fill("#filter-text", "transit")
        assert column(opened, 0) == [] and opened.text_content("#filter-count") == f"0 of {total} rows shown"
        assert_fits_a4(opened)


# ---------------------------------------------------------------------------------------------
# More rows of a finding on demand: held in the page, hidden until asked for

#: 45 rows in the books only (every third one "red"), 530 at the processor only.
BOOKED = [(f"book-{i:02d}-{'red' if i % 3 == 0 else 'blue'}", "1.00", "USD", "success") for i in range(45)]
CHARGED = [(f"charge-{i:03d}", "2.00", "USD", "success") for i in range(530)]
SHOW_MORE_BOOKED = 'button[data-more="missing_in_processor"]'
SHOW_MORE_CHARGED = 'button[data-more="missing_in_ledger"]'


@pytest.fixture(scope="module")
def more_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finding of 45 rows (20 shown, 25 held) and one of 530 (20 shown, 480 held)."""
    from toolkit.reconcile import render_html

    html = render_html(
        run(BOOKED, CHARGED),
        title="More",
        environment="embedded sandbox",
        generated_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    path = tmp_path_factory.mktemp("more") / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def shown(page: Page, category: str) -> list[str]:
    """Keys of the visible rows of one finding, in the table's order."""
    keys: list[str] = page.eval_on_selector_all(
        f'#exceptions tbody tr[data-category="{category}"]:not([hidden])',
        "rows => rows.map(r => r.cells[0].textContent.trim())",
    )
    return keys


def visible(page: Page) -> int:
    """Rows laid out on screen (not only not [hidden]): a held row must never be among them."""
    count: int = page.eval_on_selector_all(
        "#exceptions tbody tr", "rows => rows.filter(r => r.getClientRects().length > 0).length"
    )
    return count


def test_show_more_reveals_the_next_20_under_the_current_filter_and_sort(
    browser: Browser, more_report: Path
) -> None:
    """A sort picks the rows shown among every row the page holds, and "Show more" reveals the
    next ones in that order: sorted largest first, the page showed the largest of the first 20 in
    report order, and revealed the next 20 in report order above them. A search looks through
    every row the page holds: it found none of the held ones."""
    keys = [key for key, *_ in BOOKED]
    with opened_report(browser, more_report) as opened:
        assert len(shown(opened, "missing_in_processor")) == 20 and visible(opened) == 40
        assert opened.text_content("#filter-count") == "all 40 rows shown"
        assert opened.text_content(SHOW_MORE_BOOKED) == "Show 20 more: In the books, not at the processor"
        # A filter and a sort show as many rows as before: the first ones in the new order.
        opened.select_option("#filter-category", "missing_in_processor")
        opened.click("#exceptions th:nth-child(1) button")
        opened.click("#exceptions th:nth-child(1) button")  # descending
        assert shown(opened, "missing_in_processor") == sorted(keys, reverse=True)[:20]
        assert visible(opened) == 20 and opened.text_content("#filter-count") == "20 of 40 rows shown"
        # A search finds the rows held as well, in the table's order.
        opened.select_option("#filter-category", "")
        opened.fill("#filter-text", "red")
        reds = sorted((key for key in keys if "red" in key), reverse=True)
        assert shown(opened, "missing_in_processor") == reds and visible(opened) == 15
        assert opened.text_content("#filter-count") == "15 of 545 rows shown"

        opened.click(SHOW_MORE_BOOKED)
        assert opened.text_content(SHOW_MORE_BOOKED) == "Show 5 more: In the books, not at the processor"
        assert opened.text_content("#note-missing_in_processor") == (
            "In the books, not at the processor: first 40 of 45."
        )
        opened.fill("#filter-text", "")
        # The next 20 in the sorted order, below the first 20.
        assert shown(opened, "missing_in_processor") == sorted(keys, reverse=True)[:40]
        assert visible(opened) == 60 and opened.text_content("#filter-count") == "all 60 rows shown"

        opened.click(SHOW_MORE_BOOKED)
        assert len(shown(opened, "missing_in_processor")) == 45 and visible(opened) == 65
        assert opened.is_hidden(SHOW_MORE_BOOKED)  # nothing more to show
        assert (
            opened.text_content("#note-missing_in_processor") == "In the books, not at the processor: all 45."
        )
        assert opened.text_content("#filter-count") == "all 65 rows shown"
        assert_fits_laptop(opened)
        assert_fits_a4(opened)
        assert opened.is_hidden("#exception-more")  # no buttons on paper
        assert visible(opened) == 65  # what was revealed is printed; what is held is not


def test_show_more_stops_at_the_rows_the_page_holds_and_says_of_how_many(
    browser: Browser, more_report: Path
) -> None:
    with opened_report(browser, more_report) as opened:
        clicks = 0
        while opened.is_visible(SHOW_MORE_CHARGED):
            opened.click(SHOW_MORE_CHARGED)
            clicks += 1
        assert clicks == 24 and len(shown(opened, "missing_in_ledger")) == 500  # 20 + 24 clicks of 20
        assert opened.text_content("#note-missing_in_ledger") == (
            "At the processor, not in the books: first 500 of 530, all this page holds; "
            "exceptions.csv and report.xlsx hold every one."
        )
        assert opened.text_content("#filter-count") == "all 520 rows shown"
