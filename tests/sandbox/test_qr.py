"""The test-side QR decoder: right about segno's codes, and refusing damaged ones."""

from __future__ import annotations

import io
import random
import string

import pytest
import segno

from tests.sandbox.qr_decode import Decoded, NotAQrCode, decode_modules, decode_png


def _png(symbol: segno.QRCode) -> bytes:
    buffer = io.BytesIO()
    symbol.save(buffer, kind="png", scale=4, border=4)
    return buffer.getvalue()


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
        assert decode_png(_png(segno.make_qr("mask", error="m", mask=mask))).mask == mask


@pytest.mark.parametrize("module", [(30, 30), (0, 8), (20, 20)])
def test_decoder_refuses_a_damaged_code(module: tuple[int, int]) -> None:
    url = "https://checkout.sandbox.invalid/pay/ord_" + "0" * 32
    symbol = segno.make_qr(url, error="m", mask=2)
    modules = [[bool(cell) for cell in row] for row in symbol.matrix]
    assert decode_modules(modules).text == url
    x, y = module
    modules[y][x] = not modules[y][x]
    with pytest.raises(NotAQrCode):
        decode_modules(modules)
