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

import os
import re
import stat
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolkit.errors import ConfigurationError
from toolkit.home import APP_NAME as APP_NAME
from toolkit.home import absolute_home
from toolkit.home import default_home as default_home

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_MAX_RETRIES = 2
#: What an API key may hold: printable ASCII without spaces (it travels in an HTTP header).
KEY_TEXT = re.compile(r"[\x21-\x7e]+")
#: The largest API key file read: it holds one line, a key of tens of characters; 4 KiB is ample
#: and bounds what a wrong path costs (``/dev/zero`` ended in a MemoryError).
MAX_KEY_FILE = 4096


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
        return absolute_home(value)


def load_settings() -> Settings:
    """Read the environment now (not at import time, so tests and notebooks can change it)."""
    return Settings()


def read_key_file(path: Path) -> SecretStr:
    """An API key kept in a file (``--api-key-file``): its one line, without the line break.

    A file keeps the key out of the process list, where ``--api-key KEY`` shows it to every user.
    Only a regular file of at most ``MAX_KEY_FILE`` bytes is read: a named pipe is refused rather
    than waited on (it is opened without waiting), and no more than that is ever read.
    """
    try:
        text = _read_key_bytes(Path(path).expanduser(), path).decode("utf-8")
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


def _read_key_bytes(path: Path, given: Path) -> bytes:
    """The key file's bytes; ``ConfigurationError`` (naming the path as ``given``) when it is not
    a regular file or is larger than ``MAX_KEY_FILE``."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((words for test, words in _NOT_FILES if test(mode)), "not a file")
            raise ConfigurationError(
                f"cannot read the API key file {given}: it is not a regular file but {kind}"
            )
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(MAX_KEY_FILE + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_KEY_FILE:
        raise ConfigurationError(
            f"the API key file {given} is larger than {MAX_KEY_FILE // 1024} KiB: it must hold one line, "
            "the key"
        )
    return data


_NOT_FILES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
