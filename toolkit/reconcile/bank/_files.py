"""Which files a caller means (a path, a folder, a glob, or a list of them) and what each one is.

The format is recognised from the content, never from the name: banks and portals name files as
they please (``.txt`` for MT940, ``.xml`` for OFX 2, ``.dat`` for BAI2).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable
from pathlib import Path

from toolkit.errors import InputError

Sources = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]

CAMT, MT940, BAI2, OFX = "camt.053", "mt940", "bai2", "ofx"
_GLOB = re.compile(r"[*?[]")
_MT940 = (re.compile(rb"(?m)^:20:"), re.compile(rb"(?m)^:60[FM]:"))
_CAMT_NAMESPACE = re.compile(rb"""xmlns(?::\w+)?\s*=\s*["']urn:iso:std:iso:20022:tech:xsd:camt\.(\d{3})\.""")


def statement_files(sources: Sources) -> list[Path]:
    """The files named, each once, in the order given (a folder's and a glob's sorted by name)."""
    items = [sources] if isinstance(sources, str | os.PathLike) else list(sources)
    if not items:
        raise InputError("no bank statement given: pass a file, a folder, a glob or a list of them")
    files: dict[Path, None] = {}
    for item in items:
        for path in _expand(os.fspath(item)):
            files.setdefault(path.resolve(), None)
    return list(files)


def _expand(item: str) -> list[Path]:
    path = Path(item)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not found:
            raise InputError(f"{item}: the folder holds no file")
        return found
    if path.is_file():
        return [path]
    if _GLOB.search(item):
        matched = sorted(Path(p) for p in glob.glob(item) if Path(p).is_file())
        if not matched:
            raise InputError(f"{item}: no file matches")
        return matched
    raise InputError(f"{item}: no such file or folder")


def recognise(data: bytes, name: str) -> str:
    """The format of a file from its first bytes: an XML namespace, a header, or the tags it opens with."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"OFXHEADER" in head[:512] or head[:5].upper() == b"<OFX>":
        return OFX
    if head.startswith(b"<"):
        camt = _CAMT_NAMESPACE.search(head)
        if camt and camt.group(1) == b"053":
            return CAMT
        if camt:
            raise InputError(f"{name}: a camt.{camt.group(1).decode()} message, not a camt.053 statement")
        raise InputError(f"{name}: XML, but neither camt.053 (its namespace) nor OFX (its header)")
    if head.startswith(b"01,"):
        return BAI2
    if all(tag.search(data) for tag in _MT940):
        return MT940
    raise InputError(f"{name}: not a bank statement in CAMT.053, MT940, BAI2 or OFX (read from its content)")
