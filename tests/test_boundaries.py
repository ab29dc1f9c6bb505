"""The package's boundaries, read from the imports (lazy ones inside functions included).

The sandbox is a server: it shares only the models (with exact money and their errors) with the
rest. The client
side (client, journal, controls, settings) never imports the sandbox; only ``environment.py``,
which decides which service to talk to, starts the embedded one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.imports import PACKAGE, toolkit_imports

#: What the sandbox package may import from the rest of the toolkit: the models, exact money, the
#: errors the models raise, and how text is made safe in a CSV file a spreadsheet opens.
SHARED_WITH_THE_SANDBOX = frozenset(
    {"toolkit.models", "toolkit.control_models", "toolkit.money", "toolkit.errors", "toolkit.outputs"}
)

#: Client-side modules that must work without the sandbox package.
CLIENT_SIDE = (
    "config.py",
    "client.py",
    "journal.py",
    "controls.py",
    "bulk.py",
    "models.py",
    "control_models.py",
)


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative).is_dir()


def test_the_sandbox_shares_only_the_models_with_the_rest() -> None:
    crossing = {}
    for path in sorted((PACKAGE / "sandbox").rglob("*.py")):
        outside = {
            name
            for name in toolkit_imports(path)
            if _is_module(name) and not name.startswith("toolkit.sandbox") and name != "toolkit"
        }
        if outside - SHARED_WITH_THE_SANDBOX:
            crossing[str(path.relative_to(PACKAGE))] = sorted(outside - SHARED_WITH_THE_SANDBOX)
    assert crossing == {}


@pytest.mark.parametrize("module", CLIENT_SIDE)
def test_the_client_side_never_imports_the_sandbox(module: str) -> None:
    reached = sorted(name for name in toolkit_imports(PACKAGE / module) if name.startswith("toolkit.sandbox"))
    assert reached == []


def test_only_the_environment_starts_the_embedded_sandbox() -> None:
    starters = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "toolkit.sandbox.embedded.embedded_sandbox" in toolkit_imports(path)
    )
    assert starters == ["environment.py"]


@pytest.mark.parametrize(
    "argv",
    [
        ["reconcile", "verify", "--track", "t"],
        ["reconcile", "history", "--track", "t"],
        ["reconcile", "signoffs", "--track", "t"],
        ["reconcile", "ack", "--track", "t", "E0123456789abcdef", "--note", "n", "--by", "b"],
        ["reconcile", "void", "--track", "t", "--run", "1", "--note", "n", "--by", "b"],
        ["reconcile", "--help"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_the_commands_that_read_no_payments_load_no_engine(argv: list[str], tmp_path: Path) -> None:
    """A track's sub-commands read the audit log only: loading pandas, Ibis or DuckDB for them cost
    seconds a call (issue 36). Run as a process, whatever the test session imported already."""
    import os
    import subprocess
    import sys

    probe = (
        "import sys\nfrom toolkit.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'ibis', 'duckdb', 'pyarrow', 'numpy') if m in sys.modules))"
    )
    env = {**os.environ, "TOOLKIT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", (done.stdout, done.stderr)
