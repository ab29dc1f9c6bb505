"""What the notebooks show: the environment banner, frames written beside the run, the processor
side of a reconciliation, the period filter, charts and the exceptions threshold.

The notebooks' cells stay thin by calling these; running the notebooks is ``toolkit.notebooks``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.notebooks import NotebookFailure

if TYPE_CHECKING:
    import pandas as pd


def environment_label() -> str:
    """Where calls go, as reports name it: the embedded sandbox's database, or the service's URL."""
    from toolkit.config import load_settings, resolve_environment

    return resolve_environment(load_settings()).label


def environment_banner() -> Any:
    """A Markdown line for the top of a notebook, so a sandbox run is never mistaken for the books."""
    import importlib

    display: Any = importlib.import_module("IPython.display")
    label = environment_label()
    note = ("**not the live service**: test data only" if label.startswith("embedded sandbox")
            else "live data")
    return display.Markdown(f"**Environment:** {label} ({note}) · run at "
                    f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")


def output_file(output_dir: str | Path | None, name: str) -> Path | None:
    """Where a notebook writes ``name``: inside ``output_dir``, or nowhere when it is empty."""
    if output_dir is None or not str(output_dir).strip():
        return None
    directory = Path(output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


def write_frame(frame: pd.DataFrame, output_dir: str | Path | None, name: str) -> Path | None:
    """Write a frame as CSV into ``output_dir`` (nothing when it is empty); amounts stay exact text.

    Columns holding dicts (actions with their QR images, localized names) are written as JSON.
    """
    import json

    path = output_file(output_dir, name)
    if path is None:
        return None
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object and out[column].map(lambda v: isinstance(v, dict | list)).any():
            out[column] = out[column].map(
                lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
                if isinstance(v, dict | list) else v)
    out.to_csv(path, index=out.index.name is not None)
    return path


def processor_side(processor_path: str | Path | None) -> tuple[Any, str]:
    """The processor side of a reconciliation and where it came from.

    A file when ``processor_path`` is given; else, on a sandbox (embedded, or a service that says
    it is one at ``GET /sandbox/info``), the sandbox's settlement export; else the journal's
    payments frame (what this toolkit created at the live service, with its recorded outcomes).
    """
    from toolkit.client import Client
    from toolkit.errors import SandboxError
    from toolkit.frames import payments_frame
    from toolkit.journal import Journal
    from toolkit.sandbox.controls import SandboxControls

    if processor_path is not None and str(processor_path).strip():
        return str(processor_path), f"processor file {processor_path}"
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


def _moments(values: pd.Series) -> pd.Series:
    """Text as written in a file (ISO dates or times, or epoch milliseconds) -> UTC timestamps."""
    import pandas as pd

    text = values.astype(str).str.strip()
    digits = text.str.fullmatch(r"\d{11,}")
    out = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    if digits.any():
        out[digits] = pd.to_datetime(text[digits].astype("int64"), unit="ms", utc=True)
    rest = ~digits & (text != "")
    if rest.any():
        out[rest] = pd.to_datetime(text[rest], utc=True, errors="coerce", format="mixed")
    return out


def restrict_period(loaded: Any, column: str, period_start: str | None, period_end: str | None) -> Any:
    """Keep the rows of a loaded side whose ``column`` falls in [period_start, period_end] (days, UTC).

    Returns a new ``LoadedInput``; the number of rows left out is in ``.frame.attrs["outside"]`` and
    the notebook shows it, so nothing disappears silently. No bounds: the input as it is.
    """
    import dataclasses

    import pandas as pd

    from toolkit.errors import InputError

    start = str(period_start or "").strip()
    end = str(period_end or "").strip()
    if not start and not end:
        return loaded
    frame = loaded.frame
    if column not in frame.columns:
        raise InputError(f"{loaded.source}: no {column!r} column to select the period "
                         f"{start or '...'} to {end or '...'} by")
    when = _moments(frame[column])
    keep = when.notna()
    try:
        if start:
            keep &= when >= pd.Timestamp(start, tz="UTC")
        if end:
            keep &= when < pd.Timestamp(end, tz="UTC").normalize() + pd.Timedelta(days=1)
    except ValueError as exc:
        raise InputError(f"period_start/period_end must be dates like 2024-05-31 ({exc})") from None
    kept = frame[keep.to_numpy()].reset_index(drop=True)
    kept.attrs["outside"] = int((~keep).sum())
    return dataclasses.replace(loaded, frame=kept, row_count=len(kept) + len(loaded.rejected))


def subscription_checks(subscriptions_ledger_path: str | Path | None) -> tuple[Any, pd.DataFrame] | None:
    """Check the subscription ledger against the subscriptions read through the API.

    Returns the result and the subscriptions frame, or None when no ledger is given.
    """
    if subscriptions_ledger_path is None or not str(subscriptions_ledger_path).strip():
        return None
    from toolkit.bulk import load_subscriptions
    from toolkit.reconcile import load_subscription_ledger, reconcile_subscriptions

    ledger = load_subscription_ledger(str(subscriptions_ledger_path))
    ids = [str(i) for i in ledger.frame["subscriptionId"]] if len(ledger.frame) else []
    loaded = load_subscriptions(ids, progress=False)
    return reconcile_subscriptions(ledger, loaded.frame), loaded.frame


class Chart:
    """A matplotlib figure that shows itself as a PNG in a notebook (and in its HTML export).

    Figures built without pyplot have no notebook display of their own; this gives them one
    without switching the kernel's matplotlib backend.
    """

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        import io

        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
        return buffer.getvalue()

    def __repr__(self) -> str:
        return "<Chart: " + (self.figure.axes[0].get_title() if self.figure.axes else "empty") + ">"


def category_chart(result: Any, title: str = "Exceptions by category") -> Chart:
    """A horizontal bar chart of the exceptions per category (categories with none left out)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    counts = {name: count for name, count in result.category_counts.items() if count}
    figure = Figure(figsize=(7, 0.45 * max(len(counts), 1) + 1.2))
    axes = figure.subplots()
    names = list(counts)[::-1]
    bars = axes.barh(names, [counts[n] for n in names], color="#b36b00")
    axes.bar_label(bars, padding=3)
    axes.set_xlabel("exceptions")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.25 ticks
    axes.set_title(title if counts else f"{title}: none")
    figure.tight_layout()
    return Chart(figure)


def check_threshold(result: Any, max_exceptions: int | None) -> str:
    """Raise ``NotebookFailure`` when exceptions exceed ``max_exceptions`` (-1 or None: no threshold)."""
    count = int(result.exception_count)
    if max_exceptions is None or int(max_exceptions) < 0:
        return f"{count} exceptions (no threshold set)"
    if count > int(max_exceptions):
        raise NotebookFailure(f"{count} exceptions, more than max_exceptions={max_exceptions}")
    return f"{count} exceptions, within max_exceptions={max_exceptions}"
