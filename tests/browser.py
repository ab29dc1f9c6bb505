"""Headless Chromium for tests and scripts: Debian's ``chromium`` driven by Playwright.

Playwright's own browser download is not used (it does not work everywhere the tests run); the
system's Chromium is (``apt-get install chromium``; ``.ci/run`` installs it).
``CHROMIUM_EXECUTABLE`` names another executable (not a ``TOOLKIT_`` variable: the tests clear
those). ``BrowserUnavailable`` says why no browser could start, for a skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

#: Flags Chromium needs as root in a container; Playwright gives it a fresh profile folder.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class BrowserUnavailable(Exception):
    """No headless Chromium could be started here; the message says why."""


def chromium_executable() -> str | None:
    """``CHROMIUM_EXECUTABLE``, else the first Chromium on PATH."""
    named = os.environ.get("CHROMIUM_EXECUTABLE")
    if named:
        return named
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed on exit; ``BrowserUnavailable`` when none can start."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise BrowserUnavailable("playwright is not installed (pip install -e '.[dev]')") from None
    executable = chromium_executable()
    if executable is None:
        raise BrowserUnavailable(
            "no chromium on PATH: install Debian's chromium (apt-get install chromium; .ci/run "
            "does when it can) or set CHROMIUM_EXECUTABLE to a Chromium executable"
        )
    try:
        playwright = sync_playwright().start()
    except Exception as exc:  # the driver (a bundled node) could not run here
        raise BrowserUnavailable(f"the Playwright driver could not start: {_first_line(exc)}") from None
    try:
        try:
            browser = playwright.chromium.launch(
                executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
            )
        except Error as exc:
            raise BrowserUnavailable(f"{executable} could not start: {_first_line(exc)}") from None
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
