"""How much memory a backend may take: the limit given (``--memory-limit``), or a share of the
machine's, and the limit in words for the messages that name it."""

from __future__ import annotations

import os
import re

from toolkit.errors import EngineError

#: DuckDB's default memory limit as a share of the machine's physical memory.
MEMORY_SHARE = 0.6
#: The share of the memory limit left to the rest of the process (Python, the Arrow results,
#: the report, what DuckDB allocates outside its buffer manager): DuckDB's own limit is the rest.
#: At 10M rows a side and a 1.5 GiB limit the process peaked at 2.1 GB without it, 1.7 with it.
RESERVE_SHARE = 0.25

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory_limit(text: str) -> int:
    """``6GB``, ``500MB``, ``2g`` -> bytes, in binary units as Spark reads them (``6GB`` is 6 GiB;
    DuckDB would read it as 6 * 10**9 bytes, so it is given MiB)."""
    match = _SIZE.match(text)
    if not match:
        raise EngineError(f"--memory-limit {text!r}: write a size such as 6GB or 500MB")
    unit = (match.group(2) or "").upper()[:1]
    return int(float(match.group(1)) * _UNITS[unit])


def size_text(size: int) -> str:
    """Bytes as a person reads them, in the largest binary unit that is at least one: ``8 MiB``,
    ``1.5 GiB`` (a limit of 8MB is not ``0.0 GiB``)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def default_memory_limit() -> int:
    """``MEMORY_SHARE`` of the machine's physical memory, in bytes."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on every platform
        total = 8 << 30
    return int(total * MEMORY_SHARE)
