"""Real, scannable QR codes (segno) as PNG and SVG data URLs for wallet next actions."""

from __future__ import annotations

import base64
import io

import segno

#: Pixels per QR module in the PNG and user units per module in the SVG; border in modules.
SCALE = 4
BORDER = 4


def _data_url(media_type: str, content: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(content).decode('ascii')}"


def qr_png(content: str) -> bytes:
    """PNG bytes of a QR code holding ``content`` (error correction M, boosted when it fits)."""
    buffer = io.BytesIO()
    segno.make_qr(content, error="m").save(buffer, kind="png", scale=SCALE, border=BORDER)
    return buffer.getvalue()


def qr_svg(content: str) -> bytes:
    """SVG bytes (a standalone document with XML declaration) of a QR code holding ``content``."""
    buffer = io.BytesIO()
    segno.make_qr(content, error="m").save(buffer, kind="svg", scale=SCALE, border=BORDER)
    return buffer.getvalue()


def qr_data_urls(content: str) -> tuple[str, str]:
    """``(png_data_url, svg_data_url)`` of one QR code; the symbol is built once."""
    code = segno.make_qr(content, error="m")
    png, svg = io.BytesIO(), io.BytesIO()
    code.save(png, kind="png", scale=SCALE, border=BORDER)
    code.save(svg, kind="svg", scale=SCALE, border=BORDER)
    return _data_url("image/png", png.getvalue()), _data_url("image/svg+xml", svg.getvalue())
