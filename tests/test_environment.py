"""Which service: a URL and its key, or the embedded sandbox, started here and only here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import SecretStr

from toolkit import Client, Journal
from toolkit.config import Settings
from toolkit.environment import Environment, resolve_environment
from toolkit.errors import ConfigurationError, JournalError
from toolkit.sandbox.embedded import RunningSandbox


def test_a_service_is_named_by_its_url(tmp_path: Path) -> None:
    settings = Settings(
        base_url="https://api.example.com/v1/", api_key=SecretStr("sk_live_env"), home=tmp_path
    )
    environment = resolve_environment(settings)
    assert environment.kind == "service" and not environment.is_sandbox
    assert environment.base_url == "https://api.example.com/v1"
    assert environment.label == "service at https://api.example.com/v1"
    assert (
        environment.key.startswith("api-example-com-")
        and len(environment.key) == len("api-example-com-") + 12
    )
    assert "sk_live_env" not in repr(environment)
    assert resolve_environment(settings).key == environment.key  # stable: the journal's file name


def test_arguments_win_over_settings(tmp_path: Path) -> None:
    settings = Settings(base_url="https://a.example", api_key=SecretStr("sk_a"), home=tmp_path)
    environment = resolve_environment(settings, base_url="https://b.example", api_key="sk_b")
    assert environment.base_url == "https://b.example" and environment.api_key.get_secret_value() == "sk_b"


@pytest.mark.parametrize(
    ("base_url", "api_key", "message"),
    [
        ("ftp://x.example", "k", "must be an http"),
        ("https://x.example", None, "TOOLKIT_API_KEY is required"),
        ("https://x.example", "", "printable ASCII"),
        ("https://x.example", "key with spaces", "printable ASCII"),
        ("https://x.example", "key\n", "printable ASCII"),
    ],
)
def test_settings_that_cannot_work(tmp_path: Path, base_url: str, api_key: str | None, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        resolve_environment(Settings(home=tmp_path), base_url=base_url, api_key=api_key)
    assert not api_key or api_key not in str(caught.value)


def test_a_bad_key_is_refused_before_any_sandbox_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="printable ASCII"):
        resolve_environment(Settings(home=tmp_path / "home"), api_key="bad key")
    assert not (tmp_path / "home").exists()


def test_without_a_url_the_embedded_sandbox_of_the_home(tmp_path: Path) -> None:
    environment = resolve_environment(Settings(home=tmp_path / "home"), announce=False)
    database = (tmp_path / "home" / "sandbox.sqlite").resolve()
    assert environment.is_sandbox and database.is_file()
    assert environment.label == f"embedded sandbox ({database})"
    assert environment.base_url.startswith("http://127.0.0.1:")
    assert resolve_environment(Settings(home=tmp_path / "home")).base_url == environment.base_url  # once


def test_client_and_journal_take_a_resolved_environment(sandbox: RunningSandbox, tmp_path: Path) -> None:
    environment = resolve_environment(
        Settings(home=tmp_path), base_url=sandbox.base_url, api_key=sandbox.api_key
    )
    with Client(environment=environment) as client:
        assert client.environment is environment and client.base_url == sandbox.base_url
    with Journal.open(environment) as journal:
        assert journal.environment == environment.label
    with pytest.raises(ConfigurationError, match="not both"):
        Client(environment=environment, base_url=sandbox.base_url)


def test_environment_is_exported_from_the_package() -> None:
    import toolkit

    assert toolkit.Environment is Environment


def test_one_service_spelled_two_ways_is_one_journal(tmp_path: Path) -> None:
    """``HTTP://Host:80/`` and ``http://host`` are one service: they named two journals, so a
    payment recorded in one was sent again through the other."""

    def environment(url: str) -> Environment:
        return resolve_environment(Settings(home=tmp_path), base_url=url, api_key="sk_test")

    plain = environment("http://pay.example.com/v1")
    for spelling in ("HTTP://Pay.Example.com:80/v1/", "http://pay.example.com/v1//"):
        assert environment(spelling).key == plain.key
        assert environment(spelling).base_url == "http://pay.example.com/v1"
    assert environment("https://pay.example.com:443/v1").key == environment("https://pay.example.com/v1").key
    assert environment("http://pay.example.com:8080/v1").key != plain.key
    with pytest.raises(ConfigurationError, match="not a valid URL"):
        environment("http://127.000.000.001:8000")


def test_a_url_with_a_user_query_fragment_or_spaces_is_refused(tmp_path: Path) -> None:
    """Each named another journal for the same service: a run through ``http://ops@host`` sent
    the payments of ``http://host`` again, an unknown one too (and a user name may hold a password)."""
    for url, said in (
        ("http://ops:s3cret@127.0.0.1:8765", "without a user name:"),
        ("http://127.0.0.1:8765?token=x", "without a query (got"),
        ("http://127.0.0.1:8765/#x", "without a fragment (got"),
        (" http://127.0.0.1:8765", "must be an http(s) URL"),
    ):
        with pytest.raises(ConfigurationError, match=re.escape(said)) as refused:
            resolve_environment(Settings(home=tmp_path), base_url=url, api_key="sk_test")
        assert "s3cret" not in str(refused.value)


def test_a_journal_kept_under_the_url_as_written_is_refused_not_passed_over(tmp_path: Path) -> None:
    spelled = resolve_environment(Settings(home=tmp_path), base_url="HTTP://Pay.Example.com", api_key="k")
    assert spelled.former_key is not None and spelled.former_key != spelled.key
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / f"{spelled.former_key}.sqlite").write_bytes(b"")
    with pytest.raises(JournalError, match=r"named by the URL as written.*move it.*Nothing was sent"):
        Journal.for_environment(spelled, tmp_path)
    assert not Journal.path_for(spelled, tmp_path).exists()
