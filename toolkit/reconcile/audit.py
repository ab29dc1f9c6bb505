"""What makes a track's audit log checkable by someone who did not write it: a keyed chain, and
heads kept outside the store.

* **Keyed chain.** With ``TOOLKIT_AUDIT_KEY`` (or ``TOOLKIT_AUDIT_KEY_FILE``, a file holding it) set,
  each new entry's hash is an HMAC-SHA256 under that key (``hmac-sha256:<hex>``), so whoever can
  write ``tracks.sqlite`` but does not hold the key cannot recompute the chain after editing it.
  The key is never stored, never a notebook parameter, and the notebook runner scrubs it from
  every output like the API key. A track is keyed from its first entry written with the key on;
  from then on it stays keyed: running, signing off or verifying it without the key is refused.
* **Heads.** After each entry is committed, the track's head (its last entry's number and hash)
  is written outside the store, to ``reconcile/heads/<track>``, and into the run's report and
  ``run.json``. A store whose track lacks that entry, or holds another one in its place (entries
  removed from the end, the chain recomputed, the track or the file deleted), fails
  verification instead of starting "run 1" again; ``toolkit reconcile verify --against FILE``
  checks the heads that a saved report or run.json holds.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import OutputError, TrackError
from toolkit.outputs import write_text_atomic

AUDIT_KEY_VARIABLE = "TOOLKIT_AUDIT_KEY"
AUDIT_KEY_FILE_VARIABLE = "TOOLKIT_AUDIT_KEY_FILE"
#: The hash of a keyed entry starts so; a plain one is 64 hex digits.
KEYED = "hmac-sha256:"
#: A key file is a short secret: anything larger is not one (``/dev/zero`` is refused at once).
KEY_FILE_LIMIT = 4096
#: A file read for heads (a report, a run.json) is read up to this much.
HEADS_FILE_LIMIT = 256 << 20
_HEAD = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,99})#(\d{1,12}):((?:hmac-sha256:)?[0-9a-f]{64})")


def audit_key(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The audit key from the environment (``TOOLKIT_AUDIT_KEY``, else the file named by
    ``TOOLKIT_AUDIT_KEY_FILE``), or None; a key file that is not a small regular file is refused."""
    environ = os.environ if environ is None else environ
    value = environ.get(AUDIT_KEY_VARIABLE, "")
    if value.strip():
        return value.strip().encode("utf-8")
    name = environ.get(AUDIT_KEY_FILE_VARIABLE, "")
    if not name.strip():
        return None
    path = Path(name).expanduser()
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise TrackError(f"{AUDIT_KEY_FILE_VARIABLE}: {path} is not a regular file")
        if info.st_size > KEY_FILE_LIMIT:
            raise TrackError(
                f"{AUDIT_KEY_FILE_VARIABLE}: {path} is larger than a key ({KEY_FILE_LIMIT} bytes)"
            )
        with path.open("rb") as handle:
            key = handle.read(KEY_FILE_LIMIT + 1).strip()
    except OSError as exc:
        raise TrackError(f"{AUDIT_KEY_FILE_VARIABLE}: cannot read {path} ({exc.strerror or exc})") from None
    if not key:
        raise TrackError(f"{AUDIT_KEY_FILE_VARIABLE}: {path} is empty")
    return key


def digest(text: str, key: bytes | None) -> str:
    """An entry's hash: HMAC-SHA256 under ``key`` (marked ``hmac-sha256:``), else plain SHA-256."""
    data = text.encode("utf-8")
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return KEYED + hmac.new(key, data, hashlib.sha256).hexdigest()


def is_keyed(entry_hash: str) -> bool:
    """Whether an entry's hash was made with the audit key."""
    return entry_hash.startswith(KEYED)


def matches(expected: str, actual: str) -> bool:
    """Hashes compared in constant time."""
    return hmac.compare_digest(expected.encode("utf-8"), actual.encode("utf-8"))


@dataclass(frozen=True)
class Head:
    """A track's last entry as seen at some moment: what a later store must still hold."""

    track: str
    entry: int
    hash: str

    @property
    def text(self) -> str:
        """``nightly#12:<hash>``: how a head is written in reports, run.json and the heads file."""
        return f"{self.track}#{self.entry}:{self.hash}"


def parse_heads(text: str, track: str | None = None) -> list[Head]:
    """Every head written in ``text`` (of ``track`` only, when given)."""
    found = [Head(m.group(1), int(m.group(2)), m.group(3)) for m in _HEAD.finditer(text)]
    return [head for head in found if track is None or head.track == track]


def heads_in_file(path: str | Path, track: str) -> list[Head]:
    """The heads of ``track`` a saved report or run.json holds; a file holding none is an error
    (it proves nothing, and saying "verified" against it would mislead)."""
    path = Path(path)
    try:
        if not path.is_file():
            raise TrackError(f"--against {path}: not a regular file")
        with path.open("rb") as handle:
            text = handle.read(HEADS_FILE_LIMIT).decode("utf-8", "replace")
    except OSError as exc:
        raise TrackError(f"--against {path}: cannot be read ({exc.strerror or exc})") from None
    heads = parse_heads(text, track)
    if not heads:
        raise TrackError(f"--against {path}: it holds no head of track {track}'s audit log")
    return heads


def _head_file(store: Path, track: str) -> Path:
    return store.parent / "heads" / track


def saved_head(store: Path, track: str) -> Head | None:
    """The head last saved beside the store for ``track`` (None when there is none)."""
    path = _head_file(store, track)
    try:
        with path.open("r", encoding="utf-8") as handle:
            heads = parse_heads(handle.read(4096), track)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TrackError(f"cannot read the saved head {path} ({exc.strerror or exc})") from None
    if not heads:
        raise TrackError(f"{path} holds no head of track {track}: restore it, or remove it on purpose")
    return heads[0]


def save_head(store: Path, head: Head) -> None:
    """Keep ``head`` beside the store, unless a later entry's head is there already (two runs
    finishing in either order); a head that cannot be written is an error of the run."""
    current = saved_head(store, head.track)
    if current is not None and current.entry > head.entry:
        return
    path = _head_file(store, head.track)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, head.text + "\n")
    except (OSError, OutputError) as exc:
        raise TrackError(
            f"entry {head.entry} of track {head.track} is recorded, but its head could not be saved "
            f"in {path.parent} ({getattr(exc, 'strerror', None) or exc}): the next run saves it"
        ) from None
