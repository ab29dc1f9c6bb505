"""``toolkit sandbox``: where the key comes from (and that it stays out of ps and the output),
``--log-requests``, and ``toolkit sandbox faults add|list|clear`` against a running sandbox."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, wait_until_answering
from tests.sandbox.conftest import TEST_KEY, Api, now_ms
from toolkit.cli import main
from toolkit.cli.sandbox import server_key
from toolkit.sandbox import store
from toolkit.sandbox.db import Database


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "sandbox.key"
    path.write_text(TEST_KEY + "\n")
    return path


def test_help_says_where_the_key_may_come_from(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["sandbox", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for words in (
        "--api-key-file",
        "$TOOLKIT_SANDBOX_API_KEY",
        "$TOOLKIT_API_KEY",
        "ps",
        "--log-requests",
        "faults",
    ):
        assert words in text, words


def test_the_key_is_taken_in_order(tmp_path: Path, key_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(tmp_path / "keys.sqlite")

    def key(api_key: str | None = None, api_key_file: Path | None = None) -> tuple[str, str]:
        return server_key(argparse.Namespace(api_key=api_key, api_key_file=api_key_file), db)

    stored = store.stored_api_key(db)
    assert key() == (stored, "database")
    monkeypatch.setenv("TOOLKIT_API_KEY", "sk_from_toolkit_env")
    assert key() == ("sk_from_toolkit_env", "$TOOLKIT_API_KEY")
    monkeypatch.setenv("TOOLKIT_SANDBOX_API_KEY", "sk_from_sandbox_env")
    assert key() == ("sk_from_sandbox_env", "$TOOLKIT_SANDBOX_API_KEY")
    assert key(api_key_file=key_file) == (TEST_KEY, str(key_file))
    assert key(api_key="sk_from_option") == ("sk_from_option", "--api-key")


@pytest.mark.parametrize(
    ("content", "problem"), [("", "is empty"), ("two words\n", "one line"), (None, "cannot read")]
)
def test_a_bad_key_file_stops_the_server_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, problem: str
) -> None:
    path = tmp_path / "bad.key"
    if content is not None:
        path.write_text(content)
    code = main(["sandbox", "--db", str(tmp_path / "s.sqlite"), "--api-key-file", str(path)])
    assert code == 2 and problem in capsys.readouterr().err


def test_api_key_and_api_key_file_exclude_each_other(key_file: Path) -> None:
    with pytest.raises(SystemExit):
        main(["sandbox", "--api-key", "k", "--api-key-file", str(key_file)])


@pytest.mark.slow
def test_served_with_a_key_file_it_logs_requests_and_never_prints_the_key(
    tmp_path: Path, key_file: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolkit.cli",
            "sandbox",
            "--port",
            str(port),
            "--db",
            str(tmp_path / "s.sqlite"),
            "--api-key-file",
            str(key_file),
            "--log-requests",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_answering(url + "/openapi.json")
        auth = {"X-API-KEY": TEST_KEY, "X-Timestamp": str(now_ms())}
        assert httpx.get(url + "/subscription/sub_cli", headers=auth).status_code == 404
        cmdline = Path(f"/proc/{server.pid}/cmdline")
        if cmdline.exists():  # what ps shows (Linux)
            assert TEST_KEY.encode() not in cmdline.read_bytes()
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0].decode()
    assert TEST_KEY not in output
    assert f"api key: from {key_file} (not printed)" in output
    assert " GET /subscription/sub_cli 404 " in output


def test_faults_add_list_clear(
    api: Api, key_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", api.sandbox.base_url)
    options = ["--api-key-file", str(key_file)]
    assert (
        main(
            ["sandbox", "faults", "add", "--route", "POST /payment", "--mode", "drop_after_commit", *options]
        )
        == 0
    )
    added = capsys.readouterr().out
    assert added.startswith("flt_") and "POST /payment drop_after_commit next 1 (1 left)" in added
    assert (
        main(
            [
                "sandbox",
                "faults",
                "add",
                "--route",
                "*",
                "--mode",
                "error",
                "--status",
                "429",
                "--probability",
                "0.5",
                "--seed",
                "7",
                *options,
            ]
        )
        == 0
    )
    assert "* error probability 0.5 seed 7 status 429 Retry-After 1 s" in capsys.readouterr().out

    monkeypatch.setenv("TOOLKIT_API_KEY", TEST_KEY)  # the key from the environment, as any client takes it
    assert main(["sandbox", "faults", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 3 and listed[-1] == "2 rule(s)" and "fired 0/0 tried" in listed[0]
    assert [r["mode"] for r in api.ok("GET", "/sandbox/faults")["faults"]] == ["drop_after_commit", "error"]

    assert main(["sandbox", "faults", "clear"]) == 0
    assert capsys.readouterr().out.strip() == "cleared 2 rule(s)"
    assert api.ok("GET", "/sandbox/faults")["faults"] == []
    out, err = capsys.readouterr()
    assert TEST_KEY not in out + err


@pytest.mark.parametrize(
    ("argv", "env", "problem"),
    [
        (["add", "--route", "*", "--mode", "delay"], {}, "delayMs: required by mode delay"),
        (["add", "--route", "*", "--mode", "error", "--probability", "x", "--seed", "1"], {}, "not a number"),
        (["list"], {"TOOLKIT_BASE_URL": None}, "no sandbox to talk to"),
        (["list"], {"TOOLKIT_API_KEY": "sk_wrong"}, "HTTP 401"),
    ],
)
def test_faults_errors_exit_2_naming_the_problem(
    api: Api,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str | None],
    problem: str,
) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", api.sandbox.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", TEST_KEY)
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    assert main(["sandbox", "faults", *argv]) == 2
    assert problem in capsys.readouterr().err
    assert api.ok("GET", "/sandbox/faults")["faults"] == []


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--port", "99999", "99999 is not a port number (0-65535)"),
        ("--port", "http", "'http' is not a port number"),
        ("--workers", "0", "'0' is not a number of workers"),
    ],
)
def test_a_port_or_workers_out_of_range_exit_2_in_one_line(
    capsys: pytest.CaptureFixture[str], option: str, value: str, words: str
) -> None:
    """Regression: ``--port 99999`` reached uvicorn, which printed a traceback and exited 0."""
    with pytest.raises(SystemExit) as stopped:
        main(["sandbox", option, value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_a_busy_port_exits_2_in_one_line_before_saying_where_it_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed "sandbox: http://..." as if serving, then uvicorn's error, and exited 3."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code = main(["sandbox", "--port", str(port), "--db", str(tmp_path / "s.sqlite"), "--api-key", "k"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"toolkit sandbox: cannot serve on 127.0.0.1:{port}: ") and err.count("\n") == 1, (
        err
    )
