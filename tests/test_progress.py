"""A long ``toolkit reconcile`` says where it is on a terminal, and nothing extra elsewhere.

The command runs in a process whose stdout and stderr are pseudo-terminals (or pipes), as a user's
shell or a scheduler gives them; ``SHOW_AFTER_S`` is set there to 0 (every run counts as long) or
to a minute (no run here is).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.reconcile.tracks import sides

pytestmark = pytest.mark.timeout(180)

STEPS = [
    "reading and checking the ledger",
    "reading and checking the processor",
    "pairing and classifying the keys",
    "listing the exceptions",
    "adding up the rows and the totals",
    "writing the report in",
]


def _inputs(folder: Path) -> list[str]:
    ledger, processor = sides(
        folder, {"A-1": "10.00 USD success", "A-2": "5.00 USD success"}, {"A-1": "10.00 USD success"}
    )
    return [
        "reconcile",
        "--ledger",
        str(ledger),
        "--processor",
        str(processor),
        "--output-dir",
        str(folder / "out"),
    ]


def _run(argv: list[str], *, show_after: float, terminal: bool, home: Path) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of the command, run on terminals or pipes."""
    code = (
        "import sys\nimport toolkit.cli.progress as progress\n"
        f"progress.SHOW_AFTER_S = {show_after}\n"
        "from toolkit.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "TOOLKIT_HOME": str(home), "COLUMNS": "200"}
    if not terminal:
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=150
        )
        return done.returncode, done.stdout, done.stderr
    outputs: list[bytearray] = [bytearray(), bytearray()]
    masters, slaves = zip(*(pty.openpty() for _ in outputs), strict=True)
    process = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdin=subprocess.DEVNULL,
        stdout=slaves[0],
        stderr=slaves[1],
        env=env,
    )
    for slave in slaves:
        os.close(slave)

    def drain(master: int, into: bytearray) -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other end closed: EIO on Linux
                return
            if not chunk:
                return
            into.extend(chunk)

    readers = [
        threading.Thread(target=drain, args=(master, into), daemon=True)
        for master, into in zip(masters, outputs, strict=True)
    ]
    for reader in readers:
        reader.start()
    returncode = process.wait(timeout=150)
    for reader in readers:
        reader.join(timeout=10)
    for master in masters:
        os.close(master)
    out, err = (bytes(b).decode().replace("\r\n", "\n") for b in outputs)
    return returncode, out, err


def test_on_a_terminal_a_long_run_shows_each_step_with_its_time(tmp_path: Path) -> None:
    code, out, err = _run(_inputs(tmp_path), show_after=0, terminal=True, home=tmp_path / "home")
    assert code == 0, (out, err)
    assert out.splitlines()[-1].startswith("ok: 1 exceptions"), out
    steps = [line for line in err.splitlines() if line.startswith("[") and " s] " in line]
    said = [line.split(" s] ", 1)[1] for line in steps]
    assert [text.split(" (", 1)[0] for text in said[:2]] == STEPS[:2], err
    assert said[0].endswith(f"({tmp_path / 'ledger.csv'})"), said  # which file, as it is read
    assert said[2:5] == STEPS[2:5], err
    assert said[-1] == f"writing the report in {tmp_path / 'out'}", err
    seconds = [float(line[1:].split(" s]")[0]) for line in steps]
    assert seconds == sorted(seconds), steps


def test_on_a_terminal_a_quick_run_shows_no_step(tmp_path: Path) -> None:
    code, out, err = _run(_inputs(tmp_path), show_after=60, terminal=True, home=tmp_path / "home")
    assert code == 0, (out, err)
    assert not any(step in err for step in STEPS), err


def test_into_a_log_a_long_run_shows_no_step(tmp_path: Path) -> None:
    """A scheduler's log (a pipe or a file): the output as before, nothing of the steps."""
    code, out, err = _run(_inputs(tmp_path), show_after=0, terminal=False, home=tmp_path / "home")
    assert code == 0, (out, err)
    assert err == "" and not any(step in out for step in STEPS), (out, err)
