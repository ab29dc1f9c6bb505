"""The exit codes of every command, in a leaf both halves of ``toolkit reconcile`` import (the light
commands in ``reconcile.py``, the run in ``reconcile_run.py``): 0 ok, 1 findings, 2 the run could
not be done as asked."""

from __future__ import annotations

EXIT_OK, EXIT_TOO_MANY, EXIT_INPUT = 0, 1, 2
#: Infrastructure (the output) shares code 2 with bad input: neither is a finding for finance.
EXIT_OUTPUT = EXIT_INPUT
