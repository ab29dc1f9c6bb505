"""The processor side of a notebook's reconciliation: a file, the sandbox's export, or the journal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def processor_side(processor_path: str | Path | None) -> tuple[str | pd.DataFrame, str]:
    """The processor side of a reconciliation and where it came from.

    A file when ``processor_path`` is given; else, on a sandbox (embedded, or a service that says
    it is one at ``GET /sandbox/info``), the sandbox's settlement export; else the journal's
    payments frame (what this toolkit created at the live service, with its recorded outcomes).
    """
    from toolkit.client import Client
    from toolkit.controls import SandboxControls
    from toolkit.errors import SandboxError
    from toolkit.frames import payments_frame
    from toolkit.journal import Journal

    if processor_path is not None and str(processor_path).strip():
        return str(processor_path), f"processor file {Path(processor_path).name}"
    with Client() as client:
        label = client.environment.label
        try:
            export = SandboxControls(client).export_payments()  # a refused key raises: a broken run
        except SandboxError:  # the live service has no /sandbox/info
            pass
        else:
            return export, f"settlement export of the {label}"
    with Journal.open() as journal:
        return payments_frame(journal), f"journal of payments created at the {label}"
