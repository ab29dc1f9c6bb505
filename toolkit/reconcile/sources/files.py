"""Paths as the readers take them: a regular file only (a named pipe waits for a writer forever,
``/dev/zero`` never ends), and a small file read whole within a limit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolkit.errors import InputError


def _mode(path: Path) -> int | None:
    """``path``'s file type and mode (following links), None when nothing is there."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a folder on the way that cannot be entered, a name too long
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


#: What a path that is not a regular file is, in words.
_FILE_TYPES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _file_type(mode: int) -> str:
    """What a file of ``mode`` is, in words: ``a named pipe``, ``a character device`` ..."""
    return next((words for test, words in _FILE_TYPES if test(mode)), "not a file")


def _regular_file(path: Path, mode: int | None = None) -> None:
    """Refuse a path that is missing or not a regular file: a named pipe waits for a writer
    forever, and ``/dev/zero`` never ends; the readers measure and re-read what they are given.
    ``mode``: the path's mode, when the caller has it already (``_mode``)."""
    mode = _mode(path) if mode is None else mode
    if mode is None:
        raise InputError(f"{path}: file not found")
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)


def _not_regular(path: Path, mode: int) -> InputError:
    return InputError(f"{path}: cannot be read (it is not a regular file but {_file_type(mode)})")


def read_whole(path: Path, limit: int, what: str) -> bytes:
    """A regular file's bytes, for a file that is read whole (``what``: a rate file): refused when
    it is missing, not a regular file or longer than ``limit`` bytes. It is opened without
    waiting (``O_NONBLOCK``: a named pipe is refused at once rather than waited on) and never
    read past ``limit``: ``/dev/zero`` or a file growing meanwhile costs ``limit`` bytes at most."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise InputError(f"{path}: cannot be read (larger than {size_text(limit)}, the most a {what} may be)")
    return data


def size_text(size: int) -> str:
    """A limit in bytes as people write it: ``64 MiB``, ``4 KiB``, ``512 bytes``."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size:,} bytes"
