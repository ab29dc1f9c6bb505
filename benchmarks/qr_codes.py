"""QR codes of wallet payments: CPU per step, and what fixing the data mask gives up.

Part 1 times each way of drawing the QR code of one checkout URL (a fresh order id each call, as
on the request path): segno with its automatic mask selection, segno with the mask fixed, segno's
PNG and SVG writers, and the sandbox's template + PNG writer (``toolkit.sandbox.qr``) that a
wallet payment now runs for its ``imageDataUrl``.

Part 2 checks the choice of ``MASK``: for random checkout URLs, how often ISO/IEC 18004's mask
evaluation (segno's automatic choice) picks each mask, and how many penalty points the fixed mask
scores above the best one (higher: patterns slightly harder to scan; every mask decodes).

    python benchmarks/qr_codes.py [--samples 300]
"""

from __future__ import annotations

import argparse
import base64
import io
import statistics
import timeit
import uuid
import zlib
from collections import Counter
from collections.abc import Callable

import segno
from segno import encoder

from toolkit.sandbox import png, qr
from toolkit.sandbox.checkout import CHECKOUT_QR, checkout_url


def fresh_url() -> str:
    return checkout_url(f"ord_{uuid.uuid4().hex}")


def per_call_us(step: Callable[[], object], number: int) -> float:
    """Best of 5 repeats, in microseconds per call (the best is the least disturbed by other load)."""
    return min(timeit.repeat(step, number=number, repeat=5)) / number * 1e6


def save(symbol: segno.QRCode, kind: str) -> bytes:
    buffer = io.BytesIO()
    symbol.save(buffer, kind=kind, scale=qr.SCALE, border=qr.BORDER)
    return buffer.getvalue()


def steps() -> None:
    url = fresh_url()
    symbol = qr.encode(url)
    CHECKOUT_QR.png(url)  # derives the template once, outside the timings
    template = CHECKOUT_QR._template_ready()
    lines = template.lines(url[len(CHECKOUT_QR.prefix) :].encode("ascii"))
    width = (len(lines) // template.line_size) * qr.SCALE
    repeat = (b"\x02" + bytes(template.line_size - 1)) * (qr.SCALE - 1)
    raw = b"".join(
        lines[i : i + template.line_size] + repeat for i in range(0, len(lines), template.line_size)
    )
    image = CHECKOUT_QR.png(url)

    def before() -> tuple[str, str]:
        """What a wallet payment did before: one symbol (auto mask), both images as data URLs."""
        code = segno.make_qr(fresh_url(), error="m")
        return (qr.data_url("image/png", save(code, "png")), qr.data_url("image/svg+xml", save(code, "svg")))

    rows: list[tuple[str, float]] = [
        (
            "segno.make_qr, automatic mask (8 evaluated)",
            per_call_us(lambda: segno.make_qr(fresh_url(), error="m"), 30),
        ),
        (f"segno.make_qr, mask {qr.MASK} fixed", per_call_us(lambda: qr.encode(fresh_url()), 100)),
        ("segno PNG writer (scale 4, border 4)", per_call_us(lambda: save(symbol, "png"), 100)),
        ("segno SVG writer", per_call_us(lambda: save(symbol, "svg"), 100)),
        ("before: PNG + SVG data URLs per payment", per_call_us(before, 30)),
        (
            "template: module lines of a new URL",
            per_call_us(lambda: template.lines(uuid.uuid4().hex.encode("ascii")), 3000),
        ),
        ("zlib.compress(level 1) of the scaled raster", per_call_us(lambda: zlib.compress(raw, 1), 3000)),
        (
            "png.scaled_png (no compressor)",
            per_call_us(
                lambda: png.scaled_png(lines, width=width, line_size=template.line_size, scale=qr.SCALE), 3000
            ),
        ),
        ("base64 data URL of the PNG", per_call_us(lambda: base64.b64encode(image), 3000)),
        (
            "after: imageDataUrl per payment (png_data_url)",
            per_call_us(lambda: CHECKOUT_QR.png_data_url(fresh_url()), 3000),
        ),
        ("after: SVG at its URL, first request", per_call_us(lambda: CHECKOUT_QR.svg(fresh_url()), 30)),
    ]
    print(
        f"QR code of a {len(url)}-character checkout URL: version {symbol.version}, error "
        f"{symbol.error}, {len(symbol.matrix)} modules; PNG {len(image)} bytes "
        f"(zlib level 1: {len(zlib.compress(raw, 1)) + 57} bytes), SVG {len(save(symbol, 'svg'))} bytes"
    )
    for name, micros in rows:
        print(f"  {name:<52}{micros:>10.1f} us")


def masks(samples: int) -> None:
    picked: Counter[int] = Counter()
    excess: dict[int, list[int]] = {mask: [] for mask in range(8)}
    for _ in range(samples):
        url = fresh_url()
        picked[segno.make_qr(url, error="m").mask] += 1
        scores = []
        for mask in range(8):
            matrix = [bytearray(row) for row in segno.make_qr(url, error="m", mask=mask).matrix]
            scores.append(encoder.evaluate_mask(matrix, len(matrix), len(matrix)))  # type: ignore[no-untyped-call]
        for mask in range(8):
            excess[mask].append(scores[mask] - min(scores))
    print(f"\nMask choice over {samples} random checkout URLs (penalty of each mask's final symbol)")
    print(f"  {'mask':>4}{'picked by evaluation':>22}{'best or tied':>14}{'mean excess points':>20}")
    for mask in range(8):
        marker = "  <- MASK" if mask == qr.MASK else ""
        best = sum(points == 0 for points in excess[mask])
        print(f"  {mask:>4}{picked[mask]:>22}{best:>14}{statistics.mean(excess[mask]):>20.1f}{marker}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300, help="checkout URLs for the mask statistics")
    args = parser.parse_args()
    steps()
    masks(args.samples)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
