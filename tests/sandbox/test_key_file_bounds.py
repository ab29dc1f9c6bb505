"""Issue 34: an API key file is a regular file of at most 4 KiB, read without waiting.

``toolkit sandbox --api-key-file /dev/zero`` died with a MemoryError (the "file" read whole); a
named pipe waited for a writer forever. Both exit 2 in one line, before anything is served.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.cli.sandbox import server_key
from toolkit.config import MAX_KEY_FILE, read_key_file
from toolkit.errors import ConfigurationError
from toolkit.sandbox.db import Database


def hostile(tmp_path: Path, kind: str) -> Path:
    """A path that is no key file: a device, a named pipe, a file too large, a folder."""
    if kind == "device":
        return Path("/dev/zero")
    path = tmp_path / f"{kind}.key"
    if kind == "pipe":
        os.mkfifo(path)
    elif kind == "large":
        path.write_text("sk_" + "x" * MAX_KEY_FILE + "\n")
    else:
        path.mkdir()
    return path


WORDS = {
    "device": "is not a regular file but a character device",
    "pipe": "is not a regular file but a named pipe",
    "large": "is larger than 4 KiB: it must hold one line, the key",
    "folder": "is not a regular file but a folder",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", list(WORDS))
def test_the_sandbox_refuses_a_key_file_that_is_none_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = hostile(tmp_path, kind)
    code = main(["sandbox", "--port", "0", "--db", str(tmp_path / "s.sqlite"), "--api-key-file", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""  # never said where it serves
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("toolkit sandbox: ") and str(path) in err and WORDS[kind] in err
    assert "xxxx" not in err  # nothing of the file's text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["device", "pipe"])
def test_sandbox_faults_refuses_it_too_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = hostile(tmp_path, kind)
    code = main(
        ["sandbox", "faults", "list", "--base-url", "http://127.0.0.1:9", "--api-key-file", str(path)]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and WORDS[kind] in err, err


def test_a_key_file_of_up_to_4_kib_is_read(tmp_path: Path) -> None:
    assert MAX_KEY_FILE == 4096
    path = tmp_path / "sandbox.key"
    key = "sk_" + "k" * (MAX_KEY_FILE - 4)
    path.write_text(key + "\n")  # 4096 bytes with its line break
    assert path.stat().st_size == MAX_KEY_FILE
    assert read_key_file(path).get_secret_value() == key
    db = Database(tmp_path / "keys.sqlite")
    assert server_key(argparse.Namespace(api_key=None, api_key_file=path), db) == (key, str(path))
    path.write_text(key + "k\n")
    with pytest.raises(ConfigurationError, match="is larger than 4 KiB"):
        read_key_file(path)


def test_the_help_says_what_a_key_file_may_be(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sandbox", "--help"])
    assert "a regular file of at most 4 KiB" in capsys.readouterr().out
