"""A small QR decoder for tests: reads a PNG or a segno SVG back to the text it holds.

Independent of the encoder (no segno here): it finds the symbol by its finder pattern, requires
the finder, timing and alignment patterns to be intact, the format information to be a valid BCH codeword in both copies, unmasks with the mask it names,
reads the codewords in the standard's zig-zag order, de-interleaves the Reed-Solomon blocks,
requires every block to be a valid codeword (all syndromes zero: a scanner would need no error
correction at all) and parses the byte-mode segments. Versions 1-40, every error level and mask;
byte mode only, which is what the sandbox encodes.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

Grid = list[list[bool]]

#: Format information: 2 bits of error level (this order) then 3 bits of mask.
_LEVEL_BITS = {1: "L", 0: "M", 3: "Q", 2: "H"}
_LEVELS = "LMQH"
#: ISO/IEC 18004 table 9, per version 1-40: error correction codewords per block, number of blocks.
_ECC_PER_BLOCK = {
    "L": (
        7,
        10,
        15,
        20,
        26,
        18,
        20,
        24,
        30,
        18,
        20,
        24,
        26,
        30,
        22,
        24,
        28,
        30,
        28,
        28,
        28,
        28,
        30,
        30,
        26,
        28,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
    ),
    "M": (
        10,
        16,
        26,
        18,
        24,
        16,
        18,
        22,
        22,
        26,
        30,
        22,
        22,
        24,
        24,
        28,
        28,
        26,
        26,
        26,
        26,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
        28,
    ),
    "Q": (
        13,
        22,
        18,
        26,
        18,
        24,
        18,
        22,
        20,
        24,
        28,
        26,
        24,
        20,
        30,
        24,
        28,
        28,
        26,
        30,
        28,
        30,
        30,
        30,
        30,
        28,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
    ),
    "H": (
        17,
        28,
        22,
        16,
        22,
        28,
        26,
        26,
        24,
        28,
        24,
        28,
        22,
        24,
        24,
        30,
        28,
        28,
        26,
        28,
        30,
        24,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
        30,
    ),
}
_BLOCKS = {
    "L": (
        1,
        1,
        1,
        1,
        1,
        2,
        2,
        2,
        2,
        4,
        4,
        4,
        4,
        4,
        6,
        6,
        6,
        6,
        7,
        8,
        8,
        9,
        9,
        10,
        12,
        12,
        12,
        13,
        14,
        15,
        16,
        17,
        18,
        19,
        19,
        20,
        21,
        22,
        24,
        25,
    ),
    "M": (
        1,
        1,
        1,
        2,
        2,
        4,
        4,
        4,
        5,
        5,
        5,
        8,
        9,
        9,
        10,
        10,
        11,
        13,
        14,
        16,
        17,
        17,
        18,
        20,
        21,
        23,
        25,
        26,
        28,
        29,
        31,
        33,
        35,
        37,
        38,
        40,
        43,
        45,
        47,
        49,
    ),
    "Q": (
        1,
        1,
        2,
        2,
        4,
        4,
        6,
        6,
        8,
        8,
        8,
        10,
        12,
        16,
        12,
        17,
        16,
        18,
        21,
        20,
        23,
        23,
        25,
        27,
        29,
        34,
        34,
        35,
        38,
        40,
        43,
        45,
        48,
        51,
        53,
        56,
        59,
        62,
        65,
        68,
    ),
    "H": (
        1,
        1,
        2,
        4,
        4,
        4,
        5,
        6,
        8,
        8,
        11,
        11,
        16,
        16,
        18,
        16,
        19,
        21,
        25,
        25,
        25,
        34,
        30,
        32,
        35,
        37,
        40,
        42,
        45,
        48,
        51,
        54,
        57,
        60,
        63,
        66,
        70,
        74,
        77,
        81,
    ),
}
_MASKS: tuple[Callable[[int, int], bool], ...] = (
    lambda x, y: (x + y) % 2 == 0,
    lambda x, y: y % 2 == 0,
    lambda x, y: x % 3 == 0,
    lambda x, y: (x + y) % 3 == 0,
    lambda x, y: (x // 3 + y // 2) % 2 == 0,
    lambda x, y: x * y % 2 + x * y % 3 == 0,
    lambda x, y: (x * y % 2 + x * y % 3) % 2 == 0,
    lambda x, y: ((x + y) % 2 + x * y % 3) % 2 == 0,
)

# GF(256) with the QR polynomial x^8 + x^4 + x^3 + x^2 + 1.
_EXP = [0] * 512
_LOG = [0] * 256
_value = 1
for _power in range(255):
    _EXP[_power] = _EXP[_power + 255] = _value
    _LOG[_value] = _power
    _value <<= 1
    if _value & 0x100:
        _value ^= 0x11D


def _mul(a: int, b: int) -> int:
    return 0 if a == 0 or b == 0 else _EXP[_LOG[a] + _LOG[b]]


class NotAQrCode(ValueError):
    """The image does not hold a valid, error-free QR code."""


@dataclass(frozen=True)
class Decoded:
    text: str
    version: int
    error: str
    mask: int


def png_modules(png: bytes) -> Grid:
    """The modules of a QR code drawn with square modules of a whole number of pixels."""
    image = Image.open(io.BytesIO(png)).convert("L")
    width, height = image.size
    pixels = image.tobytes()

    def dark(x: int, y: int) -> bool:
        return pixels[y * width + x] < 128

    top = next((y for y in range(height) if any(dark(x, y) for x in range(width))), None)
    if top is None:
        raise NotAQrCode("no dark pixel")
    row = [x for x in range(width) if dark(x, top)]
    left, right = row[0], row[-1]
    run = 0
    while dark(left + run, top):
        run += 1
    module = run / 7  # the top edge of the top-left finder pattern is 7 modules
    size = round((right - left + 1) / module)
    return [
        [dark(int(left + (x + 0.5) * module), int(top + (y + 0.5) * module)) for x in range(size)]
        for y in range(size)
    ]


def svg_modules(svg: bytes) -> Grid:
    """The modules of a segno SVG: one path of horizontal dark runs (``M``, ``m``, ``h``, ``H``)."""
    root = ET.fromstring(svg)  # noqa: S314 - our own server's output
    paths = root.findall(".//{http://www.w3.org/2000/svg}path")
    if len(paths) != 1:
        raise NotAQrCode(f"expected one path, found {len(paths)}")
    tokens = re.findall(r"[A-Za-z]|-?\d+(?:\.\d+)?", paths[0].attrib["d"])
    dark: set[tuple[int, int]] = set()
    x = y = 0.0
    index = 0
    while index < len(tokens):
        command = tokens[index]
        if command in "Mm":
            dx, dy = float(tokens[index + 1]), float(tokens[index + 2])
            x, y = (dx, dy) if command == "M" else (x + dx, y + dy)
            index += 3
        elif command in "Hh":
            end = float(tokens[index + 1]) + (x if command == "h" else 0)
            dark.update((column, math.floor(y)) for column in range(round(x), round(end)))
            x = end
            index += 2
        else:
            raise NotAQrCode(f"unexpected path command {command!r}")
    left, top = min(c for c, _ in dark), min(r for _, r in dark)
    size = max(c for c, _ in dark) - left + 1
    return [[(left + c, top + r) in dark for c in range(size)] for r in range(size)]


def _alignment_positions(version: int) -> list[int]:
    if version == 1:
        return []
    count = version // 7 + 2
    size = version * 4 + 17
    step = 26 if version == 32 else (version * 4 + count * 2 + 1) // (count * 2 - 2) * 2
    return [6, *reversed([size - 7 - i * step for i in range(count - 1)])]


def _function_modules(size: int, version: int) -> Grid:
    taken = [[False] * size for _ in range(size)]

    def rect(x: int, y: int, width: int, height: int) -> None:
        for row in range(max(y, 0), min(y + height, size)):
            for column in range(max(x, 0), min(x + width, size)):
                taken[row][column] = True

    rect(0, 0, 9, 9)  # finder patterns, separators, format information, dark module
    rect(size - 8, 0, 8, 9)
    rect(0, size - 8, 9, 8)
    rect(6, 0, 1, size)  # timing patterns
    rect(0, 6, size, 1)
    positions = _alignment_positions(version)
    corners = (
        {(positions[0], positions[0]), (positions[0], positions[-1]), (positions[-1], positions[0])}
        if positions
        else set()
    )
    for cy in positions:
        for cx in positions:
            if (cx, cy) not in corners:
                rect(cx - 2, cy - 2, 5, 5)
    if version >= 7:  # version information
        rect(size - 11, 0, 3, 6)
        rect(0, size - 11, 6, 3)
    return taken


def _check_patterns(modules: Grid, version: int) -> None:
    """Finder patterns with their light separators, timing patterns and alignment patterns: what a
    scanner locates the symbol and its module grid by."""
    size = len(modules)

    for left, top in ((0, 0), (size - 7, 0), (0, size - 7)):
        for y in range(max(top - 1, 0), min(top + 8, size)):
            for x in range(max(left - 1, 0), min(left + 8, size)):
                distance = max(abs(x - left - 3), abs(y - top - 3))  # 4: the separator
                if modules[y][x] != (distance in (0, 1, 3)):
                    raise NotAQrCode(f"finder pattern broken at ({x}, {y})")
    for i in range(8, size - 8):
        if modules[6][i] != (i % 2 == 0) or modules[i][6] != (i % 2 == 0):
            raise NotAQrCode(f"timing pattern broken at {i}")
    positions = _alignment_positions(version)
    corners = (
        {(positions[0], positions[0]), (positions[0], positions[-1]), (positions[-1], positions[0])}
        if positions
        else set()
    )
    for cy in positions:
        for cx in positions:
            if (cx, cy) in corners:
                continue
            for y in range(cy - 2, cy + 3):
                for x in range(cx - 2, cx + 3):
                    if modules[y][x] != (max(abs(x - cx), abs(y - cy)) != 1):
                        raise NotAQrCode(f"alignment pattern broken at ({x}, {y})")


def _format_codeword(level: str, mask: int) -> int:
    data = [1, 0, 3, 2][_LEVELS.index(level)] << 3 | mask
    remainder = data
    for _ in range(10):
        remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537)
    return (data << 10 | remainder) ^ 0x5412


def _read_format(modules: Grid) -> tuple[str, int]:
    size = len(modules)
    first = [modules[i][8] for i in range(6)] + [modules[7][8], modules[8][8], modules[8][7]]
    first += [modules[8][14 - i] for i in range(9, 15)]
    second = [modules[8][size - 1 - i] for i in range(8)] + [modules[size - 15 + i][8] for i in range(8, 15)]
    copies = {sum(int(bit) << i for i, bit in enumerate(bits)) for bits in (first, second)}
    if len(copies) != 1:
        raise NotAQrCode("the two copies of the format information differ")
    bits = copies.pop()
    for level in _LEVELS:
        for mask in range(8):
            if _format_codeword(level, mask) == bits:
                return level, mask
    raise NotAQrCode(f"format information {bits:015b} is not a valid codeword")


def _syndromes_zero(block: list[int], ecc: int) -> bool:
    for power in range(ecc):
        value = 0
        for codeword in block:
            value = _mul(value, _EXP[power]) ^ codeword
        if value:
            return False
    return True


def decode_modules(modules: Grid) -> Decoded:
    size = len(modules)
    if size < 21 or (size - 17) % 4 or any(len(row) != size for row in modules):
        raise NotAQrCode(f"a {size}-module grid is not a QR symbol")
    version = (size - 17) // 4
    _check_patterns(modules, version)
    level, mask = _read_format(modules)
    if not modules[size - 8][8]:
        raise NotAQrCode("the dark module is light")
    taken = _function_modules(size, version)
    masked = _MASKS[mask]
    bits: list[int] = []
    right = size - 1
    while right >= 1:
        if right == 6:
            right = 5
        upward = (right + 1) & 2 == 0
        for vertical in range(size):
            y = size - 1 - vertical if upward else vertical
            for x in (right, right - 1):
                if not taken[y][x]:
                    bits.append(int(modules[y][x] != masked(x, y)))
        right -= 2
    codewords = [int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits) - 7, 8)]
    count, ecc = _BLOCKS[level][version - 1], _ECC_PER_BLOCK[level][version - 1]
    short_count = count - len(codewords) % count
    short_length = len(codewords) // count
    blocks: list[list[int]] = [[] for _ in range(count)]
    stream = iter(codewords)
    for i in range(short_length + 1):
        for j in range(count):
            if i != short_length - ecc or j >= short_count:
                blocks[j].append(next(stream))
    for block in blocks:
        if not _syndromes_zero(block, ecc):
            raise NotAQrCode("a Reed-Solomon block has errors")
    data = "".join(f"{codeword:08b}" for block in blocks for codeword in block[:-ecc])
    text, position = b"", 0
    while position + 4 <= len(data):
        mode = int(data[position : position + 4], 2)
        position += 4
        if mode == 0:
            break
        if mode != 0b0100:
            raise NotAQrCode(f"mode {mode:04b} is not byte mode")
        width = 8 if version <= 9 else 16
        length = int(data[position : position + width], 2)
        position += width
        text += bytes(int(data[position + 8 * i : position + 8 * i + 8], 2) for i in range(length))
        position += 8 * length
    try:  # what scanners do without an ECI: UTF-8 when it is valid, else ISO-8859-1 (the default)
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        decoded = text.decode("latin-1")
    return Decoded(decoded, version, level, mask)


def decode_png(png: bytes) -> Decoded:
    return decode_modules(png_modules(png))


def decode_svg(svg: bytes) -> Decoded:
    return decode_modules(svg_modules(svg))
