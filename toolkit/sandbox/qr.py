"""Real, scannable QR codes for wallet next actions, cheap enough for the request path.

segno encodes every code: error correction M, byte mode, and data mask pattern ``MASK`` fixed
rather than chosen by evaluating all eight (milliseconds of CPU per code: ``benchmarks/qr_codes.py``).
Every decoder reads any of the eight masks (the symbol's format information names it); the
evaluation of ISO/IEC 18004 section 7.8.3 only steers away from patterns that make scanning
harder. Mask 2 is the one that evaluation picks for most of the sandbox's checkout URLs (the same
benchmark counts), so fixing it gives up almost nothing.

A ``QrFamily`` draws the codes of payloads that share a prefix and differ in a fixed-length ASCII
tail (``https://checkout.sandbox.invalid/pay/ord_<32 hex>``) from one template, in tens of
microseconds instead of milliseconds, as PNG bytes identical to what it would draw from segno's
symbol of the same payload; SVGs come from segno directly.
"""

from __future__ import annotations

import base64
import contextlib
import io
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import segno

from toolkit.sandbox import png

#: Pixels per QR module in the PNG and user units per module in the SVG; border (quiet zone) in modules.
SCALE = 4
BORDER = 4
ERROR = "m"
#: Data mask pattern 2 (module dark-toggled where column mod 3 == 0); see the module docstring.
MASK = 2
#: Each family keeps the newest this many PNGs and SVGs (about 1.6 and 2.5 KB each).
IMAGE_CACHE_ENTRIES = 4096


def encode(content: str | bytes) -> segno.QRCode:
    """segno's symbol of ``content`` with the sandbox's fixed choices (error M, byte mode, ``MASK``)."""
    return segno.make_qr(content, error=ERROR, mask=MASK, mode="byte")


def data_url(media_type: str, content: bytes) -> str:
    """A ``data:`` URL of ``content`` (what the spec's ``imageDataUrl`` holds)."""
    return f"data:{media_type};base64,{base64.b64encode(content).decode('ascii')}"


def _line_size(size: int) -> int:
    """Bytes of one PNG scanline (filter byte + 1-bit pixels) of a ``size``-module symbol."""
    return 1 + ((size + 2 * BORDER) * SCALE + 7) // 8


# The raster is built at one bit per module ("slots": a scanline's bits divided by SCALE), then every
# slot is widened to SCALE pixels with bytes.translate: table j gives output byte j of each input
# byte, and strided slice assignment interleaves the SCALE results, all in C.
if 8 % SCALE:
    raise AssertionError("SCALE must divide 8")
_FILTER_SLOTS = 8 // SCALE
_WIDEN = tuple(
    bytes(
        (int("".join(bit * SCALE for bit in f"{value:08b}"), 2) >> (8 * (SCALE - 1 - j))) & 0xFF
        for value in range(256)
    )
    for j in range(SCALE)
)
_LIGHT = bytes.maketrans(b"\x00\x01", b"10")  # module (1 dark) -> pixel bit (1 light), as a digit


def _slots(matrix: Sequence[bytes | bytearray]) -> bytes:
    """One bit per module, quiet zone included, laid out so that ``_widen`` makes the scanlines."""
    size = len(matrix)
    per_line = _line_size(size) * 8 // SCALE
    pad = b"1" * (per_line - _FILTER_SLOTS - size - 2 * BORDER)
    quiet = b"1" * BORDER
    blank = b"0" * _FILTER_SLOTS + b"1" * (per_line - _FILTER_SLOTS)
    rows = [b"0" * _FILTER_SLOTS + quiet + bytes(row).translate(_LIGHT) + quiet + pad for row in matrix]
    digits = blank * BORDER + b"".join(rows) + blank * BORDER
    digits += b"0" * (-len(digits) % 8)  # whole bytes; ``_widen`` drops what this adds
    return int(digits, 2).to_bytes(len(digits) // 8, "big")


def _widen(slots: bytes, size: int) -> bytes:
    """Each slot bit repeated SCALE times: the scanlines, each a filter byte 0 then its pixels."""
    lines = bytearray(len(slots) * SCALE)
    for j, table in enumerate(_WIDEN):
        lines[j::SCALE] = slots.translate(table)
    return bytes(lines[: (size + 2 * BORDER) * _line_size(size)])


def module_lines(matrix: Sequence[bytes | bytearray]) -> bytes:
    """One scanline per module row, quiet zone included: the raster before vertical scaling."""
    return _widen(_slots(matrix), len(matrix))


def matrix_png(matrix: Sequence[bytes | bytearray]) -> bytes:
    """The PNG of a symbol's modules (segno's ``QRCode.matrix``)."""
    return _png(module_lines(matrix), _line_size(len(matrix)))


def _png(lines: bytes, line_size: int) -> bytes:
    """The PNG of ``module_lines``: SCALE pixel lines per module row."""
    width = (len(lines) // line_size) * SCALE  # square: as many module rows as columns
    return png.scaled_png(lines, width=width, line_size=line_size, scale=SCALE)


@dataclass(frozen=True)
class _Template:
    """The slots of ``prefix + tail`` as ``base`` XOR one difference per (position, byte) of the tail.

    ``tables[position][byte]`` caches the XOR of that byte's bit differences, filled on first use.
    """

    base: int
    nbytes: int
    size: int
    line_size: int
    bit_deltas: tuple[tuple[int, ...], ...]
    tables: tuple[dict[int, int], ...]

    def lines(self, tail: bytes) -> bytes:
        """``module_lines`` of ``prefix + tail``."""
        acc = self.base
        for table, value, deltas in zip(self.tables, tail, self.bit_deltas, strict=True):
            delta = table.get(value)
            if delta is None:
                delta = 0
                for bit in range(8):
                    if value >> bit & 1:
                        delta ^= deltas[bit]
                table[value] = delta
            acc ^= delta
        return _widen(acc.to_bytes(self.nbytes, "big"), self.size)


def _build_template(prefix: bytes, length: int) -> _Template:
    """Derive the template from segno's symbols of the prefix with 1 + 8 x ``length`` tails.

    With version, error level, mode, length and mask fixed, a symbol is an affine function of the
    payload's bits over GF(2): Reed-Solomon codewords are linear, module placement is a permutation,
    the mask and the format information are constants, and so are the slots drawn from the modules.
    The slots of any tail are then those of the all-zero tail XOR the differences made by each of
    its set bits.
    """

    def slots(tail: bytes) -> int:
        matrix = encode(prefix + tail).matrix
        if len(matrix) != size:
            raise AssertionError("payloads of one length must share a QR version")
        return int.from_bytes(_slots(matrix), "big")

    zero = encode(prefix + bytes(length)).matrix
    size = len(zero)
    raster = _slots(zero)
    base = int.from_bytes(raster, "big")
    deltas = tuple(
        tuple(
            slots(bytes(position) + bytes((1 << bit,)) + bytes(length - position - 1)) ^ base
            for bit in range(8)
        )
        for position in range(length)
    )
    return _Template(base, len(raster), size, _line_size(size), deltas, tuple({} for _ in range(length)))


class QrFamily:
    """QR codes of any payload, fast for ``prefix + tail`` with an ASCII tail of ``tail_length``.

    The template is derived on first use (one segno symbol per bit of the tail: ~0.3 s, once per
    process); any other payload is drawn from segno's symbol directly, the same image. The newest
    ``IMAGE_CACHE_ENTRIES`` PNGs and SVGs are kept, so an image is built once whether a payment's
    response or the image's URL asked for it first.
    """

    def __init__(self, *, prefix: str, tail_length: int) -> None:
        if not prefix.isascii():
            raise ValueError("the prefix of a QR family must be ASCII")
        self.prefix = prefix
        self.tail_length = tail_length
        self._lock = threading.Lock()
        self._template: _Template | None = None
        self._pngs: dict[str, bytes] = {}
        self._svgs: dict[str, bytes] = {}

    def _template_ready(self) -> _Template:
        template = self._template
        if template is None:
            with self._lock:
                template = self._template
                if template is None:
                    template = _build_template(self.prefix.encode("ascii"), self.tail_length)
                    self._template = template
        return template

    def png(self, content: str) -> bytes:
        """PNG bytes (SCALE pixels per module, BORDER modules of quiet zone) of the code."""
        image = self._pngs.get(content)
        if image is None:
            tail = content[len(self.prefix) :]
            if len(tail) == self.tail_length and content.startswith(self.prefix) and tail.isascii():
                template = self._template_ready()
                image = _png(template.lines(tail.encode("ascii")), template.line_size)
            else:
                image = matrix_png(encode(content).matrix)
            _remember(self._pngs, content, image)
        return image

    def png_data_url(self, content: str) -> str:
        """The PNG of ``content`` as a data URL."""
        return data_url("image/png", self.png(content))

    def svg(self, content: str) -> bytes:
        """SVG bytes (a standalone document with XML declaration) of the same symbol."""
        image = self._svgs.get(content)
        if image is None:
            buffer = io.BytesIO()
            encode(content).save(buffer, kind="svg", scale=SCALE, border=BORDER)
            image = buffer.getvalue()
            _remember(self._svgs, content, image)
        return image


def _remember(cache: dict[str, bytes], key: str, image: bytes) -> None:
    """Keep ``image``, dropping the oldest entry beyond ``IMAGE_CACHE_ENTRIES``."""
    if len(cache) >= IMAGE_CACHE_ENTRIES:
        with contextlib.suppress(KeyError, StopIteration, RuntimeError):  # another thread was first
            del cache[next(iter(cache))]
    cache[key] = image
