"""Shared fixtures: no test depends on the developer's shell, and each gets its own TOOLKIT_HOME."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _clean_toolkit_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("TOOLKIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TOOLKIT_HOME", str(tmp_path / "toolkit-home"))
    yield
