"""Screenshot of the demo's report.html for README: ``python scripts/report_screenshot.py``.

Runs the demo (``toolkit.demo``: the three notebooks on a fresh embedded sandbox in a temporary
folder, the sample ledger against the sandbox's settlement export), opens the report.html the
reconciliation notebook wrote in headless Chromium at 1,280 px, as a controller's laptop would
show it, and saves the whole page to ``docs/report.png``, reduced to a palette so that the
committed image stays small. ``--report PATH`` screenshots an existing report instead.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 800
#: Colours kept in the PNG: the page is text on white with a few tints.
COLOURS = 64


def demo_report(folder: Path) -> Path:
    """Run the demo into ``folder``; the report.html of its reconciliation run."""
    from toolkit.demo import run_demo

    results = run_demo(reports_root=folder / "reports", home=folder / "home")
    failed = [r for r in results if not r.ok]
    if failed or len(results) != 3:
        raise SystemExit(f"the demo did not complete: {failed[0].result_line() if failed else results}")
    reports = [f for f in results[-1].files if f.name == "report.html"]
    if not reports:
        raise SystemExit("the reconciliation run wrote no report.html")
    return reports[0]


def screenshot(report: Path, target: Path) -> int:
    """Save the page at 1,280 px as a palette PNG; returns its size in bytes."""
    from PIL import Image

    sys.path.insert(0, str(ROOT))  # the tests' Chromium launcher
    from tests.browser import chromium

    with chromium() as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(report.resolve().as_uri())
        png = page.screenshot(full_page=True)
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=COLOURS)
    target.parent.mkdir(parents=True, exist_ok=True)
    image.save(target, optimize=True)
    return target.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="an existing report.html (default: run the demo and use its report)",
    )
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "report.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="demo-") as folder:
        report = args.report or demo_report(Path(folder))
        size = screenshot(report, args.output)
    print(f"{args.output}: {size:,} bytes, from {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
