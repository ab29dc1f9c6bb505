"""The ``toolkit`` command itself."""

from __future__ import annotations

import subprocess
import sys

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


def test_only_the_chosen_command_is_imported() -> None:
    code = (
        "import sys\n"
        "from toolkit.cli import main\n"
        "try:\n"
        "    main(['journal', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('toolkit.cli.journal', 'toolkit.cli.run', 'toolkit.cli.reconcile',"
        " 'toolkit.cli.sandbox', 'toolkit.notebooks') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "['toolkit.cli.journal']"


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
