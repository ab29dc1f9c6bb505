"""Names the whole reconciliation package shares, in a leaf that imports nothing of it: the command
line builds its options from them without loading the engine."""

from __future__ import annotations

from typing import Literal

BackendName = Literal["duckdb", "pyspark"]
#: The engines that run a reconciliation (``backends.py`` has a class for each).
BACKENDS: tuple[BackendName, ...] = ("duckdb", "pyspark")
