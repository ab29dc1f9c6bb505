"""Writing output files safely: whole or not at all, and nothing a spreadsheet would execute.

A report is written to a temporary name beside its target and moved into place, so a failed run
(a full disk, a read-only folder) leaves the previous file or none, never half of one. Failures
become ``OutputError`` naming the path, which the commands turn into exit code 2.

CSV cells that start like a formula (OWASP's rule: ``=``, ``+``, ``-``, ``@``, tab, carriage
return) get a leading apostrophe, so a spreadsheet shows them as text; true numbers such as
``-12.00`` stay numbers.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import OutputError

if TYPE_CHECKING:
    import pyarrow as pa

FORMULA_START = r"^[=+\-@\t\r]"
NUMBER = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$"
_FORMULA_START = re.compile(FORMULA_START)
_NUMBER = re.compile(NUMBER)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def ensure_directory(path: str | Path) -> Path:
    """The folder ``path``, created if missing; ``OutputError`` when it is a file or cannot be made."""
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write to {directory}: it exists and is not a folder") from None
    except OSError as exc:
        raise OutputError(f"cannot create the folder {directory}: {_reason(exc)}") from None
    if not directory.is_dir():
        raise OutputError(f"cannot write to {directory}: it exists and is not a folder")
    return directory


def fresh_folder(parent: str | Path) -> Path:
    """A new ``parent/<UTC time>`` folder, never one another run made in the same second (two
    tracks started by one cron line): ``-2``, ``-3`` ... after the time when it is taken."""
    parent = ensure_directory(parent)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 1000):
        candidate = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"cannot create the folder {candidate}: {_reason(exc)}") from None
        return candidate
    raise OutputError(f"cannot create a fresh report folder in {parent}")


def refuse_folders(paths: Iterable[Path]) -> None:
    """``OutputError`` for the first of ``paths`` that is a folder: no file can replace it, and
    finding that out only while moving a report's files into place would leave half of it."""
    for path in paths:
        if path.is_dir():
            raise OutputError(f"cannot write {path}: it is a folder")


def _new_file_beside(final: Path) -> Path:
    """An empty file with a fresh name beside ``final``, with the permissions the umask gives any
    new file (``tempfile.mkstemp`` makes it owner-only, and the report moved from it would stay so)."""
    for _ in range(100):
        candidate = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(final))


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; moved onto ``target`` only if the block succeeds."""
    final = Path(target)
    try:
        temporary = _new_file_beside(final)
    except OSError as exc:
        raise OutputError(f"cannot write {final}: {_reason(exc)}") from None
    try:
        yield temporary
        os.replace(temporary, final)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise OutputError(f"cannot write {final}: {_reason(exc)}") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_bytes_atomic(target: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``target`` whole or not at all."""
    with atomic_path(target) as temporary:
        temporary.write_bytes(data)
    return Path(target)


def write_text_atomic(target: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``target`` whole or not at all."""
    return write_bytes_atomic(target, text.encode("utf-8"))


def neutralise_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a formula-like start gets a leading apostrophe."""
    if _FORMULA_START.match(text) and not _NUMBER.match(text):
        return "'" + text
    return text


def neutralise_cells(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``neutralise_cell`` over a pyarrow string array, vectorised (nulls stay null)."""
    import pyarrow.compute as pc

    risky = pc.and_not(
        pc.match_substring_regex(array, FORMULA_START), pc.match_substring_regex(array, NUMBER)
    )
    if not pc.any(risky).as_py():
        return array
    return pc.if_else(risky, pc.binary_join_element_wise("'", array, ""), array)
