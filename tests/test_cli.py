"""The ``toolkit`` command itself."""

from __future__ import annotations

import subprocess
import sys


def test_toolkit_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "toolkit 0.1.0"
