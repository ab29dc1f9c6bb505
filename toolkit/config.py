"""Settings from ``TOOLKIT_*`` environment variables (or arguments); the API key is a SecretStr.

With no ``TOOLKIT_BASE_URL`` the toolkit talks to the embedded sandbox under ``TOOLKIT_HOME``.
``TOOLKIT_HOME`` defaults to one folder per user (the platform's user data directory, e.g.
``~/.local/share/toolkit`` on Linux), never to the working directory: the journal lives there, and
every folder, notebook kernel and scheduled run of the user must share it, or a batch run from two
folders would be sent twice.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from platformdirs import user_data_path
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolkit.errors import ConfigurationError

logger = logging.getLogger("toolkit")

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_MAX_RETRIES = 2
APP_NAME = "toolkit"


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

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        """A relative ``TOOLKIT_HOME`` is pinned to where it was read, so kernels and jobs agree."""
        return value.expanduser().resolve()


def load_settings() -> Settings:
    """Read the environment now (not at import time, so tests and notebooks can change it)."""
    return Settings()


@dataclass(frozen=True)
class Environment:
    """Where calls go, and how the journal and reports name it.

    ``key`` is stable across runs: the embedded sandbox is named by its database (its port changes
    every run), any other service by its base URL. ``label`` is what reports print at the top.
    """

    kind: Literal["embedded-sandbox", "service"]
    base_url: str
    api_key: SecretStr = field(repr=False)
    key: str
    label: str

    @property
    def is_sandbox(self) -> bool:
        return self.kind == "embedded-sandbox"


_announced: set[str] = set()
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def resolve_environment(
    settings: Settings,
    *,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    announce: bool = True,
) -> Environment:
    """Arguments win over the environment; with no base URL, start (once) the embedded sandbox.

    The first use of the embedded sandbox is logged once per process, unless the caller says so
    itself (``announce=False``: the notebooks' banner, which a warning on stderr would duplicate).
    """
    secret = SecretStr(api_key) if isinstance(api_key, str) else api_key
    candidate = secret if secret is not None else settings.api_key
    if candidate is not None and not _HEADER_SAFE.fullmatch(candidate.get_secret_value()):
        raise ConfigurationError(
            "the API key must be printable ASCII without spaces or line breaks "
            "(a trailing newline from a file is a common cause)"
        )
    url = base_url or settings.base_url
    if not url:
        from toolkit.sandbox.embedded import embedded_sandbox

        sandbox = embedded_sandbox(settings.home)
        database = sandbox.db_path.resolve()
        if str(database) not in _announced:
            _announced.add(str(database))
            if announce:
                logger.warning(
                    "toolkit: TOOLKIT_BASE_URL is not set; using the embedded sandbox at %s (database %s)",
                    sandbox.base_url,
                    database,
                )
        return Environment(
            kind="embedded-sandbox",
            base_url=sandbox.base_url,
            api_key=secret or sandbox.api_key,
            key="sandbox-" + _digest(str(database)),
            label=f"embedded sandbox ({database})",
        )
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"TOOLKIT_BASE_URL must be an http(s) URL, got {url!r}")
    key = secret or settings.api_key
    if key is None or not key.get_secret_value():
        raise ConfigurationError(f"TOOLKIT_API_KEY is required to call {url}")
    url = url.rstrip("/")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", parsed.netloc).strip("-")
    return Environment(
        kind="service", base_url=url, api_key=key, key=f"{slug}-{_digest(url)}", label=f"service at {url}"
    )


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
    if not _HEADER_SAFE.fullmatch(key):
        raise ConfigurationError(
            f"the API key file {path} must hold one line: the key, printable ASCII without spaces"
        )
    return SecretStr(key)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]
