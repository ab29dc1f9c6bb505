"""Settings from ``TOOLKIT_*`` environment variables (or arguments); the API key is a SecretStr.

Settings are read, never act: which service they name (and starting the embedded sandbox when
they name none) is ``toolkit.environment``. With no ``TOOLKIT_BASE_URL`` the toolkit talks to the
embedded sandbox under ``TOOLKIT_HOME``.
``TOOLKIT_HOME`` defaults to one folder per user (the platform's user data directory, e.g.
``~/.local/share/toolkit`` on Linux), never to the working directory: the journal lives there, and
every folder, notebook kernel and scheduled run of the user must share it, or a batch run from two
folders would be sent twice.
"""

from __future__ import annotations

import re
from pathlib import Path

from platformdirs import user_data_path
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolkit.errors import ConfigurationError

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_MAX_RETRIES = 2
APP_NAME = "toolkit"
#: What an API key may hold: printable ASCII without spaces (it travels in an HTTP header).
KEY_TEXT = re.compile(r"[\x21-\x7e]+")


def default_home() -> Path:
    """The per-user home of the toolkit's files (journal, embedded sandbox), whatever the folder."""
    return user_data_path(APP_NAME, appauthor=False)


class Settings(BaseSettings):
    """Where the service is and how to talk to it. ``repr`` never shows the key."""

    model_config = SettingsConfigDict(env_prefix="TOOLKIT_", extra="ignore", frozen=True)

    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0)
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0, le=10)
    home: Path = Field(default_factory=default_home)

    @field_validator("home", mode="before")
    @classmethod
    def _set_but_empty(cls, value: object) -> object:
        """``TOOLKIT_HOME=`` (``$X`` of an unset ``X`` in a crontab) is unset, not the working
        directory: a journal per folder would send a batch again from another folder."""
        return default_home() if isinstance(value, str) and not value.strip() else value

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        """A relative ``TOOLKIT_HOME`` is pinned to where it was read, so kernels and jobs agree."""
        return value.expanduser().resolve()


def load_settings() -> Settings:
    """Read the environment now (not at import time, so tests and notebooks can change it)."""
    return Settings()


def read_key_file(path: Path) -> SecretStr:
    """An API key kept in a file (``--api-key-file``): its one line, without the line break.

    A file keeps the key out of the process list, where ``--api-key KEY`` shows it to every user.
    """
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(f"cannot read the API key file {path}: {reason}") from None
    key = text.strip()
    if not key:
        raise ConfigurationError(f"the API key file {path} is empty")
    if not KEY_TEXT.fullmatch(key):
        raise ConfigurationError(
            f"the API key file {path} must hold one line: the key, printable ASCII without spaces"
        )
    return SecretStr(key)
