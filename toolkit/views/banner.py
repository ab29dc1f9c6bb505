"""The top of every notebook: which environment its calls go to and which journal records them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.display import Markdown


def environment_label() -> str:
    """Where calls go, as reports name it: the embedded sandbox's database, or the service's URL."""
    from toolkit.environment import resolve_environment

    return resolve_environment().label


def environment_banner() -> Markdown:
    """Markdown for the top of a notebook: where calls go (so a sandbox run is never mistaken for
    the books) and which journal records them (so a user can tell two runs share one)."""
    from IPython.display import Markdown

    from toolkit.config import load_settings
    from toolkit.environment import resolve_environment
    from toolkit.journal import Journal

    settings = load_settings()
    environment = resolve_environment(settings, announce=False)  # said here, not as a stderr warning
    note = (
        "**not the live service** (`TOOLKIT_BASE_URL` is not set): test data only"
        if environment.is_sandbox
        else "live data"
    )
    return Markdown(  # type: ignore[no-untyped-call]  # IPython leaves its __init__ untyped
        f"**Environment:** {environment.label} ({note}) · run at "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC  \n"
        f"**Journal:** `{Journal.path_for(environment, settings.home)}`"
    )
