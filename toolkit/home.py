"""Where the toolkit keeps its files (``TOOLKIT_HOME``), read without loading the settings' stack.

The rule, written once (``config.Settings.home`` uses it too): ``TOOLKIT_HOME`` when it is set
and not blank (``TOOLKIT_HOME=``, ``$X`` of an unset ``X`` in a crontab, is unset, not the working
directory), else the platform's per-user data folder; made absolute where it is read, so that
kernels and jobs started elsewhere agree.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "toolkit"


def default_home() -> Path:
    """The per-user home of the toolkit's files (journal, embedded sandbox), whatever the folder."""
    from platformdirs import user_data_path

    return user_data_path(APP_NAME, appauthor=False)


def user_cache() -> Path:
    """The per-user folder of what the toolkit can make again (compiled templates): the platform's
    cache folder (``XDG_CACHE_HOME`` on Linux), never ``TOOLKIT_HOME``."""
    from platformdirs import user_cache_path

    return user_cache_path(APP_NAME, appauthor=False)


def absolute_home(value: str | Path | None) -> Path:
    """``value`` as the home: blank or None is the default; a relative one is pinned to here."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default_home().expanduser().resolve()
    return Path(value).expanduser().resolve()


def toolkit_home() -> Path:
    """The home the environment names now (``TOOLKIT_HOME``), as ``load_settings().home`` gives it."""
    return absolute_home(os.environ.get("TOOLKIT_HOME"))
