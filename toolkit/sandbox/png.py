"""Black-and-white PNGs of rasters scaled up by repeating lines, written without a compressor.

A QR code drawn at ``scale`` pixels per module repeats each line of pixels ``scale`` times. With
PNG's 'Up' filter the repeats are lines of zeros, and in DEFLATE they are one back-reference to the
repeats of the line before; the distinct lines go in stored (uncompressed) blocks. The bytes between
two distinct lines are then the same every time, so the image is a join of its lines with
precomputed glue plus two checksums. Measured on the request path of a wallet payment, zlib's
compressor (level 1, which sets up ~256 KB of state per call) took about three times as long as
this, for an image a third the size; here a 180 x 180 QR code is ~1.6 KB, read by every PNG decoder.
"""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: zlib header: DEFLATE with a 32 KiB window, no dictionary, "fastest" level; a multiple of 31.
_ZLIB_HEADER = b"\x78\x01"
_MAX_MATCH = 258
_MAX_DISTANCE = 32768
#: RFC 1951 section 3.2.5: first length / distance of each code, and its number of extra bits.
_LENGTH_BASE = (
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    13,
    15,
    17,
    19,
    23,
    27,
    31,
    35,
    43,
    51,
    59,
    67,
    83,
    99,
    115,
    131,
    163,
    195,
    227,
    258,
)
_LENGTH_EXTRA = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0)
_DISTANCE_BASE = (
    1,
    2,
    3,
    4,
    5,
    7,
    9,
    13,
    17,
    25,
    33,
    49,
    65,
    97,
    129,
    193,
    257,
    385,
    513,
    769,
    1025,
    1537,
    2049,
    3073,
    4097,
    6145,
    8193,
    12289,
    16385,
    24577,
)
_DISTANCE_EXTRA = (
    0,
    0,
    0,
    0,
    1,
    1,
    2,
    2,
    3,
    3,
    4,
    4,
    5,
    5,
    6,
    6,
    7,
    7,
    8,
    8,
    9,
    9,
    10,
    10,
    11,
    11,
    12,
    12,
    13,
    13,
)


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


class _Bits:
    """A DEFLATE bit stream: values least significant bit first, Huffman codes most significant first."""

    def __init__(self) -> None:
        self.value = 0
        self.count = 0

    def add(self, value: int, bits: int) -> None:
        self.value |= value << self.count
        self.count += bits

    def code(self, code: int, bits: int) -> None:
        self.add(int(f"{code:0{bits}b}"[::-1], 2), bits)

    def symbol(self, symbol: int) -> None:
        """A literal/length symbol of the fixed Huffman code (only 256-287 are used here)."""
        if symbol < 280:
            self.code(symbol - 256, 7)
        else:
            self.code(0xC0 + symbol - 280, 8)

    def stored_header(self, *, final: bool, length: int) -> None:
        self.add(int(final), 1)
        self.add(0, 2)
        self.count += -self.count % 8
        self.add(length | (length ^ 0xFFFF) << 16, 32)

    def match_block(self, *, final: bool, length: int, distance: int) -> None:
        """A fixed-Huffman block copying ``length`` bytes from ``distance`` back."""
        self.add(int(final), 1)
        self.add(1, 2)
        while length:
            # Pieces of at most 258 bytes, none shorter than 3.
            piece = min(length, _MAX_MATCH) if length - _MAX_MATCH not in (1, 2) else length - 3
            index = max(i for i, base in enumerate(_LENGTH_BASE) if base <= piece)
            self.symbol(257 + index)
            self.add(piece - _LENGTH_BASE[index], _LENGTH_EXTRA[index])
            code = max(i for i, base in enumerate(_DISTANCE_BASE) if base <= distance)
            self.code(code, 5)
            self.add(distance - _DISTANCE_BASE[code], _DISTANCE_EXTRA[code])
            length -= piece
        self.symbol(256)

    def take(self) -> bytes:
        """The whole bytes written so far (the last one padded with zero bits), and start over."""
        data = self.value.to_bytes((self.count + 7) // 8, "little")
        self.value = self.count = 0
        return data


@dataclass(frozen=True)
class _Layout:
    """The constant parts of every PNG with ``count`` lines of ``line_size`` bytes, each shown
    ``scale`` times."""

    head: bytes
    repeat: bytes
    opening: bytes
    separator: bytes
    glue: bytes
    closing: bytes
    tail: bytes


@functools.lru_cache(maxsize=16)
def _layout(width: int, line_size: int, count: int, scale: int) -> _Layout:
    group = line_size * scale
    if not (line_size - 2) * 8 < width <= (line_size - 1) * 8:
        raise ValueError(f"{width} pixels do not fill lines of {line_size} bytes")
    if group > _MAX_DISTANCE or count < 2 or line_size * (scale - 1) < 3:
        raise ValueError("lines too long for one DEFLATE window, or repeats too short to refer to")
    bits = _Bits()
    opening = _ZLIB_HEADER
    bits.stored_header(final=False, length=group)  # first line and its repeats, stored
    opening += bits.take()
    bits.stored_header(final=False, length=line_size)  # the next line, stored
    separator = bits.take()
    repeats = line_size * (scale - 1)
    bits.match_block(final=False, length=repeats, distance=group)  # its repeats: the previous ones
    bits.stored_header(final=False, length=line_size)
    glue = bits.take()
    bits.match_block(final=True, length=repeats, distance=group)
    closing = bits.take()
    header = struct.pack(">IIBBBBB", width, count * scale, 1, 0, 0, 0, 0)
    return _Layout(
        head=SIGNATURE + _chunk(b"IHDR", header),
        repeat=(b"\x02" + bytes(line_size - 1)) * (scale - 1),
        opening=opening,
        separator=separator,
        glue=glue,
        closing=closing,
        tail=_chunk(b"IEND", b""),
    )


_IDAT_CRC = zlib.crc32(b"IDAT")


def scaled_png(lines: bytes, *, width: int, line_size: int, scale: int) -> bytes:
    """A greyscale 1-bit PNG, ``width`` pixels wide, of ``lines`` (each ``line_size`` bytes: filter
    byte 0, then the pixels, 0 for black, padded to a whole byte), each line shown ``scale`` times."""
    layout = _layout(width, line_size, len(lines) // line_size, scale)
    rows = [lines[i : i + line_size] for i in range(0, len(lines), line_size)]
    adler = zlib.adler32(layout.repeat.join(rows) + layout.repeat)
    stream = b"".join(
        (
            layout.opening,
            rows[0],
            layout.repeat,
            layout.separator,
            layout.glue.join(rows[1:]),
            layout.closing,
            adler.to_bytes(4, "big"),
        )
    )
    return b"".join(
        (
            layout.head,
            len(stream).to_bytes(4, "big"),
            b"IDAT",
            stream,
            zlib.crc32(stream, _IDAT_CRC).to_bytes(4, "big"),
            layout.tail,
        )
    )
