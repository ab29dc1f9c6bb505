"""report.html: what the page says, gathered for its template (``page``), the page's inline
script with its hash for the Content-Security-Policy, and the page rendered (``render_html``).

The page is read by a controller who did not run the reconciliation: so it states the period and
the sources in words, totals per currency, each category in plain words with what to do about
it, and only then the exceptions. The words come from ``words``, the headline from ``figures``,
the tables from ``sections``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, Template, select_autoescape
from jinja2.bccache import Bucket

from toolkit.reconcile.render.figures import (
    category_lines,
    currency_lines,
    information_line,
    movement_lines,
    not_final_text,
    payout_lines,
    source_lines,
    verdict,
)
from toolkit.reconcile.render.sections import HTML_ROWS, exception_rows, fx_view, info_sections, tracking_view
from toolkit.reconcile.render.words import (
    FOOTNOTE,
    INFO_FOOTNOTE,
    Period,
    period_text,
    timing_text,
    tolerance_text,
)

if TYPE_CHECKING:
    from toolkit.reconcile.result import ReconciliationResult


def render_html(
    result: ReconciliationResult,
    *,
    title: str,
    environment: str,
    generated_at: datetime | None = None,
    rows: int = HTML_ROWS,
    period: Period = None,
) -> str:
    """The HTML page as a string (``generated_at`` fixed in tests for stable snapshots).

    A controller's view first (period, sources, totals per currency, findings in plain words with
    what to do), then the first ``rows`` exceptions of each category in one table that sorts and
    filters offline; ``page`` gathers what it says.
    """
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    context = page(result, title=title, environment=environment, generated_at=when, period=period, rows=rows)
    return template("report.html.j2").render(**context)


@functools.cache
def template(name: str) -> Template:
    """A page template of ``render/templates`` (HTML escaped), for the payment and the payout
    reports alike: compiled once per process (compiling took longer than rendering a small
    report, and every report of a notebook or a test session wrote it again), and its compiled
    code kept between processes (``CompiledTemplates``)."""
    env = Environment(
        loader=PackageLoader("toolkit.reconcile.render", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
        bytecode_cache=CompiledTemplates.in_user_cache(),
    )
    return env.get_template(name)


class CompiledTemplates(FileSystemBytecodeCache):
    """Jinja's compiled templates in the user's cache folder: compiling the page took 0.2 s of
    each ``toolkit reconcile`` (a tenth of a 1,000-row run); loading it takes milliseconds. Jinja
    compiles again when a template's text changes, and when the file is not its own (a version
    of Python's, a damaged one); a folder it cannot write to costs the compiling, not the run."""

    @classmethod
    def in_user_cache(cls) -> CompiledTemplates | None:
        """The cache in the platform's per-user cache folder (``XDG_CACHE_HOME`` on Linux), or
        None when that folder cannot be made."""
        from toolkit.home import user_cache

        folder = user_cache() / "templates"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return cls(str(folder))

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the compiled code, unless the disk refuses it (full, read-only, the folder gone):
        the next process then compiles again."""
        try:
            super().dump_bytecode(bucket)
        except OSError:
            return


def script(*, more: bool = False) -> tuple[str, str]:
    """The inline script (sorting, filtering; with ``more``, revealing held rows too) and its CSP
    hash, so no other script can run. A page with no held rows gets the script alone, as before."""
    templates = resources.files("toolkit.reconcile.render").joinpath("templates")
    text = templates.joinpath("report.js").read_text("utf-8")
    if more:
        text += templates.joinpath("report-more.js").read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return text, f"sha256-{digest}"


def page(
    result: ReconciliationResult,
    *,
    title: str,
    environment: str,
    generated_at: str,
    period: Period,
    rows: int,
) -> dict[str, Any]:
    """Everything the template shows, as plain values."""
    found, clear = category_lines(result)
    table, cut = exception_rows(result, rows)
    held = any(row.held for row in table)
    information = info_sections(result, rows)
    code, script_hash = script(more=held)
    return {
        "title": title,
        "environment": environment,
        "generated_at": generated_at,
        "period": period_text(period),
        "tolerance": tolerance_text(result.amount_tolerance),
        "timing": timing_text(result.cutoff, result.grace),
        "verdict": verdict(result),
        "information": " ".join(t for t in (information_line(result), not_final_text(result, period)) if t),
        "sources": source_lines(result),
        "outside": any(c.outside for c in result.counts),
        "in_transit": any(c.in_transit for c in result.counts),
        "after_cutoff": any(c.after_cutoff for c in result.counts),
        "adds_up": all(c.adds_up for c in result.counts),
        "currencies": currency_lines(result),
        "movements": movement_lines(result),
        "payouts": payout_lines(result),
        "apart": any(c.movements for c in result.counts),
        "footnote": FOOTNOTE + (f" {INFO_FOOTNOTE}" if information else ""),
        "unreadable": result.category_counts.get("rejected_row", 0),
        "found": found,
        "clear": clear,
        "rows": table,
        "cut": cut,
        "per_category": rows,
        "shown": sum(not row.held for row in table),
        "held": held,
        "script": code,
        "script_hash": script_hash,
        "tracking": tracking_view(result, rows),
        "info": information,
        "fx": fx_view(result, rows),
    }
