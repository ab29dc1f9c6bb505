"""QR codes of wallet payments: the template draws segno's symbols exactly, and every image decodes."""

from __future__ import annotations

import io
import random
import string
import uuid

import pytest
import segno

from tests.sandbox.qr_decode import Decoded, NotAQrCode, decode_modules, decode_png, decode_svg, png_modules
from toolkit.sandbox import qr
from toolkit.sandbox.checkout import CHECKOUT_QR, checkout_url


def test_checkout_codes_are_segnos_symbols_with_the_fixed_mask() -> None:
    for _ in range(20):
        order_id = f"ord_{uuid.uuid4().hex}"
        png = CHECKOUT_QR.png(checkout_url(order_id))
        symbol = segno.make_qr(checkout_url(order_id), error="m", mask=qr.MASK)
        assert png_modules(png) == [[bool(cell) for cell in row] for row in symbol.matrix]
        assert png == qr.matrix_png(symbol.matrix)
        assert decode_png(png) == Decoded(checkout_url(order_id), 5, "M", qr.MASK)
        assert CHECKOUT_QR.png_data_url(checkout_url(order_id)) == qr.data_url("image/png", png)


def test_checkout_codes_call_no_encoder_once_the_template_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps QR work off the request path: after the first code, no segno symbol is built."""
    CHECKOUT_QR.png(checkout_url(f"ord_{uuid.uuid4().hex}"))

    def refuse(content: str | bytes) -> segno.QRCode:
        raise AssertionError(f"segno called for {content!r}")

    monkeypatch.setattr(qr, "encode", refuse)
    url = checkout_url(f"ord_{uuid.uuid4().hex}")
    data_url = CHECKOUT_QR.png_data_url(url)
    monkeypatch.undo()
    assert decode_png(CHECKOUT_QR.png(url)).text == url
    assert data_url == qr.data_url("image/png", CHECKOUT_QR.png(url))


def test_svg_is_the_same_symbol() -> None:
    url = checkout_url(f"ord_{uuid.uuid4().hex}")
    svg = CHECKOUT_QR.svg(url)
    assert svg.startswith(b"<?xml") and CHECKOUT_QR.svg(url) is svg  # built once
    assert decode_svg(svg) == decode_png(CHECKOUT_QR.png(url))


@pytest.mark.parametrize(
    "content",
    [
        "https://pay.example/",
        "https://pay.example/abc",
        "https://pay.example/abcde",
        "https://pay.example/ab\u00e9d",
        "https://pay.example/" + "x" * 200,
        "https://pay.example/\U0001f4b3\U0001f4b3",
        "https://other.example/abcd",
        "HTTPS://PAY.EXAMPLE/abcd",
    ],
)
def test_other_payloads_are_drawn_from_segno(content: str) -> None:
    """A short family (8 x 4 template bits) for speed; other lengths, characters and prefixes fall back."""
    family = qr.QrFamily(prefix="https://pay.example/", tail_length=4)
    png = family.png(content)
    assert decode_png(png).text == content
    assert png == qr.matrix_png(qr.encode(content).matrix)


def test_every_tail_of_the_family_matches_segno() -> None:
    family = qr.QrFamily(prefix="HTTPS://PAY.EXAMPLE/", tail_length=3)
    rng = random.Random(7)
    for _ in range(25):
        content = "HTTPS://PAY.EXAMPLE/" + "".join(rng.choice(string.printable) for _ in range(3))
        assert family.png(content) == qr.matrix_png(qr.encode(content).matrix)
        assert decode_png(family.png(content)).text == content


def test_image_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qr, "IMAGE_CACHE_ENTRIES", 3)
    family = qr.QrFamily(prefix="https://pay.example/", tail_length=2)
    for tail in ("aa", "bb", "cc", "dd", "ee"):
        family.png(f"https://pay.example/{tail}")
        family.svg(f"https://pay.example/{tail}")
    assert len(family._pngs) == len(family._svgs) == 3


def test_the_prefix_must_be_ascii() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        qr.QrFamily(prefix="https://café.example/", tail_length=4)


# the decoder the tests rely on: right about segno's codes, and refusing damaged ones


def test_decoder_reads_segno_codes_of_every_level_mask_and_several_versions() -> None:
    rng = random.Random(3)
    for length in (1, 17, 60, 150, 300):
        for level in "lmqh":
            text = "".join(rng.choice(string.ascii_letters + string.digits + ":/?&") for _ in range(length))
            symbol = segno.make_qr(text, error=level, mode="byte", boost_error=False)
            buffer = io.BytesIO()
            symbol.save(buffer, kind="png", scale=rng.randint(1, 5), border=rng.randint(1, 6))
            decoded = decode_png(buffer.getvalue())
            assert decoded == Decoded(text, int(symbol.version), symbol.error, symbol.mask)
    for mask in range(8):
        assert decode_png(qr.matrix_png(segno.make_qr("mask", error="m", mask=mask).matrix)).mask == mask


@pytest.mark.parametrize("module", [(30, 30), (0, 8), (20, 20)])
def test_decoder_refuses_a_damaged_code(module: tuple[int, int]) -> None:
    symbol = qr.encode(checkout_url("ord_" + "0" * 32))
    modules = [[bool(cell) for cell in row] for row in symbol.matrix]
    assert decode_modules(modules).text == checkout_url("ord_" + "0" * 32)
    x, y = module
    modules[y][x] = not modules[y][x]
    with pytest.raises(NotAQrCode):
        decode_modules(modules)
