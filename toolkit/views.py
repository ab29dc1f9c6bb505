"""What the notebooks show: the environment banner, frames written beside the run, the processor
side of a reconciliation, the period filter, charts and the exceptions threshold.

The notebooks' cells stay thin by calling these; running the notebooks is ``toolkit.notebooks``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import NotebookFailure

if TYPE_CHECKING:
    import pandas as pd


def environment_label() -> str:
    """Where calls go, as reports name it: the embedded sandbox's database, or the service's URL."""
    from toolkit.config import load_settings, resolve_environment

    return resolve_environment(load_settings()).label


def environment_banner() -> Any:
    """Markdown for the top of a notebook: where calls go (so a sandbox run is never mistaken for
    the books) and which journal records them (so a user can tell two runs share one)."""
    import importlib

    from toolkit.config import load_settings, resolve_environment
    from toolkit.journal import Journal

    display: Any = importlib.import_module("IPython.display")
    settings = load_settings()
    environment = resolve_environment(settings, announce=False)  # said here, not as a stderr warning
    note = (
        "**not the live service** (`TOOLKIT_BASE_URL` is not set): test data only"
        if environment.is_sandbox
        else "live data"
    )
    return display.Markdown(
        f"**Environment:** {environment.label} ({note}) · run at "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC  \n"
        f"**Journal:** `{Journal.path_for(environment, settings.home)}`"
    )


def output_file(output_dir: str | Path | None, name: str) -> Path | None:
    """Where a notebook writes ``name``: inside ``output_dir``, or nowhere when it is empty."""
    if output_dir is None or not str(output_dir).strip():
        return None
    from toolkit.outputs import ensure_directory

    return ensure_directory(output_dir) / name


def write_frame(frame: pd.DataFrame, output_dir: str | Path | None, name: str) -> Path | None:
    """Write a frame as CSV into ``output_dir`` (nothing when it is empty); amounts stay exact text.

    Columns holding dicts (actions with their QR images, localized names) are written as JSON. Text
    a spreadsheet would execute is neutralised, and the file appears whole or not at all.
    """
    import json

    import pandas as pd

    from toolkit.outputs import atomic_path, neutralise_cell

    def cell(value: Any) -> Any:
        if isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        return neutralise_cell(value) if isinstance(value, str) else value

    path = output_file(output_dir, name)
    if path is None:
        return None
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(cell)
    if out.index.name is not None and pd.api.types.is_string_dtype(out.index.dtype):
        out.index = out.index.map(cell)
    with atomic_path(path) as temporary:
        out.to_csv(temporary, index=out.index.name is not None)
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


def restrict_period(loaded: Any, column: str, period_start: str | None, period_end: str | None) -> Any:
    """Keep the rows of a loaded side whose ``column`` falls in [period_start, period_end] (days, UTC).

    Returns a new ``LoadedInput`` (``toolkit.reconcile.select_period``): rows whose date cannot be
    read are rejected with the reason, rows outside the period are counted in ``.outside`` and
    shown by the notebook and the reports. No bounds: the input as it is.
    """
    from toolkit.reconcile import select_period

    return select_period(loaded, column, period_start, period_end)


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
    rejected = sum(c.rejected for c in result.counts)
    found = f"{count} exceptions" + (f" ({rejected} rejected row(s))" if rejected else "")
    if max_exceptions is None or int(max_exceptions) < 0:
        return f"{found}, no threshold set"
    if count > int(max_exceptions):
        raise NotebookFailure(f"{found}, more than max_exceptions={max_exceptions}")
    return f"{found}, within max_exceptions={max_exceptions}"


# ---------------------------------------------------------------------------------------------
# Tables as a reader (and the HTML export) should see them


def _cell_text(value: Any) -> str:
    """A cell as words: blank for missing, JSON-free text for dicts and lists, exact text else."""
    import pandas as pd

    if value is None or (not isinstance(value, dict | list | tuple) and pd.isna(value)):
        return ""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_cell_text(v) for v in value)
    return str(value)


def table(frame: pd.DataFrame, *, money: dict[str, str] | None = None) -> Any:
    """A frame for a notebook cell: blanks for missing values, no truncated cells, no 0..n index,
    and each money column (``money``: amount column -> currency column) shown with its currency.

    Returns a pandas Styler, which renders as HTML in the notebook and in its HTML export.
    """

    shown = frame.copy()
    for amount, currency in (money or {}).items():
        if amount in shown.columns and currency in shown.columns:
            shown[amount] = [
                f"{_cell_text(a)} {_cell_text(c)}".strip() if _cell_text(a) else ""
                for a, c in zip(shown[amount], shown[currency], strict=True)
            ]
    shown = shown.drop(columns=[c for c in set((money or {}).values()) if c in shown.columns])
    unnamed = shown.index.name is None  # positions (0..n), meaningless to a reader
    if unnamed and "merchantReferenceId" in shown.columns:
        shown, unnamed = shown.set_index("merchantReferenceId"), False
    text = shown.astype(object).map(_cell_text)
    text.index = [_cell_text(v) for v in text.index]
    text.index.name = shown.index.name
    styler = text.style.set_table_styles(
        [{"selector": "td", "props": "white-space: pre-wrap; text-align: left;"}]
    )
    return styler.hide(axis="index") if unnamed else styler


def errors_table(errors: pd.DataFrame) -> Any:
    """The rows that failed, or one line saying there were none (an empty table says nothing)."""
    if errors.empty:
        print("no errors: every row went through")
        return None
    return table(errors)


def exceptions_table(exceptions: pd.DataFrame) -> Any:
    """One category's exceptions: amounts with their currencies, keyed by merchantReferenceId."""
    return table(
        exceptions.drop(columns=["category"], errors="ignore"),
        money={"ledger_amount": "ledger_currency", "processor_amount": "processor_currency"},
    )


def count_words(counts: Any) -> str:
    """``{'new': 4, 'changed': 1}`` as ``4 new, 1 changed`` (a dict printed raw reads as code)."""
    return ", ".join(f"{int(n)} {name}" for name, n in dict(counts).items()) or "none"
