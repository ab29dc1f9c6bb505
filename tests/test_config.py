"""Settings: read from TOOLKIT_* when asked, the key kept secret, and reading them starts nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from toolkit.config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    Settings,
    load_settings,
    read_key_file,
)
from toolkit.errors import ConfigurationError


def test_defaults_and_the_per_test_home(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.base_url is None and settings.api_key is None
    assert (settings.timeout, settings.connect_timeout, settings.max_retries) == (
        DEFAULT_TIMEOUT,
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_MAX_RETRIES,
    )
    assert settings.home == tmp_path / "toolkit-home"  # set by the autouse fixture


def test_variables_are_read_when_settings_are_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", "https://api.example.com")
    monkeypatch.setenv("TOOLKIT_API_KEY", "sk_live_settings_test")
    monkeypatch.setenv("TOOLKIT_TIMEOUT", "7.5")
    monkeypatch.setenv("TOOLKIT_MAX_RETRIES", "0")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLKIT_HOME", "relative/home")
    settings = load_settings()
    assert settings.base_url == "https://api.example.com"
    assert isinstance(settings.api_key, SecretStr)
    assert settings.api_key.get_secret_value() == "sk_live_settings_test"
    assert (settings.timeout, settings.max_retries) == (7.5, 0)
    assert settings.home == tmp_path / "relative" / "home"  # pinned where it was read
    assert "sk_live_settings_test" not in repr(settings) and "sk_live_settings_test" not in str(settings)


@pytest.mark.parametrize(
    ("name", "value"), [("TOOLKIT_TIMEOUT", "0"), ("TOOLKIT_MAX_RETRIES", "11"), ("TOOLKIT_TIMEOUT", "soon")]
)
def test_values_that_cannot_work_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.removeprefix("TOOLKIT_").lower()):
        load_settings()


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(ValidationError, match="frozen"):
        settings.timeout = 1.0  # type: ignore[misc]


def test_a_key_file_gives_its_one_line(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("sk_test_from_a_file\n", encoding="utf-8")
    assert read_key_file(path).get_secret_value() == "sk_test_from_a_file"


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "is empty"), ("\n\n", "is empty"), ("two words\n", "one line"), ("a\nb\n", "one line")],
)
def test_a_key_file_that_cannot_work_is_refused_without_showing_its_text(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "key"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=message) as caught:
        read_key_file(path)
    assert "words" not in str(caught.value)


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot read the API key file .*absent"):
        read_key_file(tmp_path / "absent")


def test_reading_settings_imports_no_sandbox_and_starts_no_thread() -> None:
    """Settings are read, never act: the sandbox is started by toolkit.environment alone."""
    code = (
        "import sys, threading\n"
        "from toolkit.config import load_settings\n"
        "load_settings()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('toolkit.sandbox', 'uvicorn', 'fastapi'))))\n"
        "print(threading.active_count())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "1"]
