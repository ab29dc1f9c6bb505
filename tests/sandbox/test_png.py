"""PNGs written without a compressor: valid zlib streams of exactly the intended pixels."""

from __future__ import annotations

import io
import random
import struct
import zlib

import pytest
from PIL import Image

from toolkit.sandbox.png import SIGNATURE, scaled_png


def _chunks(png: bytes) -> dict[bytes, bytes]:
    assert png.startswith(SIGNATURE)
    chunks, position = {}, len(SIGNATURE)
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        tag, data = png[position + 4 : position + 8], png[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", png[position + 8 + length : position + 12 + length])
        assert crc == zlib.crc32(tag + data)
        chunks[tag] = data
        position += 12 + length
    return chunks


@pytest.mark.parametrize(
    ("width", "rows", "scale"), [(180, 45, 4), (8, 2, 4), (16, 2, 2), (740, 185, 4), (1000, 3, 9)]
)
def test_the_stream_inflates_to_each_line_then_its_repeats(width: int, rows: int, scale: int) -> None:
    rng = random.Random(width)
    line_size = 1 + (width + 7) // 8
    lines = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(line_size - 1)) for _ in range(rows))
    png = scaled_png(lines, width=width, line_size=line_size, scale=scale)
    chunks = _chunks(png)
    assert list(chunks) == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBBBBB", chunks[b"IHDR"]) == (width, rows * scale, 1, 0, 0, 0, 0)
    repeat = (b"\x02" + bytes(line_size - 1)) * (scale - 1)
    expected = b"".join(lines[i : i + line_size] + repeat for i in range(0, len(lines), line_size))
    assert zlib.decompress(chunks[b"IDAT"]) == expected
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == (width, rows * scale)
    pixels = image.tobytes()
    for row in range(rows):
        bits = int.from_bytes(lines[row * line_size + 1 : (row + 1) * line_size], "big")
        wanted = bytes(255 if bits >> (8 * (line_size - 1) - 1 - x) & 1 else 0 for x in range(width))
        for repeat_index in range(scale):
            y = row * scale + repeat_index
            assert pixels[y * width : (y + 1) * width] == wanted


def test_shapes_it_cannot_write_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fill"):
        scaled_png(bytes(10 * 3), width=100, line_size=10, scale=4)
    with pytest.raises(ValueError, match="too short"):
        scaled_png(bytes(2 * 3), width=8, line_size=2, scale=2)
