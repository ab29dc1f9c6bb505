"""The ``toolkit`` command: one module of this package per subcommand, each owning its arguments
and its run (``sandbox``, ``reconcile``, ``run``, ``journal``), as datacompy's ``cli/`` does.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code);
modules are imported only when their subcommand runs, so ``toolkit --help`` stays fast. The
command line is the outermost layer: these modules may import any part of the toolkit, and no
other part imports them.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import NoReturn

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "sandbox": ("toolkit.cli.sandbox", "serve the local sandbox of the payment service"),
    "reconcile": ("toolkit.cli.reconcile", "reconcile a ledger against the processor"),
    "run": ("toolkit.cli.run", "run one of the notebooks with papermill into reports/"),
    "journal": ("toolkit.cli.journal", "list and resolve journaled create calls"),
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolkit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``, as argparse's own, but the version is read (``importlib.metadata``, which
    parses the package's metadata: 25-40 ms) only when it is asked for, not by every command."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        shown = "show program's version number and exit"  # argparse's own words
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=shown)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        print(f"{parser.prog} {_version()}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """A usage error is one line, as every other error (exit 2): argparse printed the whole usage,
    22 lines for ``toolkit reconcile``, above the line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def command() -> NoReturn:
    """The ``toolkit`` command as installed (its console script, ``python -m toolkit.cli``):
    ``main`` on ``sys.argv``, then ``exit_quickly`` with its exit code."""
    try:
        code = main()
    except SystemExit as exc:  # --help, --version and usage errors: argparse has said its piece
        if not isinstance(exc.code, int):
            raise
        code = exc.code
    exit_quickly(code)


def exit_quickly(code: int) -> NoReturn:
    """Exit with ``code`` once everything Python's own exit finishes is finished (the exit
    handlers: spill folders removed, log files flushed; stdout and stderr flushed), but without
    the interpreter's teardown of every module's objects, memory the operating system frees at
    once: with pandas, pyarrow and DuckDB loaded that took 0.2-0.26 s of every command (an
    eighth of a 1,000-row reconciliation). With another thread still running, or a stream that
    cannot be flushed, Python exits as usual."""
    if threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()  # and forgets them: an exit after this does not run them twice
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a reader gone (EPIPE), a stream closed: Python's exit says so
        raise SystemExit(code) from None
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the chosen subcommand and return its exit code."""
    parser = _Parser(
        prog="toolkit",
        description="The payment API toolkit: local sandbox, reconciliation, notebooks and the journal.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = (list(argv) if argv is not None else sys.argv[1:])[:1]
    try:
        for name, (module_name, help_text) in SUBCOMMANDS.items():
            sub = commands.add_parser(name, help=help_text, description=help_text)
            if chosen == [name]:
                module = importlib.import_module(module_name)
                module.add_arguments(sub)
                sub.set_defaults(handler=module.run)
        args = parser.parse_args(argv)
        return _run(args, chosen)
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): what the command wrote to files stands; stop
        # quietly rather than with a traceback, and keep Python's last flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C (SIGINT): files are written whole or not at all and a track's run is one
        # transaction, so an interrupted command leaves what it had finished; one line, exit 2
        # (an infrastructure failure to a scheduler, never 1, "findings").
        print(
            f"error: toolkit {' '.join(chosen)}: interrupted; nothing unfinished was written", file=sys.stderr
        )
        return 2


def _run(args: argparse.Namespace, chosen: Sequence[str]) -> int:
    """The subcommand's run and its exit code; an error it did not expect (a bug, a backend's own
    failure) exits 2, as any failure to finish: Python's own exit, 1, says "findings"."""
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        raise  # the reader of stdout went away: ``main`` stops quietly
    except Exception as exc:
        return unexpected(exc, f"toolkit {' '.join(chosen)}: ")


def unexpected(exc: Exception, where: str = "") -> int:
    """A bug's traceback, scrubbed of any key, then one line naming it after ``where`` (the
    command, ``toolkit journal: ``); the exit code, 2."""
    from toolkit.notebooks import EXIT_ERROR, error_line, scrub_text, secrets_in_environment

    trace = "".join(traceback.format_exception(exc))
    print(scrub_text(trace, secrets_in_environment()), file=sys.stderr, end="")
    print(f"error: {where}unexpected {type(exc).__name__}: {error_line(exc)}", file=sys.stderr)
    return EXIT_ERROR
