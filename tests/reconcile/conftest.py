"""A disk that fills up, for the tests of reports that cannot be written; each backend the engine
runs on, for the tests that run on both."""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit.reconcile.backends import Backend, connect
from toolkit.reconcile.schema import BACKENDS


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend the engine supports, one object for the whole session: the connection of
    ``connect(name)`` with its default settings (Spark: a local session, started once, on the
    first test that asks for it). A test that needs other settings connects for itself."""
    return connect(request.param)


#: ``fill_disk(folder, free=...)``: the folder (created), on a disk with ``free`` bytes left.
FillDisk = Callable[..., Path]


class _Disk:
    """``io.open`` for files written in ``folder``: they share ``free`` bytes, then ENOSPC.

    Every writer of the reports opens through ``io.open`` (``Path.open``, ``Path.write_*``,
    ``zipfile``), so the failure comes midway through a real write, as on a full disk.
    """

    def __init__(self, folder: Path, free: int) -> None:
        self.folder, self.free, self.real = folder.resolve(), free, io.open

    def open(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = self.real(file, mode, *args, **kwargs)
        writes = any(flag in mode for flag in "wax+")
        inside = isinstance(file, str | os.PathLike) and Path(file).resolve().parent == self.folder
        return _Limited(handle, self) if writes and inside else handle


class _Limited:
    def __init__(self, handle: Any, disk: _Disk) -> None:
        self._handle, self._disk = handle, disk

    def write(self, data: Any) -> int:
        if len(data) > self._disk.free:
            self._handle.write(data[: self._disk.free])
            self._handle.flush()
            self._disk.free = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._disk.free -= len(data)
        return int(self._handle.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _Limited:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


@pytest.fixture
def fill_disk(monkeypatch: pytest.MonkeyPatch) -> FillDisk:
    """Make a folder's disk full after ``free`` more bytes (undone after the test)."""

    def fill(folder: Path, *, free: int = 1_000) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setattr(io, "open", _Disk(folder, free).open)
        return folder

    return fill
