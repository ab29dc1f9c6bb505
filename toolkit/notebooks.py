"""Running the notebooks with papermill into dated report folders, and the helpers their cells call.

``run_notebook`` runs one notebook into ``reports/<notebook>/<UTC timestamp>/``: the executed
``.ipynb``, an ``.html`` with the code hidden, and the files the notebook wrote itself (it writes
them to its ``output_dir`` parameter, which the runner injects). ``toolkit run`` is its command.

Exit codes a scheduler can act on:

- 0 the notebook ran to the end;
- 1 the notebook ran and reported a failure: a cell raised ``NotebookFailure`` (exceptions over
  the threshold, outcomes not as expected);
- 2 an execution or infrastructure error (an unknown parameter, a bad input file, the service
  unreachable, a kernel that died); the failing cell's number and error are printed.

The API key and base URL reach the kernel only through the environment (``TOOLKIT_BASE_URL``,
``TOOLKIT_API_KEY``), never through parameters. The notebook is executed into a private temporary
folder and every output is scrubbed of the key before anything is written under ``reports/``.

Parameters named ``*_path`` given to the runner are resolved against the caller's working
directory; the kernel itself runs in the notebook's folder, so the notebooks' defaults
(``data/...``) work the same here, in JupyterLab and under nbval.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sqlite3
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import ToolkitError

if TYPE_CHECKING:
    pass

#: The notebooks shipped in ``notebooks/``, by the name ``toolkit run`` accepts.
NOTEBOOKS: tuple[str, ...] = ("catalog_setup", "test_payments", "reconciliation_report")
NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
DEFAULT_REPORTS = Path("reports")
#: The parameter every notebook declares and the runner sets: where the notebook writes its files.
OUTPUT_PARAMETER = "output_dir"
KERNEL_NAME = "python3"
START_TIMEOUT_S = 120
#: No cell of these notebooks legitimately runs this long; a hung call becomes exit 2.
CELL_TIMEOUT_S = 900
REDACTED = "[redacted]"
EXIT_OK, EXIT_FAILURE, EXIT_ERROR = 0, 1, 2
_TEXT_SUFFIXES = frozenset({".ipynb", ".html", ".htm", ".csv", ".txt", ".json", ".md", ".svg", ".log",
                            ".xml", ".yaml", ".yml"})
_ZIP_SUFFIXES = frozenset({".xlsx", ".xlsm", ".zip"})


class NotebookFailure(ToolkitError):
    """Raised by a notebook cell when the run should fail on its merits (exit code 1).

    The runner recognises it by name in papermill's error, so a notebook raises it for
    "the numbers are wrong", and anything else it raises means "the run is broken" (exit 2).
    """


class ParameterError(ToolkitError):
    """A parameter the notebook does not declare, or one the runner owns; nothing was run."""


@dataclass(frozen=True)
class RunResult:
    """What one run produced and how it ended (``exit_code`` 0, 1 or 2)."""

    notebook: str
    exit_code: int
    output_dir: Path
    executed: Path | None
    html: Path | None
    files: tuple[Path, ...] = field(default=())
    message: str | None = None
    failed_cell: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK


# ---------------------------------------------------------------------------------------------
# Finding notebooks and checking parameters


def resolve_notebook(name_or_path: str | Path) -> Path:
    """One of the shipped names (``catalog_setup``) or a path to an ``.ipynb`` file."""
    text = str(name_or_path)
    stem = text[:-len(".ipynb")] if text.endswith(".ipynb") else text
    if stem in NOTEBOOKS and not Path(text).exists():
        return NOTEBOOK_DIR / f"{stem}.ipynb"
    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".ipynb":
        return path.resolve()
    close = difflib.get_close_matches(stem, NOTEBOOKS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (one of {', '.join(NOTEBOOKS)}, or a path)"
    raise ParameterError(f"notebook {text!r} not found{hint}")


def declared_parameters(path: Path) -> dict[str, Any]:
    """The notebook's parameters (name -> papermill's description), from its ``parameters`` cell."""
    import papermill

    params: dict[str, Any] = papermill.inspect_notebook(str(path))
    if not params:
        raise ParameterError(f"{path}: no cell tagged 'parameters'")
    return params


def check_parameters(path: Path, parameters: Mapping[str, Any]) -> None:
    """Refuse unknown names (papermill alone only warns) and the runner's own ``output_dir``."""
    declared = declared_parameters(path)
    problems = []
    for name in parameters:
        if name == OUTPUT_PARAMETER:
            problems.append(f"{name!r} is set by the runner (use --output-dir)")
        elif name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(f"unknown parameter {name!r}{hint}")
    if problems:
        known = ", ".join(n for n in declared if n != OUTPUT_PARAMETER)
        raise ParameterError(f"{path.name}: " + "; ".join(problems) + f" (parameters: {known})")


def parse_value(text: str) -> Any:
    """A ``-p`` value as papermill's CLI reads it: YAML booleans, null, numbers; anything else text.

    Dates stay text (``2024-05-01`` is a string parameter, not a ``date``).
    """
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if value is None and text.strip().lower() in ("null", "none", "~"):
        return None
    if isinstance(value, bool | int | float) and value is not None:
        return value
    return text


def _resolve_paths(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``*_path`` values given by the caller are relative to the caller, not the notebook folder."""
    out: dict[str, Any] = {}
    for name, value in parameters.items():
        if name.endswith("_path") and isinstance(value, str) and value.strip():
            value = str(Path(value).expanduser().resolve())
        out[name] = value
    return out


# ---------------------------------------------------------------------------------------------
# Secrets


def _embedded_key(home: Path) -> str | None:
    """The embedded sandbox's key stored in its database, read without creating anything."""
    database = home / "sandbox.sqlite"
    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'api_key'").fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row and row[0] else None


def secrets_in_environment(env: Mapping[str, str] | None = None) -> list[str]:
    """Every key a run could know: ``TOOLKIT_API_KEY`` and the embedded sandbox's stored key."""
    env = os.environ if env is None else env
    found = []
    if env.get("TOOLKIT_API_KEY"):
        found.append(env["TOOLKIT_API_KEY"])
    home = Path(env.get("TOOLKIT_HOME") or ".toolkit")
    stored = _embedded_key(home)
    if stored:
        found.append(stored)
    # Short strings would redact ordinary words; real keys are long.
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced by ``[redacted]``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def scrub_file(path: Path, secrets: Sequence[str]) -> bool:
    """Redact secrets in a written file (text, or the members of a zip such as .xlsx).

    Other binary files get the secret overwritten byte for byte with ``*``. Returns whether
    anything was found.
    """
    if not secrets:
        return False
    data = path.read_bytes()
    encoded = [s.encode() for s in secrets]
    suffix = path.suffix.lower()
    if suffix in _ZIP_SUFFIXES and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [(info, archive.read(info)) for info in archive.infolist()]
        if not any(e in body for _, body in members for e in encoded):
            return False
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for info, body in members:
                for e in encoded:
                    body = body.replace(e, REDACTED.encode())
                archive.writestr(info, body)
        return True
    if not any(e in data for e in encoded):
        return False
    for e in encoded:
        data = data.replace(e, REDACTED.encode() if suffix in _TEXT_SUFFIXES else b"*" * len(e))
    path.write_bytes(data)
    return True


# ---------------------------------------------------------------------------------------------
# Running


def _report_dir(notebook: str, root: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = root / notebook / stamp
    for attempt in range(1, 1000):
        candidate = base if attempt == 1 else base.with_name(f"{stamp}-{attempt}")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        return candidate
    raise ToolkitError(f"{base}: cannot create a fresh report folder")


@contextlib.contextmanager
def _kernel_environment() -> Iterator[None]:
    """The kernel inherits this process's environment: pin TOOLKIT_HOME to an absolute path.

    The kernel runs in the notebook's folder, so a relative (or default) home would otherwise
    point somewhere else than the caller's.
    """
    before = os.environ.get("TOOLKIT_HOME")
    os.environ["TOOLKIT_HOME"] = str(Path(before or ".toolkit").expanduser().resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TOOLKIT_HOME", None)
        else:
            os.environ["TOOLKIT_HOME"] = before


def _write_html(notebook: Any, path: Path) -> None:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(  # type: ignore[no-untyped-call]
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(notebook)
    path.write_text(body, encoding="utf-8")


def _finish_notebook(executed: Path, target: Path, secrets: Sequence[str]) -> Any:
    """Read the executed notebook, scrub it, drop what papermill recorded about the machine."""
    import nbformat

    text = scrub_text(executed.read_text(encoding="utf-8"), secrets)
    notebook = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
    recorded = notebook.metadata.get("papermill", {})
    recorded.pop("environment_variables", None)
    recorded["input_path"] = Path(str(recorded.get("input_path", ""))).name
    recorded["output_path"] = target.name
    nbformat.write(notebook, str(target))  # type: ignore[no-untyped-call]
    return notebook


def _local_kernel_manager() -> type:
    """A kernel manager that talks to the kernel over IPC sockets instead of TCP on loopback.

    No port is opened, and the kernel does not print its warning about unencrypted TCP into
    every scheduled run's log.
    """
    from jupyter_client.manager import KernelManager
    from traitlets import default

    class LocalKernelManager(KernelManager):
        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

    return LocalKernelManager


def run_notebook(
    name_or_path: str | Path, parameters: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None, *, reports_root: str | Path = DEFAULT_REPORTS,
    kernel_name: str = KERNEL_NAME, cell_timeout: int = CELL_TIMEOUT_S,
) -> RunResult:
    """Run one notebook with papermill; see the module docstring. Raises ``ParameterError`` first."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    path = resolve_notebook(name_or_path)
    given = dict(parameters or {})
    check_parameters(path, given)
    name = path.stem
    target_dir = Path(output_dir) if output_dir is not None else _report_dir(name, Path(reports_root))
    target_dir.mkdir(parents=True, exist_ok=True)
    target_dir = target_dir.resolve()
    values = _resolve_paths(given) | {OUTPUT_PARAMETER: str(target_dir)}
    executed_path = target_dir / f"{name}.ipynb"
    html_path = target_dir / f"{name}.html"
    exit_code, message, failed_cell = EXIT_OK, None, None
    with _kernel_environment(), tempfile.TemporaryDirectory(prefix="toolkit-run-") as private:
        scratch = Path(private) / f"{name}.ipynb"
        try:
            papermill.execute_notebook(
                str(path), str(scratch), parameters=values, kernel_name=kernel_name,
                cwd=str(path.parent), progress_bar=False, log_output=False,
                start_timeout=START_TIMEOUT_S, execution_timeout=cell_timeout,
                kernel_manager_class=_local_kernel_manager(),
            )
        except PapermillExecutionError as exc:
            failed_cell = exc.exec_count
            if exc.ename == NotebookFailure.__name__:
                exit_code, message = EXIT_FAILURE, str(exc.evalue)
            else:
                exit_code = EXIT_ERROR
                message = f"cell [{exc.exec_count}] (cell #{exc.cell_index + 1}): {exc.ename}: {exc.evalue}"
        except Exception as exc:  # kernel death, timeouts, unreadable notebook: all infrastructure
            exit_code, message = EXIT_ERROR, f"{type(exc).__name__}: {exc}"
        secrets = secrets_in_environment()
        notebook = _finish_notebook(scratch, executed_path, secrets) if scratch.is_file() else None
    if notebook is not None:
        _write_html(notebook, html_path)
    files = tuple(sorted(p for p in target_dir.rglob("*") if p.is_file()))
    for file in files:
        scrub_file(file, secrets)
    return RunResult(
        notebook=name, exit_code=exit_code, output_dir=target_dir,
        executed=executed_path if executed_path.is_file() else None,
        html=html_path if html_path.is_file() else None,
        files=tuple(f for f in files if f not in (executed_path, html_path)),
        message=None if message is None else scrub_text(message, secrets), failed_cell=failed_cell,
    )


# ---------------------------------------------------------------------------------------------
# `toolkit run`


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``toolkit run NOTEBOOK [-p NAME VALUE ...] [--output-dir DIR]``."""
    parser.add_argument("notebook", help=f"one of {', '.join(NOTEBOOKS)}, or a path to a notebook")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="set a parameter (YAML scalar: 5, true, 2024-05-01 stays text)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where to write the run (default reports/<notebook>/<UTC time>/)")
    parser.epilog = ("exit codes: 0 success; 1 the notebook reported a failure; "
                     "2 execution or infrastructure error")


def run(args: argparse.Namespace) -> int:
    """Run the notebook; print where its report is; return 0, 1 or 2."""
    parameters = {name: parse_value(value) for name, value in args.parameter}
    try:
        result = run_notebook(args.notebook, parameters, args.output_dir)
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"report: {result.output_dir}")
    if result.exit_code == EXIT_FAILURE:
        print(f"failed: {result.notebook} reported a failure in cell [{result.failed_cell}]: "
              f"{result.message}", file=sys.stderr)
    elif result.exit_code == EXIT_ERROR:
        print(f"error: {result.notebook}: {result.message}", file=sys.stderr)
    return result.exit_code


__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILURE",
    "EXIT_OK",
    "NOTEBOOKS",
    "NotebookFailure",
    "ParameterError",
    "RunResult",
    "add_arguments",
    "check_parameters",
    "parse_value",
    "resolve_notebook",
    "run",
    "run_notebook",
    "scrub_file",
    "scrub_text",
    "secrets_in_environment",
]
