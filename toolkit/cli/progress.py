"""Where a long run is, shown on a terminal only.

The engine logs each step as it starts (the ``toolkit.reconcile`` logger, INFO). On a terminal, a
command shows those steps on stderr, each with the time since the run began, once the run has taken
more than ``SHOW_AFTER_S`` (a quick run stays quiet); DuckDB's own bar shows a query that runs long
(``backends/``). Into a log file, a pipe or a notebook's HTML: nothing extra.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import TextIO

#: A run quicker than this shows no steps.
SHOW_AFTER_S = 2.0
STEPS_LOGGER = "toolkit.reconcile"


class StepLines(logging.Handler):
    """Writes each step as ``[  3.1 s] pairing and classifying the keys``, from ``SHOW_AFTER_S``
    on: the step under way then, and every step after it."""

    def __init__(self, stream: TextIO, show_after: float) -> None:
        super().__init__(logging.INFO)
        self.stream = stream
        self.started = time.monotonic()
        self.shown = False
        self.latest: str | None = None
        self._guard = threading.Lock()  # the timer's thread and the run's
        self._timer = threading.Timer(show_after, self._show_latest)
        self._timer.daemon = True
        self._timer.start()

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the step as the latest; write it if the steps are shown already."""
        line = f"[{time.monotonic() - self.started:6.1f} s] {record.getMessage()}"
        with self._guard:
            self.latest = line
            if self.shown:
                self._write(line)

    def _show_latest(self) -> None:
        with self._guard:
            self.shown = True
            if self.latest is not None:
                self._write(self.latest)

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the timer: a run that ended quicker than ``SHOW_AFTER_S`` shows nothing."""
        self._timer.cancel()
        super().close()


@contextlib.contextmanager
def steps_on_terminal(stream: TextIO, show_after: float | None = None) -> Iterator[None]:
    """Show the engine's steps on ``stream`` while the block runs, if it is a terminal."""
    if not stream.isatty():
        yield
        return
    logger = logging.getLogger(STEPS_LOGGER)
    handler = StepLines(stream, SHOW_AFTER_S if show_after is None else show_after)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown here, not also by a handler the root logger may have
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
        handler.close()
