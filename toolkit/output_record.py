"""What the toolkit wrote in an output folder, so that a run only ever replaces its own files.

Every run, tracked or not, command or notebook, keeps ``.toolkit-written.json`` in its output
folder: each file it wrote there, with its sha256. Before a run writes or removes anything it
``claim``s every name it will touch, and stops (``OutputError``, exit 2, naming the file) when one
of them

* is one of the run's inputs (``--ledger d/exceptions.csv --output-dir d``);
* exists but is not in the record (a user's ``fx.csv``, an export the analyst saved there);
* is in the record but changed since the toolkit wrote it (edited by hand after the run);
* is not a regular file (a folder, a symlink: never followed, never replaced).

So a file the toolkit did not write, or that someone changed since, is never deleted or
overwritten; the run says which file stands in the way and the analyst moves it or picks another
folder. A folder written by a version before the record existed holds report files the record
does not list: they are refused in the same way, once.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import OutputError
from toolkit.outputs import write_text_atomic

#: The record's file name in each output folder.
RECORD_NAME = ".toolkit-written.json"
#: A record larger than this is not one the toolkit wrote (it lists a few dozen files).
_RECORD_LIMIT = 4 << 20


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (hard links and ``..`` included); a missing one compares
    by its absolute path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.absolute().resolve() == b.absolute().resolve()


def _input_paths(inputs: Iterable[str | Path | None]) -> list[Path]:
    return [Path(str(item)).expanduser() for item in inputs if item is not None and str(item).strip()]


@dataclass(frozen=True)
class OutputRecord:
    """The record of one output folder: file name -> sha256 of what the toolkit wrote there."""

    folder: Path
    files: Mapping[str, str]

    @property
    def path(self) -> Path:
        """Where the record is kept."""
        return self.folder / RECORD_NAME

    @classmethod
    def read(cls, folder: str | Path) -> OutputRecord:
        """The folder's record (empty when there is none); a record that cannot be read is an
        ``OutputError``: failing closed, nothing in the folder is taken for the toolkit's."""
        folder = Path(folder)
        path = folder / RECORD_NAME
        try:
            info = path.lstat()
        except FileNotFoundError:
            return cls(folder, {})
        except OSError as exc:
            raise OutputError(f"cannot read {path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode) or info.st_size > _RECORD_LIMIT:
            raise OutputError(f"{path} is not the toolkit's record of its files: move it aside")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            files = {str(name): str(entry["sha256"]) for name, entry in data["files"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise OutputError(
                f"{path} cannot be read as the toolkit's record of its files: move it aside "
                "(the files it listed are then refused until moved too)"
            ) from None
        return cls(folder, files)

    def claim(
        self, names: Iterable[str], *, inputs: Iterable[str | Path | None] = (), remove: Iterable[str] = ()
    ) -> None:
        """Refuse, before anything is written, a run that would write ``names`` or remove
        ``remove`` (those that exist) where one is an input, a file the toolkit did not write,
        or one changed since it did (see the module docstring)."""
        given = _input_paths(inputs)
        for name in dict.fromkeys([*names, *remove]):
            target = self.folder / name
            for item in given:
                if _same_file(target, item):
                    raise OutputError(
                        f"{target} is an input of this run ({item}) and the run would replace it: "
                        "choose another output folder"
                    )
            self._check_owned(target, name)

    def _check_owned(self, target: Path, name: str) -> None:
        try:
            info = target.lstat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(info.st_mode):
            raise OutputError(f"cannot write {target}: it is a folder")
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(f"cannot write {target}: it is not a regular file the toolkit wrote")
        if name not in self.files:
            raise OutputError(
                f"{target} was not written by the toolkit (it is not in {self.path.name}): it is left "
                "as it is; move it, or choose another output folder"
            )
        try:
            digest = file_sha256(target)
        except OSError as exc:
            raise OutputError(f"cannot read {target}: {exc.strerror or exc}") from None
        if digest != self.files[name]:
            raise OutputError(
                f"{target} changed since the toolkit wrote it: it is left as it is; move it, or "
                "choose another output folder"
            )

    def remove(self, names: Iterable[str]) -> list[str]:
        """Remove the files of ``names`` that exist (claimed first); returns those removed."""
        removed = []
        for name in names:
            try:
                (self.folder / name).unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OutputError(f"cannot remove {self.folder / name}: {exc.strerror or exc}") from None
            removed.append(name)
        return removed

    def updated(self, written: Iterable[str], removed: Iterable[str] = ()) -> OutputRecord:
        """Record the files of ``written`` (hashed as they are now) and drop ``removed``; the
        record on disk is read again first, so another writer's entries are kept."""
        current = dict(OutputRecord.read(self.folder).files)
        for name in removed:
            current.pop(name, None)
        for name in written:
            path = self.folder / name
            try:
                current[name] = file_sha256(path)
            except OSError as exc:
                raise OutputError(f"cannot read {path}: {exc.strerror or exc}") from None
        record = OutputRecord(self.folder, current)
        body = {"files": {name: {"sha256": digest} for name, digest in sorted(current.items())}}
        write_text_atomic(record.path, json.dumps(body, indent=2) + "\n")
        return record


def claim(
    folder: str | Path,
    names: Iterable[str],
    *,
    inputs: Iterable[str | Path | None] = (),
    remove: Iterable[str] = (),
) -> OutputRecord:
    """``OutputRecord.read(folder).claim(...)``: the record, once the names are shown to be free."""
    record = OutputRecord.read(folder)
    record.claim(names, inputs=inputs, remove=remove)
    return record
