"""Settings from ``TOOLKIT_*`` environment variables (or arguments); the API key is a SecretStr.

With no ``TOOLKIT_BASE_URL`` the toolkit talks to the embedded sandbox under ``TOOLKIT_HOME``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_HOME = Path(".toolkit")


class Settings(BaseSettings):
    """Where the service is and how to talk to it. ``repr`` never shows the key."""

    model_config = SettingsConfigDict(env_prefix="TOOLKIT_", extra="ignore", frozen=True)

    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0)
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0, le=10)
    home: Path = DEFAULT_HOME


def load_settings() -> Settings:
    """Read the environment now (not at import time, so tests and notebooks can change it)."""
    return Settings()
