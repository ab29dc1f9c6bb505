"""docs/reference/commands.md against the argument parsers of ``toolkit``, so the two never drift.

Every subcommand the parsers know has a section (a heading such as ``### `toolkit reconcile ack```),
every option and positional argument a row of that section's table, written as ``--help`` shows it
(``--track NAME``, ``--backend {duckdb,pyspark}``, ``-p NAME VALUE``, ``--parameter NAME VALUE``),
with a description; and the reference names no command or argument the parsers do not know. ``-h``
and ``--help``, which every command takes, are said once in the reference's introduction.

The parsers are the real ones, built by ``toolkit.cli.main`` itself: its ``parse_args`` is stopped
before anything runs, once per subcommand, since ``main`` adds a subcommand's arguments only when it
is the one chosen. That imports the command modules (pandas, FastAPI for ``sandbox``) but never the
engine, runs no command and starts no server.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

import toolkit.cli as cli

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "commands.md"

#: ``### `toolkit reconcile ack``` opens a command's section; any other heading closes it.
COMMAND_HEADING = re.compile(r"^#{1,6} `(toolkit(?: [a-z][\w-]*)*)`\s*$")
#: A table row whose first cell is code spans only: ``| `--track NAME` | the track |``.
ARGUMENT_ROW = re.compile(r"^\|\s*(`[^`|]+`(?:, `[^`|]+`)*)\s*\|(.*)\|\s*$")

Rows = dict[str, dict[str, str]]


class _Built(Exception):
    """Raised instead of parsing: carries the parser ``main`` built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def _stop(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
    raise _Built(parser)


def _built_parsers() -> list[argparse.ArgumentParser]:
    """The top-level parser as ``main`` builds it for each subcommand in turn."""
    parsers = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli._Parser, "parse_args", _stop)
        for name in cli.SUBCOMMANDS:
            try:
                # "--help": should main ever parse otherwise, argparse prints the help and exits
                # rather than running the command (``toolkit sandbox`` would serve until stopped).
                cli.main([name, "--help"])
            except _Built as built:
                parsers.append(built.parser)
            except SystemExit:
                pytest.fail(
                    "toolkit.cli.main no longer parses with _Parser.parse_args: "
                    "find how it builds its parsers now and update this test"
                )
    return parsers


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every subcommand parser below it, each with its command line."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def _invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The argument as ``--help`` shows it, each spelling in backticks: `--track NAME`."""
    formatter = parser._get_formatter()
    if not action.option_strings:
        return f"`{formatter._format_args(action, formatter._get_default_metavar_for_positional(action))}`"
    if action.nargs == 0:
        return ", ".join(f"`{option}`" for option in action.option_strings)
    args = formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
    return ", ".join(f"`{option} {args}`" for option in action.option_strings)


@pytest.fixture(scope="module")
def in_parsers() -> dict[str, set[str]]:
    """Every command line the parsers know, with its arguments' invocations."""
    found: dict[str, set[str]] = {}
    for top in _built_parsers():
        for path, parser in _commands(top, "toolkit"):
            arguments = found.setdefault(path, set())
            for action in parser._actions:
                if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                    arguments.add(_invocation(parser, action))
    return found


@pytest.fixture(scope="module")
def in_reference() -> Rows:
    """Every command section of the reference, with its rows: invocation -> description."""
    return _read_reference()[0]


def _read_reference() -> tuple[Rows, list[str]]:
    """The reference's command sections, and the lines that repeat a section or a row."""
    sections: Rows = {}
    repeated: list[str] = []
    current: str | None = None
    fenced = False
    for number, line in enumerate(REFERENCE.read_text(encoding="utf-8").splitlines(), start=1):
        heading = COMMAND_HEADING.match(line)
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            continue  # a "# comment" in a shell block is no heading
        elif heading:
            current = heading[1]
            if current in sections:
                repeated.append(f"commands.md:{number}: a second section for {current}")
            sections.setdefault(current, {})
        elif line.startswith("#"):
            current = None
        elif current is not None and (row := ARGUMENT_ROW.match(line)):
            invocation, description = row[1].strip(), row[2].strip()
            if invocation in sections[current]:
                repeated.append(f"commands.md:{number}: {current}: {invocation} again")
            sections[current][invocation] = description
    return sections, repeated


def test_the_parsers_are_found(in_parsers: dict[str, set[str]]) -> None:
    """A walk that found nothing would make every other test pass."""
    assert {f"toolkit {name}" for name in cli.SUBCOMMANDS} <= set(in_parsers)
    assert "`--ledger LEDGER`" in in_parsers["toolkit reconcile"]
    assert (
        "`--route {POST /payment,POST /product,GET /subscription,*}`"
        in in_parsers["toolkit sandbox faults add"]
    )


def test_every_command_has_a_section(in_parsers: dict[str, set[str]], in_reference: Rows) -> None:
    missing = sorted(set(in_parsers) - set(in_reference))
    assert not missing, f"docs/reference/commands.md has no section for: {', '.join(missing)}"


def test_every_section_is_a_command(in_parsers: dict[str, set[str]], in_reference: Rows) -> None:
    unknown = sorted(set(in_reference) - set(in_parsers))
    assert not unknown, f"docs/reference/commands.md names commands the parser lacks: {', '.join(unknown)}"


def test_every_argument_is_in_the_reference(in_parsers: dict[str, set[str]], in_reference: Rows) -> None:
    missing = [
        f"{path}: {invocation}"
        for path, arguments in sorted(in_parsers.items())
        for invocation in sorted(arguments - set(in_reference.get(path, {})))
    ]
    assert not missing, (
        "in the parser, not in docs/reference/commands.md (as --help shows it):\n" + "\n".join(missing)
    )


def test_every_argument_in_the_reference_is_in_the_parser(
    in_parsers: dict[str, set[str]], in_reference: Rows
) -> None:
    unknown = [
        f"{path}: {invocation}"
        for path, rows in sorted(in_reference.items())
        for invocation in sorted(set(rows) - in_parsers.get(path, set()))
    ]
    assert not unknown, "in docs/reference/commands.md, not in the parser:\n" + "\n".join(unknown)


def test_every_argument_says_what_it_does(in_reference: Rows) -> None:
    silent = [
        f"{path}: {inv}" for path, rows in in_reference.items() for inv, text in rows.items() if not text
    ]
    assert not silent, "rows of docs/reference/commands.md without a description:\n" + "\n".join(silent)


def test_nothing_is_said_twice() -> None:
    """A row repeated, or a heading lost so that a section runs into the one above it."""
    repeated = _read_reference()[1]
    assert not repeated, "\n".join(repeated)
