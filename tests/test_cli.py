"""The ``toolkit`` command itself."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.cli import SUBCOMMANDS, main


def test_toolkit_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "toolkit 0.1.0"


def test_help_lists_the_four_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    for name, (_, help_text) in SUBCOMMANDS.items():
        assert name in out and help_text in out


def test_a_command_is_required_and_an_unknown_one_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["frobnicate"]):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_a_closed_stdout_stops_a_command_quietly(tmp_path: Path) -> None:
    """``toolkit ... | head -1`` ended with a BrokenPipeError traceback."""
    books = tmp_path / "books.csv"
    books.write_text("merchantReferenceId,amount,currency,status\nA-1,1.00,USD,success\n")
    for command, stopped in ((["reconcile", "inspect", str(books)], 1), (["reconcile", "--help"], 0)):
        reader_gone = subprocess.Popen(
            [sys.executable, "-m", "toolkit.cli", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "TOOLKIT_HOME": str(tmp_path)},
        )
        assert reader_gone.stdout is not None and reader_gone.stderr is not None
        reader_gone.stdout.close()  # before the command writes its first line
        code = reader_gone.wait(timeout=60)
        err = reader_gone.stderr.read().decode()
        reader_gone.stderr.close()
        assert (code, err) == (stopped, ""), err


#: A program that leaves a marker for each way it ends: an exit handler, and an object that only
#: the interpreter's teardown deletes; then writes more than a pipe's buffer before the command.
_ENDING = """
import atexit, pathlib, sys, threading, time
marks = pathlib.Path(sys.argv.pop(1))
atexit.register((marks / "exit-handler").write_text, "ran")
class TornDown:
    def __init__(self, mark):
        self.mark = mark
    def __del__(self):
        self.mark.write_text("ran")
kept = TornDown(marks / "teardown")
if sys.argv.pop(1) == "thread":
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # still running at the end
sys.stdout.write("x" * 100_000)
from toolkit.cli import command
command()
"""


@pytest.mark.parametrize("thread", [False, True])
def test_the_installed_command_ends_with_its_code_its_output_and_its_exit_handlers(
    tmp_path: Path, thread: bool
) -> None:
    """``toolkit`` (``command``) ends without the interpreter's teardown of every module, 0.2 s
    of a small run; its exit code, its whole output and its exit handlers (spill folders
    removed) stay as Python's own exit leaves them. With a thread still running, Python exits
    as usual."""
    books, processor = tmp_path / "books.csv", tmp_path / "processor.csv"
    books.write_text("merchantReferenceId,amount,currency,status\nA-1,1.00,USD,success\n")
    processor.write_text("merchantReferenceId,amount,currency,status\nA-1,1.01,USD,success\n")
    run = ["reconcile", "--ledger", str(books), "--processor", str(processor), "--max-exceptions", "0"]
    run += ["--output-dir", str(tmp_path / "report")]  # exit 1: one exception, more than 0
    done = subprocess.run(
        [sys.executable, "-c", _ENDING, str(tmp_path), "thread" if thread else "alone", *run],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TOOLKIT_HOME": str(tmp_path)},
    )
    usual = subprocess.run(  # the same command through Python's own exit
        [
            sys.executable,
            "-c",
            "import sys; from toolkit.cli import main; sys.exit(main(sys.argv[1:]))",
            *run,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TOOLKIT_HOME": str(tmp_path)},
    )
    assert (done.returncode, usual.returncode) == (1, 1), done.stderr
    assert done.stdout == "x" * 100_000 + usual.stdout and done.stderr == usual.stderr
    assert (tmp_path / "exit-handler").read_text() == "ran"
    assert (tmp_path / "teardown").exists() is thread


def _loaded_by(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` ``main(argv)`` loads, in a fresh interpreter."""
    code = (
        "import sys\n"
        "from toolkit.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = ast.literal_eval(done.stdout.splitlines()[-1])
    return loaded


def test_the_version_is_read_only_when_asked() -> None:
    """Reading it (``importlib.metadata`` parses the package's metadata) took 25-40 ms of every
    command; ``reconcile`` imports nothing else that reads it."""
    assert _loaded_by(["reconcile", "--help"], ("importlib.metadata",)) == []


def test_only_the_chosen_command_is_imported() -> None:
    commands = ("toolkit.cli.journal", "toolkit.cli.run", "toolkit.cli.reconcile", "toolkit.cli.sandbox")
    assert _loaded_by(["journal", "--help"], (*commands, "toolkit.notebooks")) == ["toolkit.cli.journal"]


def test_each_command_is_a_module_of_the_cli_package() -> None:
    """One module per command under toolkit/cli/, as `python -m toolkit.cli --help` lists them."""
    assert {name: module for name, (module, _) in SUBCOMMANDS.items()} == {
        "sandbox": "toolkit.cli.sandbox",
        "reconcile": "toolkit.cli.reconcile",
        "run": "toolkit.cli.run",
        "journal": "toolkit.cli.journal",
    }
    done = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert all(name in done.stdout for name in SUBCOMMANDS)


def test_the_command_returns_the_subcommand_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "no_such_notebook"]) == 2
    err = capsys.readouterr().err
    assert "notebook 'no_such_notebook' not found" in err


def test_a_bug_exits_2_not_1_which_says_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error no command expected (a bug, an engine's own failure) ends the run with exit 2,
    as any failure to finish: Python's own exit code, 1, is what a scheduler reads as findings.
    Its traceback is kept on stderr, scrubbed of the key, and the last line says what it was."""
    import toolkit.cli.journal

    key = "sk_test_a_key_that_must_not_show_0123456789"
    monkeypatch.setenv("TOOLKIT_API_KEY", key)
    monkeypatch.setenv("TOOLKIT_HOME", str(tmp_path))

    def broken(_args: object) -> int:
        raise RuntimeError(f"lost the connection\nwith {key} in it")

    monkeypatch.setattr(toolkit.cli.journal, "run", broken)
    assert main(["journal", "list"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and key not in err
    assert err.splitlines()[-1].startswith(
        "error: toolkit journal: unexpected RuntimeError: lost the connection with"
    )


def test_an_error_that_cannot_give_its_text_still_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Spark error asks its JVM for its text; when the JVM has died, asking raises, and the
    command exited 1, "findings", from inside its own handler. The line says so instead."""
    import toolkit.cli.journal

    class JvmGone(Exception):
        def __str__(self) -> str:
            raise ConnectionRefusedError(111, "Connection refused")

    def broken(_args: object) -> int:
        raise JvmGone

    monkeypatch.setattr(toolkit.cli.journal, "run", broken)
    assert main(["journal", "list"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "error: toolkit journal: unexpected JvmGone: (its text cannot be read)"
